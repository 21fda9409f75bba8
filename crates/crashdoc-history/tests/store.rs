//! The store as `crashdoc watch` and `crashdoc history` use it.

mod common;

use common::{at, capture};
use crashdoc_history::{
    Capture, CaptureKind, HistoryError, Inserted, Query, RedbStore, Retention, TerminationKey,
};
use jiff::SignedDuration;
use std::collections::HashSet;
use std::sync::Arc;

fn temp() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state").join("history.redb");
    (dir, path)
}

fn ids(records: &[crashdoc_history::Record]) -> Vec<u64> {
    records.iter().map(|r| r.id).collect()
}

#[test]
fn insert_then_duplicate() {
    let (_dir, path) = temp();
    let store = RedbStore::open(&path).unwrap();
    let c = capture("shop", "web-1", Some("web"), "app", 3, 10, 1000);
    assert_eq!(store.insert(&c).unwrap(), Inserted::New(1));
    assert!(store.contains(&c.key).unwrap());
    // The same termination seen again (the watcher re-lists, or restarts).
    let mut again = c.clone();
    again.observed_at = at(99);
    again.cause = Some("something-else".into());
    assert_eq!(store.insert(&again).unwrap(), Inserted::Duplicate(1));
    let got = store.get(1).unwrap().unwrap();
    assert_eq!(got.capture, c, "the first capture is kept");
    assert_eq!(got.bundle_len, 1000);
    assert!(
        !store
            .contains(&TerminationKey::new("web-1-uid", "app", 4))
            .unwrap()
    );
    let stats = store.stats().unwrap();
    assert_eq!(stats.captures, 1);
    assert_eq!(stats.bundle_bytes, 1000);
    assert!(stats.stored_bytes > 1000);
    assert_eq!(stats.oldest, Some(at(10)));
    assert_eq!(stats.newest, Some(at(10)));
    store.check_consistency().unwrap();
}

#[test]
fn batch_is_one_transaction_with_dedup_inside() {
    let (_dir, path) = temp();
    let store = RedbStore::open(&path).unwrap();
    let first = capture("shop", "web-1", Some("web"), "app", 1, 1, 10);
    store.insert(&first).unwrap();
    let batch = vec![
        capture("shop", "web-1", Some("web"), "app", 2, 2, 10),
        first.clone(),
        capture("shop", "web-2", Some("web"), "app", 1, 3, 0),
        capture("shop", "web-1", Some("web"), "app", 2, 4, 10), // repeated in the batch
    ];
    let out = store.insert_batch(&batch).unwrap();
    assert_eq!(
        out,
        vec![
            Inserted::New(2),
            Inserted::Duplicate(1),
            Inserted::New(3),
            Inserted::Duplicate(2)
        ]
    );
    assert_eq!(store.stats().unwrap().captures, 3);
    assert!(store.insert_batch(&[]).unwrap().is_empty());
    store.check_consistency().unwrap();
}

#[test]
fn reopen_keeps_everything_and_never_reuses_ids() {
    let (_dir, path) = temp();
    let cs: Vec<Capture> = (0..5)
        .map(|i| {
            capture(
                "shop",
                "web-1",
                Some("web"),
                "app",
                i,
                i as i64,
                100 + i as usize,
            )
        })
        .collect();
    {
        let store = RedbStore::open(&path).unwrap();
        store.insert_batch(&cs).unwrap();
        // Keep 3: the oldest two (ids 1 and 2) go.
        store
            .prune(
                &Retention {
                    max_captures: Some(3),
                    ..Retention::default()
                },
                at(100),
            )
            .unwrap();
    } // crashdoc watch stops
    let store = RedbStore::open(&path).unwrap(); // and starts again
    let seen = store.seen_keys().unwrap();
    let expected: HashSet<TerminationKey> = cs[2..].iter().map(|c| c.key.clone()).collect();
    assert_eq!(seen, expected);
    for (i, c) in cs.iter().enumerate().skip(2) {
        assert_eq!(store.insert(c).unwrap(), Inserted::Duplicate(i as u64 + 1));
    }
    let new = capture("shop", "web-1", Some("web"), "app", 5, 5, 0);
    assert_eq!(store.insert(&new).unwrap(), Inserted::New(6));
    // Everything of the earlier run is intact, bundles included.
    for (i, c) in cs.iter().enumerate().skip(2) {
        assert_eq!(store.get(i as u64 + 1).unwrap().unwrap().capture, *c);
    }
    assert_eq!(
        ids(&store.list(&Query::default()).unwrap()),
        vec![6, 5, 4, 3]
    );
    store.check_consistency().unwrap();
}

