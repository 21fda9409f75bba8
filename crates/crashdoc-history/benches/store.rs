//! What the history costs: inserts, listing, file size, pruning.
//!
//! `cargo bench -p crashdoc-history --bench store` (a plain binary, harness = false).
//! It prints figures; it asserts nothing about time.
//!
//! 1. Single inserts (one transaction and one disk sync each) and batches
//!    of 100, with ~50 KiB bundles and a ~4 KiB diagnosis, as a watcher
//!    records them; file size per capture.
//! 2. `list` latency over a history of 10k and of 100k captures (small
//!    bundles, since listing never reads them): a namespace holding 10% of
//!    them, with and without a limit, one pod, one workload, the last hour,
//!    the newest 50. Best of 5 runs each. Also `open`, `seen_keys`, `stats`.
//! 3. `prune` of half of the 100k history by count, then of a day by age,
//!    and by bytes on the 50 KiB history.
//!
//! Environment: `CRASHDOC_BENCH_DIR` (default: a temporary folder, deleted
//! afterwards), `CRASHDOC_BENCH_LARGE` (default 100000) sizes the large history.

use crashdoc_history::{Capture, CaptureKind, Query, RedbStore, Retention, TerminationKey};
use jiff::{SignedDuration, Timestamp};
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 8);
        while out.len() < len {
            out.extend_from_slice(&self.next().to_le_bytes());
        }
        out.truncate(len);
        out
    }
}

const NAMESPACES: usize = 10;
const OWNERS_PER_NS: usize = 20;
const PODS_PER_OWNER: usize = 5;

/// Capture `i` of a synthetic fleet: 10 namespaces × 20 Deployments × 5
/// pods, one capture a minute in turn, restart counts growing.
fn capture(i: usize, origin: Timestamp, bundle_len: usize, rng: &mut Rng) -> Capture {
    let ns = i % NAMESPACES;
    let owner = (i / NAMESPACES) % OWNERS_PER_NS;
    let pod = (i / (NAMESPACES * OWNERS_PER_NS)) % PODS_PER_OWNER;
    let restart = i / (NAMESPACES * OWNERS_PER_NS * PODS_PER_OWNER);
    let pod_name = format!("svc-{owner}-7d9c5b8f4-{pod:05}");
    let diagnosis = format!(
        r#"{{"schema":"crashdoc/v1","pod":"{pod_name}","causes":[{{"id":"oom-killed","confidence":"high","evidence":"{}"}}]}}"#,
        "x".repeat(4000)
    );
    Capture {
        key: TerminationKey::new(
            format!("0d6f{ns:02}{owner:03}-{pod:04}-4c2a-9e1b-5a7f3c2d1e0f"),
            "server",
            i32::try_from(restart).unwrap_or(i32::MAX),
        ),
        namespace: format!("team-{ns}"),
        pod: pod_name,
        owner_kind: Some("Deployment".into()),
        owner: Some(format!("svc-{owner}")),
        node: Some(format!("node-{}", i % 37)),
        revision: None,
        finished_at: Some(
            origin + SignedDuration::from_mins(i as i64) - SignedDuration::from_secs(2),
        ),
        observed_at: origin + SignedDuration::from_mins(i as i64),
        reason: Some("OOMKilled".into()),
        exit_code: Some(137),
        signal: None,
        cause: Some("oom-killed".into()),
        confidence: Some("high".into()),
        summary: Some("killed at its 512Mi memory limit while loading the model".into()),
        diagnosis_json: Some(diagnosis),
        kind: CaptureKind::Full,
        missing: vec![],
        logs: None,
        capture_delay_ms: None,
        bundle: Some(rng.bytes(bundle_len)),
    }
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// Bytes the file occupies on disk: redb grows the file ahead of use
/// (doubling it up to 4 GiB), and the part not yet written is sparse.
fn disk_usage(path: &Path) -> u64 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path)
            .map(|m| m.blocks() * 512)
            .unwrap_or(0)
    }
    #[cfg(not(unix))]
    {
        file_len(path)
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..runs {
        let t = Instant::now();
        let v = f();
        best = best.min(t.elapsed());
        out = Some(v);
    }
    (best, out.expect("at least one run"))
}

