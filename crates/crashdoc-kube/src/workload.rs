//! `scan` as people read it: pods grouped by the workload a person manages
//! (the Deployment, not its ReplicaSet; the CronJob, not its Job), one line
//! per group saying why. Pure functions over the collected bundle entries
//! and the diagnosis, no API calls.
//!
//! The owner chain is the one the collector already reads (collect.rs,
//! `owner_chain`): the pod's controller reference, then `replicaset.json`'s
//! Deployment or `job.json`'s CronJob. Without those objects (RBAC), a
//! ReplicaSet named `<deployment>-<pod-template-hash>` is folded to its
//! Deployment: the deployment controller names its ReplicaSets so
//! (kubernetes pkg/controller/deployment/sync.go, `getNewReplicaSet`).

use crashdoc_core::diagnose::{PodReport, Report};
use crashdoc_core::ingest::bundle::PodFiles;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use std::collections::HashMap;
use std::fmt;

/// The object a person manages a pod through.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Workload {
    /// Deployment, StatefulSet, DaemonSet, Job, CronJob, ReplicaSet, ...; `Pod` for a bare pod.
    pub kind: String,
    pub name: String,
}

impl fmt::Display for Workload {
    /// `Deployment/web`, as the report's `owner` is written.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.kind, self.name)
    }
}

impl Workload {
    /// The short form `crashdoc diagnose` and kubectl take: `deploy/web`, `sts/db`.
    pub fn target(&self) -> String {
        let k = match self.kind.as_str() {
            "Deployment" => "deploy",
            "StatefulSet" => "sts",
            "DaemonSet" => "ds",
            "ReplicaSet" => "rs",
            "Job" => "job",
            "CronJob" => "cronjob",
            "Pod" => "pod",
            other => return format!("{}/{}", other.to_ascii_lowercase(), self.name),
        };
        format!("{k}/{}", self.name)
    }
}

fn file<'a>(pf: &'a PodFiles, name: &str) -> Option<&'a [u8]> {
    pf.files
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, b)| b.as_slice())
}

fn controller(meta: &ObjectMeta) -> Option<&OwnerReference> {
    let refs = meta.owner_references.as_ref()?;
    refs.iter()
        .find(|o| o.controller == Some(true))
        .or(refs.first())
}

/// The workload of one collected pod: its controller, followed one step up
/// where a person manages the pod from there. `None` when there is no
/// `pod.json` (not a live capture).
pub fn of_pod(pf: &PodFiles) -> Option<Workload> {
    let pod: Pod = serde_json::from_slice(file(pf, "pod.json")?).ok()?;
    let Some(owner) = controller(&pod.metadata) else {
        return Some(Workload {
            kind: "Pod".into(),
            name: pod.metadata.name.clone().unwrap_or_else(|| pf.name.clone()),
        });
    };
    let up = |file_name: &str, kind: &str| -> Option<Workload> {
        let meta = match file_name {
            "replicaset.json" => {
                serde_json::from_slice::<ReplicaSet>(file(pf, file_name)?)
                    .ok()?
                    .metadata
            }
            _ => {
                serde_json::from_slice::<Job>(file(pf, file_name)?)
                    .ok()?
                    .metadata
            }
        };
        // The object read must be the pod's owner.
        if meta.name.as_deref() != Some(owner.name.as_str()) {
            return None;
        }
        let o = controller(&meta)?;
        (o.kind == kind).then(|| Workload {
            kind: o.kind.clone(),
            name: o.name.clone(),
        })
    };
    match owner.kind.as_str() {
        "ReplicaSet" => {
            if let Some(w) = up("replicaset.json", "Deployment") {
                return Some(w);
            }
            let hash = pod
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("pod-template-hash"));
            if let Some(d) = hash.and_then(|h| owner.name.strip_suffix(&format!("-{h}")))
                && !d.is_empty()
            {
                return Some(Workload {
                    kind: "Deployment".into(),
                    name: d.to_string(),
                });
            }
        }
        "Job" => {
            if let Some(w) = up("job.json", "CronJob") {
                return Some(w);
            }
        }
        _ => {}
    }
    Some(Workload {
        kind: owner.kind.clone(),
        name: owner.name.clone(),
    })
}

