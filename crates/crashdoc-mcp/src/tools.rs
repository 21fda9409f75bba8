//! The tools: their input schemas (following the CLI's flags) and handlers.

use crate::Defaults;
use crashdoc_core::diagnose::{self, Report};
use crashdoc_core::ingest::{self, bundle};
use crashdoc_core::{Cause, render};
use crashdoc_kube::{CollectOptions, KubeError, Target};
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::{ErrorData as McpError, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;

const INSTRUCTIONS: &str = "crashdoc diagnoses Kubernetes pods in CrashLoopBackOff (and other failing pods): \
it reads the evidence (status, previous logs, events, spec, node, referenced ConfigMaps and Secrets by key name only) \
and names the cause, ranked, with the evidence lines, the fix and the next kubectl commands. It never writes to the \
cluster and never returns a secret value. Start with `scan` for a namespace, `diagnose` for a pod or workload \
(deploy/NAME, sts/NAME, ...), `analyze` for saved kubectl output or a paste, `explain` for what a cause id means, \
`history` for the restarts `crashdoc watch` recorded, `lint` for the crash loops a manifest will cause before it ships.";

/// kubectl's connection flags and the collector's bounds, as on the CLI.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterParams {
    /// Namespace (default: the server's -n, else the kubeconfig context's namespace).
    pub namespace: Option<String>,
    /// The kubeconfig context to use (default: the server's --context, else the current context).
    pub context: Option<String>,
    /// Path to the kubeconfig file (default: the server's --kubeconfig, else KUBECONFIG, ~/.kube/config or in-cluster).
    pub kubeconfig: Option<String>,
    /// Lines kept from the end of each container log (default 5000).
    pub log_lines: Option<i64>,
    /// Bytes kept of each container log (default 8 MiB).
    pub log_bytes: Option<i64>,
    /// Do not read Secrets at all (no key-name checks). Secret values are never returned either way.
    pub no_secret_keys: Option<bool>,
}

