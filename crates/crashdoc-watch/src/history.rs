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

/// One record as `crashdoc history --format json` prints it (`logs` and
/// `capture_delay_ms` only where the capture has them).
pub fn record_json(r: &Record) -> serde_json::Value {
    let c = &r.capture;
    let mut v = serde_json::json!({
        "id": r.id,
        "cluster": c.key.cluster,
        "namespace": c.namespace,
        "pod": c.pod,
        "pod_uid": c.key.pod_uid,
        "container": c.key.container,
        "restart_count": c.key.restart_count,
        "owner_kind": c.owner_kind,
        "owner": c.owner,
        "node": c.node,
        "revision": c.revision,
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
    });
    if let Some(o) = v.as_object_mut() {
        if let Some(logs) = &c.logs {
            o.insert("logs".into(), serde_json::json!(logs));
        }
        if let Some(ms) = c.capture_delay_ms {
            o.insert("capture_delay_ms".into(), ms.into());
        }
    }
    v
}

/// A ConfigMap's or Secret's keys that changed between two captures of one
/// workload (or pod): what `crashdoc history` says under its table.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct KeyChange {
    pub namespace: String,
    /// `Deployment/web`, or `pod/NAME` for a pod without an owner.
    pub workload: String,
    /// `ConfigMap` or `Secret`.
    pub kind: String,
    pub name: String,
    /// Keys the earlier capture saw and the later one did not.
    pub removed: Vec<String>,
    /// Keys the later capture saw and the earlier one did not.
    pub added: Vec<String>,
    /// The object itself was gone at the later capture.
    pub deleted: bool,
    /// The two captures (ids and when they were observed) the change lies between.
    pub before_id: u64,
    pub before: jiff::Timestamp,
    pub after_id: u64,
    pub after: jiff::Timestamp,
    /// The object's last change as the later capture read it (managedFields),
    /// when it lies after the earlier capture.
    pub changed: Option<String>,
}

/// The key changes in `records` (any order), comparing each workload's
/// captures in the order they were observed. A capture that could not read
/// an object (or kept no key names) is skipped for it, not counted as a change.
pub fn key_changes(records: &[Record], keys: &KeySets) -> Vec<KeyChange> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut sorted: Vec<&Record> = records.iter().collect();
    sorted.sort_by_key(|r| (r.capture.observed_at, r.id));
    // (namespace, workload, kind, name) -> (id, observed, keys) last read.
    type Seen = (u64, jiff::Timestamp, BTreeSet<String>);
    let mut last: BTreeMap<(String, String, String, String), Seen> = BTreeMap::new();
    let mut out = Vec::new();
    for r in sorted {
        let c = &r.capture;
        let workload = match (&c.owner_kind, &c.owner) {
            (Some(k), Some(o)) => format!("{k}/{o}"),
            _ => format!("pod/{}", c.pod),
        };
        for k in keys.get(&r.id).into_iter().flatten() {
            let slot = (
                c.namespace.clone(),
                workload.clone(),
                k.kind.clone(),
                k.name.clone(),
            );
            let now: BTreeSet<String> = k.keys.iter().cloned().collect();
            let change =
                |prev: &Seen, removed: Vec<String>, added: Vec<String>, deleted: bool| KeyChange {
                    namespace: c.namespace.clone(),
                    workload: workload.clone(),
                    kind: k.kind.clone(),
                    name: k.name.clone(),
                    removed,
                    added,
                    deleted,
                    before_id: prev.0,
                    before: prev.1,
                    after_id: r.id,
                    after: c.observed_at,
                    // Only a time after the earlier capture dates the change:
                    // removing a key (patch, edit) takes no field, so the API
                    // server stamps no managedFields time for it
                    // (apimachinery v0.36.3, pkg/util/managedfields/internal/
                    // managedfieldsupdater.go, Update).
                    changed: k
                        .changed
                        .clone()
                        .filter(|t| t.parse::<jiff::Timestamp>().is_ok_and(|t| t > prev.1)),
                };
            match k.exists {
                Some(true) => {
                    if let Some(prev) = last.get(&slot) {
                        let removed: Vec<String> = prev.2.difference(&now).cloned().collect();
                        let added: Vec<String> = now.difference(&prev.2).cloned().collect();
                        if !removed.is_empty() || !added.is_empty() {
                            out.push(change(prev, removed, added, false));
                        }
                    }
                    last.insert(slot, (r.id, c.observed_at, now));
                }
                Some(false) => {
                    if let Some(prev) = last.remove(&slot) {
                        let removed = prev.2.iter().cloned().collect();
                        out.push(change(&prev, removed, Vec::new(), true));
                    }
                }
                None => {}
            }
        }
    }
    out
}

