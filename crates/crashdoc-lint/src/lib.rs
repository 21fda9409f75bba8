//! crashdoc-lint: the crash loops a Kubernetes manifest will cause, found
//! before it ships.
//!
//! Pure functions over parsed manifests: [`input::Input`] reads files,
//! folders, multi-document YAML/JSON and `List` objects; [`lint`] runs every
//! check of [`checks::ALL`] and returns findings that each cite a file and
//! line, the check, the cause of the taxonomy it leads to and the fix as
//! YAML. Each check is one declaration ([`checks::Check`]) holding its id,
//! cause, severity, documentation and its two fixtures (the documented
//! example, which must be flagged, and a near miss, which must not).
//!
//! ```
//! let mut input = crashdoc_lint::input::Input::default();
//! input.read_bytes("deploy.yaml", crashdoc_lint::checks::ALL[0].example.as_bytes()).unwrap();
//! let report = crashdoc_lint::lint(&input, &crashdoc_lint::Options::default());
//! assert!(!report.findings.is_empty());
//! ```

pub mod checks;
pub mod config;
pub mod evidence;
pub mod input;
pub mod k8s;
pub mod locate;
pub mod output;

use checks::{Check, Ctx, Severity};
pub use config::{Capacity, Config, Options};
use locate::Path;
use serde::Serialize;

/// Where a finding stands.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Source {
    pub file: String,
    pub line: usize,
    /// The field, as a path in the object (`spec.template.spec.containers[0].livenessProbe`).
    pub field: String,
    /// helm's `# Source:` template, when the input is `helm template` output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
}

/// One finding of one check.
#[derive(Debug, Clone)]
pub struct Finding {
    pub check: &'static Check,
    pub source: Source,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub container: Option<String>,
    pub message: String,
    /// The fix, as YAML with numbers.
    pub fix: String,
}

impl Finding {
    pub fn object(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {ns}/{}", self.kind, self.name),
            None => format!("{} {}", self.kind, self.name),
        }
    }
}

/// The result of a run.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub findings: Vec<Finding>,
    pub objects: usize,
    pub files: usize,
    /// Findings not shown because an annotation or the config suppressed them.
    pub suppressed: usize,
    /// What the rollout checks compared against.
    pub capacity: Capacity,
}

impl Report {
    pub fn count(&self, s: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.check.severity == s)
            .count()
    }
    /// Whether any finding is at or above `level`.
    pub fn fails(&self, level: Severity) -> bool {
        self.findings.iter().any(|f| f.check.severity >= level)
    }
}

/// How long the workload takes to start, in seconds, as measured (`crashdoc
/// lint --evidence` sets it from a bundle's or paste's logs; set it by hand
/// from `crashdoc history`): probe/budget-below-measured-startup reads it.
pub const STARTUP_ANNOTATION: &str = "crashdoc.io/startup-seconds";
/// Where the measurement comes from (free text, shown in the finding).
pub const STARTUP_SOURCE_ANNOTATION: &str = "crashdoc.io/startup-source";
/// The containers (comma-separated names) whose spec the evidence did not
/// show, only their status (`crashdoc lint --evidence`): an absent command
/// there says nothing, and image/default-shell skips them.
pub const SPEC_UNREAD_ANNOTATION: &str = "crashdoc.io/spec-unread";

/// A workload's startup as measured elsewhere (`crashdoc watch`'s history):
/// the workload by namespace, kind and name, the seconds and where they
/// come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeasuredStartup {
    pub namespace: String,
    /// `Deployment`, `StatefulSet`, ... or `Pod` for a bare pod.
    pub kind: String,
    pub name: String,
    pub seconds: u64,
    pub source: String,
}

