//! crashdoc's layer on the client's tower stack (outermost, around
//! kube-client's own: kube-client 5.0.0 src/client/builder.rs,
//! `ClientBuilder::with_layer`).
//!
//! * A request whose answer has not begun within the timeout is abandoned
//!   with [`TimedOut`] (the answer's body is not timed: a watch stays open).
//! * `Retry-After` reaches [`crate::retry`]: kube-client turns an error
//!   answer into `kube::Error::Api(Status)` from the body alone
//!   (src/client/mod.rs, `handle_api_errors`), so the header's seconds are
//!   written into the Status's `details.retryAfterSeconds`, where the API
//!   server itself puts them for its own 429s (apimachinery v0.36.3
//!   pkg/api/errors/errors.go `NewTooManyRequests`; the header is derived
//!   from that field in apiserver v0.36.3 pkg/endpoints/handlers/
//!   responsewriters/writers.go `ErrorNegotiated`). The priority-and-fairness
//!   and max-in-flight filters answer with the header and a plain-text body
//!   (apiserver v0.36.3 pkg/server/filters/priority-and-fairness.go
//!   `tooManyRequests`): that body becomes a Status carrying it.

use bytes::Bytes;
use futures::future::BoxFuture;
use http::{Request, Response};
use http_body_util::{BodyExt, Either, Full};
use std::task::{Context, Poll};
use std::time::Duration;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request abandoned: no answer began within the timeout.
#[derive(Debug, thiserror::Error)]
#[error("no answer from the API server within {}s", .0.as_secs_f64())]
pub struct TimedOut(pub Duration);

/// The layer: `timeout` bounds the wait for each answer's head.
#[derive(Debug, Clone, Copy)]
pub struct Layer {
    pub timeout: Option<Duration>,
}

impl<S> tower::Layer<S> for Layer {
    type Service = Service<S>;
    fn layer(&self, inner: S) -> Service<S> {
        Service {
            inner,
            timeout: self.timeout,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Service<S> {
    inner: S,
    timeout: Option<Duration>,
}

impl<S, ReqB, B> tower::Service<Request<ReqB>> for Service<S>
where
    S: tower::Service<Request<ReqB>, Response = Response<B>>,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
    ReqB: Send + 'static,
{
    type Response = Response<Either<B, Full<Bytes>>>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<ReqB>) -> Self::Future {
        // Called now, on the service made ready; only its answer is awaited.
        let fut = self.inner.call(req);
        let timeout = self.timeout;
        Box::pin(async move {
            let res = match timeout {
                Some(t) => match tokio::time::timeout(t, fut).await {
                    Ok(r) => r,
                    Err(_) => return Err(Box::new(TimedOut(t)) as BoxError),
                },
                None => fut.await,
            }
            .map_err(Into::into)?;
            retry_after_into_status(res).await
        })
    }
}

/// The seconds of a `Retry-After: N` header (the HTTP-date form is not
/// used by the API server and is ignored).
fn retry_after(res: &Response<impl Sized>) -> Option<u32> {
    res.headers()
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

async fn retry_after_into_status<B>(
    res: Response<B>,
) -> Result<Response<Either<B, Full<Bytes>>>, BoxError>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let code = res.status().as_u16();
    let secs = match retry_after(&res) {
        Some(s) if matches!(code, 429 | 503) => s,
        _ => return Ok(res.map(Either::Left)),
    };
    let (mut parts, body) = res.into_parts();
    let bytes = body.collect().await.map_err(Into::into)?.to_bytes();
    let status = with_retry_after(&bytes, code, secs);
    parts.headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(http::header::CONTENT_LENGTH);
    Ok(Response::from_parts(
        parts,
        Either::Right(Full::new(Bytes::from(status.to_string()))),
    ))
}

/// The error body as a Status whose details carry `secs`: the server's
/// own Status when the body is one (its retryAfterSeconds kept when set),
/// else a Status made of the text.
fn with_retry_after(body: &[u8], code: u16, secs: u32) -> serde_json::Value {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body)
        .ok()
        .filter(|v: &serde_json::Value| v.get("kind").and_then(|k| k.as_str()) == Some("Status"));
    let mut status = parsed.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(body).trim().to_string();
        serde_json::json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": text, "code": code,
            "reason": if code == 429 { "TooManyRequests" } else { "ServiceUnavailable" },
        })
    });
    if !status.get("details").is_some_and(|d| d.is_object()) {
        status["details"] = serde_json::json!({});
    }
    let set = status["details"]
        .get("retryAfterSeconds")
        .and_then(|s| s.as_u64())
        .is_some_and(|s| s > 0);
    if !set {
        status["details"]["retryAfterSeconds"] = secs.into();
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_text_429_becomes_a_status_with_the_seconds() {
        let s = with_retry_after(b"Too many requests, please try again later.\n", 429, 7);
        let st: kube::core::Status = serde_json::from_value(s).unwrap();
        assert_eq!(st.code, 429);
        assert_eq!(st.reason, "TooManyRequests");
        assert_eq!(st.message, "Too many requests, please try again later.");
        assert_eq!(st.details.unwrap().retry_after_seconds, 7);
    }

    #[test]
    fn a_status_body_keeps_its_own_seconds_or_gains_the_header_s() {
        let body = serde_json::json!({"kind": "Status", "apiVersion": "v1", "code": 429,
            "reason": "TooManyRequests", "message": "slow down",
            "details": {"retryAfterSeconds": 3}});
        let s = with_retry_after(body.to_string().as_bytes(), 429, 9);
        assert_eq!(s["details"]["retryAfterSeconds"], 3);
        assert_eq!(s["message"], "slow down");
        let body = serde_json::json!({"kind": "Status", "apiVersion": "v1", "code": 503,
            "reason": "ServiceUnavailable", "message": "shutting down"});
        let s = with_retry_after(body.to_string().as_bytes(), 503, 9);
        assert_eq!(s["details"]["retryAfterSeconds"], 9);
    }

    #[test]
    fn only_whole_seconds_are_read() {
        let res = |v: &str| {
            Response::builder()
                .header("retry-after", v)
                .body(())
                .unwrap()
        };
        assert_eq!(retry_after(&res(" 12 ")), Some(12));
        assert_eq!(retry_after(&res("Wed, 21 Oct 2015 07:28:00 GMT")), None);
        assert_eq!(retry_after(&res("-1")), None);
        assert_eq!(retry_after(&Response::new(())), None);
    }
}