fn filter_fixture(store: &RedbStore) {
    let cs = vec![
        capture("shop", "web-1", Some("web"), "app", 1, 10, 10), // 1
        capture("shop", "web-1", Some("web"), "sidecar", 1, 20, 10), // 2
        capture("shop", "web-2", Some("web"), "app", 1, 30, 10), // 3
        capture("shop", "api-1", Some("api"), "app", 1, 40, 10), // 4
        capture("infra", "dns-1", None, "coredns", 1, 50, 0),    // 5
        capture("infra", "dns-1", None, "coredns", 2, 60, 0),    // 6
    ];
    let mut job = capture("shop", "batch-1", Some("nightly"), "app", 0, 70, 10); // 7
    job.owner_kind = Some("CronJob".into());
    // The same pod and workload names in another namespace.
    let mut staging = capture("staging", "web-1", Some("web"), "app", 1, 80, 10); // 8
    staging.key.pod_uid = "staging-web-1-uid".into();
    store.insert_batch(&cs).unwrap();
    store.insert(&job).unwrap();
    store.insert(&staging).unwrap();
}

#[test]
fn filters_are_anded() {
    let (_dir, path) = temp();
    let store = RedbStore::open(&path).unwrap();
    filter_fixture(&store);
    let q = |f: fn(&mut Query)| {
        let mut q = Query::default();
        f(&mut q);
        ids(&store.list(&q).unwrap())
    };
    assert_eq!(q(|_| {}), vec![8, 7, 6, 5, 4, 3, 2, 1]);
    assert_eq!(q(|q| q.namespace = Some("infra".into())), vec![6, 5]);
    assert_eq!(q(|q| q.namespace = Some("nope".into())), Vec::<u64>::new());
    assert_eq!(q(|q| q.pod = Some("web-1".into())), vec![8, 2, 1]);
    assert_eq!(
        q(|q| {
            q.namespace = Some("shop".into());
            q.pod = Some("web-1".into());
        }),
        vec![2, 1]
    );
    assert_eq!(
        q(|q| {
            q.namespace = Some("infra".into());
            q.pod = Some("web-1".into());
        }),
        Vec::<u64>::new()
    );
    assert_eq!(q(|q| q.pod_uid = Some("web-2-uid".into())), vec![3]);
    assert_eq!(
        q(|q| {
            q.pod_uid = Some("web-1-uid".into());
            q.container = Some("sidecar".into());
        }),
        vec![2]
    );
    assert_eq!(
        q(|q| {
            q.pod_uid = Some("web-1-uid".into());
            q.pod = Some("web-2".into());
        }),
        Vec::<u64>::new()
    );
    assert_eq!(q(|q| q.owner = Some("web".into())), vec![8, 3, 2, 1]);
    assert_eq!(
        q(|q| {
            q.owner = Some("nightly".into());
            q.owner_kind = Some("Deployment".into());
        }),
        Vec::<u64>::new()
    );
    assert_eq!(q(|q| q.owner = Some(String::new())), vec![6, 5]);
    assert_eq!(q(|q| q.owner_kind = Some(String::new())), vec![6, 5]);
    assert_eq!(q(|q| q.owner_kind = Some("CronJob".into())), vec![7]);
    assert_eq!(
        q(|q| q.owner_kind = Some("Deployment".into())),
        vec![8, 4, 3, 2, 1]
    );
    assert_eq!(q(|q| q.container = Some("app".into())), vec![8, 7, 4, 3, 1]);
    assert_eq!(
        q(|q| {
            q.namespace = Some("shop".into());
            q.owner = Some("web".into());
            q.container = Some("app".into());
        }),
        vec![3, 1]
    );
    // A filter that matches nothing in combination.
    assert_eq!(
        q(|q| {
            q.namespace = Some("infra".into());
            q.owner = Some("web".into());
        }),
        Vec::<u64>::new()
    );
    // Time window: since inclusive, until exclusive; also within a scope.
    assert_eq!(
        q(|q| {
            q.since = Some(at(20));
            q.until = Some(at(50));
        }),
        vec![4, 3, 2]
    );
    assert_eq!(
        q(|q| {
            q.owner = Some("web".into());
            q.since = Some(at(20));
            q.until = Some(at(80));
        }),
        vec![3, 2]
    );
    assert_eq!(
        q(|q| {
            q.since = Some(at(50));
            q.until = Some(at(50));
        }),
        Vec::<u64>::new()
    );
    assert_eq!(
        q(|q| {
            q.since = Some(at(60));
            q.until = Some(at(10));
        }),
        Vec::<u64>::new()
    );
    assert_eq!(q(|q| q.since = Some(at(61))), vec![8, 7]);
    assert_eq!(q(|q| q.until = Some(at(10))), Vec::<u64>::new());
    // Limit keeps the newest.
    assert_eq!(
        q(|q| {
            q.container = Some("app".into());
            q.limit = Some(2);
        }),
        vec![8, 7]
    );
    assert_eq!(
        q(|q| {
            q.pod = Some("web-1".into());
            q.limit = Some(2);
        }),
        vec![8, 2]
    );
    assert_eq!(q(|q| q.limit = Some(0)), Vec::<u64>::new());
}