/// One key change as a sentence.
pub fn key_change_line(k: &KeyChange) -> String {
    let when = |t: jiff::Timestamp| t.strftime("%Y-%m-%d %H:%M:%S").to_string();
    let list = |v: &[String]| v.join(", ");
    let mut what = Vec::new();
    if k.deleted {
        what.push(format!("was deleted (it had {})", list(&k.removed)));
    } else {
        if !k.removed.is_empty() {
            let s = if k.removed.len() == 1 { "" } else { "s" };
            what.push(format!("key{s} {} disappeared", list(&k.removed)));
        }
        if !k.added.is_empty() {
            let s = if k.added.len() == 1 { "" } else { "s" };
            what.push(format!("key{s} {} appeared", list(&k.added)));
        }
    }
    format!(
        "{} {}/{} ({}): {} between capture {} ({}) and capture {} ({}){}",
        k.kind,
        k.namespace,
        k.name,
        k.workload,
        what.join("; "),
        k.before_id,
        when(k.before),
        k.after_id,
        when(k.after),
        k.changed
            .as_deref()
            .filter(|_| !k.deleted)
            .map(|c| format!("; it last changed at {c}"))
            .unwrap_or_default()
    )
}

/// The key names kept with each capture, by id.
pub type KeySets = std::collections::HashMap<u64, Vec<crashdoc_history::ConfigKeys>>;

/// The key names kept with `records` and the key changes among them.
pub fn key_history(
    store: &dyn crashdoc_history::Store,
    records: &[Record],
) -> Result<(KeySets, Vec<KeyChange>), crashdoc_history::HistoryError> {
    let ids: Vec<u64> = records.iter().map(|r| r.id).collect();
    let keys = store.config_keys(&ids)?;
    let changes = key_changes(records, &keys);
    Ok((keys, changes))
}

