//! PostgreSQL-only behaviour: migrations and their refusal, credentials in
//! errors, calls from a tokio worker, and the spool across an outage (a TCP
//! proxy in the test is cut and restored). Skipped (with a line) without
//! `CRASHDOC_TEST_PG_URL` and `CRASHDOC_TEST_PG_PASSWORD_FILE`, failed then
//! when `CRASHDOC_REQUIRE_PG=1`.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::capture;
use crashdoc_core::Hint;
use crashdoc_history::{
    HistoryError, Inserted, Location, OpenOptions, PgStore, Query, SpoolConfig, Store, mask_url,
};

struct Pg {
    url: String,
    password_file: std::path::PathBuf,
}

fn pg() -> Option<Pg> {
    match (
        std::env::var("CRASHDOC_TEST_PG_URL"),
        std::env::var("CRASHDOC_TEST_PG_PASSWORD_FILE"),
    ) {
        (Ok(url), Ok(pw)) if !url.is_empty() => Some(Pg {
            url,
            password_file: pw.into(),
        }),
        _ => {
            assert_ne!(
                std::env::var("CRASHDOC_REQUIRE_PG").as_deref(),
                Ok("1"),
                "CRASHDOC_REQUIRE_PG=1 but the PostgreSQL test variables are not set"
            );
            println!(
                "SKIP: PostgreSQL tests (set CRASHDOC_TEST_PG_URL and CRASHDOC_TEST_PG_PASSWORD_FILE)"
            );
            None
        }
    }
}