#[test]
fn list_is_newest_first_then_by_id_and_never_loads_bundles() {
    let (_dir, path) = temp();
    let store = RedbStore::open(&path).unwrap();
    // Inserted out of order, two observed at the same instant.
    store
        .insert(&capture("a", "p", None, "c", 1, 30, 500))
        .unwrap(); // 1
    store
        .insert(&capture("a", "p", None, "c", 2, 10, 0))
        .unwrap(); // 2
    store
        .insert(&capture("a", "p", None, "c", 3, 30, 700))
        .unwrap(); // 3
    store
        .insert(&capture("a", "p", None, "c", 4, 20, 0))
        .unwrap(); // 4
    let list = store.list(&Query::default()).unwrap();
    assert_eq!(ids(&list), vec![3, 1, 4, 2]);
    assert!(list.iter().all(|r| r.capture.bundle.is_none()));
    assert_eq!(
        list.iter().map(|r| r.bundle_len).collect::<Vec<_>>(),
        vec![700, 500, 0, 0]
    );
    // Everything else of the capture is there; the diagnosis when asked for.
    let mut expected = capture("a", "p", None, "c", 3, 30, 700);
    expected.bundle = None;
    let diagnosis = expected.diagnosis_json.take();
    assert_eq!(list[0].capture, expected);
    let q = Query {
        with_diagnosis: true,
        limit: Some(1),
        ..Query::default()
    };
    let list = store.list(&q).unwrap();
    assert_eq!(list[0].capture.diagnosis_json, diagnosis);
    assert_eq!(list[0].capture.bundle, None);
}

