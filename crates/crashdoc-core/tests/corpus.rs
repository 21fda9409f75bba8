//! The real-world cases of ../shared/corpus/dev, scored through the library
//! the way shared/tools/score-corpus scores the binary. The corpus is read
//! in place, never copied.

use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/dev")
}

#[test]
fn corpus_top1_at_least_85_percent() {
    let root = corpus();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e} (the corpus lives beside the repo in ../shared)",
                root.display()
            )
        })
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("case.json").is_file())
        .collect();
    cases.sort();
    assert!(cases.len() >= 20, "too few corpus cases");
    let (mut right, mut wrong_high) = (0, 0);
    let mut misses = Vec::new();
    for case in &cases {
        let label: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(case.join("case.json")).unwrap())
                .unwrap();
        let mut ok: Vec<String> = vec![label["cause"].as_str().unwrap().to_string()];
        ok.extend(
            label["also_ok"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_string)),
        );
        // case.json is the label: it is ignored by name, as any unknown file.
        let ev =
            crashdoc_core::read_path(case).unwrap_or_else(|e| panic!("{}: {e}", case.display()));
        let report = crashdoc_core::diagnose_all(&ev);
        let d = &report.pods[0].diagnoses[0];
        assert!(
            !d.evidence.is_empty(),
            "{}: a diagnosis without evidence",
            case.display()
        );
        if ok.contains(&d.cause.id().to_string()) {
            right += 1;
        } else {
            if d.confidence == crashdoc_core::diagnose::Confidence::High {
                wrong_high += 1;
            }
            misses.push(format!(
                "{}: want {} got {} ({:?})",
                case.file_name().unwrap().to_string_lossy(),
                ok[0],
                d.cause,
                d.confidence
            ));
        }
    }
    let pct = 100.0 * right as f64 / cases.len() as f64;
    println!(
        "corpus top-1: {right}/{} = {pct:.1}%; wrong with high confidence: {wrong_high}",
        cases.len()
    );
    for m in &misses {
        println!("  miss {m}");
    }
    assert!(
        pct >= 85.0,
        "top-1 {pct:.1}% is below 85%:\n{}",
        misses.join("\n")
    );
    assert!(
        wrong_high * 20 <= cases.len(),
        "too many wrong diagnoses with high confidence: {wrong_high}"
    );
}
