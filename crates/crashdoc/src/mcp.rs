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
}

pub const MCP_HELP: &str = "Serve crashdoc's commands as MCP tools, for assistants.

Tools: diagnose, scan, analyze (a path, or pasted text), capture, explain, history, lint. Each
returns the crashdoc/v1 JSON as structured content plus a short text. The same
read-only client as `crashdoc diagnose` (only get, list and watch) and the same
redaction apply: no secret value ever reaches a tool result.

By default it speaks MCP on standard input and output, as an assistant starts it;
with --http ADDR it serves streamable HTTP at http://ADDR/mcp (Host headers are checked
against loopback names and ADDR). docs/mcp.md has the configuration for Claude Desktop,
Claude Code, VS Code and Cursor.

Examples:
  claude mcp add crashdoc -- crashdoc mcp
  crashdoc mcp --context prod -n llm
  crashdoc mcp --http 127.0.0.1:8765";

pub fn mcp(a: McpArgs) -> anyhow::Result<()> {
    let defaults = crashdoc_mcp::Defaults {
        kubeconfig: a.kubeconfig,
        context: a.context,
        namespace: a.namespace,
        // Resolved now as `crashdoc history` would; without HOME the tool says so.
        db: a.db.location().ok(),
        db_password_file: a.db.db_password_file.clone(),
    };
    crate::live::runtime()?.block_on(async move {
        match a.http {
            Some(addr) => crashdoc_mcp::serve_http(defaults, addr, shutdown()).await,
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
