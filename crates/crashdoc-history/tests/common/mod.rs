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
