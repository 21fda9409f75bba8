//! Hostile requests against the real `crashdoc mcp --http` server on a
//! loopback port: missing and wrong tokens, an oversized body, paths out
//! of --root (`..`, a symlink, /proc), 100 concurrent calls, a tool that is
//! not exposed; JWT access tokens expired, for another audience or issuer,
//! or signed by another key; and the authenticated initialize that gets 200.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const TOKEN: &str = "test-token-Zq8w3k1LmN0pRt5v";
const OUTSIDE: &str = "OutsideFileCanary6612";

struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("crashdoc-mcp-http-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// The server with a token file in `d`, and `extra` flags.
fn start(d: &Path, extra: &[&str]) -> Server {
    let (server, line) = start_with_line(d, extra);
    assert!(line.contains("listening"), "{line}");
    server
}

/// The same, with the first line the server printed on stderr.
fn start_with_line(d: &Path, extra: &[&str]) -> (Server, String) {
    let token = d.join("token");
    std::fs::write(&token, format!("{TOKEN}\n")).expect("token file");
    let mut args = vec![OsString::from("--auth-token-file"), token.into()];
    args.extend(extra.iter().map(OsString::from));
    serve(free_port(), &args)
}

/// `crashdoc mcp --http 127.0.0.1:PORT ARGS...` with no `CRASHDOC_MCP_TOKEN`
/// in its environment, and the first line it printed on stderr.
fn serve(port: u16, args: &[OsString]) -> (Server, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_crashdoc"))
        .args(["mcp", "--http", &format!("127.0.0.1:{port}")])
        .args(args)
        .env_remove("CRASHDOC_MCP_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run crashdoc mcp");
    let mut line = String::new();
    BufReader::new(child.stderr.take().expect("stderr"))
        .read_line(&mut line)
        .expect("read");
    (Server { child, port }, line)
}

struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    /// The JSON-RPC message in a JSON or SSE body.
    fn json(&self) -> serde_json::Value {
        let text = self
            .body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .find(|l| l.starts_with('{'))
            .unwrap_or(self.body.trim());
        serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }
}

fn post(port: u16, token: Option<&str>, session: Option<&str>, body: &str) -> Answer {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    exchange(&mut s, port, token, session, body)
}

/// One request on `s` (plain or TLS), its answer read to the end.
fn exchange(
    s: &mut impl ReadWrite,
    port: u16,
    token: Option<&str>,
    session: Option<&str>,
    body: &str,
) -> Answer {
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(t) = token {
        req.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    if let Some(id) = session {
        req.push_str(&format!(
            "Mcp-Session-Id: {id}\r\nMcp-Protocol-Version: 2025-06-18\r\n"
        ));
    }
    req.push_str("\r\n");
    let _ = s.write_all(req.as_bytes());
    let _ = s.write_all(body.as_bytes());
    let _ = s.flush();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Answer {
        status,
        head: head.to_string(),
        body,
    }
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// A chunked body's bytes.
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].strip_prefix("\r\n").unwrap_or(&after[n..]);
    }
    out
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hostile","version":"1"}}}"#;

/// An initialized session's id.
fn session(port: u16) -> String {
    let a = post(port, Some(TOKEN), None, INIT);
    assert_eq!(a.status, 200, "{}{}", a.head, a.body);
    let id = a.header("mcp-session-id").expect("a session id");
    let n = post(
        port,
        Some(TOKEN),
        Some(&id),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert!(n.status == 202 || n.status == 200, "{}", n.head);
    id
}

fn call(port: u16, sid: &str, id: u64, tool: &str, args: serde_json::Value) -> Answer {
    let body = serde_json::json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}});
    post(port, Some(TOKEN), Some(sid), &body.to_string())
}

