//! Message classes: the kinds of message a rule tells apart once its cause
//! is known (which probe failed and how, what an eviction names, what a
//! start error is about), declared as data in `catalog/classes.yaml` with
//! the source that prints each one, a test line and near misses.
//!
//! A rule asks [`is`]`(ID, text)`; the same call takes a catalog entry's id,
//! so a rule never spells a message pattern in its body. `crashdoc explain
//! CAUSE` lists the classes a rule reads ([`for_cause`]). The tests hold
//! every class to its test line and near misses, and check that every id a
//! rule names exists and every class is read by some rule.

use crate::catalog::{Place, Places};
use crate::causes::Cause;
use regex::Regex;
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::LazyLock;

/// Matches nothing: the regex of a class (or a scanner entry) whose own
/// does not compile; the tests rule that out.
pub(crate) static NEVER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[^\s\S]").expect("static regex"));

const FILE: (&str, &str) = (
    "classes.yaml",
    include_str!(concat!(env!("OUT_DIR"), "/catalog/classes.json")),
);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[allow(dead_code)] // read for the file's shape, like the catalog's
    family: String,
    classes: Vec<RawClass>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClass {
    id: String,
    rules: Vec<String>,
    #[serde(rename = "where")]
    places: Vec<Place>,
    keywords: Vec<String>,
    #[serde(default)]
    regex: Option<String>,
    meaning: String,
    source: String,
    test: String,
    #[serde(default)]
    near_miss: Vec<String>,
}

/// One message class.
#[derive(Debug)]
pub struct Class {
    pub id: String,
    /// The causes whose rules read it.
    pub rules: Vec<Cause>,
    pub places: Places,
    /// Any of them, ASCII case-insensitive (stored lowercase).
    pub keywords: Vec<String>,
    pub regex_text: Option<String>,
    regex: Option<Regex>,
    pub meaning: String,
    pub source: String,
    pub test: String,
    pub near_miss: Vec<String>,
}

impl Class {
    /// Whether `text` is a message of this class.
    pub fn matches(&self, text: &str) -> bool {
        let lower = text.to_ascii_lowercase();
        self.keywords.iter().any(|k| lower.contains(k.as_str()))
            && self.regex.as_ref().is_none_or(|r| r.is_match(text))
    }
}

struct Loaded {
    classes: Vec<Class>,
    by_id: HashMap<String, usize>,
    problems: Vec<String>,
}

fn load() -> Loaded {
    let mut problems = Vec::new();
    let raw: RawFile = match serde_json::from_str(FILE.1) {
        Ok(r) => r,
        Err(e) => {
            problems.push(format!("{}: not a classes file: {e}", FILE.0));
            RawFile {
                family: String::new(),
                classes: Vec::new(),
            }
        }
    };
    let mut classes = Vec::new();
    for c in raw.classes {
        let mut bad = |what: String| problems.push(format!("{}: {}: {what}", FILE.0, c.id));
        let mut rules = Vec::new();
        for r in &c.rules {
            match r.parse::<Cause>() {
                Ok(cause) => rules.push(cause),
                Err(_) => bad(format!("unknown cause {r:?} in `rules`")),
            }
        }
        if c.keywords.iter().any(|k| k.trim().len() < 3) || c.keywords.is_empty() {
            bad("every class needs keywords of at least 3 characters".into());
        }
        let regex = match c.regex.as_deref().map(Regex::new) {
            Some(Ok(r)) => Some(r),
            Some(Err(e)) => {
                bad(format!("regex does not compile: {e}"));
                // A class whose regex is broken matches nothing.
                Some(NEVER.clone())
            }
            None => None,
        };
        classes.push(Class {
            rules,
            places: Places::of(&c.places),
            keywords: c.keywords.iter().map(|k| k.to_ascii_lowercase()).collect(),
            regex_text: c.regex,
            regex,
            id: c.id,
            meaning: c.meaning,
            source: c.source,
            test: c.test,
            near_miss: c.near_miss,
        });
    }
    let mut by_id = HashMap::new();
    for (i, c) in classes.iter().enumerate() {
        if by_id.insert(c.id.clone(), i).is_some() {
            problems.push(format!("{}: {}: duplicate id", FILE.0, c.id));
        }
    }
    Loaded {
        classes,
        by_id,
        problems,
    }
}

static LOADED: LazyLock<Loaded> = LazyLock::new(load);

/// Every class.
pub fn all() -> &'static [Class] {
    &LOADED.classes
}

/// The classes a cause's rule reads.
pub fn for_cause(cause: Cause) -> impl Iterator<Item = &'static Class> {
    all().iter().filter(move |c| c.rules.contains(&cause))
}