/// What the text block of a result holds besides the JSON.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TextFormat {
    /// One line per pod: its first cause, confidence and summary (the default).
    #[default]
    Summary,
    /// The CLI's terminal report, without colour.
    Text,
    /// The CLI's Markdown post-mortem note.
    Markdown,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalyzeParams {
    /// A folder of kubectl outputs, a `kubectl cluster-info dump` tree, a crashdoc bundle (folder or .tar.gz)
    /// or a single file, on the machine the server runs on. Prefer an absolute path. Give `path` or `text`.
    pub path: Option<String>,
    /// Pasted kubectl output (describe, get -o yaml, logs --previous, events; several concatenated, with or
    /// without the `$ kubectl ...` lines). Give `path` or `text`.
    pub text: Option<String>,
    /// What the text block holds besides the JSON (default: summary).
    pub format: Option<TextFormat>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiagnoseParams {
    /// A pod (NAME, pod/NAME) or a workload whose failing pods to diagnose: deploy/NAME, sts/NAME, ds/NAME, job/NAME, rs/NAME.
    pub target: String,
    #[serde(flatten)]
    pub cluster: ClusterParams,
    /// Also keep the evidence as a bundle on the server's machine (a folder, or FILE.tar.gz).
    pub save: Option<String>,
    /// What the text block holds besides the JSON (default: summary).
    pub format: Option<TextFormat>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CaptureParams {
    /// A pod (NAME, pod/NAME) or a workload: deploy/NAME, sts/NAME, ds/NAME, job/NAME, rs/NAME.
    pub target: String,
    #[serde(flatten)]
    pub cluster: ClusterParams,
    /// Where to write the bundle on the server's machine: a folder, or FILE.tar.gz.
    pub output: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScanParams {
    #[serde(flatten)]
    pub cluster: ClusterParams,
    /// Every namespace (-A).
    pub all_namespaces: Option<bool>,
    /// Pods collected at once (default 16).
    pub concurrency: Option<usize>,
    /// What the text block holds besides the JSON (default: summary: the groups by cause).
    pub format: Option<TextFormat>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExplainParams {
    /// A cause id, e.g. oom-killed, probe-kill, config-ref-missing (the `cause` of a diagnosis), or a lint check id (e.g. probe/liveness-without-startup).
    pub cause: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryParams {
    /// A pod (NAME, pod/NAME) or a workload (deploy/NAME, sts/NAME, ds/NAME, job/NAME); without one, every capture.
    pub target: Option<String>,
    /// Only this namespace (default: every namespace in the history).
    pub namespace: Option<String>,
    /// Only this container.
    pub container: Option<String>,
    /// Only this cluster (`crashdoc watch --cluster`; default: every cluster in the history).
    pub cluster: Option<String>,
    /// A history file (default: the server's --db, CRASHDOC_DB, or ~/.local/state/crashdoc/history.redb). Only a file: a database URL is the server's --db alone.
    pub db: Option<String>,
    /// Only captures from the last DURATION: 90s, 30m, 2h, 7d.
    pub since: Option<String>,
    /// At most this many captures, newest first (default 50).
    pub limit: Option<usize>,
    /// Write capture ID as a bundle to `output` (then `analyze` reads it).
    pub export: Option<u64>,
    /// Where `export` writes on the server's machine: FILE.tar.gz, or a folder.
    pub output: Option<String>,
}

/// What the `fleet` tool answers.
#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FleetQuery {
    /// Captures counted per group (`group_by`), each with its causes.
    Group,
    /// The (cluster, workload, cause) triples first seen at or after `since` (or the first capture of `revision`).
    NewCauses,
    /// One workload's (`target`) causes in each cluster, side by side.
    CompareClusters,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FleetParams {
    /// What to answer.
    pub query: FleetQuery,
    /// For `group`: cluster, namespace, workload, cause or node (default cluster).
    pub group_by: Option<String>,
    /// A pod or workload (deploy/NAME, sts/NAME, ...); required by `compare_clusters`.
    pub target: Option<String>,
    /// Only this namespace.
    pub namespace: Option<String>,
    /// Only this cluster.
    pub cluster: Option<String>,
    /// Only captures since: a DURATION ago (2h, 7d) or an RFC 3339 time; for `new_causes`, where "new" starts.
    pub since: Option<String>,
    /// For `new_causes`: new since the first capture of this rollout revision (pod-template-hash or controller-revision-hash).
    pub revision: Option<String>,
    /// A history file (default: the server's --db). Only a file: a database URL is the server's --db alone.
    pub db: Option<String>,
}

/// The MCP server: one per session.
#[derive(Clone)]
pub struct CrashdocMcp {
    pub(crate) defaults: Arc<Defaults>,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl CrashdocMcp {
    pub fn new(defaults: Defaults) -> Self {
        let mut tool_router = Self::tool_router() + Self::lint_router();
        if let Some(only) = &defaults.bounds.tools {
            // `--tools`: the others are neither listed nor callable.
            let names: Vec<String> = tool_router
                .list_all()
                .into_iter()
                .map(|t| t.name.to_string())
                .collect();
            for n in names.iter().filter(|n| !only.contains(n.as_str())) {
                tool_router.remove_route(n);
            }
        }
        CrashdocMcp {
            defaults: Arc::new(defaults),
            tool_router,
        }
    }

    #[tool(
        description = "Diagnose saved or pasted kubectl output: a folder (describe-pod.txt, pod.yaml, logs-previous.txt, \
events.txt, ...), a cluster-info dump, a crashdoc bundle, a file, or pasted text. Returns the crashdoc/v1 report: \
per pod the ranked causes with evidence, fix and next commands, and what evidence is missing.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn analyze(
        &self,
        Parameters(p): Parameters<AnalyzeParams>,
    ) -> Result<CallToolResult, McpError> {
        let evidence = match (p.path, p.text) {
            (Some(path), None) => {
                let bounds = &self.defaults.bounds;
                let path = if bounds.confine {
                    match crate::confine::confine(bounds.root.as_deref(), &path) {
                        Ok(p) => p,
                        Err(e) => return Ok(failure(e.into())),
                    }
                } else {
                    PathBuf::from(path)
                };
                blocking(move || {
                    ingest::read_path(&path).map_err(|e| {
                        anyhow::Error::new(e).context(format!("cannot analyse {}", path.display()))
                    })
                })
                .await
            }
            (None, Some(text)) => {
                blocking(move || {
                    ingest::read_paste(text.as_bytes(), "paste").map_err(|e| {
                        anyhow::Error::new(e).context("cannot analyse the pasted text")
                    })
                })
                .await
            }
            _ => {
                return Ok(failure(anyhow::Error::new(ArgError {
                    message: "analyze takes exactly one of `path` and `text`".into(),
                    hint: "give `path` for a folder, file or bundle on the server's machine, or `text` for pasted kubectl output".into(),
                })));
            }
        };
        Ok(match evidence {
            Ok(ev) => report_result(&diagnose::diagnose_all(&ev), p.format, None),
            Err(e) => failure(e),
        })
    }

    #[tool(
        description = "Diagnose a pod, or a workload's failing pods (newest ReplicaSet first), live against the cluster: \
reads the pod, its events, current and previous logs of every container, owner chain, node, PVCs, referenced ConfigMaps \
and Secrets (key names only), ServiceAccount. Read-only: only get, list and watch. Returns the crashdoc/v1 report.",
        annotations(read_only_hint = true, open_world_hint = true)
    )]
    async fn diagnose(
        &self,
        Parameters(p): Parameters<DiagnoseParams>,
    ) -> Result<CallToolResult, McpError> {
        let run = async {
            let c = self.collect(&p.cluster, &p.target).await?;
            let mut extra = None;
            if let Some(save) = &p.save {
                let path = PathBuf::from(save);
                let context = p.cluster.context.clone().or(self.defaults.context.clone());
                let pods = c.pods.clone();
                let to = path.clone();
                blocking(move || write_bundle(&to, &pods, context.as_deref())).await?;
                extra = Some(json!({ "bundle": path.display().to_string() }));
            }
            let report = diagnose::diagnose_all(&bundle::read_memory(&c.pods));
            Ok::<_, anyhow::Error>((report, extra))
        };
        Ok(match run.await {
            Ok((report, extra)) => report_result(&report, p.format, extra),
            Err(e) => failure(e),
        })
    }

    #[tool(
        description = "Capture a pod's or workload's evidence as a crashdoc bundle (a folder or .tar.gz on the server's \
machine) before the next crash overwrites the previous logs; `analyze` reads it back. Secret values are never captured. \
Returns the diagnosis of what was captured and the bundle's path.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = true
        )
    )]
    async fn capture(
        &self,
        Parameters(p): Parameters<CaptureParams>,
    ) -> Result<CallToolResult, McpError> {
        let run = async {
            let c = self.collect(&p.cluster, &p.target).await?;
            let path = if self.defaults.bounds.confine {
                confine_output(self.defaults.bounds.root.as_deref(), &p.output)?
            } else {
                PathBuf::from(&p.output)
            };
            let context = p.cluster.context.clone().or(self.defaults.context.clone());
            let files: usize = c.pods.iter().map(|x| x.files.len()).sum();
            let pods = c.pods.clone();
            let to = path.clone();
            blocking(move || write_bundle(&to, &pods, context.as_deref())).await?;
            let report = diagnose::diagnose_all(&bundle::read_memory(&c.pods));
            Ok::<_, anyhow::Error>((report, path, files))
        };
        Ok(match run.await {
            Ok((report, path, files)) => {
                let mut r = report_result(
                    &report,
                    None,
                    Some(json!({ "bundle": path.display().to_string(), "files": files })),
                );
                r.content.insert(
                    0,
                    ContentBlock::text(format!(
                        "captured {} pod(s), {files} files into {}; `analyze` with path {} reads it back",
                        report.pods.len(),
                        path.display(),
                        path.display()
                    )),
                );
                r
            }
            Err(e) => failure(e),
        })
    }

    #[tool(
        description = "Diagnose every unhealthy pod of a namespace (or all namespaces), grouped by cause and owner. \
Read-only. Returns the crashdoc/v1 report plus `groups` (cause, count, owners, pods) and `scanned` (pods listed).",
        annotations(read_only_hint = true, open_world_hint = true)
    )]
    async fn scan(
        &self,
        Parameters(p): Parameters<ScanParams>,
    ) -> Result<CallToolResult, McpError> {
        let run = async {
            let (client, ns) = self.connect(&p.cluster).await?;
            let scanned = crashdoc_kube::scan::scan(
                client,
                &ns,
                p.all_namespaces.unwrap_or(false),
                options(&p.cluster),
                p.concurrency.unwrap_or(16),
                &|_| {},
            )
            .await?;
            let report = diagnose::diagnose_all(&bundle::read_memory(&scanned.pods));
            let v = crashdoc_kube::scan::json(&report, &scanned.pods, scanned.total)?;
            Ok::<_, anyhow::Error>((report, v, scanned.total, scanned.events_note))
        };
        Ok(match run.await {
            Ok((report, v, total, note)) => {
                let mut text = match p.format.unwrap_or_default() {
                    TextFormat::Summary => scan_summary(&report, total),
                    f => report_text(&report, f),
                };
                if let Some(n) = note {
                    text.push_str(&format!("\nnote: {n}"));
                }
                structured(v, text)
            }
            Err(e) => failure(e),
        })
    }

    #[tool(
        description = "Explain a cause id (as in a diagnosis's `cause`): what the rule detects, why it crash-loops, \
the evidence, an example, the fix, known false positives, which causes it outranks and why, and the catalog entries \
it recognises with the source of each.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn explain(
        &self,
        Parameters(p): Parameters<ExplainParams>,
    ) -> Result<CallToolResult, McpError> {
        // `crashdoc explain CHECK-ID`: a lint check's documentation
        if let Some(c) = crashdoc_lint::check(p.cause.trim()) {
            let sections: Vec<Value> = c
                .sections()
                .iter()
                .map(|(h, t)| json!({ "heading": h, "text": t }))
                .collect();
            let v = json!({
                "schema": diagnose::SCHEMA,
                "check": c.id,
                "severity": c.severity.word(),
                "cause": c.cause.id(),
                "sections": sections,
            });
            return Ok(structured(v, crashdoc_lint::output::explain(c)));
        }
        let cause: Cause = match p.cause.trim().parse() {
            Ok(c) => c,
            Err(e) => return Ok(failure(anyhow::Error::new(e))),
        };
        let mut text = render::knowledge::explain(cause);
        let prevented_by: Vec<&str> = crashdoc_lint::checks::ALL
            .iter()
            .filter(|c| c.cause == cause)
            .map(|c| c.id)
            .collect();
        if !prevented_by.is_empty() {
            text.push_str(&format!(
                "\nLint checks that catch it before it ships (the `lint` tool): {}\n",
                prevented_by.join(", ")
            ));
        }
        let sections: Vec<Value> = crashdoc_core::rules::rule(cause)
            .map(|r| {
                r.doc
                    .sections()
                    .iter()
                    .map(|(h, t)| json!({ "heading": h, "text": t }))
                    .collect()
            })
            .unwrap_or_default();
        let outranks: Vec<Value> = crashdoc_core::rules::rule(cause)
            .map(|r| {
                r.outranks
                    .iter()
                    .map(|o| json!({ "cause": o.cause.id(), "why": o.why }))
                    .collect()
            })
            .unwrap_or_default();
        let v = json!({
            "schema": diagnose::SCHEMA,
            "cause": cause.id(),
            "title": cause.title(),
            "sections": sections,
            "outranks": outranks,
            "catalog_entries": render::knowledge::entries(Some(cause), None),
            "prevented_by": prevented_by,
        });
        Ok(structured(v, text))
    }

    #[tool(
        description = "The container terminations `crashdoc watch` recorded for a pod or workload, newest first \
(when, reason, exit code, cause, summary); with `export` and `output`, write one capture as a bundle that `analyze` \
reads. Reads the history database only, no cluster access.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn history(
        &self,
        Parameters(p): Parameters<HistoryParams>,
    ) -> Result<CallToolResult, McpError> {
        let defaults = self.defaults.clone();
        if p.export.is_some() && defaults.bounds.no_export {
            return Ok(failure(
                ArgError::new(
                    "history export is off on this server",
                    "list captures without `export`; the server's operator enables it with `--tools ...,history-export`",
                )
                .into(),
            ));
        }
        let run = blocking(move || {
            let store = open_history(p.db.as_deref(), &defaults)?;
            history(p, store)
        })
        .await;
        Ok(match run {
            Ok((v, text)) => structured(v, text),
            Err(e) => failure(e),
        })
    }

    #[tool(
        description = "Fleet questions over the history that many clusters' `crashdoc watch` write (a PostgreSQL --db, or one \
file): `group` counts captures per cluster, namespace, workload, cause or node, each with its causes (which clusters crash \
most this week, and why); `new_causes` lists the (cluster, workload, cause) triples first seen since a time or a rollout \
revision (is this cause new?); `compare_clusters` puts one workload's causes in each cluster side by side (did the rollout \
make it OOM in every region?). Reads the history only, no cluster access.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn fleet(
        &self,
        Parameters(p): Parameters<FleetParams>,
    ) -> Result<CallToolResult, McpError> {
        let defaults = self.defaults.clone();
        let run = blocking(move || {
            let store = open_history(p.db.as_deref(), &defaults)?;
            crate::fleet::answer(p, store.as_ref())
        })
        .await;
        Ok(match run {
            Ok((v, text)) => structured(v, text),
            Err(e) => failure(e),
        })
    }
}