#[test]
fn tokens_missing_wrong_and_right() {
    let d = dir("tokens");
    let s = start(&d, &[]);
    let none = post(s.port, None, None, INIT);
    assert_eq!(none.status, 401, "{}", none.head);
    let challenge = none.header("www-authenticate").expect("WWW-Authenticate");
    assert!(
        challenge.starts_with("Bearer resource_metadata=\"")
            && challenge.contains("/.well-known/oauth-protected-resource"),
        "{challenge}"
    );
    let wrong = post(s.port, Some("test-token-Zq8w3k1LmN0pRt5w"), None, INIT);
    assert_eq!(wrong.status, 401);
    assert!(
        wrong
            .header("www-authenticate")
            .unwrap_or_default()
            .contains("invalid_token")
    );
    let short = post(s.port, Some("x"), None, INIT);
    assert_eq!(short.status, 401);
    for a in [&none, &wrong, &short] {
        assert!(!a.body.contains(TOKEN) && !a.head.contains(TOKEN));
    }
    let ok = post(s.port, Some(TOKEN), None, INIT);
    assert_eq!(ok.status, 200, "{}{}", ok.head, ok.body);
    assert_eq!(ok.json()["result"]["serverInfo"]["name"], "crashdoc");
    // The metadata document needs no token.
    let mut m = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
    write!(m, "GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").expect("write");
    let mut text = String::new();
    m.read_to_string(&mut text).expect("read");
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        text.contains(r#""bearer_methods_supported":["header"]"#),
        "{text}"
    );
}

#[test]
fn oversized_body_gets_413_and_the_server_goes_on() {
    let d = dir("big");
    let s = start(&d, &["--max-body-bytes", "2000"]);
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"pad":"{}"}}}}"#,
        "x".repeat(10_000)
    );
    let a = post(s.port, Some(TOKEN), None, &big);
    assert_eq!(a.status, 413, "{}", a.head);
    // Unauthenticated, it is 401 before any byte of the body is read.
    assert_eq!(post(s.port, None, None, &big).status, 401);
    assert_eq!(post(s.port, Some(TOKEN), None, INIT).status, 200);
}

#[test]
fn paths_out_of_root_are_refused_and_leak_nothing() {
    let d = dir("root");
    let root = d.join("root");
    std::fs::create_dir_all(root.join("case")).expect("root");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/vllm-oom");
    for e in std::fs::read_dir(&repo).expect("example") {
        let e = e.expect("entry");
        std::fs::copy(e.path(), root.join("case").join(e.file_name())).expect("copy");
    }
    std::fs::write(
        d.join("outside.txt"),
        format!("Error: {OUTSIDE}\nOOMKilled\n"),
    )
    .expect("outside");
    #[cfg(unix)]
    std::os::unix::fs::symlink(d.join("outside.txt"), root.join("link.txt")).expect("symlink");
    let s = start(&d, &["--root", &root.to_string_lossy()]);
    let sid = session(s.port);
    let ok = call(
        s.port,
        &sid,
        2,
        "analyze",
        serde_json::json!({"path": "case"}),
    );
    let v = ok.json();
    assert_ne!(v["result"]["isError"], true, "{}", ok.body);
    assert_eq!(
        v["result"]["structuredContent"]["pods"][0]["diagnoses"][0]["cause"],
        "oom-killed"
    );
    let outside = d.join("outside.txt").to_string_lossy().into_owned();
    for (i, path) in [
        "../outside.txt",
        "case/../../outside.txt",
        outside.as_str(),
        "link.txt",
        "/proc/self/environ",
        "/etc/passwd",
    ]
    .iter()
    .enumerate()
    {
        let a = call(
            s.port,
            &sid,
            10 + i as u64,
            "analyze",
            serde_json::json!({"path": path}),
        );
        let v = a.json();
        assert_eq!(v["result"]["isError"], true, "{path}: {}", a.body);
        assert!(
            !a.body.contains(OUTSIDE) && !a.body.contains("root:x:"),
            "{path}: {}",
            a.body
        );
        assert!(a.body.contains("--root"), "{path}: {}", a.body);
    }
    let lint = call(
        s.port,
        &sid,
        30,
        "lint",
        serde_json::json!({"paths": ["../outside.txt"]}),
    );
    assert_eq!(lint.json()["result"]["isError"], true, "{}", lint.body);
    assert!(!lint.body.contains(OUTSIDE));
}

#[test]
fn a_tool_not_exposed_is_neither_listed_nor_callable() {
    let d = dir("tools");
    let s = start(&d, &["--tools", "analyze,explain"]);
    let sid = session(s.port);
    let list = post(
        s.port,
        Some(TOKEN),
        Some(&sid),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    );
    let names: Vec<String> = list.json()["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(String::from))
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.contains(&"analyze".into()) && names.contains(&"explain".into()));
    let a = call(
        s.port,
        &sid,
        3,
        "capture",
        serde_json::json!({"target": "pod/x", "output": "/tmp/x"}),
    );
    assert_eq!(a.json()["error"]["code"], -32602, "{}", a.body);
}

