//! What is on its way to the history: every termination observed (and every
//! baseline set) holds a [`Token`] until it is stored or given up on. The
//! token is counted when taken and uncounted when dropped, wherever that
//! happens (stored, failed, a closed channel, a panicked task), so the
//! checkpoint's "nothing in flight" cannot drift.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// The count of tokens alive.
#[derive(Debug, Clone, Default)]
pub struct InFlight(Arc<AtomicI64>);

/// One thing on its way to the history; dropping it says it arrived (or
/// never will).
#[derive(Debug)]
#[must_use = "a token is counted until it is dropped"]
pub struct Token(Arc<AtomicI64>);

impl InFlight {
    pub fn token(&self) -> Token {
        self.0.fetch_add(1, Ordering::SeqCst);
        Token(self.0.clone())
    }

    /// How many tokens are alive.
    pub fn count(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }

    /// Nothing is on its way.
    pub fn idle(&self) -> bool {
        self.count() == 0
    }
}

impl Drop for Token {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_counts_until_dropped() {
        let f = InFlight::default();
        assert!(f.idle());
        let a = f.token();
        let b = f.token();
        assert_eq!(f.count(), 2);
        drop(a);
        assert_eq!(f.count(), 1);
        assert!(!f.idle());
        drop(b);
        assert!(f.idle());
    }

    #[test]
    fn a_token_lost_with_its_channel_is_uncounted() {
        let f = InFlight::default();
        let (tx, rx) = tokio::sync::mpsc::channel::<(u32, Token)>(4);
        tx.try_send((1, f.token())).unwrap();
        tx.try_send((2, f.token())).unwrap();
        assert_eq!(f.count(), 2);
        // The receiver goes away (a writer that stopped): what it held is
        // no longer on its way.
        drop(rx);
        assert!(f.idle());
        // A send that fails hands the token back, and it is dropped with it.
        assert!(tx.try_send((3, f.token())).is_err());
        assert!(f.idle());
    }

    #[test]
    fn clones_share_one_count() {
        let f = InFlight::default();
        let g = f.clone();
        let t = g.token();
        assert_eq!(f.count(), 1);
        drop(t);
        assert!(f.idle());
    }
}
