//! The fleet queries computed from records: [`group`] and [`new_causes`].
//! The embedded store answers them this way (its captures are one
//! cluster's, bounded by retention); a database answers them with its own
//! indexes, and these functions are the reference the parity tests hold it
//! to.

use std::collections::{BTreeMap, HashMap, HashSet};

use jiff::Timestamp;

use crate::api::Group;
use crate::{GroupBy, NewCause, Record};

/// The group key of one capture under `by`.
pub fn group_key(r: &Record, by: GroupBy) -> String {
    let c = &r.capture;
    match by {
        GroupBy::Cluster => c.key.cluster.clone(),
        GroupBy::Namespace => c.namespace.clone(),
        GroupBy::Workload => workload_key(
            &c.namespace,
            c.owner_kind.as_deref(),
            c.owner.as_deref(),
            &c.pod,
        ),
        GroupBy::Cause => c.cause.clone().unwrap_or_default(),
        GroupBy::Node => c.node.clone().unwrap_or_default(),
    }
}

/// `namespace/Kind/name`, or `namespace/Pod/name` for a pod with no owner.
pub fn workload_key(namespace: &str, kind: Option<&str>, owner: Option<&str>, pod: &str) -> String {
    match (
        kind.filter(|k| !k.is_empty()),
        owner.filter(|o| !o.is_empty()),
    ) {
        (Some(k), Some(o)) => format!("{namespace}/{k}/{o}"),
        _ => format!("{namespace}/Pod/{pod}"),
    }
}

/// Counts `records` per group: most captures first, then by key.
pub fn group(records: &[Record], by: GroupBy) -> Vec<Group> {
    struct Acc {
        captures: u64,
        pods: HashSet<String>,
        first: Timestamp,
        last: Timestamp,
        causes: HashMap<String, u64>,
    }
    let mut acc: BTreeMap<String, Acc> = BTreeMap::new();
    for r in records {
        let c = &r.capture;
        let a = acc.entry(group_key(r, by)).or_insert_with(|| Acc {
            captures: 0,
            pods: HashSet::new(),
            first: c.observed_at,
            last: c.observed_at,
            causes: HashMap::new(),
        });
        a.captures += 1;
        a.pods.insert(c.key.pod_uid.clone());
        a.first = a.first.min(c.observed_at);
        a.last = a.last.max(c.observed_at);
        *a.causes
            .entry(c.cause.clone().unwrap_or_default())
            .or_default() += 1;
    }
    let mut out: Vec<Group> = acc
        .into_iter()
        .map(|(key, a)| {
            let mut causes: Vec<(String, u64)> = a.causes.into_iter().collect();
            causes.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
            Group {
                key,
                captures: a.captures,
                pods: a.pods.len() as u64,
                first: a.first,
                last: a.last,
                causes,
            }
        })
        .collect();
    out.sort_by(|x, y| y.captures.cmp(&x.captures).then_with(|| x.key.cmp(&y.key)));
    out
}

/// The (cluster, workload, cause) triples of `matching` whose first capture
/// in `all` (the whole history, or at least every capture of those
/// workloads) is at or after `since`, newest first. Captures without a
/// cause are left out.
pub fn new_causes(all: &[Record], matching: &[Record], since: Timestamp) -> Vec<NewCause> {
    type K = (String, String, Option<String>, Option<String>, String);
    let key = |r: &Record| -> Option<K> {
        let c = &r.capture;
        let cause = c.cause.clone().filter(|c| !c.is_empty())?;
        // A capture with no owner is its pod's own workload.
        let (kind, owner) = match (&c.owner_kind, &c.owner) {
            (Some(k), Some(o)) if !k.is_empty() && !o.is_empty() => {
                (Some(k.clone()), Some(o.clone()))
            }
            _ => (Some("Pod".to_string()), Some(c.pod.clone())),
        };
        Some((
            c.key.cluster.clone(),
            c.namespace.clone(),
            kind,
            owner,
            cause,
        ))
    };
    let mut first: HashMap<K, Timestamp> = HashMap::new();
    for r in all {
        if let Some(k) = key(r) {
            let t = first.entry(k).or_insert(r.capture.observed_at);
            *t = (*t).min(r.capture.observed_at);
        }
    }
    let mut counts: HashMap<K, u64> = HashMap::new();
    for r in matching {
        if let Some(k) = key(r) {
            *counts.entry(k).or_default() += 1;
        }
    }
    let mut out: Vec<NewCause> = counts
        .into_iter()
        .filter_map(|(k, captures)| {
            let first_seen = *first.get(&k)?;
            (first_seen >= since).then_some(NewCause {
                cluster: k.0,
                namespace: k.1,
                owner_kind: k.2,
                owner: k.3,
                cause: k.4,
                first_seen,
                captures,
            })
        })
        .collect();
    sort_new_causes(&mut out);
    out
}

/// The order of [`new_causes`]' answer: newest first sighting first, then
/// by cluster, namespace, owner and cause (a database sorts its rows so too).
pub(crate) fn sort_new_causes(out: &mut [NewCause]) {
    out.sort_by(|a, b| {
        b.first_seen
            .cmp(&a.first_seen)
            .then_with(|| a.cluster.cmp(&b.cluster))
            .then_with(|| a.namespace.cmp(&b.namespace))
            .then_with(|| a.owner.cmp(&b.owner))
            .then_with(|| a.cause.cmp(&b.cause))
    });
}