#[test]
fn bundle_export_round_trip() {
    let (_dir, path) = temp();
    let store = RedbStore::open(&path).unwrap();
    let big = capture("shop", "web-1", Some("web"), "app", 1, 1, 3 << 20);
    let status_only = capture("shop", "web-1", Some("web"), "app", 2, 2, 0);
    assert_eq!(status_only.kind, CaptureKind::StatusOnly);
    // An empty bundle, and an empty diagnosis, are kept as such.
    let mut empty = capture("shop", "web-1", Some("web"), "app", 3, 3, 0);
    empty.bundle = Some(vec![]);
    empty.diagnosis_json = Some(String::new());
    // Sizes around the storage's piece size.
    let pieces: Vec<Capture> = [15_999usize, 16_000, 16_001, 32_000, 50 * 1024]
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            capture(
                "shop",
                "web-2",
                Some("web"),
                "app",
                i as i32,
                10 + i as i64,
                n,
            )
        })
        .collect();
    store
        .insert_batch(&[big.clone(), status_only, empty.clone()])
        .unwrap();
    store.insert_batch(&pieces).unwrap();
    store.check_consistency().unwrap();
    drop(store);
    let store = RedbStore::open_read_only(&path).unwrap();
    assert_eq!(store.bundle(1).unwrap(), big.bundle);
    assert_eq!(store.get(1).unwrap().unwrap().capture, big);
    assert_eq!(store.bundle(2).unwrap(), None);
    assert_eq!(store.get(2).unwrap().unwrap().capture.bundle, None);
    assert_eq!(store.get(3).unwrap().unwrap().capture, empty);
    assert_eq!(store.bundle(3).unwrap(), Some(vec![]));
    for (i, c) in pieces.iter().enumerate() {
        let id = 4 + i as u64;
        assert_eq!(store.bundle(id).unwrap(), c.bundle, "{id}");
        let got = store.get(id).unwrap().unwrap();
        assert_eq!(got.bundle_len, c.bundle.as_ref().unwrap().len() as u64);
        assert_eq!(got.capture, *c);
    }
    assert_eq!(store.bundle(99).unwrap(), None);
    assert!(store.get(99).unwrap().is_none());
}

#[test]
fn prune_by_age() {
    let (_dir, path) = temp();
    let store = RedbStore::open(&path).unwrap();
    for i in 0..10 {
        store
            .insert(&capture("a", "p", None, "c", i, i as i64 * 60, 100))
            .unwrap();
    }
    let stats_before = store.stats().unwrap();
    // Captures at 0..=9 min; at 10 min, keep the last 5 minutes: the one
    // observed exactly 5 minutes ago is kept.
    let r = Retention {
        max_age: Some(SignedDuration::from_mins(5)),
        ..Retention::default()
    };
    let out = store.prune(&r, at(10 * 60)).unwrap();
    assert_eq!(out.removed, 5);
    assert_eq!(
        ids(&store.list(&Query::default()).unwrap()),
        vec![10, 9, 8, 7, 6]
    );
    let stats = store.stats().unwrap();
    assert_eq!(stats.captures, 5);
    assert_eq!(stats.bundle_bytes, 500);
    assert_eq!(
        out.bytes_freed,
        stats_before.stored_bytes - stats.stored_bytes
    );
    assert_eq!(stats.oldest, Some(at(5 * 60)));
    for i in 0..5 {
        assert!(
            !store
                .contains(&TerminationKey::new("p-uid", "c", i))
                .unwrap()
        );
        assert!(store.get(i as u64 + 1).unwrap().is_none());
        assert!(store.bundle(i as u64 + 1).unwrap().is_none());
    }
    assert_eq!(store.seen_keys().unwrap().len(), 5);
    store.check_consistency().unwrap();
    // Nothing more to do.
    assert_eq!(store.prune(&r, at(10 * 60)).unwrap().removed, 0);
    // A removed key can be recorded again, under a new id.
    assert_eq!(
        store
            .insert(&capture("a", "p", None, "c", 0, 0, 100))
            .unwrap(),
        Inserted::New(11)
    );
    // A negative age counts as zero: everything observed before now goes.
    let r = Retention {
        max_age: Some(SignedDuration::from_mins(-5)),
        ..Retention::default()
    };
    assert_eq!(store.prune(&r, at(9 * 60)).unwrap().removed, 5);
    assert_eq!(ids(&store.list(&Query::default()).unwrap()), vec![10]);
    store.check_consistency().unwrap();
}

