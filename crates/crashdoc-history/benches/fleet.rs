//! The fleet queries of the PostgreSQL store over 1,000,000 captures.
//!
//! `CRASHDOC_TEST_PG_URL` (without the password) and
//! `CRASHDOC_TEST_PG_PASSWORD_FILE` name the database; without them the
//! benchmark prints a skip line. `CRASHDOC_BENCH_CAPTURES` changes the
//! count. The history is loaded into a fresh schema with COPY (the store's
//! own table layout, then its derived tables rebuilt from the captures),
//! and dropped at the end unless `CRASHDOC_BENCH_KEEP=1`.
//!
//! The history: 4 clusters × 300 workloads (30 namespaces, the same
//! workload names in every cluster), crash-looping pods that live 1-3 days
//! and crash every ~5 minutes on one of 50 nodes per cluster, over 30 days;
//! each workload has a main cause, and one in ten gets a second cause in
//! its last week; rollouts every ~5 days (revisions).
//!
//! Each query runs through the `Store` API (channel, SQL, decoding), 7
//! times; the median is printed, then the plan (EXPLAIN ANALYZE) of one run.

use std::time::Instant;

use crashdoc_history::{
    Capture, CaptureKind, GroupBy, OpenOptions, PgStore, Query, Since, Store, TerminationKey,
};
use jiff::{SignedDuration, Timestamp};

fn rng(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

const CAUSES: [&str; 8] = [
    "oom-killed",
    "config-missing",
    "exit-1",
    "liveness-failed",
    "image-entrypoint",
    "permission-denied",
    "dependency-refused",
    "panic",
];

fn history(n: usize, start: Timestamp) -> Vec<Capture> {
    let mut out = Vec::with_capacity(n);
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let days = 30i64;
    let mut pod = 0u64;
    while out.len() < n {
        pod += 1;
        let cluster = format!("cluster-{}", pod % 4);
        let w = rng(&mut seed) % 300;
        let ns = format!("team-{:02}", w / 10);
        let owner = format!("svc-{w:03}");
        let born = (rng(&mut seed) % (days as u64 * 86_400)) as i64;
        let life = 86_400 + (rng(&mut seed) % (2 * 86_400)) as i64;
        let node = format!("node-{:02}", rng(&mut seed) % 50);
        let revision = format!("{owner}-r{}", born / (5 * 86_400));
        let main = CAUSES[(w % 8) as usize];
        let second = CAUSES[((w + 3) % 8) as usize];
        let uid = format!("{pod:08x}-uid");
        let pod_name = format!("{owner}-{:05x}", pod & 0xfffff);
        let mut t = born;
        let mut restart = 0;
        while t < (born + life).min(days * 86_400) && out.len() < n {
            let observed_at = start + SignedDuration::from_secs(t);
            let late = t > (days - 7) * 86_400;
            let cause = if w.is_multiple_of(10) && late && restart % 2 == 1 {
                second
            } else {
                main
            };
            out.push(Capture {
                key: TerminationKey::new(uid.clone(), "app", restart).in_cluster(cluster.clone()),
                namespace: ns.clone(),
                pod: pod_name.clone(),
                owner_kind: Some("Deployment".into()),
                owner: Some(owner.clone()),
                node: Some(node.clone()),
                revision: Some(revision.clone()),
                finished_at: Some(observed_at - SignedDuration::from_secs(2)),
                observed_at,
                reason: Some("Error".into()),
                exit_code: Some(1),
                signal: None,
                cause: Some(cause.into()),
                confidence: Some("high".into()),
                summary: Some(format!("{pod_name} crashed: {cause}")),
                diagnosis_json: None,
                kind: CaptureKind::Full,
                missing: vec![],
                logs: None,
                capture_delay_ms: Some(800),
                bundle: None,
            });
            restart += 1;
            t += 270 + (rng(&mut seed) % 60) as i64;
        }
    }
    out
}

fn median_ms(mut f: impl FnMut() -> usize) -> (f64, usize) {
    let mut times = Vec::new();
    let mut rows = 0;
    for _ in 0..7 {
        let t = Instant::now();
        rows = f();
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], rows)
}