fn writes(dir: &Path, origin: Timestamp) {
    println!("== inserts with ~50 KiB bundles and a ~4 KiB diagnosis");
    let path = dir.join("writes.redb");
    let store = RedbStore::open(&path).expect("open");
    let mut rng = Rng(0x5eed);
    let bundle = 50 * 1024;

    let n_single = 300;
    let caps: Vec<Capture> = (0..n_single)
        .map(|i| capture(i, origin, bundle, &mut rng))
        .collect();
    let t = Instant::now();
    for c in &caps {
        store.insert(c).expect("insert");
    }
    let d = t.elapsed();
    println!(
        "single inserts:        {:>8.0} /s   ({n_single} inserts, {:.2} ms each; one fsync each)",
        n_single as f64 / d.as_secs_f64(),
        ms(d) / n_single as f64
    );
    let t = Instant::now();
    for c in &caps[..100] {
        black_box(store.insert(c).expect("insert"));
    }
    println!(
        "duplicate inserts:     {:>8.0} /s   (a key already stored: a read, no write)",
        100.0 / t.elapsed().as_secs_f64()
    );

    let n_batches = 30;
    let mut batched = Duration::ZERO;
    for b in 0..n_batches {
        let caps: Vec<Capture> = (0..100)
            .map(|j| capture(n_single + b * 100 + j, origin, bundle, &mut rng))
            .collect();
        let t = Instant::now();
        store.insert_batch(&caps).expect("batch");
        batched += t.elapsed();
    }
    let n = n_batches * 100;
    println!(
        "batched inserts:       {:>8.0} /s   ({n_batches} batches of 100, {:.1} ms a batch)",
        n as f64 / batched.as_secs_f64(),
        ms(batched) / n_batches as f64
    );

    let stats = store.stats().expect("stats");
    let (len, used) = (file_len(&path), disk_usage(&path));
    let n = stats.captures as f64;
    println!(
        "file size:             {:>8.1} KiB per capture on disk ({:.0} MiB for {} captures; stored {:.1} KiB each: bundle 50.0 + diagnosis and record {:.1}; {:.0}% overhead); file length {:.0} MiB",
        used as f64 / n / 1024.0,
        mib(used),
        stats.captures,
        stats.stored_bytes as f64 / n / 1024.0,
        (stats.stored_bytes - stats.bundle_bytes) as f64 / n / 1024.0,
        (used as f64 / stats.stored_bytes as f64 - 1.0) * 100.0,
        mib(len),
    );

    let (d, _) = best_of(3, || store.get(1234).expect("get"));
    println!("get with bundle:       {:>8.3} ms", ms(d));

    // Prune by bytes to half, then refill: the file does not grow back.
    let target = stats.stored_bytes / 2;
    let t = Instant::now();
    let out = store
        .prune(
            &Retention {
                max_bytes: Some(target),
                ..Retention::default()
            },
            origin,
        )
        .expect("prune");
    println!(
        "prune by bytes:        {:>8.1} ms   (removed {}, freed {:.1} MiB)",
        ms(t.elapsed()),
        out.removed,
        mib(out.bytes_freed)
    );
    let before = disk_usage(&path);
    let caps: Vec<Capture> = (0..out.removed as usize)
        .map(|j| capture(100_000 + j, origin, bundle, &mut rng))
        .collect();
    for chunk in caps.chunks(100) {
        store.insert_batch(chunk).expect("refill");
    }
    println!(
        "refill after prune:    {:.1} MiB -> {:.1} MiB on disk (freed pages are reused)",
        mib(before),
        mib(disk_usage(&path))
    );
}

