//! `crashdoc lint`: the thin CLI over crashdoc-lint (arguments, reading
//! files and standard input, output, exit codes).

mod history;

use anyhow::Context as _;
use crashdoc_lint::checks::Severity;
use crashdoc_lint::{Capacity, Config, Options, input::Input, output};
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

pub const LINT_HELP: &str = "Find the crash loops a manifest will cause, before it ships.

Reads manifests: files, folders (every .yaml, .yml and .json under them),
multi-document YAML, JSON, List objects, or `-` for standard input (the output
of `helm template` or `kustomize build`). Each finding cites the file and line,
the check, the cause it leads to (as `crashdoc rules` names them) and the fix
as YAML with numbers. `crashdoc explain CHECK-ID` tells why; `--list` lists
every check.

Examples:
  helm template my-release ./chart | crashdoc lint -
  crashdoc lint k8s/ --fail-on warning
  crashdoc lint --against old-render.yaml new-render.yaml
  crashdoc lint deploy.yaml --capacity gpu=8 --format sarif > lint.sarif
  crashdoc lint --live -n llm --history ~/.local/state/crashdoc/history.redb

With --live and no --capacity, the rollout checks use the nodes' allocatable
nvidia.com/gpu and memory (a list of nodes); the output says which capacity
was used.

Suppress a check on one object with the annotation
`crashdoc.io/ignore: check-id[,check-id]`, or for a run with --config FILE
(`ignore: [check-id, check-id:Kind/name]`, `require-digest: true`,
`capacity: {gpu: 8, memory: 512Gi}`).

Exit status: 0 when no finding reaches --fail-on, 1 when one does, 2 for
unusable input or arguments.";

#[derive(Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub enum LintFormat {
    Text,
    Json,
    Sarif,
}

#[derive(Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub enum FailOn {
    Error,
    Warning,
    Never,
}

#[derive(clap::Args)]
pub struct LintArgs {
    /// Manifest files or folders; `-` reads standard input.
    #[arg(value_name = "PATH|-")]
    paths: Vec<PathBuf>,
    #[arg(long, short = 'f', value_enum, default_value_t = LintFormat::Text)]
    format: LintFormat,
    /// Exit 1 when a finding is at least this severe.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    fail_on: FailOn,
    /// A config file: ignore, require-digest, capacity.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// What the cluster holds, for the rollout checks: gpu=8, memory=512Gi (repeat or comma-separate).
    #[arg(long, value_name = "RESOURCE=AMOUNT")]
    capacity: Vec<String>,
    /// Compare with an older render (a file, folder or `-`): removed keys still referenced, changed images and probes, removed volumes.
    #[arg(long, value_name = "OLD")]
    against: Option<PathBuf>,
    /// Images must be referenced by digest (image/no-digest).
    #[arg(long)]
    require_digest: bool,
    /// PATHs are evidence as `crashdoc analyze` reads it (kubectl describe/get output, a
    /// bundle, a paste): lint the pod specs it shows.
    #[arg(long)]
    evidence: bool,
    /// The history database `crashdoc watch` writes: the longest startup its captures
    /// measured for each workload is compared with the probes' budget.
    #[arg(long, value_name = "PATH")]
    history: Option<PathBuf>,
    /// Lint the cluster's workloads instead (get and list only; Secrets: key names only).
    /// The first PATH, if any, is a TARGET: deploy/NAME, sts/NAME, ds/NAME, job/NAME, cronjob/NAME, pod/NAME.
    #[arg(long)]
    live: bool,
    /// With --live: every namespace.
    #[arg(short = 'A', long, requires = "live")]
    all_namespaces: bool,
    /// With --live: namespace (default: the context's).
    #[arg(short = 'n', long, requires = "live")]
    namespace: Option<String>,
    /// With --live: the kubeconfig context.
    #[arg(long, requires = "live")]
    context: Option<String>,
    /// With --live: the kubeconfig file (default: KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long, requires = "live")]
    kubeconfig: Option<PathBuf>,
    /// List every check and exit.
    #[arg(long)]
    list: bool,
}

