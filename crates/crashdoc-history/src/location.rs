//! Where a history is (`--db`): a redb file or a PostgreSQL URL, opened
//! through one function, [`open`]. URLs are shown only through
//! [`mask_url`] (crashdoc-core's, re-exported).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::{HistoryError, RedbStore, Store};

/// A history's location as `--db` gives it.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    /// A redb file.
    File(PathBuf),
    /// A PostgreSQL URL (`postgres://` or `postgresql://`), possibly with a
    /// password: shown only through [`mask_url`] (its `Display` and `Debug`).
    Postgres(String),
}

impl std::str::FromStr for Location {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.get(..13).unwrap_or(s).to_ascii_lowercase();
        Ok(
            if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
                Location::Postgres(s.to_string())
            } else {
                Location::File(PathBuf::from(s))
            },
        )
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::File(p) => write!(f, "{}", p.display()),
            Location::Postgres(url) => f.write_str(&mask_url(url)),
        }
    }
}

impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::File(p) => f.debug_tuple("File").field(p).finish(),
            Location::Postgres(url) => f.debug_tuple("Postgres").field(&mask_url(url)).finish(),
        }
    }
}

/// The URL with its credentials masked: crashdoc-core's one function.
pub use crashdoc_core::redact::mask_url;
use crashdoc_core::redact::percent_decode;

/// The URL before its query, and the query. The query starts at the first
/// '?' after the userinfo (a password may hold a '?').
fn split_query(url: &str) -> (&str, Option<&str>) {
    let from = url.rfind('@').map_or(0, |at| at + 1);
    match url[from..].find('?') {
        Some(i) => (&url[..from + i], Some(&url[from + i + 1..])),
        None => (url, None),
    }
}

/// The parts of a PostgreSQL URL crashdoc reads itself; the rest goes to
/// the driver.
pub(crate) struct PgUrl {
    /// The URL without `schema`, `sslmode`, `sslrootcert` (and with the
    /// password, if it had one): for the driver.
    pub driver_url: String,
    pub schema: Option<String>,
    pub sslmode: Option<String>,
    pub sslrootcert: Option<PathBuf>,
}

impl PgUrl {
    pub(crate) fn parse(url: &str) -> PgUrl {
        let (head, query) = split_query(url);
        let mut kept = Vec::new();
        let (mut schema, mut sslmode, mut sslrootcert) = (None, None, None);
        for kv in query.unwrap_or("").split('&').filter(|kv| !kv.is_empty()) {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            match percent_decode(k).as_str() {
                "schema" => schema = Some(percent_decode(v)),
                "sslmode" => sslmode = Some(percent_decode(v)),
                "sslrootcert" => sslrootcert = Some(PathBuf::from(percent_decode(v))),
                _ => kept.push(kv),
            }
        }
        let mut driver_url = head.to_string();
        if !kept.is_empty() {
            driver_url.push('?');
            driver_url.push_str(&kept.join("&"));
        }
        PgUrl {
            driver_url,
            schema,
            sslmode,
            sslrootcert,
        }
    }
}

/// How to open a history.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// Open for reading only: writes fail with [`HistoryError::ReadOnly`].
    pub read_only: bool,
    /// The cluster this handle writes for (`crashdoc watch --cluster`): the
    /// writer-side state is that cluster's (see [`Store`]).
    pub cluster: Option<String>,
    /// A file holding the database password (a mounted Secret's key); its
    /// trailing newline is trimmed. Used when the URL has no password.
    pub password_file: Option<PathBuf>,
    /// Queue captures in this local file while PostgreSQL is unreachable
    /// (a [`crate::SpoolingStore`]). Ignored for a file location.
    pub spool: Option<SpoolConfig>,
    /// How long a connection attempt to PostgreSQL may take.
    pub connect_timeout: Duration,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            read_only: false,
            cluster: None,
            password_file: None,
            spool: None,
            connect_timeout: Duration::from_secs(5),
        }
    }
}

/// The bounds of a [`crate::SpoolingStore`]'s local spool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpoolConfig {
    /// The spool's redb file.
    pub path: PathBuf,
    /// At most this many captures wait; later ones are dropped and counted.
    pub max_captures: u64,
    /// At most this many stored bytes (bundles included) wait.
    pub max_bytes: u64,
}

/// Opens the history at `loc`.
///
/// A file: [`RedbStore::open`] (or [`RedbStore::open_read_only`]), scoped
/// to `o.cluster` when one is given. A PostgreSQL URL: a [`crate::PgStore`]
/// (its password from the URL, else `o.password_file`, else `PGPASSWORD`),
/// wrapped in a [`crate::SpoolingStore`] when `o.spool` is set (then the
/// open succeeds while the database is down).
pub fn open(loc: &Location, o: &OpenOptions) -> Result<Arc<dyn Store>, HistoryError> {
    match loc {
        Location::File(path) => {
            let store = if o.read_only {
                RedbStore::open_read_only(path)?
            } else {
                RedbStore::open(path)?
            };
            let store = match &o.cluster {
                Some(c) => store.for_cluster(c.clone()),
                None => store,
            };
            Ok(Arc::new(store))
        }
        Location::Postgres(url) => {
            let password = password(o)?;
            match &o.spool {
                Some(spool) if !o.read_only => {
                    let db = crate::PgStore::connect_lazy(url, password, o)?;
                    Ok(Arc::new(crate::SpoolingStore::new(
                        Arc::new(db),
                        spool,
                        o.cluster.clone(),
                    )?))
                }
                _ => Ok(Arc::new(crate::PgStore::connect(url, password, o)?)),
            }
        }
    }
}

/// The password from the options' file or `PGPASSWORD`; the URL's own
/// takes precedence (the caller applies it only when the URL has none).
fn password(o: &OpenOptions) -> Result<Option<String>, HistoryError> {
    if let Some(p) = &o.password_file {
        let s = std::fs::read_to_string(p).map_err(|source| HistoryError::Io {
            path: p.clone(),
            source,
        })?;
        let s = s.strip_suffix('\n').unwrap_or(&s);
        let s = s.strip_suffix('\r').unwrap_or(s);
        return Ok(Some(s.to_string()));
    }
    Ok(std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations() {
        let l: Location = "postgres://u:pw@h/db".parse().unwrap();
        assert!(matches!(l, Location::Postgres(_)));
        assert_eq!(l.to_string(), "postgres://u:***@h/db");
        assert!(!format!("{l:?}").contains("pw"));
        let l: Location = "POSTGRESQL://h/db".parse().unwrap();
        assert!(matches!(l, Location::Postgres(_)));
        let l: Location = "history.redb".parse().unwrap();
        assert_eq!(l, Location::File("history.redb".into()));
    }

    #[test]
    fn crashdoc_parameters_are_stripped() {
        let u = PgUrl::parse(
            "postgres://u:p@h/db?schema=t%5F1&sslmode=verify-full&sslrootcert=/ca.pem&connect_timeout=3",
        );
        assert_eq!(u.schema.as_deref(), Some("t_1"));
        assert_eq!(u.sslmode.as_deref(), Some("verify-full"));
        assert_eq!(u.sslrootcert, Some(PathBuf::from("/ca.pem")));
        assert_eq!(u.driver_url, "postgres://u:p@h/db?connect_timeout=3");
    }
}
