//! The key names kept beside each capture (schema 2), and the migration of a
//! schema-1 history.

mod common;

use common::capture;
use crashdoc_history::{ConfigKeys, Query, RedbStore, Retention, SCHEMA_VERSION};

fn temp() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("history.redb");
    (dir, path)
}

fn cm(name: &str, keys: &[&str]) -> ConfigKeys {
    ConfigKeys {
        kind: "ConfigMap".into(),
        name: name.into(),
        exists: Some(true),
        keys: keys.iter().map(|k| k.to_string()).collect(),
        changed: Some("2026-12-01T10:00:00Z".into()),
    }
}

const META: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("crashdoc_history.meta");

fn raw_version(path: &std::path::Path) -> u64 {
    let db = redb::Database::create(path).unwrap();
    let txn = redb::ReadableDatabase::begin_read(&db).unwrap();
    let meta = txn.open_table(META).unwrap();
    meta.get("schema_version").unwrap().unwrap().value()
}

#[test]
fn key_names_are_stored_with_their_capture_and_pruned_with_it() {
    let (_dir, path) = temp();
    let store = RedbStore::open(&path).unwrap();
    let a = capture("shop", "web-1", Some("web"), "web", 1, 10, 100);
    let b = capture("shop", "web-1", Some("web"), "web", 2, 20, 100);
    let keys = [cm("app-config", &["MODEL_NAME", "LOG_LEVEL"])];
    let before = store.stats().unwrap().stored_bytes;
    let ins = store
        .insert_batch_with_keys(&[(&a, &keys[..]), (&b, &[])])
        .unwrap();
    let (ia, ib) = (ins[0].id().unwrap(), ins[1].id().unwrap());
    let got = store.config_keys(&[ia, ib, 999]).unwrap();
    assert_eq!(got.get(&ia).map(Vec::as_slice), Some(&keys[..]));
    assert!(!got.contains_key(&ib), "stored without key names");
    assert!(!got.contains_key(&999));
    // The key set counts in the stored bytes the retention limits.
    let json = serde_json::to_vec(&keys[..]).unwrap().len() as u64;
    let plain = store
        .insert(&capture("shop", "web-2", Some("web"), "web", 1, 30, 100))
        .unwrap();
    let stats = store.stats().unwrap();
    let rows = store.list(&Query::default()).unwrap();
    assert_eq!(rows.len(), 3);
    assert!(stats.stored_bytes - before > json, "{stats:?}");
    assert!(plain.is_new());
    store.check_consistency().unwrap();
    // A duplicate with other keys changes nothing.
    let again = store
        .insert_batch_with_keys(&[(&a, &[cm("other", &["x"])][..])])
        .unwrap();
    assert!(!again[0].is_new());
    assert_eq!(store.config_keys(&[ia]).unwrap()[&ia], keys);
    // Pruned with its capture.
    store
        .prune(
            &Retention {
                max_captures: Some(2),
                ..Retention::default()
            },
            common::at(100),
        )
        .unwrap();
    assert!(store.config_keys(&[ia]).unwrap().is_empty());
    store.check_consistency().unwrap();
}

#[test]
fn schema_1_and_2_histories_are_read_then_migrated_by_a_writer() {
    for version in [1, 2] {
        let (_dir, path) = temp();
        let old = [
            capture("shop", "web-1", Some("web"), "web", 1, 10, 50),
            capture("shop", "web-1", Some("web"), "web", 2, 20, 5000),
            capture("batch", "job-1", None, "main", 0, 30, 0),
        ];
        common::write_legacy(&path, version, &old, 1_750_000_040_000);
        assert_eq!(raw_version(&path), version);
        {
            let ro = RedbStore::open_read_only(&path).unwrap();
            let all = ro.list(&Query::default()).unwrap();
            assert_eq!(all.len(), 3);
            assert!(all.iter().all(|r| r.capture.key.cluster.is_empty()));
            let q = Query {
                cluster: Some(String::new()),
                owner: Some("web".into()),
                ..Query::default()
            };
            assert_eq!(ro.list(&q).unwrap().len(), 2);
            let q = Query {
                cluster: Some("other".into()),
                ..Query::default()
            };
            assert!(ro.list(&q).unwrap().is_empty());
            assert!(ro.config_keys(&[1]).unwrap().is_empty());
            assert_eq!(ro.seen_keys().unwrap().len(), 3);
            assert!(ro.contains(&old[0].key).unwrap());
            assert_eq!(ro.stats().unwrap().captures, 3);
            assert_eq!(ro.baselines().unwrap().len(), 2);
            assert_eq!(
                ro.checkpoint().unwrap().map(|t| t.as_millisecond()),
                Some(1_750_000_040_000)
            );
            assert_eq!(
                ro.get(2).unwrap().unwrap().capture.bundle,
                old[1].bundle,
                "bundles read as they are"
            );
        }
        assert_eq!(raw_version(&path), version, "a reader does not migrate");
        let store = RedbStore::open(&path).unwrap();
        store.check_consistency().unwrap();
        drop(store);
        assert_eq!(raw_version(&path), SCHEMA_VERSION, "a writer migrates");
        let store = RedbStore::open(&path).unwrap();
        store.check_consistency().unwrap();
        assert_eq!(store.seen_keys().unwrap().len(), 3);
        assert_eq!(
            store.baselines().unwrap().len(),
            2,
            "baselines of cluster \"\""
        );
        assert_eq!(
            store.checkpoint().unwrap().map(|t| t.as_millisecond()),
            Some(1_750_000_040_000)
        );
        let c = capture("shop", "web-1", Some("web"), "web", 3, 40, 50);
        let keys = [cm("app-config", &["MODEL_NAME"])];
        let id = store.insert_batch_with_keys(&[(&c, &keys[..])]).unwrap()[0]
            .id()
            .unwrap();
        assert_eq!(id, 4, "ids continue");
        assert_eq!(store.config_keys(&[id]).unwrap()[&id], keys);
        assert!(store.insert(&old[0]).unwrap() == crashdoc_history::Inserted::Duplicate(1));
        assert_eq!(
            store.list(&Query::default()).unwrap().len(),
            4,
            "old records kept"
        );
        store.check_consistency().unwrap();
        let pruned = store
            .prune(
                &Retention {
                    max_captures: Some(1),
                    ..Retention::default()
                },
                common::at(100),
            )
            .unwrap();
        assert_eq!(pruned.removed, 3);
        store.check_consistency().unwrap();
    }
}
