//! "Evidence is read wherever it stands" (shared/spec/inputs.md): one
//! fixture per input class under `tests/fixtures/inputs/` (an event message
//! pasted alone, an old events layout, a custom resource's status, several
//! outputs in other.txt, `get pods --watch` rows, kubelet journal and kernel
//! lines, `oc` output, tool output), each with the cause it must give in
//! `expected.json`. Each is read twice: as a folder, and as one paste of all
//! its files on standard input.

mod common;
use common::{name_of, read_case, sorted_dirs};

/// The cause the case must give first, and the one it must not (a near miss).
fn expected(dir: &std::path::Path) -> (String, Option<String>) {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    (
        v["top"].as_str().unwrap().to_string(),
        v["not_top"].as_str().map(str::to_string),
    )
}

fn top_of(ev: &crashdoc_core::Evidence) -> String {
    let r = crashdoc_core::diagnose_all(ev);
    r.pods[0].diagnoses[0].cause.id().to_string()
}

#[test]
fn every_input_class_is_read() {
    let mut wrong = Vec::new();
    let cases = sorted_dirs(&common::fixtures("inputs"));
    assert!(cases.len() >= 8, "too few input-class fixtures");
    for dir in &cases {
        let (want, not) = expected(dir);
        assert_ne!(
            Some(&want),
            not.as_ref(),
            "{}: top and not_top agree",
            name_of(dir)
        );
        let got = read_case(dir).map(|ev| top_of(&ev));
        match got {
            Ok(g) if g == want => {}
            other => wrong.push(format!(
                "{} (folder): want {want}, got {other:?}",
                name_of(dir)
            )),
        }
        let mut paste = String::new();
        for f in std::fs::read_dir(dir).unwrap().filter_map(Result::ok) {
            if f.file_name() != "expected.json" {
                paste.push_str(&std::fs::read_to_string(f.path()).unwrap());
                paste.push('\n');
            }
        }
        let got = crashdoc_core::read_paste(paste.as_bytes(), "paste").map(|ev| top_of(&ev));
        match got {
            Ok(g) if g == want => {}
            other => wrong.push(format!(
                "{} (paste): want {want}, got {other:?}",
                name_of(dir)
            )),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
