//! `crashdoc lint`: the thin CLI over crashdoc-lint (arguments, reading
//! files and standard input, output, exit codes).

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
    /// List every check and exit.
    #[arg(long)]
    list: bool,
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

fn hint(e: &anyhow::Error) -> &'static str {
    use crashdoc_lint::input::InputError as E;
    match e.chain().find_map(|c| c.downcast_ref::<E>()) {
        Some(e) => e.hint(),
        None => "see `crashdoc lint --help`",
    }
}

/// Run `crashdoc lint`; errors are reported here so that they exit 2 with a hint.
pub fn lint(a: LintArgs) -> anyhow::Result<ExitCode> {
    match run(a) {
        Ok(code) => Ok(code),
        Err(e) => {
            crate::report_error(&e);
            let _ = writeln!(
                anstream::stderr(),
                "{} {}",
                owo_colors::OwoColorize::cyan(&"hint:"),
                hint(&e)
            );
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
    if a.paths.is_empty() {
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
    let mut options = Options {
        capacity,
        require_digest: a.require_digest,
        ..Default::default()
    };
    if let Some(p) = &a.config {
        let text = std::fs::read_to_string(p)
            .with_context(|| format!("cannot read the config {}", p.display()))?;
        let c = Config::parse(&text).with_context(|| format!("config {}", p.display()))?;
        options = options
            .with_config(c)
            .with_context(|| format!("config {}", p.display()))?;
    }
    if let Some(old) = &a.against {
        options.against = Some(read(std::slice::from_ref(old), "the older render")?);
    }
    let input = if a.evidence {
        read_evidence(&a.paths)?
    } else {
        read(&a.paths, "manifests")?
    };
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
    let list: Vec<_> = crashdoc_lint::checks::ALL
        .iter()
        .filter(|c| c.cause == cause)
        .collect();
    if list.is_empty() {
        return String::new();
    }
    let mut s = String::from("\nLint checks that catch it before it ships (`crashdoc lint`):\n");
    for c in list {
        s.push_str(&format!("  {:48} {}\n", c.id, c.severity.word()));
    }
    s
}