fn fresh_url(url: &str) -> String {
    use std::sync::atomic::AtomicU32;
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let sep = if url.contains('?') { '&' } else { '?' };
    format!(
        "{url}{sep}schema=p_{}_{}_{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn opts(pg: &Pg) -> OpenOptions {
    OpenOptions {
        password_file: Some(pg.password_file.clone()),
        ..OpenOptions::default()
    }
}

fn password(pg: &Pg) -> String {
    std::fs::read_to_string(&pg.password_file)
        .unwrap()
        .trim_end()
        .to_string()
}

fn drop_schema(pg: &Pg, url: &str) {
    if let Ok(s) = PgStore::connect(url, Some(password(pg)), &OpenOptions::default()) {
        let _ = s.query_text("DROP SCHEMA {s} CASCADE");
    }
}

#[test]
fn a_newer_schema_is_refused_with_upgrade_crashdoc() {
    let Some(pg) = pg() else { return };
    let url = fresh_url(&pg.url);
    let s = PgStore::connect(&url, Some(password(&pg)), &OpenOptions::default()).unwrap();
    s.query_text("INSERT INTO {s}.schema_version (version) VALUES (99)")
        .unwrap();
    for read_only in [false, true] {
        let err = crashdoc_history::open(
            &Location::Postgres(url.clone()),
            &OpenOptions {
                read_only,
                ..opts(&pg)
            },
        )
        .unwrap_err();
        let HistoryError::SchemaVersion { found, .. } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(*found, 99);
        assert!(err.to_string().contains("newer crashdoc"), "{err}");
        assert!(err.hint().unwrap().contains("upgrade crashdoc"));
    }
    drop_schema(&pg, &url);
}

#[test]
fn a_read_only_open_of_a_missing_history_says_so() {
    let Some(pg) = pg() else { return };
    let url = fresh_url(&pg.url);
    let err = crashdoc_history::open(
        &Location::Postgres(url),
        &OpenOptions {
            read_only: true,
            ..opts(&pg)
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("no crashdoc history"), "{err}");
}

#[test]
fn watchers_starting_together_migrate_once() {
    let Some(pg) = pg() else { return };
    let url = fresh_url(&pg.url);
    let pg = Arc::new(pg);
    let hs: Vec<_> = (0..6)
        .map(|i| {
            let (url, pg) = (url.clone(), pg.clone());
            std::thread::spawn(move || {
                let s = crashdoc_history::open(
                    &Location::Postgres(url),
                    &OpenOptions {
                        cluster: Some(format!("c{i}")),
                        ..opts(&pg)
                    },
                )
                .unwrap();
                s.insert(&capture("ns", "p", None, "c", i, 1, 0)).unwrap()
            })
        })
        .collect();
    for h in hs {
        assert!(h.join().unwrap().is_new());
    }
    let s = PgStore::connect(&url, Some(password(&pg)), &OpenOptions::default()).unwrap();
    assert_eq!(
        s.query_text("SELECT version::text FROM {s}.schema_version")
            .unwrap(),
        vec!["1".to_string()]
    );
    drop_schema(&pg, &url);
}

#[test]
fn a_wrong_password_is_never_shown() {
    let Some(pg) = pg() else { return };
    let wrong = "Wr0ng-Pa55word-x7q";
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pw");
    std::fs::write(&file, format!("{wrong}\n")).unwrap();
    // From a password file, and in the URL itself.
    let (scheme, rest) = pg.url.split_once("://").unwrap();
    let (user, host) = rest.split_once('@').expect("the test URL names its user");
    let in_url = format!("{scheme}://{user}:{wrong}@{host}");
    for (url, o) in [
        (
            fresh_url(&pg.url),
            OpenOptions {
                password_file: Some(file.clone()),
                ..OpenOptions::default()
            },
        ),
        (fresh_url(&in_url), OpenOptions::default()),
    ] {
        let err = crashdoc_history::open(&Location::Postgres(url.clone()), &o).unwrap_err();
        let all = format!("{err} {err:?} {}", err.hint().unwrap_or_default());
        assert!(!all.contains(wrong), "{all}");
        assert!(
            matches!(err, HistoryError::Auth { .. }),
            "a refused login: {err:?}"
        );
        assert!(!mask_url(&url).contains(wrong));
        assert!(!format!("{:?}", Location::Postgres(url.clone())).contains(wrong));
    }
}

#[test]
fn an_unreachable_database_is_unavailable_with_a_hint() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://u:secretpw@127.0.0.1:{port}/db?sslmode=disable");
    let start = Instant::now();
    let err =
        crashdoc_history::open(&Location::Postgres(url), &OpenOptions::default()).unwrap_err();
    assert!(err.is_unavailable(), "{err:?}");
    assert!(start.elapsed() < Duration::from_secs(10));
    let all = format!("{err} {err:?} {}", err.hint().unwrap_or_default());
    assert!(!all.contains("secretpw"), "{all}");
    assert!(all.contains("u:***@127.0.0.1"), "{all}");
    assert!(err.hint().unwrap().contains("reachable"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callable_from_a_tokio_worker() {
    let Some(pg) = pg() else { return };
    let url = fresh_url(&pg.url);
    let s = crashdoc_history::open(&Location::Postgres(url.clone()), &opts(&pg)).unwrap();
    assert!(
        s.insert(&capture("ns", "p", None, "c", 1, 1, 0))
            .unwrap()
            .is_new()
    );
    assert_eq!(s.list(&Query::default()).unwrap().len(), 1);
    drop(s);
    drop_schema(&pg, &url);
}

#[tokio::test(flavor = "current_thread")]
async fn callable_from_a_current_thread_runtime() {
    let Some(pg) = pg() else { return };
    let url = fresh_url(&pg.url);
    let s = crashdoc_history::open(&Location::Postgres(url.clone()), &opts(&pg)).unwrap();
    assert_eq!(s.stats().unwrap().captures, 0);
    drop_schema(&pg, &url);
}

/// A TCP proxy to the database that the test can cut (every connection
/// closed, new ones accepted and closed at once) and restore.
struct Proxy {
    port: u16,
    up: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    fn start(upstream: (String, u16)) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(AtomicBool::new(true));
        let conns: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (u, c) = (up.clone(), conns.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if !u.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect((upstream.0.as_str(), upstream.1)) else {
                    continue;
                };
                {
                    let mut c = c.lock().unwrap();
                    c.push(client.try_clone().unwrap());
                    c.push(server.try_clone().unwrap());
                }
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 16384];
                        loop {
                            match from.read(&mut buf) {
                                Ok(0) | Err(_) => break,
                                Ok(n) => {
                                    if to.write_all(&buf[..n]).is_err() {
                                        break;
                                    }
                                }
                            }
                        }
                        let _ = to.shutdown(Shutdown::Both);
                    });
                }
            }
        });
        Proxy { port, up, conns }
    }

    fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        for c in self.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }

    fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