fn reads(dir: &Path, origin: Timestamp, count: usize) {
    println!("\n== a history of {count} captures (~2 KiB bundles, ~4 KiB diagnosis)");
    let path = dir.join(format!("reads-{count}.redb"));
    let mut rng = Rng(0xfeed ^ count as u64);
    let t = Instant::now();
    {
        let store = RedbStore::open(&path).expect("open");
        let mut i = 0;
        while i < count {
            let n = 1000.min(count - i);
            let caps: Vec<Capture> = (i..i + n)
                .map(|j| capture(j, origin, 2048, &mut rng))
                .collect();
            store.insert_batch(&caps).expect("fill");
            i += n;
        }
    }
    println!(
        "fill:                  {:>8.1} s    (batches of 1000), {:.0} MiB on disk",
        t.elapsed().as_secs_f64(),
        mib(disk_usage(&path))
    );

    let (d, store) = best_of(3, || RedbStore::open_read_only(&path).expect("open"));
    println!("open read-only:        {:>8.3} ms", ms(d));
    let (d, keys) = best_of(3, || store.seen_keys().expect("keys"));
    println!(
        "seen_keys:             {:>8.1} ms   ({} keys)",
        ms(d),
        keys.len()
    );
    let (d, _) = best_of(5, || store.stats().expect("stats"));
    println!("stats:                 {:>8.3} ms", ms(d));

    let newest = origin + SignedDuration::from_mins(count as i64);
    let cases: Vec<(&str, Query)> = vec![
        (
            "namespace (10%)",
            Query {
                namespace: Some("team-3".into()),
                ..Query::default()
            },
        ),
        (
            "namespace + diagnoses",
            Query {
                namespace: Some("team-3".into()),
                with_diagnosis: true,
                ..Query::default()
            },
        ),
        (
            "namespace, limit 50",
            Query {
                namespace: Some("team-3".into()),
                limit: Some(50),
                ..Query::default()
            },
        ),
        (
            "workload (0.5%)",
            Query {
                namespace: Some("team-3".into()),
                owner_kind: Some("Deployment".into()),
                owner: Some("svc-7".into()),
                ..Query::default()
            },
        ),
        (
            "pod (0.1%)",
            Query {
                namespace: Some("team-3".into()),
                pod: Some("svc-7-7d9c5b8f4-00002".into()),
                ..Query::default()
            },
        ),
        (
            "pod, last day",
            Query {
                pod: Some("svc-7-7d9c5b8f4-00002".into()),
                since: Some(newest - SignedDuration::from_hours(24)),
                ..Query::default()
            },
        ),
        (
            "newest 50",
            Query {
                limit: Some(50),
                ..Query::default()
            },
        ),
        (
            "no match",
            Query {
                namespace: Some("nope".into()),
                ..Query::default()
            },
        ),
    ];
    for (name, q) in cases {
        let (d, out) = best_of(5, || store.list(&q).expect("list"));
        println!(
            "list {name:<22} {:>8.2} ms   ({} records)",
            ms(d),
            out.len()
        );
    }
    drop(store);

    let store = RedbStore::open(&path).expect("open");
    let t = Instant::now();
    let out = store
        .prune(
            &Retention {
                max_captures: Some(count as u64 / 2),
                ..Retention::default()
            },
            newest,
        )
        .expect("prune");
    println!(
        "prune half by count:   {:>8.1} ms   (removed {})",
        ms(t.elapsed()),
        out.removed
    );
    let t = Instant::now();
    let out = store
        .prune(
            &Retention {
                max_age: Some(SignedDuration::from_hours((count as i64 / 2 / 60) - 24)),
                ..Retention::default()
            },
            newest,
        )
        .expect("prune");
    println!(
        "prune a day by age:    {:>8.1} ms   (removed {})",
        ms(t.elapsed()),
        out.removed
    );
    let t = Instant::now();
    let out = store
        .prune(
            &Retention {
                max_captures: Some(count as u64 / 2),
                ..Retention::default()
            },
            newest,
        )
        .expect("prune");
    println!(
        "prune, nothing to do:  {:>8.3} ms   (removed {})",
        ms(t.elapsed()),
        out.removed
    );
}

fn main() {
    let large: usize = std::env::var("CRASHDOC_BENCH_LARGE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let tmp;
    let dir = match std::env::var_os("CRASHDOC_BENCH_DIR") {
        Some(d) => std::path::PathBuf::from(d),
        None => {
            tmp = tempfile::tempdir().expect("tempdir");
            tmp.path().to_path_buf()
        }
    };
    std::fs::create_dir_all(&dir).expect("bench dir");
    let origin = Timestamp::from_second(1_750_000_000).expect("origin");
    writes(&dir, origin);
    reads(&dir, origin, 10_000);
    if large > 10_000 {
        reads(&dir, origin, large);
    }
}
