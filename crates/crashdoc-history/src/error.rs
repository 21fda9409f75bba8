//! Errors of the history store, and the mapping from redb's.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// Why the history could not be opened, read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// Another process has the file open for writing (redb's
    /// `DatabaseAlreadyOpen`): only one `crashdoc watch` can record at a time.
    #[error(
        "the history file {path} is already open for writing by another process: is another `crashdoc watch` running?"
    )]
    Locked { path: PathBuf },

    /// [`crate::RedbStore::open_read_only`] on a path where no history exists.
    #[error("there is no history at {path}")]
    NotFound { path: PathBuf },

    /// The file exists but is not a crashdoc history (another file, another
    /// program's redb database, or an empty file).
    #[error("{path} is not a crashdoc history database: {detail}")]
    NotCrashdoc { path: PathBuf, detail: String },

    /// A crashdoc history written with another layout. `location` is a
    /// file path or a database URL with its password masked.
    #[error(
        "the history {location} has schema version {found}, this crashdoc reads version {supported}{}",
        if *found > *supported { ": it was written by a newer crashdoc" } else { ": an older crashdoc wrote it" }
    )]
    SchemaVersion {
        location: String,
        found: u64,
        supported: u64,
    },

    /// The file was not closed cleanly (a watcher was killed) and could not be
    /// repaired now, because another process opened it meanwhile.
    #[error(
        "the history file {path} was not closed cleanly (was `crashdoc watch` killed?) and is being repaired by another process"
    )]
    NeedsRepair { path: PathBuf },

    /// The file is a redb database whose pages or records do not check out.
    #[error("the history file {path} is corrupted ({detail})")]
    Corrupted { path: PathBuf, detail: String },

    /// Reading or writing the file (or creating its folder) failed.
    #[error("cannot access the history file {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A capture could not be encoded, or a stored one decoded.
    #[error("cannot encode or decode capture record {}", id.map_or_else(|| "(new)".to_string(), |id| id.to_string()))]
    Encoding {
        id: Option<u64>,
        #[source]
        source: serde_json::Error,
    },

    /// A bundle or diagnosis larger than the store takes
    /// ([`crate::MAX_BLOB_BYTES`] in a file, 1 GiB in PostgreSQL).
    #[error(
        "the capture's {what} of {bytes} bytes is too large to store (the limit is {limit} bytes)"
    )]
    TooLarge {
        what: &'static str,
        bytes: u64,
        limit: u64,
    },

    /// A write on a store opened read-only. `location` is a file path or a
    /// masked database URL.
    #[error("the history {location} was opened read-only")]
    ReadOnly { location: String },

    /// The database could not be reached: the connection was refused, timed
    /// out or was lost. `location` is the masked URL. `spool` describes the
    /// local spool of a [`crate::SpoolingStore`] (its file and depth) when
    /// there is one.
    #[error("the history database {location} is unreachable: {detail}")]
    Unavailable {
        location: String,
        detail: String,
        spool: Option<String>,
    },

    /// The database refused the credentials (never shown).
    #[error("the history database {location} refused the login: {detail}")]
    Auth { location: String, detail: String },

    /// The database `location` (masked) was reached, but failed otherwise.
    #[error("the history database {location} failed: {detail}")]
    Database { location: String, detail: String },

    /// A `--db` location or an option that cannot be used.
    #[error("invalid history location {location}: {detail}")]
    Config { location: String, detail: String },

    /// A broken invariant of this crate (a bug), reported instead of a panic.
    #[error("internal error of the history store: {detail}")]
    Internal { detail: String },

    /// Any other failure reported by the database engine.
    #[error("the history database {path} failed")]
    Storage {
        path: PathBuf,
        #[source]
        source: redb::Error,
    },
}