#[test]
fn prune_by_count_and_bytes() {
    let (_dir, path) = temp();
    let store = RedbStore::open(&path).unwrap();
    for i in 0..20 {
        store
            .insert(&capture("a", "p", None, "c", i, i as i64, 10_000))
            .unwrap();
    }
    let unbounded = Retention::default();
    assert_eq!(store.prune(&unbounded, at(0)).unwrap().removed, 0);

    let out = store
        .prune(
            &Retention {
                max_captures: Some(15),
                ..Retention::default()
            },
            at(0),
        )
        .unwrap();
    assert_eq!(out.removed, 5);
    assert_eq!(store.stats().unwrap().captures, 15);
    assert_eq!(store.list(&Query::default()).unwrap().last().unwrap().id, 6);
    store.check_consistency().unwrap();

    // Each capture stores 10 000 bundle bytes plus its record.
    let per = store.stats().unwrap().stored_bytes / 15;
    let out = store
        .prune(
            &Retention {
                max_bytes: Some(per * 10 + per / 2),
                ..Retention::default()
            },
            at(0),
        )
        .unwrap();
    assert_eq!(out.removed, 5);
    let stats = store.stats().unwrap();
    assert_eq!(stats.captures, 10);
    assert!(stats.stored_bytes <= per * 10 + per / 2);
    assert_eq!(stats.bundle_bytes, 100_000);
    store.check_consistency().unwrap();

    // The strictest limit wins; zero empties the history.
    let out = store
        .prune(
            &Retention {
                max_age: Some(SignedDuration::from_hours(1)),
                max_captures: Some(0),
                max_bytes: Some(u64::MAX),
            },
            at(20),
        )
        .unwrap();
    assert_eq!(out.removed, 10);
    let stats = store.stats().unwrap();
    assert_eq!(
        (stats.captures, stats.bundle_bytes, stats.stored_bytes),
        (0, 0, 0)
    );
    assert_eq!((stats.oldest, stats.newest), (None, None));
    assert!(store.seen_keys().unwrap().is_empty());
    store.check_consistency().unwrap();
    // Ids are not reused once everything is gone.
    assert_eq!(
        store
            .insert(&capture("a", "p", None, "c", 0, 0, 1))
            .unwrap(),
        Inserted::New(21)
    );
}

#[test]
fn concurrent_inserts_from_threads() {
    let (_dir, path) = temp();
    let store = Arc::new(RedbStore::open(&path).unwrap());
    // 6 threads, each inserting 40 terminations; threads 0/1, 2/3 and 4/5
    // record the same ones (two watchers' tasks racing on one event).
    let handles: Vec<_> = (0..6)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                let pod = format!("pod-{}", t / 2);
                let mut new = 0;
                for i in 0..40 {
                    let c = capture("a", &pod, None, "c", i, i as i64, 256);
                    let r = if i % 10 == 0 {
                        store.insert_batch(std::slice::from_ref(&c)).unwrap()[0]
                    } else {
                        store.insert(&c).unwrap()
                    };
                    new += usize::from(r.is_new());
                    // Readers run alongside the writers.
                    let _ = store.list(&Query {
                        limit: Some(5),
                        ..Query::default()
                    });
                }
                new
            })
        })
        .collect();
    let new: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(new, 120);
    assert_eq!(store.stats().unwrap().captures, 120);
    assert_eq!(store.seen_keys().unwrap().len(), 120);
    let all = ids(&store.list(&Query::default()).unwrap());
    let mut sorted = all.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (1..=120).collect::<Vec<u64>>());
    store.check_consistency().unwrap();
}

