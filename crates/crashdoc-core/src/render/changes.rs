//! The "What changed" section (issue 11) of the terminal and Markdown
//! reports: the revisions compared and when each rolled out, the template,
//! config and node differences, the first crash, the timeline and the verdict.

use crate::changes::analysis::{ChangesReport, RevisionRef, Verdict, change_sentence};
use std::fmt::Write;

fn revision(r: &RevisionRef) -> String {
    let n = r.words();
    let name = if r.number.is_some() {
        format!("{}, ", r.name)
    } else {
        String::new()
    };
    let when = r
        .rolled_out
        .as_deref()
        .map(|t| format!("rolled out {t}"))
        .unwrap_or_else(|| "rollout time unknown".into());
    let basis = match r.basis {
        Some("ran-healthy") => "; its pods ran healthy",
        Some("still-ready") => "; its ReplicaSet still has ready pods",
        Some("previous") => "; the revision before, its health not observed",
        _ => "",
    };
    format!("{n} ({name}{when}{basis})")
}

/// The comparison in one line: `revision 3 (...) against the last healthy revision 2 (...)`.
pub fn headline(ch: &ChangesReport) -> String {
    let f = revision(&ch.revisions.failing);
    match &ch.revisions.last_healthy {
        Some(h) => format!("{f} against the last healthy {}", revision(h)),
        None => format!("{f}; no earlier healthy revision in the input"),
    }
}

/// The verdict as a sentence.
pub fn verdict(ch: &ChangesReport) -> String {
    let since = ch.last_healthy_words();
    match ch.verdict {
        Verdict::Coincides => format!(
            "coincides with the first crash: {}",
            ch.coinciding.join("; ")
        ),
        Verdict::NothingExplains => format!("no change since {since} explains it"),
        Verdict::NoComparison => "nothing to compare the failing revision with".into(),
    }
}

/// Lines shared by both renderers: (label, text).
fn facts(ch: &ChangesReport) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let since_known = ch
        .revisions
        .last_healthy
        .as_ref()
        .is_some_and(|h| h.rolled_out.is_some());
    for c in &ch.template {
        let label = if c.relevant {
            "template"
        } else {
            "template (cosmetic)"
        };
        out.push((label, change_sentence(c)));
    }
    for c in &ch.config {
        let mut s = format!(
            "{} {} changed {}",
            c.kind,
            c.name,
            c.changed.as_deref().unwrap_or("(time unknown)")
        );
        match c.relation {
            "before-first-crash" if c.in_window => {
                s.push_str(" (after the healthy rollout, before the first crash)")
            }
            "before-first-crash" if since_known => {
                s.push_str(" (before the last healthy revision rolled out)")
            }
            "before-first-crash" => s.push_str(" (before the first crash)"),
            "after-first-crash" => s.push_str(" (after the first crash)"),
            _ => {}
        }
        if c.exists == Some(false) {
            s.push_str("; it does not exist");
        }
        if !c.missing_keys.is_empty() {
            s.push_str(&format!(
                "; missing referenced key(s): {}",
                c.missing_keys.join(", ")
            ));
        }
        out.push(("config", s));
    }
    for n in &ch.nodes {
        let all = if n.shared_by_all_failing {
            " (every crashing pod)"
        } else {
            ""
        };
        out.push((
            "nodes",
            format!(
                "{}: crashing on {}{all}; healthy on {}",
                n.attribute,
                n.failing.join(", "),
                n.healthy.join(", ")
            ),
        ));
    }
    if let Some(f) = &ch.first_crash {
        let node = f.on_node();
        let when = f.qualifier();
        out.push((
            "first crash",
            format!("{when}{}, pod {}{node}", f.at, f.pod),
        ));
    }
    out
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The terminal section, indented under the pod.
pub fn terminal(out: &mut String, ch: &ChangesReport) {
    let _ = writeln!(out, "  what changed: {}", headline(ch));
    for (label, text) in facts(ch) {
        let _ = writeln!(out, "    {label}: {text}");
    }
    if !ch.timeline.is_empty() {
        let _ = writeln!(out, "    timeline:");
        for e in &ch.timeline {
            let _ = writeln!(out, "      {}  {}", e.at, e.what);
        }
    }
    let _ = writeln!(out, "    verdict: {}", verdict(ch));
    if let Some(u) = &ch.undo {
        let _ = writeln!(out, "    rollback option: $ {u}");
    }
}

/// The Markdown section.
pub fn markdown(out: &mut String, ch: &ChangesReport) {
    let _ = writeln!(out, "## What changed\n");
    let _ = writeln!(out, "{}.\n", capitalized(&headline(ch)));
    for (label, text) in facts(ch) {
        let _ = writeln!(out, "- {label}: `{}`", text.replace('`', "'"));
    }
    if !ch.timeline.is_empty() {
        let _ = writeln!(out, "\n| when | what | source |\n|---|---|---|");
        for e in &ch.timeline {
            let _ = writeln!(
                out,
                "| {} | {} | `{}` |",
                e.at,
                e.what.replace('|', "/"),
                e.cite.reference.replace('|', "/")
            );
        }
    }
    let _ = writeln!(out, "\n**Verdict:** {}.", verdict(ch));
    if let Some(u) = &ch.undo {
        let _ = writeln!(out, "\nRollback option: `{u}`");
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnose::diagnose_all;
    use crate::render::{Style, markdown, terminal};

    fn report(case: &str) -> crate::Report {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/rollout")
            .join(case);
        let mut r = diagnose_all(&crate::read_path(&dir).unwrap());
        r.pods
            .retain(|p| p.name.as_deref() == Some("web-7d9c6b5f8-x2k4p"));
        r
    }

    #[test]
    fn what_changed_snapshots() {
        let r = report("image");
        insta::assert_snapshot!("what_changed_terminal", terminal(&r, Style::plain()));
        insta::assert_snapshot!("what_changed_markdown", markdown(&r));
    }

    #[test]
    fn nothing_explains_is_said_and_offers_no_rollback() {
        let r = report("cosmetic");
        let t = terminal(&r, Style::plain());
        assert!(
            t.contains("    verdict: no change since revision 2 explains it\n"),
            "{t}"
        );
        assert!(
            t.contains("template (cosmetic): metadata.annotations"),
            "{t}"
        );
        assert!(!t.contains("rollout undo"), "{t}");
        let m = markdown(&r);
        assert!(
            m.contains("**Verdict:** no change since revision 2 explains it."),
            "{m}"
        );
        assert!(!m.contains("rollout undo"), "{m}");
    }

    #[test]
    fn no_section_without_revisions() {
        let paste = "Name: web-1\nContainers:\n  web:\n    Image: web:1\n    Last State: Terminated\n      Exit Code: 1\n";
        let r = diagnose_all(&crate::read_paste(paste.as_bytes(), "paste").unwrap());
        assert!(!terminal(&r, Style::plain()).contains("what changed"));
        assert!(!markdown(&r).contains("## What changed"));
    }
}