#[test]
fn capture_is_off_over_http_by_default() {
    let d = dir("defaults");
    let s = start(&d, &[]);
    let sid = session(s.port);
    let list = post(
        s.port,
        Some(TOKEN),
        Some(&sid),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    );
    let body = list.body.clone();
    assert!(
        body.contains("\"analyze\"") && !body.contains("\"name\":\"capture\""),
        "{body}"
    );
    let h = call(
        s.port,
        &sid,
        3,
        "history",
        serde_json::json!({"export": 1, "output": "x.tar.gz"}),
    );
    assert_eq!(h.json()["result"]["isError"], true);
    assert!(h.body.contains("export is off"), "{}", h.body);
}

#[test]
fn a_hundred_concurrent_calls_get_answers_and_the_server_goes_on() {
    let d = dir("many");
    let s = start(&d, &["--max-concurrent-calls", "4"]);
    let sid = session(s.port);
    let port = s.port;
    let paste = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/vllm-oom/describe-pod.txt"),
    )
    .expect("example");
    let threads: Vec<_> = (0..100u64)
        .map(|i| {
            let (sid, paste) = (sid.clone(), paste.clone());
            std::thread::spawn(move || {
                call(
                    port,
                    &sid,
                    100 + i,
                    "analyze",
                    serde_json::json!({"text": paste}),
                )
                .json()
            })
        })
        .collect();
    let (mut done, mut busy) = (0, 0);
    for t in threads {
        let v = t.join().expect("thread");
        if v["result"]["structuredContent"]["pods"].is_array() {
            done += 1;
        } else {
            let m = v["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            assert!(m.contains("--max-concurrent-calls"), "{v}");
            busy += 1;
        }
    }
    assert_eq!(done + busy, 100);
    assert!(done >= 4, "{done} done, {busy} refused");
    let after = call(
        port,
        &sid,
        999,
        "explain",
        serde_json::json!({"cause": "oom-killed"}),
    );
    assert_eq!(after.status, 200);
    assert!(after.json()["result"].is_object(), "{}", after.body);
}

#[test]
fn no_auth_is_refused_off_loopback_and_without_the_flag() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_crashdoc"))
            .arg("mcp")
            .args(args)
            .env_remove("CRASHDOC_MCP_TOKEN")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .expect("run")
    };
    for args in [
        vec!["--http", "0.0.0.0:0"],
        vec!["--http", "0.0.0.0:0", "--insecure-no-auth"],
        vec!["--http", "127.0.0.1:0"],
    ] {
        let out = run(&args);
        assert!(!out.status.success(), "{args:?} started");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("error:") && err.contains("hint:"), "{err}");
    }
    // --insecure-no-auth on loopback serves.
    let (s, line) = serve(free_port(), &["--insecure-no-auth".into()]);
    let a = post(s.port, None, None, INIT);
    assert_eq!(a.status, 200, "{line}{}", a.head);
}

/// Run an openssl CLI command (.ci/run installs openssl); the test stops
/// on a failure with what openssl said.
fn openssl(cmd: &mut Command) {
    let out = cmd.output().expect("openssl (install it: .ci/run does)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A self-signed certificate for localhost and 127.0.0.1 (openssl CLI).
fn self_signed(d: &Path) -> (PathBuf, PathBuf) {
    let (cert, key) = (d.join("cert.pem"), d.join("key.pem"));
    openssl(
        Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/CN=localhost",
                "-addext",
                "subjectAltName=DNS:localhost,IP:127.0.0.1",
                // an end-entity certificate (webpki refuses a CA as a server's)
                "-addext",
                "basicConstraints=critical,CA:FALSE",
                "-keyout",
            ])
            .arg(&key)
            .arg("-out")
            .arg(&cert),
    );
    (cert, key)
}

