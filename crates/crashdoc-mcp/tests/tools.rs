//! The MCP server through a real MCP client (rmcp's), in process over a
//! duplex pipe: the tool list and schemas, every offline tool against the
//! shipped examples, the error conventions and hints, and that no planted
//! secret value reaches any tool result.

use crashdoc_mcp::{CrashdocMcp, Defaults};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ServiceError, ServiceExt};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example(p: &str) -> String {
    repo().join("examples").join(p).display().to_string()
}

async fn client(defaults: Defaults) -> RunningService<RoleClient, ()> {
    let (c, s) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = CrashdocMcp::new(defaults).serve(s).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(c).await.expect("the client connects")
}

async fn call(
    c: &RunningService<RoleClient, ()>,
    tool: &str,
    args: Value,
) -> Result<CallToolResult, ServiceError> {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    c.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
}

async fn ok(c: &RunningService<RoleClient, ()>, tool: &str, args: Value) -> (Value, String) {
    let r = call(c, tool, args.clone()).await.expect("a tool result");
    assert_eq!(r.is_error, Some(false), "{tool} {args}: {r:?}");
    let text = texts(&r);
    (r.structured_content.expect("structured content"), text)
}

/// A client of a server whose history is the file `db`.
async fn client_on(db: &std::path::Path) -> RunningService<RoleClient, ()> {
    client(Defaults {
        db: Some(crashdoc_history::Location::File(db.to_path_buf())),
        ..Defaults::default()
    })
    .await
}

/// One string field of each object of a JSON array.
fn column<'a>(rows: &'a Value, field: &str) -> Vec<&'a str> {
    rows.as_array()
        .map(|a| a.iter().filter_map(|r| r[field].as_str()).collect())
        .unwrap_or_default()
}

async fn tool_error(
    c: &RunningService<RoleClient, ()>,
    tool: &str,
    args: Value,
) -> (Value, String) {
    let r = call(c, tool, args.clone()).await.expect("a tool result");
    assert_eq!(r.is_error, Some(true), "{tool} {args} should fail: {r:?}");
    let text = texts(&r);
    (r.structured_content.unwrap_or(Value::Null), text)
}

fn texts(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn top(v: &Value) -> &str {
    v["pods"][0]["diagnoses"][0]["cause"]
        .as_str()
        .unwrap_or("none")
}

#[tokio::test]
async fn tools_are_listed_with_schemas_that_follow_the_cli_flags() {
    let c = client(Defaults::default()).await;
    let tools = c.list_all_tools().await.expect("tools/list");
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "analyze", "capture", "diagnose", "explain", "fleet", "history", "lint", "scan"
        ]
    );
    let props = |name: &str| -> Vec<String> {
        let t = tools.iter().find(|t| t.name == name).expect("tool");
        let mut p: Vec<String> = t.input_schema["properties"]
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        p.sort();
        p
    };
    let cluster = [
        "context",
        "kubeconfig",
        "log_bytes",
        "log_lines",
        "namespace",
        "no_secret_keys",
    ];
    for (tool, own) in [
        ("diagnose", &["format", "save", "target"][..]),
        ("capture", &["output", "target"][..]),
        ("scan", &["all_namespaces", "concurrency", "format"][..]),
    ] {
        let mut want: Vec<String> = cluster.iter().chain(own).map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(props(tool), want, "{tool}");
    }
    assert_eq!(props("analyze"), ["format", "path", "text"]);
    assert_eq!(props("explain"), ["cause"]);
    assert_eq!(
        props("lint"),
        [
            "against",
            "capacity",
            "config",
            "evidence",
            "fail_on",
            "list",
            "paths",
            "require_digest",
            "text"
        ]
    );
    assert_eq!(
        props("history"),
        [
            "cluster",
            "container",
            "db",
            "export",
            "limit",
            "namespace",
            "output",
            "since",
            "target"
        ]
    );
    // The fleet tool follows `history --group-by/--new-causes/--compare-clusters`.
    assert_eq!(
        props("fleet"),
        [
            "cluster",
            "db",
            "group_by",
            "namespace",
            "query",
            "revision",
            "since",
            "target"
        ]
    );
    let diagnose = tools.iter().find(|t| t.name == "diagnose").expect("tool");
    assert_eq!(diagnose.input_schema["required"], json!(["target"]));
    for t in &tools {
        let read_only = t.annotations.as_ref().and_then(|a| a.read_only_hint);
        // capture writes a bundle on the server's machine; nothing writes to the cluster
        assert_eq!(read_only, Some(t.name != "capture"), "{}", t.name);
    }
}