/// `--live`: the workloads, ConfigMaps and Secrets (key names only) of the
/// namespace (or all), listed by crashdoc_kube::manifests.
async fn read_live(a: &LintArgs, want_nodes: bool) -> anyhow::Result<(Input, Option<Capacity>)> {
    let cluster = crashdoc_kube::Cluster::connect(
        a.kubeconfig.as_deref(),
        a.context.as_deref(),
        a.namespace.as_deref(),
        Some(crashdoc_kube::REQUEST_TIMEOUT),
    )
    .await?;
    let ns = cluster.namespace().to_string();
    let target = a.paths.first().map(|p| p.display().to_string());
    let (tkind, tname) = match target.as_deref().and_then(|t| t.split_once('/')) {
        Some((k, n)) => {
            let kind = match k {
                "deploy" | "deployment" | "deployments" => "Deployment",
                "sts" | "statefulset" | "statefulsets" => "StatefulSet",
                "ds" | "daemonset" | "daemonsets" => "DaemonSet",
                "job" | "jobs" => "Job",
                "cronjob" | "cronjobs" | "cj" => "CronJob",
                "pod" | "pods" | "po" => "Pod",
                other => anyhow::bail!(
                    "`{other}/{n}` is not a workload TARGET (deploy/NAME, sts/NAME, ds/NAME, job/NAME, cronjob/NAME, pod/NAME)"
                ),
            };
            (Some(kind), Some(n.to_string()))
        }
        None if target.is_some() => (Some("Pod"), target.clone()),
        None => (None, None),
    };
    let listed = crashdoc_kube::manifests::list(
        cluster.client(),
        (!a.all_namespaces).then_some(ns.as_str()),
        want_nodes,
    )
    .await?;
    let mut input = Input::default();
    for (kind, mut v) in listed.objects {
        let name = v
            .pointer("/metadata/name")
            .and_then(|n| n.as_str())
            .unwrap_or("")
            .to_string();
        let ns = v
            .pointer("/metadata/namespace")
            .and_then(|n| n.as_str())
            .unwrap_or("")
            .to_string();
        if let (Some(k), Some(n)) = (tkind, &tname)
            && !matches!(kind, "ConfigMap" | "Secret" | "PersistentVolumeClaim")
            && (k != kind || n != &name)
        {
            continue;
        }
        v["kind"] = kind.into();
        input.add_object_value(&format!("live:{ns}/{kind}/{name}"), v);
    }
    if let Some(e) = &listed.pvcs_error {
        let _ = writeln!(
            anstream::stderr(),
            "note: cannot list persistentvolumeclaims ({e}): model caches on claims are not sized"
        );
    }
    // Rollout capacity from the nodes' allocatable; without it the rollout
    // checks do not run, which is said rather than failing the lint.
    let capacity = match listed.nodes {
        None => None,
        Some(Ok(nodes)) => Some(Capacity::from_nodes(&nodes)),
        Some(Err(e)) => {
            let _ = writeln!(
                anstream::stderr(),
                "note: cannot list nodes ({e}): the rollout capacity checks need --capacity gpu=N,memory=Q"
            );
            None
        }
    };
    if input.objects.is_empty() {
        anyhow::bail!(crashdoc_lint::input::InputError::NoObjects(format!(
            "the cluster{}",
            if a.all_namespaces {
                String::new()
            } else {
                format!(" (namespace {ns})")
            }
        )));
    }
    Ok((input, capacity))
}

/// The pod specs that evidence shows, as manifests.
fn read_evidence(paths: &[PathBuf]) -> anyhow::Result<Input> {
    let mut input = Input::default();
    for p in paths {
        let (ev, name) = if p.as_os_str() == "-" {
            let ev = crashdoc_core::ingest::read_paste(std::io::stdin().lock(), "stdin")
                .context("cannot read evidence from standard input")?;
            (ev, "stdin".to_string())
        } else {
            let ev = crashdoc_core::ingest::read_path(p)
                .with_context(|| format!("cannot read evidence from {}", p.display()))?;
            (ev, p.display().to_string())
        };
        input.files += 1;
        for pod in &ev.pods {
            input.add_object_value(&name, crashdoc_lint::evidence::manifest(pod));
            for o in crashdoc_lint::evidence::config_objects(pod) {
                input.add_object_value(&name, o);
            }
        }
    }
    Ok(input)
}

