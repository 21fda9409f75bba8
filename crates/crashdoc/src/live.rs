//! The live commands: diagnose, capture, scan. Read-only: the collector
//! only gets, lists and watches.

use anyhow::Context as _;
use crashdoc_core::ingest::bundle::{self, PodFiles};
use crashdoc_core::{diagnose, render};
use crashdoc_kube::{CollectOptions, Collector, Target};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Flags shared by every command that talks to a cluster (kubectl's names).
#[derive(clap::Args, Clone)]
pub struct ClusterArgs {
    /// Namespace (default: the current context's namespace).
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// The kubeconfig context to use.
    #[arg(long)]
    pub context: Option<String>,
    /// Path to the kubeconfig file (default: KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Lines kept from the end of each container log.
    #[arg(long, default_value_t = 5000)]
    pub log_lines: i64,
    /// Bytes kept of each container log.
    #[arg(long, default_value_t = 8 << 20)]
    pub log_bytes: i64,
    /// Do not read Secrets at all (no key-name checks). Secret values are never output either way.
    #[arg(long)]
    pub no_secret_keys: bool,
    /// How long a request may wait for the API server's answer to begin (0: no limit);
    /// a source that does not answer in time is reported missing.
    #[arg(long, default_value = "30s", value_parser = crate::parse_duration)]
    pub request_timeout: std::time::Duration,
}

impl ClusterArgs {
    async fn connect(&self) -> anyhow::Result<crashdoc_kube::Cluster> {
        Ok(crashdoc_kube::Cluster::connect(
            self.kubeconfig.as_deref(),
            self.context.as_deref(),
            self.namespace.as_deref(),
            self.timeout(),
        )
        .await?)
    }

    /// `--request-timeout`, `None` for 0.
    pub(crate) fn timeout(&self) -> Option<std::time::Duration> {
        Some(self.request_timeout).filter(|t| !t.is_zero())
    }

    pub(crate) fn options(&self) -> CollectOptions {
        CollectOptions {
            log_lines: Some(self.log_lines),
            log_bytes: self.log_bytes,
            secret_keys: !self.no_secret_keys,
        }
    }
}

pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Write a bundle to a folder, or a `.tar.gz` when the path ends so.
pub fn save(path: &Path, pods: &[PodFiles], context: Option<&str>) -> anyhow::Result<()> {
    bundle::write(path, pods, context).with_context(|| format!("cannot write {}", path.display()))
}

/// Resolve a target and collect its failing pods (or the pod itself).
async fn collect_target(
    args: &ClusterArgs,
    target: &str,
    verbose: bool,
) -> anyhow::Result<crashdoc_kube::Collection> {
    let target: Target = target.parse()?;
    let cluster = args.connect().await?;
    let started = Instant::now();
    let c = crashdoc_kube::scan::collect_target(
        cluster.client().clone(),
        cluster.namespace(),
        args.options(),
        &target,
    )
    .await?;
    if verbose {
        let lines = collected(&c, started.elapsed());
        eprint!("{}", crashdoc_core::redact::mask_urls_in(&lines));
    }
    Ok(c)
}

/// `-v`: what a collection cost, in all and wave by wave. The resolving
/// requests (the pod, or the workload and its pods) come before the first
/// wave of sources; their time is what the waves leave of the whole.
fn collected(c: &crashdoc_kube::Collection, elapsed: std::time::Duration) -> String {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    let in_waves: u32 = c.wave_requests.iter().sum();
    let waves_time: std::time::Duration = c.wave_times.iter().sum();
    let mut s = format!(
        "collected {} pod(s) with {} API requests in {} sequential waves in {} ms\n",
        c.pods.len(),
        c.requests,
        c.waves,
        elapsed.as_millis()
    );
    s.push_str(&format!(
        "  resolve: {:>4} requests {:>9.1} ms\n",
        c.requests.saturating_sub(in_waves),
        ms(elapsed.saturating_sub(waves_time))
    ));
    for (i, (t, n)) in c.wave_times.iter().zip(&c.wave_requests).enumerate() {
        s.push_str(&format!(
            "  wave {}:  {n:>4} requests {:>9.1} ms\n",
            i + 1,
            ms(*t)
        ));
    }
    s
}

pub fn output(report: &diagnose::Report, format: crate::Format, color: bool) -> anyhow::Result<()> {
    let mut out = anstream::stdout();
    match format {
        crate::Format::Json => writeln!(out, "{}", render::json(report))?,
        crate::Format::Markdown => write!(out, "{}", render::markdown(report))?,
        crate::Format::Text => write!(
            out,
            "{}",
            render::terminal(report, render::Style { color, all: false })
        )?,
    }
    Ok(())
}

pub async fn diagnose(
    args: ClusterArgs,
    target: String,
    save_to: Option<PathBuf>,
    format: crate::Format,
    color: bool,
    verbose: bool,
) -> anyhow::Result<()> {
    // The catalog is built while the requests are in flight.
    std::thread::spawn(crashdoc_core::warm);
    let c = collect_target(&args, &target, verbose).await?;
    if let Some(p) = &save_to {
        save(p, &c.pods, args.context.as_deref())?;
        eprintln!("saved the evidence to {}", p.display());
    }
    let ev = bundle::read_memory(&c.pods);
    output(&diagnose::diagnose_all(&ev), format, color)
}

pub async fn capture(
    args: ClusterArgs,
    target: String,
    to: PathBuf,
    verbose: bool,
) -> anyhow::Result<()> {
    let c = collect_target(&args, &target, verbose).await?;
    save(&to, &c.pods, args.context.as_deref())?;
    let files: usize = c.pods.iter().map(|p| p.files.len()).sum();
    println!("{}", to.display());
    eprintln!(
        "captured {} pod(s), {files} files; analyse with `crashdoc analyze {}`",
        c.pods.len(),
        to.display()
    );
    Ok(())
}

/// `scan --output`.
#[derive(Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub enum ScanOutput {
    /// Also the container and its exit code.
    Wide,
}

