//! Planted credentials never reach any output or error: a database
//! password (`--db`), a webhook path secret (`--webhook`), a kubeconfig
//! server's userinfo and query token, a bearer token, each through the
//! real binary: `history`, `diagnose -v`, `watch -v` (its log and its
//! /metrics), and `mcp` (a tool's error result).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const DB_PW: &str = "CanaryDbPw7731";
const HOOK: &str = "CanaryHookSecret4412";
const KUBE_PW: &str = "CanaryKubePw9921";
const QUERY_TOKEN: &str = "CanaryQueryTok5511";
const BEARER: &str = "CanaryBearer0123456789";

const CANARIES: &[&str] = &[DB_PW, HOOK, KUBE_PW, QUERY_TOKEN, BEARER];

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_crashdoc"));
    c.env("NO_COLOR", "1")
        .env_remove("CRASHDOC_DB")
        .env_remove("KUBECONFIG")
        .env_remove("PGPASSWORD")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("crashdoc-canary-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn db_url() -> String {
    // Port 1 on loopback: refused at once.
    format!("postgres://crashdoc:{DB_PW}@127.0.0.1:1/history?sslmode=disable")
}

fn hook_url() -> String {
    format!("https://hooks.slack.com/services/T0000/B0000/{HOOK}")
}

/// A kubeconfig whose server (unreachable) carries a password and a query
/// token, and whose user a bearer token.
fn kubeconfig(d: &Path) -> PathBuf {
    let p = d.join("kubeconfig");
    std::fs::write(
        &p,
        format!(
            "apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://admin:{KUBE_PW}@127.0.0.1:1/k8s?token={QUERY_TOKEN}
contexts:
- name: c
  context: {{cluster: c, user: u, namespace: d}}
current-context: c
users:
- name: u
  user:
    token: {BEARER}
"
        ),
    )
    .expect("write kubeconfig");
    p
}

fn assert_clean(what: &str, text: &str) {
    for c in CANARIES {
        assert!(!text.contains(c), "{what} shows the canary {c}:\n{text}");
    }
}

#[test]
fn history_db_url_password_is_masked() {
    let out = bin()
        .args(["history", "--db", &db_url()])
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    // The URL is named, masked: the error says which database.
    assert!(
        err.contains("postgres://crashdoc:***@127.0.0.1:1/history"),
        "{err}"
    );
    assert!(err.contains("Caused by:"), "{err}");
    assert_clean("history --db", &err);
    assert_clean(
        "history --db (stdout)",
        &String::from_utf8_lossy(&out.stdout),
    );
}

#[test]
fn kubeconfig_server_and_token_are_masked_with_verbose() {
    let d = dir("kube");
    let kc = kubeconfig(&d);
    let out = bin()
        .args(["diagnose", "pod/x", "-v", "--kubeconfig"])
        .arg(&kc)
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error:"), "{err}");
    assert_clean("diagnose -v", &err);
    assert_clean(
        "diagnose -v (stdout)",
        &String::from_utf8_lossy(&out.stdout),
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

fn http_get(port: u16, path: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    Some(body)
}

#[test]
fn watch_webhook_db_and_metrics_are_masked() {
    let d = dir("watch");
    let kc = kubeconfig(&d);
    let port = free_port();
    let mut child = bin()
        .args(["watch", "-v", "--cluster", "c", "--db", &db_url()])
        .args([
            "--webhook",
            &hook_url(),
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .arg("--kubeconfig")
        .arg(&kc)
        .spawn()
        .expect("run watch");
    let mut metrics = None;
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(100));
        if let Some(m) = http_get(port, "/metrics") {
            metrics = Some(m);
            break;
        }
        if child.try_wait().ok().flatten().is_some() {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(1500));
    let _ = child.kill();
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.is_empty());
    assert_clean("watch -v", &err);
    assert_clean("watch (stdout)", &String::from_utf8_lossy(&out.stdout));
    if let Some(m) = metrics {
        assert_clean("watch /metrics", &m);
    }
}

#[test]
fn watch_bad_webhook_is_not_echoed() {
    let d = dir("badhook");
    let kc = kubeconfig(&d);
    let out = bin()
        .args(["watch", "--cluster", "c", "--db"])
        .arg(d.join("h.redb"))
        .arg("--kubeconfig")
        .arg(&kc)
        .args(["--webhook", &format!("ftp://u:{HOOK}@hooks.example/x")])
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("webhook"), "{err}");
    assert_clean("watch --webhook ftp://", &err);
}

/// One JSON-RPC exchange with `crashdoc mcp` on stdio: every answer line.
fn mcp_stdio(args: &[&str], calls: &[serde_json::Value]) -> (String, String) {
    let mut c = bin();
    c.arg("mcp").args(args).stdin(Stdio::piped());
    let mut child = c.spawn().expect("run mcp");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut answers = String::new();
    let mut send = |v: serde_json::Value| {
        writeln!(stdin, "{v}").expect("write");
        stdin.flush().expect("flush");
    };
    send(
        serde_json::json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"canary","version":"1"}}}),
    );
    let mut line = String::new();
    stdout.read_line(&mut line).expect("read");
    answers.push_str(&line);
    send(serde_json::json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    for (i, call) in calls.iter().enumerate() {
        send(serde_json::json!({"jsonrpc":"2.0","id":i + 1,"method":"tools/call","params":call}));
        line.clear();
        stdout.read_line(&mut line).expect("read");
        answers.push_str(&line);
    }
    let _ = send;
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    (answers, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn mcp_results_mask_the_db_and_kubeconfig() {
    let d = dir("mcp");
    let kc = kubeconfig(&d);
    let kc = kc.to_string_lossy().into_owned();
    let (answers, err) = mcp_stdio(
        &["--db", &db_url(), "--kubeconfig", &kc],
        &[
            serde_json::json!({"name":"history","arguments":{}}),
            serde_json::json!({"name":"diagnose","arguments":{"target":"pod/x"}}),
        ],
    );
    assert_eq!(answers.matches("\"isError\":true").count(), 2, "{answers}");
    assert!(answers.contains("postgres://crashdoc:"), "{answers}");
    assert_clean("mcp results", &answers);
    assert_clean("mcp stderr", &err);
}