fn read(paths: &[PathBuf], what: &str) -> anyhow::Result<Input> {
    let mut input = Input::default();
    for p in paths {
        if p.as_os_str() == "-" {
            let stdin = std::io::stdin();
            if stdin.is_terminal() {
                eprintln!("reading manifests from standard input; end with Ctrl-D");
            }
            let mut buf = Vec::new();
            stdin
                .lock()
                .read_to_end(&mut buf)
                .context("cannot read standard input")?;
            input
                .read_bytes("stdin", &buf)
                .with_context(|| format!("cannot lint {what} from standard input"))?;
        } else {
            input
                .read_path(p)
                .with_context(|| format!("cannot lint {}", p.display()))?;
        }
    }
    if input.objects.is_empty() {
        anyhow::bail!(crashdoc_lint::input::InputError::NoObjects(
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    Ok(input)
}

/// Run `crashdoc lint`; errors are reported here so that they exit 2 with a hint.
pub fn lint(a: LintArgs) -> anyhow::Result<ExitCode> {
    match run(a) {
        Ok(code) => Ok(code),
        Err(e) => {
            if crate::report_error(&e) == 0 {
                let _ = writeln!(
                    anstream::stderr(),
                    "{} see `crashdoc lint --help`",
                    owo_colors::OwoColorize::cyan(&"hint:"),
                );
            }
            Ok(ExitCode::from(2))
        }
    }
}

fn run(a: LintArgs) -> anyhow::Result<ExitCode> {
    let mut out = anstream::stdout();
    if a.list {
        write!(out, "{}", output::list())?;
        return Ok(ExitCode::SUCCESS);
    }
    if a.paths.is_empty() && !a.live {
        anyhow::bail!(crashdoc_lint::input::InputError::NoObjects(
            "no PATH given (use `-` for standard input)".into()
        ));
    }
    let mut capacity = Capacity::default();
    for c in &a.capacity {
        capacity
            .parse_into(c)
            .map_err(|e| anyhow::anyhow!("--capacity {c}: {e}"))?;
    }
    if !a.capacity.is_empty() {
        capacity.source = Some("--capacity".into());
    }
    let mut options = Options {
        capacity,
        require_digest: a.require_digest,
        ..Default::default()
    };
    if let Some(p) = &a.config {
        let text = std::fs::read_to_string(p)
            .with_context(|| format!("cannot read the config {}", p.display()))?;
        let c = Config::parse(&text).with_context(|| format!("config {}", p.display()))?;
        let flags = options.capacity.clone();
        options = options
            .with_config(c)
            .with_context(|| format!("config {}", p.display()))?;
        if options.capacity != flags {
            options.capacity.source = Some(match flags.source {
                Some(_) => format!("--capacity and the config {}", p.display()),
                None => format!("the config {}", p.display()),
            });
        }
    }
    if let Some(old) = &a.against {
        options.against = Some(read(std::slice::from_ref(old), "the older render")?);
    }
    let mut input = if a.live {
        let no_capacity = options.capacity.gpu.is_none() && options.capacity.memory.is_none();
        let (input, nodes) = crate::live::runtime()?.block_on(read_live(&a, no_capacity))?;
        if let Some(c) = nodes {
            options.capacity = c;
        }
        input
    } else if a.evidence {
        read_evidence(&a.paths)?
    } else {
        read(&a.paths, "manifests")?
    };
    if let Some(p) = &a.history {
        let (measured, _) = history::startups(p)?;
        crashdoc_lint::apply_startups(&mut input, &measured);
    }
    let report = crashdoc_lint::lint(&input, &options);
    match a.format {
        LintFormat::Text => write!(out, "{}", output::text(&report))?,
        LintFormat::Json => writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&output::json(&report))?
        )?,
        LintFormat::Sarif => writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&output::sarif(&report, env!("CARGO_PKG_VERSION")))?
        )?,
    }
    let fail = match a.fail_on {
        FailOn::Error => report.fails(Severity::Error),
        FailOn::Warning => report.fails(Severity::Warning),
        FailOn::Never => false,
    };
    Ok(if fail {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `crashdoc explain CHECK-ID`, when the id is a lint check's.
pub fn explain(id: &str) -> Option<String> {
    crashdoc_lint::check(id).map(output::explain)
}

/// The lint checks that prevent a cause, appended to `crashdoc explain CAUSE`.
pub fn preventing(cause: crashdoc_core::Cause) -> String {
    output::preventing(cause)
}
