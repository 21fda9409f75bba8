//! `crashdoc watch` and `crashdoc history`: the command-line side. The
//! work is in crashdoc-watch and crashdoc-history.

use crate::live::{self, ClusterArgs};
use anyhow::Context as _;
use crashdoc_history::{Location, OpenOptions, Record, Retention, SpoolConfig, Store};
use std::sync::Arc;

mod fleet;
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
    /// This cluster's name in the history, so that many clusters' watchers
    /// can share one database [default: the kubeconfig context; in a pod,
    /// the kube-system namespace's UID]
    #[arg(long = "cluster", value_name = "NAME", env = "CRASHDOC_CLUSTER")]
    pub cluster_name: Option<String>,
    /// With a PostgreSQL --db: queue captures in this local file while the
    /// database is unreachable; they are written when it answers again
    /// [default: spool-CLUSTER.redb beside the default history file]
    #[arg(long, value_name = "PATH")]
    pub spool: Option<PathBuf>,
    /// At most this many captures wait in the spool; later ones are dropped
    /// (and counted in crashdoc_history_spool_dropped_total).
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    pub spool_max_captures: u64,
    /// At most this many MiB wait in the spool.
    #[arg(long, default_value_t = 512, value_name = "MIB")]
    pub spool_max_mib: u64,
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
    /// The history: a file, or a PostgreSQL URL shared by many clusters'
    /// watchers (postgres://USER@HOST:PORT/DB?sslmode=require) [default:
    /// $CRASHDOC_DB, else $XDG_STATE_HOME/crashdoc/history.redb, else
    /// ~/.local/state/crashdoc/history.redb]
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<String>,
    /// The database password, from a file (a mounted Secret's key), when
    /// the URL has none; else $PGPASSWORD.
    #[arg(
        long,
        value_name = "FILE",
        env = "CRASHDOC_DB_PASSWORD_FILE",
        hide_env_values = true
    )]
    pub db_password_file: Option<PathBuf>,
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
    /// Where the history is: --db, else $CRASHDOC_DB, else the state folder's file.
    pub fn location(&self) -> anyhow::Result<Location> {
        let given = self
            .db
            .clone()
            .or_else(|| std::env::var("CRASHDOC_DB").ok().filter(|v| !v.is_empty()));
        if let Some(s) = given {
            let Ok(loc) = s.parse::<Location>();
            return Ok(loc);
        }
        self.state_default()
    }

    /// The history file in the state folder.
    fn state_default(&self) -> anyhow::Result<Location> {
        let base = match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
            Some(s) => PathBuf::from(s),
            None => {
                PathBuf::from(std::env::var_os("HOME").ok_or(NoHistoryPlace)?).join(".local/state")
            }
        };
        Ok(Location::File(base.join("crashdoc").join("history.redb")))
    }

    fn options(&self) -> OpenOptions {
        OpenOptions {
            password_file: self.db_password_file.clone(),
            ..OpenOptions::default()
        }
    }

    /// The history, for reading (`crashdoc history`, `crashdoc mcp`).
    pub fn open_read_only(&self) -> anyhow::Result<Arc<dyn Store>> {
        let loc = self.location()?;
        let o = OpenOptions {
            read_only: true,
            ..self.options()
        };
        crashdoc_history::open(&loc, &o).with_context(|| format!("cannot read the history {loc}"))
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
    /// Only this cluster (`crashdoc watch --cluster`; default: every cluster
    /// in the history).
    #[arg(long, value_name = "NAME")]
    pub cluster: Option<String>,
    #[command(flatten)]
    pub db: DbArg,
    /// Only captures from the last DURATION (1h, 2d) or since a time (RFC 3339).
    #[arg(long, value_name = "DURATION|TIME", value_parser = parse_since)]
    pub since: Option<jiff::Timestamp>,
    /// At most this many captures, newest first.
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// Count the captures per cluster, namespace, workload, cause or node,
    /// each with its causes, instead of listing them.
    #[arg(long, value_name = "KEY", value_parser = parse_group_by, conflicts_with_all = ["new_causes", "compare_clusters", "export"])]
    pub group_by: Option<crashdoc_history::GroupBy>,
    /// The (cluster, workload, cause) triples first seen at or after --since
    /// (or the first capture of --revision): the causes that are new, not
    /// the ones that have been there for a month.
    #[arg(long, conflicts_with_all = ["compare_clusters", "export"])]
    pub new_causes: bool,
    /// With --new-causes: count as new from the first capture of this
    /// rollout revision (a pod's pod-template-hash or controller-revision-hash).
    #[arg(
        long,
        value_name = "HASH",
        requires = "new_causes",
        conflicts_with = "since"
    )]
    pub revision: Option<String>,
    /// A workload's causes in every cluster, side by side.
    #[arg(long, requires = "target", conflicts_with = "export")]
    pub compare_clusters: bool,
    #[arg(long, short = 'f', value_enum, default_value_t = crate::Format::Text)]
    pub format: crate::Format,
    /// Write capture ID as a bundle (`crashdoc analyze` reads it).
    #[arg(long, value_name = "ID", requires = "output")]
    pub export: Option<u64>,
    /// Where --export writes: FILE.tar.gz, or a folder.
    #[arg(short = 'o', long, value_name = "FILE.tar.gz|DIR")]
    pub output: Option<PathBuf>,
}

