//! `/metrics`, `/healthz` and `/readyz`.
//!
//! `/healthz` answers 200 while the process serves requests: it never
//! depends on the API server, so a liveness probe does not restart crashdoc
//! during a control-plane outage (which is when its history matters most).
//! `/readyz` answers 200 once the pod watch has listed and is healthy, or
//! while this replica is a leader-election standby; 503 otherwise, with the
//! reason in the body. After a watch error: 503 until a re-list or the
//! resumed watch's first event (`session::on_event`).

use crate::metrics::Metrics;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use std::sync::{Arc, Mutex};

/// What `/readyz` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    Starting,
    /// Waiting for the leader Lease; nothing to watch yet.
    Standby,
    Ready,
    /// The watch failed and is retrying.
    Degraded(String),
}

/// Shared state of the HTTP endpoints.
#[derive(Debug)]
pub struct Health {
    readiness: Mutex<Readiness>,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            readiness: Mutex::new(Readiness::Starting),
        }
    }
}

impl Health {
    pub fn set(&self, r: Readiness) {
        if let Ok(mut g) = self.readiness.lock() {
            *g = r;
        }
    }

    pub fn get(&self) -> Readiness {
        self.readiness
            .lock()
            .map(|g| g.clone())
            .unwrap_or(Readiness::Degraded("state lock poisoned".into()))
    }
}

#[derive(Clone)]
struct AppState {
    metrics: Arc<Metrics>,
    health: Arc<Health>,
}

pub fn router(metrics: Arc<Metrics>, health: Arc<Health>) -> Router {
    Router::new()
        .route("/metrics", get(metrics_handler))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .with_state(AppState { metrics, health })
}

async fn metrics_handler(State(s): State<AppState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        s.metrics.encode(),
    )
}

async fn readyz(State(s): State<AppState>) -> impl IntoResponse {
    match s.health.get() {
        Readiness::Ready => (StatusCode::OK, "ready\n".to_string()),
        Readiness::Standby => (
            StatusCode::OK,
            "standby: another replica holds the leader Lease\n".to_string(),
        ),
        Readiness::Starting => (
            StatusCode::SERVICE_UNAVAILABLE,
            "starting: the pod watch has not listed yet\n".to_string(),
        ),
        Readiness::Degraded(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the pod watch is failing: {why}\n"),
        ),
    }
}

/// Serve until the listener fails.
pub async fn serve(
    listener: tokio::net::TcpListener,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
) -> std::io::Result<()> {
    axum::serve(listener, router(metrics, health)).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        let code = out[9..12].parse().unwrap();
        (code, out)
    }

    #[tokio::test]
    async fn endpoints() {
        let metrics = Arc::new(Metrics::new());
        let health = Arc::new(Health::default());
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(serve(l, metrics.clone(), health.clone()));
        assert_eq!(get(addr, "/healthz").await.0, 200);
        let (code, body) = get(addr, "/readyz").await;
        assert_eq!(code, 503, "{body}");
        health.set(Readiness::Ready);
        assert_eq!(get(addr, "/readyz").await.0, 200);
        health.set(Readiness::Degraded("403 Forbidden listing pods".into()));
        let (code, body) = get(addr, "/readyz").await;
        assert_eq!(code, 503);
        assert!(body.contains("403 Forbidden"));
        // Liveness does not follow the watch.
        assert_eq!(get(addr, "/healthz").await.0, 200);
        metrics.capture("full");
        let (code, body) = get(addr, "/metrics").await;
        assert_eq!(code, 200);
        assert!(
            body.contains("crashdoc_captures_total{kind=\"full\"} 1"),
            "{body}"
        );
        assert_eq!(get(addr, "/nope").await.0, 404);
    }
}