#[tokio::test]
async fn analyze_reads_every_shipped_example() {
    let c = client(Defaults::default()).await;
    for (path, cause) in [
        ("vllm-oom", "oom-killed"),
        ("slow-start-liveness", "probe-kill"),
        ("bundle", "auth-failure"),
        ("missing-secret-key.txt", "config-ref-missing"),
    ] {
        let (v, text) = ok(&c, "analyze", json!({ "path": example(path) })).await;
        assert_eq!(v["schema"], "crashdoc/v1", "{path}");
        assert_eq!(top(&v), cause, "{path}");
        // the text starts with the summary line, then the same JSON
        let first = text.lines().next().unwrap_or_default();
        assert!(first.contains(&format!(": {cause} (")), "{path}: {first}");
        assert!(text.contains("\"schema\": \"crashdoc/v1\""), "{path}");
    }
}

#[tokio::test]
async fn analyze_takes_pasted_text_and_the_cli_text_formats() {
    let c = client(Defaults::default()).await;
    let paste = std::fs::read_to_string(example("missing-secret-key.txt")).expect("example");
    let (v, _) = ok(&c, "analyze", json!({ "text": paste })).await;
    assert_eq!(top(&v), "config-ref-missing");
    let (_, md) = ok(
        &c,
        "analyze",
        json!({ "text": paste, "format": "markdown" }),
    )
    .await;
    assert!(md.starts_with('#'), "markdown starts with a heading: {md}");
    let (_, text) = ok(
        &c,
        "analyze",
        json!({ "path": example("vllm-oom"), "format": "text" }),
    )
    .await;
    assert!(!text.contains('\u{1b}'), "no colour codes");
    assert!(text.contains("oom-killed"));
    // a paste that is not kubectl output at all is a tool error, with the CLI's hint
    let (v, text) = tool_error(&c, "analyze", json!({ "text": "" })).await;
    assert_eq!(v["error"], "cannot analyse the pasted text");
    assert!(text.contains("hint: pipe kubectl output into it"), "{text}");
}

#[tokio::test]
async fn tool_failures_are_results_with_the_cli_hints() {
    let c = client(Defaults::default()).await;
    // an unreadable path: error, causes, hint as the CLI prints them
    let (v, text) = tool_error(&c, "analyze", json!({ "path": "/nonexistent/evidence" })).await;
    assert_eq!(v["error"], "cannot analyse /nonexistent/evidence");
    assert_eq!(v["hint"], "check the path exists and is readable");
    assert!(text.starts_with("error: cannot analyse /nonexistent/evidence\n  Caused by: "));
    assert!(
        text.ends_with("hint: check the path exists and is readable"),
        "{text}"
    );
    // neither path nor text
    let (v, _) = tool_error(&c, "analyze", json!({})).await;
    assert!(v["hint"].as_str().unwrap_or_default().contains("`text`"));
    // both
    tool_error(&c, "analyze", json!({ "path": "x", "text": "y" })).await;
    // arguments outside the schema: rmcp answers with a tool error too (SEP-1303)
    let (_, text) = tool_error(&c, "analyze", json!({ "path": 5 })).await;
    assert!(text.contains("failed to deserialize parameters"), "{text}");
    let (_, text) = tool_error(&c, "analyze", json!({ "paths": "x" })).await;
    assert!(text.contains("unknown field"), "{text}");
    // a target kubectl would not take, before any cluster access
    let (_, text) = tool_error(&c, "diagnose", json!({ "target": "cronjobs/x" })).await;
    assert!(
        text.contains("hint: targets look like NAME, pod/NAME"),
        "{text}"
    );
    // a kubeconfig that does not exist
    let (v, _) = tool_error(
        &c,
        "diagnose",
        json!({ "target": "deploy/web", "kubeconfig": "/nonexistent/kubeconfig" }),
    )
    .await;
    assert_eq!(v["error"], "cannot load the Kubernetes configuration");
    assert!(
        v["hint"]
            .as_str()
            .unwrap_or_default()
            .starts_with("set KUBECONFIG")
    );
    // an unknown cause names the valid ones
    let (v, _) = tool_error(&c, "explain", json!({ "cause": "oom" })).await;
    assert!(
        v["hint"]
            .as_str()
            .unwrap_or_default()
            .contains("oom-killed")
    );
    // an unknown tool is a protocol error, not a result
    let e = call(&c, "lint-everything", json!({})).await;
    assert!(
        matches!(e, Err(ServiceError::McpError(ref d)) if d.code.0 == -32602),
        "{e:?}"
    );
}