#[test]
fn read_only_store_follows_the_writer_and_refuses_writes() {
    let (_dir, path) = temp();
    assert!(matches!(
        RedbStore::open_read_only(&path),
        Err(HistoryError::NotFound { .. })
    ));
    let writer = RedbStore::open(&path).unwrap();
    writer
        .insert(&capture("a", "p", None, "c", 1, 1, 10))
        .unwrap();
    // Another handle (in this process, as `crashdoc history` would in its own).
    let reader = RedbStore::open_read_only(&path).unwrap();
    assert!(reader.is_read_only());
    assert_eq!(reader.stats().unwrap().captures, 1);
    writer
        .insert(&capture("a", "p", None, "c", 2, 2, 10))
        .unwrap();
    assert_eq!(ids(&reader.list(&Query::default()).unwrap()), vec![2, 1]);
    let c = capture("a", "p", None, "c", 3, 3, 10);
    for err in [
        reader.insert(&c).unwrap_err(),
        reader.insert_batch(std::slice::from_ref(&c)).unwrap_err(),
        reader.prune(&Retention::default(), at(0)).unwrap_err(),
    ] {
        assert!(matches!(err, HistoryError::ReadOnly { .. }), "{err:?}");
    }
    // Several readers at once.
    let reader2 = RedbStore::open_read_only(&path).unwrap();
    assert_eq!(reader2.stats().unwrap().captures, 2);
}

#[test]
fn second_writer_gets_the_locked_error() {
    let (_dir, path) = temp();
    let first = RedbStore::open(&path).unwrap();
    let err = RedbStore::open(&path).unwrap_err();
    assert!(matches!(err, HistoryError::Locked { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("another `crashdoc watch`"), "{msg}");
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    drop(first);
    RedbStore::open(&path).unwrap();
}

#[test]
fn garbage_files_are_refused_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "text",
            b"# crashdoc history\nthis is not a database\n".repeat(100),
        ),
        ("binary", common::bundle(7, 100_000)),
        ("tar.gz", {
            let mut b = vec![0x1f, 0x8b, 0x08, 0x00];
            b.extend(common::bundle(8, 5000));
            b
        }),
        ("short", b"redb".to_vec()),
    ];
    for (name, bytes) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        for err in [
            RedbStore::open(&path).unwrap_err(),
            RedbStore::open_read_only(&path).unwrap_err(),
        ] {
            assert!(
                matches!(err, HistoryError::NotCrashdoc { .. }),
                "{name}: {err:?}"
            );
            assert!(
                err.to_string()
                    .contains("is not a crashdoc history database"),
                "{err}"
            );
        }
        // The file is left as it was.
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{name}");
    }
    // An empty file: a writer may lay out a new history in it, a reader refuses it.
    let empty = dir.path().join("empty");
    std::fs::write(&empty, b"").unwrap();
    assert!(matches!(
        RedbStore::open_read_only(&empty),
        Err(HistoryError::NotCrashdoc { .. })
    ));
    RedbStore::open(&empty).unwrap();
    // A folder.
    assert!(matches!(
        RedbStore::open_read_only(dir.path()),
        Err(HistoryError::NotCrashdoc { .. })
    ));
    assert!(RedbStore::open(dir.path()).is_err());
}

#[test]
fn another_programs_redb_file_is_not_a_history() {
    let (_dir, path) = temp();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    {
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let def: redb::TableDefinition<&str, &str> = redb::TableDefinition::new("settings");
            txn.open_table(def).unwrap().insert("a", "b").unwrap();
        }
        txn.commit().unwrap();
    }
    for err in [
        RedbStore::open(&path).unwrap_err(),
        RedbStore::open_read_only(&path).unwrap_err(),
    ] {
        assert!(matches!(err, HistoryError::NotCrashdoc { .. }), "{err:?}");
    }
}

