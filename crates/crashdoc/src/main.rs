//! The crashdoc command line. Thin by design: the work is in crashdoc-core
//! (offline) and crashdoc-kube (the API server).

mod lint;
mod live;
mod mcp;
mod shell;
mod watch;

use anyhow::Context as _;
use clap::{Parser, Subcommand, ValueEnum};
use crashdoc_core::{Cause, diagnose, ingest, render};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// Why is this pod crash-looping? crashdoc reads the evidence (pod status,
/// previous logs, events, spec) and names the cause, ranked, with the lines
/// it rests on, the fix and the next commands. It never changes anything.
#[derive(Parser)]
#[command(
    name = "crashdoc",
    version,
    propagate_version = true,
    max_term_width = 100
)]
struct Cli {
    /// Print what was collected and how (requests, timings) on stderr.
    #[arg(short, long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Diagnose saved or pasted kubectl output, a cluster-info dump or a crashdoc bundle.
    #[command(long_about = ANALYZE_HELP)]
    Analyze(AnalyzeArgs),
    /// Diagnose a pod or a workload's failing pods live: NAME, pod/NAME, deploy/NAME, sts/NAME, ds/NAME, job/NAME.
    #[command(long_about = DIAGNOSE_HELP)]
    Diagnose {
        target: String,
        #[command(flatten)]
        cluster: live::ClusterArgs,
        /// Also keep the evidence as a bundle (a folder, or FILE.tar.gz).
        #[arg(long, value_name = "PATH")]
        save: Option<PathBuf>,
        #[arg(long, short = 'f', value_enum, default_value_t = Format::Text)]
        format: Format,
        #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
        color: ColorChoice,
    },
    /// Capture the evidence of a pod or workload as a bundle, before the next crash overwrites it.
    Capture {
        target: String,
        #[command(flatten)]
        cluster: live::ClusterArgs,
        /// Where to write: a folder, or FILE.tar.gz.
        #[arg(short = 'o', long, value_name = "DIR|FILE.tar.gz")]
        output: PathBuf,
    },
    /// Diagnose every unhealthy pod of a namespace (or all): one line per workload, saying why.
    Scan {
        #[command(flatten)]
        cluster: live::ClusterArgs,
        /// Every namespace.
        #[arg(short = 'A', long)]
        all_namespaces: bool,
        #[arg(long, short = 'f', value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Pods collected at once.
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
        /// `wide`: also each group's container and exit code (text output).
        #[arg(short = 'o', long, value_enum)]
        output: Option<live::ScanOutput>,
    },
    /// After a fix: wait for a Deployment's, StatefulSet's or DaemonSet's rollout, then watch its new pods for a stable window.
    #[command(long_about = VERIFY_HELP)]
    Verify {
        /// deploy/NAME, sts/NAME or ds/NAME
        target: String,
        #[command(flatten)]
        cluster: live::ClusterArgs,
        /// How long the new pods must run without a restart, termination or lost readiness (e.g. 5m, 90s).
        #[arg(long, default_value = "5m", value_parser = parse_duration)]
        stable: std::time::Duration,
        /// Give up on the rollout after this long.
        #[arg(long, default_value = "15m", value_parser = parse_duration)]
        timeout: std::time::Duration,
        #[arg(long, short = 'f', value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Follow pods and capture every container termination as it happens: history, metrics, webhooks.
    #[command(long_about = WATCH_HELP)]
    Watch(Box<watch::WatchArgs>),
    /// Show the restarts `watch` recorded for a pod or workload, and export any capture as a bundle.
    #[command(long_about = HISTORY_HELP)]
    History(watch::HistoryArgs),
    /// Find the crash loops a manifest will cause, before it ships: files, folders, `helm template ... | crashdoc lint -`.
    #[command(long_about = lint::LINT_HELP)]
    Lint(lint::LintArgs),
    /// Print the documentation of a cause's rule: what, why, evidence, example, fix, false positives.
    Explain {
        /// A cause id, e.g. oom-killed (see `crashdoc rules`), or a lint check id (see `crashdoc lint --list`).
        cause: String,
    },
    /// List the knowledge catalog: every message crashdoc recognises, the
    /// cause it supports, how strongly, and the source that prints it.
    #[command(long_about = CATALOG_HELP)]
    Catalog {
        /// Only the entries that support this cause (e.g. port-conflict).
        #[arg(long)]
        cause: Option<String>,
        /// Only the entries of this family (errno, cuda, databases, kubernetes-vocabulary, ...).
        #[arg(long)]
        family: Option<String>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// List every cause crashdoc can name, with its rule's summary.
    Rules {
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Serve the commands as MCP tools for assistants (stdio; streamable HTTP with --http ADDR).
    #[command(long_about = mcp::MCP_HELP)]
    Mcp(mcp::McpArgs),
    /// Print a shell completion script: `source <(crashdoc completions bash)`.
    Completions {
        #[arg(value_enum)]
        shell: shell::Shell,
    },
    /// Print the crashdoc(1) man page, or write one page per command into --dir.
    Man {
        /// Write crashdoc.1, crashdoc-diagnose.1, ... into this folder.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

const CATALOG_HELP: &str = "List the knowledge catalog.

Every message crashdoc recognises is an entry of its catalog: the pattern,
where it can stand (a log line, an event, a container state, a node
condition, any text), the cause it supports and how strongly (decisive,
strong, moderate, weak), what it means, and its source: the file in the
software that prints it. The Kubernetes vocabulary (every container and
event reason the kubelet, scheduler and controllers emit, each mapped to a
cause or marked `none`) is listed last.

Examples:
  crashdoc catalog --cause port-conflict
  crashdoc catalog --family cuda
  crashdoc catalog --format json | jq '.[] | select(.strength == \"decisive\") | .id'";

const ANALYZE_HELP: &str = "Diagnose evidence that is already on disk or in a paste.

PATH can be:
  a folder of kubectl outputs   describe-pod.txt, get-pods.txt, pod.yaml|json,
                                logs-previous[.CONTAINER].txt, logs[.CONTAINER].txt,
                                events.txt|json|yaml, describe-node.txt, node.yaml,
                                get-pvc.txt, configmap.yaml, secret.yaml (key names only),
                                deployment.yaml, replicaset.yaml, top-pod.txt, other.txt;
                                for \"what changed\": replicasets.json|yaml,
                                controllerrevisions.json|yaml, workload-pods.json|yaml,
                                nodes.json|yaml, rollout-history.txt (kubectl rollout
                                history KIND/NAME --revision=N, one or more)
  a cluster-info dump           the tree of `kubectl cluster-info dump --output-directory DIR`:
                                every unhealthy pod in it is analysed
  a crashdoc bundle             a folder with manifest.json, or a .tar.gz of one
  a single file                 read like a paste
  -                             a paste on standard input: several kubectl outputs, with or
                                without the `$ kubectl ...` lines between them

Examples:
  crashdoc analyze examples/vllm-oom
  kubectl describe pod web-1 | crashdoc analyze -
  crashdoc analyze ./evidence --format json | jq '.pods[0].diagnoses[0].cause'
  crashdoc analyze ./evidence --format markdown > postmortem.md

Exit status: 0 when the analysis ran (whatever it found), 2 for unusable input or arguments.";

const WATCH_HELP: &str = "Follow pods and capture every container termination as it happens.

The kubelet keeps only a container's last termination, and the next crash overwrites
its previous logs. `watch` follows the pods (one list, then a watch; re-listed after a
410 Gone or a lost connection) and, on every termination, once per (pod, container,
restart count):

  counts it       Prometheus counters on --listen: crashdoc_container_restarts_total by
                  namespace, owner, container, reason and exit code; captures and
                  diagnoses by cause; the watch's own health (/healthz, /readyz)
  captures it     previous and current logs, events, owner, node, volumes, ConfigMap and
                  Secret key names: the same evidence as `crashdoc capture`, read within
                  seconds, before the next crash overwrites it
  diagnoses it    with the same rules as `crashdoc analyze`
  keeps it        in the history database (--db; a single file, --retention and
                  --max-captures bound it): see `crashdoc history`
  tells you       --webhook URL (generic JSON or --webhook-format slack), at most one
                  message per workload per --notify-interval

Under a restart storm captures are bounded (--capture-concurrency, --queue): a
termination the queue cannot take is still counted and stored from the pod's status.
Stopped and started again on the same --db, it resumes without duplicates; terminations
it could not see individually count as reason=\"Unobserved\".

It only gets, lists and watches. With --leader-elect only the replica holding a Lease
watches, and that Lease is the only object crashdoc ever writes. deploy/ has the Helm
chart and manifests to run it in the cluster.

Examples:
  crashdoc watch -n llm
  crashdoc watch -A --webhook https://hooks.slack.com/services/... --webhook-format slack
  crashdoc watch -A --db /var/lib/crashdoc/history.redb --listen 0.0.0.0:9464 --leader-elect

Stop it with Ctrl-C (or SIGTERM): captures in flight are finished first.";

const HISTORY_HELP: &str = "Show the terminations `crashdoc watch` recorded, newest first.

TARGET is a pod (NAME, pod/NAME) or a workload (deploy/NAME, sts/NAME, ds/NAME, job/NAME;
pods of a Deployment's ReplicaSets count as the Deployment). Without one, every capture.
It reads the database only, no cluster access; it works while `watch` writes to it.

Examples:
  crashdoc history deploy/vllm -n llm
  crashdoc history --since 2h --format json | jq '.[] | {pod, reason, cause}'
  crashdoc history --export 42 -o crash.tar.gz && crashdoc analyze crash.tar.gz";

const DIAGNOSE_HELP: &str = "Diagnose live, against the cluster of the current kubeconfig context.

crashdoc reads the pod, its events (by uid), the current and previous logs of every
container (init containers and sidecars too), the owner chain, the node, the PVCs,
the ConfigMaps and Secrets it references (key names and sizes only), its
ServiceAccount, and the Services its logs fail to reach. All requests after the
first run in parallel. It only ever gets, lists and watches.

For a workload (deploy/NAME, sts/NAME, ...) its failing pods are diagnosed, newest
ReplicaSet first.

Examples:
  crashdoc diagnose vllm-7d9f-abcde -n llm
  crashdoc diagnose deploy/vllm -n llm --save evidence.tar.gz
  crashdoc diagnose job/train --context prod --format json

Least privilege works: when events, logs, secrets or nodes are forbidden the
diagnosis still comes and names what it could not read and the RBAC rule that
would let it. A source the API server has not begun to answer within --request-timeout
is named missing the same way; a 429 or 503 is retried after its Retry-After (at most
10 s). -v prints the requests and the time of each sequential wave on stderr.";

const VERIFY_HELP: &str =
    "Wait for a rollout as its controller reports it, then watch the restart counts,
readiness and terminations of the new pods for the stable window.

TARGET is deploy/NAME, sts/NAME or ds/NAME. The rollout is complete when kubectl's
`rollout status` would say so (a Deployment: every replica updated and available, no old
one left, or its progress deadline exceeded; a StatefulSet: every replica ready and the
replicas above the partition updated; a DaemonSet: every scheduled pod updated and
available). The new pods are the new ReplicaSet's, or those whose controller-revision-hash
is the new revision's. The result says the new revision's restarts against the old
revision's pods, as last seen. RollingUpdate only: an OnDelete StatefulSet or DaemonSet is
refused.

Exit status: 0 when the rollout completed and held; 1 when it did not (the failing pod is
diagnosed on stdout); 2 for unusable arguments or when the cluster cannot be read.
Fit for a CI/CD step:

  kubectl apply -f deploy.yaml && crashdoc verify deploy/vllm -n llm --stable 5m --timeout 15m";

fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    crashdoc_core::time::parse_duration(s)
}

#[derive(clap::Args)]
struct AnalyzeArgs {
    /// Folder, file, bundle (.tar.gz) or `-` for standard input.
    path: PathBuf,
    /// Output format.
    #[arg(long, short = 'f', value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Show every ranked cause in full, not only the first.
    #[arg(long)]
    all: bool,
    /// When to use colour (also off with NO_COLOR).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    color: ColorChoice,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum Format {
    Text,
    Json,
    Markdown,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum ColorChoice {
    Auto,
    Always,
    Never,
}

fn main() -> ExitCode {
    // `kubectl crashdoc` runs this binary as kubectl-crashdoc (shell.rs).
    let cli: Cli = shell::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            let _ = report_error(&e);
            ExitCode::from(2)
        }
    }
}

/// The errors that know what the user can do about them
/// ([`crashdoc_core::Hint`]), for [`report_error`]'s walk of the chain.
const HINTED: &[crashdoc_core::hint::Finder] = {
    use crashdoc_core::hint::finder;
    &[
        finder::<ingest::InputError>,
        finder::<crashdoc_core::causes::UnknownCause>,
        finder::<crashdoc_kube::KubeError>,
        finder::<crashdoc_history::HistoryError>,
        finder::<crashdoc_watch::WatchError>,
        finder::<crashdoc_lint::input::InputError>,
        finder::<crashdoc_mcp::ServeError>,
        finder::<crashdoc_mcp::UnknownTool>,
        finder::<crashdoc_mcp::jwt::JwksError>,
        finder::<watch::NoHistoryPlace>,
    ]
};

/// uv-style errors: `error:`, every cause, then every hint found in the
/// chain. Returns how many hints it printed.
fn report_error(e: &anyhow::Error) -> usize {
    use crashdoc_core::redact::mask_urls_in;
    let mut err = anstream::stderr();
    // A URL in any message (--db, --webhook, the kubeconfig's server, an
    // OIDC issuer, or one a library put in its error) is shown masked.
    let _ = writeln!(
        err,
        "{} {}",
        owo_colors::OwoColorize::red(&"error:"),
        mask_urls_in(&e.to_string())
    );
    for cause in e.chain().skip(1) {
        let _ = writeln!(err, "  Caused by: {}", mask_urls_in(&cause.to_string()));
    }
    let hints = crashdoc_core::hint::hints(e.chain(), HINTED);
    for h in &hints {
        let _ = writeln!(err, "{} {h}", owo_colors::OwoColorize::cyan(&"hint:"));
    }
    hints.len()
}

fn color_on(choice: ColorChoice) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let verbose = cli.verbose;
    match cli.command {
        Command::Analyze(a) => analyze(a),
        Command::Diagnose {
            target,
            cluster,
            save,
            format,
            color,
        } => {
            live::runtime()?.block_on(live::diagnose(
                cluster,
                target,
                save,
                format,
                color_on(color),
                verbose,
            ))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Capture {
            target,
            cluster,
            output,
        } => {
            live::runtime()?.block_on(live::capture(cluster, target, output, verbose))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Verify {
            target,
            cluster,
            stable,
            timeout,
            format,
        } => {
            let held = live::runtime()?
                .block_on(live::verify(cluster, target, stable, timeout, format))?;
            Ok(if held {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Scan {
            cluster,
            all_namespaces,
            format,
            concurrency,
            output,
        } => {
            live::runtime()?.block_on(live::scan(
                cluster,
                all_namespaces,
                format,
                concurrency,
                output == Some(live::ScanOutput::Wide),
                verbose,
            ))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Watch(a) => {
            watch::watch(*a, verbose)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::History(a) => {
            watch::history(a)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Lint(a) => lint::lint(a),
        Command::Explain { cause } => {
            if let Some(t) = lint::explain(&cause) {
                write!(anstream::stdout(), "{t}")?;
                return Ok(ExitCode::SUCCESS);
            }
            let c: Cause = cause.parse()?;
            write!(
                anstream::stdout(),
                "{}{}",
                crashdoc_core::render::knowledge::explain(c),
                lint::preventing(c)
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Catalog {
            cause,
            family,
            format,
        } => {
            let c: Option<Cause> = cause.as_deref().map(str::parse).transpose()?;
            let mut out = anstream::stdout();
            if format == Format::Json {
                let v = crashdoc_core::render::knowledge::entries(c, family.as_deref());
                writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
            } else {
                write!(
                    out,
                    "{}",
                    crashdoc_core::render::knowledge::catalog_text(c, family.as_deref())
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Completions { shell } => {
            shell::completions::<Cli>(shell)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir } => {
            shell::man::<Cli>(dir)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Mcp(a) => {
            mcp::mcp(a)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Rules { format } => {
            let mut out = anstream::stdout();
            if format == Format::Json {
                let v = crashdoc_core::render::knowledge::rules_json();
                writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
            } else {
                write!(out, "{}", crashdoc_core::render::knowledge::rules_text())?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn analyze(a: AnalyzeArgs) -> anyhow::Result<ExitCode> {
    let evidence = if a.path.as_os_str() == "-" {
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            eprintln!("reading a paste from standard input; end it with Ctrl-D");
        }
        ingest::read_paste(stdin.lock(), "stdin").context("cannot analyse standard input")?
    } else {
        ingest::read_path(&a.path)
            .with_context(|| format!("cannot analyse {}", a.path.display()))?
    };
    let report = diagnose::diagnose_all(&evidence);
    let mut out = anstream::stdout();
    match a.format {
        Format::Json => writeln!(out, "{}", render::json(&report))?,
        Format::Markdown => write!(out, "{}", render::markdown(&report))?,
        Format::Text => {
            let color = color_on(a.color);
            let text = render::terminal(&report, render::Style { color, all: a.all });
            // anstream strips colour when stdout is not a terminal; `always` writes it raw.
            if a.color == ColorChoice::Always {
                std::io::stdout().write_all(text.as_bytes())?;
            } else {
                write!(out, "{text}")?;
            }
            for n in &evidence.notes {
                if !report.pods.iter().any(|p| p.notes.contains(n)) {
                    eprintln!("note: {n}");
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