/// The history a call reads: its own `db` file, else the server's --db.
/// A call cannot name a database URL: the server would send its
/// credentials to whatever host the call named.
pub(crate) fn open_history(
    db: Option<&str>,
    d: &Defaults,
) -> anyhow::Result<Arc<dyn crashdoc_history::Store>> {
    use anyhow::Context as _;
    let loc = match db {
        Some(s) => match s.parse::<crashdoc_history::Location>() {
            Ok(crashdoc_history::Location::File(_)) if d.bounds.confine => {
                crashdoc_history::Location::File(crate::confine::confine(
                    d.bounds.root.as_deref(),
                    s,
                )?)
            }
            Ok(crashdoc_history::Location::File(p)) => crashdoc_history::Location::File(p),
            _ => {
                return Err(ArgError::new(
                    "`db` names a database URL: a call may only name a history file",
                    "leave `db` out to read the server's --db (start the server with --db postgres://... for a fleet database)",
                )
                .into());
            }
        },
        None => d.db.clone().context(
            "no history database: the server was started without one (pass `db`, or start it with --db or CRASHDOC_DB)",
        )?,
    };
    let o = crashdoc_history::OpenOptions {
        read_only: true,
        password_file: d.db_password_file.clone(),
        ..crashdoc_history::OpenOptions::default()
    };
    crashdoc_history::open(&loc, &o).with_context(|| format!("cannot read the history {loc}"))
}

