//! `--tls-cert` / `--tls-key`: the HTTP server over TLS (rustls with the
//! ring provider). Handshakes run in their own tasks, each bounded in time,
//! so a client that stalls its handshake holds up no one else.

use crate::ServeError;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::server::TlsStream;

/// The PEM files of `--tls-cert` (the certificate chain, the server's own
/// first) and `--tls-key` (its private key: PKCS#8, PKCS#1 or SEC1).
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// A handshake that takes longer is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

fn bad(file: &std::path::Path, what: &'static str, e: impl std::fmt::Display) -> ServeError {
    // rustls and pem errors name what is wrong, never the key's bytes.
    ServeError::Tls {
        file: file.to_path_buf(),
        what,
        reason: e.to_string(),
    }
}

/// The rustls server configuration from the PEM files.
pub(crate) fn server_config(f: &TlsFiles) -> Result<Arc<rustls::ServerConfig>, ServeError> {
    let certs = CertificateDer::pem_file_iter(&f.cert)
        .map_err(|e| bad(&f.cert, "certificate", e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(&f.cert, "certificate", e))?;
    if certs.is_empty() {
        return Err(bad(&f.cert, "certificate", "no CERTIFICATE block in it"));
    }
    let key = PrivateKeyDer::from_pem_file(&f.key).map_err(|e| bad(&f.key, "key", e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(&f.cert, "certificate", e))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| bad(&f.key, "key", e))?;
    // axum serves HTTP/1.1 only.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Accepted TLS connections, for `axum::serve`.
pub(crate) struct TlsListener {
    rx: tokio::sync::mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    pub(crate) fn new(tcp: TcpListener, config: Arc<rustls::ServerConfig>) -> TlsListener {
        let local = tcp
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        tokio::spawn(async move {
            while !tx.is_closed() {
                let (stream, peer) = match tcp.accept().await {
                    Ok(c) => c,
                    // e.g. out of file descriptors: wait, then try again
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let acceptor = acceptor.clone();
                let tx = tx.clone();
                tokio::spawn(async move {
                    if let Ok(Ok(tls)) =
                        tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await
                    {
                        let _ = tx.send((tls, peer)).await;
                    }
                });
            }
        });
        TlsListener { rx, local }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.rx.recv().await {
            Some(c) => c,
            // the accepting task ended: no more connections
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}
