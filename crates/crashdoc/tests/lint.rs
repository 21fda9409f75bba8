//! `crashdoc lint` from the real binary: standard input, files, folders,
//! exit codes, formats, explain, diff mode.

use std::io::Write;
use std::process::{Command, Stdio};

fn crashdoc(args: &[&str], stdin: Option<&str>) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_crashdoc"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(s) = stdin {
        // The binary may exit before reading (a bad flag or config): a broken pipe is fine.
        let _ = child.stdin.take().unwrap().write_all(s.as_bytes());
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn example(id: &str) -> &'static str {
    crashdoc_lint::check(id).unwrap().example
}

fn near_miss(id: &str) -> &'static str {
    crashdoc_lint::check(id).unwrap().near_miss
}

#[test]
fn helm_template_output_on_stdin_fails_on_an_error() {
    // The shape `helm template` prints: `---` then `# Source:` per document.
    let stdin = format!(
        "---\n# Source: llm/templates/deployment.yaml\n{}",
        example("probe/liveness-without-startup")
    );
    let (code, out, _) = crashdoc(&["lint", "-"], Some(&stdin));
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("stdin:15: error[probe/liveness-without-startup] Deployment llm/vllm (llm/templates/deployment.yaml)"),
        "{out}"
    );
    assert!(out.contains("(leads to probe-kill)"), "{out}");
    assert!(out.contains("    startupProbe:"), "{out}");
}

#[test]
fn warnings_fail_only_with_fail_on_warning() {
    let y = example("image/mutable-tag");
    let (code, out, _) = crashdoc(&["lint", "-"], Some(y));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("warning[image/mutable-tag]"), "{out}");
    let (code, _, _) = crashdoc(&["lint", "-", "--fail-on", "warning"], Some(y));
    assert_eq!(code, 1);
}

#[test]
fn a_clean_manifest_exits_zero() {
    let clean = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27.2\n        resources:\n          requests: {memory: 64Mi}\n";
    let (code, out, _) = crashdoc(&["lint", "-", "--fail-on", "warning"], Some(clean));
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("0 error(s), 0 warning(s) in 1 object(s)"),
        "{out}"
    );
}

#[test]
fn unusable_input_exits_two_with_a_hint() {
    let (code, _, err) = crashdoc(&["lint", "-"], Some("kind: [unclosed\n"));
    assert_eq!(code, 2);
    assert!(
        err.contains("error: cannot lint manifests from standard input"),
        "{err}"
    );
    assert!(err.contains("stdin:1: not valid YAML"), "{err}");
    assert!(err.contains("hint: "), "{err}");
    let (code, _, err) = crashdoc(&["lint", "-"], Some("just: a map\n"));
    assert_eq!(code, 2);
    assert!(err.contains("no Kubernetes object"), "{err}");
    let (code, _, _) = crashdoc(&["lint", "/nonexistent/manifests"], None);
    assert_eq!(code, 2);
}

#[test]
fn folders_and_json_and_sarif() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/a.yaml"), example("ref/missing-key")).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a manifest").unwrap();
    let p = dir.path().to_str().unwrap();
    let (code, out, _) = crashdoc(&["lint", p, "--format", "json"], None);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["schema"], "crashdoc/lint-v1");
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "ref/missing-key")
        .unwrap();
    assert_eq!(f["cause"], "config-ref-missing");
    assert_eq!(f["line"], 21);
    assert!(f["file"].as_str().unwrap().ends_with("sub/a.yaml"));
    let (_, out, _) = crashdoc(&["lint", p, "--format", "sarif"], None);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["version"], "2.1.0");
    let ids: Vec<&str> = v["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["ruleId"].as_str())
        .collect();
    assert!(ids.contains(&"ref/missing-key"), "{ids:?}");
}