/// Whether `text` is a message of class `id`, or matches the catalog entry
/// `id`. An id that is neither matches nothing (the tests rule that out).
pub fn is(id: &str, text: &str) -> bool {
    if let Some(&i) = LOADED.by_id.get(id) {
        return LOADED.classes[i].matches(text);
    }
    debug_assert!(
        crate::catalog::signatures().iter().any(|s| s.id == id),
        "no message class or catalog entry {id:?}"
    );
    crate::scan::Catalog::global()
        .classify(text)
        .iter()
        .any(|s| s.id == id)
}

/// The first of `ids` (message classes) that `text` is a message of.
pub fn which(ids: &[&str], text: &str) -> Option<&'static Class> {
    ids.iter().find_map(|id| {
        let &i = LOADED.by_id.get(*id)?;
        let c = &LOADED.classes[i];
        c.matches(text).then_some(c)
    })
}

/// Problems with the data (the test suite fails on any).
pub fn check() -> Vec<String> {
    let mut out = LOADED.problems.clone();
    for c in all() {
        if !c.matches(&c.test) {
            out.push(format!("{}: its test line does not match", c.id));
        }
        for n in &c.near_miss {
            if c.matches(n) {
                out.push(format!("{}: near miss {n:?} matches", c.id));
            }
        }
        if c.source.trim().is_empty() || c.meaning.trim().is_empty() {
            out.push(format!("{}: no source or meaning", c.id));
        }
        if c.rules.is_empty() {
            out.push(format!("{}: read by no rule (`rules`)", c.id));
        }
        if crate::catalog::signatures().iter().any(|s| s.id == c.id) {
            out.push(format!("{}: also a catalog entry's id", c.id));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rules' sources, where `classes::is("ID", ...)`,
    /// `support.log_has("ID")` and `classes::which(&["ID", ...], ...)`
    /// calls stand.
    const RULE_SOURCES: &[(&str, &str)] = &[
        ("rules/mod.rs", include_str!("rules/mod.rs")),
        ("rules/facts.rs", include_str!("rules/facts.rs")),
        ("rules/candidates.rs", include_str!("rules/candidates.rs")),
        ("rules/config.rs", include_str!("rules/config.rs")),
        ("rules/gpu.rs", include_str!("rules/gpu.rs")),
        ("rules/logs.rs", include_str!("rules/logs.rs")),
        ("rules/placement.rs", include_str!("rules/placement.rs")),
        ("rules/probes.rs", include_str!("rules/probes.rs")),
        ("rules/status.rs", include_str!("rules/status.rs")),
    ];

    fn named_ids() -> Vec<(&'static str, String)> {
        let call = Regex::new(
            r#"(?:classes::is|\.log_has)\(\s*"([^"]+)"|classes::which\(\s*&\[([^\]]*)\]"#,
        )
        .expect("static regex");
        let literal = Regex::new(r#""([^"]+)""#).expect("static regex");
        let mut out = Vec::new();
        for (file, src) in RULE_SOURCES {
            for c in call.captures_iter(src) {
                if let Some(id) = c.get(1) {
                    out.push((*file, id.as_str().to_string()));
                }
                if let Some(list) = c.get(2) {
                    for l in literal.captures_iter(list.as_str()) {
                        out.push((*file, l[1].to_string()));
                    }
                }
            }
        }
        out
    }

    #[test]
    fn the_classes_are_sound() {
        let problems = check();
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        assert!(all().len() >= 20, "classes.yaml lost entries");
    }

    #[test]
    fn every_id_a_rule_names_exists() {
        let ids = named_ids();
        assert!(
            !ids.is_empty(),
            "the rules name no class: the scan of their sources is broken"
        );
        for (file, id) in &ids {
            assert!(
                LOADED.by_id.contains_key(id)
                    || crate::catalog::signatures().iter().any(|s| s.id == id),
                "{file} names {id:?}, which is no message class and no catalog entry"
            );
        }
    }

    #[test]
    fn every_class_is_read_by_a_rule() {
        let ids = named_ids();
        for c in all() {
            assert!(
                ids.iter().any(|(_, id)| *id == c.id),
                "class {} is read by no rule (remove it, or read it)",
                c.id
            );
        }
    }

    #[test]
    fn entries_are_named_like_classes() {
        let sig = crate::catalog::signatures()
            .iter()
            .find(|s| s.id == "runtime.exec-format-error")
            .expect("the entry exists");
        assert!(is(sig.id, sig.test));
        assert!(!is(sig.id, "Started container web"));
    }
}
