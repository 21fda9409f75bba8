//! The checks. Like rust-clippy's lint declarations, each check is one
//! `static` [`Check`]: its id, the cause of the taxonomy it leads to, its
//! severity, its documentation (what / why / example / fix, shown by
//! `crashdoc explain CHECK-ID`), where the knowledge comes from, its run
//! function and its two fixtures. The documented example is the positive
//! fixture: `tests/checks.rs` lints it and requires a finding of the check,
//! and lints the near miss and requires none.

mod images;
mod lifecycle;
mod probes;
mod refs;
mod resources;
mod rollout;

use crate::Hit;
use crate::input::{Input, Object};
use crate::{Options, k8s};
use crashdoc_core::Cause;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};

/// How bad a finding is; `--fail-on` compares against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Error,
}

impl Severity {
    pub fn word(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One check's declaration.
pub struct Check {
    /// `probe/liveness-without-startup`.
    pub id: &'static str,
    /// The crash loop it leads to.
    pub cause: Cause,
    pub severity: Severity,
    /// What it flags, in one sentence.
    pub what: &'static str,
    /// Why that crash-loops.
    pub why: &'static str,
    /// The fix, in words (each finding also gives it as YAML with numbers).
    pub fix: &'static str,
    /// Where the knowledge comes from (the software's docs or source).
    pub source: &'static str,
    /// The documented example; also the positive fixture.
    pub example: &'static str,
    /// A near miss that must not be flagged.
    pub near_miss: &'static str,
    /// Options the fixtures run with: `capacity=gpu=8`, `require-digest`.
    pub fixture_flags: &'static [&'static str],
    /// For diff checks: the older render the fixtures are compared against.
    pub fixture_against: &'static str,
    pub run: fn(&Ctx, usize, &mut Vec<Hit>),
}

impl std::fmt::Debug for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id)
    }
}

impl Check {
    /// The documentation sections, in order, for `crashdoc explain`.
    pub fn sections(&self) -> [(&'static str, &'static str); 5] {
        [
            ("What", self.what),
            ("Why it crash-loops", self.why),
            ("Example (flagged)", self.example),
            ("Fix", self.fix),
            ("Source", self.source),
        ]
    }

    /// The options the fixtures are linted with.
    pub fn fixture_options(&self) -> Options {
        let mut o = Options::default();
        for f in self.fixture_flags {
            if let Some(c) = f.strip_prefix("capacity=") {
                let _ = o.capacity.parse_into(c);
            } else if *f == "require-digest" {
                o.require_digest = true;
            }
        }
        if !self.fixture_against.is_empty() {
            let mut old = Input::default();
            let _ = old.read_bytes("old.yaml", self.fixture_against.as_bytes());
            o.against = Some(old);
        }
        o
    }
}

/// Every check, in documentation order.
pub static ALL: &[&Check] = &[
    &probes::LIVENESS_WITHOUT_STARTUP,
    &probes::JVM_LIVENESS_WITHOUT_STARTUP,
    &probes::INITIAL_DELAY_AS_STARTUP_GUARD,
    &probes::BUDGET_BELOW_STARTUP,
    &probes::LIVENESS_EQUALS_READINESS,
    &probes::UNKNOWN_PORT_NAME,
    &probes::PORT_NOT_DECLARED,
    &probes::SHORT_TIMEOUT_HEAVY,
    &probes::EXEC_STARTS_RUNTIME,
    &probes::SINGLE_FAILURE,
    &refs::MISSING_KEY,
    &refs::MISSING_OBJECT,
    &refs::OPTIONAL_HIDES_TYPO,
    &refs::CROSS_NAMESPACE,
    &refs::MISSING_PULL_SECRET,
    &refs::DIFF_REMOVED_KEY,
    &images::MUTABLE_TAG,
    &images::NO_DIGEST,
    &images::PULL_NEVER,
    &images::DEFAULT_SHELL,
    &images::MODEL_REVISION,
    &images::DIFF_IMAGE_CHANGED,
    &resources::NO_MEMORY,
    &resources::MODEL_MEMORY,
    &resources::GPU_TOLERATION,
    &resources::MULTI_GPU_SHM,
    &resources::MODEL_CACHE_EMPTYDIR,
    &resources::MODEL_CACHE_PVC_SMALL,
    &lifecycle::ONE_SHOT,
    &lifecycle::RESTART_POLICY,
    &lifecycle::READONLY_ROOT,
    &lifecycle::NON_ROOT_ROOT_IMAGE,
    &lifecycle::DIFF_PROBE_CHANGED,
    &lifecycle::DIFF_VOLUME_REMOVED,
    &rollout::GPU_SURGE,
    &rollout::MEMORY_SURGE,
];

