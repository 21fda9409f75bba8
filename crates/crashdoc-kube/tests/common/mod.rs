//! A mock API server for the integration tests (kube-rs's pattern: a tower
//! service behind `kube::Client::new`), with what tests/mock.rs's has plus
//! the faults: answers with headers, slow answers, and watch streams.
//! Every request is recorded (verb, path, query); the n-th request of a
//! route gets the n-th answer (the last one repeats). A watch request
//! (`watch=true`) is routed apart from the list of the same path:
//! `"{path}?watch"`.
#![allow(dead_code)]

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::StreamBody;
use http_body_util::combinators::BoxBody;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tower::ServiceExt as _;

pub const NS: &str = "shop";

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The mock server as a tower service.
pub type Service = tower::util::BoxCloneService<
    Request<kube::client::Body>,
    Response<BoxBody<Bytes, BoxError>>,
    BoxError,
>;

/// One answer.
#[derive(Clone, Debug)]
pub enum Reply {
    Json(u16, Value),
    Text(u16, String),
    /// An answer with extra headers (e.g. Retry-After); the body as is.
    WithHeaders(u16, String, Vec<(&'static str, String)>),
    /// This answer, after a wait (tokio's clock: paused tests do not wait).
    Slow(Duration, Box<Reply>),
    /// A watch: these events, one JSON line each, then the stream ends.
    Events(Vec<Value>),
    /// A watch that stays open and sends nothing.
    Open,
    /// The connection drops before an answer.
    Reset,
    /// An answer chosen when the request comes, from the request and the
    /// test's own state (a kubelet whose pod status moves on).
    Dynamic(Respond),
}

/// The function behind [`Reply::Dynamic`].
#[derive(Clone)]
pub struct Respond(pub Arc<dyn Fn(&Seen) -> Reply + Send + Sync>);

impl std::fmt::Debug for Respond {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Respond(..)")
    }
}

/// The collection options of the tests: 100 lines, 1 MiB per log, key names.
pub fn opts() -> crashdoc_kube::CollectOptions {
    crashdoc_kube::CollectOptions {
        log_lines: Some(100),
        log_bytes: 1 << 20,
        secret_keys: true,
    }
}

/// The answer to a GET of the node the tests' pods run on, `node-1`.
pub fn node_1() -> Reply {
    ok(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}}))
}

pub fn ok(v: Value) -> Reply {
    Reply::Json(200, v)
}

pub fn status(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": format!("{reason} (mock)"), "reason": reason, "code": code})
}

pub fn list(kind: &str, items: Vec<Value>) -> Reply {
    ok(
        json!({"apiVersion": "v1", "kind": kind, "metadata": {"resourceVersion": "1"}, "items": items}),
    )
}

/// The first cause diagnosed from a collected bundle (empty when none).
pub fn cause(c: &crashdoc_kube::Collection) -> String {
    let report = crashdoc_core::diagnose_all(&crashdoc_core::ingest::bundle::read_memory(&c.pods));
    report.pods[0]
        .diagnoses
        .first()
        .map(|d| d.cause.id().to_string())
        .unwrap_or_default()
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub query: String,
}

impl Seen {
    pub fn watch(&self) -> bool {
        self.query.split('&').any(|q| q == "watch=true")
    }
}

#[derive(Clone, Default)]
pub struct Mock {
    routes: Arc<Mutex<HashMap<String, Vec<Reply>>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Mock {
    pub fn on(&self, route: &str, replies: Vec<Reply>) -> &Self {
        self.routes
            .lock()
            .unwrap()
            .insert(route.to_string(), replies);
        self
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Requests of a route (`"{path}?watch"` for watches).
    pub fn calls(&self, route: &str) -> usize {
        self.seen().iter().filter(|s| route_of(s) == route).count()
    }

    /// The service: what `kube::Client::new` or crashdoc's own stack wraps.
    pub fn service(&self) -> Service {
        let m = self.clone();
        tower::service_fn(move |req: Request<kube::client::Body>| {
            let m = m.clone();
            async move {
                let seen = Seen {
                    method: req.method().to_string(),
                    path: req.uri().path().to_string(),
                    query: req.uri().query().unwrap_or("").to_string(),
                };
                let route = route_of(&seen);
                let n = {
                    let mut all = m.seen.lock().unwrap();
                    let n = all.iter().filter(|s| route_of(s) == route).count();
                    all.push(seen.clone());
                    n
                };
                let reply = {
                    let routes = m.routes.lock().unwrap();
                    match routes.get(&route) {
                        Some(r) => r[n.min(r.len() - 1)].clone(),
                        None => Reply::Json(404, status(404, "NotFound")),
                    }
                };
                let reply = match reply {
                    Reply::Dynamic(f) => (f.0)(&seen),
                    r => r,
                };
                answer(reply).await
            }
        })
        .boxed_clone()
    }

    /// A client straight on the service, as tests/mock.rs builds it.
    pub fn client(&self) -> kube::Client {
        kube::Client::new(self.service(), NS)
    }
}

fn route_of(s: &Seen) -> String {
    if s.watch() {
        format!("{}?watch", s.path)
    } else {
        s.path.clone()
    }
}

fn full(b: impl Into<Bytes>) -> BoxBody<Bytes, BoxError> {
    use http_body_util::BodyExt;
    http_body_util::Full::new(b.into())
        .map_err(|never| match never {})
        .boxed()
}

async fn answer(mut reply: Reply) -> Result<Response<BoxBody<Bytes, BoxError>>, BoxError> {
    while let Reply::Slow(d, r) = reply {
        tokio::time::sleep(d).await;
        reply = *r;
    }
    let json = |code: u16| {
        Response::builder()
            .status(code)
            .header("content-type", "application/json")
    };
    Ok(match reply {
        Reply::Reset => {
            return Err(Box::new(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "connection reset by peer",
            )));
        }
        Reply::Json(c, v) => json(c).body(full(v.to_string()))?,
        Reply::Text(c, t) => Response::builder()
            .status(c)
            .header("content-type", "text/plain")
            .body(full(t))?,
        Reply::WithHeaders(c, v, headers) => {
            let mut b = json(c);
            for (k, v) in headers {
                b = b.header(k, v);
            }
            b.body(full(v))?
        }
        Reply::Events(events) => {
            let lines: Vec<Result<http_body::Frame<Bytes>, BoxError>> = events
                .into_iter()
                .map(|e| Ok(http_body::Frame::data(Bytes::from(format!("{e}\n")))))
                .collect();
            use http_body_util::BodyExt;
            json(200).body(StreamBody::new(futures::stream::iter(lines)).boxed())?
        }
        Reply::Open => {
            use http_body_util::BodyExt;
            let pending = futures::stream::pending::<Result<http_body::Frame<Bytes>, BoxError>>();
            json(200).body(StreamBody::new(pending).boxed())?
        }
        Reply::Slow(..) => unreachable!("unwrapped above"),
        Reply::Dynamic(_) => Response::builder()
            .status(500)
            .body(full("a dynamic reply answered with another"))?,
    })
}
