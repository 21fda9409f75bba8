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

mod fleet;
mod lint;
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

/// Serve MCP over streamable HTTP at `http://ADDR/mcp` until `shutdown`
/// completes. Host headers are checked against loopback names and ADDR's
/// own IP (DNS-rebinding protection, rmcp's default extended by the bound
/// address).
pub async fn serve_http(
    defaults: Defaults,
    addr: SocketAddr,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    let bound = listener.local_addr().unwrap_or(addr);
    eprintln!("crashdoc mcp: listening on http://{bound}/mcp");
    let ct = tokio_util::sync::CancellationToken::new();
    let mut hosts = vec![
        "localhost".to_string(),
        "127.0.0.1".into(),
        "::1".into(),
        bound.ip().to_string(),
    ];
    hosts.dedup();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_cancellation_token(ct.child_token());
    let service = StreamableHttpService::new(
        move || Ok(CrashdocMcp::new(defaults.clone())),
        LocalSessionManager::default().into(),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown.await;
            ct.cancel();
        })
        .await
        .map_err(|source| ServeError::Http { addr, source })
}