/// Set each measured startup as the annotations
/// probe/budget-below-measured-startup reads, on the objects of `input` it
/// measures (same kind and name; same namespace, or an object with none, as
/// a chart render has). The longest measurement wins, an annotation already
/// in the manifest included. Returns how many objects were given one.
pub fn apply_startups(input: &mut input::Input, measured: &[MeasuredStartup]) -> usize {
    let mut n = 0;
    for obj in &mut input.objects {
        let best = measured
            .iter()
            .filter(|m| {
                m.kind == obj.kind
                    && m.name == obj.name
                    && obj.namespace.as_deref().is_none_or(|ns| ns == m.namespace)
            })
            .max_by_key(|m| m.seconds);
        let Some(m) = best else { continue };
        let secs = |v: Option<&serde_json::Value>| {
            v.and_then(serde_json::Value::as_str)
                .and_then(|v| v.trim().trim_end_matches('s').parse::<u64>().ok())
        };
        let have = secs(
            obj.value
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(STARTUP_ANNOTATION)),
        )
        .max(secs(
            obj.value
                .pointer("/spec/template/metadata/annotations")
                .and_then(|a| a.get(STARTUP_ANNOTATION)),
        ));
        if have.is_some_and(|h| h >= m.seconds) {
            continue;
        }
        let Some(meta) = obj
            .value
            .get_mut("metadata")
            .and_then(serde_json::Value::as_object_mut)
        else {
            continue;
        };
        let ann = meta
            .entry("annotations")
            .or_insert_with(|| serde_json::Value::Object(Default::default()));
        if !ann.is_object() {
            *ann = serde_json::Value::Object(Default::default());
        }
        ann[STARTUP_ANNOTATION] = m.seconds.to_string().into();
        ann[STARTUP_SOURCE_ANNOTATION] = m.source.clone().into();
        n += 1;
    }
    n
}

/// The annotation that suppresses checks on one object.
pub const IGNORE_ANNOTATION: &str = "crashdoc.io/ignore";

/// Lint every object of `input`; with `options.against`, also compare it
/// with an older render.
pub fn lint(input: &input::Input, options: &Options) -> Report {
    k8s::clear_cache();
    let cx = Ctx::new(input, options);
    let mut findings = Vec::new();
    let mut suppressed = 0;
    for (oi, obj) in input.objects.iter().enumerate() {
        let ignored = ignored_ids(obj);
        for check in checks::ALL {
            if options.config.ignores(check.id, obj) {
                continue;
            }
            let mut hits = Vec::new();
            (check.run)(&cx, oi, &mut hits);
            for h in hits {
                if ignored.iter().any(|i| i == check.id || i == "all") {
                    suppressed += 1;
                    continue;
                }
                findings.push(Finding {
                    check,
                    source: Source {
                        file: obj.file().to_string(),
                        line: obj.line_of(&h.path),
                        field: h.path.to_string(),
                        template: obj.template.clone(),
                    },
                    kind: obj.kind.clone(),
                    namespace: obj.namespace.clone(),
                    name: obj.name.clone(),
                    container: h.container,
                    message: h.message,
                    fix: h.fix,
                });
            }
        }
    }
    k8s::clear_cache();
    findings.sort_by(|a, b| {
        (&a.source.file, a.source.line, a.check.id).cmp(&(
            &b.source.file,
            b.source.line,
            b.check.id,
        ))
    });
    Report {
        findings,
        objects: input.objects.len(),
        files: input.files,
        suppressed,
        capacity: options.capacity.clone(),
    }
}

/// The check ids an object's annotation (or its pod template's) suppresses.
fn ignored_ids(obj: &input::Object) -> Vec<String> {
    let mut out = Vec::new();
    let tmpl = obj
        .value
        .pointer("/spec/template/metadata/annotations")
        .and_then(|a| a.get(IGNORE_ANNOTATION))
        .and_then(serde_json::Value::as_str);
    for v in [obj.annotation(IGNORE_ANNOTATION), tmpl]
        .into_iter()
        .flatten()
    {
        out.extend(
            v.split([',', ' '])
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string),
        );
    }
    out
}

/// A check by id.
pub fn check(id: &str) -> Option<&'static Check> {
    checks::ALL.iter().copied().find(|c| c.id == id)
}

/// What a check's run function reports: the field, the container, the message and the fix.
#[derive(Debug, Clone)]
pub struct Hit {
    pub path: Path,
    pub container: Option<String>,
    pub message: String,
    pub fix: String,
}
