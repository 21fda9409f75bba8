//! The Prometheus metrics `crashdoc watch` serves on `/metrics`.
//!
//! kube-state-metrics exposes a container's last termination reason as a
//! gauge, so three OOMs in a row look like one. Here every termination is a
//! counter increment labelled with its reason and exit code, and the
//! counters add up to the restart count's increase even when single
//! terminations could not be seen (they count as `reason="Unobserved"`).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RestartLabels {
    pub namespace: String,
    pub owner_kind: String,
    pub owner: String,
    pub container: String,
    pub reason: String,
    pub exit_code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    pub kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CauseLabels {
    pub namespace: String,
    pub owner_kind: String,
    pub owner: String,
    pub cause: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    pub result: String,
}

/// Every metric, cheap to clone (each is an `Arc` inside).
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    pub restarts: Family<RestartLabels, Counter>,
    pub captures: Family<KindLabels, Counter>,
    pub diagnoses: Family<CauseLabels, Counter>,
    pub notifications: Family<ResultLabels, Counter>,
    pub watch_restarts: Counter,
    pub watch_events: Counter,
    pub watched_pods: Gauge,
    pub tracked_containers: Gauge,
    pub queue_depth: Gauge,
    pub leader: Gauge,
    pub last_event: Gauge<f64, AtomicU64>,
    pub capture_seconds: Histogram,
    pub history_captures: Gauge,
    pub history_stored_bytes: Gauge,
    pub history_max_captures: Gauge,
    pub history_max_bytes: Gauge,
    pub history_pruned: Counter,
    pub spool_depth: Gauge,
    pub spool_oldest_age: Gauge<f64, AtomicU64>,
    pub spool_dropped: Counter,
    pub spool_drained: Counter,
    pub database_up: Gauge,
    /// The spool's counters as last exported (the counters above grow by
    /// the difference).
    spool_seen: std::sync::Mutex<(u64, u64)>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("crashdoc");
        let m = Metrics {
            restarts: Family::default(),
            captures: Family::default(),
            diagnoses: Family::default(),
            notifications: Family::default(),
            watch_restarts: Counter::default(),
            watch_events: Counter::default(),
            watched_pods: Gauge::default(),
            tracked_containers: Gauge::default(),
            queue_depth: Gauge::default(),
            leader: Gauge::default(),
            last_event: Gauge::default(),
            capture_seconds: Histogram::new([0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0]),
            history_captures: Gauge::default(),
            history_stored_bytes: Gauge::default(),
            history_max_captures: Gauge::default(),
            history_max_bytes: Gauge::default(),
            history_pruned: Counter::default(),
            spool_depth: Gauge::default(),
            spool_oldest_age: Gauge::default(),
            spool_dropped: Counter::default(),
            spool_drained: Counter::default(),
            database_up: Gauge::default(),
            spool_seen: std::sync::Mutex::new((0, 0)),
            registry: Registry::default(),
        };
        registry.register(
            "container_restarts",
            "Container terminations seen, by workload, container, termination reason and exit code (reason=\"Unobserved\": restarts whose state the watch could not read)",
            m.restarts.clone(),
        );
        registry.register(
            "captures",
            "Captures stored in the history, by kind (full, partial, status_only, failed)",
            m.captures.clone(),
        );
        registry.register(
            "diagnoses",
            "Captured terminations by workload and diagnosed cause (the first-ranked one)",
            m.diagnoses.clone(),
        );
        registry.register(
            "notifications",
            "Webhook notifications, by result (sent, failed, suppressed)",
            m.notifications.clone(),
        );
        registry.register(
            "watch_restarts",
            "Times the pod watch was (re)started with a full list: start, 410 Gone, errors",
            m.watch_restarts.clone(),
        );
        registry.register(
            "watch_events",
            "Pod watch events processed",
            m.watch_events.clone(),
        );
        registry.register(
            "watched_pods",
            "Pods in the watch's view",
            m.watched_pods.clone(),
        );
        registry.register(
            "tracked_containers",
            "Containers with a termination baseline in memory",
            m.tracked_containers.clone(),
        );
        registry.register(
            "capture_queue_depth",
            "Terminations waiting for their evidence to be captured",
            m.queue_depth.clone(),
        );
        registry.register(
            "leader",
            "1 while this replica holds the leader Lease (or runs without leader election)",
            m.leader.clone(),
        );
        registry.register(
            "last_watch_event_timestamp_seconds",
            "Unix time of the last pod watch event",
            m.last_event.clone(),
        );
        registry.register(
            "capture_duration_seconds",
            "Time to capture one termination's evidence and diagnose it",
            m.capture_seconds.clone(),
        );
        registry.register(
            "history_captures",
            "Captures held in the history database",
            m.history_captures.clone(),
        );
        registry.register(
            "history_stored_bytes",
            "Bytes held in the history database (bundles plus records): what --max-bytes bounds",
            m.history_stored_bytes.clone(),
        );
        registry.register(
            "history_max_captures",
            "The history's --max-captures retention limit (0: none)",
            m.history_max_captures.clone(),
        );
        registry.register(
            "history_max_bytes",
            "The history's --max-bytes retention limit in bytes (0: none)",
            m.history_max_bytes.clone(),
        );
        registry.register(
            "history_pruned",
            "Captures removed from the history by the retention limits",
            m.history_pruned.clone(),
        );
        registry.register(
            "history_spool_depth",
            "Captures waiting in the local spool while the history database is unreachable (--db postgres://...)",
            m.spool_depth.clone(),
        );
        registry.register(
            "history_spool_oldest_age_seconds",
            "Age of the oldest capture waiting in the spool (0: none)",
            m.spool_oldest_age.clone(),
        );
        registry.register(
            "history_spool_dropped",
            "Captures not kept because the spool was full (--spool-max-captures, --spool-max-mib)",
            m.spool_dropped.clone(),
        );
        registry.register(
            "history_spool_drained",
            "Captures moved from the spool into the database",
            m.spool_drained.clone(),
        );
        registry.register(
            "history_database_up",
            "1 while the history database answers, 0 while captures go to the spool",
            m.database_up.clone(),
        );
        Metrics { registry, ..m }
    }

    /// The spool's state ([`crashdoc_history::Store::spool`]); a store
    /// without a spool (a file) is always up with an empty spool.
    pub fn spool(&self, s: Option<&crashdoc_history::SpoolStats>, now: jiff::Timestamp) {
        let Some(s) = s else {
            self.database_up.set(1);
            return;
        };
        let clamp = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        self.spool_depth.set(clamp(s.depth));
        let age = s
            .oldest
            .filter(|_| s.depth > 0)
            .map_or(0.0, |t| (now - t).as_secs_f64().max(0.0));
        self.spool_oldest_age.set(age);
        self.database_up.set(i64::from(!s.database_down));
        let mut seen = self
            .spool_seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.spool_dropped.inc_by(s.dropped.saturating_sub(seen.0));
        self.spool_drained.inc_by(s.drained.saturating_sub(seen.1));
        *seen = (seen.0.max(s.dropped), seen.1.max(s.drained));
    }

    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// The history's size and its retention limits (0 for a limit not set),
    /// so that an alert can tell when the count or size limits, rather than
    /// the age limit, start dropping old captures.
    pub fn history(
        &self,
        stats: &crashdoc_history::Stats,
        retention: &crashdoc_history::Retention,
    ) {
        let clamp = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        self.history_captures.set(clamp(stats.captures));
        self.history_stored_bytes.set(clamp(stats.stored_bytes));
        self.history_max_captures
            .set(clamp(retention.max_captures.unwrap_or(0)));
        self.history_max_bytes
            .set(clamp(retention.max_bytes.unwrap_or(0)));
    }

    /// Count a termination.
    pub fn restart(&self, l: RestartLabels, n: u64) {
        self.restarts.get_or_create(&l).inc_by(n);
    }

    pub fn capture(&self, kind: &str) {
        self.captures
            .get_or_create(&KindLabels { kind: kind.into() })
            .inc();
    }

    /// Count a captured termination's diagnosed cause, by workload (the same
    /// `namespace`, `owner_kind`, `owner` labels as the restarts).
    pub fn diagnosis(&self, namespace: &str, owner_kind: &str, owner: &str, cause: &str) {
        self.diagnoses
            .get_or_create(&CauseLabels {
                namespace: namespace.into(),
                owner_kind: owner_kind.into(),
                owner: owner.into(),
                cause: cause.into(),
            })
            .inc();
    }

    pub fn notification(&self, result: &str) {
        self.notifications
            .get_or_create(&ResultLabels {
                result: result.into(),
            })
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restarts_are_counters_with_their_labels() {
        let m = Metrics::new();
        let l = RestartLabels {
            namespace: "shop".into(),
            owner_kind: "Deployment".into(),
            owner: "web".into(),
            container: "app".into(),
            reason: "OOMKilled".into(),
            exit_code: "137".into(),
        };
        m.restart(l.clone(), 1);
        m.restart(l, 2);
        m.capture("full");
        m.diagnosis("shop", "Deployment", "web", "oom-killed");
        let text = m.encode();
        assert!(text.contains(
            "crashdoc_container_restarts_total{namespace=\"shop\",owner_kind=\"Deployment\",owner=\"web\",container=\"app\",reason=\"OOMKilled\",exit_code=\"137\"} 3"
        ), "{text}");
        assert!(
            text.contains("crashdoc_captures_total{kind=\"full\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("crashdoc_diagnoses_total{namespace=\"shop\",owner_kind=\"Deployment\",owner=\"web\",cause=\"oom-killed\"} 1"),
            "{text}"
        );
        assert!(text.contains("# TYPE crashdoc_leader gauge"));
        assert!(text.trim_end().ends_with("# EOF"));
    }

    #[test]
    fn history_size_and_limits_are_exported() {
        let m = Metrics::new();
        let stats = crashdoc_history::Stats {
            captures: 950,
            stored_bytes: 3 << 20,
            ..Default::default()
        };
        let limits = crashdoc_history::Retention {
            max_age: None,
            max_captures: Some(1000),
            max_bytes: Some(1 << 30),
        };
        m.history(&stats, &limits);
        let text = m.encode();
        for line in [
            "crashdoc_history_captures 950",
            "crashdoc_history_stored_bytes 3145728",
            "crashdoc_history_max_captures 1000",
            "crashdoc_history_max_bytes 1073741824",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line} in {text}");
        }
        // A limit that is not set reads 0, not the previous value.
        m.history(&stats, &crashdoc_history::Retention::default());
        let text = m.encode();
        assert!(
            text.lines().any(|l| l == "crashdoc_history_max_captures 0"),
            "{text}"
        );
        assert!(
            text.lines().any(|l| l == "crashdoc_history_max_bytes 0"),
            "{text}"
        );
    }

    #[test]
    fn the_spool_is_exported_as_depth_age_and_counters() {
        let m = Metrics::new();
        let now: jiff::Timestamp = "2026-12-02T03:00:00Z".parse().unwrap();
        let mut s = crashdoc_history::SpoolStats {
            depth: 12,
            oldest: Some("2026-12-02T02:59:30Z".parse().unwrap()),
            dropped: 3,
            drained: 0,
            database_down: true,
        };
        m.spool(Some(&s), now);
        s.dropped = 5;
        s.drained = 12;
        s.depth = 0;
        s.database_down = false;
        m.spool(Some(&s), now);
        let text = m.encode();
        for line in [
            "crashdoc_history_spool_depth 0",
            "crashdoc_history_spool_oldest_age_seconds 0.0",
            "crashdoc_history_spool_dropped_total 5",
            "crashdoc_history_spool_drained_total 12",
            "crashdoc_history_database_up 1",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line} in {text}");
        }
        // Near miss: with captures waiting, the age is the oldest one's.
        s.depth = 2;
        m.spool(Some(&s), now);
        assert!(
            m.encode()
                .lines()
                .any(|l| l == "crashdoc_history_spool_oldest_age_seconds 30.0")
        );
    }
}
