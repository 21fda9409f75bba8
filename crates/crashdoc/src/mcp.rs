//! `crashdoc mcp`: the command-line side of the MCP server. The work is in
//! crashdoc-mcp.

use crate::watch::DbArg;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct McpArgs {
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8765).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Namespace when a tool call names none (default: the context's namespace).
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// The kubeconfig context when a tool call names none.
    #[arg(long)]
    pub context: Option<String>,
    /// Path to the kubeconfig file (default: KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    #[command(flatten)]
    pub db: DbArg,
    /// Over HTTP, the bearer token clients must send (Authorization: Bearer TOKEN), from this file (a mounted Secret's key).
    #[arg(long, value_name = "FILE")]
    pub auth_token_file: Option<PathBuf>,
    /// Over HTTP, serve with no token: on a loopback address only.
    #[arg(long)]
    pub insecure_no_auth: bool,
    /// The OAuth authorization server that issues this server's tokens, named in its Protected Resource Metadata (RFC 9728).
    #[arg(long, value_name = "URL")]
    pub auth_issuer: Option<String>,
    /// This server's URL as its tokens name it (the metadata's `resource`, the JWTs' `aud`; default: the URL a request came to).
    #[arg(long, value_name = "URL")]
    pub auth_audience: Option<String>,
    /// Over HTTP, also accept JWT access tokens from --auth-issuer, verified with the keys of this JSON Web Key Set file (the issuer's jwks_uri document): signature, iss, aud = --auth-audience, exp.
    #[arg(
        long,
        value_name = "FILE",
        requires = "auth_issuer",
        requires = "auth_audience"
    )]
    pub auth_jwks_file: Option<PathBuf>,
    /// Over HTTP, serve HTTPS with this PEM certificate chain (the server's certificate first).
    #[arg(long, value_name = "FILE", requires = "tls_key", requires = "http")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert (PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Expose only these tools (comma-separated; `history-export` lets `history` write bundles). Over HTTP the default is every tool but `capture`, without history export.
    #[arg(long, value_name = "A,B,...", value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// `analyze` and `lint` read paths only inside DIR (over HTTP: no paths at all without it).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Over HTTP, also answer requests whose Host header names HOST (comma-separated or repeated; e.g. a Service's DNS names). Loopback, the bound address and --auth-audience's host always are.
    #[arg(long, value_name = "HOST", value_delimiter = ',')]
    pub allow_host: Vec<String>,
    /// Over HTTP, a request body larger than this gets 413.
    #[arg(long, value_name = "BYTES", default_value_t = 4 << 20)]
    pub max_body_bytes: usize,
    /// Over HTTP, at most this many tool calls at once per client (IP address); more get a JSON-RPC error.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub max_concurrent_calls: usize,
    /// A tool call that runs longer gets an error result (e.g. 30s, 2m; default: over HTTP 120s, over stdio none).
    #[arg(long, value_name = "DURATION")]
    pub tool_timeout: Option<String>,
}

/// The token from --auth-token-file, else CRASHDOC_MCP_TOKEN. The error
/// names the file, never its content.
fn token(a: &McpArgs) -> anyhow::Result<Option<crashdoc_mcp::Token>> {
    use anyhow::Context as _;
    if let Some(f) = &a.auth_token_file {
        let s = std::fs::read_to_string(f)
            .with_context(|| format!("cannot read the token file {}", f.display()))?;
        return crashdoc_mcp::Token::new(&s)
            .map(Some)
            .with_context(|| format!("the token file {} is empty", f.display()));
    }
    Ok(std::env::var("CRASHDOC_MCP_TOKEN")
        .ok()
        .and_then(|t| crashdoc_mcp::Token::new(&t)))
}

fn timeout(s: Option<&str>, http: bool) -> anyhow::Result<Option<std::time::Duration>> {
    match s {
        None => Ok(http.then_some(std::time::Duration::from_secs(120))),
        Some(s) => {
            let d = crashdoc_core::time::parse_duration(s)
                .map_err(|e| anyhow::anyhow!("--tool-timeout {s}: {e}"))?;
            Ok(Some(d))
        }
    }
}