#[test]
fn diff_mode_names_the_renamed_key() {
    let c = crashdoc_lint::check("diff/removed-key-still-referenced").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.yaml");
    let new = dir.path().join("new.yaml");
    std::fs::write(&old, c.fixture_against).unwrap();
    std::fs::write(&new, c.example).unwrap();
    let (code, out, _) = crashdoc(
        &[
            "lint",
            "--against",
            old.to_str().unwrap(),
            new.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("renamed to `DATABASE_HOST`"), "{out}");
    std::fs::write(&new, c.near_miss).unwrap();
    let (code, out, _) = crashdoc(
        &[
            "lint",
            "--against",
            old.to_str().unwrap(),
            new.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(code, 0, "{out}");
}

#[test]
fn capacity_flag_drives_the_rollout_check() {
    let y = example("rollout/surge-exceeds-gpu-capacity");
    let (code, out, _) = crashdoc(&["lint", "-", "--capacity", "gpu=8"], Some(y));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("rollout/surge-exceeds-gpu-capacity"), "{out}");
    let (code, out, _) = crashdoc(&["lint", "-", "--capacity", "gpu=9"], Some(y));
    assert_eq!(code, 0, "{out}");
    let (code, _, err) = crashdoc(&["lint", "-", "--capacity", "cpu=9"], Some(y));
    assert_eq!(code, 2, "{err}");
}

#[test]
fn config_file_suppresses_and_bad_config_is_unusable() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("lint.yaml");
    std::fs::write(&cfg, "ignore: [probe/liveness-without-startup]\n").unwrap();
    let y = example("probe/liveness-without-startup");
    let (code, out, _) = crashdoc(&["lint", "-", "--config", cfg.to_str().unwrap()], Some(y));
    assert_eq!(code, 0, "{out}");
    std::fs::write(&cfg, "ignore: [probe/no-such-check]\n").unwrap();
    let (code, _, err) = crashdoc(&["lint", "-", "--config", cfg.to_str().unwrap()], Some(y));
    assert_eq!(code, 2);
    assert!(err.contains("not a check id"), "{err}");
}

#[test]
fn explain_shows_a_checks_docs_and_a_cause_lists_its_checks() {
    let (code, out, _) = crashdoc(&["explain", "probe/liveness-without-startup"], None);
    assert_eq!(code, 0);
    for s in [
        "What:",
        "Why it crash-loops:",
        "Example (flagged):",
        "Fix:",
        "Source:",
        "leads to probe-kill",
    ] {
        assert!(out.contains(s), "{s}: {out}");
    }
    let (code, out, _) = crashdoc(&["explain", "probe-kill"], None);
    assert_eq!(code, 0);
    assert!(out.contains("Lint checks that catch it"), "{out}");
    assert!(out.contains("probe/unknown-port-name"), "{out}");
    let (code, _, _) = crashdoc(&["explain", "probe/no-such-check"], None);
    assert_eq!(code, 2);
}

#[test]
fn near_misses_are_clean_from_the_binary_too() {
    let (code, out, _) = crashdoc(
        &["lint", "-"],
        Some(near_miss("lifecycle/one-shot-under-controller")),
    );
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("one-shot"), "{out}");
}

#[test]
fn evidence_mode_lints_the_spec_a_describe_shows() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/slow-start-liveness"
    );
    let (code, out, err) = crashdoc(&["lint", "--evidence", dir], None);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("error[probe/liveness-without-startup] Deployment llm/mixtral:"),
        "{out}"
    );
    // The same folder as manifests holds no Kubernetes object.
    let (code, _, _) = crashdoc(&["lint", dir], None);
    assert_eq!(code, 2);
}

#[test]
fn cluster_flags_need_live() {
    let (code, _, err) = crashdoc(
        &["lint", "-", "-n", "llm"],
        Some(example("image/mutable-tag")),
    );
    assert_eq!(code, 2, "{err}");
}