/// The exit code of `container`'s last termination (or current, when it is
/// terminated now), from `pod.json`. Without a container: the first one
/// that has terminated.
pub fn exit_code(pf: &PodFiles, container: Option<&str>) -> Option<i32> {
    let pod: Pod = serde_json::from_slice(file(pf, "pod.json")?).ok()?;
    let status = pod.status?;
    status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
        .filter(|c| container.is_none_or(|n| c.name == n))
        .find_map(|c| {
            let last = c.last_state.as_ref().and_then(|s| s.terminated.as_ref());
            let now = c.state.as_ref().and_then(|s| s.terminated.as_ref());
            last.or(now).map(|t| t.exit_code)
        })
}

/// One line of `scan`: the unhealthy pods of one workload.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadGroup {
    pub namespace: String,
    pub workload: Workload,
    /// The group's pods, in the report's order.
    pub pods: Vec<String>,
    /// The first pod's first-ranked cause.
    pub cause: String,
    /// Pods of the group whose first cause is another one.
    pub other_causes: usize,
    /// The first pod's first diagnosis, shortened to one line.
    pub why: String,
    pub container: Option<String>,
    pub exit_code: Option<i32>,
}

/// A summary on one line of at most `max` characters, cut at a word.
pub fn shorten(s: &str, max: usize) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() <= max {
        return one;
    }
    let cut: String = one.chars().take(max.saturating_sub(1)).collect();
    let cut = match cut.rfind(' ') {
        Some(i) if i > max / 2 => &cut[..i],
        _ => cut.as_str(),
    };
    format!(
        "{}…",
        cut.trim_end_matches(|c: char| c == ',' || c == ';' || c == ':' || c.is_whitespace())
    )
}

/// The width `why` is shortened to.
pub const WHY_WIDTH: usize = 80;

fn workload_of(p: &PodReport, files: &HashMap<(&str, &str), &PodFiles>) -> Workload {
    let (ns, name) = (
        p.namespace.as_deref().unwrap_or_default(),
        p.name.as_deref().unwrap_or_default(),
    );
    files
        .get(&(ns, name))
        .and_then(|pf| of_pod(pf))
        .or_else(|| {
            // Not a live capture: what the report says, if anything.
            let (kind, n) = p.owner.as_deref()?.split_once('/')?;
            Some(Workload {
                kind: kind.into(),
                name: n.into(),
            })
        })
        .unwrap_or_else(|| Workload {
            kind: "Pod".into(),
            name: name.into(),
        })
}

/// The report's pods grouped by namespace and workload, most pods first.
pub fn group(report: &Report, pods: &[PodFiles]) -> Vec<WorkloadGroup> {
    let files: HashMap<(&str, &str), &PodFiles> = pods
        .iter()
        .map(|pf| ((pf.namespace.as_str(), pf.name.as_str()), pf))
        .collect();
    let mut groups: Vec<WorkloadGroup> = Vec::new();
    for p in &report.pods {
        let Some(d) = p.diagnoses.first() else {
            continue;
        };
        let namespace = p.namespace.clone().unwrap_or_default();
        let name = p.name.clone().unwrap_or_default();
        let workload = workload_of(p, &files);
        match groups
            .iter_mut()
            .find(|g| g.namespace == namespace && g.workload == workload)
        {
            Some(g) => {
                g.pods.push(name);
                if g.cause != d.cause.id() {
                    g.other_causes += 1;
                }
            }
            None => {
                let pf = files.get(&(namespace.as_str(), name.as_str()));
                groups.push(WorkloadGroup {
                    exit_code: pf.and_then(|pf| exit_code(pf, d.container.as_deref())),
                    namespace,
                    workload,
                    pods: vec![name],
                    cause: d.cause.id().into(),
                    other_causes: 0,
                    why: shorten(&d.summary, WHY_WIDTH),
                    container: d.container.clone(),
                })
            }
        }
    }
    groups.sort_by(|a, b| {
        b.pods
            .len()
            .cmp(&a.pods.len())
            .then_with(|| a.namespace.cmp(&b.namespace))
            .then_with(|| a.workload.cmp(&b.workload))
    });
    groups
}

