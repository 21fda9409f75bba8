//! `crashdoc watch` and `crashdoc history`: the command-line side. The
//! work is in crashdoc-watch and crashdoc-history.

use crate::live::{self, ClusterArgs};
use anyhow::Context as _;
use crashdoc_history::{Record, RedbStore, Retention};
use crashdoc_watch::{Config, LeaderElection, WebhookConfig, notify};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(clap::Args)]
pub struct WatchArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Every namespace.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Only pods with these labels (e.g. app=vllm).
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    #[command(flatten)]
    pub db: DbArg,
    /// Serve /metrics, /healthz and /readyz here.
    #[arg(long, default_value = "127.0.0.1:9464", value_name = "ADDR")]
    pub listen: SocketAddr,
    /// Drop captures older than this from the history (e.g. 14d, 12h).
    #[arg(long, default_value = "14d", value_parser = crate::parse_duration)]
    pub retention: Duration,
    /// Keep at most this many captures (oldest go first).
    #[arg(long, default_value_t = 10_000)]
    pub max_captures: u64,
    /// Keep at most this many MiB of bundles in the history.
    #[arg(long, default_value_t = 1024, value_name = "MIB")]
    pub max_history_mib: u64,
    /// Captures running at once (each is ~10 API requests).
    #[arg(long, default_value_t = 4)]
    pub capture_concurrency: usize,
    /// Terminations waiting for a capture; beyond it (a restart storm) they
    /// are counted and stored from the pod status alone.
    #[arg(long, default_value_t = 1000)]
    pub queue: usize,
    /// Also capture the last termination of pods already crash-looping at
    /// start (by default they are a baseline, captured from their next crash).
    #[arg(long)]
    pub capture_existing: bool,
    /// Only the replica holding a Lease watches (the only object crashdoc writes).
    #[arg(long)]
    pub leader_elect: bool,
    #[arg(long, default_value = "crashdoc-watch", requires = "leader_elect")]
    pub lease_name: String,
    /// Default: POD_NAMESPACE, else the watched namespace.
    #[arg(long, requires = "leader_elect")]
    pub lease_namespace: Option<String>,
    /// How long a leader's claim lasts without renewal.
    #[arg(long, default_value = "15s", value_parser = crate::parse_duration, requires = "leader_elect")]
    pub lease_duration: Duration,
    /// POST each diagnosis here (repeatable; also CRASHDOC_WEBHOOK_URL).
    #[arg(
        long,
        value_name = "URL",
        env = "CRASHDOC_WEBHOOK_URL",
        hide_env_values = true
    )]
    pub webhook: Vec<String>,
    #[arg(long, value_enum, default_value_t = HookFormat::Json)]
    pub webhook_format: HookFormat,
    /// At most one notification per workload in this interval; the next one
    /// says how many were held back.
    #[arg(long, default_value = "10m", value_parser = crate::parse_duration)]
    pub notify_interval: Duration,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HookFormat {
    Json,
    Slack,
}

#[derive(clap::Args)]
pub struct DbArg {
    /// The history database [default: $CRASHDOC_DB, else
    /// $XDG_STATE_HOME/crashdoc/history.redb, else ~/.local/state/crashdoc/history.redb]
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

/// No --db, CRASHDOC_DB, XDG_STATE_HOME or HOME: nowhere to put the history.
#[derive(Debug)]
pub struct NoHistoryPlace;

impl std::fmt::Display for NoHistoryPlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("cannot place the history database: no --db, CRASHDOC_DB or HOME")
    }
}

impl std::error::Error for NoHistoryPlace {}

impl crashdoc_core::Hint for NoHistoryPlace {
    fn hint(&self) -> Option<std::borrow::Cow<'_, str>> {
        Some("pass --db PATH, or set CRASHDOC_DB or HOME".into())
    }
}

impl DbArg {
    pub fn path(&self) -> anyhow::Result<PathBuf> {
        if let Some(p) = &self.db {
            return Ok(p.clone());
        }
        if let Some(p) = std::env::var_os("CRASHDOC_DB").filter(|v| !v.is_empty()) {
            return Ok(PathBuf::from(p));
        }
        let base = match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
            Some(s) => PathBuf::from(s),
            None => {
                PathBuf::from(std::env::var_os("HOME").ok_or(NoHistoryPlace)?).join(".local/state")
            }
        };
        Ok(base.join("crashdoc").join("history.redb"))
    }
}

