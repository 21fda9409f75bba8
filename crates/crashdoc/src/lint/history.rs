//! `crashdoc lint --history PATH`: the startups `crashdoc watch`'s history
//! measured, per workload, for probe/budget-below-measured-startup.
//!
//! Each stored capture's bundle is read as `crashdoc analyze` reads it
//! (crashdoc-core's bundle reader, in memory) and measured with the probe-kill
//! rule's `startup_seconds`: the log's serving line, or how long a run that
//! died before serving lasted. The longest per workload is kept.

use anyhow::Context as _;
use crashdoc_core::ingest::bundle::{PodFiles, read_memory};
use crashdoc_history::{Query, RedbStore};
use crashdoc_lint::MeasuredStartup;
use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::Path;

/// The largest file read out of one stored bundle (the watcher caps logs far below this).
const MAX_FILE: u64 = 64 << 20;

/// A pod's files by (namespace, name).
type Pods = BTreeMap<(String, String), Vec<(String, Vec<u8>)>>;

/// The pods of a stored bundle (`.tar.gz` bytes), as the bundle writer laid them out.
fn unpack(bytes: &[u8]) -> std::io::Result<Vec<PodFiles>> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut pods = Pods::new();
    for entry in archive.entries()? {
        let entry = entry?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry.path()?.to_string_lossy().into_owned();
        // pods/NAMESPACE/NAME/FILE, possibly under one wrapping folder.
        let parts: Vec<&str> = path.trim_start_matches("./").split('/').collect();
        let Some(i) = parts.iter().position(|p| *p == "pods") else {
            continue;
        };
        let [ns, name, file] = parts[i + 1..] else {
            continue;
        };
        let key = (ns.to_string(), name.to_string());
        let file = file.to_string();
        let mut buf = Vec::new();
        entry.take(MAX_FILE).read_to_end(&mut buf)?;
        pods.entry(key).or_default().push((file, buf));
    }
    Ok(pods
        .into_iter()
        .map(|((namespace, name), files)| PodFiles {
            namespace,
            name,
            files,
        })
        .collect())
}

