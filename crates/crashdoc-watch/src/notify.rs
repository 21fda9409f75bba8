//! Webhook notifications: a generic JSON body or a Slack-compatible one,
//! rate-limited per workload so a crash loop does not flood a channel.
//!
//! The first termination of a workload is sent at once; later ones within
//! `interval` are held back and counted, and the next message that goes out
//! says how many were suppressed.

use serde::Serialize;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The body's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `{"kind": "crashdoc.termination", ...}`, documented in docs/watch.md.
    Json,
    /// `{"text": ..., "blocks": [...]}` for Slack incoming webhooks (and
    /// the many chat tools that accept the same body).
    Slack,
}

/// What a notification says.
#[derive(Debug, Clone, Serialize)]
pub struct Notice {
    pub kind: &'static str,
    pub namespace: String,
    pub pod: String,
    pub container: String,
    pub owner_kind: Option<String>,
    pub owner: Option<String>,
    pub restart_count: i32,
    pub reason: Option<String>,
    pub exit_code: i32,
    pub cause: Option<String>,
    pub confidence: Option<String>,
    pub summary: Option<String>,
    pub fix: Vec<String>,
    pub commands: Vec<String>,
    /// Terminations of the same workload not notified since the last message.
    pub suppressed: u64,
    /// The id of the capture in the history (`crashdoc history --export ID`).
    pub history_id: Option<u64>,
}

impl Notice {
    fn workload(&self) -> String {
        match (&self.owner_kind, &self.owner) {
            (Some(k), Some(n)) => format!("{}/{n}", k.to_ascii_lowercase()),
            _ => format!("pod/{}", self.pod),
        }
    }

