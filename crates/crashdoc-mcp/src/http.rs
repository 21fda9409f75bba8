//! The doors of the HTTP server: bearer authentication (RFC 6750), by a
//! static token or a JWT access token from `--auth-issuer` (jwt.rs), with the
//! Protected Resource Metadata document an MCP client looks for (RFC 9728,
//! as the MCP authorization specification asks of a streamable HTTP
//! server), a request body limit, and a limit on one client's concurrent
//! tool calls. Everything here runs before rmcp sees the request.

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The path of the Protected Resource Metadata document.
pub const PRM_PATH: &str = "/.well-known/oauth-protected-resource";

/// A bearer token: never shown by `Debug`.
#[derive(Clone)]
pub struct Token(Vec<u8>);

impl Token {
    /// The token, trimmed of white space at its ends (a file's newline).
    pub fn new(s: &str) -> Option<Token> {
        let t = s.trim();
        (!t.is_empty()).then(|| Token(t.as_bytes().to_vec()))
    }

    /// Whether `given` is this token, in time that does not depend on
    /// where they first differ.
    pub fn matches(&self, given: &[u8]) -> bool {
        use subtle::ConstantTimeEq as _;
        // ct_eq answers at once for a different length: the length is
        // all a wrong guess learns.
        bool::from(self.0.as_slice().ct_eq(given))
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(***)")
    }
}

/// How the HTTP server admits requests.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// `--auth-token-file` / `CRASHDOC_MCP_TOKEN`.
    pub token: Option<Token>,
    /// `--auth-jwks-file` with `--auth-issuer` and `--auth-audience`: JWT
    /// access tokens. Neither this nor `token` only with
    /// `--insecure-no-auth` on loopback.
    pub jwt: Option<Arc<crate::jwt::JwtCheck>>,
    /// `--insecure-no-auth`.
    pub insecure_no_auth: bool,
    /// `--auth-issuer`: the authorization server the metadata names.
    pub issuer: Option<String>,
    /// `--auth-audience`: this server's URL as tokens name it (the
    /// metadata's `resource`); default: the URL the request came to.
    pub audience: Option<String>,
    /// `--allow-host`: Host names a request may use besides loopback and
    /// the bound address (a Service's DNS names); `--auth-audience`'s host
    /// is added to them.
    pub allowed_hosts: Vec<String>,
    /// `--max-body-bytes`: a larger request gets 413.
    pub max_body_bytes: usize,
    /// `--max-concurrent-calls`: per client (its IP address).
    pub max_concurrent_calls: usize,
    /// `--tls-cert` / `--tls-key`: serve HTTPS.
    pub tls: Option<crate::TlsFiles>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            token: None,
            jwt: None,
            insecure_no_auth: false,
            issuer: None,
            audience: None,
            allowed_hosts: Vec::new(),
            max_body_bytes: 4 << 20,
            max_concurrent_calls: 16,
            tls: None,
        }
    }
}

pub(crate) struct Doors {
    pub(crate) o: HttpOptions,
    pub(crate) scheme: &'static str,
    calls: Mutex<HashMap<IpAddr, Arc<Semaphore>>>,
}

impl Doors {
    pub(crate) fn new(o: HttpOptions, scheme: &'static str) -> Arc<Doors> {
        Arc::new(Doors {
            o,
            scheme,
            calls: Mutex::new(HashMap::new()),
        })
    }

    /// This server's resource URL for a request that came with `headers`.
    fn resource(&self, headers: &HeaderMap) -> String {
        match &self.o.audience {
            Some(a) => a.clone(),
            None => format!("{}/mcp", self.base(headers)),
        }
    }

    fn base(&self, headers: &HeaderMap) -> String {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .filter(|h| {
                h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
            })
            .unwrap_or("localhost");
        format!("{}://{host}", self.scheme)
    }

    fn metadata_url(&self, headers: &HeaderMap) -> String {
        match &self.o.audience {
            Some(a) => {
                // RFC 9728 section 3.1: the well-known path goes between
                // the host and the resource's path.
                let (origin, path) = split_origin(a);
                format!("{origin}{PRM_PATH}{}", path.trim_end_matches('/'))
            }
            None => format!("{}{PRM_PATH}/mcp", self.base(headers)),
        }
    }