pub const MCP_HELP: &str = "Serve crashdoc's commands as MCP tools, for assistants.

Tools: diagnose, scan, analyze (a path, or pasted text), capture, explain, history, lint. Each
returns the crashdoc/v1 JSON as structured content plus a short text. The same
read-only client as `crashdoc diagnose` (only get, list and watch) and the same
redaction apply: no secret value ever reaches a tool result.

By default it speaks MCP on standard input and output, as an assistant starts it;
with --http ADDR it serves streamable HTTP at http://ADDR/mcp (Host headers are checked
against loopback names, ADDR, --allow-host and --auth-audience's host). Over HTTP every request needs `Authorization: Bearer TOKEN`
(--auth-token-file or CRASHDOC_MCP_TOKEN, or JWT access tokens from --auth-issuer checked
against --auth-jwks-file; --insecure-no-auth on loopback only), HTTPS with
--tls-cert/--tls-key, `capture` and
history export are off unless --tools names them, and `analyze`/`lint` read only under --root. docs/mcp.md has the configuration for Claude Desktop,
Claude Code, VS Code and Cursor.

Examples:
  claude mcp add crashdoc -- crashdoc mcp
  crashdoc mcp --context prod -n llm
  crashdoc mcp --http 0.0.0.0:8765 --auth-token-file /run/secrets/mcp-token --root /srv/cases
  crashdoc mcp --http 0.0.0.0:8443 --auth-token-file /run/secrets/mcp-token --tls-cert cert.pem --tls-key key.pem
  crashdoc mcp --http 0.0.0.0:8443 --tls-cert cert.pem --tls-key key.pem \\
      --auth-issuer https://login.example.com --auth-jwks-file jwks.json --auth-audience https://crashdoc.example.com/mcp
  crashdoc mcp --http 127.0.0.1:8765 --insecure-no-auth";

pub fn mcp(a: McpArgs) -> anyhow::Result<()> {
    let http = a.http.is_some();
    let tool_timeout = timeout(a.tool_timeout.as_deref(), http)?;
    let bounds = if http {
        crashdoc_mcp::Bounds::http(a.tools.clone(), a.root.clone(), tool_timeout)?
    } else {
        crashdoc_mcp::Bounds::stdio(a.tools.clone(), a.root.clone(), tool_timeout)?
    };
    let jwt = match (&a.auth_jwks_file, &a.auth_issuer, &a.auth_audience) {
        (Some(f), Some(iss), Some(aud)) if http => Some(std::sync::Arc::new(
            crashdoc_mcp::jwt::JwtCheck::load(f, iss, aud)?,
        )),
        _ => None,
    };
    let options = crashdoc_mcp::HttpOptions {
        token: if http { token(&a)? } else { None },
        jwt,
        insecure_no_auth: a.insecure_no_auth,
        issuer: a.auth_issuer.clone(),
        audience: a.auth_audience.clone(),
        allowed_hosts: a.allow_host.clone(),
        max_body_bytes: a.max_body_bytes,
        max_concurrent_calls: a.max_concurrent_calls,
        tls: match (&a.tls_cert, &a.tls_key) {
            (Some(cert), Some(key)) => Some(crashdoc_mcp::TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
            }),
            _ => None,
        },
    };
    let defaults = crashdoc_mcp::Defaults {
        bounds,
        kubeconfig: a.kubeconfig,
        context: a.context,
        namespace: a.namespace,
        // Resolved now as `crashdoc history` would; without HOME the tool says so.
        db: a.db.location().ok(),
        db_password_file: a.db.db_password_file.clone(),
    };
    crate::live::runtime()?.block_on(async move {
        match a.http {
            Some(addr) => crashdoc_mcp::serve_http(defaults, addr, options, shutdown()).await,
            None => crashdoc_mcp::serve_stdio(defaults).await,
        }
    })?;
    Ok(())
}

async fn shutdown() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {},
                _ = term.recv() => {},
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