/// What the checks read besides the object: the ConfigMaps and Secrets of
/// the input (key names), the options, the older render in diff mode.
pub struct Ctx<'a> {
    pub input: &'a Input,
    pub options: &'a Options,
    pub configs: ConfigIndex,
    pub old_configs: Option<ConfigIndex>,
    /// The older render's objects by (kind, namespace, name).
    old_objects: HashMap<(String, Option<String>, String), &'a Object>,
    /// Names something in the input creates at run time (`refs::created_at_run_time`).
    pub(crate) run_time_names: std::collections::HashSet<String>,
    /// Steady-state totals of a resource over the input's workloads (rollout checks).
    pub(crate) totals: std::cell::RefCell<HashMap<&'static str, f64>>,
}

/// ConfigMaps and Secrets by (kind, namespace, name) → key names.
#[derive(Default)]
pub struct ConfigIndex {
    pub map: HashMap<(RefKind, Option<String>, String), BTreeSet<String>>,
    /// (kind, name) → the namespaces it is defined in (None: no namespace).
    by_name: HashMap<(RefKind, String), Vec<Option<String>>>,
    /// Whether the input holds any object of that kind at all.
    pub any: HashMap<RefKind, bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefKind {
    ConfigMap,
    Secret,
}

impl RefKind {
    pub fn word(self) -> &'static str {
        match self {
            RefKind::ConfigMap => "ConfigMap",
            RefKind::Secret => "Secret",
        }
    }
}

impl ConfigIndex {
    pub fn of(input: &Input) -> ConfigIndex {
        let mut ix = ConfigIndex::default();
        for o in &input.objects {
            let kind = match o.kind.as_str() {
                "ConfigMap" => RefKind::ConfigMap,
                "Secret" => RefKind::Secret,
                _ => continue,
            };
            let mut keys = BTreeSet::new();
            for f in ["data", "binaryData", "stringData"] {
                if let Some(m) = o.value.get(f).and_then(Value::as_object) {
                    keys.extend(m.keys().cloned());
                }
            }
            ix.any.insert(kind, true);
            ix.by_name
                .entry((kind, o.name.clone()))
                .or_default()
                .push(o.namespace.clone());
            ix.map
                .entry((kind, o.namespace.clone(), o.name.clone()))
                .or_default()
                .extend(keys);
        }
        ix
    }

    /// The keys of `name` as seen from namespace `ns`: an object with no
    /// namespace (a chart render) matches any.
    pub fn keys(&self, kind: RefKind, ns: Option<&str>, name: &str) -> Option<&BTreeSet<String>> {
        let ns = ns.map(str::to_string);
        self.map
            .get(&(kind, ns.clone(), name.to_string()))
            .or_else(|| self.map.get(&(kind, None, name.to_string())))
            .or_else(|| {
                if ns.is_none() {
                    let any = self.by_name.get(&(kind, name.to_string()))?.first()?;
                    self.map.get(&(kind, any.clone(), name.to_string()))
                } else {
                    None
                }
            })
    }

    /// Namespaces where an object of that kind and name exists.
    pub fn namespaces_of(&self, kind: RefKind, name: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .by_name
            .get(&(kind, name.to_string()))
            .map(|v| v.iter().flatten().cloned().collect())
            .unwrap_or_default();
        v.sort();
        v
    }