#[derive(clap::Args)]
pub struct HistoryArgs {
    /// A pod (NAME, pod/NAME) or a workload (deploy/NAME, sts/NAME, ds/NAME, job/NAME).
    pub target: Option<String>,
    /// Only this namespace (default: every namespace in the history).
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// Only this container.
    #[arg(short = 'c', long)]
    pub container: Option<String>,
    #[command(flatten)]
    pub db: DbArg,
    /// Only captures from the last DURATION (e.g. 1h, 2d).
    #[arg(long, value_parser = crate::parse_duration)]
    pub since: Option<Duration>,
    /// At most this many captures, newest first.
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    #[arg(long, short = 'f', value_enum, default_value_t = crate::Format::Text)]
    pub format: crate::Format,
    /// Write capture ID as a bundle (`crashdoc analyze` reads it).
    #[arg(long, value_name = "ID", requires = "output")]
    pub export: Option<u64>,
    /// Where --export writes: FILE.tar.gz, or a folder.
    #[arg(short = 'o', long, value_name = "FILE.tar.gz|DIR")]
    pub output: Option<PathBuf>,
}

fn identity() -> String {
    let host = std::env::var("POD_NAME")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "crashdoc".into());
    format!("{host}-{}", std::process::id())
}

pub fn watch(a: WatchArgs, verbose: bool) -> anyhow::Result<()> {
    let db = a.db.path()?;
    if a.webhook.iter().any(|u| u.trim().is_empty()) {
        anyhow::bail!("--webhook needs a URL");
    }
    live::runtime()?.block_on(async move {
        let (client, default_ns) = crashdoc_kube::client_with(
            a.cluster.kubeconfig.as_deref(),
            a.cluster.context.as_deref(),
            a.cluster.timeout(),
        )
        .await?;
        let ns = a.cluster.namespace.clone().unwrap_or(default_ns);
        let namespace = (!a.all_namespaces).then(|| ns.clone());
        let leader = a.leader_elect.then(|| LeaderElection {
            lease_name: a.lease_name.clone(),
            lease_namespace: a
                .lease_namespace
                .clone()
                .or_else(|| {
                    std::env::var("POD_NAMESPACE")
                        .ok()
                        .filter(|s| !s.is_empty())
                })
                .unwrap_or_else(|| ns.clone()),
            identity: identity(),
            duration_secs: a.lease_duration.as_secs(),
        });
        let format = match a.webhook_format {
            HookFormat::Json => notify::Format::Json,
            HookFormat::Slack => notify::Format::Slack,
        };
        let cfg = Config {
            namespace,
            label_selector: a.selector.clone(),
            db,
            retention: Retention {
                max_age: Some(jiff::SignedDuration::from_secs(
                    a.retention.as_secs().min(i64::MAX as u64) as i64,
                )),
                max_captures: Some(a.max_captures),
                max_bytes: Some(a.max_history_mib.saturating_mul(1 << 20)),
            },
            listen: a.listen,
            capture_concurrency: a.capture_concurrency,
            queue_capacity: a.queue,
            collect: a.cluster.options(),
            leader,
            webhooks: a
                .webhook
                .iter()
                .map(|u| WebhookConfig {
                    url: u.clone(),
                    format,
                })
                .collect(),
            notify_interval: a.notify_interval,
            capture_existing: a.capture_existing,
            context: a.cluster.context.clone(),
            verbose,
        };
        let summary = crashdoc_watch::run(client, cfg, shutdown_signal())
            .await
            .context("crashdoc watch cannot run")?;
        eprintln!(
            "crashdoc watch stopped: {} termination(s) seen, {} unobserved, {} captured",
            summary.terminations, summary.unobserved, summary.captures
        );
        Ok(())
    })
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
    eprintln!("stopping: finishing the captures in flight");
}

