//! One behaviour suite for every [`Store`]: each test is written once
//! against `&dyn Store` and runs on a redb file (`redb::…`) and on
//! PostgreSQL (`pg::…`, a fresh schema per test) when
//! `CRASHDOC_TEST_PG_URL` (a URL without the password) and
//! `CRASHDOC_TEST_PG_PASSWORD_FILE` are set. Without them the PostgreSQL
//! half prints a skip line, unless `CRASHDOC_REQUIRE_PG=1`: then it fails.

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use common::{at, capture};
use crashdoc_history::{
    Capture, ConfigKeys, GroupBy, HistoryError, Inserted, Location, OpenOptions, Query, Record,
    RedbStore, Retention, Since, Store, fleet,
};

/// Opens a handle on the test's history, for a cluster or unscoped.
type Opener = Box<dyn Fn(Option<&str>) -> Arc<dyn Store>>;

/// A fresh, empty history and the means to open handles on it.
pub struct Env {
    kind: &'static str,
    open: Opener,
    check: Box<dyn Fn()>,
    _keep: Box<dyn std::any::Any>,
}

impl Env {
    fn store(&self) -> Arc<dyn Store> {
        (self.open)(None)
    }
    fn for_cluster(&self, c: &str) -> Arc<dyn Store> {
        (self.open)(Some(c))
    }
}

fn redb_env() -> Env {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = Arc::new(RedbStore::open(&dir.path().join("h.redb")).expect("open"));
    let b2 = base.clone();
    let b3 = base.clone();
    Env {
        kind: "redb",
        open: Box::new(move |c| Arc::new(b2.with_cluster(c.map(str::to_string)))),
        check: Box::new(move || b3.check_consistency().expect("consistent")),
        _keep: Box::new((dir, base)),
    }
}

pub struct Pg {
    pub url: String,
    pub password_file: std::path::PathBuf,
}

/// The test database, or `None` (after a skip line) when it is not configured.
pub fn pg_config() -> Option<Pg> {
    match (
        std::env::var("CRASHDOC_TEST_PG_URL"),
        std::env::var("CRASHDOC_TEST_PG_PASSWORD_FILE"),
    ) {
        (Ok(url), Ok(pw)) if !url.is_empty() => Some(Pg {
            url,
            password_file: pw.into(),
        }),
        _ => {
            if std::env::var("CRASHDOC_REQUIRE_PG").as_deref() == Ok("1") {
                panic!(
                    "CRASHDOC_REQUIRE_PG=1 but CRASHDOC_TEST_PG_URL / CRASHDOC_TEST_PG_PASSWORD_FILE are not set"
                );
            }
            println!(
                "SKIP: PostgreSQL half (set CRASHDOC_TEST_PG_URL and CRASHDOC_TEST_PG_PASSWORD_FILE)"
            );
            None
        }
    }
}

/// A schema name no other test uses.
pub fn fresh_schema() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "t_{}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        nanos
    )
}

pub fn with_schema(url: &str, schema: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}schema={schema}")
}

pub fn pg_open(pg: &Pg, url: &str, cluster: Option<&str>) -> Arc<dyn Store> {
    let o = OpenOptions {
        cluster: cluster.map(str::to_string),
        password_file: Some(pg.password_file.clone()),
        ..OpenOptions::default()
    };
    crashdoc_history::open(&Location::Postgres(url.to_string()), &o).expect("open postgres")
}

/// Drops the test's schema at the end.
struct DropSchema(Arc<crashdoc_history::PgStore>);
impl Drop for DropSchema {
    fn drop(&mut self) {
        let _ = self.0.query_text("DROP SCHEMA {s} CASCADE");
    }
}

fn pg_direct(pg: &Pg, url: &str) -> Arc<crashdoc_history::PgStore> {
    let pw = std::fs::read_to_string(&pg.password_file).expect("password file");
    Arc::new(
        crashdoc_history::PgStore::connect(
            url,
            Some(pw.trim_end().to_string()),
            &OpenOptions::default(),
        )
        .expect("connect"),
    )
}

fn pg_env() -> Option<Env> {
    let pg = pg_config()?;
    let url = with_schema(&pg.url, &fresh_schema());
    let direct = pg_direct(&pg, &url);
    let d2 = direct.clone();
    let u2 = url.clone();
    Some(Env {
        kind: "pg",
        open: Box::new(move |c| pg_open(&pg, &u2, c)),
        check: Box::new(move || d2.check_consistency().expect("consistent")),
        _keep: Box::new(DropSchema(direct)),
    })
}

