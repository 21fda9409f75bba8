//! Retries for reads that may safely be repeated: get and list are
//! idempotent, so a 429, a 5xx or a dropped connection is tried again with
//! back-off before it becomes an error. A server that says how long to
//! wait (`Retry-After`, carried into the Status by [`crate::stack`]) is
//! waited for, up to [`MAX_RETRY_AFTER`]. A request abandoned after the
//! timeout is not tried again: the source is reported missing instead.

use std::future::Future;
use std::time::Duration;

/// The longest a server's Retry-After is waited for before a retry.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(10);

/// Whether an error is worth another try.
pub fn transient(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => matches!(s.code, 429 | 500 | 502 | 503 | 504),
        kube::Error::Service(e) if e.downcast_ref::<crate::stack::TimedOut>().is_some() => false,
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

/// What the server asked to wait (its Status's `details.retryAfterSeconds`),
/// at most [`MAX_RETRY_AFTER`].
pub fn server_delay(e: &kube::Error) -> Option<Duration> {
    match e {
        kube::Error::Api(s) => s
            .details
            .as_ref()
            .map(|d| d.retry_after_seconds)
            .filter(|&n| n > 0)
            .map(|n| Duration::from_secs(n.into()).min(MAX_RETRY_AFTER)),
        _ => None,
    }
}

/// Run a read up to `attempts` times, waiting 200 ms, 400 ms, ... between,
/// or what the server asked when it asked for longer.
pub async fn read<T, F, Fut>(attempts: u32, mut f: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let mut delay = Duration::from_millis(200);
    let mut n = 1;
    loop {
        match f().await {
            Err(e) if n < attempts && transient(&e) => {
                tokio::time::sleep(server_delay(&e).map_or(delay, |s| s.max(delay))).await;
                delay *= 2;
                n += 1;
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn transient_errors_are_retried_then_reported() {
        let calls = AtomicU32::new(0);
        let r: Result<(), _> = read(3, || {
            calls.fetch_add(1, Ordering::SeqCst);
            async {
                Err(kube::Error::Service(Box::new(std::io::Error::other(
                    "connection reset",
                ))))
            }
        })
        .await;
        assert!(r.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 3);

        let calls = AtomicU32::new(0);
        let r = read(3, || {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                if n == 0 {
                    Err(kube::Error::Service(Box::new(std::io::Error::other(
                        "reset",
                    ))))
                } else {
                    Ok(n)
                }
            }
        })
        .await;
        assert_eq!(r.unwrap(), 1);
    }

    #[tokio::test]
    async fn other_errors_are_not_retried() {
        let calls = AtomicU32::new(0);
        let r: Result<(), _> = read(3, || {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err(kube::Error::LinesCodecMaxLineLengthExceeded) }
        })
        .await;
        assert!(r.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    fn throttled(secs: u32) -> kube::Error {
        let status: kube::core::Status = serde_json::from_value(serde_json::json!({
            "code": 429, "reason": "TooManyRequests", "message": "slow down",
            "details": {"retryAfterSeconds": secs}}))
        .unwrap();
        kube::Error::Api(Box::new(status))
    }

    /// How long (tokio's paused clock) two throttled attempts and a third
    /// that succeeds take.
    async fn waited(secs: u32) -> Duration {
        let start = tokio::time::Instant::now();
        let calls = AtomicU32::new(0);
        let r = read(3, || {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move { if n < 2 { Err(throttled(secs)) } else { Ok(n) } }
        })
        .await;
        assert_eq!(r.unwrap(), 2);
        start.elapsed()
    }

    #[tokio::test(start_paused = true)]
    async fn the_wait_follows_the_servers_retry_after_up_to_ten_seconds() {
        // 3 s twice, against the 200 + 400 ms back-off.
        assert_eq!(waited(3).await, Duration::from_secs(6));
        // An hour is cut to 10 s.
        assert_eq!(waited(3600).await, Duration::from_secs(20));
        // Without a Retry-After: the back-off.
        assert_eq!(waited(0).await, Duration::from_millis(600));
    }

    #[tokio::test]
    async fn a_timed_out_request_is_not_retried() {
        let calls = AtomicU32::new(0);
        let r: Result<(), _> = read(3, || {
            calls.fetch_add(1, Ordering::SeqCst);
            async {
                Err(kube::Error::Service(Box::new(crate::stack::TimedOut(
                    Duration::from_secs(1),
                ))))
            }
        })
        .await;
        assert!(r.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