pub fn history(a: HistoryArgs) -> anyhow::Result<()> {
    let path = a.db.path()?;
    let store = RedbStore::open_read_only(&path)
        .with_context(|| format!("cannot read the history {}", path.display()))?;
    if let (Some(id), Some(out)) = (a.export, &a.output) {
        return export(&store, id, out);
    }
    let q = crashdoc_watch::history::query(
        a.target.as_deref(),
        a.namespace.clone(),
        a.container.clone(),
        a.since,
        a.limit,
    )?;
    let records = store.list(&q)?;
    let (keys, changes) = crashdoc_watch::history::key_history(&store, &records)?;
    let mut out = anstream::stdout();
    if a.format == crate::Format::Json {
        let v: Vec<serde_json::Value> = records
            .iter()
            .map(|r| {
                crashdoc_watch::history::record_json_with_keys(
                    r,
                    keys.get(&r.id).map(Vec::as_slice),
                    &changes,
                )
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(());
    }
    if records.is_empty() {
        writeln!(
            out,
            "no captures{} in {}",
            a.target
                .as_deref()
                .map(|t| format!(" of {t}"))
                .unwrap_or_default(),
            path.display()
        )?;
        return Ok(());
    }
    if a.format == crate::Format::Markdown {
        anyhow::bail!("history prints text or json");
    }
    write!(out, "{}", table(&records))?;
    writeln!(out, "\n{}", by_reason(&records))?;
    // What changed in the ConfigMaps and Secrets the pods referenced.
    for c in &changes {
        writeln!(out, "{}", crashdoc_watch::history::key_change_line(c))?;
    }
    writeln!(
        out,
        "`crashdoc history --export ID -o crash.tar.gz` writes a capture as a bundle; `crashdoc analyze crash.tar.gz` shows its full diagnosis."
    )?;
    Ok(())
}

fn table(records: &[Record]) -> String {
    let mut t = comfy_table::Table::new();
    t.load_style(comfy_table::presets::NOTHING);
    t.set_header([
        "ID",
        "WHEN",
        "POD",
        "CONTAINER",
        "#",
        "REASON",
        "EXIT",
        "CAUSE",
        "CAPTURE",
    ]);
    for r in records {
        let c = &r.capture;
        let when = c.finished_at.unwrap_or(c.observed_at);
        t.add_row([
            r.id.to_string(),
            when.strftime("%Y-%m-%d %H:%M:%S").to_string(),
            format!("{}/{}", c.namespace, c.pod),
            c.key.container.clone(),
            c.key.restart_count.to_string(),
            c.reason.clone().unwrap_or_default(),
            c.exit_code.map(|e| e.to_string()).unwrap_or_default(),
            match (&c.cause, &c.confidence) {
                (Some(cause), Some(conf)) => format!("{cause} ({conf})"),
                (Some(cause), None) => cause.clone(),
                _ => "-".into(),
            },
            serde_json::to_value(c.kind)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
        ]);
    }
    format!("{t}\n")
}

/// "3 × OOMKilled → oom-killed, 1 × Error → bad-config"
fn by_reason(records: &[Record]) -> String {
    let mut counts: std::collections::BTreeMap<(String, String), usize> = Default::default();
    for r in records {
        let c = &r.capture;
        *counts
            .entry((
                c.reason.clone().unwrap_or_else(|| "terminated".into()),
                c.cause.clone().unwrap_or_else(|| "unknown".into()),
            ))
            .or_default() += 1;
    }
    let mut v: Vec<_> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let parts: Vec<String> = v
        .into_iter()
        .map(|((reason, cause), n)| format!("{n} × {reason} → {cause}"))
        .collect();
    format!("by reason: {}", parts.join(", "))
}

fn export(store: &RedbStore, id: u64, out: &Path) -> anyhow::Result<()> {
    let bytes = store.bundle(id)?.with_context(|| {
        format!("capture {id} has no bundle (or no capture has that id); see `crashdoc history`")
    })?;
    let name = out.to_string_lossy();
    if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        std::fs::write(out, &bytes).with_context(|| format!("cannot write {}", out.display()))?;
    } else {
        // A folder: unpack the archive, through the same reader `analyze` uses.
        let tmp = out.with_extension("tar.gz.part");
        std::fs::write(&tmp, &bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
        let unpacked = unpack(&tmp, out);
        let _ = std::fs::remove_file(&tmp);
        unpacked?;
    }
    println!("{}", out.display());
    eprintln!(
        "exported capture {id}; analyse it with `crashdoc analyze {}`",
        out.display()
    );
    Ok(())
}

fn unpack(archive: &Path, to: &Path) -> anyhow::Result<()> {
    let f = std::fs::File::open(archive)?;
    let mut a = tar::Archive::new(flate2::read::GzDecoder::new(f));
    std::fs::create_dir_all(to)?;
    // `unpack` refuses entries that would escape the folder.
    a.unpack(to)
        .with_context(|| format!("cannot unpack into {}", to.display()))
}
