//! The PostgreSQL store: many watchers (one per cluster) write to one
//! database, `crashdoc history` reads the fleet.
//!
//! # Threads
//!
//! A [`PgStore`] owns one connection, driven by a dedicated thread with its
//! own current-thread tokio runtime; every [`Store`] method sends its work
//! there over a channel and blocks until the answer comes back. So a store
//! can be called from any thread, a tokio worker's included (it blocks that
//! worker for the round trip, as any blocking call does; async callers use
//! `spawn_blocking`). Calls on one handle run one after another; open
//! several handles for parallel writers. A lost connection is reopened by
//! the next call.
//!
//! # Schema
//!
//! Everything lives in one PostgreSQL schema (`crashdoc_history`, or the
//! URL's `schema=NAME` parameter, which is not passed to the server).
//! Migrations are embedded ([`PG_SCHEMA_VERSION`]) and applied in one
//! transaction under `pg_advisory_xact_lock`, so watchers starting together
//! do not race; a database of a newer version is refused with
//! [`HistoryError::SchemaVersion`].
//!
//! | table | key | role |
//! | --- | --- | --- |
//! | `schema_version` | version | the applied migrations |
//! | `captures` | id (bigserial); UNIQUE (cluster, pod_uid, container, restart_count) | one row per capture: the query columns (`''` for an absent owner, node or cause), `workload` (`namespace/Kind/name`, or `namespace/Pod/pod`), `observed_at`, the [`Capture`]'s JSON without bundle and diagnosis (`record`), sizes |
//! | `blobs` | (capture_id, part) | the bundle (part 0) and the diagnosis (part 1) |
//! | `config_keys` | capture_id | the [`ConfigKeys`] JSON |
//! | `totals` | cluster | captures, bundle bytes, stored bytes per cluster (O(1) stats and retention) |
//! | `rollup` | (hour, cluster, namespace, owner_kind, owner, workload, node, cause, pod_uid) | captures, first, last per hour and pod: what [`Store::group`] and [`Store::new_causes`] aggregate |
//! | `first_seen` | (cluster, namespace, workload, cause) | when each workload's cause was first captured |
//! | `checkpoints` | cluster | the watcher's checkpoint |
//! | `baselines` | (cluster, pod_uid, container) | restart-count baselines |
//!
//! `rollup`, `first_seen` and `totals` are maintained in the same
//! transactions as the inserts and prunes, so they never disagree with
//! `captures`. The fleet queries read `rollup` for the whole hours of their
//! window and `captures` (through its time indexes) for the partial hours at
//! its ends, so their cost grows with the number of (hour, pod, cause)
//! combinations, not with the captures of crash-looping pods; a query that
//! names a pod or a container reads `captures` through the pod's index.
//!
//! Timestamps are stored with PostgreSQL's microsecond precision; the
//! records keep crashdoc's nanoseconds, and filters compare microseconds.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::LocalBoxFuture;
use jiff::Timestamp;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{Client, NoTls, Row, Statement, Transaction};

use crate::api::{Group, GroupBy, NewCause, Since, Store};
use crate::fleet::workload_key;
use crate::location::{OpenOptions, PgUrl, mask_url};
use crate::{
    Capture, ConfigKeys, HistoryError, Inserted, PruneStats, Query, Record, Retention, Stats,
    TerminationKey,
};

/// The layout version of the PostgreSQL schema this crate writes and reads.
pub const PG_SCHEMA_VERSION: i32 = 1;

/// The largest bundle or diagnosis PostgreSQL stores (a `bytea` is at most 1 GiB).
const PG_MAX_BLOB: u64 = (1 << 30) - 1024;

/// How long one call may take before the connection is given up.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// The migrations, in order; `{s}` is the quoted schema name.
const MIGRATIONS: &[(i32, &str)] = &[(
    1,
    r#"
CREATE TABLE {s}.captures (
    id bigserial PRIMARY KEY,
    cluster text NOT NULL,
    pod_uid text NOT NULL,
    container text NOT NULL,
    restart_count integer NOT NULL,
    namespace text NOT NULL,
    pod text NOT NULL,
    owner_kind text NOT NULL,
    owner text NOT NULL,
    workload text NOT NULL,
    node text NOT NULL,
    revision text,
    cause text NOT NULL,
    confidence text,
    reason text,
    exit_code integer,
    observed_at timestamptz NOT NULL,
    record jsonb NOT NULL,
    bundle_len bigint NOT NULL,
    stored_bytes bigint NOT NULL,
    CONSTRAINT captures_key UNIQUE (cluster, pod_uid, container, restart_count)
);
CREATE INDEX captures_time ON {s}.captures (observed_at, id);
CREATE INDEX captures_cluster_time ON {s}.captures (cluster, observed_at, id);
CREATE INDEX captures_namespace_time ON {s}.captures (namespace, observed_at, id);
CREATE INDEX captures_owner_time ON {s}.captures (owner, observed_at, id);
CREATE INDEX captures_pod_time ON {s}.captures (pod, observed_at, id);
CREATE INDEX captures_uid_time ON {s}.captures (pod_uid, observed_at, id);
CREATE INDEX captures_revision ON {s}.captures (revision, observed_at) WHERE revision IS NOT NULL;
CREATE TABLE {s}.blobs (
    capture_id bigint NOT NULL REFERENCES {s}.captures (id) ON DELETE CASCADE,
    part smallint NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (capture_id, part)
);
ALTER TABLE {s}.blobs ALTER COLUMN data SET STORAGE EXTERNAL;
CREATE TABLE {s}.config_keys (
    capture_id bigint PRIMARY KEY REFERENCES {s}.captures (id) ON DELETE CASCADE,
    keys jsonb NOT NULL
);
CREATE TABLE {s}.totals (
    cluster text PRIMARY KEY,
    captures bigint NOT NULL,
    bundle_bytes bigint NOT NULL,
    stored_bytes bigint NOT NULL
);
CREATE TABLE {s}.rollup (
    bucket timestamptz NOT NULL,
    cluster text NOT NULL,
    namespace text NOT NULL,
    owner_kind text NOT NULL,
    owner text NOT NULL,
    workload text NOT NULL,
    node text NOT NULL,
    cause text NOT NULL,
    pod_uid text NOT NULL,
    captures bigint NOT NULL,
    first_at timestamptz NOT NULL,
    last_at timestamptz NOT NULL,
    PRIMARY KEY (bucket, cluster, namespace, owner_kind, owner, workload, node, cause, pod_uid)
);
CREATE INDEX rollup_cluster ON {s}.rollup (cluster, bucket);
CREATE INDEX rollup_pod ON {s}.rollup (cluster, pod_uid, bucket);
CREATE INDEX rollup_workload ON {s}.rollup (cluster, workload, cause, bucket);
CREATE TABLE {s}.first_seen (
    cluster text NOT NULL,
    namespace text NOT NULL,
    workload text NOT NULL,
    cause text NOT NULL,
    owner_kind text NOT NULL,
    owner text NOT NULL,
    first_at timestamptz NOT NULL,
    PRIMARY KEY (cluster, namespace, workload, cause)
);
CREATE INDEX first_seen_time ON {s}.first_seen (first_at);
CREATE TABLE {s}.checkpoints (
    cluster text PRIMARY KEY,
    watched_until timestamptz NOT NULL
);
CREATE TABLE {s}.baselines (
    cluster text NOT NULL,
    pod_uid text NOT NULL,
    container text NOT NULL,
    restart_count integer NOT NULL,
    PRIMARY KEY (cluster, pod_uid, container)
);
"#,
)];

/// The history in PostgreSQL. See the module docs.
pub struct PgStore {
    tx: tokio::sync::mpsc::UnboundedSender<Job>,
    location: String,
    read_only: bool,
    cluster: Option<String>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("location", &self.location)
            .field("read_only", &self.read_only)
            .field("cluster", &self.cluster)
            .finish()
    }
}

type Job = Box<dyn for<'a> FnOnce(&'a mut Session) -> LocalBoxFuture<'a, ()> + Send>;
type R<T> = Result<T, HistoryError>;

/// A timestamp as PostgreSQL's `timestamptz` (microseconds since 2000).
#[derive(Clone, Copy, Debug)]
struct Ts(Timestamp);

const PG_EPOCH_US: i64 = 946_684_800_000_000;

impl ToSql for Ts {
    fn to_sql(
        &self,
        _: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        let us = self.0.as_microsecond() - PG_EPOCH_US;
        out.extend_from_slice(&us.to_be_bytes());
        Ok(IsNull::No)
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::TIMESTAMPTZ
    }
    to_sql_checked!();
}

impl<'a> FromSql<'a> for Ts {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Ts, Box<dyn std::error::Error + Sync + Send>> {
        let b: [u8; 8] = raw.try_into()?;
        let us = i64::from_be_bytes(b).saturating_add(PG_EPOCH_US);
        Ok(Ts(Timestamp::from_microsecond(us)?))
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::TIMESTAMPTZ
    }
}

/// (hour, cluster, namespace, owner kind, owner, workload, node, cause, pod uid).
type RollKey = (
    Timestamp,
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    String,
);
/// (cluster, namespace, workload, cause).
type FirstKey = (String, String, String, String);

/// What a batch of new captures adds to the aggregate tables, summed in
/// memory so that each key is written once per transaction.
#[derive(Debug, Default, PartialEq)]
struct Aggregates {
    /// rollup: captures, first and last observed, per hour and pod.
    rollup: BTreeMap<RollKey, (i64, Timestamp, Timestamp)>,
    /// first_seen: the new-cause key's owner kind and name, and the first time.
    first_seen: BTreeMap<FirstKey, (String, String, Timestamp)>,
    /// totals per cluster: captures, bundle bytes, stored bytes.
    totals: BTreeMap<String, (i64, i64, i64)>,
}