    /// The request body.
    pub fn body(&self, format: Format) -> serde_json::Value {
        match format {
            Format::Json => serde_json::to_value(self).unwrap_or_default(),
            Format::Slack => {
                let cause = self.cause.as_deref().unwrap_or("unknown");
                let what = format!(
                    "{} in {} crashed: {} (exit {}{})",
                    self.container,
                    self.workload(),
                    cause,
                    self.exit_code,
                    self.reason
                        .as_deref()
                        .map(|r| format!(", {r}"))
                        .unwrap_or_default()
                );
                let mut text = format!(":rotating_light: *{}* `{what}`", self.namespace);
                if let Some(s) = &self.summary {
                    text.push_str(&format!("\n{s}"));
                }
                if let Some(f) = self.fix.first() {
                    text.push_str(&format!("\n*Fix:* {}", first_line(f)));
                }
                if let Some(c) = self.commands.first() {
                    text.push_str(&format!("\n*Next:* `{c}`"));
                }
                if self.suppressed > 0 {
                    text.push_str(&format!(
                        "\n_{} more termination(s) of this workload since the last message_",
                        self.suppressed
                    ));
                }
                if let Some(id) = self.history_id {
                    text.push_str(&format!(
                        "\nEvidence: `crashdoc history --export {id} -o crash.tar.gz`"
                    ));
                }
                serde_json::json!({
                    "text": text,
                    "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}],
                })
            }
        }
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

/// Per-workload rate limit.
#[derive(Debug)]
pub struct RateLimiter {
    interval: Duration,
    state: HashMap<String, (Instant, u64)>,
}

impl RateLimiter {
    pub fn new(interval: Duration) -> Self {
        RateLimiter {
            interval,
            state: HashMap::new(),
        }
    }

    /// `Some(suppressed since the last message)` when a message for this
    /// workload may go out now; `None` when it is held back (and counted).
    pub fn admit(&mut self, workload: &str, now: Instant) -> Option<u64> {
        // Forget workloads quiet for long, so memory follows the active ones.
        if self.state.len() > 10_000 {
            let interval = self.interval;
            self.state
                .retain(|_, (last, _)| now.duration_since(*last) < interval);
        }
        match self.state.get_mut(workload) {
            Some((last, held)) if now.duration_since(*last) < self.interval => {
                *held += 1;
                None
            }
            Some((last, held)) => {
                let n = *held;
                *last = now;
                *held = 0;
                Some(n)
            }
            None => {
                self.state.insert(workload.to_string(), (now, 0));
                Some(0)
            }
        }
    }
}

/// Sends notices to one webhook URL.
pub struct Webhook {
    url: hyper::Uri,
    format: Format,
    client: hyper_util::client::legacy::Client<
        hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
        http_body_util::Full<bytes::Bytes>,
    >,
    limiter: std::sync::Mutex<RateLimiter>,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL often carries a token (Slack's do): never print it whole.
        f.debug_struct("Webhook")
            .field("host", &self.url.host())
            .field("format", &self.format)
            .finish()
    }
}

/// The outcome of [`Webhook::notify`].
#[derive(Debug, PartialEq, Eq)]
pub enum Sent {
    Sent,
    Suppressed,
    Failed(String),
}

impl Webhook {
    pub fn new(url: &str, format: Format, interval: Duration) -> Result<Self, String> {
        let uri: hyper::Uri = url
            .parse()
            .map_err(|e| format!("invalid webhook URL: {e}"))?;
        match uri.scheme_str() {
            Some("https") | Some("http") => {}
            _ => return Err("the webhook URL must start with https:// or http://".into()),
        }
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_webpki_roots()
            .https_or_http()
            .enable_http1()
            .build();
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build(https);
        Ok(Webhook {
            url: uri,
            format,
            client,
            limiter: std::sync::Mutex::new(RateLimiter::new(interval)),
        })
    }

    /// Send a notice unless the workload's rate limit holds it back.
    /// Retries twice on a failure or a 5xx/429, 10 s timeout per attempt.
    pub async fn notify(&self, mut notice: Notice) -> Sent {
        let admitted = match self.limiter.lock() {
            Ok(mut l) => l.admit(
                &format!("{}/{}", notice.namespace, notice.workload()),
                Instant::now(),
            ),
            Err(_) => Some(0),
        };
        let Some(suppressed) = admitted else {
            return Sent::Suppressed;
        };
        notice.suppressed = suppressed;
        let body = notice.body(self.format).to_string();
        let mut last_err = String::new();
        for attempt in 0..3u32 {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(500 << attempt)).await;
            }
            let req = match hyper::Request::post(self.url.clone())
                .header(hyper::header::CONTENT_TYPE, "application/json")
                .header(
                    hyper::header::USER_AGENT,
                    concat!("crashdoc/", env!("CARGO_PKG_VERSION")),
                )
                .body(http_body_util::Full::new(bytes::Bytes::from(body.clone())))
            {
                Ok(r) => r,
                Err(e) => return Sent::Failed(e.to_string()),
            };
            match tokio::time::timeout(Duration::from_secs(10), self.client.request(req)).await {
                Ok(Ok(resp)) if resp.status().is_success() => return Sent::Sent,
                Ok(Ok(resp)) => {
                    last_err = format!("the webhook answered {}", resp.status());
                    let s = resp.status();
                    if !(s.is_server_error() || s == hyper::StatusCode::TOO_MANY_REQUESTS) {
                        break;
                    }
                }
                Ok(Err(e)) => {
                    last_err = crashdoc_core::redact::mask_urls_in(&format!(
                        "cannot reach the webhook: {e}"
                    ))
                    .into_owned()
                }
                Err(_) => last_err = "the webhook did not answer within 10 s".into(),
            }
        }
        Sent::Failed(last_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice() -> Notice {
        Notice {
            kind: "crashdoc.termination",
            namespace: "shop".into(),
            pod: "web-7d9f-abcde".into(),
            container: "app".into(),
            owner_kind: Some("Deployment".into()),
            owner: Some("web".into()),
            restart_count: 3,
            reason: Some("OOMKilled".into()),
            exit_code: 137,
            cause: Some("oom-killed".into()),
            confidence: Some("high".into()),
            summary: Some("app was killed at its 512Mi memory limit.".into()),
            fix: vec!["Raise the memory limit to 768Mi:\nresources: ...".into()],
            commands: vec!["kubectl -n shop top pod web-7d9f-abcde".into()],
            suppressed: 0,
            history_id: Some(42),
        }
    }

    #[test]
    fn rate_limit_holds_back_and_counts_per_workload() {
        let mut l = RateLimiter::new(Duration::from_secs(600));
        let t0 = Instant::now();
        assert_eq!(l.admit("shop/deployment/web", t0), Some(0));
        assert_eq!(
            l.admit("shop/deployment/web", t0 + Duration::from_secs(5)),
            None
        );
        assert_eq!(
            l.admit("shop/deployment/web", t0 + Duration::from_secs(9)),
            None
        );
        // Another workload is not held back by the first.
        assert_eq!(
            l.admit("shop/deployment/api", t0 + Duration::from_secs(9)),
            Some(0)
        );
        // After the interval, the next message says two were suppressed.
        assert_eq!(
            l.admit("shop/deployment/web", t0 + Duration::from_secs(601)),
            Some(2)
        );
        assert_eq!(
            l.admit("shop/deployment/web", t0 + Duration::from_secs(602)),
            None
        );
    }

    #[test]
    fn bodies() {
        let mut n = notice();
        n.suppressed = 4;
        let j = n.body(Format::Json);
        assert_eq!(j["kind"], "crashdoc.termination");
        assert_eq!(j["cause"], "oom-killed");
        assert_eq!(j["suppressed"], 4);
        let s = n.body(Format::Slack);
        let text = s["text"].as_str().unwrap();
        assert!(
            text.contains("app in deployment/web crashed: oom-killed (exit 137, OOMKilled)"),
            "{text}"
        );
        assert!(
            text.contains("*Fix:* Raise the memory limit to 768Mi:"),
            "{text}"
        );
        assert!(
            !text.contains("resources: ..."),
            "only the fix's first line: {text}"
        );
        assert!(text.contains("4 more termination(s)"));
        assert!(text.contains("--export 42"));
        assert_eq!(s["blocks"][0]["text"]["type"], "mrkdwn");
    }

    /// A webhook receiver answering each request with the next status.
    async fn receiver(
        statuses: Vec<u16>,
    ) -> (String, tokio::sync::mpsc::UnboundedReceiver<String>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", l.local_addr().unwrap());
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            for status in statuses {
                let (mut s, _) = l.accept().await.unwrap();
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                // Read the head, then the body by Content-Length.
                loop {
                    let n = s.read(&mut chunk).await.unwrap();
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).to_string();
                    if let Some(head_end) = text.find("\r\n\r\n") {
                        let len: usize = text
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse().unwrap())
                            })
                            .unwrap_or(0);
                        if buf.len() >= head_end + 4 + len {
                            tx.send(text[head_end + 4..].to_string()).unwrap();
                            break;
                        }
                    }
                    if n == 0 {
                        break;
                    }
                }
                let resp = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                );
                s.write_all(resp.as_bytes()).await.unwrap();
            }
        });
        (url, rx)
    }

    #[tokio::test]
    async fn posts_retries_server_errors_and_rate_limits() {
        let (url, mut rx) = receiver(vec![503, 200, 400]).await;
        let w = Webhook::new(&url, Format::Json, Duration::from_secs(600)).unwrap();
        // 503 then 200: retried, sent.
        assert_eq!(w.notify(notice()).await, Sent::Sent);
        for _ in 0..2 {
            let body: serde_json::Value = serde_json::from_str(&rx.recv().await.unwrap()).unwrap();
            assert_eq!(body["cause"], "oom-killed");
            assert_eq!(body["suppressed"], 0);
        }
        // The same workload again within the interval: held back, no request.
        assert_eq!(w.notify(notice()).await, Sent::Suppressed);
        // Another workload goes out; a 400 is not retried.
        let mut other = notice();
        other.owner = Some("api".into());
        assert!(matches!(w.notify(other).await, Sent::Failed(e) if e.contains("400")));
        assert!(rx.recv().await.is_some());
        assert!(rx.try_recv().is_err(), "a 4xx must not be retried");
    }

    #[tokio::test]
    async fn an_unreachable_webhook_fails_without_hanging() {
        // A port nothing listens on.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hook", l.local_addr().unwrap());
        drop(l);
        let w = Webhook::new(&url, Format::Slack, Duration::from_secs(1)).unwrap();
        assert!(matches!(w.notify(notice()).await, Sent::Failed(e) if e.contains("cannot reach")));
    }

    #[test]
    fn urls_are_checked_and_never_printed_whole() {
        assert!(Webhook::new("ftp://x", Format::Json, Duration::from_secs(1)).is_err());
        assert!(Webhook::new("not a url", Format::Json, Duration::from_secs(1)).is_err());
        let w = Webhook::new(
            "https://hooks.slack.com/services/T000/B000/SECRETTOKEN",
            Format::Slack,
            Duration::from_secs(1),
        )
        .unwrap();
        let dbg = format!("{w:?}");
        assert!(!dbg.contains("SECRETTOKEN"), "{dbg}");
    }
}