impl crashdoc_core::Hint for HistoryError {
    /// What the user can do about it: the same under `crashdoc watch` and
    /// `crashdoc history`.
    fn hint(&self) -> Option<std::borrow::Cow<'_, str>> {
        let h = match self {
            HistoryError::Unavailable { spool: Some(s), .. } => {
                return Some(Cow::Owned(format!(
                    "captures are kept in the local spool meanwhile ({s}) and move to the database when it is back; check that the database is running and reachable (host, port, firewall, sslmode)"
                )));
            }
            HistoryError::Unavailable { spool: None, .. } => {
                "check that the database is running and reachable from here (host, port, firewall, sslmode); a watcher with a spool keeps its captures locally meanwhile"
            }
            HistoryError::Auth { .. } => {
                "check the user and the password (from the URL, the password file or PGPASSWORD) and the server's pg_hba.conf"
            }
            HistoryError::Config { .. } => {
                "--db takes a file path or a URL postgres://user@host:port/dbname?sslmode=require"
            }
            HistoryError::Locked { .. } => {
                "stop the other watcher, or point this one at another history file with --db; `crashdoc history` can read the file while a watcher runs"
            }
            HistoryError::NotFound { .. } => {
                "a history is created by `crashdoc watch`; point --db at the file it writes"
            }
            HistoryError::NotCrashdoc { .. } | HistoryError::Corrupted { .. } => {
                "move the file aside and start again: `crashdoc watch` creates a new history"
            }
            HistoryError::SchemaVersion {
                found, supported, ..
            } if found > supported => {
                "upgrade crashdoc: a newer crashdoc wrote this history (or use another one)"
            }
            HistoryError::SchemaVersion { .. } => {
                "move the file aside (it will not be converted): `crashdoc watch` creates a new history"
            }
            HistoryError::NeedsRepair { .. } => "try again in a moment",
            HistoryError::Io { .. }
            | HistoryError::Encoding { .. }
            | HistoryError::TooLarge { .. }
            | HistoryError::ReadOnly { .. }
            | HistoryError::Internal { .. }
            | HistoryError::Database { .. }
            | HistoryError::Storage { .. } => return None,
        };
        Some(std::borrow::Cow::Borrowed(h))
    }
}

impl HistoryError {
    /// Whether the error says the database could not be reached (so that a
    /// [`crate::SpoolingStore`] keeps the capture locally instead).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, HistoryError::Unavailable { .. })
    }

    /// Whether a capture refused with this error is worth keeping for a
    /// later attempt: the database is unreachable, or it refused the login
    /// (a password rotated in the Secret but not yet in the watcher is
    /// fixed by an operator, not by throwing the evidence away).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            HistoryError::Unavailable { .. } | HistoryError::Auth { .. }
        )
    }

    /// Classifies a redb error met while using the file at `path`.
    pub(crate) fn from_redb(path: &Path, err: impl Into<redb::Error>) -> HistoryError {
        let path = path.to_path_buf();
        match err.into() {
            redb::Error::DatabaseAlreadyOpen => HistoryError::Locked { path },
            redb::Error::RepairAborted => HistoryError::NeedsRepair { path },
            redb::Error::TableDoesNotExist(table) => HistoryError::NotCrashdoc {
                path,
                detail: format!("it has no table {table}"),
            },
            redb::Error::Corrupted(detail) => HistoryError::Corrupted { path, detail },
            // redb reports a file without its magic number (or an empty file
            // opened without creating) as InvalidData.
            redb::Error::Io(source) if source.kind() == std::io::ErrorKind::InvalidData => {
                HistoryError::NotCrashdoc {
                    path,
                    detail: source.to_string(),
                }
            }
            // A read past the end: the file was cut short (a copy, a full disk).
            redb::Error::Io(source) if source.kind() == std::io::ErrorKind::UnexpectedEof => {
                HistoryError::Corrupted {
                    path,
                    detail: "the file is truncated".to_string(),
                }
            }
            redb::Error::Io(source) => HistoryError::Io { path, source },
            redb::Error::UpgradeRequired(version) => HistoryError::NotCrashdoc {
                path,
                detail: format!("it uses the old redb file format {version}"),
            },
            err @ (redb::Error::TableTypeMismatch { .. }
            | redb::Error::TableIsMultimap(_)
            | redb::Error::TableIsNotMultimap(_)
            | redb::Error::TypeDefinitionChanged { .. }) => HistoryError::NotCrashdoc {
                path,
                detail: format!("its tables have other types ({err})"),
            },
            source => HistoryError::Storage { path, source },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashdoc_core::Hint;

    #[test]
    fn advice_is_in_the_hint_not_the_message() {
        let e = HistoryError::Corrupted {
            path: "h.redb".into(),
            detail: "bad page".into(),
        };
        assert!(!e.to_string().contains("move"), "{e}");
        assert!(e.hint().is_some_and(|h| h.contains("move the file aside")));
        let newer = HistoryError::SchemaVersion {
            location: "h.redb".into(),
            found: 9,
            supported: 1,
        };
        assert!(newer.hint().is_some_and(|h| h.contains("upgrade")));
        let older = HistoryError::SchemaVersion {
            location: "h.redb".into(),
            found: 0,
            supported: 1,
        };
        assert!(older.hint().is_some_and(|h| !h.contains("upgrade")));
    }

    #[test]
    fn an_io_error_has_no_hint() {
        let e = HistoryError::Io {
            path: "h.redb".into(),
            source: std::io::Error::other("disk"),
        };
        assert!(e.hint().is_none());
    }
}
