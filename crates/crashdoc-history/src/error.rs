//! Errors of the history store, and the mapping from redb's.

use std::path::{Path, PathBuf};

/// Why the history could not be opened, read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// Another process has the file open for writing (redb's
    /// `DatabaseAlreadyOpen`): only one `crashdoc watch` can record at a time.
    #[error(
        "the history file {path} is already open for writing by another process: is another `crashdoc watch` running? (stop it, or point this one at another history file; `crashdoc history` can read the file while a watcher runs)"
    )]
    Locked { path: PathBuf },

    /// [`crate::Store::open_read_only`] on a path where no history exists.
    #[error("there is no history at {path}: it is created by `crashdoc watch`")]
    NotFound { path: PathBuf },

    /// The file exists but is not a crashdoc history (another file, another
    /// program's redb database, or an empty file).
    #[error("{path} is not a crashdoc history database: {detail}")]
    NotCrashdoc { path: PathBuf, detail: String },

    /// A crashdoc history written with another layout.
    #[error(
        "the history {path} has schema version {found}, this crashdoc reads version {supported}{}",
        if *found > *supported { ": it was written by a newer crashdoc; upgrade, or use another history file" } else { ": move it aside (it will not be converted)" }
    )]
    SchemaVersion {
        path: PathBuf,
        found: u64,
        supported: u64,
    },

    /// The file was not closed cleanly (a watcher was killed) and could not be
    /// repaired now, because another process opened it meanwhile.
    #[error(
        "the history file {path} was not closed cleanly (was `crashdoc watch` killed?) and is being repaired by another process: try again in a moment"
    )]
    NeedsRepair { path: PathBuf },

    /// The file is a redb database whose pages or records do not check out.
    #[error(
        "the history file {path} is corrupted ({detail}): move it aside and let `crashdoc watch` start a new one"
    )]
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

    /// A bundle or diagnosis larger than [`crate::MAX_BLOB_BYTES`].
    #[error("the capture's {what} of {bytes} bytes is too large to store (the limit is 4 GiB)")]
    TooLarge { what: &'static str, bytes: u64 },

    /// A write on a store opened with [`crate::Store::open_read_only`].
    #[error("the history {path} was opened read-only")]
    ReadOnly { path: PathBuf },

    /// Any other failure reported by the database engine.
    #[error("the history database {path} failed")]
    Storage {
        path: PathBuf,
        #[source]
        source: redb::Error,
    },
}

impl HistoryError {
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