macro_rules! parity {
    ($($name:ident),* $(,)?) => {
        mod redb {
            $(#[test] fn $name() { super::$name(&super::redb_env()) })*
        }
        mod pg {
            $(#[test] fn $name() { if let Some(env) = super::pg_env() { super::$name(&env) } })*
        }
    };
}

parity!(
    insert_dedup_and_batches,
    one_pod_uid_in_two_clusters_is_two_captures,
    list_filters_limits_and_order,
    get_bundle_and_diagnosis,
    config_keys_round_trip,
    prune_is_per_cluster,
    checkpoints_and_baselines_are_per_cluster,
    stats_follow_inserts_and_prunes,
    group_matches_the_reference,
    new_causes_match_the_reference,
    concurrent_writers_store_each_key_once,
    read_only_handles_refuse_writes,
);

fn in_cluster(mut c: Capture, cluster: &str) -> Capture {
    c.key.cluster = cluster.to_string();
    c
}

fn insert_dedup_and_batches(env: &Env) {
    let s = env.store();
    let a = capture("shop", "web-1", Some("web"), "web", 1, 10, 100);
    let b = capture("shop", "web-1", Some("web"), "web", 2, 20, 0);
    let Inserted::New(ia) = s.insert(&a).unwrap() else {
        panic!("{}: new", env.kind)
    };
    assert_eq!(s.insert(&a).unwrap(), Inserted::Duplicate(ia));
    // A retried capture (same key, other content) is stored once.
    let mut retried = a.clone();
    retried.summary = Some("retried".into());
    assert_eq!(s.insert(&retried).unwrap(), Inserted::Duplicate(ia));
    let c = capture("shop", "web-2", Some("web"), "web", 0, 30, 10);
    let out = s
        .insert_batch(&[b.clone(), c.clone(), b.clone(), a.clone()])
        .unwrap();
    let (Inserted::New(ib), Inserted::New(ic)) = (out[0], out[1]) else {
        panic!("{}: {out:?}", env.kind)
    };
    assert!(ib != ic && ib != ia && ic != ia);
    assert_eq!(out[2], Inserted::Duplicate(ib));
    assert_eq!(out[3], Inserted::Duplicate(ia));
    assert!(s.insert_batch(&[]).unwrap().is_empty());
    let all = s.list(&Query::default()).unwrap();
    assert_eq!(all.len(), 3, "{}", env.kind);
    assert_eq!(
        all.iter().find(|r| r.id == ia).unwrap().capture.summary,
        a.summary,
        "the first capture is kept"
    );
    assert!(s.contains(&a.key).unwrap());
    assert!(!s.contains(&a.key.clone().in_cluster("x")).unwrap());
    let keys = s.seen_keys().unwrap();
    assert_eq!(
        keys,
        HashSet::from([a.key.clone(), b.key.clone(), c.key.clone()])
    );
    (env.check)();
}

fn one_pod_uid_in_two_clusters_is_two_captures(env: &Env) {
    let s = env.store();
    let c = capture("shop", "web-1", Some("web"), "web", 1, 10, 10);
    let (x, y) = (in_cluster(c.clone(), "east"), in_cluster(c.clone(), "west"));
    let out = s.insert_batch(&[x.clone(), y.clone()]).unwrap();
    assert!(out.iter().all(|i| i.is_new()), "{}: {out:?}", env.kind);
    assert_eq!(s.list(&Query::default()).unwrap().len(), 2);
    let east = Query {
        cluster: Some("east".into()),
        ..Query::default()
    };
    let l = s.list(&east).unwrap();
    assert_eq!(l.len(), 1);
    assert_eq!(l[0].capture.key, x.key);
    let e = env.for_cluster("east");
    assert_eq!(e.seen_keys().unwrap(), HashSet::from([x.key.clone()]));
    assert_eq!(e.insert(&x).unwrap(), Inserted::Duplicate(l[0].id));
    assert_eq!(s.seen_keys().unwrap().len(), 2, "unscoped: every cluster");
    (env.check)();
}

/// A history over several hours, clusters, namespaces, workloads, causes
/// and nodes, with equal timestamps and revisions.
fn fleet_fixture() -> Vec<Capture> {
    let mut out = Vec::new();
    let causes = ["oom-killed", "config-missing", "", "exit-1"];
    let mut i = 0i64;
    for (ci, cluster) in ["east", "west", ""].iter().enumerate() {
        for (ni, ns) in ["shop", "batch"].iter().enumerate() {
            for pod in 0..3 {
                let owner = (pod < 2).then_some(if ni == 0 { "web" } else { "etl" });
                let pod_name = format!("{}-{pod}", owner.unwrap_or("solo"));
                for restart in 0..4 {
                    i += 1;
                    // Spread over ~5 hours, not aligned to them; some ties.
                    let secs = 1_800 + (i * 617) % 18_000;
                    let mut c = capture(ns, &pod_name, owner, "main", restart, secs, 0);
                    c.key.cluster = cluster.to_string();
                    c.key.pod_uid = format!("{cluster}-{ns}-{pod_name}-uid");
                    c.cause = Some(causes[(ci + ni + pod + restart as usize / 2) % 4].to_string())
                        .filter(|c| !c.is_empty());
                    c.node = (restart % 3 != 2).then(|| format!("node-{}", (pod + ci) % 3));
                    c.revision = Some(if restart < 2 { "rev-a" } else { "rev-b" }.to_string());
                    if pod == 2 && restart == 3 {
                        c.observed_at = at(5_000); // ties across pods
                    }
                    out.push(c);
                }
            }
        }
    }
    out
}

fn load(s: &dyn Store, cs: &[Capture]) -> Vec<Record> {
    for chunk in cs.chunks(7) {
        s.insert_batch(chunk).unwrap();
    }
    s.list(&Query::default()).unwrap()
}

/// The reference of [`Store::list`] on `all` (newest first).
fn filter(all: &[Record], q: &Query) -> Vec<u64> {
    let eq = |f: &Option<String>, v: &str| f.as_deref().is_none_or(|f| f == v);
    let mut v: Vec<&Record> = all
        .iter()
        .filter(|r| {
            let c = &r.capture;
            eq(&q.cluster, &c.key.cluster)
                && eq(&q.namespace, &c.namespace)
                && eq(&q.pod, &c.pod)
                && eq(&q.pod_uid, &c.key.pod_uid)
                && eq(&q.owner_kind, c.owner_kind.as_deref().unwrap_or(""))
                && eq(&q.owner, c.owner.as_deref().unwrap_or(""))
                && eq(&q.container, &c.key.container)
                && q.since.is_none_or(|t| c.observed_at >= t)
                && q.until.is_none_or(|t| c.observed_at < t)
        })
        .collect();
    v.sort_by(|a, b| {
        b.capture
            .observed_at
            .cmp(&a.capture.observed_at)
            .then(b.id.cmp(&a.id))
    });
    v.into_iter()
        .take(q.limit.unwrap_or(usize::MAX))
        .map(|r| r.id)
        .collect()
}

fn queries() -> Vec<Query> {
    let mut out = vec![Query::default()];
    let s = |v: &str| Some(v.to_string());
    for cluster in [None, s("east"), s("")] {
        for (namespace, owner, pod) in [
            (None, None, None),
            (s("shop"), None, None),
            (None, s("web"), None),
            (s("batch"), s(""), None),
            (None, None, s("web-1")),
        ] {
            for (since, until, limit) in [
                (None, None, None),
                (Some(at(4_000)), None, None),
                (None, Some(at(9_999)), Some(5)),
                (Some(at(2_500)), Some(at(13_000)), None),
                (Some(at(5_000)), Some(at(5_001)), None),
            ] {
                out.push(Query {
                    cluster: cluster.clone(),
                    namespace: namespace.clone(),
                    owner: owner.clone(),
                    pod: pod.clone(),
                    since,
                    until,
                    limit,
                    ..Query::default()
                });
            }
        }
    }
    out.push(Query {
        owner_kind: s("Deployment"),
        container: s("main"),
        ..Query::default()
    });
    out.push(Query {
        pod_uid: s("west-shop-web-0-uid"),
        ..Query::default()
    });
    out.push(Query {
        limit: Some(0),
        ..Query::default()
    });
    out
}

fn list_filters_limits_and_order(env: &Env) {
    let s = env.store();
    let all = load(&*s, &fleet_fixture());
    assert_eq!(all.len(), fleet_fixture().len());
    for q in queries() {
        let got: Vec<u64> = s.list(&q).unwrap().iter().map(|r| r.id).collect();
        assert_eq!(got, filter(&all, &q), "{}: {q:?}", env.kind);
    }
}

fn get_bundle_and_diagnosis(env: &Env) {
    let s = env.store();
    let a = capture("shop", "web-1", Some("web"), "web", 1, 10, 70_000);
    let b = capture("shop", "web-1", Some("web"), "web", 2, 20, 0);
    let ia = s.insert(&a).unwrap().id().unwrap();
    let ib = s.insert(&b).unwrap().id().unwrap();
    let r = s.get(ia).unwrap().unwrap();
    assert_eq!(r.capture, a, "{}: the capture round-trips", env.kind);
    assert_eq!(r.bundle_len, 70_000);
    assert_eq!(s.bundle(ia).unwrap(), a.bundle);
    assert_eq!(s.bundle(ib).unwrap(), None);
    assert_eq!(s.get(ib).unwrap().unwrap().capture, b);
    assert!(s.get(ib + 1000).unwrap().is_none());
    let l = s.list(&Query::default()).unwrap();
    assert!(
        l.iter()
            .all(|r| r.capture.bundle.is_none() && r.capture.diagnosis_json.is_none())
    );
    assert_eq!(l[1].bundle_len, 70_000);
    let l = s
        .list(&Query {
            with_diagnosis: true,
            ..Query::default()
        })
        .unwrap();
    assert_eq!(l[1].capture.diagnosis_json, a.diagnosis_json);
    assert_eq!(l[0].capture.diagnosis_json, b.diagnosis_json);
}

fn cm(name: &str) -> ConfigKeys {
    ConfigKeys {
        kind: "ConfigMap".into(),
        name: name.into(),
        exists: Some(true),
        keys: vec!["A".into(), "B".into()],
        changed: None,
    }
}

fn config_keys_round_trip(env: &Env) {
    let s = env.store();
    let a = capture("shop", "web-1", Some("web"), "web", 1, 10, 10);
    let b = capture("shop", "web-1", Some("web"), "web", 2, 20, 10);
    let ka = [cm("one"), cm("two")];
    let out = s
        .insert_batch_with_keys(&[(&a, &ka[..]), (&b, &[][..])])
        .unwrap();
    let (ia, ib) = (out[0].id().unwrap(), out[1].id().unwrap());
    let got = s.config_keys(&[ia, ib, 9999]).unwrap();
    assert_eq!(got, HashMap::from([(ia, ka.to_vec())]), "{}", env.kind);
}

fn prune_is_per_cluster(env: &Env) {
    let (east, west) = (env.for_cluster("east"), env.for_cluster("west"));
    for i in 0..5 {
        let c = capture("shop", "web-1", Some("web"), "web", i, 10 + i as i64, 100);
        east.insert(&in_cluster(c.clone(), "east")).unwrap();
        if i < 3 {
            west.insert(&in_cluster(c, "west")).unwrap();
        }
    }
    let r = Retention {
        max_captures: Some(2),
        ..Retention::default()
    };
    let p = east.prune(&r, at(100)).unwrap();
    assert_eq!(p.removed, 3, "{}", env.kind);
    assert!(p.bytes_freed > 300);
    let left = east.list(&Query::default()).unwrap();
    assert_eq!(left.len(), 5, "west untouched: {left:?}");
    let east_left: Vec<i32> = left
        .iter()
        .filter(|r| r.capture.key.cluster == "east")
        .map(|r| r.capture.key.restart_count)
        .collect();
    assert_eq!(east_left, vec![4, 3], "the oldest went");
    assert_eq!(east.stats().unwrap().captures, 2);
    assert_eq!(west.stats().unwrap().captures, 3);
    (env.check)();
    // Age and bytes.
    let p = west
        .prune(
            &Retention {
                max_age: Some(jiff::SignedDuration::from_secs(100 - 11)),
                ..Retention::default()
            },
            at(100),
        )
        .unwrap();
    assert_eq!(p.removed, 1, "only the capture at 10 s is older than 89 s");
    let one = west.stats().unwrap().stored_bytes / 2;
    let p = west
        .prune(
            &Retention {
                max_bytes: Some(one),
                ..Retention::default()
            },
            at(100),
        )
        .unwrap();
    assert_eq!(p.removed, 1);
    assert!(west.stats().unwrap().stored_bytes <= one);
    // A pruned key can be captured again.
    let again = in_cluster(
        capture("shop", "web-1", Some("web"), "web", 0, 10, 100),
        "east",
    );
    assert!(east.insert(&again).unwrap().is_new());
    (env.check)();
}

fn checkpoints_and_baselines_are_per_cluster(env: &Env) {
    let (east, west) = (env.for_cluster("east"), env.for_cluster("west"));
    assert_eq!(east.checkpoint().unwrap(), None);
    let t = jiff::Timestamp::from_millisecond(1_750_000_123_456).unwrap();
    east.set_checkpoint(t).unwrap();
    assert_eq!(east.checkpoint().unwrap(), Some(t), "{}", env.kind);
    assert_eq!(west.checkpoint().unwrap(), None);
    east.set_checkpoint(at(5)).unwrap();
    assert_eq!(east.checkpoint().unwrap(), Some(at(5)));
    let set = |v: &[(&str, &str, i32)]| -> Vec<(String, String, i32)> {
        v.iter()
            .map(|(a, b, n)| (a.to_string(), b.to_string(), *n))
            .collect()
    };
    let none = HashSet::new();
    east.update_baselines(&set(&[("p1", "c", 3), ("p2", "c", 1)]), &none, None)
        .unwrap();
    west.update_baselines(&set(&[("p1", "c", 9)]), &none, None)
        .unwrap();
    east.update_baselines(&set(&[("p1", "c", 2), ("p2", "c", 4)]), &none, None)
        .unwrap();
    let b = east.baselines().unwrap();
    assert_eq!(
        b,
        HashMap::from([
            (("p1".to_string(), "c".to_string()), 3),
            (("p2".to_string(), "c".to_string()), 4)
        ]),
        "{}: only raised",
        env.kind
    );
    east.update_baselines(&[], &HashSet::from(["p2".to_string()]), None)
        .unwrap();
    assert_eq!(east.baselines().unwrap().len(), 1);
    east.update_baselines(&[], &none, Some(&HashSet::new()))
        .unwrap();
    assert!(east.baselines().unwrap().is_empty(), "keep: none");
    assert_eq!(
        west.baselines().unwrap(),
        HashMap::from([(("p1".to_string(), "c".to_string()), 9)])
    );
}

fn stats_follow_inserts_and_prunes(env: &Env) {
    let s = env.store();
    let st = s.stats().unwrap();
    assert_eq!((st.captures, st.bundle_bytes, st.oldest), (0, 0, None));
    let a = capture("shop", "web-1", Some("web"), "web", 1, 10, 1000);
    let b = capture("shop", "web-1", Some("web"), "web", 2, 30, 0);
    let c = in_cluster(capture("shop", "web-1", Some("web"), "web", 3, 20, 50), "x");
    s.insert_batch(&[a, b, c]).unwrap();
    let st = s.stats().unwrap();
    assert_eq!(st.captures, 3, "{}", env.kind);
    assert_eq!(st.bundle_bytes, 1050);
    assert_eq!((st.oldest, st.newest), (Some(at(10)), Some(at(30))));
    let x = env.for_cluster("x").stats().unwrap();
    assert_eq!((x.captures, x.bundle_bytes), (1, 50));
    assert_eq!((x.oldest, x.newest), (Some(at(20)), Some(at(20))));
    let p = s
        .prune(
            &Retention {
                max_captures: Some(2),
                ..Retention::default()
            },
            at(100),
        )
        .unwrap();
    let after = s.stats().unwrap();
    assert_eq!(after.stored_bytes, st.stored_bytes - p.bytes_freed);
    assert_eq!((after.captures, after.oldest), (2, Some(at(20))));
}

fn group_matches_the_reference(env: &Env) {
    let s = env.store();
    let all = load(&*s, &fleet_fixture());
    for q in queries() {
        let q = Query { limit: None, ..q };
        let matching: Vec<Record> = {
            let ids: HashSet<u64> = filter(&all, &q).into_iter().collect();
            all.iter()
                .filter(|r| ids.contains(&r.id))
                .cloned()
                .collect()
        };
        for by in [
            GroupBy::Cluster,
            GroupBy::Namespace,
            GroupBy::Workload,
            GroupBy::Cause,
            GroupBy::Node,
        ] {
            assert_eq!(
                s.group(&q, by).unwrap(),
                fleet::group(&matching, by),
                "{}: {by:?} {q:?}",
                env.kind
            );
        }
    }
}

fn new_causes_match_the_reference(env: &Env) {
    let s = env.store();
    let all = load(&*s, &fleet_fixture());
    let mut checked = 0;
    for q in queries() {
        let q = Query { limit: None, ..q };
        let ids: HashSet<u64> = filter(&all, &q).into_iter().collect();
        let matching: Vec<Record> = all
            .iter()
            .filter(|r| ids.contains(&r.id))
            .cloned()
            .collect();
        for since in [at(0), at(3_000), at(9_000), at(20_000)] {
            let want = fleet::new_causes(&all, &matching, since);
            checked += want.len();
            assert_eq!(
                s.new_causes(&q, Since::At(since)).unwrap(),
                want,
                "{}: {since} {q:?}",
                env.kind
            );
        }
        let rev_start = matching
            .iter()
            .filter(|r| r.capture.revision.as_deref() == Some("rev-b"))
            .map(|r| r.capture.observed_at)
            .min();
        let want = rev_start.map_or_else(Vec::new, |t| fleet::new_causes(&all, &matching, t));
        assert_eq!(
            s.new_causes(&q, Since::Revision("rev-b".into())).unwrap(),
            want,
            "{}: revision {q:?}",
            env.kind
        );
        assert!(
            s.new_causes(&q, Since::Revision("nope".into()))
                .unwrap()
                .is_empty()
        );
    }
    assert!(checked > 20, "the fixture has new causes to find");
}

fn concurrent_writers_store_each_key_once(env: &Env) {
    let keys: Vec<Capture> = (0..40)
        .map(|i| {
            in_cluster(
                capture(
                    "shop",
                    &format!("p{}", i % 8),
                    Some("web"),
                    "c",
                    i,
                    10 + i as i64,
                    50,
                ),
                if i % 2 == 0 { "east" } else { "west" },
            )
        })
        .collect();
    let shared = env.store();
    let news: Vec<usize> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..6)
            .map(|t| {
                // Half the writers on their own handle, half on a shared one.
                let s = if t % 2 == 0 {
                    env.store()
                } else {
                    shared.clone()
                };
                let mine: Vec<Capture> =
                    keys.iter().cycle().skip(t * 7).take(30).cloned().collect();
                sc.spawn(move || {
                    let mut new = 0;
                    for chunk in mine.chunks(4) {
                        new += s
                            .insert_batch(chunk)
                            .unwrap()
                            .iter()
                            .filter(|i| i.is_new())
                            .count();
                    }
                    new
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let all = shared.list(&Query::default()).unwrap();
    let distinct: HashSet<_> = all.iter().map(|r| r.capture.key.clone()).collect();
    assert_eq!(distinct.len(), all.len(), "{}: no key twice", env.kind);
    let written: HashSet<_> = (0..6)
        .flat_map(|t| {
            keys.iter()
                .cycle()
                .skip(t * 7)
                .take(30)
                .map(|c| c.key.clone())
        })
        .collect();
    assert_eq!(distinct, written);
    assert_eq!(
        news.iter().sum::<usize>(),
        all.len(),
        "each stored once as New"
    );
    (env.check)();
}

fn read_only_handles_refuse_writes(env: &Env) {
    let s = env.store();
    s.insert(&capture("shop", "web-1", Some("web"), "web", 1, 10, 10))
        .unwrap();
    let ro: Arc<dyn Store> = match env.kind {
        "redb" => {
            let p = std::path::PathBuf::from(s.location());
            Arc::new(RedbStore::open_read_only(&p).unwrap())
        }
        _ => {
            let pg = pg_config().unwrap();
            let loc = s.location();
            // The location is masked; the test URL has no password anyway.
            let schema = loc.split("schema=").nth(1).unwrap().to_string();
            let url = with_schema(&pg.url, &schema);
            crashdoc_history::open(
                &Location::Postgres(url),
                &OpenOptions {
                    read_only: true,
                    password_file: Some(pg.password_file.clone()),
                    ..OpenOptions::default()
                },
            )
            .unwrap()
        }
    };
    assert!(ro.is_read_only());
    assert_eq!(ro.list(&Query::default()).unwrap().len(), 1);
    let err = ro
        .insert(&capture("shop", "web-1", Some("web"), "web", 2, 20, 10))
        .unwrap_err();
    assert!(matches!(err, HistoryError::ReadOnly { .. }), "{err:?}");
    assert!(matches!(
        ro.set_checkpoint(at(1)),
        Err(HistoryError::ReadOnly { .. })
    ));
}