/// Where a capture over HTTP writes: a new name in a folder inside
/// `--root`.
fn confine_output(root: Option<&std::path::Path>, out: &str) -> anyhow::Result<PathBuf> {
    let p = std::path::Path::new(out);
    let (parent, name) = match (p.parent(), p.file_name()) {
        (Some(parent), Some(name)) => (parent, name),
        _ => return Err(crate::confine::confine(None, out).unwrap_err().into()),
    };
    let parent = parent.to_string_lossy();
    let parent = if parent.is_empty() { "." } else { &parent };
    let dir = crate::confine::confine(root, parent)?;
    let to = dir.join(name);
    if to.symlink_metadata().is_ok() {
        return Err(ArgError::new(
            "the capture's `output` exists already",
            "name a new file or folder under the server's --root",
        )
        .into());
    }
    Ok(to)
}

#[tool_handler(router = self.tool_router)]
impl rmcp::ServerHandler for CrashdocMcp {
    /// A call as the router runs it, bounded by `--tool-timeout`.
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, McpError> {
        let name = request.name.to_string();
        let tcc = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        let call = self.tool_router.call(tcc);
        match self.defaults.bounds.timeout {
            None => call.await,
            Some(t) => match tokio::time::timeout(t, call).await {
                Ok(r) => r,
                Err(_) => Ok(failure(
                    ArgError::new(
                        &format!(
                            "the {name} tool did not finish within the server's --tool-timeout of {} s",
                            t.as_secs_f64()
                        ),
                        "narrow the call (a pod rather than a workload, fewer log lines), or ask the operator for a longer --tool-timeout",
                    )
                    .into(),
                )
                .into()),
            },
        }
    }

    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(
            rmcp::model::ServerCapabilities::builder()
                .enable_tools()
                .build(),
        )
        .with_server_info(rmcp::model::Implementation::new(
            "crashdoc",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(INSTRUCTIONS.to_string())
    }
}

impl CrashdocMcp {
    async fn connect(&self, c: &ClusterParams) -> anyhow::Result<(kube::Client, String)> {
        let kubeconfig = c.kubeconfig.clone().map(PathBuf::from);
        let kubeconfig = kubeconfig
            .as_deref()
            .or(self.defaults.kubeconfig.as_deref());
        let context = c.context.as_deref().or(self.defaults.context.as_deref());
        let (client, default_ns) = crashdoc_kube::client(kubeconfig, context).await?;
        let ns = c
            .namespace
            .clone()
            .or(self.defaults.namespace.clone())
            .unwrap_or(default_ns);
        Ok((client, ns))
    }

