//! Rendering a report: terminal text, JSON (the contract of
//! `shared/spec/output.md`) and a Markdown post-mortem note.

mod changes;
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

    #[test]
    fn a_collector_hint_is_rendered_apart_from_why() {
        use crate::ingest::bundle::{PodFiles, read_memory};
        let pod = PodFiles {
            namespace: "ml".into(),
            name: "web-1".into(),
            files: vec![
                ("pod.json".into(), br#"{"kind":"Pod","metadata":{"name":"web-1","namespace":"ml"},"status":{"containerStatuses":[{"name":"web","restartCount":2,"lastState":{"terminated":{"exitCode":137,"reason":"OOMKilled"}}}]}}"#.to_vec()),
                ("missing.json".into(), br#"[{"what":"events","why":"forbidden","hint":"grant `list` on `events`"},{"what":"usage","why":"no metrics-server"}]"#.to_vec()),
            ],
        };
        let r = diagnose_all(&read_memory(&[pod]));
        let t = terminal(&r, Style::plain());
        assert!(
            t.contains("- events: forbidden\n      hint: grant `list` on `events`\n"),
            "{t}"
        );
        assert!(t.contains("- usage: no metrics-server\n"), "{t}");
        assert!(!t.contains("no metrics-server\n      hint"), "{t}");
        let m = markdown(&r);
        assert!(
            m.contains("collect events: forbidden (hint: grant `list` on `events`)"),
            "{m}"
        );
        let v: serde_json::Value = serde_json::from_str(&json(&r)).unwrap();
        let missing = v["pods"][0]["missing"].as_array().unwrap();
        let events = missing.iter().find(|m| m["what"] == "events").unwrap();
        assert_eq!(events["why"], "forbidden");
        assert_eq!(events["hint"], "grant `list` on `events`");
        let usage = missing.iter().find(|m| m["what"] == "usage").unwrap();
        assert!(usage.get("hint").is_none());
    }
}
