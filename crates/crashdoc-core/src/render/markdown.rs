use crate::diagnose::{PodReport, Report};
use std::fmt::Write;

/// The five-minute post-mortem note: what happened, timeline, cause,
/// evidence, fix, follow-ups.
pub fn markdown(report: &Report) -> String {
    let mut out = String::new();
    for pod in &report.pods {
        note(&mut out, pod);
    }
    out
}

fn note(out: &mut String, pod: &PodReport) {
    let name = match (&pod.namespace, &pod.name) {
        (Some(ns), Some(n)) => format!("{ns}/{n}"),
        (None, Some(n)) => n.clone(),
        _ => "pod".into(),
    };
    let Some(d) = pod.diagnoses.first() else {
        return;
    };
    let _ = writeln!(out, "# Post-mortem: {name} — {}\n", d.cause);
    let _ = writeln!(out, "## What happened\n");
    let owner = pod
        .owner
        .as_ref()
        .map(|o| format!(" (owned by {o})"))
        .unwrap_or_default();
    let container = d
        .container
        .as_ref()
        .map(|c| format!(", container `{c}`"))
        .unwrap_or_default();
    let restarts = if pod.restarts > 0 {
        format!(" It had restarted {} times.", pod.restarts)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "Pod `{name}`{owner}{container} was failing.{restarts} {}\n",
        d.summary
    );
    let _ = writeln!(out, "## Timeline\n");
    let mut any = false;
    for e in d.evidence.iter().filter(|e| {
        matches!(
            e.source,
            crate::model::SourceKind::Event | crate::model::SourceKind::Status
        )
    }) {
        let _ = writeln!(out, "- {} (`{}`)", e.text, e.reference);
        any = true;
    }
    for t in &pod.timeline {
        let stages: Vec<String> = t
            .stages
            .iter()
            .map(|m| match m.at_seconds {
                Some(s) => format!("{} at +{s}s", m.stage.describe()),
                None => m.stage.describe().to_string(),
            })
            .collect();
        let _ = writeln!(out, "- startup in `{}`: {}", t.log, stages.join(", "));
        any = true;
    }
    if !any {
        let _ = writeln!(out, "- no timestamps in the evidence");
    }
    let _ = writeln!(out, "\n## Cause\n");
    let _ = writeln!(
        out,
        "**{}** ({:?} confidence): {}\n",
        d.cause,
        d.confidence,
        crate::rules::rule(d.cause).map_or("", |r| r.doc.what)
    );
    for r in &d.reasoning {
        let _ = writeln!(out, "- {r}");
    }
    if let Some(ch) = &pod.changes {
        out.push('\n');
        super::changes::markdown(out, ch);
    }
    let _ = writeln!(out, "\n## Evidence\n");
    for e in &d.evidence {
        let loc = e
            .location
            .as_ref()
            .map(|l| format!(" ({l})"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "- `{}`{loc}: `{}`",
            e.reference,
            e.text.replace('`', "'")
        );
    }
    let _ = writeln!(out, "\n## Fix\n");
    for f in &d.fix {
        if f.contains('\n') {
            let (head, body) = f.split_once('\n').unwrap_or((f, ""));
            let _ = writeln!(out, "- {head}\n\n```yaml\n{body}\n```\n");
        } else {
            let _ = writeln!(out, "- {f}");
        }
    }
    let _ = writeln!(out, "\n## Follow-ups\n");
    for c in &d.commands {
        let _ = writeln!(out, "- [ ] `{c}`");
    }
    for m in &pod.missing {
        match &m.hint {
            Some(h) => {
                let _ = writeln!(out, "- [ ] collect {}: {} (hint: {h})", m.what, m.why);
            }
            None => {
                let _ = writeln!(out, "- [ ] collect {}: {}", m.what, m.why);
            }
        }
    }
    if pod.diagnoses.len() > 1 {
        let others: Vec<String> = pod.diagnoses[1..]
            .iter()
            .map(|d| format!("{} ({:?})", d.cause, d.confidence).to_lowercase())
            .collect();
        let _ = writeln!(out, "- [ ] rule out: {}", others.join(", "));
    }
    out.push('\n');
}
