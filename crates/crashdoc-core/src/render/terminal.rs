use crate::diagnose::{Confidence, Diagnosis, PodReport, Report};
use owo_colors::OwoColorize;
use std::fmt::Write;

/// Colour on or off (the CLI decides from the terminal and NO_COLOR).
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub color: bool,
    /// Show every ranked cause, not only the first three.
    pub all: bool,
}

impl Style {
    pub fn plain() -> Self {
        Style {
            color: false,
            all: false,
        }
    }
}

fn paint(s: &str, style: Style, f: impl Fn(&str) -> String) -> String {
    if style.color { f(s) } else { s.to_string() }
}

/// The readable report for a terminal.
pub fn terminal(report: &Report, style: Style) -> String {
    let mut out = String::new();
    for (i, pod) in report.pods.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        pod_block(&mut out, pod, style);
    }
    if report.pods.is_empty() {
        out.push_str("no pod to analyse\n");
    }
    out
}

fn pod_block(out: &mut String, pod: &PodReport, style: Style) {
    let name = match (&pod.namespace, &pod.name) {
        (Some(ns), Some(n)) => format!("{ns}/{n}"),
        (None, Some(n)) => n.clone(),
        _ => "(pod name not in the input)".into(),
    };
    let owner = pod
        .owner
        .as_ref()
        .map(|o| format!("  ({o})"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{}{}",
        paint(&format!("pod {name}"), style, |s| s.bold().to_string()),
        owner
    );
    let shown = if style.all {
        pod.diagnoses.len()
    } else {
        pod.diagnoses.len().min(3)
    };
    for (i, d) in pod.diagnoses.iter().take(shown).enumerate() {
        diagnosis_block(out, d, i == 0, style);
    }
    if pod.diagnoses.len() > shown {
        let rest: Vec<String> = pod.diagnoses[shown..]
            .iter()
            .map(|d| format!("{} ({:?})", d.cause, d.confidence).to_lowercase())
            .collect();
        let _ = writeln!(out, "  also considered: {}", rest.join(", "));
    }
    if let Some(ch) = &pod.changes {
        super::changes::terminal(out, ch);
    }
    for t in &pod.timeline {
        let stages: Vec<String> = t
            .stages
            .iter()
            .map(|m| match m.at_seconds {
                Some(s) => format!("{} @{}s", m.stage.describe(), s),
                None => m.stage.describe().to_string(),
            })
            .collect();
        let _ = writeln!(out, "  startup ({}): {}", t.log, stages.join(" -> "));
    }
    if !pod.missing.is_empty() {
        let _ = writeln!(
            out,
            "  {}",
            paint("missing evidence:", style, |s| s.yellow().to_string())
        );
        for m in &pod.missing {
            let _ = writeln!(out, "    - {}: {}", m.what, m.why);
            if let Some(h) = &m.hint {
                let _ = writeln!(out, "      hint: {h}");
            }
        }
    }
    for n in &pod.notes {
        let _ = writeln!(out, "  note: {n}");
    }
}

fn diagnosis_block(out: &mut String, d: &Diagnosis, first: bool, style: Style) {
    let conf = format!("{:?}", d.confidence).to_lowercase();
    let conf = paint(&conf, style, |s| match d.confidence {
        Confidence::High => s.green().to_string(),
        Confidence::Medium => s.yellow().to_string(),
        Confidence::Low => s.dimmed().to_string(),
    });
    let marker = if first { "cause" } else { "  or " };
    let cause = paint(d.cause.id(), style, |s| {
        if first {
            s.red().bold().to_string()
        } else {
            s.bold().to_string()
        }
    });
    let container = d
        .container
        .as_ref()
        .map(|c| format!(" in container {c}"))
        .unwrap_or_default();
    let _ = writeln!(out, "  {marker} {cause} ({conf}){container}");
    let _ = writeln!(out, "    {}", d.summary);
    if !first && !style.all {
        return;
    }
    let _ = writeln!(out, "    evidence:");
    for e in &d.evidence {
        let loc = e
            .location
            .as_ref()
            .map(|l| format!(" [{l}]"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "      {} {}{}",
            paint(&format!("{}:", e.reference), style, |s| s
                .cyan()
                .to_string()),
            e.text,
            loc
        );
    }
    for r in &d.reasoning {
        let _ = writeln!(out, "    why: {r}");
    }
    if !d.fix.is_empty() {
        let _ = writeln!(out, "    fix:");
        for f in &d.fix {
            let mut lines = f.lines();
            if let Some(l) = lines.next() {
                let _ = writeln!(out, "      - {l}");
            }
            for l in lines {
                let _ = writeln!(out, "        {l}");
            }
        }
    }
    if !d.commands.is_empty() {
        let _ = writeln!(out, "    next:");
        for c in &d.commands {
            let _ = writeln!(out, "      $ {}", paint(c, style, |s| s.bold().to_string()));
        }
    }
}
