//! What crashdoc knows, as text: a rule's documentation with the catalog
//! entries of its cause (`crashdoc explain`), and the whole catalog with the
//! source of every entry (`crashdoc catalog`).

use crate::catalog;
use crate::causes::Cause;
use crate::scan::{SigKind, Signature};
use serde::Serialize;
use std::fmt::Write;

/// One catalog entry, as listed (`crashdoc catalog --format json`).
#[derive(Debug, Serialize)]
pub struct EntryView {
    pub id: &'static str,
    pub family: &'static str,
    pub supports: String,
    pub strength: &'static str,
    #[serde(rename = "where")]
    pub places: Vec<&'static str>,
    pub keywords: &'static [&'static str],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regex: Option<&'static str>,
    pub meaning: &'static str,
    pub source: &'static str,
    pub test: &'static str,
}

fn supports(s: &Signature) -> String {
    match s.kind {
        SigKind::Cause(c) => c.id().to_string(),
        SigKind::Sigterm => "signal:sigterm".into(),
        SigKind::Exception => "signal:exception".into(),
        SigKind::Stage(st) => format!("stage:{}", st.describe()),
    }
}

pub fn entry_view(s: &'static Signature) -> EntryView {
    EntryView {
        id: s.id,
        family: s.family,
        supports: supports(s),
        strength: s.strength.id(),
        places: s.places.list().into_iter().map(|p| p.id()).collect(),
        keywords: s.keywords,
        regex: s.regex,
        meaning: s.meaning,
        source: s.source,
        test: s.test,
    }
}

/// The entries selected by a cause, a family or neither.
pub fn entries(cause: Option<Cause>, family: Option<&str>) -> Vec<EntryView> {
    catalog::signatures()
        .iter()
        .copied()
        .filter(|s| cause.is_none_or(|c| s.kind == SigKind::Cause(c)))
        .filter(|s| family.is_none_or(|f| s.family == f))
        .map(entry_view)
        .collect()
}

/// `crashdoc catalog`: every entry with its source, grouped by family.
pub fn catalog_text(cause: Option<Cause>, family: Option<&str>) -> String {
    let mut out = String::new();
    let list = entries(cause, family);
    let mut last = "";
    for e in &list {
        if e.family != last {
            let _ = writeln!(out, "\n## {}", e.family);
            last = e.family;
        }
        let _ = writeln!(
            out,
            "{:40} {:22} {:8}  {}\n    source: {}",
            e.id, e.supports, e.strength, e.meaning, e.source
        );
    }
    let v = catalog::vocabulary();
    if cause.is_none() && family.is_none_or(|f| f == "kubernetes-vocabulary") {
        let _ = writeln!(
            out,
            "\n## kubernetes-vocabulary (Kubernetes {}, {} names)",
            v.kubernetes,
            v.entries.len()
        );
        for e in &v.entries {
            let _ = writeln!(
                out,
                "{:18} {:34} {:22} {}\n    source: {}",
                e.kind.id(),
                e.name,
                e.cause,
                e.why,
                e.source
            );
        }
    }
    let classes: Vec<_> = crate::classes::all()
        .iter()
        .filter(|k| cause.is_none_or(|c| k.rules.contains(&c)))
        .collect();
    if family.is_none_or(|f| f == "classes") && !classes.is_empty() {
        let _ = writeln!(
            out,
            "\n## classes (messages the rules tell apart; they support no cause alone)"
        );
        for k in &classes {
            let rules: Vec<&str> = k.rules.iter().map(|c| c.id()).collect();
            let _ = writeln!(
                out,
                "{:40} {:22} {}\n    source: {}",
                k.id,
                rules.join(","),
                k.meaning,
                k.source
            );
        }
    }
    let _ = writeln!(out, "\n{} entries.", list.len());
    out
}

