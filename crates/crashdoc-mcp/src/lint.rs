//! The `lint` tool: `crashdoc lint` over crashdoc-lint, as the CLI runs it
//! (crates/crashdoc/src/lint.rs): the same reading of manifests, options and
//! output (`crashdoc/lint-v1` JSON, the text report).

use crate::tools::{ArgError, CrashdocMcp, blocking, failure, structured};
use anyhow::Context as _;
use crashdoc_lint::checks::Severity;
use crashdoc_lint::{Capacity, Config, Options, input::Input, output};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData as McpError, schemars, tool, tool_router};
use serde::Deserialize;
use serde_json::json;
use std::path::PathBuf;

/// When `failing` is true (the CLI's `--fail-on`, exit status 1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FailOn {
    /// A finding of severity error (the default).
    #[default]
    Error,
    /// A warning or an error.
    Warning,
    /// Never.
    Never,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LintParams {
    /// Manifest files or folders on the server's machine (every .yaml, .yml and .json under a folder). Give `paths` or `text`.
    pub paths: Option<Vec<String>>,
    /// Manifests as text: the output of `helm template` or `kustomize build`, multi-document YAML, JSON. Give `paths` or `text`.
    pub text: Option<String>,
    /// `failing` is true when a finding is at least this severe (default: error).
    pub fail_on: Option<FailOn>,
    /// A config file: ignore, require-digest, capacity.
    pub config: Option<String>,
    /// What the cluster holds, for the rollout checks: gpu=8, memory=512Gi.
    pub capacity: Option<Vec<String>>,
    /// Compare with an older render (a file or folder): removed keys still referenced, changed images and probes, removed volumes.
    pub against: Option<String>,
    /// Images must be referenced by digest (image/no-digest).
    pub require_digest: Option<bool>,
    /// `paths`/`text` are evidence as `analyze` reads it (kubectl describe/get output, a bundle, a paste): lint the pod specs it shows.
    pub evidence: Option<bool>,
    /// List every check instead (id, severity, cause, what it flags).
    pub list: Option<bool>,
}

/// The call's paths (manifests, config, older render) through `--root`
/// when the server confines them.
fn confined(mut p: LintParams, b: &crate::Bounds) -> anyhow::Result<LintParams> {
    if !b.confine {
        return Ok(p);
    }
    let c = |s: &str| -> anyhow::Result<String> {
        Ok(crate::confine::confine(b.root.as_deref(), s)?
            .to_string_lossy()
            .into_owned())
    };
    if let Some(paths) = &mut p.paths {
        for s in paths.iter_mut() {
            *s = c(s)?;
        }
    }
    if let Some(s) = &p.config {
        p.config = Some(c(s)?);
    }
    if let Some(s) = &p.against {
        p.against = Some(c(s)?);
    }
    Ok(p)
}

#[tool_router(router = lint_router, vis = "pub(crate)")]
impl CrashdocMcp {
    #[tool(
        description = "Find the crash loops a Kubernetes manifest will cause, before it ships: each finding cites the \
file and line, the check, the cause it leads to (as `diagnose` names causes) and the fix as YAML with numbers. \
Returns the crashdoc/lint-v1 JSON (`findings`, `summary`) plus `failing`.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn lint(
        &self,
        Parameters(p): Parameters<LintParams>,
    ) -> Result<CallToolResult, McpError> {
        let bounds = self.defaults.bounds.clone();
        Ok(match blocking(move || run(confined(p, &bounds)?)).await {
            Ok((v, text)) => structured(v, text),
            Err(e) => failure(e),
        })
    }
}

fn run(p: LintParams) -> anyhow::Result<(serde_json::Value, String)> {
    if p.list.unwrap_or(false) {
        let checks: Vec<_> = crashdoc_lint::checks::ALL
            .iter()
            .map(|c| {
                json!({ "id": c.id, "severity": c.severity.word(), "cause": c.cause.id(), "what": c.what })
            })
            .collect();
        return Ok((json!({ "checks": checks }), output::list()));
    }
    let mut capacity = Capacity::default();
    for c in p.capacity.iter().flatten() {
        capacity
            .parse_into(c)
            .map_err(|e| anyhow::anyhow!("capacity {c}: {e}"))?;
    }
    let mut options = Options {
        capacity,
        require_digest: p.require_digest.unwrap_or(false),
        ..Default::default()
    };
    if let Some(path) = &p.config {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the config {path}"))?;
        let c = Config::parse(&text).with_context(|| format!("config {path}"))?;
        options = options
            .with_config(c)
            .with_context(|| format!("config {path}"))?;
    }
    if let Some(old) = &p.against {
        options.against = Some(read(std::slice::from_ref(old), None, "the older render")?);
    }
    let paths = p.paths.clone().unwrap_or_default();
    if paths.is_empty() == p.text.is_none() {
        return Err(ArgError::new(
            "lint takes exactly one of `paths` and `text`",
            "give `paths` for manifest files or folders on the server's machine, or `text` for rendered manifests",
        )
        .into());
    }
    let input = if p.evidence.unwrap_or(false) {
        read_evidence(&paths, p.text.as_deref())?
    } else {
        read(&paths, p.text.as_deref(), "manifests")?
    };
    let report = crashdoc_lint::lint(&input, &options);
    let failing = match p.fail_on.unwrap_or_default() {
        FailOn::Error => report.fails(Severity::Error),
        FailOn::Warning => report.fails(Severity::Warning),
        FailOn::Never => false,
    };
    let mut v = output::json(&report);
    v["failing"] = json!(failing);
    Ok((v, output::text(&report)))
}

/// Manifests from paths or text, as the CLI's `read` takes them (`text` for `-`).
fn read(paths: &[String], text: Option<&str>, what: &str) -> anyhow::Result<Input> {
    let mut input = Input::default();
    for p in paths {
        input
            .read_path(&PathBuf::from(p))
            .with_context(|| format!("cannot lint {p}"))?;
    }
    if let Some(t) = text {
        input
            .read_bytes("text", t.as_bytes())
            .with_context(|| format!("cannot lint {what} from the text"))?;
    }
    if input.objects.is_empty() {
        let named = if paths.is_empty() {
            "the text".to_string()
        } else {
            paths.join(" ")
        };
        anyhow::bail!(crashdoc_lint::input::InputError::NoObjects(named));
    }
    Ok(input)
}

/// The pod specs that evidence shows, as manifests (the CLI's `--evidence`).
fn read_evidence(paths: &[String], text: Option<&str>) -> anyhow::Result<Input> {
    let mut input = Input::default();
    let mut add = |ev: crashdoc_core::Evidence, name: &str| {
        input.files += 1;
        for pod in &ev.pods {
            input.add_object_value(name, crashdoc_lint::evidence::manifest(pod));
            for o in crashdoc_lint::evidence::config_objects(pod) {
                input.add_object_value(name, o);
            }
        }
    };
    for p in paths {
        let ev = crashdoc_core::ingest::read_path(&PathBuf::from(p))
            .with_context(|| format!("cannot read evidence from {p}"))?;
        add(ev, p);
    }
    if let Some(t) = text {
        let ev = crashdoc_core::ingest::read_paste(t.as_bytes(), "text")
            .context("cannot read evidence from the text")?;
        add(ev, "text");
    }
    Ok(input)
}