#[test]
fn evidence_mode_carries_the_measured_startup_into_the_budget_check() {
    // The shipped example's TGI log shows how long its start took; its
    // probes kill it sooner.
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/slow-start-liveness"
    );
    let (_, out, _) = crashdoc(&["lint", "--evidence", dir, "--format", "json"], None);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "probe/budget-below-measured-startup");
    assert!(f.is_some(), "{out}");
}

#[test]
fn history_gives_the_probe_budget_check_the_longest_startup_seen() {
    use crashdoc_core::ingest::bundle::{PodFiles, tar_gz_bytes};
    use crashdoc_history::{Capture, CaptureKind, RedbStore, TerminationKey};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.redb");
    let capture = |restart: i32, secs: u32| {
        let pod = format!("search-7d9f8-{restart}");
        let log = format!(
            "2026-12-01T10:00:00.000Z Started SearchApplication in {secs}.2 seconds (process running for {secs}.5)\n"
        );
        let pod_json = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod, "namespace": "prod"},
            "spec": {"containers": [{"name": "search", "image": "ghcr.io/acme/search:4.0.2"}]}});
        let bundle = tar_gz_bytes(
            &[PodFiles {
                namespace: "prod".into(),
                name: pod.clone(),
                files: vec![
                    ("pod.json".into(), pod_json.to_string().into_bytes()),
                    ("logs.search.txt".into(), log.into_bytes()),
                ],
            }],
            None,
            "@1764583200",
        )
        .unwrap();
        Capture {
            key: TerminationKey::new(format!("{pod}-uid"), "search", restart),
            namespace: "prod".into(),
            pod,
            owner_kind: Some("Deployment".into()),
            owner: Some("search".into()),
            node: None,
            revision: None,
            finished_at: None,
            observed_at: jiff::Timestamp::from_second(1_764_583_200 + i64::from(restart)).unwrap(),
            reason: Some("Error".into()),
            exit_code: Some(137),
            signal: None,
            cause: None,
            confidence: None,
            summary: None,
            diagnosis_json: None,
            kind: CaptureKind::Full,
            missing: vec![],
            logs: None,
            capture_delay_ms: None,
            bundle: Some(bundle),
        }
    };
    {
        let s = RedbStore::open(&db).unwrap();
        s.insert(&capture(1, 41)).unwrap();
        s.insert(&capture(2, 180)).unwrap();
    }
    let manifest = example("probe/budget-below-measured-startup")
        .replace(
            "  annotations:\n    crashdoc.io/startup-seconds: \"240\"\n",
            "",
        )
        .replacen("name: search\n", "name: search\n  namespace: prod\n", 1);
    let file = dir.path().join("deploy.yaml");
    std::fs::write(&file, manifest).unwrap();
    let f = file.to_str().unwrap();
    // Without the history nothing measures the startup.
    let (code, out, _) = crashdoc(&["lint", f], None);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("budget-below-measured-startup"), "{out}");
    let (code, out, err) = crashdoc(&["lint", f, "--history", db.to_str().unwrap()], None);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("error[probe/budget-below-measured-startup] Deployment prod/search"),
        "{out}"
    );
    assert!(
        out.contains("measured to need 181s (watch history capture"),
        "{out}"
    );
    assert!(out.contains("of pod search-7d9f8-2"), "{out}");
}

#[test]
fn the_rollout_capacity_used_is_said() {
    let y = example("rollout/surge-exceeds-gpu-capacity");
    let (code, out, _) = crashdoc(&["lint", "-", "--capacity", "gpu=8"], Some(y));
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("rollout capacity: 8 GPU (from --capacity)"),
        "{out}"
    );
    let (_, out, _) = crashdoc(
        &["lint", "-", "--format", "json", "--capacity", "gpu=8"],
        Some(y),
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["capacity"]["gpu"], 8);
    assert_eq!(v["capacity"]["source"], "8 GPU (from --capacity)");
    // No capacity, no line.
    let (_, out, _) = crashdoc(&["lint", "-"], Some(y));
    assert!(!out.contains("rollout capacity"), "{out}");
}