#[tokio::test]
async fn explain_gives_the_rule_documentation() {
    let c = client(Defaults::default()).await;
    let (v, text) = ok(&c, "explain", json!({ "cause": "probe-kill" })).await;
    assert_eq!(v["schema"], "crashdoc/v1");
    assert_eq!(v["cause"], "probe-kill");
    let headings: Vec<&str> = v["sections"]
        .as_array()
        .map(|a| a.iter().filter_map(|s| s["heading"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(headings.first(), Some(&"What it detects"));
    assert_eq!(headings.len(), 6);
    assert!(
        !v["catalog_entries"]
            .as_array()
            .map(Vec::is_empty)
            .unwrap_or(true)
    );
    assert!(text.starts_with("probe-kill — "), "{text}");
    let (other, _) = ok(&c, "explain", json!({ "cause": "oom-killed" })).await;
    assert_ne!(other["sections"], v["sections"]);
}

/// A history as `crashdoc watch` writes it, from a shipped example.
fn history_db(dir: &Path) -> PathBuf {
    use crashdoc_core::ingest::bundle::{PodFiles, tar_gz_bytes};
    use crashdoc_history::{Capture, CaptureKind, RedbStore, TerminationKey};
    let ex = repo().join("examples/vllm-oom");
    let files: Vec<(String, Vec<u8>)> = ["describe-pod.txt", "logs-previous.txt"]
        .iter()
        .map(|f| (f.to_string(), std::fs::read(ex.join(f)).expect("example")))
        .collect();
    let pods = [PodFiles {
        namespace: "llm".into(),
        name: "vllm-7d9f8b6c5d-x2x9k".into(),
        files,
    }];
    let bundle = tar_gz_bytes(&pods, None, "2026-11-29T10:00:00Z").expect("bundle");
    let db = dir.join("history.redb");
    let store = RedbStore::open(&db).expect("open");
    for (n, reason, code, cause, pod) in [
        (3, "OOMKilled", 137, "oom-killed", "vllm-7d9f8b6c5d-x2x9k"),
        (4, "OOMKilled", 137, "oom-killed", "vllm-7d9f8b6c5d-x2x9k"),
        (1, "Error", 1, "app-crash", "web-5d8f7c6b9-abcde"),
    ] {
        let web = pod.starts_with("web");
        store
            .insert(&Capture {
                key: TerminationKey::new(if web { "uid-2" } else { "uid-1" }, "main", n),
                namespace: if web { "shop" } else { "llm" }.into(),
                pod: pod.into(),
                owner_kind: Some("Deployment".into()),
                owner: Some(if web { "web" } else { "vllm" }.into()),
                node: None,
                revision: None,
                finished_at: Some(format!("2026-11-29T10:0{n}:00Z").parse().expect("time")),
                observed_at: format!("2026-11-29T10:0{n}:01Z").parse().expect("time"),
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
            })
            .expect("insert");
    }
    db
}

#[tokio::test]
async fn history_lists_filters_and_exports() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = history_db(dir.path());
    let c = client_on(&db).await;
    let (v, text) = ok(&c, "history", json!({})).await;
    assert_eq!(v["captures"].as_array().map(Vec::len), Some(3));
    assert!(text.starts_with("3 capture(s), newest first"), "{text}");
    let (v, _) = ok(
        &c,
        "history",
        json!({ "target": "deploy/vllm", "namespace": "llm" }),
    )
    .await;
    let pods = column(&v["captures"], "pod");
    assert_eq!(pods, ["vllm-7d9f8b6c5d-x2x9k", "vllm-7d9f8b6c5d-x2x9k"]);
    assert_eq!(v["captures"][0]["restart_count"], 4, "newest first");
    let (v, text) = ok(&c, "history", json!({ "target": "deploy/nothing" })).await;
    assert_eq!(v["captures"], json!([]));
    assert!(text.starts_with("no captures of deploy/nothing"), "{text}");
    // export a capture as a bundle, then analyze it
    let id = 1;
    let out = dir.path().join("crash.tar.gz");
    let (v, _) = ok(
        &c,
        "history",
        json!({ "export": id, "output": out.display().to_string() }),
    )
    .await;
    assert_eq!(top(&v), "oom-killed");
    let (again, _) = ok(&c, "analyze", json!({ "path": out.display().to_string() })).await;
    assert_eq!(top(&again), "oom-killed");
    let folder = dir.path().join("crash");
    ok(
        &c,
        "history",
        json!({ "export": id, "output": folder.display().to_string() }),
    )
    .await;
    assert!(folder.join("manifest.json").is_file());
    // near misses: no such capture, export without output, a bad duration, no database
    let (_, text) = tool_error(
        &c,
        "history",
        json!({ "export": 999, "output": out.display().to_string() }),
    )
    .await;
    assert!(text.contains("capture 999 has no bundle"), "{text}");
    tool_error(&c, "history", json!({ "export": 1 })).await;
    let (_, text) = tool_error(&c, "history", json!({ "since": "2 hours" })).await;
    assert!(text.contains("is not a duration"), "{text}");
    let (_, text) = tool_error(
        &c,
        "history",
        json!({ "db": dir.path().join("none.redb").display().to_string() }),
    )
    .await;
    assert!(text.contains("there is no history at"), "{text}");
}

#[tokio::test]
async fn fleet_answers_from_the_servers_history_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = history_db(dir.path());
    let c = client_on(&db).await;
    let (v, text) = ok(
        &c,
        "fleet",
        json!({ "query": "group", "group_by": "cause" }),
    )
    .await;
    let groups: Vec<(String, u64)> = v["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| {
            (
                g["key"].as_str().unwrap_or_default().to_string(),
                g["captures"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        groups,
        [("oom-killed".to_string(), 2), ("app-crash".to_string(), 1)]
    );
    assert!(text.starts_with("2 group(s) by cause"), "{text}");
    let (v, _) = ok(
        &c,
        "fleet",
        json!({ "query": "new_causes", "since": "2026-11-29T10:02:00Z" }),
    )
    .await;
    // oom-killed was first seen at 10:03, app-crash at 10:01: only the first is new.
    let new = column(&v["new_causes"], "cause");
    assert_eq!(new, ["oom-killed"]);
    // Near misses: compare_clusters without a target; new_causes without a start.
    let (_, text) = tool_error(&c, "fleet", json!({ "query": "compare_clusters" })).await;
    assert!(text.contains("needs `target`"), "{text}");
    let (_, text) = tool_error(&c, "fleet", json!({ "query": "new_causes" })).await;
    assert!(text.contains("new since when?"), "{text}");
    // A call cannot send the server's database password to a host of its
    // choosing: a URL in `db` is refused before anything connects.
    for tool in ["fleet", "history"] {
        let mut args = json!({ "db": "postgres://crashdoc@attacker.invalid:5432/x" });
        if tool == "fleet" {
            args["query"] = json!("group");
        }
        let (_, text) = tool_error(&c, tool, args).await;
        assert!(
            text.contains("may only name a history file"),
            "{tool}: {text}"
        );
    }
}

/// Values planted in a Secret, an env var and log lines of a fixture
/// folder; every tool result is searched for each.
const PLANTED: [&str; 7] = [
    "Pl4ntedSecretValue-9c1f",         // Secret data (decoded)
    "UGw0bnRlZFNlY3JldFZhbHVlLTljMWY", // ... and as stored, base64
    "Pl4ntedStringData-77aa",          // Secret stringData
    "Pl4ntedEnvValue-c0ffee",          // env var value in the pod spec and describe
    "Pl4ntedLogPassword-31",           // password=... in a log line
    "Pl4ntedBearerToken0123456789",    // Authorization: Bearer ... in a log line
    "Pl4ntedUrlPass-42",               // postgres://user:PASS@host in a log line
];

fn secret_fixture(dir: &Path) {
    let w = |name: &str, text: &str| std::fs::write(dir.join(name), text).expect("write fixture");
    w(
        "secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: ledger-db\n  namespace: shop\ntype: Opaque\ndata:\n  password: UGw0bnRlZFNlY3JldFZhbHVlLTljMWY=\nstringData:\n  api-key: Pl4ntedStringData-77aa\n",
    );
    w(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ledger-6d5c9-x1y2z\n  namespace: shop\nspec:\n  containers:\n  - name: api\n    image: ledger:1\n    env:\n    - name: LEDGER_API_TOKEN\n      value: Pl4ntedEnvValue-c0ffee\n    - name: DB_PASSWORD\n      valueFrom:\n        secretKeyRef: {name: ledger-db, key: password}\nstatus:\n  phase: Running\n  containerStatuses:\n  - name: api\n    ready: false\n    restartCount: 6\n    image: ledger:1\n    imageID: ''\n    state:\n      waiting: {reason: CrashLoopBackOff, message: back-off 2m40s restarting failed container}\n    lastState:\n      terminated: {exitCode: 1, reason: Error}\n",
    );
    w(
        "describe-pod.txt",
        "Name:         ledger-6d5c9-x1y2z\nNamespace:    shop\nControlled By:  ReplicaSet/ledger-6d5c9\nContainers:\n  api:\n    Image:          ledger:1\n    State:          Waiting\n      Reason:       CrashLoopBackOff\n    Last State:     Terminated\n      Reason:       Error\n      Exit Code:    1\n    Restart Count:  6\n    Environment:\n      LEDGER_API_TOKEN:  Pl4ntedEnvValue-c0ffee\n      DB_PASSWORD:       <set to the key 'password' in secret 'ledger-db'>  Optional: false\n",
    );
    w(
        "logs-previous.txt",
        "starting ledger api\nconfig: password=Pl4ntedLogPassword-31 pool=10\nError: connect ECONNREFUSED 10.0.0.7:5432 postgres://ledger:Pl4ntedUrlPass-42@db.shop:5432/ledger\nFATAL:  password authentication failed for user \"ledger\" (password=Pl4ntedLogPassword-31)\nHTTP 401 Unauthorized for request with Authorization: Bearer Pl4ntedBearerToken0123456789\n",
    );
}

#[tokio::test]
async fn no_planted_secret_value_reaches_any_tool_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    secret_fixture(dir.path());
    let c = client(Defaults::default()).await;
    let path = dir.path().display().to_string();
    let paste: String = [
        "describe-pod.txt",
        "pod.yaml",
        "secret.yaml",
        "logs-previous.txt",
    ]
    .iter()
    .map(|f| std::fs::read_to_string(dir.path().join(f)).expect("fixture"))
    .collect::<Vec<_>>()
    .join("\n");
    let mut seen = String::new();
    for format in ["summary", "text", "markdown"] {
        for args in [
            json!({ "path": path, "format": format }),
            json!({ "text": paste, "format": format }),
        ] {
            let r = call(&c, "analyze", args).await.expect("result");
            assert_eq!(r.is_error, Some(false));
            let whole = serde_json::to_string(&r).expect("serialise");
            for v in PLANTED {
                assert!(!whole.contains(v), "{format}: `{v}` leaks into {whole}");
            }
            seen.push_str(&whole);
        }
    }
    // near miss: the output does quote the log lines that held the values,
    // so their absence is redaction, not silence
    assert!(seen.contains("auth-failure"), "{seen}");
    for quoted in [
        "password authentication failed for user",
        "Authorization: Bearer [REDACTED]",
        "postgres://ledger:[REDACTED]@db.shop:5432",
        "password=[REDACTED]",
    ] {
        assert!(seen.contains(quoted), "`{quoted}` not quoted: {seen}");
    }
    // and a tool failure that names the input does not leak either
    let bad = dir.path().join("password=Pl4ntedLogPassword-31");
    let (_, text) = tool_error(&c, "analyze", json!({ "path": bad.display().to_string() })).await;
    assert!(!text.contains("Pl4ntedLogPassword-31"), "{text}");
    assert!(text.contains("password=[REDACTED]"), "{text}");
}

#[tokio::test]
async fn lint_finds_a_checks_example_and_not_its_near_miss() {
    let c = client(Defaults::default()).await;
    let check = crashdoc_lint::check("probe/liveness-without-startup").expect("the check");
    let (v, text) = ok(&c, "lint", json!({ "text": check.example })).await;
    assert_eq!(v["schema"], "crashdoc/lint-v1");
    let ids: Vec<&str> = v["findings"]
        .as_array()
        .map(|a| a.iter().filter_map(|f| f["check"].as_str()).collect())
        .unwrap_or_default();
    assert!(ids.contains(&check.id), "{ids:?}");
    assert!(text.contains(check.id), "{text}");
    let (near, _) = ok(&c, "lint", json!({ "text": check.near_miss })).await;
    let near_ids: Vec<&str> = near["findings"]
        .as_array()
        .map(|a| a.iter().filter_map(|f| f["check"].as_str()).collect())
        .unwrap_or_default();
    assert!(!near_ids.contains(&check.id), "{near_ids:?}");
    // fail_on: the example fails at its own severity, never with `never`
    let (never, _) = ok(
        &c,
        "lint",
        json!({ "text": check.example, "fail_on": "never" }),
    )
    .await;
    assert_eq!(never["failing"], false);
    let (warn, _) = ok(
        &c,
        "lint",
        json!({ "text": check.example, "fail_on": "warning" }),
    )
    .await;
    assert_eq!(warn["failing"], true);
    // the list, and explain of a check id and of the cause it leads to
    let (list, _) = ok(&c, "lint", json!({ "list": true })).await;
    assert_eq!(
        list["checks"].as_array().map(Vec::len),
        Some(crashdoc_lint::checks::ALL.len())
    );
    let (e, text) = ok(&c, "explain", json!({ "cause": check.id })).await;
    assert_eq!(e["check"], check.id);
    assert!(text.starts_with(check.id), "{text}");
    let (e, _) = ok(&c, "explain", json!({ "cause": check.cause.id() })).await;
    let prevented: Vec<&str> = e["prevented_by"]
        .as_array()
        .map(|a| a.iter().filter_map(|x| x.as_str()).collect())
        .unwrap_or_default();
    assert!(prevented.contains(&check.id), "{prevented:?}");
}

#[tokio::test]
async fn lint_failures_carry_the_cli_hints() {
    let c = client(Defaults::default()).await;
    let (v, _) = tool_error(&c, "lint", json!({ "text": "just: words\n" })).await;
    assert!(
        v["hint"]
            .as_str()
            .unwrap_or_default()
            .starts_with("crashdoc lint reads Kubernetes manifests"),
        "{v}"
    );
    let (v, _) = tool_error(&c, "lint", json!({ "paths": ["/nonexistent/k8s"] })).await;
    assert_eq!(v["hint"], "check the path exists and is readable");
    let (v, _) = tool_error(&c, "lint", json!({ "text": "kind: [unclosed\n" })).await;
    assert!(
        v["hint"]
            .as_str()
            .unwrap_or_default()
            .starts_with("fix the YAML/JSON"),
        "{v}"
    );
    let (v, _) = tool_error(&c, "lint", json!({})).await;
    assert!(v["hint"].as_str().unwrap_or_default().contains("`text`"));
    let (_, text) = tool_error(
        &c,
        "lint",
        json!({ "text": "kind: Pod\n", "capacity": ["cpu=4"] }),
    )
    .await;
    assert!(text.starts_with("error: capacity cpu=4"), "{text}");
}