/// Every unhealthy pod of a namespace (or all), diagnosed, one line per
/// workload (crashdoc_kube::workload).
pub async fn scan(
    args: ClusterArgs,
    all_namespaces: bool,
    format: crate::Format,
    concurrency: usize,
    wide: bool,
    verbose: bool,
) -> anyhow::Result<()> {
    std::thread::spawn(crashdoc_core::warm);
    let cluster = args.connect().await?;
    let started = Instant::now();
    let bar = if std::io::stderr().is_terminal() && format == crate::Format::Text {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} diagnosing {pos}/{len} unhealthy pods {wide_bar} {elapsed}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let scanned = crashdoc_kube::scan::scan(
        cluster.client().clone(),
        cluster.namespace(),
        all_namespaces,
        args.options(),
        concurrency,
        &|n| {
            bar.set_length(n as u64);
            bar.inc(1)
        },
    )
    .await?;
    bar.finish_and_clear();
    if let Some(n) = &scanned.events_note {
        eprintln!("note: {n}");
    }
    let (files, total, phases) = (scanned.pods, scanned.total, scanned.phases);
    let diagnosing = Instant::now();
    let ev = bundle::read_memory(&files);
    let report = diagnose::diagnose_all(&ev);
    if verbose {
        eprintln!(
            "scanned {total} pods, {} unhealthy, in {} ms ({}, diagnose {} ms)",
            report.pods.len(),
            started.elapsed().as_millis(),
            phases
                .iter()
                .map(|(p, d)| format!("{p} {} ms", d.as_millis()))
                .collect::<Vec<_>>()
                .join(", "),
            diagnosing.elapsed().as_millis()
        );
    }
    match format {
        crate::Format::Json => {
            let v = crashdoc_kube::scan::json(&report, &files, total)?;
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
        crate::Format::Markdown => print!("{}", render::markdown(&report)),
        crate::Format::Text => print!(
            "{}",
            crashdoc_kube::workload::text(&report, &files, total, wide)
        ),
    }
    Ok(())
}

/// `verify deploy/NAME|sts/NAME|ds/NAME`: true when the rollout held.
pub async fn verify(
    args: ClusterArgs,
    target: String,
    stable: std::time::Duration,
    timeout: std::time::Duration,
    format: crate::Format,
) -> anyhow::Result<bool> {
    use crashdoc_kube::TargetKind;
    use crashdoc_kube::verify::{Kind, Verdict};
    let target: Target = target.parse()?;
    let kind = match target.kind {
        TargetKind::Deployment => Kind::Deployment,
        TargetKind::StatefulSet => Kind::StatefulSet,
        TargetKind::DaemonSet => Kind::DaemonSet,
        _ => anyhow::bail!(crashdoc_kube::KubeError::Target(
            "verify takes deploy/NAME, sts/NAME or ds/NAME".into()
        )),
    };
    let cluster = args.connect().await?;
    let (client, ns) = (cluster.client(), cluster.namespace());
    let collector = Collector::new(client.clone(), ns, args.options());
    let say = |m: &str| eprintln!("{m}");
    let opts = crashdoc_kube::verify::VerifyOptions {
        stable,
        timeout,
        poll: std::time::Duration::from_secs(2),
    };
    let v = crashdoc_kube::verify::verify(client, ns, kind, &target.name, opts, &say).await?;
    let (reason, failing) = match v.verdict {
        Verdict::Held { pods, waited } => {
            eprint!(
                "{}",
                held(
                    &format!("{}/{}", kind.short(), target.name),
                    pods,
                    stable,
                    waited,
                    &v.revisions
                )
            );
            if format == crate::Format::Json {
                println!(
                    "{}",
                    serde_json::json!({"schema": "crashdoc/v1", "verified": true, "pods": [],
                        "revisions": v.revisions.json()})
                );
            }
            return Ok(true);
        }
        Verdict::RolloutFailed { reason, failing } => {
            (format!("the rollout failed: {reason}"), failing)
        }
        Verdict::Unstable { reason, failing } => (format!("not stable: {reason}"), failing),
    };
    eprintln!("verify failed: {reason}");
    eprintln!("{}", v.revisions.line());
    if failing.is_empty() {
        return Ok(false);
    }
    let revisions = v.revisions.json();
    let c = collector.collect(failing).await;
    let report = diagnose::diagnose_all(&bundle::read_memory(&c.pods));
    if format == crate::Format::Json {
        let mut v = serde_json::to_value(&report)?;
        v["verified"] = serde_json::json!(false);
        v["reason"] = serde_json::json!(reason);
        v["revisions"] = revisions;
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        output(&report, format, std::io::stdout().is_terminal())?;
    }
    Ok(false)
}

/// `verify`'s lines on stderr when the rollout held.
fn held(
    target: &str,
    pods: usize,
    stable: std::time::Duration,
    waited: std::time::Duration,
    revisions: &crashdoc_kube::verify::Revisions,
) -> String {
    format!(
        "verified: {target} rolled out and its {pods} new pod(s) held for {}s ({}s in all)\n{}\n",
        stable.as_secs(),
        waited.as_secs(),
        revisions.line()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn verbose_collection_lines_give_each_wave_its_requests_and_time() {
        let c = crashdoc_kube::Collection {
            requests: 14,
            waves: 3,
            wave_times: vec![Duration::from_micros(12_340), Duration::from_millis(3)],
            wave_requests: vec![11, 2],
            ..Default::default()
        };
        let text = collected(&c, Duration::from_millis(20));
        assert_eq!(
            text,
            "collected 0 pod(s) with 14 API requests in 3 sequential waves in 20 ms
  resolve:    1 requests       4.7 ms
  wave 1:    11 requests      12.3 ms
  wave 2:     2 requests       3.0 ms
"
        );
        // Waves that took longer than the clock says (rounding) leave 0 ms.
        let text = collected(&c, Duration::from_millis(1));
        assert!(
            text.contains("resolve:    1 requests       0.0 ms"),
            "{text}"
        );
    }

    #[test]
    fn a_held_rollout_says_the_workload_its_pods_and_the_restarts_by_revision() {
        let r = crashdoc_kube::verify::Revisions {
            new_revision: "db-6c4f9d8b77".into(),
            new_pods: 3,
            new_restarts: 0,
            old_pods: 3,
            old_restarts: 41,
        };
        assert_eq!(
            held(
                "sts/db",
                3,
                Duration::from_secs(300),
                Duration::from_secs(412),
                &r
            ),
            "verified: sts/db rolled out and its 3 new pod(s) held for 300s (412s in all)
restarts: new revision db-6c4f9d8b77 (3 pods): 0; old revisions (3 pods seen): 41
"
        );
    }
}