/// The longest startup each workload of the history shows.
pub fn startups(path: &Path) -> anyhow::Result<(Vec<MeasuredStartup>, usize)> {
    let store = RedbStore::open_read_only(path)
        .with_context(|| format!("cannot read the history {}", path.display()))?;
    let records = store
        .list(&Query::default())
        .with_context(|| format!("cannot list the history {}", path.display()))?;
    let mut best: BTreeMap<(String, String, String), MeasuredStartup> = BTreeMap::new();
    let mut read = 0;
    for r in &records {
        if r.bundle_len == 0 {
            continue;
        }
        let Some(bytes) = store
            .bundle(r.id)
            .with_context(|| format!("cannot read capture {}", r.id))?
        else {
            continue;
        };
        // A bundle that does not unpack is skipped: the others still count.
        let Ok(pods) = unpack(&bytes) else { continue };
        read += 1;
        let ev = read_memory(&pods);
        let c = &r.capture;
        let (kind, name) = match (&c.owner_kind, &c.owner) {
            (Some(k), Some(o)) if !k.is_empty() && !o.is_empty() => (k.clone(), o.clone()),
            _ => ("Pod".to_string(), c.pod.clone()),
        };
        for pod in &ev.pods {
            let cx = crashdoc_core::rules::Context::new(pod);
            let Some((secs, how)) = crashdoc_core::rules::facts::startup_seconds(&cx) else {
                continue;
            };
            let Ok(secs) = u64::try_from(secs) else {
                continue;
            };
            let m = MeasuredStartup {
                namespace: c.namespace.clone(),
                kind: kind.clone(),
                name: name.clone(),
                seconds: secs,
                source: format!(
                    "watch history capture {} of pod {}, {}: {how}",
                    r.id, c.pod, c.observed_at
                ),
            };
            let key = (m.namespace.clone(), m.kind.clone(), m.name.clone());
            match best.get(&key) {
                Some(b) if b.seconds >= m.seconds => {}
                _ => {
                    best.insert(key, m);
                }
            }
        }
    }
    Ok((best.into_values().collect(), read))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashdoc_core::ingest::bundle::tar_gz_bytes;
    use crashdoc_history::{Capture, CaptureKind, TerminationKey};

    /// A bundle of one pod of Deployment `search` whose log says it served after `secs`.
    fn bundle(pod: &str, secs: u32) -> Vec<u8> {
        let log = format!(
            "2026-12-01T10:00:00.000Z loading index\n2026-12-01T10:00:01.000Z Started SearchApplication in {secs}.4 seconds (process running for {secs}.9)\n"
        );
        let pod_json = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod, "namespace": "prod",
                "ownerReferences": [{"kind": "ReplicaSet", "name": "search-7d9f8", "controller": true}]},
            "spec": {"containers": [{"name": "search", "image": "ghcr.io/acme/search:4.0.2"}]}
        });
        let files = vec![
            ("pod.json".to_string(), pod_json.to_string().into_bytes()),
            ("logs.search.txt".to_string(), log.into_bytes()),
        ];
        tar_gz_bytes(
            &[PodFiles {
                namespace: "prod".into(),
                name: pod.into(),
                files,
            }],
            None,
            "@1764583200",
        )
        .unwrap()
    }

    fn capture(pod: &str, restart: i32, owner: Option<&str>, bundle: Option<Vec<u8>>) -> Capture {
        Capture {
            key: TerminationKey::new(format!("{pod}-uid"), "search", restart),
            namespace: "prod".into(),
            pod: pod.into(),
            owner_kind: owner.map(|_| "Deployment".into()),
            owner: owner.map(str::to_string),
            node: None,
            revision: None,
            finished_at: None,
            observed_at: jiff::Timestamp::from_second(1_764_583_200 + i64::from(restart)).unwrap(),
            reason: Some("Error".into()),
            exit_code: Some(137),
            signal: None,
            cause: Some("probe-kill".into()),
            confidence: None,
            summary: None,
            diagnosis_json: None,
            kind: if bundle.is_some() {
                CaptureKind::Full
            } else {
                CaptureKind::StatusOnly
            },
            missing: vec![],
            logs: None,
            capture_delay_ms: None,
            bundle,
        }
    }

    #[test]
    fn the_longest_startup_per_workload_comes_from_the_stored_bundles() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("history.redb");
        {
            let s = RedbStore::open(&db).unwrap();
            s.insert(&capture(
                "search-7d9f8-a",
                1,
                Some("search"),
                Some(bundle("search-7d9f8-a", 95)),
            ))
            .unwrap();
            s.insert(&capture(
                "search-7d9f8-b",
                2,
                Some("search"),
                Some(bundle("search-7d9f8-b", 241)),
            ))
            .unwrap();
            // A status-only capture has no bundle, so no log to measure.
            s.insert(&capture("search-7d9f8-c", 3, Some("search"), None))
                .unwrap();
            // A bare pod is its own workload.
            s.insert(&capture("one-off", 4, None, Some(bundle("one-off", 12))))
                .unwrap();
        }
        let (m, read) = startups(&db).unwrap();
        assert_eq!(read, 3);
        assert_eq!(m.len(), 2, "{m:#?}");
        let search = m.iter().find(|x| x.kind == "Deployment").unwrap();
        assert_eq!(
            (search.namespace.as_str(), search.name.as_str()),
            ("prod", "search")
        );
        assert_eq!(search.seconds, 242);
        assert!(
            search.source.contains("of pod search-7d9f8-b"),
            "{}",
            search.source
        );
        let pod = m.iter().find(|x| x.kind == "Pod").unwrap();
        assert_eq!((pod.name.as_str(), pod.seconds), ("one-off", 13));

        // Through lint: the manifest's 60 s liveness budget against 242 s.
        let c = crashdoc_lint::check("probe/budget-below-measured-startup").unwrap();
        let yaml = c
            .example
            .replace(
                "  annotations:\n    crashdoc.io/startup-seconds: \"240\"\n",
                "",
            )
            .replacen("name: search\n", "name: search\n  namespace: prod\n", 1);
        let mut input = crashdoc_lint::input::Input::default();
        input.read_bytes("deploy.yaml", yaml.as_bytes()).unwrap();
        assert_eq!(crashdoc_lint::apply_startups(&mut input, &m), 1);
        let r = crashdoc_lint::lint(&input, &Default::default());
        let f: Vec<_> = r.findings.iter().filter(|f| f.check.id == c.id).collect();
        assert_eq!(f.len(), 1);
        assert!(
            f[0].message.contains("need 242s (watch history capture"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn a_missing_history_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(startups(&dir.path().join("none.redb")).is_err());
    }
}
