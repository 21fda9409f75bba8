//! The hosts a pod's logs fail to reach: what a live collector looks up as
//! Services in its second wave. Pure: it reads log text only, with the same
//! catalog and target parser the `dependency-unreachable` rule uses.

use crate::Cause;
use crate::scan::{Catalog, LogKind};
use std::collections::BTreeSet;

/// At most this many hosts are chosen per pod.
pub const MAX_HOSTS: usize = 5;

/// The hosts named by the log lines that show a dependency unreachable,
/// sorted, without ports, IP addresses left out, at most [`MAX_HOSTS`].
/// `logs` are (file name, text) pairs.
pub fn unreachable_hosts<'a>(logs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<String> {
    let catalog = Catalog::global();
    let mut hosts: BTreeSet<String> = BTreeSet::new();
    for (name, text) in logs {
        let scan = catalog.scan_str(text, name, LogKind::Previous, None);
        for h in scan.hits_for(Cause::DependencyUnreachable) {
            if let Some(t) = crate::rules::logs::target_of(&h.line.text) {
                let host = t.split(':').next().unwrap_or(&t).to_string();
                if !host.chars().all(|c| c.is_ascii_digit() || c == '.') {
                    hosts.insert(host);
                }
            }
        }
    }
    hosts.into_iter().take(MAX_HOSTS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_connection_names_its_host() {
        let log = "starting\nError: connect ECONNREFUSED postgres.db.svc.cluster.local:5432\n";
        assert_eq!(
            unreachable_hosts([("logs-previous.app.txt", log)]),
            vec!["postgres.db.svc.cluster.local".to_string()]
        );
    }

    #[test]
    fn ip_addresses_and_healthy_logs_give_no_host() {
        let ip = "Error: connect ECONNREFUSED 10.0.0.7:5432\n";
        assert!(unreachable_hosts([("logs.app.txt", ip)]).is_empty());
        let healthy = "listening on postgres:5432\nready to accept connections\n";
        assert!(unreachable_hosts([("logs.app.txt", healthy)]).is_empty());
    }

    #[test]
    fn hosts_are_deduplicated_sorted_and_bounded() {
        let mut log = String::new();
        for h in [
            "redis", "db", "db", "kafka", "auth", "search", "queue", "mail",
        ] {
            log.push_str(&format!("Error: connect ECONNREFUSED {h}.data.svc:5432\n"));
        }
        let got = unreachable_hosts([("logs-previous.app.txt", log.as_str())]);
        assert_eq!(got.len(), MAX_HOSTS);
        assert_eq!(got[0], "auth.data.svc");
        let mut sorted = got.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(got, sorted);
    }
}
