//! Two processes on one history file, as `crashdoc watch` and `crashdoc
//! history` (or two watchers) are: the test binary runs itself as the other
//! process (the ignored `child` test, which does nothing unless asked to).

mod common;

use common::capture;
use crashdoc_history::{HistoryError, Query, RedbStore};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

const MODE: &str = "CRASHDOC_HISTORY_TEST_CHILD";
const PATH: &str = "CRASHDOC_HISTORY_TEST_PATH";

/// The other process. `hold`: open for writing, insert capture 1, say
/// `ready`, then insert one more capture per line read, answering `done`,
/// until standard input closes. `crash`: open, insert, and exit without
/// closing the database (as a killed watcher would).
#[test]
#[ignore = "run by the other tests as a child process"]
fn child() {
    let (Ok(mode), Ok(path)) = (std::env::var(MODE), std::env::var(PATH)) else {
        return;
    };
    let store = RedbStore::open(Path::new(&path)).unwrap();
    store
        .insert(&capture("a", "p", None, "c", 1, 1, 1000))
        .unwrap();
    match mode.as_str() {
        "hold" => {
            println!("ready");
            let mut n = 1;
            for line in std::io::stdin().lock().lines() {
                line.unwrap();
                n += 1;
                store
                    .insert(&capture("a", "p", None, "c", n, n as i64, 1000))
                    .unwrap();
                println!("done");
            }
        }
        "crash" => {
            for n in 2..=50 {
                store
                    .insert(&capture("a", "p", None, "c", n, n as i64, 1000))
                    .unwrap();
            }
            // Destructors do not run: the file is left as after a SIGKILL.
            std::process::exit(0);
        }
        other => panic!("unknown mode {other}"),
    }
}

struct Other {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Other {
    fn start(mode: &str, path: &Path) -> Other {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "child",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(MODE, mode)
            .env(PATH, path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Other {
            child,
            stdin,
            stdout,
        }
    }

    /// Waits for a line of the child that ends with `word` (libtest writes
    /// `test child ... ` before the first line the test prints).
    fn expect(&mut self, word: &str) {
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "the child process ended before saying {word}");
            if line.trim_end().ends_with(word) {
                return;
            }
        }
    }

    fn insert_one(&mut self) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "go").unwrap();
        stdin.flush().unwrap();
        self.expect("done");
    }

    fn finish(mut self) {
        drop(self.stdin.take());
        assert!(self.child.wait().unwrap().success());
    }
}

fn temp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.redb");
    (dir, path)
}

#[test]
fn a_second_watcher_process_is_refused_and_history_reads_alongside() {
    let (_dir, path) = temp();
    let mut watcher = Other::start("hold", &path);
    watcher.expect("ready");

    let err = RedbStore::open(&path).unwrap_err();
    assert!(matches!(err, HistoryError::Locked { .. }), "{err:?}");
    assert!(err.to_string().contains("another `crashdoc watch`"));

    // `crashdoc history` reads while the watcher writes, and sees each commit.
    let history = RedbStore::open_read_only(&path).unwrap();
    assert_eq!(history.list(&Query::default()).unwrap().len(), 1);
    watcher.insert_one();
    watcher.insert_one();
    let list = history.list(&Query::default()).unwrap();
    assert_eq!(list.iter().map(|r| r.id).collect::<Vec<_>>(), vec![3, 2, 1]);
    assert_eq!(history.bundle(3).unwrap().map(|b| b.len()), Some(1000));
    history.check_consistency().unwrap();
    drop(history);

    watcher.finish();
    // Once it stopped, the next watcher opens the file.
    let store = RedbStore::open(&path).unwrap();
    assert_eq!(store.stats().unwrap().captures, 3);
}

#[test]
fn history_of_a_killed_watcher_is_readable() {
    let (_dir, path) = temp();
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["child", "--exact", "--ignored", "--test-threads=1"])
        .env(MODE, "crash")
        .env(PATH, &path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // The file needs a repair: redb's own read-only open refuses it.
    let raw = redb::Builder::new()
        .set_concurrency_mode(redb::ConcurrencyMode::SingleWriter)
        .open_read_only(&path)
        .err();
    assert!(
        matches!(raw, Some(redb::DatabaseError::RepairAborted)),
        "{raw:?}"
    );

    // A read-only open cannot repair; the store repairs with a short
    // writable open, then reads. Every committed capture is there.
    let history = RedbStore::open_read_only(&path).unwrap();
    assert_eq!(history.stats().unwrap().captures, 50);
    history.check_consistency().unwrap();
    drop(history);
    let store = RedbStore::open(&path).unwrap();
    assert_eq!(store.seen_keys().unwrap().len(), 50);
    store.check_consistency().unwrap();
}