/// One request over TLS to 127.0.0.1:`port`, trusting only `cert`.
fn post_tls(cert: &Path, port: u16, token: Option<&str>, body: &str) -> Answer {
    use rustls_pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls_pki_types::CertificateDer::pem_file_iter(cert).expect("cert") {
        roots.add(c.expect("cert")).expect("root");
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls_pki_types::ServerName::try_from("127.0.0.1").expect("name");
    let conn = rustls::ClientConnection::new(std::sync::Arc::new(config), name).expect("client");
    let tcp = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    while tls.conn.is_handshaking() {
        tls.conn.complete_io(&mut tls.sock).expect("TLS handshake");
    }
    exchange(&mut tls, port, token, None, body)
}

#[test]
fn https_with_a_token_initializes_and_plain_http_gets_nothing() {
    let d = dir("tls");
    let (cert, key) = self_signed(&d);
    let (cert_s, key_s) = (cert.to_str().expect("utf-8"), key.to_str().expect("utf-8"));
    let (s, line) = start_with_line(&d, &["--tls-cert", cert_s, "--tls-key", key_s]);
    let port = s.port;
    assert!(
        line.contains(&format!("https://127.0.0.1:{port}/mcp")),
        "{line}"
    );

    let a = post_tls(&cert, s.port, Some(TOKEN), INIT);
    assert_eq!(a.status, 200, "{}{}", a.head, a.body);
    assert_eq!(
        a.json()["result"]["serverInfo"]["name"],
        "crashdoc",
        "{}",
        a.body
    );
    let none = post_tls(&cert, s.port, None, INIT);
    assert_eq!(none.status, 401, "{}", none.head);
    let challenge = none.header("www-authenticate").unwrap_or_default();
    assert!(
        challenge.contains(&format!(
            "resource_metadata=\"https://127.0.0.1:{port}/.well-known/oauth-protected-resource"
        )),
        "{challenge}"
    );
    // plain HTTP on the TLS port: no HTTP answer
    let plain = post(s.port, Some(TOKEN), None, INIT);
    assert_eq!(plain.status, 0, "{}", plain.head);
    // and the server still serves TLS
    assert_eq!(post_tls(&cert, s.port, Some(TOKEN), INIT).status, 200);
}

#[test]
fn a_bad_tls_key_is_an_error_with_a_hint_that_shows_nothing_of_the_file() {
    let d = dir("tls-bad");
    let (cert, _) = self_signed(&d);
    let key = d.join("bad-key.pem");
    std::fs::write(
        &key,
        "-----BEGIN PRIVATE KEY-----\nTlsKeyCanary7781\n-----END PRIVATE KEY-----\n",
    )
    .expect("key");
    let token = d.join("token");
    std::fs::write(&token, format!("{TOKEN}\n")).expect("token file");
    let out = Command::new(env!("CARGO_BIN_EXE_crashdoc"))
        .args(["mcp", "--http", "127.0.0.1:0", "--auth-token-file"])
        .arg(&token)
        .arg("--tls-cert")
        .arg(&cert)
        .arg("--tls-key")
        .arg(&key)
        .env_remove("CRASHDOC_MCP_TOKEN")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("as the TLS key") && err.contains("hint: --tls-cert takes a PEM"),
        "{err}"
    );
    assert!(
        !err.contains("TlsKeyCanary7781") && !err.contains(TOKEN),
        "{err}"
    );
}

/// An EC P-256 key from the openssl CLI, for signing test tokens.
fn ec_key(d: &Path, name: &str) -> jsonwebtoken::EncodingKey {
    let path = d.join(name);
    openssl(
        Command::new("openssl")
            .args([
                "genpkey",
                "-algorithm",
                "EC",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-out",
            ])
            .arg(&path),
    );
    jsonwebtoken::EncodingKey::from_ec_pem(&std::fs::read(&path).expect("key")).expect("EC key")
}

fn jwt(key: &jsonwebtoken::EncodingKey, kid: &str, claims: serde_json::Value) -> String {
    let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    h.kid = Some(kid.into());
    jsonwebtoken::encode(&h, &claims, key).expect("sign")
}