    pub fn names(&self, kind: RefKind) -> impl Iterator<Item = &str> {
        self.map
            .keys()
            .filter(move |(k, _, _)| *k == kind)
            .map(|(_, _, n)| n.as_str())
    }
}

impl<'a> Ctx<'a> {
    pub fn new(input: &'a Input, options: &'a Options) -> Ctx<'a> {
        Ctx {
            input,
            options,
            configs: ConfigIndex::of(input),
            old_configs: options.against.as_ref().map(ConfigIndex::of),
            old_objects: options
                .against
                .iter()
                .flat_map(|i| i.objects.iter())
                .map(|o| ((o.kind.clone(), o.namespace.clone(), o.name.clone()), o))
                .collect(),
            run_time_names: refs::run_time_names(input),
            totals: Default::default(),
        }
    }

    pub fn obj(&self, oi: usize) -> &'a Object {
        &self.input.objects[oi]
    }
}

/// The same object (kind, namespace, name) in the older render.
pub fn old_twin<'a>(cx: &Ctx<'a>, obj: &Object) -> Option<&'a Object> {
    cx.old_objects
        .get(&(obj.kind.clone(), obj.namespace.clone(), obj.name.clone()))
        .copied()
}

/// For each container of the object's pod spec: run `f`.
pub fn each_container(
    cx: &Ctx,
    oi: usize,
    with_init: bool,
    mut f: impl FnMut(&Object, &Value, &crate::locate::Path, &k8s::ContainerRef),
) {
    let obj = cx.obj(oi);
    let Some((spec, path)) = k8s::pod_spec(obj) else {
        return;
    };
    for c in k8s::containers(spec, &path, with_init) {
        f(obj, spec, &path, &c);
    }
}

/// Levenshtein distance, for "a near-identical key exists".
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let sub = prev[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            cur[j] = sub.min(prev[j] + 1).min(cur[j - 1] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The closest name to `want` among `have`, when it is a likely typo.
pub fn near<'b>(want: &str, have: impl Iterator<Item = &'b str>) -> Option<&'b str> {
    let norm = |s: &str| s.to_ascii_lowercase().replace(['-', '_', '.'], "");
    let digits = |s: &str| {
        s.chars()
            .filter(|c| !c.is_ascii_digit())
            .collect::<String>()
    };
    have.filter(|h| *h != want && h.len().abs_diff(want.len()) <= 3)
        // `web-1` and `web-2` are two names, not a typo.
        .filter(|h| digits(h) != digits(want) || !h.chars().any(|c| c.is_ascii_digit()))
        .map(|h| {
            let d = if norm(h) == norm(want) {
                0
            } else {
                edit_distance(h, want)
            };
            (d, h)
        })
        .filter(|(d, h)| *d <= 2.min(h.len().max(want.len()) / 3).max(1) || *d == 0)
        .min_by_key(|(d, _)| *d)
        .map(|(_, h)| h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_are_near_and_other_names_are_not() {
        let have = ["DATABASE_URL", "REDIS_URL", "api-key"];
        assert_eq!(
            near("DATABSE_URL", have.iter().copied()),
            Some("DATABASE_URL")
        );
        assert_eq!(near("api_key", have.iter().copied()), Some("api-key"));
        assert_eq!(near("SMTP_HOST", have.iter().copied()), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        // Names that differ only in their numbers are distinct objects.
        assert_eq!(near("web-1", ["web-2"].into_iter()), None);
        assert_eq!(near("web-1", ["wen-1"].into_iter()), Some("wen-1"));
    }

    #[test]
    fn ids_are_unique_and_well_formed() {
        let mut seen = BTreeSet::new();
        for c in ALL {
            assert!(seen.insert(c.id), "duplicate {}", c.id);
            assert!(
                c.id.contains('/')
                    && c.id
                        .chars()
                        .all(|x| x.is_ascii_lowercase() || x == '/' || x == '-'),
                "{}",
                c.id
            );
            assert!(
                !c.what.is_empty()
                    && !c.why.is_empty()
                    && !c.fix.is_empty()
                    && !c.source.is_empty(),
                "{}",
                c.id
            );
        }
    }
}