/// [`record_json`] with the key names kept with the record and the key
/// changes the record is the later capture of.
pub fn record_json_with_keys(
    r: &Record,
    keys: Option<&[crashdoc_history::ConfigKeys]>,
    changes: &[KeyChange],
) -> serde_json::Value {
    let mut v = record_json(r);
    if let Some(o) = v.as_object_mut() {
        o.insert(
            "config_keys".into(),
            serde_json::json!(keys.unwrap_or_default()),
        );
        let mine: Vec<&KeyChange> = changes.iter().filter(|c| c.after_id == r.id).collect();
        o.insert("config_key_changes".into(), serde_json::json!(mine));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashdoc_history::{Capture, CaptureKind, ConfigKeys, TerminationKey};
    use std::collections::HashMap;

    fn rec(id: u64, secs: i64, pod: &str) -> Record {
        Record {
            id,
            bundle_len: 0,
            capture: Capture {
                key: TerminationKey::new(format!("{pod}-uid"), "app", id as i32),
                namespace: "shop".into(),
                pod: pod.into(),
                owner_kind: Some("Deployment".into()),
                owner: Some("web".into()),
                node: None,
                revision: None,
                finished_at: None,
                observed_at: jiff::Timestamp::from_second(1_764_583_200 + secs).unwrap(),
                reason: None,
                exit_code: None,
                signal: None,
                cause: None,
                confidence: None,
                summary: None,
                diagnosis_json: None,
                kind: CaptureKind::Full,
                missing: vec![],
                logs: None,
                capture_delay_ms: None,
                bundle: None,
            },
        }
    }

    fn cm(exists: Option<bool>, keys: &[&str]) -> Vec<ConfigKeys> {
        vec![ConfigKeys {
            kind: "ConfigMap".into(),
            name: "app-config".into(),
            exists,
            keys: keys.iter().map(|k| k.to_string()).collect(),
            changed: Some("2026-12-01T10:05:00Z".into()),
        }]
    }

    #[test]
    fn the_json_says_which_run_the_logs_came_from_where_known() {
        let mut r = rec(1, 0, "web-1");
        let v = record_json(&r);
        assert!(v.get("logs").is_none() && v.get("capture_delay_ms").is_none());
        r.capture.logs = Some(crashdoc_history::CaptureLogs {
            target: Some("containerd://b".into()),
            container_id: Some("containerd://b".into()),
            file: Some("logs-previous.app.txt".into()),
            matched: Some(true),
        });
        r.capture.capture_delay_ms = Some(812);
        let v = record_json(&r);
        assert_eq!(v["logs"]["matched"], true);
        assert_eq!(v["logs"]["file"], "logs-previous.app.txt");
        assert_eq!(v["capture_delay_ms"], 812);
    }

    #[test]
    fn a_key_that_disappeared_is_placed_between_two_captures() {
        // Newest first, as Store::list returns them; another pod of the
        // same Deployment in between; a capture that could not read it.
        let records = vec![
            rec(4, 400, "web-2"),
            rec(3, 300, "web-1"),
            rec(2, 200, "web-2"),
            rec(1, 100, "web-1"),
        ];
        let keys = HashMap::from([
            (1, cm(Some(true), &["LOG_LEVEL", "MODEL_NAME"])),
            (2, cm(Some(true), &["LOG_LEVEL", "MODEL_NAME"])),
            (3, cm(None, &[])),
            (4, cm(Some(true), &["LOG_LEVEL", "model_name"])),
        ]);
        let changes = key_changes(&records, &keys);
        assert_eq!(changes.len(), 1, "{changes:?}");
        let c = &changes[0];
        assert_eq!((c.before_id, c.after_id), (2, 4));
        assert_eq!(
            (c.removed.as_slice(), c.added.as_slice()),
            (
                &["MODEL_NAME".to_string()][..],
                &["model_name".to_string()][..]
            )
        );
        assert_eq!(c.workload, "Deployment/web");
        let line = key_change_line(c);
        assert!(line.contains("key MODEL_NAME disappeared; key model_name appeared between capture 2 (2025-12-01 10:03:20) and capture 4"), "{line}");
        assert!(
            line.contains("last changed at 2026-12-01T10:05:00Z"),
            "{line}"
        );
        // Near miss: a time from before the earlier capture dates nothing.
        let mut stale = keys.clone();
        if let Some(k) = stale.get_mut(&4) {
            k[0].changed = Some("2020-01-01T00:00:00Z".into());
        }
        let c = &key_changes(&records, &stale)[0];
        assert_eq!(c.changed, None);
        assert!(!key_change_line(c).contains("last changed"));
        let v = record_json_with_keys(&records[0], keys.get(&4).map(Vec::as_slice), &changes);
        assert_eq!(v["config_key_changes"][0]["removed"][0], "MODEL_NAME");
        assert_eq!(v["config_keys"][0]["keys"][1], "model_name");
        assert_eq!(
            record_json_with_keys(&records[1], None, &changes)["config_key_changes"],
            serde_json::json!([])
        );
    }

    #[test]
    fn key_names_stored_by_the_watch_come_back_from_the_file() {
        let dir = std::env::temp_dir().join(format!("crashdoc-key-history-{}", std::process::id()));
        let store = crashdoc_history::RedbStore::open(&dir.join("history.redb")).unwrap();
        let (a, b) = (rec(0, 100, "web-1").capture, rec(0, 200, "web-2").capture);
        let (ka, kb) = (cm(Some(true), &["A", "B"]), cm(Some(true), &["A"]));
        store
            .insert_batch_with_keys(&[(&a, ka.as_slice()), (&b, kb.as_slice())])
            .unwrap();
        let records = store.list(&Query::default()).unwrap();
        let (keys, changes) = key_history(&store, &records).unwrap();
        assert_eq!(keys.len(), 2);
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert_eq!(changes[0].removed, ["B"]);
        assert!(key_change_line(&changes[0]).starts_with(
            "ConfigMap shop/app-config (Deployment/web): key B disappeared between capture 1"
        ));
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn unchanged_keys_and_unreadable_objects_are_no_change_and_a_deletion_is_one() {
        let records = vec![
            rec(1, 100, "web-1"),
            rec(2, 200, "web-1"),
            rec(3, 300, "web-1"),
        ];
        let same = HashMap::from([
            (1, cm(Some(true), &["A"])),
            (2, cm(None, &[])),
            (3, cm(Some(true), &["A"])),
        ]);
        assert!(key_changes(&records, &same).is_empty());
        // No key names kept at all (an older history): nothing to say.
        assert!(key_changes(&records, &HashMap::new()).is_empty());
        let gone = HashMap::from([(1, cm(Some(true), &["A"])), (3, cm(Some(false), &[]))]);
        let c = key_changes(&records, &gone);
        assert_eq!(c.len(), 1);
        assert!(c[0].deleted);
        assert!(
            key_change_line(&c[0]).contains("was deleted (it had A) between capture 1"),
            "{}",
            key_change_line(&c[0])
        );
        // Another workload's object of the same name is another object.
        let mut other = rec(3, 300, "api-1");
        other.capture.owner = Some("api".into());
        let keys = HashMap::from([(1, cm(Some(true), &["A"])), (3, cm(Some(true), &["B"]))]);
        assert!(key_changes(&[rec(1, 100, "web-1"), other], &keys).is_empty());
    }
}