impl Aggregates {
    fn add(&mut self, r: &NewRow) {
        let e = self
            .rollup
            .entry((
                hour_floor(r.observed_at),
                r.cluster.clone(),
                r.namespace.clone(),
                r.owner_kind.clone(),
                r.owner.clone(),
                r.workload.clone(),
                r.node.clone(),
                r.cause.clone(),
                r.pod_uid.clone(),
            ))
            .or_insert((0, r.observed_at, r.observed_at));
        e.0 += 1;
        e.1 = e.1.min(r.observed_at);
        e.2 = e.2.max(r.observed_at);
        if !r.cause.is_empty() {
            let f = self
                .first_seen
                .entry((
                    r.cluster.clone(),
                    r.namespace.clone(),
                    r.workload.clone(),
                    r.cause.clone(),
                ))
                .or_insert((r.nc_kind.clone(), r.nc_owner.clone(), r.observed_at));
            f.2 = f.2.min(r.observed_at);
        }
        let t = self.totals.entry(r.cluster.clone()).or_default();
        t.0 += 1;
        t.1 += r.bundle_len;
        t.2 += r.stored;
    }

    /// Add them to the rollup, first_seen and totals tables.
    async fn upsert(&self, tx: &Tx<'_>) -> R<()> {
        let up_roll = tx
        .prepare(
            "INSERT INTO {s}.rollup AS r (bucket, cluster, namespace, owner_kind, owner, workload, node, cause, pod_uid, captures, first_at, last_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
             ON CONFLICT (bucket, cluster, namespace, owner_kind, owner, workload, node, cause, pod_uid) DO UPDATE SET \
             captures = r.captures + EXCLUDED.captures, first_at = LEAST(r.first_at, EXCLUDED.first_at), last_at = GREATEST(r.last_at, EXCLUDED.last_at)",
        )
        .await?;
        for (k, v) in &self.rollup {
            tx.execute(
                &up_roll,
                &[
                    &Ts(k.0),
                    &k.1,
                    &k.2,
                    &k.3,
                    &k.4,
                    &k.5,
                    &k.6,
                    &k.7,
                    &k.8,
                    &v.0,
                    &Ts(v.1),
                    &Ts(v.2),
                ],
            )
            .await
            .map_err(|e| tx.err(e))?;
        }
        let up_first = tx
        .prepare(
            "INSERT INTO {s}.first_seen AS f (cluster, namespace, workload, cause, owner_kind, owner, first_at) VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (cluster, namespace, workload, cause) DO UPDATE SET first_at = LEAST(f.first_at, EXCLUDED.first_at)",
        )
        .await?;
        for (k, v) in &self.first_seen {
            tx.execute(&up_first, &[&k.0, &k.1, &k.2, &k.3, &v.0, &v.1, &Ts(v.2)])
                .await
                .map_err(|e| tx.err(e))?;
        }
        let up_tot = tx
        .prepare(
            "INSERT INTO {s}.totals AS t (cluster, captures, bundle_bytes, stored_bytes) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (cluster) DO UPDATE SET captures = t.captures + EXCLUDED.captures, bundle_bytes = t.bundle_bytes + EXCLUDED.bundle_bytes, stored_bytes = t.stored_bytes + EXCLUDED.stored_bytes",
        )
        .await?;
        for (c, v) in &self.totals {
            tx.execute(&up_tot, &[c, &v.0, &v.1, &v.2])
                .await
                .map_err(|e| tx.err(e))?;
        }
        Ok(())
    }
}

/// The start of the hour holding `t` (the rollup's bucket).
fn hour_floor(t: Timestamp) -> Timestamp {
    let s = t.as_second().div_euclid(3600) * 3600;
    Timestamp::from_second(s).unwrap_or(t)
}

/// The start of the first whole hour at or after `t`.
fn hour_ceil(t: Timestamp) -> Timestamp {
    let f = hour_floor(t);
    if f == t {
        f
    } else {
        Timestamp::from_second(f.as_second() + 3600).unwrap_or(t)
    }
}

fn i64_of(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn u64_of(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// What the connection thread holds.
struct Session {
    config: tokio_postgres::Config,
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    client: Option<Client>,
    /// The quoted schema name.
    s: String,
    schema: String,
    location: String,
    /// To scrub it from any text that reaches an error (it never should).
    password: Option<String>,
    migrated: bool,
    read_only: bool,
    connect_timeout: Duration,
}

/// One row to insert, encoded in the caller's thread.
struct NewRow {
    cluster: String,
    pod_uid: String,
    container: String,
    restart_count: i32,
    namespace: String,
    pod: String,
    owner_kind: String,
    owner: String,
    workload: String,
    /// The new-cause key's kind and name: the owner's, or `Pod` and the pod.
    nc_kind: String,
    nc_owner: String,
    node: String,
    revision: Option<String>,
    cause: String,
    confidence: Option<String>,
    reason: Option<String>,
    exit_code: Option<i32>,
    observed_at: Timestamp,
    record: String,
    bundle: Option<Vec<u8>>,
    diagnosis: Option<String>,
    keys: Option<String>,
    bundle_len: i64,
    stored: i64,
}

impl NewRow {
    fn of(c: &Capture, keys: &[ConfigKeys]) -> R<NewRow> {
        for (what, len) in [
            ("bundle", c.bundle.as_ref().map_or(0, |b| b.len())),
            (
                "diagnosis",
                c.diagnosis_json.as_ref().map_or(0, |d| d.len()),
            ),
        ] {
            let bytes = u64::try_from(len).unwrap_or(u64::MAX);
            if bytes > PG_MAX_BLOB {
                return Err(HistoryError::TooLarge {
                    what,
                    bytes,
                    limit: PG_MAX_BLOB,
                });
            }
        }
        let record = serde_json::to_string(&crate::store::record_of(c))
            .map_err(|source| HistoryError::Encoding { id: None, source })?;
        let keys_json = if keys.is_empty() {
            None
        } else {
            Some(
                serde_json::to_string(keys)
                    .map_err(|source| HistoryError::Encoding { id: None, source })?,
            )
        };
        let bundle_len = c.bundle.as_ref().map_or(0, |b| b.len());
        let stored = record.len()
            + bundle_len
            + c.diagnosis_json.as_ref().map_or(0, |d| d.len())
            + keys_json.as_ref().map_or(0, |k| k.len());
        let owner_kind = c.owner_kind.clone().unwrap_or_default();
        let owner = c.owner.clone().unwrap_or_default();
        let (nc_kind, nc_owner) = if !owner_kind.is_empty() && !owner.is_empty() {
            (owner_kind.clone(), owner.clone())
        } else {
            ("Pod".to_string(), c.pod.clone())
        };
        Ok(NewRow {
            cluster: c.key.cluster.clone(),
            pod_uid: c.key.pod_uid.clone(),
            container: c.key.container.clone(),
            restart_count: c.key.restart_count,
            namespace: c.namespace.clone(),
            pod: c.pod.clone(),
            workload: workload_key(
                &c.namespace,
                c.owner_kind.as_deref(),
                c.owner.as_deref(),
                &c.pod,
            ),
            owner_kind,
            owner,
            nc_kind,
            nc_owner,
            node: c.node.clone().unwrap_or_default(),
            revision: c.revision.clone(),
            cause: c.cause.clone().unwrap_or_default(),
            confidence: c.confidence.clone(),
            reason: c.reason.clone(),
            exit_code: c.exit_code,
            observed_at: c.observed_at,
            record,
            bundle: c.bundle.clone(),
            diagnosis: c.diagnosis_json.clone(),
            keys: keys_json,
            bundle_len: i64::try_from(bundle_len).unwrap_or(i64::MAX),
            stored: i64::try_from(stored).unwrap_or(i64::MAX),
        })
    }
}

/// Accepts the server's certificate without checking it (`sslmode=prefer`
/// and `require`, as libpq does), but checks the handshake's signatures.
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Checks the chain against the roots but not the host name
/// (`sslmode=verify-ca`).
#[derive(Debug)]
struct VerifyCa(Arc<rustls::client::WebPkiServerVerifier>);

impl ServerCertVerifier for VerifyCa {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The TLS setup of an `sslmode` (libpq's default: `prefer`).
fn tls_for(
    location: &str,
    sslmode: Option<&str>,
    rootcert: Option<&std::path::Path>,
) -> R<(
    tokio_postgres::config::SslMode,
    Option<tokio_postgres_rustls::MakeRustlsConnect>,
)> {
    use rustls_pki_types::pem::PemObject;
    use tokio_postgres::config::SslMode;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg_err = |detail: String| HistoryError::Config {
        location: location.to_string(),
        detail,
    };
    let builder = || {
        rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| cfg_err(format!("TLS setup: {e}")))
    };
    let no_verify = || -> R<_> {
        Ok(builder()?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider.clone())))
            .with_no_client_auth())
    };
    let roots = || -> R<Arc<rustls::RootCertStore>> {
        let Some(path) = rootcert else {
            return Err(cfg_err(
                "sslmode verify-ca and verify-full need sslrootcert=FILE (the CA's PEM)"
                    .to_string(),
            ));
        };
        let mut roots = rustls::RootCertStore::empty();
        let certs = CertificateDer::pem_file_iter(path)
            .map_err(|e| cfg_err(format!("cannot read sslrootcert {}: {e}", path.display())))?;
        for cert in certs {
            let cert =
                cert.map_err(|e| cfg_err(format!("bad sslrootcert {}: {e}", path.display())))?;
            roots
                .add(cert)
                .map_err(|e| cfg_err(format!("bad sslrootcert {}: {e}", path.display())))?;
        }
        Ok(Arc::new(roots))
    };
    let verifier = |roots: Arc<rustls::RootCertStore>| {
        rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
            .build()
            .map_err(|e| cfg_err(format!("TLS setup: {e}")))
    };
    let mode = match (sslmode.unwrap_or("prefer"), rootcert) {
        // libpq: require with a root certificate verifies like verify-ca.
        ("require", Some(_)) => "verify-ca",
        (m, _) => m,
    };
    let make = tokio_postgres_rustls::MakeRustlsConnect::new;
    Ok(match mode {
        "disable" => (SslMode::Disable, None),
        "allow" | "prefer" => (SslMode::Prefer, Some(make(no_verify()?))),
        "require" => (SslMode::Require, Some(make(no_verify()?))),
        "verify-ca" => {
            let v = VerifyCa(verifier(roots()?)?);
            let c = builder()?
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(v))
                .with_no_client_auth();
            (SslMode::Require, Some(make(c)))
        }
        "verify-full" => {
            let c = builder()?
                .with_webpki_verifier(verifier(roots()?)?)
                .with_no_client_auth();
            (SslMode::Require, Some(make(c)))
        }
        other => {
            return Err(cfg_err(format!(
                "unknown sslmode {other:?} (disable, allow, prefer, require, verify-ca, verify-full)"
            )));
        }
    })
}

