//! crashdoc as an MCP server (`crashdoc mcp`): the commands an on-call
//! engineer runs (diagnose, scan, analyze, capture, explain, history, lint),
//! as tools an assistant can call. Built on `rmcp`, the
//! official Rust SDK of the Model Context Protocol.
//!
//! Every tool calls the same library functions as the CLI (crashdoc-core
//! for the diagnosis, crashdoc-kube's read-only collector for the cluster,
//! crashdoc-history for `history`), so the same read-only client and the
//! same redaction apply. A result carries the `crashdoc/v1` JSON as
//! structured content, a short text summary, and the JSON again as text for
//! clients that read text only (the MCP specification asks for that when a
//! tool returns structured content).
//!
//! Errors follow the MCP conventions: a call to a tool that does not exist
//! is a protocol error (JSON-RPC `-32602`); everything that fails while a
//! tool runs (an unreadable path, a bad target, a cluster that cannot be
//! read) is a tool result with `isError: true` whose text is the CLI's
//! `error:` / `Caused by:` / `hint:` lines and whose structured content holds
//! the same as `{"error", "causes", "hint"}`, so the model can correct
//! itself. Arguments outside a tool's schema are `isError` results too: rmcp
//! reports them so (SEP-1303 moved input validation errors into tool results).

pub mod confine;
mod fleet;
mod http;
pub mod jwt;

pub use http::{HttpOptions, PRM_PATH, Token};
mod lint;
mod tls;
pub use tls::TlsFiles;
mod tools;

pub use lint::{FailOn, LintParams};

pub use tools::{
    AnalyzeParams, CaptureParams, ClusterParams, CrashdocMcp, DiagnoseParams, ExplainParams,
    HistoryParams, ScanParams, TextFormat,
};

use rmcp::ServiceExt as _;
use std::net::SocketAddr;
use std::path::PathBuf;

/// What `crashdoc mcp` was started with; a tool call's own arguments win.
#[derive(Debug, Clone, Default)]
pub struct Defaults {
    /// `--kubeconfig` (else KUBECONFIG, ~/.kube/config, in-cluster).
    pub kubeconfig: Option<PathBuf>,
    /// `--context`.
    pub context: Option<String>,
    /// `-n`: the namespace when a call names none (else the context's).
    pub namespace: Option<String>,
    /// The history database `history` and `fleet` read (the CLI resolves
    /// --db, CRASHDOC_DB and the XDG default before starting the server):
    /// a file, or a PostgreSQL URL. A call may name another file, never
    /// another database: the server's credentials go only to its own.
    pub db: Option<crashdoc_history::Location>,
    /// The database password's file (`--db-password-file`), when the URL
    /// has none.
    pub db_password_file: Option<PathBuf>,
    /// The bounds of what a client may do (`--tools`, `--root`,
    /// `--tool-timeout`); [`Bounds::http`] for the HTTP server.
    pub bounds: Bounds,
}

/// What the tools may reach: the set the server exposes, where they may
/// read files, whether a capture or history export may write bundles, and
/// how long one call may take.
#[derive(Debug, Clone, Default)]
pub struct Bounds {
    /// `--tools`: only these tools are listed and callable (`None`: all).
    pub tools: Option<std::collections::BTreeSet<String>>,
    /// `history` may write a capture's bundle (`export`): over HTTP only
    /// when `--tools` names `history-export`.
    pub no_export: bool,
    /// `--root`: `analyze` and `lint` read paths only inside this folder
    /// (canonical: no `..`, no symlink out). `confine` without a root
    /// refuses every path (text still works).
    pub root: Option<PathBuf>,
    /// Paths are confined (over HTTP).
    pub confine: bool,
    /// `--tool-timeout`: a call that takes longer gets an error result.
    pub timeout: Option<std::time::Duration>,
}

/// The tools `crashdoc mcp` has, for `--tools` to check against.
pub const TOOLS: &[&str] = &[
    "analyze", "diagnose", "capture", "scan", "explain", "history", "fleet", "lint",
];

/// `--tools` names this to let `history` export bundles over HTTP.
pub const HISTORY_EXPORT: &str = "history-export";

impl Bounds {
    /// The bounds of the HTTP server: `tools` as `--tools` names them
    /// (default: every tool but `capture`, and no history export), paths
    /// confined to `root`.
    pub fn http(
        tools: Option<Vec<String>>,
        root: Option<PathBuf>,
        timeout: Option<std::time::Duration>,
    ) -> Result<Bounds, UnknownTool> {
        let named = check_tools(tools)?;
        let no_export = !named.as_ref().is_some_and(|n| n.contains(HISTORY_EXPORT));
        let tools = named.unwrap_or_else(|| {
            TOOLS
                .iter()
                .filter(|t| **t != "capture")
                .map(|t| t.to_string())
                .collect()
        });
        Ok(Bounds {
            tools: Some(tools),
            no_export,
            root,
            confine: true,
            timeout,
        })
    }

    /// The bounds over stdio: `--tools` if given, `--root` if given.
    pub fn stdio(
        tools: Option<Vec<String>>,
        root: Option<PathBuf>,
        timeout: Option<std::time::Duration>,
    ) -> Result<Bounds, UnknownTool> {
        let tools = check_tools(tools)?;
        Ok(Bounds {
            // Over stdio the user who started the server is the client.
            no_export: false,
            confine: root.is_some(),
            tools,
            root,
            timeout,
        })
    }
}

fn check_tools(
    tools: Option<Vec<String>>,
) -> Result<Option<std::collections::BTreeSet<String>>, UnknownTool> {
    let Some(tools) = tools else { return Ok(None) };
    let mut set = std::collections::BTreeSet::new();
    for t in tools {
        let t = t.trim().to_string();
        if t.is_empty() {
            continue;
        }
        if !TOOLS.contains(&t.as_str()) && t != HISTORY_EXPORT {
            return Err(UnknownTool(t));
        }
        if t == HISTORY_EXPORT {
            set.insert("history".to_string());
        }
        set.insert(t);
    }
    Ok(Some(set))
}