    fn permit(&self, ip: IpAddr) -> Option<OwnedSemaphorePermit> {
        let sem = {
            let mut m = self.calls.lock().ok()?;
            m.entry(ip)
                .or_insert_with(|| Arc::new(Semaphore::new(self.o.max_concurrent_calls.max(1))))
                .clone()
        };
        sem.try_acquire_owned().ok()
    }
}

/// The hosts a request's Host header may name: loopback, the bound
/// address, `--allow-host`, and `--auth-audience`'s host (with its port).
/// Everything else is refused with 403 by rmcp (DNS-rebinding protection).
pub(crate) fn allowed_hosts(o: &HttpOptions, bound: std::net::IpAddr) -> Vec<String> {
    let mut hosts = vec![
        "localhost".to_string(),
        "127.0.0.1".into(),
        "::1".into(),
        bound.to_string(),
    ];
    hosts.extend(o.allowed_hosts.iter().map(|h| h.trim().to_string()));
    if let Some(a) = &o.audience {
        let (origin, _) = split_origin(a);
        let authority = origin.split_once("://").map_or(origin, |(_, h)| h);
        // userinfo never belongs in an audience; keep only what follows it
        let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        if !authority.is_empty() {
            hosts.push(authority.to_string());
        }
    }
    hosts.retain(|h| !h.is_empty());
    hosts.sort();
    hosts.dedup();
    hosts
}

fn split_origin(url: &str) -> (&str, &str) {
    let after = url.find("://").map_or(0, |i| i + 3);
    match url[after..].find('/') {
        Some(i) => url.split_at(after + i),
        None => (url, ""),
    }
}

/// `GET /.well-known/oauth-protected-resource[/mcp]`: RFC 9728's document.
pub(crate) async fn metadata(State(d): State<Arc<Doors>>, headers: HeaderMap) -> Response {
    let mut v = serde_json::json!({
        "resource": d.resource(&headers),
        "bearer_methods_supported": ["header"],
        "resource_name": "crashdoc",
    });
    if let Some(i) = &d.o.issuer {
        v["authorization_servers"] = serde_json::json!([i]);
    }
    ([(header::CONTENT_TYPE, "application/json")], v.to_string()).into_response()
}

/// Whether the request's credential lets it in; `Err(None)` when it brought
/// none, `Err(Some(why))` when it brought a wrong one.
fn admit(o: &HttpOptions, headers: &HeaderMap) -> Result<(), Option<&'static str>> {
    let Some(given) = bearer(headers) else {
        return Err(None);
    };
    if o.token.as_ref().is_some_and(|t| t.matches(given)) {
        return Ok(());
    }
    match &o.jwt {
        Some(j) if crate::jwt::JwtCheck::looks_like_jwt(given) => {
            j.verify(given).map_err(|r| Some(r.description()))
        }
        _ => Err(Some("the token is not this server's")),
    }
}

fn unauthorized(d: &Doors, headers: &HeaderMap, wrong: Option<&str>) -> Response {
    let mut challenge = format!("Bearer resource_metadata=\"{}\"", d.metadata_url(headers));
    if let Some(why) = wrong {
        // RFC 6750 section 3: the description is printable ASCII without `"`
        challenge.push_str(&format!(
            ", error=\"invalid_token\", error_description=\"{why}\""
        ));
    }
    let mut r = (
        StatusCode::UNAUTHORIZED,
        [(header::CONTENT_TYPE, "application/json")],
        r#"{"error":"unauthorized","message":"this MCP server needs an Authorization: Bearer header with its token"}"#,
    )
        .into_response();
    if let Ok(v) = HeaderValue::from_str(&challenge) {
        r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    r
}

fn bearer(headers: &HeaderMap) -> Option<&[u8]> {
    let v = headers.get(header::AUTHORIZATION)?.as_bytes();
    let (scheme, rest) = v.split_at(v.iter().position(|b| *b == b' ')?);
    scheme
        .eq_ignore_ascii_case(b"bearer")
        .then(|| rest.trim_ascii())
}

fn too_large(max: usize) -> Response {
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        [(header::CONTENT_TYPE, "application/json")],
        format!(
            r#"{{"error":"payload_too_large","message":"the request body is larger than this server's --max-body-bytes ({max})"}}"#
        ),
    )
        .into_response()
}