impl PgStore {
    /// Connects to the database at `url` and applies the migrations (unless
    /// `o.read_only`: then the schema must exist). `password` is used when
    /// the URL has none. Fails with [`HistoryError::Unavailable`] when the
    /// server cannot be reached.
    pub fn connect(url: &str, password: Option<String>, o: &OpenOptions) -> R<PgStore> {
        let store = PgStore::connect_lazy(url, password, o)?;
        store.call(|s| async move { s.client().await.map(|_| ()) }.boxed_local())?;
        Ok(store)
    }

    /// [`PgStore::connect`] without connecting yet: the first call connects
    /// (and migrates). For a store that must open while the database is down
    /// ([`crate::SpoolingStore`]).
    pub fn connect_lazy(url: &str, password: Option<String>, o: &OpenOptions) -> R<PgStore> {
        let location = mask_url(url);
        let parsed = PgUrl::parse(url);
        let schema = parsed
            .schema
            .clone()
            .unwrap_or_else(|| "crashdoc_history".to_string());
        let valid = !schema.is_empty()
            && schema.len() <= 63
            && schema
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !schema.starts_with(|c: char| c.is_ascii_digit());
        if !valid {
            return Err(HistoryError::Config {
                location,
                detail: format!(
                    "schema {schema:?} is not a plain name (letters, digits, _; up to 63)"
                ),
            });
        }
        let mut config: tokio_postgres::Config =
            parsed
                .driver_url
                .parse()
                .map_err(|e: tokio_postgres::Error| HistoryError::Config {
                    location: location.clone(),
                    detail: scrub(&e.to_string(), password.as_deref()),
                })?;
        if config.get_password().is_none()
            && let Some(p) = &password
        {
            config.password(p.as_bytes());
        }
        let url_password = config
            .get_password()
            .map(|p| String::from_utf8_lossy(p).into_owned());
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(o.connect_timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("crashdoc");
        }
        config.keepalives(true);
        config.keepalives_idle(Duration::from_secs(30));
        let (mode, tls) = tls_for(
            &location,
            parsed.sslmode.as_deref(),
            parsed.sslrootcert.as_deref(),
        )?;
        config.ssl_mode(mode);
        let session = Session {
            config,
            tls,
            client: None,
            s: format!("\"{schema}\""),
            schema,
            location: location.clone(),
            password: url_password,
            migrated: false,
            read_only: o.read_only,
            connect_timeout: o.connect_timeout,
        };
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Job>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| HistoryError::Internal {
                detail: format!("cannot start the database runtime: {e}"),
            })?;
        std::thread::Builder::new()
            .name("crashdoc-pg".to_string())
            .spawn(move || {
                let mut session = session;
                runtime.block_on(async move {
                    while let Some(job) = rx.recv().await {
                        job(&mut session).await;
                    }
                });
            })
            .map_err(|e| HistoryError::Internal {
                detail: format!("cannot start the database thread: {e}"),
            })?;
        Ok(PgStore {
            tx,
            location,
            read_only: o.read_only,
            cluster: o.cluster.clone(),
        })
    }

    /// This handle scoped to `cluster` (see [`Store`]).
    pub fn for_cluster(mut self, cluster: impl Into<String>) -> PgStore {
        self.cluster = Some(cluster.into());
        self
    }

    /// Runs `f` on the connection thread and waits for its answer.
    fn call<T, F>(&self, f: F) -> R<T>
    where
        T: Send + 'static,
        F: for<'a> FnOnce(&'a mut Session) -> LocalBoxFuture<'a, R<T>> + Send + 'static,
    {
        let (rtx, rrx) = std::sync::mpsc::sync_channel(1);
        let job: Job = Box::new(move |s: &mut Session| {
            async move {
                let out = match tokio::time::timeout(CALL_TIMEOUT, f(s)).await {
                    Ok(out) => out,
                    Err(_) => {
                        s.client = None;
                        Err(HistoryError::Unavailable {
                            location: s.location.clone(),
                            detail: format!(
                                "no answer within {} s; the connection was closed",
                                CALL_TIMEOUT.as_secs()
                            ),
                            spool: None,
                        })
                    }
                };
                if out.as_ref().is_err_and(HistoryError::is_unavailable) {
                    // Reconnect on the next call.
                    s.client = None;
                }
                let _ = rtx.send(out);
            }
            .boxed_local()
        });
        let gone = || HistoryError::Internal {
            detail: "the database thread has stopped".to_string(),
        };
        self.tx.send(job).map_err(|_| gone())?;
        rrx.recv().map_err(|_| gone())?
    }

    fn writable(&self) -> R<()> {
        if self.read_only {
            return Err(HistoryError::ReadOnly {
                location: self.location.clone(),
            });
        }
        Ok(())
    }

    /// Loads captures in bulk (COPY) into `captures` without the
    /// per-capture work of [`Store::insert_batch`]: for benchmarks that need
    /// a large history quickly. The keys must be new; blobs and key names
    /// are not stored; call [`PgStore::rebuild_derived`] afterwards.
    #[doc(hidden)]
    pub fn bulk_load(&self, cs: &[Capture]) -> R<u64> {
        self.writable()?;
        let rows = cs
            .iter()
            .map(|c| NewRow::of(c, &[]))
            .collect::<R<Vec<_>>>()?;
        self.call(move |s| async move { s.bulk_load(rows).await }.boxed_local())
    }

    /// Recomputes `rollup`, `first_seen` and `totals` from `captures`.
    #[doc(hidden)]
    pub fn rebuild_derived(&self) -> R<()> {
        self.writable()?;
        self.call(|s| async move { s.rebuild_derived().await }.boxed_local())
    }

    /// Checks that `rollup`, `first_seen` and `totals` agree with `captures`
    /// (for tests).
    #[doc(hidden)]
    pub fn check_consistency(&self) -> R<()> {
        self.call(|s| async move { s.check_derived().await }.boxed_local())
    }

    /// Runs SQL and returns the rows' first text column (for the benchmark's
    /// EXPLAIN output); `{s}` in `sql` is the schema.
    #[doc(hidden)]
    pub fn query_text(&self, sql: &str) -> R<Vec<String>> {
        let sql = sql.to_string();
        self.call(move |s| {
            async move {
                let rows = s.rows(&sql, &[]).await?;
                rows.iter().map(|r| s.col::<String>(r, 0)).collect()
            }
            .boxed_local()
        })
    }

    /// The EXPLAIN (ANALYZE, BUFFERS) of the SQL that [`Store::group`]
    /// (`by` set) or [`Store::new_causes`] (`since` set) or [`Store::list`]
    /// runs for `q`.
    #[doc(hidden)]
    pub fn explain(&self, q: &Query, by: Option<GroupBy>, since: Option<Since>) -> R<Vec<String>> {
        let q = q.clone();
        let cluster = self.cluster.clone();
        self.call(move |s| {
            async move {
                let mut sql = match (by, since) {
                    (Some(by), _) => s.group_sql(&q, by),
                    (None, Some(since)) => {
                        let t = match since {
                            Since::At(t) => Some(t),
                            Since::Revision(rev) => s.revision_start(&q, &rev).await?,
                        };
                        s.new_causes_sql(&q, t.unwrap_or(Timestamp::MIN))
                    }
                    (None, None) => s.list_sql(&q, false),
                };
                let _ = cluster;
                sql.text = format!("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) {}", sql.text);
                let rows = s.rows_of(&sql).await?;
                rows.iter().map(|r| s.col::<String>(r, 0)).collect()
            }
            .boxed_local()
        })
    }
}

/// `text` with the password replaced, should a driver ever echo it.
fn scrub(text: &str, password: Option<&str>) -> String {
    match password {
        Some(p) if !p.is_empty() => text.replace(p, "***"),
        _ => text.to_string(),
    }
}

/// A statement under construction: its text and parameters.
struct Sql {
    text: String,
    params: Vec<Box<dyn ToSql + Sync + Send>>,
}

impl Sql {
    fn new() -> Sql {
        Sql {
            text: String::new(),
            params: Vec::new(),
        }
    }
    fn p(&mut self, v: impl ToSql + Sync + Send + 'static) -> String {
        self.params.push(Box::new(v));
        format!("${}", self.params.len())
    }
    fn refs(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.params
            .iter()
            .map(|p| p.as_ref() as &(dyn ToSql + Sync))
            .collect()
    }
}

/// Whether `q` names something that only `captures` has (pod name,
/// container): then the fleet queries read `captures`, not `rollup`.
fn needs_captures(q: &Query) -> bool {
    q.pod.is_some() || q.container.is_some()
}

/// What a statement needs besides its connection: the schema for `{s}`
/// and what classifies a driver error. A transaction borrows the session's
/// client, so it carries a copy.
struct Scope {
    s: String,
    location: String,
    password: Option<String>,
}

impl Scope {
    fn err(&self, e: tokio_postgres::Error) -> HistoryError {
        classify(&self.location, self.password.as_deref(), e, false)
    }

    fn in_schema(&self, sql: &str) -> String {
        sql.replace("{s}", &self.s)
    }
}

/// A transaction whose statements name the schema `{s}` and whose errors
/// are classified; it derefs to the driver's for prepared statements.
struct Tx<'a> {
    tx: Transaction<'a>,
    scope: Scope,
}