#[test]
fn other_schema_versions_are_refused() {
    let (_dir, path) = temp();
    RedbStore::open(&path)
        .unwrap()
        .insert(&capture("a", "p", None, "c", 1, 1, 10))
        .unwrap();
    for version in [crashdoc_history::SCHEMA_VERSION + 1, 0] {
        {
            let db = redb::Database::create(&path).unwrap();
            let txn = db.begin_write().unwrap();
            {
                let def: redb::TableDefinition<&str, u64> =
                    redb::TableDefinition::new("crashdoc_history.meta");
                txn.open_table(def)
                    .unwrap()
                    .insert("schema_version", version)
                    .unwrap();
            }
            txn.commit().unwrap();
        }
        for err in [
            RedbStore::open(&path).unwrap_err(),
            RedbStore::open_read_only(&path).unwrap_err(),
        ] {
            let msg = err.to_string();
            let HistoryError::SchemaVersion {
                found, supported, ..
            } = err
            else {
                panic!("{err:?}")
            };
            assert_eq!(
                (found, supported),
                (version, crashdoc_history::SCHEMA_VERSION)
            );
            assert!(msg.contains(&format!("schema version {version}")), "{msg}");
            if version > supported {
                assert!(msg.contains("newer crashdoc"), "{msg}");
            }
        }
    }
}

#[test]
fn capture_serde_form() {
    let c = capture("a", "p", Some("web"), "c", 1, 1, 10);
    let json = serde_json::to_value(&c).unwrap();
    assert_eq!(json["kind"], "full");
    assert!(json.get("bundle").is_none(), "bundles are not serialized");
    assert_eq!(json["observed_at"], "2025-06-15T15:06:41Z");
    assert_eq!(
        serde_json::to_value(CaptureKind::StatusOnly).unwrap(),
        "status_only"
    );
    assert_eq!(
        serde_json::to_value(CaptureKind::Partial).unwrap(),
        "partial"
    );
    let back: Capture = serde_json::from_value(json).unwrap();
    assert_eq!(back, Capture { bundle: None, ..c });
}

#[test]
fn checkpoint_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.redb");
    let at: jiff::Timestamp = "2026-11-29T10:00:00.123Z".parse().unwrap();
    {
        let s = crashdoc_history::RedbStore::open(&path).unwrap();
        assert_eq!(s.checkpoint().unwrap(), None);
        s.set_checkpoint(at).unwrap();
    }
    let s = crashdoc_history::RedbStore::open(&path).unwrap();
    assert_eq!(s.checkpoint().unwrap(), Some(at));
    let r = crashdoc_history::RedbStore::open_read_only(&path);
    drop(s);
    let r = r
        .or_else(|_| crashdoc_history::RedbStore::open_read_only(&path))
        .unwrap();
    assert!(r.set_checkpoint(at).is_err(), "read-only");
}

#[test]
fn baselines_only_rise_and_follow_the_pods() {
    use std::collections::HashSet;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.redb");
    let s = crashdoc_history::RedbStore::open(&path).unwrap();
    assert!(s.baselines().unwrap().is_empty());
    let none = HashSet::new();
    let set = |u: &str, n| (u.to_string(), "app".to_string(), n);
    s.update_baselines(&[set("u1", 3), set("u2", 0)], &none, None)
        .unwrap();
    s.update_baselines(&[set("u1", 2)], &none, None).unwrap();
    let b = s.baselines().unwrap();
    assert_eq!(b[&("u1".into(), "app".into())], 3, "never lowered");
    assert_eq!(b.len(), 2);
    let forget: HashSet<String> = ["u2".to_string()].into();
    s.update_baselines(&[set("u3", -1)], &forget, None).unwrap();
    let keep: HashSet<String> = ["u3".to_string()].into();
    s.update_baselines(&[], &none, Some(&keep)).unwrap();
    drop(s);
    let b = crashdoc_history::RedbStore::open(&path)
        .unwrap()
        .baselines()
        .unwrap();
    assert_eq!(b.len(), 1);
    assert_eq!(b[&("u3".into(), "app".into())], -1);
}