#[test]
fn jwt_access_tokens_are_checked_for_issuer_audience_expiry_and_key() {
    const ISS: &str = "https://login.example.test/realms/ops";
    let d = dir("jwt");
    let key = ec_key(&d, "issuer.pem");
    let stranger = ec_key(&d, "stranger.pem");
    let mut jwk = jsonwebtoken::jwk::Jwk::from_encoding_key(&key, jsonwebtoken::Algorithm::ES256)
        .expect("jwk");
    jwk.common.key_id = Some("k1".into());
    let jwks = d.join("jwks.json");
    std::fs::write(&jwks, serde_json::json!({ "keys": [jwk] }).to_string()).expect("jwks");
    // JWTs alone: no --auth-token-file, on a port the test picked
    let port = free_port();
    let aud = format!("http://127.0.0.1:{port}/mcp");
    let args = [
        "--auth-issuer",
        ISS,
        "--auth-audience",
        &aud,
        "--auth-jwks-file",
    ];
    let mut args: Vec<OsString> = args.iter().map(OsString::from).collect();
    args.push(jwks.into());
    let (s, line) = serve(port, &args);
    assert!(line.contains("listening"), "{line}");

    let now = jiff::Timestamp::now().as_second();
    let claims =
        |exp: i64| serde_json::json!({"iss": ISS, "aud": aud, "sub": "oncall", "exp": exp});
    let ok = post(
        s.port,
        Some(&jwt(&key, "k1", claims(now + 600))),
        None,
        INIT,
    );
    assert_eq!(ok.status, 200, "{}{}", ok.head, ok.body);
    assert_eq!(ok.json()["result"]["serverInfo"]["name"], "crashdoc");

    let refused = |token: &str, why: &str| {
        let a = post(s.port, Some(token), None, INIT);
        assert_eq!(a.status, 401, "{why}: {}{}", a.head, a.body);
        let c = a.header("www-authenticate").unwrap_or_default();
        assert!(
            c.contains("error=\"invalid_token\"") && c.contains(why),
            "{c}"
        );
        assert!(!a.head.contains(token) && !a.body.contains(token));
    };
    refused(
        &jwt(&key, "k1", claims(now - 3600)),
        "the token has expired",
    );
    let mut other_aud = claims(now + 600);
    other_aud["aud"] = "https://elsewhere.example.test/mcp".into();
    refused(
        &jwt(&key, "k1", other_aud),
        "the token is for another audience",
    );
    let mut other_iss = claims(now + 600);
    other_iss["iss"] = "https://login.example.test/realms/dev".into();
    refused(
        &jwt(&key, "k1", other_iss),
        "the token is from another issuer",
    );
    refused(
        &jwt(&stranger, "k1", claims(now + 600)),
        "the token's signature does not verify",
    );
    refused(
        &jwt(&stranger, "k9", claims(now + 600)),
        "a key the issuer's key set does not have",
    );
    refused(
        "not-a-jwt-and-no-static-token",
        "the token is not this server's",
    );
    assert_eq!(post(s.port, None, None, INIT).status, 401);
}

#[test]
fn a_jwks_file_without_audience_or_with_a_shared_secret_does_not_start() {
    let d = dir("jwt-bad");
    let jwks = d.join("jwks.json");
    std::fs::write(
        &jwks,
        r#"{"keys":[{"kty":"oct","kid":"s","k":"SecretCanary41xq"}]}"#,
    )
    .expect("jwks");
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_crashdoc"))
            .args(["mcp", "--http", "127.0.0.1:0", "--auth-jwks-file"])
            .arg(&jwks)
            .args(extra)
            .env_remove("CRASHDOC_MCP_TOKEN")
            .output()
            .expect("run")
    };
    // clap: --auth-jwks-file needs the issuer and the audience it checks
    let no_aud = run(&["--auth-issuer", "https://login.example.test"]);
    assert_eq!(no_aud.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_aud.stderr).contains("--auth-audience"));
    let oct = run(&[
        "--auth-issuer",
        "https://login.example.test",
        "--auth-audience",
        "https://mcp.example.test/mcp",
    ]);
    let err = String::from_utf8_lossy(&oct.stderr);
    // errors exit 2, as every crashdoc error does
    assert_eq!(oct.status.code(), Some(2), "{err}");
    assert!(err.contains("symmetric") && err.contains("hint:"), "{err}");
    assert!(!err.contains("SecretCanary41xq"), "{err}");
}

