//! Retries for reads that may safely be repeated: get and list are
//! idempotent, so a 429, a 5xx or a dropped connection is tried again with
//! back-off before it becomes an error.

use std::future::Future;
use std::time::Duration;

/// Whether an error is worth another try.
pub fn transient(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => matches!(s.code, 429 | 500 | 502 | 503 | 504),
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

/// Run a read up to `attempts` times, waiting 200 ms, 400 ms, ... between.
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
                tokio::time::sleep(delay).await;
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
}
