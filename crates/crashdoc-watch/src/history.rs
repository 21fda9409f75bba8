//! Reading the history as `crashdoc history` shows it: the query a target
//! names and the JSON of one record. Shared by the CLI
//! (crates/crashdoc/src/watch.rs) and the MCP server (crates/crashdoc-mcp).

use crashdoc_history::{Query, Record};
use crashdoc_kube::{KubeError, Target, TargetKind};
use std::time::Duration;

/// What to list: `target` is a pod (NAME, pod/NAME) or a workload
/// (deploy/NAME, ...); pods of a Deployment's ReplicaSets count as the Deployment.
pub fn query(
    target: Option<&str>,
    namespace: Option<String>,
    container: Option<String>,
    since: Option<Duration>,
    limit: usize,
) -> Result<Query, KubeError> {
    let mut q = Query {
        namespace,
        container,
        limit: Some(limit),
        since: since.map(|d| {
            jiff::Timestamp::now()
                - jiff::SignedDuration::from_secs(d.as_secs().min(i64::MAX as u64) as i64)
        }),
        ..Query::default()
    };
    if let Some(t) = target {
        let t: Target = t.parse()?;
        let kind = match t.kind {
            TargetKind::Pod => {
                q.pod = Some(t.name);
                return Ok(q);
            }
            TargetKind::Deployment => "Deployment",
            TargetKind::StatefulSet => "StatefulSet",
            TargetKind::DaemonSet => "DaemonSet",
            TargetKind::Job => "Job",
            TargetKind::ReplicaSet => "ReplicaSet",
        };
        q.owner_kind = Some(kind.into());
        q.owner = Some(t.name);
    }
    Ok(q)
}

/// One record as `crashdoc history --format json` prints it.
pub fn record_json(r: &Record) -> serde_json::Value {
    let c = &r.capture;
    serde_json::json!({
        "id": r.id,
        "namespace": c.namespace,
        "pod": c.pod,
        "pod_uid": c.key.pod_uid,
        "container": c.key.container,
        "restart_count": c.key.restart_count,
        "owner_kind": c.owner_kind,
        "owner": c.owner,
        "node": c.node,
        "finished_at": c.finished_at.map(|t| t.to_string()),
        "observed_at": c.observed_at.to_string(),
        "reason": c.reason,
        "exit_code": c.exit_code,
        "signal": c.signal,
        "cause": c.cause,
        "confidence": c.confidence,
        "summary": c.summary,
        "kind": c.kind,
        "missing": c.missing,
    })
}