/// initialize with this Host header, the status line's code.
fn initialize_as_host(port: u16, host: &str) -> u16 {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: {}\r\n\r\n{INIT}",
        INIT.len()
    )
    .expect("write");
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_service_name_is_answered_only_when_allowed() {
    let d = dir("hosts");
    let plain = start(&d, &[]);
    // DNS-rebinding protection: a name the server was not told of is refused
    assert_eq!(
        initialize_as_host(plain.port, "crashdoc-mcp.crashdoc.svc:8799"),
        403
    );
    assert_eq!(
        initialize_as_host(plain.port, &format!("127.0.0.1:{}", plain.port)),
        200
    );
    drop(plain);
    let d = dir("hosts-allowed");
    let s = start(
        &d,
        &[
            "--allow-host",
            "crashdoc-mcp.crashdoc.svc,crashdoc-mcp.crashdoc.svc.cluster.local",
            "--auth-audience",
            "https://mcp.example.test/mcp",
        ],
    );
    assert_eq!(
        initialize_as_host(s.port, "crashdoc-mcp.crashdoc.svc:8799"),
        200
    );
    assert_eq!(
        initialize_as_host(s.port, "crashdoc-mcp.crashdoc.svc.cluster.local"),
        200
    );
    assert_eq!(initialize_as_host(s.port, "mcp.example.test"), 200);
    assert_eq!(initialize_as_host(s.port, "attacker.example.test"), 403);
}

#[test]
fn a_secret_value_under_root_never_reaches_an_http_answer() {
    const VALUE: &str = "HttpSecretCanary-5e1d";
    const STORED: &str = "SHR0cFNlY3JldENhbmFyeS01ZTFk"; // base64 of VALUE, as a Secret stores it
    let d = dir("secret");
    let case = d.join("root").join("case");
    std::fs::create_dir_all(&case).expect("root");
    std::fs::write(
        case.join("secret.yaml"),
        format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: api\n  namespace: shop\ndata:\n  token: {STORED}=\nstringData:\n  key: {VALUE}\n"),
    )
    .expect("secret");
    std::fs::write(
        case.join("describe-pod.txt"),
        format!("Name:         api-7c9-x2\nNamespace:    shop\nContainers:\n  api:\n    Image:          api:1\n    State:          Waiting\n      Reason:       CrashLoopBackOff\n    Last State:     Terminated\n      Reason:       Error\n      Exit Code:    1\n    Restart Count:  4\n    Environment:\n      API_KEY:  {VALUE}\n"),
    )
    .expect("describe");
    std::fs::write(
        case.join("logs-previous.txt"),
        format!(
            "loading key={VALUE}\nError: 401 Unauthorized with Authorization: Bearer {VALUE}\n"
        ),
    )
    .expect("logs");
    let s = start(&d, &["--root", &d.join("root").to_string_lossy()]);
    let sid = session(s.port);
    let mut seen = String::new();
    for (i, format) in ["json", "text", "markdown", "summary"].iter().enumerate() {
        let a = call(
            s.port,
            &sid,
            40 + i as u64,
            "analyze",
            serde_json::json!({"path": "case", "format": format}),
        );
        assert_eq!(a.status, 200, "{}", a.head);
        assert!(
            !a.body.contains(VALUE) && !a.body.contains(STORED),
            "{format}: {}",
            a.body
        );
        seen.push_str(&a.body);
    }
    // near miss: the lines that held it are quoted, redacted
    assert!(seen.contains("Bearer [REDACTED]"), "{seen}");
}

#[test]
fn deleting_a_session_is_no_content_and_ends_it() {
    let d = dir("delete");
    let s = start(&d, &[]);
    let sid = session(s.port);
    let del = |token: &str| {
        let mut c = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
        write!(
            c,
            "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nAuthorization: Bearer {token}\r\nMcp-Session-Id: {sid}\r\nMcp-Protocol-Version: 2025-06-18\r\n\r\n",
            s.port
        )
        .expect("write");
        let mut text = String::new();
        let _ = c.read_to_string(&mut text);
        text
    };
    // the doors come first: a DELETE without the token ends nothing
    assert!(del("wrong-token").starts_with("HTTP/1.1 401"));
    let ok = call(
        s.port,
        &sid,
        2,
        "explain",
        serde_json::json!({"cause": "oom-killed"}),
    );
    assert_eq!(ok.status, 200, "{}", ok.head);
    let text = del(TOKEN);
    assert!(text.starts_with("HTTP/1.1 204"), "{text}");
    let after = call(
        s.port,
        &sid,
        3,
        "explain",
        serde_json::json!({"cause": "oom-killed"}),
    );
    assert_eq!(after.status, 404, "{}{}", after.head, after.body);
}