impl<'a> std::ops::Deref for Tx<'a> {
    type Target = Transaction<'a>;
    fn deref(&self) -> &Transaction<'a> {
        &self.tx
    }
}

impl Tx<'_> {
    fn err(&self, e: tokio_postgres::Error) -> HistoryError {
        self.scope.err(e)
    }

    fn col<'r, T: FromSql<'r>>(&self, row: &'r Row, i: usize) -> R<T> {
        row.try_get(i).map_err(|e| self.err(e))
    }

    async fn prepare(&self, sql: &str) -> R<Statement> {
        let res = self.tx.prepare(&self.scope.in_schema(sql)).await;
        res.map_err(|e| self.err(e))
    }

    async fn rows(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> R<Vec<Row>> {
        let res = self.tx.query(&self.scope.in_schema(sql), params).await;
        res.map_err(|e| self.err(e))
    }

    async fn one(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> R<Row> {
        let res = self.tx.query_one(&self.scope.in_schema(sql), params).await;
        res.map_err(|e| self.err(e))
    }

    async fn exec(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> R<u64> {
        let res = self.tx.execute(&self.scope.in_schema(sql), params).await;
        res.map_err(|e| self.err(e))
    }

    async fn batch(&self, sql: &str) -> R<()> {
        let res = self.tx.batch_execute(&self.scope.in_schema(sql)).await;
        res.map_err(|e| self.err(e))
    }

    async fn commit(self) -> R<()> {
        let Tx { tx, scope } = self;
        tx.commit().await.map_err(|e| scope.err(e))
    }

    async fn rollback(self) -> R<()> {
        let Tx { tx, scope } = self;
        tx.rollback().await.map_err(|e| scope.err(e))
    }
}

impl Session {
    fn err(&self, e: tokio_postgres::Error) -> HistoryError {
        classify(&self.location, self.password.as_deref(), e, false)
    }

    fn col<'r, T: FromSql<'r>>(&self, row: &'r Row, i: usize) -> R<T> {
        row.try_get(i).map_err(|e| self.err(e))
    }

    /// `sql` with `{s}` replaced by the quoted schema.
    fn in_schema(&self, sql: &str) -> String {
        sql.replace("{s}", &self.s)
    }

    fn scope(&self) -> Scope {
        Scope {
            s: self.s.clone(),
            location: self.location.clone(),
            password: self.password.clone(),
        }
    }

    /// A transaction on the open connection.
    async fn begin(&mut self) -> R<Tx<'_>> {
        let scope = self.scope();
        match self.client().await?.transaction().await {
            Ok(tx) => Ok(Tx { tx, scope }),
            Err(e) => Err(scope.err(e)),
        }
    }

    /// The rows of `sql` (`{s}` is the schema) on the open connection.
    async fn rows(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> R<Vec<Row>> {
        let sql = self.in_schema(sql);
        let res = self.client().await?.query(&sql, params).await;
        res.map_err(|e| self.err(e))
    }

    /// The one row of `sql` (`{s}` is the schema).
    async fn one(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> R<Row> {
        let sql = self.in_schema(sql);
        let res = self.client().await?.query_one(&sql, params).await;
        res.map_err(|e| self.err(e))
    }

    /// The row of `sql` (`{s}` is the schema), if any.
    async fn opt(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> R<Option<Row>> {
        let sql = self.in_schema(sql);
        let res = self.client().await?.query_opt(&sql, params).await;
        res.map_err(|e| self.err(e))
    }

    /// Runs `sql` (`{s}` is the schema); the number of rows it changed.
    async fn exec(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> R<u64> {
        let sql = self.in_schema(sql);
        let res = self.client().await?.execute(&sql, params).await;
        res.map_err(|e| self.err(e))
    }

    /// The rows of a built statement.
    async fn rows_of(&mut self, sql: &Sql) -> R<Vec<Row>> {
        self.rows(&sql.text, &sql.refs()).await
    }

    /// The open connection, opened (and the schema migrated) when needed.
    async fn client(&mut self) -> R<&mut Client> {
        if self.client.as_ref().is_none_or(Client::is_closed) {
            self.client = None;
            let connected = match &self.tls {
                Some(tls) => tokio::time::timeout(
                    self.connect_timeout + Duration::from_secs(1),
                    self.config.connect(tls.clone()),
                )
                .await
                .map(|r| {
                    r.map(|(client, conn)| {
                        tokio::spawn(conn);
                        client
                    })
                }),
                None => tokio::time::timeout(
                    self.connect_timeout + Duration::from_secs(1),
                    self.config.connect(NoTls),
                )
                .await
                .map(|r| {
                    r.map(|(client, conn)| {
                        tokio::spawn(conn);
                        client
                    })
                }),
            };
            let client = match connected {
                Ok(Ok(c)) => c,
                Ok(Err(e)) => {
                    return Err(classify(&self.location, self.password.as_deref(), e, true));
                }
                Err(_) => {
                    return Err(HistoryError::Unavailable {
                        location: self.location.clone(),
                        detail: format!(
                            "no connection within {} s",
                            self.connect_timeout.as_secs_f32()
                        ),
                        spool: None,
                    });
                }
            };
            self.client = Some(client);
            if !self.migrated {
                self.migrate().await?;
                self.migrated = true;
            }
        }
        self.client.as_mut().ok_or_else(|| HistoryError::Internal {
            detail: "no connection after connecting".to_string(),
        })
    }

    /// Checks the schema's version; a writer creates or upgrades it.
    async fn migrate(&mut self) -> R<()> {
        let (schema, read_only, location) =
            (self.schema.clone(), self.read_only, self.location.clone());
        let scope = self.scope();
        let Some(client) = self.client.as_mut() else {
            return Ok(());
        };
        let tx = match client.transaction().await {
            Ok(tx) => Tx { tx, scope },
            Err(e) => return Err(scope.err(e)),
        };
        let version = "SELECT COALESCE(max(version), 0) FROM {s}.schema_version";
        let exists: bool = tx
            .one(
                "SELECT to_regclass($1) IS NOT NULL",
                &[&tx.scope.in_schema("{s}.schema_version")],
            )
            .await
            .and_then(|r| tx.col(&r, 0))?;
        let found: i32 = if exists {
            tx.one(version, &[]).await.and_then(|r| tx.col(&r, 0))?
        } else {
            0
        };
        let check = |found: i32| -> R<()> {
            if found > PG_SCHEMA_VERSION {
                return Err(HistoryError::SchemaVersion {
                    location: location.clone(),
                    found: u64::try_from(found).unwrap_or(0),
                    supported: u64::try_from(PG_SCHEMA_VERSION).unwrap_or(0),
                });
            }
            Ok(())
        };
        check(found)?;
        if read_only {
            if found < PG_SCHEMA_VERSION {
                return Err(HistoryError::Database {
                    location: location.clone(),
                    detail: if found == 0 {
                        format!(
                            "there is no crashdoc history in schema {schema} (a `crashdoc watch` writing there creates it)"
                        )
                    } else {
                        format!(
                            "schema {schema} has version {found}: a writer upgrades it to {PG_SCHEMA_VERSION}"
                        )
                    },
                });
            }
            return tx.rollback().await;
        }
        if found == PG_SCHEMA_VERSION {
            return tx.rollback().await;
        }
        // Serialize the watchers that start together: the lock is held until
        // this transaction ends; then read the version again.
        tx.exec(
            "SELECT pg_advisory_xact_lock(hashtext($1))",
            &[&format!("crashdoc_history migrate {schema}")],
        )
        .await?;
        tx.batch(
            "CREATE SCHEMA IF NOT EXISTS {s}; CREATE TABLE IF NOT EXISTS {s}.schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
        )
        .await?;
        let found: i32 = tx.one(version, &[]).await.and_then(|r| tx.col(&r, 0))?;
        check(found)?;
        for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > found) {
            tx.batch(sql).await?;
            tx.exec(
                "INSERT INTO {s}.schema_version (version) VALUES ($1)",
                &[version],
            )
            .await?;
        }
        tx.commit().await
    }

    async fn insert(&mut self, rows: &[NewRow]) -> R<Vec<Inserted>> {
        // Lock keys in one order in every transaction: no deadlocks between
        // writers whose batches overlap.
        let mut order: Vec<usize> = (0..rows.len()).collect();
        order.sort_by(|&a, &b| {
            let (x, y) = (&rows[a], &rows[b]);
            (&x.cluster, &x.pod_uid, &x.container, x.restart_count).cmp(&(
                &y.cluster,
                &y.pod_uid,
                &y.container,
                y.restart_count,
            ))
        });
        let tx = self.begin().await?;
        let err = |e| tx.err(e);
        let ins = tx
            .prepare(
                "INSERT INTO {s}.captures (cluster, pod_uid, container, restart_count, namespace, pod, owner_kind, owner, workload, node, revision, cause, confidence, reason, exit_code, observed_at, record, bundle_len, stored_bytes) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17::text::jsonb, $18, $19) \
                 ON CONFLICT ON CONSTRAINT captures_key DO NOTHING RETURNING id",
            )
            .await?;
        let sel = tx
            .prepare(
                "SELECT id FROM {s}.captures WHERE cluster = $1 AND pod_uid = $2 AND container = $3 AND restart_count = $4",
            )
            .await?;
        let mut out = vec![Inserted::Duplicate(0); rows.len()];
        let mut new = Vec::new();
        for &i in &order {
            let r = &rows[i];
            let got = tx
                .query_opt(
                    &ins,
                    &[
                        &r.cluster,
                        &r.pod_uid,
                        &r.container,
                        &r.restart_count,
                        &r.namespace,
                        &r.pod,
                        &r.owner_kind,
                        &r.owner,
                        &r.workload,
                        &r.node,
                        &r.revision,
                        &r.cause,
                        &r.confidence,
                        &r.reason,
                        &r.exit_code,
                        &Ts(r.observed_at),
                        &r.record,
                        &r.bundle_len,
                        &r.stored,
                    ],
                )
                .await
                .map_err(err)?;
            out[i] = match got {
                Some(row) => {
                    let id: i64 = tx.col(&row, 0)?;
                    new.push((i, id));
                    Inserted::New(u64_of(id))
                }
                None => {
                    let row = tx
                        .query_opt(
                            &sel,
                            &[&r.cluster, &r.pod_uid, &r.container, &r.restart_count],
                        )
                        .await
                        .map_err(err)?;
                    match row {
                        Some(row) => Inserted::Duplicate(u64_of(tx.col(&row, 0)?)),
                        None => {
                            return Err(HistoryError::Database {
                                location: tx.scope.location.clone(),
                                detail: "a conflicting capture vanished during the insert (pruned meanwhile); retry".to_string(),
                            });
                        }
                    }
                }
            };
        }
        if new.is_empty() {
            tx.rollback().await?;
            return Ok(out);
        }
        let blob = tx
            .prepare("INSERT INTO {s}.blobs (capture_id, part, data) VALUES ($1, $2, $3)")
            .await?;
        let keys = tx
            .prepare("INSERT INTO {s}.config_keys (capture_id, keys) VALUES ($1, $2::text::jsonb)")
            .await?;
        let mut agg = Aggregates::default();
        for &(i, id) in &new {
            let r = &rows[i];
            if let Some(b) = &r.bundle {
                tx.execute(&blob, &[&id, &0i16, b]).await.map_err(err)?;
            }
            if let Some(d) = &r.diagnosis {
                tx.execute(&blob, &[&id, &1i16, &d.as_bytes()])
                    .await
                    .map_err(err)?;
            }
            if let Some(k) = &r.keys {
                tx.execute(&keys, &[&id, k]).await.map_err(err)?;
            }
            agg.add(r);
        }
        agg.upsert(&tx).await?;
        tx.commit().await?;
        Ok(out)
    }

    async fn bulk_load(&mut self, rows: Vec<NewRow>) -> R<u64> {
        use futures::SinkExt;
        let scope = self.scope();
        let err = |e| scope.err(e);
        let client = self.client().await?;
        fn field(out: &mut String, v: Option<&str>) {
            match v {
                None => out.push_str("\\N"),
                Some(v) => {
                    for ch in v.chars() {
                        match ch {
                            '\\' => out.push_str("\\\\"),
                            '\n' => out.push_str("\\n"),
                            '\r' => out.push_str("\\r"),
                            '\t' => out.push_str("\\t"),
                            c => out.push(c),
                        }
                    }
                }
            }
        }
        let mut n = 0u64;
        for chunk in rows.chunks(20_000) {
            let mut buf = String::with_capacity(chunk.len() * 700);
            for r in chunk {
                let t = r.observed_at.to_string();
                let vals: [Option<String>; 19] = [
                    Some(r.cluster.clone()),
                    Some(r.pod_uid.clone()),
                    Some(r.container.clone()),
                    Some(r.restart_count.to_string()),
                    Some(r.namespace.clone()),
                    Some(r.pod.clone()),
                    Some(r.owner_kind.clone()),
                    Some(r.owner.clone()),
                    Some(r.workload.clone()),
                    Some(r.node.clone()),
                    r.revision.clone(),
                    Some(r.cause.clone()),
                    r.confidence.clone(),
                    r.reason.clone(),
                    r.exit_code.map(|e| e.to_string()),
                    Some(t),
                    Some(r.record.clone()),
                    Some(r.bundle_len.to_string()),
                    Some(r.stored.to_string()),
                ];
                for (i, v) in vals.iter().enumerate() {
                    if i > 0 {
                        buf.push('\t');
                    }
                    field(&mut buf, v.as_deref());
                }
                buf.push('\n');
            }
            let sink = client
                .copy_in(&scope.in_schema(
                    "COPY {s}.captures (cluster, pod_uid, container, restart_count, namespace, pod, owner_kind, owner, workload, node, revision, cause, confidence, reason, exit_code, observed_at, record, bundle_len, stored_bytes) FROM STDIN",
                ))
                .await
                .map_err(err)?;
            let mut sink = Box::pin(sink);
            sink.send(bytes::Bytes::from(buf)).await.map_err(err)?;
            n += sink.as_mut().finish().await.map_err(err)?;
        }
        Ok(n)
    }

    /// The SELECTs that compute the derived tables from `captures`.
    fn derived_sql(&self) -> [(&'static str, String); 3] {
        let s = &self.s;
        [
            (
                "rollup",
                format!(
                    "SELECT date_trunc('hour', observed_at, 'UTC') AS bucket, cluster, namespace, owner_kind, owner, workload, node, cause, pod_uid, count(*)::bigint AS captures, min(observed_at) AS first_at, max(observed_at) AS last_at \
                     FROM {s}.captures GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9"
                ),
            ),
            (
                "first_seen",
                format!(
                    "SELECT DISTINCT ON (cluster, namespace, workload, cause) cluster, namespace, workload, cause, \
                     CASE WHEN owner_kind <> '' AND owner <> '' THEN owner_kind ELSE 'Pod' END AS owner_kind, \
                     CASE WHEN owner_kind <> '' AND owner <> '' THEN owner ELSE pod END AS owner, observed_at AS first_at \
                     FROM {s}.captures WHERE cause <> '' ORDER BY cluster, namespace, workload, cause, observed_at"
                ),
            ),
            (
                "totals",
                format!(
                    "SELECT cluster, count(*)::bigint AS captures, sum(bundle_len)::bigint AS bundle_bytes, sum(stored_bytes)::bigint AS stored_bytes FROM {s}.captures GROUP BY cluster"
                ),
            ),
        ]
    }

    async fn rebuild_derived(&mut self) -> R<()> {
        let sqls = self.derived_sql();
        let tx = self.begin().await?;
        for (table, select) in &sqls {
            tx.batch(&format!(
                "DELETE FROM {{s}}.{table}; INSERT INTO {{s}}.{table} {select}"
            ))
            .await?;
        }
        tx.batch("ANALYZE {s}.captures; ANALYZE {s}.rollup; ANALYZE {s}.first_seen")
            .await?;
        tx.commit().await
    }

    async fn check_derived(&mut self) -> R<()> {
        let sqls = self.derived_sql();
        for (table, select) in &sqls {
            let cols = match *table {
                "rollup" => {
                    "bucket, cluster, namespace, owner_kind, owner, workload, node, cause, pod_uid, captures, first_at, last_at"
                }
                "first_seen" => "cluster, namespace, workload, cause, owner_kind, owner, first_at",
                _ => "cluster, captures, bundle_bytes, stored_bytes",
            };
            let sql = format!(
                "SELECT count(*) FROM ((SELECT {cols} FROM {{s}}.{table} {zero} EXCEPT SELECT {cols} FROM ({select}) a) \
                 UNION ALL (SELECT {cols} FROM ({select}) b EXCEPT SELECT {cols} FROM {{s}}.{table})) d",
                zero = if *table == "totals" {
                    "WHERE captures > 0"
                } else {
                    ""
                }
            );
            let row = self.one(&sql, &[]).await?;
            let n: i64 = self.col(&row, 0)?;
            if n != 0 {
                return Err(HistoryError::Database {
                    location: self.location.clone(),
                    detail: format!("{table}: {n} rows disagree with captures"),
                });
            }
        }
        Ok(())
    }

    /// `AND`ed conditions of `q`'s field filters on a table with the
    /// captures' column names; `captures` adds pod and container.
    fn filters(sql: &mut Sql, q: &Query, captures: bool) -> String {
        let mut conds = vec!["TRUE".to_string()];
        let mut eq = |col: &str, v: &Option<String>, sql: &mut Sql| {
            if let Some(v) = v {
                let p = sql.p(v.clone());
                conds.push(format!("{col} = {p}"));
            }
        };
        eq("cluster", &q.cluster, sql);
        eq("namespace", &q.namespace, sql);
        eq("pod_uid", &q.pod_uid, sql);
        eq("owner_kind", &q.owner_kind, sql);
        eq("owner", &q.owner, sql);
        if captures {
            eq("pod", &q.pod, sql);
            eq("container", &q.container, sql);
        }
        conds.join(" AND ")
    }

    fn list_sql(&self, q: &Query, with_diagnosis: bool) -> Sql {
        let s = &self.s;
        let mut sql = Sql::new();
        let mut w = Session::filters(&mut sql, q, true);
        if let Some(t) = q.since {
            w += &format!(" AND observed_at >= {}", sql.p(Ts(t)));
        }
        if let Some(t) = q.until {
            w += &format!(" AND observed_at < {}", sql.p(Ts(t)));
        }
        let diag = if with_diagnosis {
            format!(", (SELECT data FROM {s}.blobs b WHERE b.capture_id = c.id AND b.part = 1)")
        } else {
            ", NULL::bytea".to_string()
        };
        let limit = match q.limit {
            Some(n) => format!(" LIMIT {}", sql.p(i64::try_from(n).unwrap_or(i64::MAX))),
            None => String::new(),
        };
        sql.text = format!(
            "SELECT c.id, c.record::text, c.bundle_len{diag} FROM {s}.captures c WHERE {w} ORDER BY c.observed_at DESC, c.id DESC{limit}"
        );
        sql
    }

    /// The captures matching `q` (its time window included) as rows of
    /// (the group-by columns, pod_uid, n, first_at, last_at): from `rollup`
    /// for whole hours, from `captures` for the rest.
    fn matching_sql(&self, sql: &mut Sql, q: &Query) -> String {
        let s = &self.s;
        let cols = "cluster, namespace, owner_kind, owner, workload, node, cause, pod_uid";
        let raw = |sql: &mut Sql, from: Option<Timestamp>, until: Option<Timestamp>| {
            let mut w = Session::filters(sql, q, true);
            if let Some(t) = from {
                w += &format!(" AND observed_at >= {}", sql.p(Ts(t)));
            }
            if let Some(t) = until {
                w += &format!(" AND observed_at < {}", sql.p(Ts(t)));
            }
            format!(
                "SELECT {cols}, 1::bigint AS n, observed_at AS first_at, observed_at AS last_at FROM {s}.captures WHERE {w}"
            )
        };
        if needs_captures(q) {
            return raw(sql, q.since, q.until);
        }
        // Whole hours [a, b) from the rollup; the partial hours from captures.
        let a = q.since.map(hour_ceil);
        let b = q.until.map(hour_floor);
        if let (Some(a), Some(b)) = (a, b)
            && a >= b
        {
            return raw(sql, q.since, q.until);
        }
        let mut parts = Vec::new();
        let mut w = Session::filters(sql, q, false);
        if let Some(a) = a {
            w += &format!(" AND bucket >= {}", sql.p(Ts(a)));
        }
        if let Some(b) = b {
            w += &format!(" AND bucket < {}", sql.p(Ts(b)));
        }
        parts.push(format!(
            "SELECT {cols}, captures AS n, first_at, last_at FROM {s}.rollup WHERE {w}"
        ));
        if let (Some(since), Some(a)) = (q.since, a)
            && since < a
        {
            parts.push(raw(sql, Some(since), Some(a)));
        }
        if let (Some(until), Some(b)) = (q.until, b)
            && b < until
        {
            parts.push(raw(sql, Some(b), Some(until)));
        }
        parts.join(" UNION ALL ")
    }

    fn group_sql(&self, q: &Query, by: GroupBy) -> Sql {
        let mut sql = Sql::new();
        let m = self.matching_sql(&mut sql, q);
        let k = match by {
            GroupBy::Cluster => "cluster",
            GroupBy::Namespace => "namespace",
            GroupBy::Workload => "workload",
            GroupBy::Cause => "cause",
            GroupBy::Node => "node",
        };
        sql.text = format!(
            "WITH p AS MATERIALIZED (SELECT {k} COLLATE \"C\" AS gk, cause COLLATE \"C\" AS gc, pod_uid, sum(n) AS n, min(first_at) AS first_at, max(last_at) AS last_at \
             FROM ({m}) m GROUP BY 1, 2, 3) \
             SELECT gk, gc, sum(n)::bigint, count(DISTINCT pod_uid), min(first_at), max(last_at), GROUPING(gc) \
             FROM p GROUP BY GROUPING SETS ((gk, gc), (gk))"
        );
        sql
    }

    async fn group(&mut self, q: Query, by: GroupBy) -> R<Vec<Group>> {
        let rows = self.rows_of(&self.group_sql(&q, by)).await?;
        let mut groups: BTreeMap<String, Group> = BTreeMap::new();
        for row in &rows {
            let key: String = self.col(row, 0)?;
            let cause: Option<String> = self.col(row, 1)?;
            let n: i64 = self.col(row, 2)?;
            let pods: i64 = self.col(row, 3)?;
            let first: Ts = self.col(row, 4)?;
            let last: Ts = self.col(row, 5)?;
            let total: i32 = self.col(row, 6)?;
            let g = groups.entry(key.clone()).or_insert_with(|| Group {
                key,
                captures: 0,
                pods: 0,
                first: first.0,
                last: last.0,
                causes: Vec::new(),
            });
            if total == 1 {
                g.captures = u64_of(n);
                g.pods = u64_of(pods);
                g.first = first.0;
                g.last = last.0;
            } else {
                g.causes.push((cause.unwrap_or_default(), u64_of(n)));
            }
        }
        let mut out: Vec<Group> = groups
            .into_values()
            .map(|mut g| {
                g.causes
                    .sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
                g
            })
            .collect();
        out.sort_by(|x, y| y.captures.cmp(&x.captures).then_with(|| x.key.cmp(&y.key)));
        Ok(out)
    }

    /// The first capture of a pod of revision `rev` among those matching `q`.
    async fn revision_start(&mut self, q: &Query, rev: &str) -> R<Option<Timestamp>> {
        let mut sql = Sql::new();
        let mut w = Session::filters(&mut sql, q, true);
        w += &format!(" AND revision = {}", sql.p(rev.to_string()));
        if let Some(t) = q.since {
            w += &format!(" AND observed_at >= {}", sql.p(Ts(t)));
        }
        if let Some(t) = q.until {
            w += &format!(" AND observed_at < {}", sql.p(Ts(t)));
        }
        let text = format!("SELECT min(observed_at) FROM {{s}}.captures WHERE {w}");
        let row = self.one(&text, &sql.refs()).await?;
        Ok(self.col::<Option<Ts>>(&row, 0)?.map(|t| t.0))
    }

    fn new_causes_sql(&self, q: &Query, since: Timestamp) -> Sql {
        let s = &self.s;
        let mut sql = Sql::new();
        let mut fw = vec![format!("f.first_at >= {}", sql.p(Ts(since)))];
        for (col, v) in [("cluster", &q.cluster), ("namespace", &q.namespace)] {
            if let Some(v) = v {
                fw.push(format!("f.{col} = {}", sql.p(v.clone())));
            }
        }
        let m = self.matching_sql(&mut sql, q);
        sql.text = format!(
            "SELECT f.cluster, f.namespace, f.owner_kind, f.owner, f.cause, f.first_at, sum(r.n)::bigint \
             FROM {s}.first_seen f JOIN ({m}) r ON r.cluster = f.cluster AND r.namespace = f.namespace AND r.workload = f.workload AND r.cause = f.cause \
             WHERE {} GROUP BY f.cluster, f.namespace, f.workload, f.cause, f.owner_kind, f.owner, f.first_at",
            fw.join(" AND ")
        );
        sql
    }

    async fn new_causes(&mut self, q: Query, since: Since) -> R<Vec<NewCause>> {
        let since = match since {
            Since::At(t) => t,
            Since::Revision(rev) => match self.revision_start(&q, &rev).await? {
                Some(t) => t,
                None => return Ok(Vec::new()),
            },
        };
        let rows = self.rows_of(&self.new_causes_sql(&q, since)).await?;
        let mut out = rows
            .iter()
            .map(|row| {
                Ok(NewCause {
                    cluster: self.col(row, 0)?,
                    namespace: self.col(row, 1)?,
                    owner_kind: Some(self.col(row, 2)?),
                    owner: Some(self.col(row, 3)?),
                    cause: self.col(row, 4)?,
                    first_seen: self.col::<Ts>(row, 5)?.0,
                    captures: u64_of(self.col(row, 6)?),
                })
            })
            .collect::<R<Vec<_>>>()?;
        crate::fleet::sort_new_causes(&mut out);
        Ok(out)
    }

    fn record(&self, id: i64, json: &str, bundle_len: i64) -> R<Record> {
        let capture: Capture =
            serde_json::from_str(json).map_err(|source| HistoryError::Encoding {
                id: Some(u64_of(id)),
                source,
            })?;
        Ok(Record {
            id: u64_of(id),
            capture,
            bundle_len: u64_of(bundle_len),
        })
    }

    fn text_of(&self, id: i64, bytes: Option<Vec<u8>>) -> R<Option<String>> {
        bytes
            .map(|b| {
                String::from_utf8(b).map_err(|_| HistoryError::Database {
                    location: self.location.clone(),
                    detail: format!("capture {id}: diagnosis is not UTF-8"),
                })
            })
            .transpose()
    }

    async fn list(&mut self, q: Query) -> R<Vec<Record>> {
        if q.limit == Some(0) {
            return Ok(Vec::new());
        }
        let rows = self.rows_of(&self.list_sql(&q, q.with_diagnosis)).await?;
        rows.iter()
            .map(|row| {
                let id: i64 = self.col(row, 0)?;
                let mut r = self.record(id, &self.col::<String>(row, 1)?, self.col(row, 2)?)?;
                r.capture.diagnosis_json = self.text_of(id, self.col(row, 3)?)?;
                Ok(r)
            })
            .collect()
    }

    async fn get(&mut self, id: u64) -> R<Option<Record>> {
        let id = i64_of(id);
        let row = self
            .opt(
                "SELECT record::text, bundle_len FROM {s}.captures WHERE id = $1",
                &[&id],
            )
            .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let blobs = self
            .rows(
                "SELECT part, data FROM {s}.blobs WHERE capture_id = $1",
                &[&id],
            )
            .await?;
        let mut r = self.record(id, &self.col::<String>(&row, 0)?, self.col(&row, 1)?)?;
        for b in &blobs {
            let part: i16 = self.col(b, 0)?;
            let data: Vec<u8> = self.col(b, 1)?;
            match part {
                0 => r.capture.bundle = Some(data),
                _ => r.capture.diagnosis_json = self.text_of(id, Some(data))?,
            }
        }
        Ok(Some(r))
    }
}

/// Turns a driver error into a [`HistoryError`] with the masked location
/// and no credential: refused, timed out or lost connections are
/// [`HistoryError::Unavailable`]; a refused login is [`HistoryError::Auth`].
fn classify(
    location: &str,
    password: Option<&str>,
    e: tokio_postgres::Error,
    connecting: bool,
) -> HistoryError {
    let location = location.to_string();
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        let detail = scrub(&format!("{} ({code})", db.message()), password);
        return match code {
            "28P01" | "28000" => HistoryError::Auth { location, detail },
            c if c.starts_with("08") || c == "57P01" || c == "57P02" || c == "57P03" => {
                HistoryError::Unavailable {
                    location,
                    detail,
                    spool: None,
                }
            }
            _ => HistoryError::Database { location, detail },
        };
    }
    // The whole chain, for a message that says why (never the password).
    let mut detail = e.to_string();
    let mut src = std::error::Error::source(&e);
    let mut io = false;
    let mut tls = false;
    while let Some(s) = src {
        let t = s.to_string();
        if !detail.contains(&t) {
            detail.push_str(": ");
            detail.push_str(&t);
        }
        io |= s.is::<std::io::Error>();
        tls |= s.is::<rustls::Error>()
            || s.downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .is_some_and(|inner| inner.is::<rustls::Error>());
        src = s.source();
    }
    let detail = scrub(&detail, password);
    if tls {
        return HistoryError::Database {
            location,
            detail: format!("TLS: {detail}"),
        };
    }
    if e.is_closed() || io || connecting || detail.contains("timeout") {
        return HistoryError::Unavailable {
            location,
            detail,
            spool: None,
        };
    }
    HistoryError::Database { location, detail }
}

impl Store for PgStore {
    fn location(&self) -> String {
        self.location.clone()
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn insert_batch_with_keys(&self, cs: &[(&Capture, &[ConfigKeys])]) -> R<Vec<Inserted>> {
        self.writable()?;
        if cs.is_empty() {
            return Ok(Vec::new());
        }
        let rows = cs
            .iter()
            .map(|(c, k)| NewRow::of(c, k))
            .collect::<R<Vec<_>>>()?;
        self.call(move |s| {
            async move {
                // A deadlock or serialization failure between writers is
                // retried (the unique key makes a retry safe).
                let mut attempt = 0;
                loop {
                    match s.insert(&rows).await {
                        Err(HistoryError::Database { detail, .. })
                            if attempt < 3
                                && (detail.contains("(40P01)")
                                    || detail.contains("(40001)")
                                    || detail.contains("vanished")) =>
                        {
                            attempt += 1;
                        }
                        other => return other,
                    }
                }
            }
            .boxed_local()
        })
    }

    fn config_keys(&self, ids: &[u64]) -> R<HashMap<u64, Vec<ConfigKeys>>> {
        let ids: Vec<i64> = ids.iter().map(|&i| i64_of(i)).collect();
        self.call(move |s| {
            async move {
                let rows = s
                    .rows(
                        "SELECT capture_id, keys::text FROM {s}.config_keys WHERE capture_id = ANY($1)",
                        &[&ids],
                    )
                    .await?;
                rows.iter()
                    .map(|row| {
                        let id: i64 = s.col(row, 0)?;
                        let json: String = s.col(row, 1)?;
                        let keys: Vec<ConfigKeys> =
                            serde_json::from_str(&json).map_err(|source| {
                                HistoryError::Encoding {
                                    id: Some(u64_of(id)),
                                    source,
                                }
                            })?;
                        Ok((u64_of(id), keys))
                    })
                    .collect()
            }
            .boxed_local()
        })
    }

    fn contains(&self, k: &TerminationKey) -> R<bool> {
        let k = k.clone();
        self.call(move |s| {
            async move {
                let row = s
                    .opt(
                        "SELECT 1 FROM {s}.captures WHERE cluster = $1 AND pod_uid = $2 AND container = $3 AND restart_count = $4",
                        &[&k.cluster, &k.pod_uid, &k.container, &k.restart_count],
                    )
                    .await?;
                Ok(row.is_some())
            }
            .boxed_local()
        })
    }

    fn seen_keys(&self) -> R<HashSet<TerminationKey>> {
        let cluster = self.cluster.clone();
        self.call(move |s| {
            async move {
                let all = "SELECT cluster, pod_uid, container, restart_count FROM {s}.captures";
                let rows = match &cluster {
                    Some(cl) => s.rows(&format!("{all} WHERE cluster = $1"), &[cl]).await?,
                    None => s.rows(all, &[]).await?,
                };
                rows.iter()
                    .map(|row| {
                        Ok(TerminationKey::new(
                            s.col::<String>(row, 1)?,
                            s.col::<String>(row, 2)?,
                            s.col::<i32>(row, 3)?,
                        )
                        .in_cluster(s.col::<String>(row, 0)?))
                    })
                    .collect()
            }
            .boxed_local()
        })
    }

    fn list(&self, q: &Query) -> R<Vec<Record>> {
        let q = q.clone();
        self.call(move |s| s.list(q).boxed_local())
    }

    fn get(&self, id: u64) -> R<Option<Record>> {
        self.call(move |s| s.get(id).boxed_local())
    }

    fn bundle(&self, id: u64) -> R<Option<Vec<u8>>> {
        self.call(move |s| {
            async move {
                let row = s
                    .opt(
                        "SELECT data FROM {s}.blobs WHERE capture_id = $1 AND part = 0",
                        &[&i64_of(id)],
                    )
                    .await?;
                row.map(|r| s.col::<Vec<u8>>(&r, 0)).transpose()
            }
            .boxed_local()
        })
    }

    fn prune(&self, r: &Retention, now: Timestamp) -> R<PruneStats> {
        self.writable()?;
        let r = r.clone();
        let cluster = self.cluster.clone();
        self.call(move |s| s.prune(r, now, cluster).boxed_local())
    }

    fn set_checkpoint(&self, at: Timestamp) -> R<()> {
        self.writable()?;
        let cluster = self.cluster.clone().unwrap_or_default();
        // Milliseconds, as the file keeps it.
        let at = Timestamp::from_millisecond(at.as_millisecond()).unwrap_or(at);
        self.call(move |s| {
            async move {
                s.exec(
                    "INSERT INTO {s}.checkpoints (cluster, watched_until) VALUES ($1, $2) ON CONFLICT (cluster) DO UPDATE SET watched_until = EXCLUDED.watched_until",
                    &[&cluster, &Ts(at)],
                )
                .await
                .map(|_| ())
            }
            .boxed_local()
        })
    }

    fn checkpoint(&self) -> R<Option<Timestamp>> {
        let cluster = self.cluster.clone().unwrap_or_default();
        self.call(move |s| {
            async move {
                let row = s
                    .opt(
                        "SELECT watched_until FROM {s}.checkpoints WHERE cluster = $1",
                        &[&cluster],
                    )
                    .await?;
                row.map(|r| s.col::<Ts>(&r, 0).map(|t| t.0)).transpose()
            }
            .boxed_local()
        })
    }

    fn update_baselines(
        &self,
        set: &[(String, String, i32)],
        forget: &HashSet<String>,
        keep: Option<&HashSet<String>>,
    ) -> R<()> {
        self.writable()?;
        let cluster = self.cluster.clone().unwrap_or_default();
        let mut max: BTreeMap<(String, String), i32> = BTreeMap::new();
        for (uid, container, n) in set {
            let e = max.entry((uid.clone(), container.clone())).or_insert(*n);
            *e = (*e).max(*n);
        }
        let (uids, containers, counts): (Vec<String>, Vec<String>, Vec<i32>) = {
            let mut u = Vec::new();
            let mut c = Vec::new();
            let mut n = Vec::new();
            for ((a, b), x) in max {
                u.push(a);
                c.push(b);
                n.push(x);
            }
            (u, c, n)
        };
        let forget: Vec<String> = forget.iter().cloned().collect();
        let keep: Option<Vec<String>> = keep.map(|k| k.iter().cloned().collect());
        self.call(move |s| {
            async move {
                let tx = s.begin().await?;
                if !forget.is_empty() {
                    tx.exec(
                        "DELETE FROM {s}.baselines WHERE cluster = $1 AND pod_uid = ANY($2)",
                        &[&cluster, &forget],
                    )
                    .await?;
                }
                if let Some(keep) = &keep {
                    tx.exec(
                        "DELETE FROM {s}.baselines WHERE cluster = $1 AND NOT (pod_uid = ANY($2))",
                        &[&cluster, keep],
                    )
                    .await?;
                }
                if !uids.is_empty() {
                    tx.exec(
                        "INSERT INTO {s}.baselines AS b (cluster, pod_uid, container, restart_count) \
                         SELECT $1, u, c, n FROM unnest($2::text[], $3::text[], $4::int[]) AS x(u, c, n) \
                         ON CONFLICT (cluster, pod_uid, container) DO UPDATE SET restart_count = GREATEST(b.restart_count, EXCLUDED.restart_count)",
                        &[&cluster, &uids, &containers, &counts],
                    )
                    .await?;
                }
                tx.commit().await
            }
            .boxed_local()
        })
    }

    fn baselines(&self) -> R<HashMap<(String, String), i32>> {
        let cluster = self.cluster.clone().unwrap_or_default();
        self.call(move |s| {
            async move {
                let rows = s
                    .rows(
                        "SELECT pod_uid, container, restart_count FROM {s}.baselines WHERE cluster = $1",
                        &[&cluster],
                    )
                    .await?;
                rows.iter()
                    .map(|row| Ok(((s.col(row, 0)?, s.col(row, 1)?), s.col(row, 2)?)))
                    .collect()
            }
            .boxed_local()
        })
    }

    fn stats(&self) -> R<Stats> {
        let cluster = self.cluster.clone();
        self.call(move |s| {
            async move {
                let schema = s.schema.clone();
                let (w, params): (&str, Vec<&(dyn ToSql + Sync)>) = match &cluster {
                    Some(cl) => ("WHERE cluster = $1", vec![cl]),
                    None => ("", vec![]),
                };
                let tot = s
                    .one(
                        &format!(
                            "SELECT COALESCE(sum(captures), 0)::bigint, COALESCE(sum(bundle_bytes), 0)::bigint, COALESCE(sum(stored_bytes), 0)::bigint FROM {{s}}.totals {w}"
                        ),
                        &params,
                    )
                    .await?;
                let span = s
                    .one(
                        &format!(
                            "SELECT (SELECT observed_at FROM {{s}}.captures {w} ORDER BY observed_at LIMIT 1), (SELECT observed_at FROM {{s}}.captures {w} ORDER BY observed_at DESC LIMIT 1)"
                        ),
                        &params,
                    )
                    .await?;
                let size = s
                    .one(
                        "SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'",
                        &[&schema],
                    )
                    .await?;
                Ok(Stats {
                    captures: u64_of(s.col(&tot, 0)?),
                    bundle_bytes: u64_of(s.col(&tot, 1)?),
                    stored_bytes: u64_of(s.col(&tot, 2)?),
                    file_bytes: Some(u64_of(s.col(&size, 0)?)),
                    oldest: s.col::<Option<Ts>>(&span, 0)?.map(|t| t.0),
                    newest: s.col::<Option<Ts>>(&span, 1)?.map(|t| t.0),
                })
            }
            .boxed_local()
        })
    }

    fn group(&self, q: &Query, by: GroupBy) -> R<Vec<Group>> {
        let q = q.clone();
        self.call(move |s| s.group(q, by).boxed_local())
    }

    fn new_causes(&self, q: &Query, since: Since) -> R<Vec<NewCause>> {
        let q = q.clone();
        self.call(move |s| s.new_causes(q, since).boxed_local())
    }
}

impl Session {
    async fn prune(
        &mut self,
        r: Retention,
        now: Timestamp,
        cluster: Option<String>,
    ) -> R<PruneStats> {
        let cutoff = r
            .max_age
            .map(|age| now.as_nanosecond() - age.as_nanos().max(0))
            .map(|ns| Timestamp::from_nanosecond(ns).unwrap_or(Timestamp::MIN));
        let tx = self.begin().await?;
        let (cw, cp): (&str, Vec<&(dyn ToSql + Sync)>) = match &cluster {
            Some(cl) => ("cluster = $1 AND", vec![cl]),
            None => ("", vec![]),
        };
        // Lock the totals rows: two prunes of one cluster run one after the other.
        let tot = tx
            .one(
                &format!(
                    "SELECT COALESCE(sum(captures), 0)::bigint, COALESCE(sum(stored_bytes), 0)::bigint FROM (SELECT * FROM {{s}}.totals WHERE {cw} TRUE ORDER BY cluster FOR UPDATE) t"
                ),
                &cp,
            )
            .await?;
        let mut remaining: i64 = tx.col(&tot, 0)?;
        let mut stored: i64 = tx.col(&tot, 1)?;
        let mut victims: Vec<i64> = Vec::new();
        let mut after: Option<(Ts, i64)> = None;
        let p = cp.len();
        'scan: loop {
            let rows = match &after {
                None => {
                    tx.rows(
                        &format!(
                            "SELECT id, observed_at, stored_bytes FROM {{s}}.captures WHERE {cw} TRUE ORDER BY observed_at, id LIMIT 1000"
                        ),
                        &cp,
                    )
                    .await?
                }
                Some((t, id)) => {
                    let mut params = cp.clone();
                    params.push(t);
                    params.push(id);
                    tx.rows(
                        &format!(
                            "SELECT id, observed_at, stored_bytes FROM {{s}}.captures WHERE {cw} (observed_at, id) > (${}, ${}) ORDER BY observed_at, id LIMIT 1000",
                            p + 1,
                            p + 2
                        ),
                        &params,
                    )
                    .await?
                }
            };
            if rows.is_empty() {
                break;
            }
            for row in &rows {
                let id: i64 = tx.col(row, 0)?;
                let at: Ts = tx.col(row, 1)?;
                let bytes: i64 = tx.col(row, 2)?;
                let too_old = cutoff.is_some_and(|c| at.0 < c);
                let too_many = r.max_captures.is_some_and(|m| remaining > i64_of(m));
                let too_big = r.max_bytes.is_some_and(|m| stored > i64_of(m));
                if !(too_old || too_many || too_big) {
                    break 'scan;
                }
                victims.push(id);
                remaining -= 1;
                stored -= bytes;
                after = Some((at, id));
            }
        }
        if victims.is_empty() {
            tx.rollback().await?;
            return Ok(PruneStats::default());
        }
        let gone = tx
            .rows(
                "DELETE FROM {s}.captures WHERE id = ANY($1) RETURNING cluster, pod_uid, namespace, workload, cause, observed_at, bundle_len, stored_bytes",
                &[&victims],
            )
            .await?;
        let mut pods: BTreeMap<(String, String), Vec<Timestamp>> = BTreeMap::new();
        let mut causes: HashSet<(String, String, String, String)> = HashSet::new();
        let mut totals: BTreeMap<String, (i64, i64, i64)> = BTreeMap::new();
        let mut stats = PruneStats::default();
        for row in &gone {
            let cluster: String = tx.col(row, 0)?;
            let uid: String = tx.col(row, 1)?;
            let ns: String = tx.col(row, 2)?;
            let workload: String = tx.col(row, 3)?;
            let cause: String = tx.col(row, 4)?;
            let at: Ts = tx.col(row, 5)?;
            let bl: i64 = tx.col(row, 6)?;
            let sb: i64 = tx.col(row, 7)?;
            pods.entry((cluster.clone(), uid))
                .or_default()
                .push(hour_floor(at.0));
            if !cause.is_empty() {
                causes.insert((cluster.clone(), ns, workload, cause));
            }
            let t = totals.entry(cluster).or_default();
            t.0 += 1;
            t.1 += bl;
            t.2 += sb;
            stats.removed += 1;
            stats.bytes_freed += u64_of(sb);
        }
        // The rollup rows of the pods' hours that lost captures, recomputed.
        for ((cluster, uid), mut hours) in pods {
            hours.sort();
            hours.dedup();
            let hours: Vec<Ts> = hours.into_iter().map(Ts).collect();
            tx.exec(
                "DELETE FROM {s}.rollup WHERE cluster = $1 AND pod_uid = $2 AND bucket = ANY($3)",
                &[&cluster, &uid, &hours],
            )
            .await?;
            tx.exec(
                "INSERT INTO {s}.rollup (bucket, cluster, namespace, owner_kind, owner, workload, node, cause, pod_uid, captures, first_at, last_at) \
                 SELECT date_trunc('hour', observed_at, 'UTC'), cluster, namespace, owner_kind, owner, workload, node, cause, pod_uid, count(*), min(observed_at), max(observed_at) \
                 FROM {s}.captures WHERE cluster = $1 AND pod_uid = $2 AND date_trunc('hour', observed_at, 'UTC') = ANY($3) GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9",
                &[&cluster, &uid, &hours],
            )
            .await?;
        }
        // First sightings of the causes that lost captures, from the rollup.
        let mut causes: Vec<_> = causes.into_iter().collect();
        causes.sort();
        for (cluster, ns, workload, cause) in causes {
            let key: [&(dyn ToSql + Sync); 4] = [&cluster, &ns, &workload, &cause];
            let n = tx
                .exec(
                    "UPDATE {s}.first_seen f SET first_at = m.first_at FROM (SELECT min(first_at) AS first_at FROM {s}.rollup WHERE cluster = $1 AND workload = $3 AND cause = $4 AND namespace = $2) m \
                     WHERE f.cluster = $1 AND f.namespace = $2 AND f.workload = $3 AND f.cause = $4 AND m.first_at IS NOT NULL",
                    &key,
                )
                .await?;
            if n == 0 {
                tx.exec(
                    "DELETE FROM {s}.first_seen WHERE cluster = $1 AND namespace = $2 AND workload = $3 AND cause = $4",
                    &key,
                )
                .await?;
            }
        }
        for (cluster, (n, b, sb)) in &totals {
            tx.exec(
                "UPDATE {s}.totals SET captures = captures - $2, bundle_bytes = bundle_bytes - $3, stored_bytes = stored_bytes - $4 WHERE cluster = $1",
                &[cluster, n, b, sb],
            )
            .await?;
        }
        tx.commit().await?;
        Ok(stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cluster: &str, pod_uid: &str, cause: &str, at: i64) -> NewRow {
        NewRow {
            cluster: cluster.into(),
            pod_uid: pod_uid.into(),
            container: "app".into(),
            restart_count: 1,
            namespace: "shop".into(),
            pod: format!("web-{pod_uid}"),
            owner_kind: "ReplicaSet".into(),
            owner: "web-7c9d".into(),
            workload: "Deployment/web".into(),
            nc_kind: "Deployment".into(),
            nc_owner: "web".into(),
            node: "n1".into(),
            revision: None,
            cause: cause.into(),
            confidence: None,
            reason: None,
            exit_code: None,
            observed_at: Timestamp::from_second(at).expect("time"),
            record: "{}".into(),
            bundle: None,
            diagnosis: None,
            keys: None,
            bundle_len: 100,
            stored: 40,
        }
    }

    #[test]
    fn a_batch_sums_into_one_row_per_key() {
        let t = |s: i64| Timestamp::from_second(s).expect("time");
        let mut agg = Aggregates::default();
        // Two crashes of one pod in the hour from 7200 s, one in the next
        // hour, one of another pod, one with no cause, one in another cluster.
        for r in [
            row("east", "u1", "oom-killed", 7300),
            row("east", "u1", "oom-killed", 7250),
            row("east", "u1", "oom-killed", 10900),
            row("east", "u2", "oom-killed", 7400),
            row("east", "u2", "", 7500),
            row("west", "u1", "oom-killed", 7000),
        ] {
            agg.add(&r);
        }
        assert_eq!(agg.rollup.len(), 6 - 1, "{:#?}", agg.rollup);
        let key = |cluster: &str, hour: i64, uid: &str, cause: &str| {
            (
                t(hour),
                cluster.to_string(),
                "shop".to_string(),
                "ReplicaSet".to_string(),
                "web-7c9d".to_string(),
                "Deployment/web".to_string(),
                "n1".to_string(),
                cause.to_string(),
                uid.to_string(),
            )
        };
        assert_eq!(
            agg.rollup[&key("east", 7200, "u1", "oom-killed")],
            (2, t(7250), t(7300))
        );
        assert_eq!(
            agg.rollup[&key("east", 10800, "u1", "oom-killed")],
            (1, t(10900), t(10900))
        );
        // first_seen: per cluster, the earliest; a capture with no cause is in
        // no first_seen row.
        let first = |c: &str| {
            agg.first_seen[&(
                c.to_string(),
                "shop".to_string(),
                "Deployment/web".to_string(),
                "oom-killed".to_string(),
            )]
                .clone()
        };
        assert_eq!(agg.first_seen.len(), 2);
        assert_eq!(first("east"), ("Deployment".into(), "web".into(), t(7250)));
        assert_eq!(first("west").2, t(7000));
        assert_eq!(agg.totals["east"], (5, 500, 200));
        assert_eq!(agg.totals["west"], (1, 100, 40));
    }
}
