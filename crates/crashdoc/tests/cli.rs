//! Runs the real binary, as users do.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn crashdoc(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_crashdoc"));
    c.args(args).current_dir(repo()).env("NO_COLOR", "1");
    c.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = c.spawn().expect("run crashdoc");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input)
            .expect("write stdin");
    }
    child.wait_with_output().expect("wait")
}

fn json(args: &[&str], stdin: Option<&[u8]>) -> serde_json::Value {
    let out = crashdoc(args, stdin);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn top(v: &serde_json::Value) -> (&str, &str) {
    let d = &v["pods"][0]["diagnoses"][0];
    (
        d["cause"].as_str().unwrap_or("?"),
        d["confidence"].as_str().unwrap_or("?"),
    )
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("crashdoc-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

#[test]
fn shipped_examples_are_diagnosed() {
    for (path, cause) in [
        ("examples/vllm-oom", "oom-killed"),
        ("examples/slow-start-liveness", "probe-kill"),
        ("examples/bundle", "auth-failure"),
        ("examples/missing-secret-key.txt", "config-ref-missing"),
    ] {
        let v = json(&["analyze", path, "--format", "json"], None);
        assert_eq!(v["schema"], "crashdoc/v1");
        assert_eq!(top(&v).0, cause, "{path}");
    }
}

#[test]
fn the_rollout_example_says_what_changed() {
    let v = json(
        &["analyze", "examples/rollout-regression", "--format", "json"],
        None,
    );
    assert_eq!(v["pods"].as_array().map(Vec::len), Some(1));
    let c = &v["pods"][0]["changes"];
    assert_eq!(c["verdict"], "coincides");
    assert_eq!(c["revisions"]["failing"]["number"], 3);
    assert_eq!(c["revisions"]["last_healthy"]["number"], 2);
    assert_eq!(
        c["undo"],
        "kubectl rollout undo deployment/web -n shop --to-revision=2"
    );
    assert!(
        c["coinciding"][0]
            .as_str()
            .is_some_and(|s| s.starts_with("spec.containers[app].image:")),
        "{c}"
    );
    let out = crashdoc(&["analyze", "examples/rollout-regression"], None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains("  what changed: revision 3 (web-7d9c6b5f8, rolled out 2026-11-30T10:00:00Z) against the last healthy revision 2"),
        "{text}"
    );
    assert!(
        text.contains("$ kubectl rollout undo deployment/web -n shop --to-revision=2"),
        "{text}"
    );
}

#[test]
fn paste_on_stdin() {
    let paste = std::fs::read(repo().join("examples/missing-secret-key.txt")).unwrap();
    let v = json(&["analyze", "-", "--format", "json"], Some(&paste));
    assert_eq!(top(&v), ("config-ref-missing", "high"));
    assert_eq!(v["pods"][0]["name"], "ledger-api-7c8b9d6f5c-2kx9p");
}

#[test]
fn text_and_markdown_outputs() {
    let out = crashdoc(&["analyze", "examples/vllm-oom"], None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains("cause oom-killed (high) in container vllm"),
        "{text}"
    );
    assert!(!text.contains('\x1b'), "no colour when not a terminal");
    let md = String::from_utf8_lossy(
        &crashdoc(
            &["analyze", "examples/vllm-oom", "--format", "markdown"],
            None,
        )
        .stdout,
    )
    .to_string();
    for h in [
        "# Post-mortem",
        "## What happened",
        "## Timeline",
        "## Cause",
        "## Evidence",
        "## Fix",
        "## Follow-ups",
    ] {
        assert!(md.contains(h), "markdown lacks {h}");
    }
}

#[test]
fn bundle_tar_gz_reads_like_the_folder() {
    let dir = temp_dir("tgz");
    let tgz = dir.join("bundle.tar.gz");
    let st = Command::new("tar")
        .args(["-czf"])
        .arg(&tgz)
        .arg("-C")
        .arg(repo().join("examples/bundle"))
        .arg(".")
        .status()
        .expect("tar");
    assert!(st.success());
    let a = json(&["analyze", "examples/bundle", "--format", "json"], None);
    let b = json(
        &["analyze", tgz.to_str().unwrap(), "--format", "json"],
        None,
    );
    assert_eq!(top(&a), top(&b));
    assert_eq!(
        a["pods"][0]["diagnoses"][0]["evidence"],
        b["pods"][0]["diagnoses"][0]["evidence"]
    );
}

#[test]
fn explain_and_rules() {
    let out = crashdoc(&["explain", "probe-kill"], None);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    for h in [
        "What it detects",
        "Why it crash-loops",
        "Evidence",
        "Example",
        "Fix",
        "Known false positives",
    ] {
        assert!(s.contains(h), "explain lacks {h}");
    }
    let out = crashdoc(&["explain", "no-such-cause"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error:"));
    let rules = String::from_utf8_lossy(&crashdoc(&["rules"], None).stdout).to_string();
    for c in ["oom-killed", "probe-kill", "gpu-unavailable", "unknown"] {
        assert!(rules.lines().any(|l| l.starts_with(c)), "rules lacks {c}");
    }
}

#[test]
fn unusable_input_exits_2_with_a_hint() {
    let empty = temp_dir("empty");
    let out = crashdoc(&["analyze", empty.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error:") && err.contains("hint:"), "{err}");

    let out = crashdoc(&["analyze", "-"], Some(b""));
    assert_eq!(out.status.code(), Some(2));

    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let out = crashdoc(&["analyze", "-"], Some(&garbage));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("binary"));

    let out = crashdoc(&["analyze", "/no/such/path"], None);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn partial_input_gives_a_partial_analysis() {
    let dir = temp_dir("partial");
    // Truncated YAML, a log with invalid UTF-8 and CRLF, an unknown file.
    std::fs::write(dir.join("pod.yaml"), "status:\n  containerStatuses:\n  - name: api\n    restartCount: 9\n    lastState:\n      terminated:\n        exitCode: 1\n        reason: Err").unwrap();
    std::fs::write(
        dir.join("logs-previous.txt"),
        b"starting\r\n\xff\xfe\r\nFATAL: could not connect to server: Connection refused\r\n",
    )
    .unwrap();
    std::fs::write(dir.join("notes.md"), "ticket text").unwrap();
    let v = json(
        &["analyze", dir.to_str().unwrap(), "--format", "json"],
        None,
    );
    assert_eq!(top(&v).0, "dependency-unreachable");
    let notes = v["pods"][0]["notes"].to_string();
    assert!(notes.contains("notes.md"), "{notes}");
    assert!(notes.contains("invalid UTF-8"), "{notes}");
    let missing = v["pods"][0]["missing"].to_string();
    assert!(missing.contains("events"), "{missing}");
}

#[test]
fn secret_values_never_reach_the_output() {
    let dir = temp_dir("secret");
    std::fs::write(dir.join("secret.yaml"), "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: aHVudGVyMi1zM2NyZXQ=\n").unwrap();
    std::fs::write(
        dir.join("logs-previous.txt"),
        "FATAL:  password authentication failed for user \"app\"\n",
    )
    .unwrap();
    for fmt in ["json", "text", "markdown"] {
        let out = crashdoc(&["analyze", dir.to_str().unwrap(), "--format", fmt], None);
        let s = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success());
        assert!(
            !s.contains("aHVudGVyMi1zM2NyZXQ") && !s.contains("hunter2-s3cret"),
            "{fmt} leaks the secret"
        );
    }
}

#[test]
fn help_teaches() {
    let out = crashdoc(&["analyze", "--help"], None);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("describe-pod.txt") && s.contains("Examples:") && s.contains("Exit status"));
}

#[test]
fn verify_takes_the_three_rolled_out_kinds() {
    let out = crashdoc(&["verify", "--help"], None);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains("deploy/NAME, sts/NAME or ds/NAME") && s.contains("controller-revision-hash"),
        "{s}"
    );
    // Other kinds are refused before any cluster is read (no kubeconfig here).
    let out = crashdoc(
        &["verify", "job/train", "--kubeconfig", "/nonexistent"],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("verify takes deploy/NAME, sts/NAME or ds/NAME"),
        "{err}"
    );
}

#[test]
fn cluster_info_dump_tree() {
    let dir = temp_dir("dump");
    std::fs::write(
        dir.join("nodes.json"),
        r#"{"kind":"NodeList","apiVersion":"v1","items":[{"metadata":{"name":"node-a"},"status":{"allocatable":{"memory":"32Gi"},"conditions":[{"type":"Ready","status":"True"}]}}]}"#,
    )
    .unwrap();
    let ns = dir.join("shop");
    std::fs::create_dir_all(ns.join("api-7f9c6d5b8-x2k4q")).unwrap();
    std::fs::write(
        ns.join("pods.json"),
        r#"{"kind":"PodList","apiVersion":"v1","items":[
 {"kind":"Pod","metadata":{"name":"web-0","namespace":"shop","uid":"u0"},"spec":{"containers":[{"name":"web"}]},
  "status":{"phase":"Running","containerStatuses":[{"name":"web","ready":true,"restartCount":0,"state":{"running":{}}}]}},
 {"kind":"Pod","metadata":{"name":"api-7f9c6d5b8-x2k4q","namespace":"shop","uid":"u1","ownerReferences":[{"kind":"ReplicaSet","name":"api-7f9c6d5b8","controller":true}]},
  "spec":{"nodeName":"node-a","containers":[{"name":"api","resources":{"limits":{"memory":"256Mi"}}}]},
  "status":{"phase":"Running","containerStatuses":[{"name":"api","ready":false,"restartCount":7,
   "state":{"waiting":{"reason":"CrashLoopBackOff"}},"lastState":{"terminated":{"exitCode":137,"reason":"OOMKilled"}}}]}}]}"#,
    )
    .unwrap();
    std::fs::write(
        ns.join("events.json"),
        r#"{"kind":"EventList","items":[{"kind":"Event","type":"Warning","reason":"BackOff","message":"Back-off restarting failed container api","involvedObject":{"kind":"Pod","name":"api-7f9c6d5b8-x2k4q"}}]}"#,
    )
    .unwrap();
    std::fs::write(
        ns.join("replicasets.json"),
        r#"{"kind":"ReplicaSetList","items":[{"metadata":{"name":"api-7f9c6d5b8","ownerReferences":[{"kind":"Deployment","name":"api"}]}}]}"#,
    )
    .unwrap();
    std::fs::write(
        ns.join("api-7f9c6d5b8-x2k4q/logs.txt"),
        "starting api\nloading catalogue into memory\n",
    )
    .unwrap();
    let v = json(
        &["analyze", dir.to_str().unwrap(), "--format", "json"],
        None,
    );
    let pods = v["pods"].as_array().unwrap();
    assert_eq!(pods.len(), 1, "only the unhealthy pod: {v}");
    assert_eq!(pods[0]["name"], "api-7f9c6d5b8-x2k4q");
    assert_eq!(pods[0]["owner"], "Deployment/api");
    assert_eq!(top(&v), ("oom-killed", "high"));
}

/// A history as `crashdoc watch` writes it, from a shipped example.
fn history_db(dir: &Path) -> PathBuf {
    use crashdoc_core::ingest::bundle::{PodFiles, tar_gz_bytes};
    use crashdoc_history::{Capture, CaptureKind, RedbStore, TerminationKey};
    let example = repo().join("examples/vllm-oom");
    let files: Vec<(String, Vec<u8>)> = ["describe-pod.txt", "logs-previous.txt"]
        .iter()
        .map(|f| {
            (
                f.to_string(),
                std::fs::read(example.join(f)).expect("example"),
            )
        })
        .collect();
    let pods = [PodFiles {
        namespace: "llm".into(),
        name: "vllm-7d9f8b6c5d-x2x9k".into(),
        files,
    }];
    let bundle = tar_gz_bytes(&pods, None, "2026-11-29T10:00:00Z").expect("bundle");
    let db = dir.join("history.redb");
    let store = RedbStore::open(&db).expect("open");
    for (n, reason, code, cause) in [
        (3, "OOMKilled", 137, "oom-killed"),
        (4, "OOMKilled", 137, "oom-killed"),
        (5, "Error", 1, "app-crash"),
    ] {
        let c = Capture {
            key: TerminationKey {
                cluster: String::new(),
                pod_uid: "uid-1".into(),
                container: "vllm".into(),
                restart_count: n,
            },
            namespace: "llm".into(),
            pod: "vllm-7d9f8b6c5d-x2x9k".into(),
            owner_kind: Some("Deployment".into()),
            owner: Some("vllm".into()),
            node: Some("gpu-1".into()),
            revision: None,
            finished_at: Some(format!("2026-11-29T10:0{n}:00Z").parse().unwrap()),
            observed_at: format!("2026-11-29T10:0{n}:01Z").parse().unwrap(),
            reason: Some(reason.into()),
            exit_code: Some(code),
            signal: None,
            cause: Some(cause.into()),
            confidence: Some("high".into()),
            summary: Some("summary".into()),
            diagnosis_json: None,
            kind: CaptureKind::Full,
            missing: vec![],
            logs: None,
            capture_delay_ms: None,
            bundle: Some(bundle.clone()),
        };
        store.insert(&c).expect("insert");
    }
    db
}

#[test]
fn history_lists_filters_and_exports_what_watch_recorded() {
    let dir = temp_dir("history");
    let db = history_db(&dir);
    let db_s = db.to_str().unwrap();

    let v = json(&["history", "--db", db_s, "--format", "json"], None);
    let rows = v.as_array().expect("array");
    assert_eq!(rows.len(), 3);
    // Newest first.
    assert_eq!(rows[0]["restart_count"], 5);
    assert_eq!(rows[0]["cause"], "app-crash");
    assert_eq!(rows[2]["reason"], "OOMKilled");

    // A workload target and a namespace that has nothing.
    assert_eq!(
        json(
            &["history", "deploy/vllm", "--db", db_s, "-f", "json"],
            None
        )
        .as_array()
        .map(Vec::len),
        Some(3)
    );
    assert_eq!(
        json(
            &["history", "-n", "other", "--db", db_s, "-f", "json"],
            None
        )
        .as_array()
        .map(Vec::len),
        Some(0)
    );

    let out = crashdoc(
        &["history", "pod/vllm-7d9f8b6c5d-x2x9k", "--db", db_s],
        None,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(text.contains("2 × OOMKilled → oom-killed"), "{text}");

    // Export a capture, as a .tar.gz or a folder, and analyse it like any bundle.
    let id = rows[2]["id"].as_u64().expect("id").to_string();
    for to in [dir.join("crash.tar.gz"), dir.join("crash")] {
        let to = to.to_str().unwrap();
        let out = crashdoc(&["history", "--db", db_s, "--export", &id, "-o", to], None);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            top(&json(&["analyze", to, "-f", "json"], None)).0,
            "oom-killed"
        );
    }
    let tgz = dir.join("crash.tar.gz");

    // An id that does not exist.
    let out = crashdoc(
        &[
            "history",
            "--db",
            db_s,
            "--export",
            "999",
            "-o",
            tgz.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("capture 999"));
}

#[test]
fn history_and_watch_fail_clearly() {
    let dir = temp_dir("history-errors");
    let missing = dir.join("none.redb");
    let out = crashdoc(&["history", "--db", missing.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error:"), "{err}");

    let garbage = dir.join("garbage.redb");
    std::fs::write(&garbage, b"this is not a database").unwrap();
    let out = crashdoc(&["history", "--db", garbage.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(2));

    // No cluster: a clear error, not a hang or a panic.
    let out = crashdoc(
        &[
            "watch",
            "--kubeconfig",
            dir.join("no-kubeconfig").to_str().unwrap(),
            "--db",
            dir.join("w.redb").to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("error:") && !err.contains("panicked"),
        "{err}"
    );

    let out = crashdoc(&["watch", "--retention", "two weeks"], None);
    assert_eq!(out.status.code(), Some(2));
}

/// The `hint:` lines of a failed run's standard error.
fn hint_lines(err: &str) -> Vec<&str> {
    err.lines().filter(|l| l.starts_with("hint:")).collect()
}

#[test]
fn a_corrupt_history_gets_the_same_hint_under_watch_and_history() {
    let dir = temp_dir("history-hint");
    // A kubeconfig that loads without a cluster: watch opens the history
    // before it sends any request.
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user:\n    token: t\n",
    )
    .unwrap();
    // Not a history database (an empty file would become one).
    {
        let (name, content) = ("garbage.redb", b"this is not a database");
        let db = dir.join(name);
        std::fs::write(&db, content).unwrap();
        let db = db.to_str().unwrap();
        let history = crashdoc(&["history", "--db", db], None);
        let watch = crashdoc(
            &[
                "watch",
                "--kubeconfig",
                kubeconfig.to_str().unwrap(),
                "--db",
                db,
                "--listen",
                "127.0.0.1:0",
            ],
            None,
        );
        assert_eq!(history.status.code(), Some(2), "{name}");
        assert_eq!(watch.status.code(), Some(2), "{name}");
        let (h, w) = (
            String::from_utf8_lossy(&history.stderr),
            String::from_utf8_lossy(&watch.stderr),
        );
        assert!(h.contains(name) && w.contains(name), "{h}\n{w}");
        let hints = hint_lines(&h);
        assert_eq!(hints.len(), 1, "{name} under history: {h}");
        assert!(hints[0].contains("move the file aside"), "{h}");
        assert_eq!(hints, hint_lines(&w), "{name}: history\n{h}\nwatch\n{w}");
        // The advice is the hint's, not the error message's.
        let advice = h.lines().filter(|l| l.contains("move the file aside"));
        assert_eq!(advice.count(), 1, "{h}");
    }
}

#[test]
fn a_missing_history_is_not_called_corrupt() {
    // Near miss: a history that does not exist gets its own hint, not the
    // corrupt one's.
    let dir = temp_dir("history-none");
    let db = dir.join("none.redb");
    let out = crashdoc(&["history", "--db", db.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let hints = hint_lines(&err);
    assert_eq!(hints.len(), 1, "{err}");
    assert!(hints[0].contains("created by `crashdoc watch`"), "{err}");
    assert!(!err.contains("move the file aside"), "{err}");
}

#[test]
fn no_place_for_the_history_says_how_to_give_one() {
    let mut c = Command::new(env!("CARGO_BIN_EXE_crashdoc"));
    c.args(["history"])
        .env_remove("HOME")
        .env_remove("CRASHDOC_DB")
        .env_remove("XDG_STATE_HOME")
        .env("NO_COLOR", "1");
    let out = c.output().expect("run crashdoc");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: cannot place the history"), "{err}");
    assert_eq!(
        hint_lines(&err),
        vec!["hint: pass --db PATH, or set CRASHDOC_DB or HOME"],
        "{err}"
    );
    // The advice is in the hint only.
    assert!(
        !err.lines().next().unwrap_or_default().contains("pass --db"),
        "{err}"
    );
}

#[test]
fn catalog_lists_every_entry_with_its_source() {
    let v = json(&["catalog", "--format", "json"], None);
    let entries = v.as_array().expect("a list");
    assert!(entries.len() > 500, "{} entries", entries.len());
    for e in entries {
        assert!(
            e["source"].as_str().is_some_and(|s| !s.trim().is_empty()),
            "{e}"
        );
        assert!(e["test"].is_string(), "{e}");
    }
    let port = json(
        &["catalog", "--cause", "port-conflict", "--format", "json"],
        None,
    );
    assert!(
        port.as_array()
            .unwrap()
            .iter()
            .all(|e| e["supports"] == "port-conflict")
    );
    let out = crashdoc(&["catalog", "--cause", "no-such-cause"], None);
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8_lossy(&crashdoc(&["catalog"], None).stdout).into_owned();
    assert!(text.contains("## kubernetes-vocabulary"), "no vocabulary");
    let ex =
        String::from_utf8_lossy(&crashdoc(&["explain", "oom-killed"], None).stdout).into_owned();
    for h in [
        "Outranks:",
        "Catalog entries",
        "source: ",
        "Kubernetes reasons",
    ] {
        assert!(ex.contains(h), "explain lacks {h}");
    }
}

/// A status-only capture of a `Deployment/web` pod in `shop`, exit 1.
fn status_only(key: crashdoc_history::TerminationKey, pod: &str) -> crashdoc_history::Capture {
    crashdoc_history::Capture {
        key,
        namespace: "shop".into(),
        pod: pod.into(),
        owner_kind: Some("Deployment".into()),
        owner: Some("web".into()),
        node: None,
        revision: None,
        finished_at: None,
        observed_at: jiff::Timestamp::UNIX_EPOCH,
        reason: Some("Error".into()),
        exit_code: Some(1),
        signal: None,
        cause: None,
        confidence: Some("high".into()),
        summary: None,
        diagnosis_json: None,
        kind: crashdoc_history::CaptureKind::StatusOnly,
        missing: vec![],
        logs: None,
        capture_delay_ms: None,
        bundle: None,
    }
}

/// A history holding two clusters' captures of one workload.
fn fleet_db(dir: &Path) -> PathBuf {
    use crashdoc_history::{Capture, RedbStore, TerminationKey};
    let db = dir.join("fleet.redb");
    let store = RedbStore::open(&db).expect("open");
    let rows = [
        // cluster, pod uid, restart, minute, cause, revision
        ("prod-eu", "eu-1", 1, 0, "app-crash", "aaa"),
        ("prod-eu", "eu-1", 2, 10, "oom-killed", "bbb"),
        ("prod-eu", "eu-1", 3, 20, "oom-killed", "bbb"),
        ("prod-us", "us-1", 1, 12, "oom-killed", "bbb"),
        ("prod-us", "us-1", 2, 22, "bad-config", "bbb"),
    ];
    for (cluster, uid, n, minute, cause, rev) in rows {
        let c = Capture {
            node: Some(format!("{cluster}-node")),
            revision: Some(rev.into()),
            observed_at: format!("2026-11-29T10:{minute:02}:00Z").parse().unwrap(),
            cause: Some(cause.into()),
            ..status_only(
                TerminationKey::new(uid, "app", n).in_cluster(cluster),
                &format!("web-{uid}"),
            )
        };
        store.insert(&c).expect("insert");
    }
    db
}

#[test]
fn history_answers_the_fleet_questions() {
    let dir = temp_dir("fleet");
    let db = fleet_db(&dir);
    let db_s = db.to_str().unwrap();

    // Which clusters crash most, and why.
    let v = json(
        &[
            "history",
            "--db",
            db_s,
            "--group-by",
            "cluster",
            "-f",
            "json",
        ],
        None,
    );
    assert_eq!(v["group_by"], "cluster");
    let g = v["groups"].as_array().expect("groups");
    assert_eq!(
        (g[0]["key"].as_str(), g[0]["captures"].as_u64()),
        (Some("prod-eu"), Some(3))
    );
    assert_eq!(
        g[0]["causes"][0],
        serde_json::json!({"cause": "oom-killed", "captures": 2})
    );
    assert_eq!(
        (g[1]["key"].as_str(), g[1]["captures"].as_u64()),
        (Some("prod-us"), Some(2))
    );

    // One cluster's records carry its name.
    let v = json(
        &[
            "history",
            "--db",
            db_s,
            "--cluster",
            "prod-us",
            "-f",
            "json",
        ],
        None,
    );
    let rows = v.as_array().expect("records");
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r["cluster"] == "prod-us"), "{v}");

    // The workload side by side: the whole text output.
    let out = crashdoc(
        &[
            "history",
            "deploy/web",
            "-n",
            "shop",
            "--db",
            db_s,
            "--compare-clusters",
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines,
        vec![
            vec![
                "deploy/web:",
                "captures",
                "by",
                "cause",
                "in",
                "each",
                "cluster"
            ],
            vec!["CAUSE", "prod-eu", "prod-us"],
            vec!["oom-killed", "2", "1"],
            vec!["app-crash", "1", "."],
            vec!["bad-config", ".", "1"],
        ],
        "{text}"
    );

    // New since 10:05: oom-killed is new in both clusters, bad-config in
    // prod-us; app-crash (10:00) is old.
    let v = json(
        &[
            "history",
            "--db",
            db_s,
            "--new-causes",
            "--since",
            "2026-11-29T10:05:00Z",
            "-f",
            "json",
        ],
        None,
    );
    let new: Vec<(String, String)> = v
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r["cluster"].as_str().unwrap().to_string(),
                r["cause"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        new,
        vec![
            ("prod-us".to_string(), "bad-config".to_string()),
            ("prod-us".to_string(), "oom-killed".to_string()),
            ("prod-eu".to_string(), "oom-killed".to_string()),
        ]
    );
    // Since revision bbb's first capture (10:10): the same three.
    let v = json(
        &[
            "history",
            "--db",
            db_s,
            "--new-causes",
            "--revision",
            "bbb",
            "-f",
            "json",
        ],
        None,
    );
    assert_eq!(v.as_array().map(Vec::len), Some(3), "{v}");
    // Since the first revision (aaa, 10:00) every triple is new: four.
    let v = json(
        &[
            "history",
            "--db",
            db_s,
            "--new-causes",
            "--revision",
            "aaa",
            "-f",
            "json",
        ],
        None,
    );
    assert_eq!(v.as_array().map(Vec::len), Some(4), "{v}");

    // --new-causes without a start is refused with the reason.
    let out = crashdoc(&["history", "--db", db_s, "--new-causes"], None);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("new since when?"));
}