    async fn collect(
        &self,
        c: &ClusterParams,
        target: &str,
    ) -> anyhow::Result<crashdoc_kube::Collection> {
        let target: Target = target.trim().parse()?;
        let (client, ns) = self.connect(c).await?;
        Ok(crashdoc_kube::scan::collect_target(client, &ns, options(c), &target).await?)
    }
}

fn options(c: &ClusterParams) -> CollectOptions {
    let d = CollectOptions::default();
    CollectOptions {
        log_lines: Some(c.log_lines.or(d.log_lines).unwrap_or(5000)),
        log_bytes: c.log_bytes.unwrap_or(d.log_bytes),
        secret_keys: !c.no_secret_keys.unwrap_or(false),
    }
}

fn write_bundle(
    path: &std::path::Path,
    pods: &[bundle::PodFiles],
    context: Option<&str>,
) -> anyhow::Result<()> {
    bundle::write(path, pods, context)
        .map_err(|e| anyhow::Error::new(e).context(format!("cannot write {}", path.display())))
}

/// Run blocking work (file reads, the redb history) off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
) -> anyhow::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| anyhow::anyhow!("the tool's worker failed: {e}"))?
}

fn history(
    p: HistoryParams,
    store: Arc<dyn crashdoc_history::Store>,
) -> anyhow::Result<(Value, String)> {
    use anyhow::Context as _;
    let location = store.location();
    match (p.export, &p.output) {
        (Some(id), Some(out)) => {
            let bytes = store.bundle(id)?.with_context(|| {
                format!("capture {id} has no bundle (or no capture has that id); call `history` without `export` to list them")
            })?;
            let out = PathBuf::from(out);
            // Written the way `crashdoc history --export` writes: the archive as
            // is, or unpacked into a folder; then read back as `analyze` would.
            let name = out.to_string_lossy();
            if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
                std::fs::write(&out, &bytes)
                    .with_context(|| format!("cannot write {}", out.display()))?;
            } else {
                unpack(&bytes, &out)?;
            }
            let ev = ingest::read_path(&out)
                .with_context(|| format!("capture {id}'s bundle cannot be read"))?;
            let report = diagnose::diagnose_all(&ev);
            let mut v = report_json(&report)?;
            v["exported"] = json!(id);
            v["bundle"] = json!(out.display().to_string());
            let text = format!(
                "exported capture {id} to {}; `analyze` with that path shows its full diagnosis\n{}",
                out.display(),
                summary(&report)
            );
            Ok((v, text))
        }
        (Some(_), None) => Err(ArgError {
            message: "`export` needs `output`".into(),
            hint: "give `output`: the FILE.tar.gz or folder to write the capture to".into(),
        }
        .into()),
        (None, _) => {
            let since = p
                .since
                .as_deref()
                .map(crashdoc_core::time::parse_duration)
                .transpose()
                .map_err(anyhow::Error::msg)?;
            let mut q = crashdoc_watch::history::query(
                p.target.as_deref(),
                p.namespace.clone(),
                p.container.clone(),
                since,
                p.limit.unwrap_or(50),
            )?;
            q.cluster = p.cluster.clone();
            let records = store.list(&q)?;
            let captures: Vec<Value> = records
                .iter()
                .map(crashdoc_watch::history::record_json)
                .collect();
            let mut text = String::new();
            if records.is_empty() {
                text.push_str(&format!(
                    "no captures{} in {}",
                    p.target
                        .as_deref()
                        .map(|t| format!(" of {t}"))
                        .unwrap_or_default(),
                    location
                ));
            } else {
                text.push_str(&format!("{} capture(s), newest first:\n", records.len()));
                for r in records.iter().take(20) {
                    let c = &r.capture;
                    let when = c.finished_at.unwrap_or(c.observed_at);
                    text.push_str(&format!(
                        "#{} {} {}/{} [{}] restart {} {} exit {} -> {}\n",
                        r.id,
                        when.strftime("%Y-%m-%d %H:%M:%S"),
                        c.namespace,
                        c.pod,
                        c.key.container,
                        c.key.restart_count,
                        c.reason.as_deref().unwrap_or("terminated"),
                        c.exit_code
                            .map(|e| e.to_string())
                            .unwrap_or_else(|| "-".into()),
                        c.cause.as_deref().unwrap_or("-"),
                    ));
                }
            }
            let v = json!({
                "schema": diagnose::SCHEMA,
                "db": location,
                "captures": captures,
            });
            Ok((v, text))
        }
    }
}