/// `crashdoc explain CAUSE`: the rule's documentation, the precedence it
/// declares, the catalog entries of its cause, the message classes its rule
/// reads and the Kubernetes reasons mapped to it, each with its source.
pub fn explain(c: Cause) -> String {
    let mut out = String::new();
    let Some(r) = crate::rules::rule(c) else {
        return "unknown — the evidence supports no cause; the diagnosis lists what evidence is missing, with the commands to get it\n".into();
    };
    let _ = writeln!(out, "{} — {}\n", c.id(), c.title());
    for (h, t) in r.doc.sections() {
        let _ = writeln!(out, "{h}:");
        for l in t.lines() {
            let _ = writeln!(out, "  {l}");
        }
        let _ = writeln!(out);
    }
    if !r.outranks.is_empty() {
        let _ = writeln!(out, "Outranks:");
        for o in r.outranks {
            let only = o
                .only
                .map(|b| format!("[only for its finding on {b}] "))
                .unwrap_or_default();
            let _ = writeln!(out, "  {:24} {only}{}", o.cause.id(), o.why);
        }
        let _ = writeln!(out);
    }
    let list = entries(Some(c), None);
    if !list.is_empty() {
        let _ = writeln!(out, "Catalog entries ({}):", list.len());
        for e in &list {
            let _ = writeln!(
                out,
                "  {:40} {:8} [{}] {}\n      source: {}",
                e.id,
                e.strength,
                e.places.join(","),
                e.meaning,
                e.source
            );
        }
        let _ = writeln!(out);
    }
    let classes: Vec<_> = crate::classes::for_cause(c).collect();
    if !classes.is_empty() {
        let _ = writeln!(
            out,
            "Messages the rule tells apart (message classes, catalog/classes.yaml):"
        );
        for k in classes {
            let _ = writeln!(
                out,
                "  {:40} [{}] {}\n      source: {}",
                k.id,
                k.places
                    .list()
                    .iter()
                    .map(|p| p.id())
                    .collect::<Vec<_>>()
                    .join(","),
                k.meaning,
                k.source
            );
        }
        let _ = writeln!(out);
    }
    let reasons: Vec<_> = catalog::vocabulary()
        .entries
        .iter()
        .filter(|e| e.supports().is_some_and(|(x, _)| x == c))
        .collect();
    if !reasons.is_empty() {
        let _ = writeln!(
            out,
            "Kubernetes reasons (Kubernetes {}):",
            catalog::vocabulary().kubernetes
        );
        for e in reasons {
            let _ = writeln!(
                out,
                "  {:18} {:34} {}\n      source: {}",
                e.kind.id(),
                e.name,
                e.why,
                e.source
            );
        }
    }
    out
}

/// `crashdoc rules`: every cause and its title, then how to read a rule.
pub fn rules_text() -> String {
    let mut out = String::new();
    for c in Cause::ALL {
        let _ = writeln!(out, "{:24} {}", c.id(), c.title());
    }
    out.push_str("\n`crashdoc explain CAUSE` prints a rule's documentation.\n");
    out
}

/// `crashdoc rules --format json`: each cause, its title and how many
/// catalog entries support it.
pub fn rules_json() -> Vec<serde_json::Value> {
    Cause::ALL
        .iter()
        .map(|c| {
            serde_json::json!({"cause": c.id(), "title": c.title(),
                "catalog_entries": catalog::for_cause(*c).count()})
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explain_shows_entries_with_sources() {
        let t = explain(Cause::PortConflict);
        assert!(t.contains("Catalog entries"), "{t}");
        assert!(t.contains("source: "), "{t}");
    }

    #[test]
    fn explain_shows_the_message_classes_a_rule_reads() {
        let t = explain(Cause::ProbeKill);
        assert!(t.contains("Messages the rule tells apart"), "{t}");
        assert!(t.contains("probe.http-404"), "{t}");
        // A rule that reads none shows no such section.
        assert!(!explain(Cause::PortConflict).contains("Messages the rule tells apart"));
    }

    #[test]
    fn the_listing_names_every_entry() {
        let t = catalog_text(None, None);
        for k in crate::classes::all() {
            assert!(t.contains(&k.id), "{} is not listed", k.id);
        }
        for s in catalog::signatures() {
            assert!(t.contains(s.id), "{} not listed", s.id);
        }
    }

    #[test]
    fn rules_list_every_cause_once_with_its_entries() {
        let t = rules_text();
        for c in Cause::ALL {
            let line = format!("{:24} {}", c.id(), c.title());
            assert_eq!(t.lines().filter(|l| *l == line).count(), 1, "{line}");
        }
        let j = rules_json();
        assert_eq!(j.len(), Cause::ALL.len());
        let port = j
            .iter()
            .find(|v| v["cause"] == Cause::PortConflict.id())
            .unwrap();
        assert_eq!(
            port["catalog_entries"],
            catalog::for_cause(Cause::PortConflict).count()
        );
    }
}