/// `scan`'s table: one line per workload, columns aligned as kubectl aligns
/// them; `wide` adds the container and its exit code.
pub fn table(groups: &[WorkloadGroup], wide: bool) -> String {
    let mut rows: Vec<Vec<String>> = vec![
        ["NAMESPACE", "WORKLOAD", "PODS", "CAUSE"]
            .into_iter()
            .chain(wide.then_some(["CONTAINER", "EXIT"]).into_iter().flatten())
            .chain(["WHY"])
            .map(str::to_string)
            .collect(),
    ];
    for g in groups {
        let cause = if g.other_causes > 0 {
            format!("{} (+{} other)", g.cause, g.other_causes)
        } else {
            g.cause.clone()
        };
        let mut r = vec![
            g.namespace.clone(),
            g.workload.target(),
            g.pods.len().to_string(),
            cause,
        ];
        if wide {
            r.push(g.container.clone().unwrap_or_else(|| "-".into()));
            r.push(g.exit_code.map_or_else(|| "-".into(), |c| c.to_string()));
        }
        r.push(g.why.clone());
        rows.push(r);
    }
    let cols = rows[0].len();
    let widths: Vec<usize> = (0..cols)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in &rows {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            if i + 1 == cols {
                line.push_str(cell);
            } else {
                line.push_str(cell);
                let pad = widths[i] - cell.chars().count() + 3;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// `scan`'s text output: the table of [`group`]s and a summary line, or
/// the line saying no pod is unhealthy.
pub fn text(report: &Report, pods: &[PodFiles], total: usize, wide: bool) -> String {
    if report.pods.is_empty() {
        return format!("scanned {total} pods: none is unhealthy\n");
    }
    let groups = group(report, pods);
    format!(
        "{}\nscanned {total} pods, {} unhealthy in {} workloads; `crashdoc diagnose WORKLOAD -n NS` for one in full, `--format json` for all\n",
        table(&groups, wide),
        report.pods.len(),
        groups.len()
    )
}

/// `scan --format json`: each `pods[]` entry gains `workload`
/// (`Deployment/web`), nothing else changes.
pub fn annotate(v: &mut serde_json::Value, report: &Report, pods: &[PodFiles]) {
    let files: HashMap<(&str, &str), &PodFiles> = pods
        .iter()
        .map(|pf| ((pf.namespace.as_str(), pf.name.as_str()), pf))
        .collect();
    let Some(out) = v.get_mut("pods").and_then(|p| p.as_array_mut()) else {
        return;
    };
    for (entry, p) in out.iter_mut().zip(&report.pods) {
        if let Some(o) = entry.as_object_mut() {
            o.insert(
                "workload".into(),
                serde_json::Value::String(workload_of(p, &files).to_string()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pf(name: &str, files: &[(&str, serde_json::Value)]) -> PodFiles {
        PodFiles {
            namespace: "shop".into(),
            name: name.into(),
            files: files
                .iter()
                .map(|(n, v)| (n.to_string(), serde_json::to_vec(v).unwrap()))
                .collect(),
        }
    }

    fn pod(name: &str, owner: Option<(&str, &str)>, hash: Option<&str>) -> serde_json::Value {
        let mut meta = json!({"name": name, "namespace": "shop"});
        if let Some((k, n)) = owner {
            meta["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": k, "name": n, "uid": "u", "controller": true}]);
        }
        if let Some(h) = hash {
            meta["labels"] = json!({"pod-template-hash": h});
        }
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
               "status": {"containerStatuses": [
                   {"name": "sidecar", "ready": true, "restartCount": 0, "image": "x", "imageID": "", "state": {"running": {}}},
                   {"name": "app", "ready": false, "restartCount": 4, "image": "x", "imageID": "",
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                    "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}})
    }

    fn owned(kind: &str, name: &str, owner: (&str, &str)) -> serde_json::Value {
        json!({"metadata": {"name": name, "namespace": "shop",
               "ownerReferences": [{"apiVersion": "apps/v1", "kind": owner.0, "name": owner.1, "uid": "u", "controller": true}]},
               "kind": kind})
    }

    fn w(kind: &str, name: &str) -> Option<Workload> {
        Some(Workload {
            kind: kind.into(),
            name: name.into(),
        })
    }

    #[test]
    fn deployment_through_its_replicaset() {
        let p = pf(
            "web-7d9f8c6b5-abcde",
            &[
                (
                    "pod.json",
                    pod(
                        "web-7d9f8c6b5-abcde",
                        Some(("ReplicaSet", "web-7d9f8c6b5")),
                        Some("7d9f8c6b5"),
                    ),
                ),
                (
                    "replicaset.json",
                    owned("ReplicaSet", "web-7d9f8c6b5", ("Deployment", "web")),
                ),
            ],
        );
        assert_eq!(of_pod(&p), w("Deployment", "web"));
        assert_eq!(of_pod(&p).unwrap().target(), "deploy/web");
    }

    #[test]
    fn replicaset_folded_by_its_hash_when_it_could_not_be_read() {
        let p = pf(
            "web-7d9f8c6b5-abcde",
            &[(
                "pod.json",
                pod(
                    "web-7d9f8c6b5-abcde",
                    Some(("ReplicaSet", "web-7d9f8c6b5")),
                    Some("7d9f8c6b5"),
                ),
            )],
        );
        assert_eq!(of_pod(&p), w("Deployment", "web"));
        // Near misses: a ReplicaSet of its own (no hash label, nothing read),
        // and a hash that is not the name's suffix.
        let bare = pf(
            "cache-x1",
            &[(
                "pod.json",
                pod("cache-x1", Some(("ReplicaSet", "cache")), None),
            )],
        );
        assert_eq!(of_pod(&bare), w("ReplicaSet", "cache"));
        let other = pf(
            "web-1",
            &[(
                "pod.json",
                pod("web-1", Some(("ReplicaSet", "web-abc")), Some("zzz")),
            )],
        );
        assert_eq!(of_pod(&other), w("ReplicaSet", "web-abc"));
    }

    #[test]
    fn replicaset_of_no_deployment_stays_a_replicaset() {
        let p = pf(
            "cache-x1",
            &[
                (
                    "pod.json",
                    pod("cache-x1", Some(("ReplicaSet", "cache")), None),
                ),
                (
                    "replicaset.json",
                    json!({"metadata": {"name": "cache", "namespace": "shop"}}),
                ),
            ],
        );
        assert_eq!(of_pod(&p), w("ReplicaSet", "cache"));
    }

    #[test]
    fn cronjob_through_its_job_and_a_job_of_its_own() {
        let p = pf(
            "nightly-29000000-x",
            &[
                (
                    "pod.json",
                    pod(
                        "nightly-29000000-x",
                        Some(("Job", "nightly-29000000")),
                        None,
                    ),
                ),
                (
                    "job.json",
                    owned("Job", "nightly-29000000", ("CronJob", "nightly")),
                ),
            ],
        );
        assert_eq!(of_pod(&p), w("CronJob", "nightly"));
        assert_eq!(of_pod(&p).unwrap().target(), "cronjob/nightly");
        let plain = pf(
            "train-x",
            &[("pod.json", pod("train-x", Some(("Job", "train")), None))],
        );
        assert_eq!(of_pod(&plain), w("Job", "train"));
        // A job.json of another Job is not this pod's owner.
        let mismatch = pf(
            "train-x",
            &[
                ("pod.json", pod("train-x", Some(("Job", "train")), None)),
                ("job.json", owned("Job", "other", ("CronJob", "nightly"))),
            ],
        );
        assert_eq!(of_pod(&mismatch), w("Job", "train"));
    }

    #[test]
    fn statefulset_daemonset_and_bare_pods() {
        let s = pf(
            "db-0",
            &[("pod.json", pod("db-0", Some(("StatefulSet", "db")), None))],
        );
        assert_eq!(of_pod(&s), w("StatefulSet", "db"));
        assert_eq!(of_pod(&s).unwrap().target(), "sts/db");
        let d = pf(
            "agent-x",
            &[(
                "pod.json",
                pod("agent-x", Some(("DaemonSet", "agent")), None),
            )],
        );
        assert_eq!(of_pod(&d), w("DaemonSet", "agent"));
        let bare = pf("debug", &[("pod.json", pod("debug", None, None))]);
        assert_eq!(of_pod(&bare), w("Pod", "debug"));
        // No pod.json: nothing to read.
        assert_eq!(of_pod(&pf("x", &[])), None);
    }

    #[test]
    fn exit_code_of_the_named_container() {
        let p = pf("web", &[("pod.json", pod("web", None, None))]);
        assert_eq!(exit_code(&p, Some("app")), Some(137));
        assert_eq!(exit_code(&p, None), Some(137));
        // The running sidecar has not terminated; an unknown container has nothing.
        assert_eq!(exit_code(&p, Some("sidecar")), None);
        assert_eq!(exit_code(&p, Some("nope")), None);
    }

    #[test]
    fn shorten_cuts_at_a_word_and_keeps_short_ones() {
        assert_eq!(shorten("short  and\nsweet", 80), "short and sweet");
        let long = "container vllm was OOMKilled at its 16Gi memory limit while loading 14.25 GiB of weights; raise the limit";
        let s = shorten(long, 60);
        assert!(s.chars().count() <= 60, "{s}");
        assert!(s.ends_with('…'), "{s}");
        assert!(long.starts_with(s.trim_end_matches('…')), "{s}");
        assert!(!s.trim_end_matches('…').ends_with(' '));
        // Exactly at the limit: unchanged.
        let exact = "a".repeat(60);
        assert_eq!(shorten(&exact, 60), exact);
        // Multi-byte characters are not split.
        assert!(shorten(&"é".repeat(100), 10).chars().count() <= 10);
    }

    /// Pods diagnosed by the real pipeline (bundle reader, rules).
    fn live(pods: &[PodFiles]) -> Report {
        crashdoc_core::diagnose::diagnose_all(&crashdoc_core::ingest::bundle::read_memory(pods))
    }

    fn in_ns(mut p: PodFiles, ns: &str) -> PodFiles {
        p.namespace = ns.into();
        for (n, b) in &mut p.files {
            if n == "pod.json" {
                let mut v: serde_json::Value = serde_json::from_slice(b).unwrap();
                v["metadata"]["namespace"] = json!(ns);
                *b = serde_json::to_vec(&v).unwrap();
            }
        }
        p
    }

    fn three_pods() -> Vec<PodFiles> {
        vec![
            pf(
                "web-7d9f8c6b5-aaaaa",
                &[
                    (
                        "pod.json",
                        pod(
                            "web-7d9f8c6b5-aaaaa",
                            Some(("ReplicaSet", "web-7d9f8c6b5")),
                            Some("7d9f8c6b5"),
                        ),
                    ),
                    (
                        "replicaset.json",
                        owned("ReplicaSet", "web-7d9f8c6b5", ("Deployment", "web")),
                    ),
                ],
            ),
            pf(
                "web-5c4b3a291-bbbbb",
                &[(
                    "pod.json",
                    pod(
                        "web-5c4b3a291-bbbbb",
                        Some(("ReplicaSet", "web-5c4b3a291")),
                        Some("5c4b3a291"),
                    ),
                )],
            ),
            pf(
                "db-0",
                &[("pod.json", pod("db-0", Some(("StatefulSet", "db")), None))],
            ),
        ]
    }

    #[test]
    fn group_by_workload_across_replicasets() {
        let pods = three_pods();
        let report = live(&pods);
        assert_eq!(report.pods.len(), 3);
        let g = group(&report, &pods);
        assert_eq!(g.len(), 2, "{g:#?}");
        // Two ReplicaSets of one Deployment are one line, first (more pods).
        assert_eq!(g[0].workload, w("Deployment", "web").unwrap());
        assert_eq!(g[0].pods.len(), 2);
        assert_eq!(g[0].cause, "oom-killed");
        assert_eq!(g[0].other_causes, 0);
        assert_eq!(g[0].container.as_deref(), Some("app"));
        assert_eq!(g[0].exit_code, Some(137));
        let first = &report.pods[0].diagnoses[0].summary;
        assert_eq!(g[0].why, shorten(first, WHY_WIDTH));
        assert!(!g[0].why.is_empty() && g[0].why.chars().count() <= WHY_WIDTH);
        assert_eq!(g[1].workload, w("StatefulSet", "db").unwrap());
        // Near miss: the same Deployment name in another namespace is another group.
        let mut pods = three_pods();
        pods[1] = in_ns(pods[1].clone(), "staging");
        let report = live(&pods);
        let g = group(&report, &pods);
        assert_eq!(g.len(), 3, "{g:#?}");
        assert!(g.iter().all(|x| x.pods.len() == 1));
    }

    #[test]
    fn json_gains_workload_and_keeps_everything_else() {
        let pods = three_pods();
        let report = live(&pods);
        let before = serde_json::to_value(&report).unwrap();
        let mut v = before.clone();
        annotate(&mut v, &report, &pods);
        let got: Vec<&str> = v["pods"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["workload"].as_str().unwrap())
            .collect();
        assert_eq!(got, ["Deployment/web", "Deployment/web", "StatefulSet/db"]);
        // Removing `workload` gives back the report as it was.
        for p in v["pods"].as_array_mut().unwrap() {
            p.as_object_mut().unwrap().remove("workload");
        }
        assert_eq!(v, before);
        // `owner` is still the pod's controller, as before.
        assert_eq!(before["pods"][0]["owner"], "ReplicaSet/web-7d9f8c6b5");
    }

    #[test]
    fn table_aligns_columns_and_wide_adds_container_and_exit() {
        let g = vec![
            WorkloadGroup {
                namespace: "llm".into(),
                workload: Workload {
                    kind: "Deployment".into(),
                    name: "vllm".into(),
                },
                pods: vec!["vllm-1".into(), "vllm-2".into()],
                cause: "oom-killed".into(),
                other_causes: 1,
                why: "OOMKilled at 16Gi".into(),
                container: Some("server".into()),
                exit_code: Some(137),
            },
            WorkloadGroup {
                namespace: "shop".into(),
                workload: Workload {
                    kind: "StatefulSet".into(),
                    name: "db".into(),
                },
                pods: vec!["db-0".into()],
                cause: "bad-config".into(),
                other_causes: 0,
                why: "unknown flag --foo".into(),
                container: None,
                exit_code: None,
            },
        ];
        let t = table(&g, false);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3, "{t}");
        assert!(
            lines[0].starts_with("NAMESPACE   WORKLOAD      PODS   CAUSE"),
            "{t}"
        );
        assert!(!lines[0].contains("EXIT"), "{t}");
        assert!(lines[1].contains("deploy/vllm") && lines[1].contains("oom-killed (+1 other)"));
        assert!(lines[2].contains("sts/db") && lines[2].ends_with("unknown flag --foo"));
        // WHY starts in the same column on every line.
        let col = lines[0].find("WHY").unwrap();
        assert_eq!(lines[2].find("unknown flag").unwrap(), col, "{t}");
        let w = table(&g, true);
        let wl: Vec<&str> = w.lines().collect();
        assert!(wl[0].contains("CONTAINER") && wl[0].contains("EXIT"), "{w}");
        assert!(wl[1].contains("server") && wl[1].contains("137"), "{w}");
        assert!(wl[2].contains(" -  "), "{w}");
    }

    #[test]
    fn text_is_the_table_and_a_summary_or_says_none_is_unhealthy() {
        let pods = three_pods();
        let report = live(&pods);
        let t = text(&report, &pods, 7, false);
        let groups = group(&report, &pods);
        assert_eq!(
            t,
            format!(
                "{}\nscanned 7 pods, {} unhealthy in {} workloads; `crashdoc diagnose WORKLOAD -n NS` for one in full, `--format json` for all\n",
                table(&groups, false),
                report.pods.len(),
                groups.len()
            )
        );
        let none = live(&[]);
        assert_eq!(
            text(&none, &[], 7, true),
            "scanned 7 pods: none is unhealthy\n"
        );
    }
}