fn unpack(bytes: &[u8], to: &std::path::Path) -> anyhow::Result<()> {
    use anyhow::Context as _;
    std::fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    let mut a = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    // `unpack` refuses entries that would escape the folder.
    a.unpack(to)
        .with_context(|| format!("cannot unpack into {}", to.display()))
}

fn report_json(report: &Report) -> anyhow::Result<Value> {
    Ok(serde_json::to_value(report)?)
}

/// A report as a tool result: structured content, a text, the JSON as text.
fn report_result(
    report: &Report,
    format: Option<TextFormat>,
    extra: Option<Value>,
) -> CallToolResult {
    let mut v = match report_json(report) {
        Ok(v) => v,
        Err(e) => return failure(e),
    };
    if let (Some(Value::Object(extra)), Some(obj)) = (extra, v.as_object_mut()) {
        obj.extend(extra);
    }
    let text = report_text(report, format.unwrap_or_default());
    structured(v, text)
}

fn report_text(report: &Report, format: TextFormat) -> String {
    match format {
        TextFormat::Summary => summary(report),
        TextFormat::Text => render::terminal(report, render::Style::plain()),
        TextFormat::Markdown => render::markdown(report),
    }
}

/// One line per pod: namespace/name (owner): cause (confidence): summary; what is missing.
pub(crate) fn summary(report: &Report) -> String {
    if report.pods.is_empty() {
        return "no pod in the evidence".into();
    }
    let mut out = String::new();
    for p in &report.pods {
        let name = match (&p.namespace, &p.name) {
            (Some(ns), Some(n)) => format!("{ns}/{n}"),
            (None, Some(n)) => n.clone(),
            _ => "(unnamed pod)".into(),
        };
        let owner = p
            .owner
            .as_deref()
            .map(|o| format!(" ({o})"))
            .unwrap_or_default();
        match p.diagnoses.first() {
            Some(d) => {
                let conf = serde_json::to_value(d.confidence)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default();
                let container = d
                    .container
                    .as_deref()
                    .map(|c| format!(" [{c}]"))
                    .unwrap_or_default();
                out.push_str(&format!(
                    "{name}{owner}{container}: {} ({conf}): {}",
                    d.cause.id(),
                    d.summary
                ));
                let others: Vec<&str> = p.diagnoses.iter().skip(1).map(|d| d.cause.id()).collect();
                if !others.is_empty() {
                    out.push_str(&format!("; also ranked: {}", others.join(", ")));
                }
            }
            None => out.push_str(&format!("{name}{owner}: no diagnosis")),
        }
        if !p.missing.is_empty() {
            let what: Vec<&str> = p.missing.iter().map(|m| m.what.as_str()).collect();
            out.push_str(&format!("; missing: {}", what.join(", ")));
        }
        out.push('\n');
    }
    out
}

