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
const CONFIG_KEYS: redb::TableDefinition<u64, &[u8]> =
    redb::TableDefinition::new("crashdoc_history.config_keys");

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
    let (ia, ib) = (ins[0].id(), ins[1].id());
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
fn a_schema_1_history_is_read_then_migrated_by_a_writer() {
    let (_dir, path) = temp();
    {
        let store = RedbStore::open(&path).unwrap();
        store
            .insert(&capture("shop", "web-1", Some("web"), "web", 1, 10, 50))
            .unwrap();
    }
    assert_eq!(raw_version(&path), SCHEMA_VERSION);
    // What a schema-1 crashdoc left: version 1, no config_keys table.
    {
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(META)
            .unwrap()
            .insert("schema_version", 1)
            .unwrap();
        assert!(txn.delete_table(CONFIG_KEYS).unwrap());
        txn.commit().unwrap();
    }
    assert_eq!(raw_version(&path), 1);
    {
        let ro = RedbStore::open_read_only(&path).unwrap();
        assert_eq!(ro.list(&Query::default()).unwrap().len(), 1);
        assert!(ro.config_keys(&[1]).unwrap().is_empty());
        ro.check_consistency().unwrap();
    }
    assert_eq!(raw_version(&path), 1, "a reader does not migrate");
    let store = RedbStore::open(&path).unwrap();
    drop(store);
    assert_eq!(raw_version(&path), SCHEMA_VERSION, "a writer migrates");
    let store = RedbStore::open(&path).unwrap();
    let c = capture("shop", "web-1", Some("web"), "web", 2, 20, 50);
    let keys = [cm("app-config", &["MODEL_NAME"])];
    let id = store.insert_batch_with_keys(&[(&c, &keys[..])]).unwrap()[0].id();
    assert_eq!(store.config_keys(&[id]).unwrap()[&id], keys);
    assert_eq!(
        store.list(&Query::default()).unwrap().len(),
        2,
        "old records kept"
    );
    store.check_consistency().unwrap();
}