/// The test URL through the proxy: host and port replaced.
fn through(url: &str, port: u16) -> (String, (String, u16)) {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (auth, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let (user, hostport) = match auth.rsplit_once('@') {
        Some((u, h)) => (format!("{u}@"), h),
        None => (String::new(), auth),
    };
    let (host, p) = hostport.rsplit_once(':').unwrap_or((hostport, "5432"));
    (
        format!("{scheme}://{user}127.0.0.1:{port}/{tail}"),
        (host.to_string(), p.parse().unwrap()),
    )
}

fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn spooling(pg: &Pg, limit: u64) -> (Proxy, String, Arc<dyn Store>, tempfile::TempDir) {
    let url = fresh_url(&pg.url);
    // Create the schema first, directly.
    drop(crashdoc_history::open(&Location::Postgres(url.clone()), &opts(pg)).unwrap());
    let (_, upstream) = through(&url, 0);
    let proxy = Proxy::start(upstream);
    let (purl, _) = through(&url, proxy.port);
    let dir = tempfile::tempdir().unwrap();
    let s = crashdoc_history::open(
        &Location::Postgres(purl),
        &OpenOptions {
            cluster: Some("east".into()),
            spool: Some(SpoolConfig {
                path: dir.path().join("spool.redb"),
                max_captures: limit,
                max_bytes: 1 << 30,
            }),
            connect_timeout: Duration::from_secs(2),
            ..opts(pg)
        },
    )
    .unwrap();
    (proxy, url, s, dir)
}

fn cap(i: i32) -> crashdoc_history::Capture {
    let mut c = capture(
        "shop",
        &format!("web-{}", i % 3),
        Some("web"),
        "web",
        i,
        i as i64,
        200,
    );
    c.key.cluster = "east".into();
    c
}

#[test]
fn the_spool_keeps_captures_through_an_outage_and_drains_them_once() {
    let Some(pg) = pg() else { return };
    let (proxy, url, s, _dir) = spooling(&pg, 1000);
    for i in 0..5 {
        assert!(s.insert(&cap(i)).unwrap().is_new());
    }
    assert_eq!(s.spool().unwrap().depth, 0);
    proxy.cut();
    for i in 5..25 {
        assert_eq!(s.insert(&cap(i)).unwrap(), Inserted::Spooled, "capture {i}");
    }
    // A retry of a spooled capture, and of a stored one, while down.
    assert_eq!(s.insert(&cap(7)).unwrap(), Inserted::Spooled);
    let st = s.spool().unwrap();
    assert_eq!(st.depth, 20);
    assert!(st.database_down);
    assert_eq!(st.oldest, Some(common::at(5)));
    // A watcher starting now gets the spool's keys, and a warning.
    let keys = s.seen_keys().unwrap();
    assert!(keys.contains(&cap(20).key));
    let err = s.list(&Query::default()).unwrap_err();
    assert!(err.is_unavailable(), "{err:?}");
    let hint = err.hint().unwrap().to_string();
    assert!(
        hint.contains("spool.redb") && hint.contains("holds 20"),
        "{hint}"
    );
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(s.spool().unwrap().depth, 20, "nothing drains while down");
    proxy.restore();
    wait_for("the drain", Duration::from_secs(30), || {
        s.spool().unwrap().depth == 0
    });
    let st = s.spool().unwrap();
    assert_eq!((st.drained, st.dropped), (20, 0));
    wait_for("the database up", Duration::from_secs(10), || {
        !s.spool().unwrap().database_down
    });
    let direct = PgStore::connect(&url, Some(password(&pg)), &OpenOptions::default()).unwrap();
    let all = direct.list(&Query::default()).unwrap();
    assert_eq!(all.len(), 25, "N in, N records");
    let distinct: std::collections::HashSet<_> =
        all.iter().map(|r| r.capture.key.clone()).collect();
    assert_eq!(distinct.len(), 25, "no duplicates");
    direct.check_consistency().unwrap();
    // Writes go to the database again.
    assert!(s.insert(&cap(30)).unwrap().is_new());
    drop(s);
    drop_schema(&pg, &url);
}

#[test]
fn past_its_limit_the_spool_drops_and_counts() {
    let Some(pg) = pg() else { return };
    let (proxy, url, s, _dir) = spooling(&pg, 3);
    proxy.cut();
    let out = s
        .insert_batch(&(0..5).map(cap).collect::<Vec<_>>())
        .unwrap();
    assert_eq!(
        out,
        vec![
            Inserted::Spooled,
            Inserted::Spooled,
            Inserted::Spooled,
            Inserted::Dropped,
            Inserted::Dropped
        ]
    );
    assert_eq!(s.insert(&cap(9)).unwrap(), Inserted::Dropped);
    let st = s.spool().unwrap();
    assert_eq!((st.depth, st.dropped), (3, 3));
    proxy.restore();
    wait_for("the drain", Duration::from_secs(30), || {
        s.spool().unwrap().depth == 0
    });
    let direct = PgStore::connect(&url, Some(password(&pg)), &OpenOptions::default()).unwrap();
    assert_eq!(direct.list(&Query::default()).unwrap().len(), 3);
    drop(s);
    drop_schema(&pg, &url);
}

#[test]
fn a_spool_left_by_a_previous_process_drains_and_dedups() {
    let Some(pg) = pg() else { return };
    let url = fresh_url(&pg.url);
    let first = crashdoc_history::open(&Location::Postgres(url.clone()), &opts(&pg)).unwrap();
    // cap(1) reached the database before the crash; the spool kept it too.
    first.insert(&cap(1)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spool.redb");
    {
        let spool = crashdoc_history::RedbStore::open(&path).unwrap();
        spool.insert_batch(&[cap(1), cap(2), cap(3)]).unwrap();
    }
    let s = crashdoc_history::open(
        &Location::Postgres(url.clone()),
        &OpenOptions {
            cluster: Some("east".into()),
            spool: Some(SpoolConfig {
                path,
                max_captures: 100,
                max_bytes: 1 << 30,
            }),
            ..opts(&pg)
        },
    )
    .unwrap();
    wait_for("the drain", Duration::from_secs(30), || {
        s.spool().unwrap().depth == 0
    });
    let all = first.list(&Query::default()).unwrap();
    assert_eq!(all.len(), 3, "stored once");
    drop(s);
    drop_schema(&pg, &url);
}

#[test]
fn a_refused_login_spools_instead_of_losing_the_capture() {
    let Some(pg) = pg() else { return };
    let url = fresh_url(&pg.url);
    let first = crashdoc_history::open(&Location::Postgres(url.clone()), &opts(&pg)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let wrong = dir.path().join("wrong-password");
    std::fs::write(&wrong, "Wr0ng-Pa55word-rotated\n").unwrap();
    let spool = SpoolConfig {
        path: dir.path().join("spool.redb"),
        max_captures: 100,
        max_bytes: 1 << 30,
    };
    let with = |password_file: std::path::PathBuf| OpenOptions {
        cluster: Some("east".into()),
        spool: Some(spool.clone()),
        password_file: Some(password_file),
        ..OpenOptions::default()
    };
    {
        // A password rotated in the database but not yet in the watcher.
        let s = crashdoc_history::open(&Location::Postgres(url.clone()), &with(wrong)).unwrap();
        assert_eq!(s.insert(&cap(1)).unwrap(), Inserted::Spooled);
        let st = s.spool().unwrap();
        assert_eq!((st.depth, st.dropped), (1, 0));
        assert!(st.database_down);
    }
    // Near miss: with the right password the same spool drains, once.
    let s = crashdoc_history::open(
        &Location::Postgres(url.clone()),
        &with(pg.password_file.clone()),
    )
    .unwrap();
    wait_for("the drain", Duration::from_secs(30), || {
        s.spool().unwrap().depth == 0
    });
    assert_eq!(first.list(&Query::default()).unwrap().len(), 1);
    drop(s);
    drop_schema(&pg, &url);
}
