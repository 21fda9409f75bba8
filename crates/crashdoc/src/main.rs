//! The crashdoc command line. Thin by design: the work is in crashdoc-core.

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
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Diagnose saved or pasted kubectl output, a cluster-info dump or a crashdoc bundle.
    #[command(long_about = ANALYZE_HELP)]
    Analyze(AnalyzeArgs),
    /// Print the documentation of a cause's rule: what, why, evidence, example, fix, false positives.
    Explain {
        /// A cause id, e.g. oom-killed (see `crashdoc rules`).
        cause: String,
    },
    /// List every cause crashdoc can name, with its rule's summary.
    Rules {
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

const ANALYZE_HELP: &str = "Diagnose evidence that is already on disk or in a paste.

PATH can be:
  a folder of kubectl outputs   describe-pod.txt, get-pods.txt, pod.yaml|json,
                                logs-previous[.CONTAINER].txt, logs[.CONTAINER].txt,
                                events.txt|json|yaml, describe-node.txt, node.yaml,
                                get-pvc.txt, configmap.yaml, secret.yaml (key names only),
                                deployment.yaml, replicaset.yaml, top-pod.txt, other.txt
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
enum Format {
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
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            report_error(&e);
            ExitCode::from(2)
        }
    }
}

/// uv-style errors: `error:`, the causes, then a hint.
fn report_error(e: &anyhow::Error) {
    let mut err = anstream::stderr();
    let _ = writeln!(
        err,
        "{} {e}",
        owo_colors::OwoColorize::red(&"error:")
    );
    for cause in e.chain().skip(1) {
        let _ = writeln!(err, "  Caused by: {cause}");
    }
    let hint = e.chain().find_map(|c| {
        let c = c.downcast_ref::<ingest::InputError>()?;
        Some(match c {
            ingest::InputError::NothingUsable { .. } => "name the files as kubectl outputs (see `crashdoc analyze --help`), or pipe a paste into `crashdoc analyze -`",
            ingest::InputError::Empty => "pipe kubectl output into it, e.g. `kubectl describe pod POD | crashdoc analyze -`",
            ingest::InputError::Binary => "crashdoc reads kubectl's text, YAML or JSON output; for a bundle pass the .tar.gz path itself",
            ingest::InputError::Io { .. } => "check the path exists and is readable",
            ingest::InputError::BadBundle(..) => "re-create the bundle with `crashdoc capture`, or analyse its pod folders directly",
        })
    });
    if let Some(h) = hint {
        let _ = writeln!(
            err,
            "{} {h}",
            owo_colors::OwoColorize::cyan(&"hint:")
        );
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Analyze(a) => analyze(a),
        Command::Explain { cause } => {
            let c: Cause = cause.parse()?;
            let mut out = anstream::stdout();
            match crashdoc_core::rules::rule(c) {
                Some(r) => {
                    writeln!(out, "{} — {}\n", c.id(), c.title())?;
                    for (h, t) in [
                        ("What it detects", r.doc.what),
                        ("Why it crash-loops", r.doc.why),
                        ("Evidence", r.doc.evidence),
                        ("Example", r.doc.example),
                        ("Fix", r.doc.fix),
                        ("Known false positives", r.doc.false_positives),
                    ] {
                        writeln!(out, "{h}:")?;
                        for l in t.lines() {
                            writeln!(out, "  {l}")?;
                        }
                        writeln!(out)?;
                    }
                    if !r.signatures.is_empty() {
                        writeln!(out, "Log signatures:")?;
                        for s in r.signatures {
                            writeln!(
                                out,
                                "  {:28} {}  (keywords: {})",
                                s.id,
                                s.meaning,
                                s.keywords.join(" | ")
                            )?;
                        }
                    }
                }
                None => writeln!(
                    out,
                    "unknown — the evidence supports no cause; the diagnosis lists what evidence is missing"
                )?,
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Rules { format } => {
            let mut out = anstream::stdout();
            if format == Format::Json {
                let v: Vec<serde_json::Value> = Cause::ALL
                    .iter()
                    .map(|c| serde_json::json!({"cause": c.id(), "title": c.title(), "signatures": crashdoc_core::rules::rule(*c).map_or(0, |r| r.signatures.len())}))
                    .collect();
                writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
            } else {
                for c in Cause::ALL {
                    writeln!(out, "{:24} {}", c.id(), c.title())?;
                }
                writeln!(
                    out,
                    "\n`crashdoc explain CAUSE` prints a rule's documentation."
                )?;
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
            let color = match a.color {
                ColorChoice::Always => true,
                ColorChoice::Never => false,
                ColorChoice::Auto => {
                    std::io::stdout().is_terminal()
                        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                }
            };
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