fn scan_summary(report: &Report, total: usize) -> String {
    if report.pods.is_empty() {
        return format!("scanned {total} pods: none is unhealthy");
    }
    let mut out = format!(
        "scanned {total} pods, {} unhealthy, by cause:\n",
        report.pods.len()
    );
    for g in crashdoc_kube::scan::groups(report) {
        out.push_str(&format!(
            "{}: {} pod(s), owners {}; e.g. {}\n",
            g.cause,
            g.count,
            g.owners.join(", "),
            g.pods.first().cloned().unwrap_or_default()
        ));
    }
    out.push_str("`diagnose` with a pod's name gives one in full.\n");
    out
}

/// Structured content plus a text block and the JSON as text, every string
/// passed through crashdoc-core's redaction once more on the way out.
pub(crate) fn structured(mut v: Value, text: String) -> CallToolResult {
    redact_value(&mut v);
    let text = crashdoc_core::redact::mask_urls_in(&text);
    let text = crashdoc_core::redact::redact(&text).into_owned();
    let json_text = serde_json::to_string_pretty(&v).unwrap_or_default();
    let mut r = CallToolResult::structured(v);
    r.content = vec![ContentBlock::text(text), ContentBlock::text(json_text)];
    r
}

fn redact_value(v: &mut Value) {
    match v {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(r) = crashdoc_core::redact::mask_urls_in(s) {
                *s = r;
            }
            if let std::borrow::Cow::Owned(r) = crashdoc_core::redact::redact(s) {
                *s = r;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(redact_value),
        Value::Object(o) => o.values_mut().for_each(redact_value),
        _ => {}
    }
}

/// Arguments that fit the schema but not each other (the model can correct them).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub(crate) struct ArgError {
    message: String,
    hint: String,
}