/// `--tools` named a tool the server does not have.
#[derive(Debug, thiserror::Error)]
#[error("--tools names `{0}`, which is no crashdoc tool")]
pub struct UnknownTool(pub String);

impl crashdoc_core::Hint for UnknownTool {
    fn hint(&self) -> Option<std::borrow::Cow<'_, str>> {
        Some(
            format!(
                "the tools are {}, and {HISTORY_EXPORT} (lets `history` write bundles)",
                TOOLS.join(", ")
            )
            .into(),
        )
    }
}

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("the MCP session on standard input/output failed")]
    Stdio(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("cannot listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("refusing to serve MCP on {addr} without authentication")]
    NoAuth { addr: SocketAddr },
    #[error("--insecure-no-auth serves only a loopback address, not {addr}")]
    InsecureNotLoopback { addr: SocketAddr },
    #[error("cannot use {} as the TLS {what}: {reason}", file.display())]
    Tls {
        file: PathBuf,
        what: &'static str,
        reason: String,
    },
    #[error("the MCP HTTP server on {addr} failed")]
    Http {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

impl crashdoc_core::Hint for ServeError {
    /// The `hint:` line for the CLI.
    fn hint(&self) -> Option<std::borrow::Cow<'_, str>> {
        match self {
            ServeError::Stdio(_) => Some(
                "`crashdoc mcp` is started by an MCP client (see docs/mcp.md), which speaks JSON-RPC on its standard input"
                    .into(),
            ),
            ServeError::Bind { .. } => Some(
                "pick a free address, e.g. `--http 127.0.0.1:8765`; another process may hold the port"
                    .into(),
            ),
            ServeError::NoAuth { .. } => Some(
                "give the server a token with --auth-token-file FILE (or CRASHDOC_MCP_TOKEN), or take JWTs from an issuer with --auth-issuer URL --auth-jwks-file FILE --auth-audience URL; on a loopback address, --insecure-no-auth serves without one"
                    .into(),
            ),
            ServeError::InsecureNotLoopback { .. } => Some(
                "bind 127.0.0.1 (or ::1), or give the server a token with --auth-token-file FILE"
                    .into(),
            ),
            ServeError::Tls { .. } => Some(
                "--tls-cert takes a PEM certificate chain (the server's certificate first), --tls-key its PEM private key (PKCS#8, PKCS#1 or SEC1); e.g. `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout key.pem -out cert.pem -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1`"
                    .into(),
            ),
            ServeError::Http { .. } => None,
        }
    }
}

/// Serve one MCP session on standard input and output until the client
/// closes it. Nothing but JSON-RPC is written to standard output.
pub async fn serve_stdio(defaults: Defaults) -> Result<(), ServeError> {
    let running = CrashdocMcp::new(defaults)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| ServeError::Stdio(Box::new(e)))?;
    running
        .waiting()
        .await
        .map_err(|e| ServeError::Stdio(Box::new(e)))?;
    Ok(())
}

/// No server without a token unless `--insecure-no-auth` on loopback.
pub fn check_doors(addr: SocketAddr, o: &HttpOptions) -> Result<(), ServeError> {
    if o.jwt.is_some() {
        return Ok(());
    }
    match (&o.token, o.insecure_no_auth) {
        (Some(_), _) => Ok(()),
        (None, true) if addr.ip().is_loopback() => Ok(()),
        (None, true) => Err(ServeError::InsecureNotLoopback { addr }),
        (None, false) => Err(ServeError::NoAuth { addr }),
    }
}

/// Serve MCP over streamable HTTP at `http://ADDR/mcp` until `shutdown`
/// completes. Host headers are checked against loopback names, ADDR's own
/// IP, `--allow-host` and the audience's host (DNS-rebinding protection,
/// rmcp's default extended).
pub async fn serve_http(
    defaults: Defaults,
    addr: SocketAddr,
    options: HttpOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    check_doors(addr, &options)?;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    // the certificate and key are read before the port is taken
    let tls = options.tls.as_ref().map(tls::server_config).transpose()?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    let bound = listener.local_addr().unwrap_or(addr);
    eprintln!("crashdoc mcp: listening on {scheme}://{bound}/mcp");
    let ct = tokio_util::sync::CancellationToken::new();
    let hosts = http::allowed_hosts(&options, bound.ip());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_cancellation_token(ct.child_token());
    let service = StreamableHttpService::new(
        move || Ok(CrashdocMcp::new(defaults.clone())),
        LocalSessionManager::default().into(),
        config,
    );
    let doors = http::Doors::new(options, scheme);
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(
            doors.clone(),
            http::doors,
        ))
        .route(PRM_PATH, axum::routing::get(http::metadata))
        .route(
            &format!("{PRM_PATH}/mcp"),
            axum::routing::get(http::metadata),
        )
        .with_state(doors);
    let stop = async move {
        shutdown.await;
        ct.cancel();
    };
    let app = router.into_make_service_with_connect_info::<SocketAddr>();
    match tls {
        Some(config) => {
            use axum::serve::ListenerExt as _;
            // tap_io: axum gives the peer address of any listener it wraps
            let listener = tls::TlsListener::new(listener, config).tap_io(|_| {});
            axum::serve(listener, app)
                .with_graceful_shutdown(stop)
                .await
        }
        None => {
            axum::serve(listener, app)
                .with_graceful_shutdown(stop)
                .await
        }
    }
    .map_err(|source| ServeError::Http { addr, source })
}
