//! Damaged history files give an error, never a panic.

mod common;

use common::capture;
use crashdoc_history::{HistoryError, Query, RedbStore};
use std::path::Path;

fn good_file(dir: &Path) -> Vec<u8> {
    let path = dir.join("good.redb");
    {
        let store = RedbStore::open(&path).unwrap();
        let cs: Vec<_> = (0..120)
            .map(|i| capture("a", "p", Some("web"), "c", i, i as i64, 600))
            .collect();
        store.insert_batch(&cs).unwrap();
    }
    std::fs::read(&path).unwrap()
}

/// Every operation on the file, in both modes; Ok or Err, but no panic.
fn exercise(path: &Path, bytes: &[u8]) -> Vec<Result<(), HistoryError>> {
    let mut out = Vec::new();
    for read_only in [false, true] {
        std::fs::write(path, bytes).unwrap();
        let store = if read_only {
            RedbStore::open_read_only(path)
        } else {
            RedbStore::open(path)
        };
        let store = match store {
            Ok(s) => s,
            Err(e) => {
                out.push(Err(e));
                continue;
            }
        };
        out.push(store.stats().map(drop));
        out.push(store.list(&Query::default()).map(drop));
        out.push(store.seen_keys().map(drop));
        out.push(store.get(7).map(drop));
        out.push(store.bundle(7).map(drop));
        out.push(store.check_consistency());
        if !read_only {
            out.push(
                store
                    .insert(&capture("a", "p", None, "c", 1000, 1000, 10))
                    .map(drop),
            );
        }
    }
    out
}

#[test]
fn truncated_history_is_corrupted() {
    let dir = tempfile::tempdir().unwrap();
    let good = good_file(dir.path());
    let path = dir.path().join("cut.redb");
    for cut in [100, 512, 4096, good.len() / 2] {
        std::fs::write(&path, &good[..cut]).unwrap();
        for err in [
            RedbStore::open(&path).unwrap_err(),
            RedbStore::open_read_only(&path).unwrap_err(),
        ] {
            assert!(
                matches!(err, HistoryError::Corrupted { .. }),
                "cut at {cut}: {err:?}"
            );
            assert!(err.to_string().contains("is corrupted"), "{err}");
        }
    }
}

#[test]
fn damaged_header_is_corrupted() {
    let dir = tempfile::tempdir().unwrap();
    let good = good_file(dir.path());
    let path = dir.path().join("header.redb");
    // The page geometry (offset 16..) and the file format version (64).
    for offset in [20, 64] {
        let mut bytes = good.clone();
        for b in &mut bytes[offset..offset + 8] {
            *b ^= 0xA5;
        }
        std::fs::write(&path, &bytes).unwrap();
        for err in [
            RedbStore::open(&path).unwrap_err(),
            RedbStore::open_read_only(&path).unwrap_err(),
        ] {
            assert!(
                matches!(err, HistoryError::Corrupted { .. }),
                "offset {offset}: {err:?}"
            );
        }
    }
}

#[test]
fn damaged_pages_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let good = good_file(dir.path());
    let path = dir.path().join("pages.redb");
    // redb trusts committed pages on a plain open (it checks them only when
    // repairing), so damage inside a page may surface as a decode error, a
    // missing record or not at all; whatever it is, it is an error value.
    let (mut errors, mut caught) = (0, 0);
    for page in 1..good.len() / 4096 {
        let mut bytes = good.clone();
        let at = page * 4096 + 64;
        for b in &mut bytes[at..(at + 256).min(good.len())] {
            *b ^= 0x5A;
        }
        for err in exercise(&path, &bytes).into_iter().filter_map(Result::err) {
            errors += 1;
            caught += usize::from(err.to_string().contains("stopped on damaged data"));
        }
    }
    eprintln!("{errors} errors, {caught} of them panics of the engine turned into errors");
    assert!(errors > 0, "some damage is noticed");
}