/// The middleware in front of `/mcp`.
pub(crate) async fn doors(
    State(d): State<Arc<Doors>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    req: Request,
    next: Next,
) -> Response {
    if (d.o.token.is_some() || d.o.jwt.is_some())
        && let Err(wrong) = admit(&d.o, req.headers())
    {
        return unauthorized(&d, req.headers(), wrong);
    }
    if req.method() == Method::DELETE {
        return session_deleted(next.run(req).await);
    }
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let max = d.o.max_body_bytes;
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return too_large(max);
    }
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, max).await else {
        return too_large(max);
    };
    let call = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .filter(|v| v["method"] == "tools/call");
    let permit = match call {
        Some(v) => match d.permit(peer.ip()) {
            Some(p) => Some(p),
            None => return busy(&v, d.o.max_concurrent_calls),
        },
        None => None,
    };
    let resp = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    match permit {
        None => resp,
        // Held until the answer's stream ends: the call is running until then.
        Some(p) => resp.map(|b| {
            Body::new(Held {
                inner: b,
                _permit: p,
            })
        }),
    }
}

/// rmcp answers a session's DELETE with 202; an ended session is 204 No
/// Content (RFC 9110 section 9.3.5), which MCP clients take as done (the
/// Python SDK warns "Session termination failed: 202" otherwise).
fn session_deleted(r: Response) -> Response {
    if r.status() != StatusCode::ACCEPTED {
        return r;
    }
    let (mut parts, _) = r.into_parts();
    parts.status = StatusCode::NO_CONTENT;
    parts.headers.remove(header::CONTENT_TYPE);
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::empty())
}

/// A JSON-RPC error for a call past the client's limit; the server goes on.
fn busy(call: &serde_json::Value, limit: usize) -> Response {
    let v = serde_json::json!({
        "jsonrpc": "2.0",
        "id": call.get("id").cloned().unwrap_or(serde_json::Value::Null),
        "error": {
            "code": -32000,
            "message": format!(
                "too many concurrent tool calls from this client: this server runs at most {limit} at once per client (--max-concurrent-calls); retry when one has finished"
            ),
        }
    });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        v.to_string(),
    )
        .into_response()
}

struct Held {
    inner: Body,
    _permit: OwnedSemaphorePermit,
}

impl http_body::Body for Held {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_only_themselves() {
        let t = Token::new(" s3cret-token\n").unwrap();
        assert!(t.matches(b"s3cret-token"));
        assert!(!t.matches(b"s3cret-tokeN"));
        assert!(!t.matches(b"s3cret"));
        assert!(!t.matches(b""));
        assert!(Token::new(" \n").is_none());
        assert_eq!(format!("{t:?}"), "Token(***)");
    }

    #[test]
    fn bearer_headers() {
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer abc"),
        );
        assert_eq!(bearer(&h), Some(&b"abc"[..]));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("bearer  abc "),
        );
        assert_eq!(bearer(&h), Some(&b"abc"[..]));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(bearer(&h), None);
    }

    #[test]
    fn hosts_are_loopback_the_bound_address_the_flag_and_the_audience() {
        let o = HttpOptions {
            audience: Some("https://mcp.example.com:8443/mcp".into()),
            allowed_hosts: vec!["crashdoc-mcp.crashdoc.svc".into(), " ".into()],
            ..Default::default()
        };
        let h = allowed_hosts(&o, "10.1.2.3".parse().unwrap());
        assert_eq!(
            h,
            [
                "10.1.2.3",
                "127.0.0.1",
                "::1",
                "crashdoc-mcp.crashdoc.svc",
                "localhost",
                "mcp.example.com:8443"
            ]
        );
        let bare = allowed_hosts(&HttpOptions::default(), "127.0.0.1".parse().unwrap());
        assert_eq!(bare, ["127.0.0.1", "::1", "localhost"]);
    }

    #[test]
    fn an_ended_session_is_no_content() {
        let r = session_deleted((StatusCode::ACCEPTED, "x").into_response());
        assert_eq!(r.status(), StatusCode::NO_CONTENT);
        assert!(r.headers().get(header::CONTENT_TYPE).is_none());
        // anything else passes as it is
        let r = session_deleted((StatusCode::NOT_FOUND, "x").into_response());
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
    }

    #[test]
    fn metadata_url_follows_rfc_9728() {
        let d = Doors::new(
            HttpOptions {
                audience: Some("https://mcp.example.com/mcp".into()),
                ..Default::default()
            },
            "https",
        );
        assert_eq!(
            d.metadata_url(&HeaderMap::new()),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
    }
}