impl ArgError {
    pub(crate) fn new(message: &str, hint: &str) -> Self {
        ArgError {
            message: message.into(),
            hint: hint.into(),
        }
    }
}

impl crashdoc_core::Hint for ArgError {
    fn hint(&self) -> Option<std::borrow::Cow<'_, str>> {
        Some(self.hint.as_str().into())
    }
}

/// The errors a tool can fail with that carry a hint, as the CLI's.
const HINTED: &[crashdoc_core::hint::Finder] = {
    use crashdoc_core::hint::finder;
    &[
        finder::<ArgError>,
        finder::<crate::confine::Refused>,
        finder::<ingest::InputError>,
        finder::<crashdoc_core::causes::UnknownCause>,
        finder::<KubeError>,
        finder::<crashdoc_history::HistoryError>,
        finder::<crashdoc_watch::WatchError>,
        finder::<crashdoc_lint::input::InputError>,
    ]
};

/// A tool failure (`isError: true`): the CLI's `error:` / `Caused by:` /
/// `hint:` lines as text, and the same as structured content.
pub(crate) fn failure(e: anyhow::Error) -> CallToolResult {
    let message = e.to_string();
    let causes: Vec<String> = e.chain().skip(1).map(|c| c.to_string()).collect();
    let hints = crashdoc_core::hint::hints(e.chain(), HINTED);
    let mut text = format!("error: {message}");
    for c in &causes {
        text.push_str(&format!("\n  Caused by: {c}"));
    }
    for h in &hints {
        text.push_str(&format!("\nhint: {h}"));
    }
    let hint = hints.first().map(|h| h.to_string());
    let mut v = json!({ "error": message, "causes": causes, "hint": hint });
    redact_value(&mut v);
    let text = crashdoc_core::redact::redact(&text).into_owned();
    let mut r = CallToolResult::error(vec![ContentBlock::text(text)]);
    r.structured_content = Some(v);
    r
}