/// `--since`: a duration ago (`2h`), or an RFC 3339 instant.
fn parse_since(s: &str) -> Result<jiff::Timestamp, String> {
    crashdoc_core::time::parse_since(s, jiff::Timestamp::now())
}

fn parse_group_by(s: &str) -> Result<crashdoc_history::GroupBy, String> {
    s.parse()
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
    let loc = a.db.location()?;
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
        let cluster = match a.cluster_name.clone().filter(|c| !c.is_empty()) {
            Some(name) => name,
            None => {
                let id = crashdoc_kube::cluster_identity(
                    &client,
                    a.cluster.kubeconfig.as_deref(),
                    a.cluster.context.as_deref(),
                )
                .await
                .context("cannot name this cluster for the history")?;
                if verbose {
                    eprintln!("cluster name {:?}, from {}", id.name, id.source);
                }
                id.name
            }
        };
        let store = open_writer(&a, &loc, &cluster).await?;
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
            cluster,
            store,
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

/// The history for `watch`: scoped to `cluster`; a database with its spool.
async fn open_writer(
    a: &WatchArgs,
    loc: &Location,
    cluster: &str,
) -> anyhow::Result<Arc<dyn Store>> {
    let spool = match loc {
        Location::File(_) => None,
        Location::Postgres(_) => Some(SpoolConfig {
            path: match &a.spool {
                Some(p) => p.clone(),
                None => default_spool(cluster)?,
            },
            max_captures: a.spool_max_captures,
            max_bytes: a.spool_max_mib.saturating_mul(1 << 20),
        }),
    };
    let o = OpenOptions {
        cluster: Some(cluster.to_string()),
        spool,
        ..a.db.options()
    };
    let loc = loc.clone();
    // Connecting to a database blocks: not on the runtime's threads.
    tokio::task::spawn_blocking(move || {
        crashdoc_history::open(&loc, &o).with_context(|| format!("cannot open the history {loc}"))
    })
    .await
    .context("the task opening the history failed")?
}

/// `spool-CLUSTER.redb` in the state folder (the default history file's).
fn default_spool(cluster: &str) -> anyhow::Result<PathBuf> {
    let Location::File(default) = (DbArg {
        db: None,
        db_password_file: None,
    })
    .state_default()?
    else {
        anyhow::bail!("no state folder for the spool: pass --spool PATH");
    };
    let safe: String = cluster
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    Ok(default.with_file_name(format!("spool-{safe}.redb")))
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
    let store = a.db.open_read_only()?;
    if let (Some(id), Some(out)) = (a.export, &a.output) {
        return export(store.as_ref(), id, out);
    }
    let mut q = crashdoc_watch::history::query(
        a.target.as_deref(),
        a.namespace.clone(),
        a.container.clone(),
        None,
        a.limit,
    )?;
    q.cluster = a.cluster.clone();
    q.since = a.since;
    let mut out = anstream::stdout();
    if let Some(by) = a.group_by {
        let groups = store.group(&q, by)?;
        return fleet::print_groups(&mut out, by, &groups, a.format, &store.location());
    }
    if a.new_causes {
        let since = match (&a.revision, a.since) {
            (Some(rev), _) => crashdoc_history::Since::Revision(rev.clone()),
            (None, Some(t)) => crashdoc_history::Since::At(t),
            (None, None) => anyhow::bail!(
                "--new-causes needs --since DURATION|TIME or --revision HASH: new since when?"
            ),
        };
        // First sightings are judged over the whole history of the scope,
        // the window only selects what to report.
        let rows = store.new_causes(&q, since)?;
        return fleet::print_new_causes(&mut out, &rows, a.format);
    }
    if a.compare_clusters {
        let groups = store.group(&q, crashdoc_history::GroupBy::Cluster)?;
        let target = a.target.as_deref().unwrap_or_default();
        return fleet::print_side_by_side(&mut out, target, &groups, a.format);
    }
    let records = store.list(&q)?;
    let (keys, changes) = crashdoc_watch::history::key_history(store.as_ref(), &records)?;
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
            store.location()
        )?;
        return Ok(());
    }
    if a.format == crate::Format::Markdown {
        anyhow::bail!("history prints text or json");
    }
    let clusters: std::collections::BTreeSet<&str> = records
        .iter()
        .map(|r| r.capture.key.cluster.as_str())
        .collect();
    write!(out, "{}", table(&records, clusters.len() > 1))?;
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

fn table(records: &[Record], with_cluster: bool) -> String {
    let mut t = comfy_table::Table::new();
    t.load_style(comfy_table::presets::NOTHING);
    let mut header = vec!["ID", "WHEN"];
    if with_cluster {
        header.push("CLUSTER");
    }
    header.extend([
        "POD",
        "CONTAINER",
        "#",
        "REASON",
        "EXIT",
        "CAUSE",
        "CAPTURE",
    ]);
    t.set_header(header);
    for r in records {
        let c = &r.capture;
        let when = c.finished_at.unwrap_or(c.observed_at);
        let mut row = vec![
            r.id.to_string(),
            when.strftime("%Y-%m-%d %H:%M:%S").to_string(),
        ];
        if with_cluster {
            row.push(fleet::or_dash(&c.key.cluster));
        }
        row.extend([
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
        t.add_row(row);
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

fn export(store: &dyn Store, id: u64, out: &Path) -> anyhow::Result<()> {
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
