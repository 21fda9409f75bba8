//! Rendering a report: terminal text, JSON (the contract of
//! `shared/spec/output.md`) and a Markdown post-mortem note.

pub mod knowledge;
mod markdown;
mod terminal;

pub use markdown::markdown;
pub use terminal::{Style, terminal};

use crate::diagnose::Report;

/// The JSON contract, pretty-printed.
pub fn json(report: &Report) -> String {
    serde_json::to_string_pretty(report).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::diagnose_all;
    use crate::ingest::read_paste;

    fn report() -> Report {
        let paste = "Name:         web-1\nNamespace:    shop\nControlled By:  ReplicaSet/web-6468f86645\nContainers:\n  web:\n    Image: web:1\n    State:          Waiting\n      Reason:       CrashLoopBackOff\n    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n    Restart Count:  3\n    Limits:\n      memory:  256Mi\nEvents:\n  Type     Reason   Age  From     Message\n  ----     ------   ---  ----     -------\n  Warning  BackOff  1m   kubelet  Back-off restarting failed container web in pod web-1\n";
        diagnose_all(&read_paste(paste.as_bytes(), "paste").unwrap())
    }

    #[test]
    fn json_follows_the_contract() {
        let v: serde_json::Value = serde_json::from_str(&json(&report())).unwrap();
        assert_eq!(v["schema"], "crashdoc/v1");
        let d = &v["pods"][0]["diagnoses"][0];
        assert_eq!(d["cause"], "oom-killed");
        assert_eq!(d["confidence"], "high");
        assert_eq!(d["container"], "web");
        assert!(d["evidence"][0]["source"].is_string());
        assert!(d["evidence"][0]["ref"].is_string());
        assert!(d["evidence"][0]["text"].is_string());
        assert!(!d["fix"].as_array().unwrap().is_empty());
        assert!(
            d["commands"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c.as_str().unwrap().contains("-n shop"))
        );
        assert_eq!(v["pods"][0]["owner"], "ReplicaSet/web-6468f86645");
        assert!(v["pods"][0]["missing"].is_array());
    }

    #[test]
    fn snapshots() {
        let r = report();
        insta::assert_snapshot!("terminal", terminal(&r, Style::plain()));
        insta::assert_snapshot!("markdown", markdown(&r));
    }
}
