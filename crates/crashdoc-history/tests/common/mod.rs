//! Builders shared by the integration tests.
#![allow(dead_code)]

use crashdoc_history::{Capture, CaptureKind, TerminationKey};
use jiff::Timestamp;

/// An instant `secs` seconds after a fixed origin.
pub fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_750_000_000 + secs).expect("valid timestamp")
}

/// A deterministic pseudo-random bundle of `len` bytes.
pub fn bundle(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// A full capture of `container` in pod `pod` (uid `<pod>-uid`) of workload
/// `Deployment/<owner>` in `namespace`, observed at `at(secs)`.
pub fn capture(
    namespace: &str,
    pod: &str,
    owner: Option<&str>,
    container: &str,
    restart_count: i32,
    secs: i64,
    bundle_len: usize,
) -> Capture {
    Capture {
        key: TerminationKey::new(format!("{pod}-uid"), container, restart_count),
        namespace: namespace.to_string(),
        pod: pod.to_string(),
        owner_kind: owner.map(|_| "Deployment".to_string()),
        owner: owner.map(str::to_string),
        node: Some("node-1".to_string()),
        revision: None,
        finished_at: Some(at(secs - 1)),
        observed_at: at(secs),
        reason: Some("OOMKilled".to_string()),
        exit_code: Some(137),
        signal: Some(9),
        cause: Some("oom-killed".to_string()),
        confidence: Some("high".to_string()),
        summary: Some(format!("{pod}/{container} killed at its memory limit")),
        diagnosis_json: Some(format!(
            r#"{{"schema":"crashdoc/v1","pod":"{pod}","restart":{restart_count}}}"#
        )),
        kind: if bundle_len > 0 {
            CaptureKind::Full
        } else {
            CaptureKind::StatusOnly
        },
        missing: if bundle_len > 0 {
            vec![]
        } else {
            vec!["logs-previous".to_string(), "events".to_string()]
        },
        logs: None,
        capture_delay_ms: None,
        bundle: (bundle_len > 0).then(|| bundle(restart_count as u64 + secs as u64, bundle_len)),
    }
}

/// Writes a history in the layout of schema 1 or 2 (no cluster anywhere),
/// as an older crashdoc left it: the captures (ids from 1, with their
/// bundles and diagnoses), a baseline per capture's container (schema 2),
/// and a checkpoint at `checkpoint_ms`.
pub fn write_legacy(
    path: &std::path::Path,
    version: u64,
    captures: &[Capture],
    checkpoint_ms: u64,
) {
    use redb::TableDefinition as T;
    type Row = (
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        i32,
        &'static str,
        &'static str,
        u64,
        u64,
    );
    const META: T<&str, u64> = T::new("crashdoc_history.meta");
    const CAPTURES: T<u64, &[u8]> = T::new("crashdoc_history.captures");
    const BLOBS: T<(u64, u8, u32), &[u8]> = T::new("crashdoc_history.blobs");
    const KEYS: T<(&str, &str, i32), u64> = T::new("crashdoc_history.keys");
    const INDEX: T<(u8, &str, i128, u64), Row> = T::new("crashdoc_history.index");
    const CONFIG_KEYS: T<u64, &[u8]> = T::new("crashdoc_history.config_keys");
    const BASELINES: T<(&str, &str), i32> = T::new("crashdoc_history.baselines");
    let db = redb::Database::create(path).expect("create");
    let txn = db.begin_write().expect("write");
    {
        let mut meta = txn.open_table(META).unwrap();
        let mut recs = txn.open_table(CAPTURES).unwrap();
        let mut blobs = txn.open_table(BLOBS).unwrap();
        let mut keys = txn.open_table(KEYS).unwrap();
        let mut index = txn.open_table(INDEX).unwrap();
        let mut baselines = txn.open_table(BASELINES).unwrap();
        if version >= 2 {
            txn.open_table(CONFIG_KEYS).unwrap();
        }
        let (mut bundle_bytes, mut stored_bytes) = (0u64, 0u64);
        for (i, c) in captures.iter().enumerate() {
            let id = i as u64 + 1;
            let mut rec = c.clone();
            rec.bundle = None;
            rec.diagnosis_json = None;
            let json = serde_json::to_vec(&rec).unwrap();
            recs.insert(id, json.as_slice()).unwrap();
            let bundle = c.bundle.clone().unwrap_or_default();
            for (seq, piece) in (0u32..).zip(bundle.chunks(4000)) {
                blobs.insert((id, 0, seq), piece).unwrap();
            }
            let diag = c.diagnosis_json.clone().unwrap_or_default();
            for (seq, piece) in (0u32..).zip(diag.as_bytes().chunks(4000)) {
                blobs.insert((id, 1, seq), piece).unwrap();
            }
            let stored = (json.len() + bundle.len() + diag.len()) as u64;
            bundle_bytes += bundle.len() as u64;
            stored_bytes += stored;
            let row = (
                c.namespace.as_str(),
                c.pod.as_str(),
                c.key.pod_uid.as_str(),
                c.key.container.as_str(),
                c.key.restart_count,
                c.owner_kind.as_deref().unwrap_or(""),
                c.owner.as_deref().unwrap_or(""),
                bundle.len() as u64,
                stored,
            );
            let at = c.observed_at.as_nanosecond();
            for (scope, value) in [
                (0u8, ""),
                (1, c.namespace.as_str()),
                (2, c.pod.as_str()),
                (3, c.key.pod_uid.as_str()),
            ] {
                index.insert((scope, value, at, id), row).unwrap();
            }
            if let Some(o) = c.owner.as_deref().filter(|o| !o.is_empty()) {
                index.insert((4u8, o, at, id), row).unwrap();
            }
            keys.insert(
                (
                    c.key.pod_uid.as_str(),
                    c.key.container.as_str(),
                    c.key.restart_count,
                ),
                id,
            )
            .unwrap();
            baselines
                .insert(
                    (c.key.pod_uid.as_str(), c.key.container.as_str()),
                    c.key.restart_count,
                )
                .unwrap();
        }
        for (k, v) in [
            ("schema_version", version),
            ("next_id", captures.len() as u64 + 1),
            ("captures", captures.len() as u64),
            ("bundle_bytes", bundle_bytes),
            ("stored_bytes", stored_bytes),
            ("watched_until_ms", checkpoint_ms),
        ] {
            meta.insert(k, v).unwrap();
        }
    }
    txn.commit().unwrap();
}