fn main() {
    let (Ok(url), Ok(pw)) = (
        std::env::var("CRASHDOC_TEST_PG_URL"),
        std::env::var("CRASHDOC_TEST_PG_PASSWORD_FILE"),
    ) else {
        println!("SKIP: fleet bench (set CRASHDOC_TEST_PG_URL and CRASHDOC_TEST_PG_PASSWORD_FILE)");
        return;
    };
    let n: usize = std::env::var("CRASHDOC_BENCH_CAPTURES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let password = std::fs::read_to_string(&pw).expect("password file");
    let schema = format!("bench_{}", std::process::id());
    let sep = if url.contains('?') { '&' } else { '?' };
    let url = format!("{url}{sep}schema={schema}");
    let store = PgStore::connect(
        &url,
        Some(password.trim_end().to_string()),
        &OpenOptions::default(),
    )
    .expect("connect");
    let start = Timestamp::from_second(1_780_000_000).expect("time");
    let end = start + SignedDuration::from_hours(30 * 24);

    let t = Instant::now();
    let all = history(n, start);
    println!(
        "generated {} captures in {:.1} s",
        all.len(),
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let mut loaded = 0;
    for chunk in all.chunks(100_000) {
        loaded += store.bulk_load(chunk).expect("load");
    }
    println!(
        "COPY {loaded} captures in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    store.rebuild_derived().expect("rebuild");
    println!(
        "derived tables rebuilt in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    for line in store
        .query_text(
            "SELECT format('%s: %s rows, %s', relname, reltuples::bigint, pg_size_pretty(pg_total_relation_size(c.oid))) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '{S}' AND c.relkind = 'r' ORDER BY relname"
                .replace("{S}", &schema)
                .as_str(),
        )
        .expect("sizes")
    {
        println!("  {line}");
    }
    let sample = &all[all.len() / 2];
    let (workload_owner, revision) = (
        sample.owner.clone().unwrap_or_default(),
        sample.revision.clone().unwrap_or_default(),
    );
    drop(all);

    let week = Some(end - SignedDuration::from_hours(7 * 24) + SignedDuration::from_mins(17));
    let q_week = Query {
        since: week,
        ..Query::default()
    };
    let q_all = Query::default();
    let mut rows_out: Vec<(String, f64, usize, Vec<String>)> = Vec::new();
    let mut run = |name: String, f: &mut dyn FnMut() -> usize, plan: Vec<String>| {
        let (ms, rows) = median_ms(f);
        println!("{name:<58} {ms:>8.1} ms  ({rows} rows)");
        rows_out.push((name, ms, rows, plan));
    };
    for by in [
        GroupBy::Cluster,
        GroupBy::Cause,
        GroupBy::Namespace,
        GroupBy::Workload,
        GroupBy::Node,
    ] {
        for (label, q) in [("7 days", &q_week), ("all", &q_all)] {
            let plan = store.explain(q, Some(by), None).expect("explain");
            run(
                format!("group by {} ({label})", by.as_str()),
                &mut || store.group(q, by).expect("group").len(),
                plan,
            );
        }
    }
    let since_t = end - SignedDuration::from_hours(7 * 24);
    let plan = store
        .explain(&q_all, None, Some(Since::At(since_t)))
        .expect("explain");
    run(
        "new causes since a time (7 days ago)".into(),
        &mut || {
            store
                .new_causes(&q_all, Since::At(since_t))
                .expect("new")
                .len()
        },
        plan,
    );
    let q_w = Query {
        owner: Some(workload_owner.clone()),
        ..Query::default()
    };
    let plan = store
        .explain(&q_w, None, Some(Since::Revision(revision.clone())))
        .expect("explain");
    run(
        format!("new causes of {workload_owner} since revision {revision}"),
        &mut || {
            store
                .new_causes(&q_w, Since::Revision(revision.clone()))
                .expect("new")
                .len()
        },
        plan,
    );
    let plan = store
        .explain(&q_w, Some(GroupBy::Cluster), None)
        .expect("explain");
    run(
        format!("workload {workload_owner} across clusters (group by cluster)"),
        &mut || store.group(&q_w, GroupBy::Cluster).expect("group").len(),
        plan,
    );
    let q_list = Query {
        cluster: Some("cluster-2".into()),
        limit: Some(50),
        ..Query::default()
    };
    let plan = store.explain(&q_list, None, None).expect("explain");
    run(
        "list cluster-2, limit 50".into(),
        &mut || store.list(&q_list).expect("list").len(),
        plan,
    );
    println!();
    let mut seq_scans = 0;
    for (name, ms, _, plan) in &rows_out {
        println!("== {name}: {ms:.1} ms");
        for l in plan {
            if l.contains("Seq Scan on captures") {
                seq_scans += 1;
            }
            println!("   {l}");
        }
    }
    println!();
    println!(
        "slowest: {:.1} ms; sequential scans of captures: {seq_scans}",
        rows_out.iter().map(|r| r.1).fold(0.0, f64::max)
    );
    if std::env::var("CRASHDOC_BENCH_KEEP").as_deref() != Ok("1") {
        let _ = store.query_text("DROP SCHEMA {s} CASCADE");
    }
}
