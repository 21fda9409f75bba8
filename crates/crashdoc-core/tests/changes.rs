//! The revision comparison (issue 11) on the synthetic fixtures of
//! tests/fixtures/rollout (made by its make_fixtures.py): one folder per
//! diff kind, each with a near miss that must not be taken for a cause.

use crashdoc_core::Report;
use crashdoc_core::changes::ChangesReport;
use crashdoc_core::ingest::bundle::{PodFiles, read_memory};
use serde_json::Value;
use std::path::Path;

fn changes(case: &str) -> Value {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/rollout")
        .join(case);
    let ev = crashdoc_core::read_path(&dir).unwrap_or_else(|e| panic!("{case}: {e}"));
    let report = crashdoc_core::diagnose_all(&ev);
    let v: Value = serde_json::from_str(&crashdoc_core::render::json(&report)).unwrap();
    let pod = v["pods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| {
            ["web-7d9c6b5f8-x2k4p", "db-2", "agent-x7k2p"]
                .contains(&p["name"].as_str().unwrap_or(""))
        })
        .cloned()
        .unwrap_or_else(|| panic!("{case}: no crashing pod in {v}"));
    let mut c = pod["changes"].clone();
    c["commands"] = pod["diagnoses"][0]["commands"].clone();
    c["reasoning"] = pod["diagnoses"][0]["reasoning"].clone();
    c
}

fn coinciding(c: &Value) -> Vec<String> {
    c["coinciding"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

fn has_undo(c: &Value) -> bool {
    c["commands"]
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x.as_str().unwrap().contains("rollout undo"))
}

/// The rollback to revision 2 of the fixtures' Deployment.
const UNDO_WEB_2: &str = "kubectl rollout undo deployment/web -n shop --to-revision=2";

/// A case that coincides, compares `failing` with `healthy` and rolls back with `undo`.
fn assert_rolls_back(c: &Value, failing: u64, healthy: u64, undo: &str) {
    assert_eq!(c["verdict"], "coincides", "{c:#}");
    assert_eq!(c["revisions"]["failing"]["number"], failing);
    assert_eq!(c["revisions"]["last_healthy"]["number"], healthy);
    assert_eq!(c["undo"], undo);
}

/// The report compares revision `failing` with the last healthy `healthy`.
fn assert_compares(c: &ChangesReport, failing: u64, healthy: u64) {
    assert_eq!(c.revisions.failing.number, Some(failing));
    assert_eq!(
        c.revisions.last_healthy.as_ref().and_then(|h| h.number),
        Some(healthy)
    );
}

/// The crashing pod of the fixtures, in namespace shop, with these files.
fn web_pod(files: Vec<(String, Vec<u8>)>) -> PodFiles {
    PodFiles {
        namespace: "shop".into(),
        name: "web-7d9c6b5f8-x2k4p".into(),
        files,
    }
}

/// The file `name` of a fixture's files.
fn file(files: &[(String, Vec<u8>)], name: &str) -> Vec<u8> {
    files.iter().find(|(f, _)| f == name).unwrap().1.clone()
}

fn text(files: &[(String, Vec<u8>)], name: &str) -> String {
    String::from_utf8(file(files, name)).unwrap()
}

/// The fixture's replicasets.json with only the ReplicaSet `name` left.
fn only_replica_set(files: &[(String, Vec<u8>)], name: &str) -> Vec<u8> {
    let mut rs: Value = serde_json::from_slice(&file(files, "replicasets.json")).unwrap();
    rs["items"]
        .as_array_mut()
        .unwrap()
        .retain(|r| r["metadata"]["name"] == name);
    serde_json::to_vec(&rs).unwrap()
}

fn diagnose_paste(paste: &str, name: &str) -> Report {
    crashdoc_core::diagnose_all(&crashdoc_core::read_paste(paste.as_bytes(), name).unwrap())
}

/// A case whose change must coincide, named by this part of its sentence;
/// `undo` when the change is in the template (a rollback reverts it).
fn assert_coincides(case: &str, part: &str, undo: bool) {
    let c = changes(case);
    assert_eq!(c["verdict"], "coincides", "{case}: {c:#}");
    let co = coinciding(&c);
    assert!(co.iter().any(|s| s.contains(part)), "{case}: {co:?}");
    assert_eq!(has_undo(&c), undo, "{case}: {:?}", c["commands"]);
    assert_eq!(c["undo"].is_string(), undo, "{case}");
}

fn assert_nothing_explains(case: &str) {
    let c = changes(case);
    assert_eq!(c["verdict"], "nothing-explains", "{case}: {c:#}");
    assert!(coinciding(&c).is_empty(), "{case}");
    assert!(!has_undo(&c) && c["undo"].is_null(), "{case}");
    let why = c["reasoning"].to_string();
    assert!(
        why.contains("no change since revision 2 explains it"),
        "{case}: {why}"
    );
}

#[test]
fn an_image_change_coincides_and_the_undo_names_the_healthy_revision() {
    assert_coincides(
        "image",
        "spec.containers[app].image: registry.example.com/web:1.4.0 -> registry.example.com/web:1.5.0",
        true,
    );
    let c = changes("image");
    assert_rolls_back(&c, 3, 2, UNDO_WEB_2);
    assert_eq!(c["revisions"]["last_healthy"]["basis"], "ran-healthy");
    assert_eq!(c["first_crash"]["at"], "2026-11-30T10:00:40Z");
    assert_eq!(c["first_crash"]["node"], "ip-10-0-1-11");
    // Each crashing pod's first crash and node; the healthy pod is not one.
    let each: Vec<(&str, &str)> = c["first_crashes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["pod"].as_str().unwrap(), f["node"].as_str().unwrap()))
        .collect();
    assert_eq!(
        each,
        [
            ("web-7d9c6b5f8-x2k4p", "ip-10-0-1-11"),
            ("web-7d9c6b5f8-q9z7m", "ip-10-0-1-12")
        ]
    );
    // The timeline is in time order and joins rollouts and first crashes.
    let at: Vec<&str> = c["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["at"].as_str().unwrap())
        .collect();
    let mut sorted = at.clone();
    sorted.sort();
    assert_eq!(at, sorted);
    assert!(c["timeline"].to_string().contains("revision 3 rolled out"));
    // Its runs last 4 s: too fast to exec into, so the safe ways in are named.
    let cmds = c["commands"].to_string();
    assert!(
        cmds.contains("kubectl debug web-7d9c6b5f8-x2k4p -n shop -it --image=busybox --target=app"),
        "{cmds}"
    );
    assert!(
        cmds.contains("--copy-to=web-7d9c6b5f8-x2k4p-debug --container=app -- sleep infinity"),
        "{cmds}"
    );
}

#[test]
fn a_cosmetic_annotation_change_is_not_a_cause() {
    assert_nothing_explains("cosmetic");
    let c = changes("cosmetic");
    let t = c["template"].as_array().unwrap();
    assert_eq!(t.len(), 1, "{t:?}");
    assert_eq!(
        t[0]["path"],
        "metadata.annotations[kubectl.kubernetes.io/restartedAt]"
    );
    assert_eq!(t[0]["relevant"], false);
}

#[test]
fn env_resources_and_probe_changes_coincide() {
    assert_coincides(
        "env",
        "spec.containers[app].env[CACHE_MODE]: added value \"strict\"",
        true,
    );
    assert_coincides(
        "resources",
        "resources.limits[memory]: 256Mi -> 128Mi",
        true,
    );
    assert_coincides("probe", "livenessProbe.failureThreshold: 3 -> 1", true);
}

#[test]
fn the_same_quantity_written_otherwise_is_no_change() {
    assert_nothing_explains("resources-same-quantity");
}

#[test]
fn a_config_change_between_the_healthy_rollout_and_the_first_crash_coincides() {
    assert_coincides(
        "config",
        "ConfigMap web-config changed at 2026-11-30T09:58:00Z",
        false,
    );
    assert_nothing_explains("config-before-healthy");
}

#[test]
fn a_vanished_referenced_key_is_named_not_its_value() {
    assert_coincides(
        "config-key-gone",
        "lacks the referenced key(s) password",
        false,
    );
    let c = changes("config-key-gone");
    let s = c["config"].to_string();
    assert!(s.contains("spec.containers[app].env[DB_PASSWORD]"), "{s}");
}

#[test]
fn a_node_difference_every_crash_shares_coincides() {
    assert_coincides(
        "nodes",
        "every crashing pod runs on instance type m6i.large; the last healthy ones ran on m6i.2xlarge",
        false,
    );
    assert_nothing_explains("nodes-mixed");
    let c = changes("nodes-mixed");
    assert_eq!(c["nodes"][0]["shared_by_all_failing"], false);
}

#[test]
fn replica_sets_alone_compare_by_readiness() {
    assert_coincides("replicasets-only", "image", true);
    let c = changes("replicasets-only");
    assert_eq!(c["revisions"]["last_healthy"]["basis"], "still-ready");
}

#[test]
fn pasted_rollout_history_compares_two_revisions() {
    assert_coincides(
        "history",
        "web:1.4.0 -> registry.example.com/web:1.5.0",
        true,
    );
    let c = changes("history");
    assert_eq!(c["revisions"]["failing"]["number"], 3);
    assert_eq!(c["undo"], UNDO_WEB_2);
}

#[test]
fn two_pod_specs_of_different_revisions_compare() {
    let c = changes("two-pods");
    assert_eq!(c["verdict"], "coincides", "{c:#}");
    assert!(coinciding(&c)[0].contains("web:1.5.0"));
    // No revision numbers: nothing to roll back to by number.
    assert!(c["revisions"]["failing"]["number"].is_null());
    assert!(c["undo"].is_null());
}

#[test]
fn a_statefulset_compares_its_controller_revisions() {
    let c = changes("statefulset");
    assert_rolls_back(
        &c,
        5,
        4,
        "kubectl rollout undo statefulset/db -n shop --to-revision=4",
    );
    assert!(coinciding(&c)[0].starts_with("spec.containers[app].args"));
}

#[test]
fn a_single_owner_replica_set_is_nothing_to_compare() {
    // The owner chain's replicaset.json alone, as every bundle has it.
    let pod = web_pod(vec![
        ("pod.json".into(), br#"{"kind":"Pod","metadata":{"name":"web-7d9c6b5f8-x2k4p","namespace":"shop","labels":{"pod-template-hash":"7d9c6b5f8"}},"status":{"containerStatuses":[{"name":"app","restartCount":3,"lastState":{"terminated":{"exitCode":1,"finishedAt":"2026-11-30T10:20:04Z"}}}]}}"#.to_vec()),
        ("replicaset.json".into(), br#"{"kind":"ReplicaSet","metadata":{"name":"web-7d9c6b5f8","annotations":{"deployment.kubernetes.io/revision":"3"}},"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"app","image":"web:1.5.0"}]}}},"status":{"readyReplicas":0}}"#.to_vec()),
    ]);
    let report = crashdoc_core::diagnose_all(&read_memory(&[pod]));
    assert_eq!(report.pods.len(), 1);
    assert!(report.pods[0].changes.is_none());
    let json = crashdoc_core::render::json(&report);
    assert!(!json.contains("\"changes\""), "{json}");
    // And the shipped bundle example, which has no revision files.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bundle");
    let report = crashdoc_core::diagnose_all(&crashdoc_core::read_path(&dir).unwrap());
    assert!(report.pods.iter().all(|p| p.changes.is_none()));
}

fn fixture_files(case: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/rollout")
        .join(case);
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn a_tar_gz_bundle_carries_the_comparison() {
    use crashdoc_core::ingest::bundle::{read_tar_gz, write_tar_gz};
    let pod = web_pod(fixture_files("image"));
    let path = std::env::temp_dir().join(format!("crashdoc-changes-{}.tar.gz", std::process::id()));
    write_tar_gz(&path, &[pod], None, "2026-11-30T11:00:00Z").unwrap();
    let report = crashdoc_core::diagnose_all(&read_tar_gz(&path).unwrap());
    let _ = std::fs::remove_file(&path);
    assert_eq!(
        report.pods.len(),
        1,
        "the workload's other pods are not diagnosed"
    );
    let c = report.pods[0].changes.as_ref().expect("changes");
    assert_eq!(c.verdict, crashdoc_core::changes::Verdict::Coincides);
    assert_eq!(c.undo.as_deref(), Some(UNDO_WEB_2));
}

#[test]
fn a_paste_of_rollout_history_and_the_pod_is_read() {
    let files = fixture_files("history");
    let history = text(&files, "rollout-history.txt");
    let (rev2, rev3) = history.split_at(
        history
            .find("deployment.apps/web with revision #3")
            .unwrap(),
    );
    let paste = format!(
        "$ kubectl get pod web-7d9c6b5f8-x2k4p -n shop -o json\n{}\n$ kubectl rollout history deploy/web -n shop --revision=2\n{rev2}$ kubectl rollout history deploy/web -n shop --revision=3\n{rev3}",
        text(&files, "pod.json")
    );
    let report = diagnose_paste(&paste, "paste");
    let c = report.pods[0].changes.as_ref().expect("changes");
    assert_compares(c, 3, 2);
    assert!(c.coinciding[0].contains("web:1.5.0"), "{:?}", c.coinciding);
}

#[test]
fn no_secret_value_reaches_the_report() {
    let mut files = fixture_files("config-key-gone");
    // A Secret object beside the references, and a token-like literal env value.
    files.push((
        "secret.yaml".into(),
        b"apiVersion: v1\nkind: Secret\nmetadata:\n  name: web-db\n  managedFields:\n  - time: \"2026-11-30T09:30:00Z\"\ndata:\n  db-password: aHVudGVyMi1zM2NyZXQ=\n".to_vec(),
    ));
    let dir = std::env::temp_dir().join(format!("crashdoc-changes-secret-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (n, b) in &files {
        let mut b = b.clone();
        if n == "replicasets.json" {
            // Revision 3 adds a token as a literal value.
            let mut v: Value = serde_json::from_slice(&b).unwrap();
            v["items"][2]["spec"]["template"]["spec"]["containers"][0]["env"]
                .as_array_mut()
                .unwrap()
                .push(serde_json::json!({"name": "API_TOKEN", "value": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}));
            b = serde_json::to_vec(&v).unwrap();
        }
        std::fs::write(dir.join(n), b).unwrap();
    }
    let report = crashdoc_core::diagnose_all(&crashdoc_core::read_path(&dir).unwrap());
    let _ = std::fs::remove_dir_all(&dir);
    let all = format!(
        "{}{}{}",
        crashdoc_core::render::json(&report),
        crashdoc_core::render::terminal(&report, crashdoc_core::render::Style::plain()),
        crashdoc_core::render::markdown(&report)
    );
    for secret in [
        "aHVudGVyMi1zM2NyZXQ",
        "hunter2-s3cret",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    ] {
        assert!(!all.contains(secret), "{secret} leaked");
    }
    assert!(all.contains("password"), "key names are shown");
    let c = report.pods.iter().find_map(|p| p.changes.as_ref()).unwrap();
    assert!(
        c.coinciding
            .iter()
            .any(|s| s == "spec.containers[app].env[API_TOKEN]: added value (hidden)"),
        "{:?}",
        c.coinciding
    );
}

#[test]
fn one_revision_alone_is_no_comparison_and_offers_no_rollback() {
    let rs = br#"{"kind":"List","items":[{"kind":"ReplicaSet","metadata":{"name":"web-7d9c6b5f8","creationTimestamp":"2026-11-30T10:00:00Z","labels":{"pod-template-hash":"7d9c6b5f8"},"annotations":{"deployment.kubernetes.io/revision":"1"}},"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"app","image":"web:1.5.0"}]}}},"status":{"readyReplicas":0}}]}"#;
    let pod = br#"{"kind":"Pod","metadata":{"name":"web-7d9c6b5f8-x2k4p","namespace":"shop","labels":{"pod-template-hash":"7d9c6b5f8"}},"status":{"containerStatuses":[{"name":"app","restartCount":3,"state":{"waiting":{"reason":"CrashLoopBackOff"}},"lastState":{"terminated":{"exitCode":1,"finishedAt":"2026-11-30T10:20:04Z"}}}]}}"#;
    let files = |rs: &[u8]| {
        web_pod(vec![
            ("pod.json".into(), pod.to_vec()),
            ("replicasets.json".into(), rs.to_vec()),
        ])
    };
    let report = crashdoc_core::diagnose_all(&read_memory(&[files(rs)]));
    let c = report.pods[0].changes.as_ref().expect("changes");
    assert_eq!(c.verdict, crashdoc_core::changes::Verdict::NoComparison);
    assert!(c.revisions.last_healthy.is_none() && c.undo.is_none());
    assert_eq!(c.revisions.failing.number, Some(1));
    assert!(
        report.pods[0].diagnoses[0]
            .commands
            .iter()
            .all(|x| !x.contains("rollout undo"))
    );
    // The newest ReplicaSet fully ready and the pod of none of them: nothing failing to compare.
    let ready = String::from_utf8(rs.to_vec())
        .unwrap()
        .replace("\"readyReplicas\":0", "\"readyReplicas\":2")
        .replace(
            "\"pod-template-hash\":\"7d9c6b5f8\"},\"annotations",
            "\"pod-template-hash\":\"1111111111\"},\"annotations",
        )
        .replace("web-7d9c6b5f8\",\"creation", "web-1111111111\",\"creation");
    let report = crashdoc_core::diagnose_all(&read_memory(&[files(ready.as_bytes())]));
    assert!(
        report.pods[0].changes.is_none(),
        "{:?}",
        report.pods[0].changes
    );
}

#[test]
fn another_workloads_pod_in_the_same_paste_is_not_a_revision() {
    let files = fixture_files("two-pods");
    let text = String::from_utf8(files[0].1.clone()).unwrap();
    // The healthy pod becomes a pod of Deployment `api`, not of `web`.
    let other = text
        .replace("web-6d4cf56db6-hw8rt", "api-6d4cf56db6-hw8rt")
        .replace("\"web-6d4cf56db6\"", "\"api-6d4cf56db6\"");
    assert_ne!(other, text);
    let report = diagnose_paste(&other, "pods.yaml");
    let web = report
        .pods
        .iter()
        .find(|p| p.name.as_deref() == Some("web-7d9c6b5f8-x2k4p"))
        .unwrap();
    assert!(web.changes.is_none(), "{:?}", web.changes);
    // The same paste with both pods of `web` compares them.
    let report = diagnose_paste(&text, "pods.yaml");
    let with: Vec<_> = report
        .pods
        .iter()
        .filter(|p| p.changes.is_some())
        .map(|p| p.name.clone())
        .collect();
    // The crashing pod only: the healthy one has no crash to explain.
    assert_eq!(with, [Some("web-7d9c6b5f8-x2k4p".to_string())]);
}

#[test]
fn a_paste_of_the_pod_and_its_replica_sets_compares_them() {
    let files = fixture_files("replicasets-only");
    let paste = format!(
        "$ kubectl get pod web-7d9c6b5f8-x2k4p -n shop -o json\n{}\n$ kubectl get rs -n shop -l app=web -o json\n{}",
        text(&files, "pod.json"),
        text(&files, "replicasets.json")
    );
    let report = diagnose_paste(&paste, "paste");
    assert_eq!(report.pods.len(), 1);
    let c = report.pods[0].changes.as_ref().expect("changes");
    assert_compares(c, 3, 2);
    assert_eq!(c.undo.as_deref(), Some(UNDO_WEB_2));
}

#[test]
fn a_describe_and_two_history_revisions_find_the_failing_one_by_its_owner() {
    let history = text(&fixture_files("history"), "rollout-history.txt");
    // No pod object: the describe's `Controlled By` names revision 3's ReplicaSet.
    let describe = "Name:         web-7d9c6b5f8-x2k4p\nNamespace:    shop\nControlled By:  ReplicaSet/web-7d9c6b5f8\nContainers:\n  app:\n    Image:          registry.example.com/web:1.5.0\n    State:          Waiting\n      Reason:       CrashLoopBackOff\n    Last State:     Terminated\n      Reason:       Error\n      Exit Code:    1\n    Restart Count:  6\n";
    let paste = format!(
        "$ kubectl describe pod web-7d9c6b5f8-x2k4p -n shop\n{describe}$ kubectl rollout history deploy/web -n shop --revision=2\n{history}"
    );
    let report = diagnose_paste(&paste, "paste");
    let c = report.pods[0].changes.as_ref().expect("changes");
    assert_compares(c, 3, 2);
    assert_eq!(c.undo.as_deref(), Some(UNDO_WEB_2));
    // Owned by revision 2's ReplicaSet instead: revision 2 fails, nothing older to compare.
    let paste2 = paste.replace("ReplicaSet/web-7d9c6b5f8", "ReplicaSet/web-6d4cf56db6");
    let report = diagnose_paste(&paste2, "paste");
    let c = report.pods[0].changes.as_ref().expect("changes");
    assert_eq!(c.revisions.failing.number, Some(2));
    assert!(c.undo.is_none());
}

#[test]
fn a_cluster_info_dump_compares_a_namespaces_revisions() {
    let files = fixture_files("image");
    let get = |n: &str| file(&files, n);
    let dir = std::env::temp_dir().join(format!("crashdoc-changes-dump-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("shop")).unwrap();
    std::fs::write(dir.join("nodes.json"), get("nodes.json")).unwrap();
    std::fs::write(dir.join("shop/pods.json"), get("workload-pods.json")).unwrap();
    std::fs::write(dir.join("shop/replicasets.json"), get("replicasets.json")).unwrap();
    std::fs::write(dir.join("shop/events.json"), get("events.json")).unwrap();
    let report = crashdoc_core::diagnose_all(&crashdoc_core::read_path(&dir).unwrap());
    // The two crashing pods are analysed, each with the comparison.
    let names: Vec<_> = report.pods.iter().filter_map(|p| p.name.clone()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    for p in &report.pods {
        let c = p.changes.as_ref().expect("changes");
        assert_eq!(c.verdict, crashdoc_core::changes::Verdict::Coincides);
        assert_compares(c, 3, 2);
    }
    // Near miss: only revision 3's ReplicaSet in the dump: nothing to compare, no section.
    std::fs::write(
        dir.join("shop/replicasets.json"),
        only_replica_set(&files, "web-7d9c6b5f8"),
    )
    .unwrap();
    let mut pods: Value = serde_json::from_slice(&get("workload-pods.json")).unwrap();
    pods["items"]
        .as_array_mut()
        .unwrap()
        .retain(|p| p["metadata"]["labels"]["pod-template-hash"] == "7d9c6b5f8");
    std::fs::write(
        dir.join("shop/pods.json"),
        serde_json::to_vec(&pods).unwrap(),
    )
    .unwrap();
    let report = crashdoc_core::diagnose_all(&crashdoc_core::read_path(&dir).unwrap());
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!report.pods.is_empty());
    assert!(report.pods.iter().all(|p| p.changes.is_none()));
}

#[test]
fn a_printed_revision_against_a_json_one_says_only_the_real_change() {
    let image = fixture_files("image");
    // Revision 3 as its ReplicaSet (JSON), revision 2 only as printed history.
    let text = text(&fixture_files("history"), "rollout-history.txt");
    let rev2 = &text[..text.find("deployment.apps/web with revision #3").unwrap()];
    let pod = web_pod(vec![
        ("pod.json".into(), file(&image, "pod.json")),
        (
            "replicasets.json".into(),
            only_replica_set(&image, "web-7d9c6b5f8"),
        ),
        ("rollout-history.txt".into(), rev2.as_bytes().to_vec()),
    ]);
    let report = crashdoc_core::diagnose_all(&read_memory(&[pod]));
    let c = report.pods[0].changes.as_ref().expect("changes");
    assert_compares(c, 3, 2);
    let relevant: Vec<&str> = c
        .template
        .iter()
        .filter(|x| x.relevant)
        .map(|x| x.path.as_str())
        .collect();
    assert_eq!(relevant, ["spec.containers[app].image"], "{:?}", c.template);
}

#[test]
fn a_pods_spec_is_not_compared_with_a_replica_sets_template() {
    let image = fixture_files("image");
    // Revision 3's ReplicaSet is missing: the crashing pod's spec stands for it,
    // and admission-added pod fields must not read as changes against revision 2.
    let pod = web_pod(vec![
        ("pod.json".into(), file(&image, "pod.json")),
        (
            "replicasets.json".into(),
            only_replica_set(&image, "web-6d4cf56db6"),
        ),
    ]);
    let report = crashdoc_core::diagnose_all(&read_memory(&[pod]));
    let c = report.pods[0].changes.as_ref().expect("changes");
    assert_eq!(c.verdict, crashdoc_core::changes::Verdict::NoComparison);
    assert!(c.template.is_empty() && c.undo.is_none());
}

#[test]
fn a_daemonset_compares_its_controller_revisions_by_hash() {
    let c = changes("daemonset");
    assert_rolls_back(
        &c,
        8,
        7,
        "kubectl rollout undo daemonset/agent -n shop --to-revision=7",
    );
    let co = coinciding(&c);
    assert!(
        co.iter()
            .any(|s| s.contains("resources.limits[memory]: 256Mi -> 64Mi")),
        "{co:?}"
    );
    // pod-template-generation differs by design and is not reported.
    assert!(
        !c["template"]
            .to_string()
            .contains("pod-template-generation")
    );
}

/// The env fixture with its crashing pod never started: waiting in
/// `reason` (restartCount 0, no last state), since `started`, with only
/// the given events.
fn never_started(reason: &str, events: &[Value]) -> Vec<(String, Vec<u8>)> {
    let status = serde_json::json!({
        "phase": "Pending",
        "startTime": "2026-11-30T10:00:30Z",
        "containerStatuses": [{
            "name": "app", "ready": false, "restartCount": 0,
            "image": "registry.example.com/web:1.4.0",
            "state": {"waiting": {"reason": reason,
                "message": "couldn't find key cache_mode in ConfigMap shop/web-config"}}
        }]
    });
    let mut files = fixture_files("env");
    for (name, bytes) in &mut files {
        let mut v: Value = match name.as_str() {
            "pod.json" | "workload-pods.json" | "events.json" => {
                serde_json::from_slice(bytes).unwrap()
            }
            _ => continue,
        };
        match name.as_str() {
            "pod.json" => v["status"] = status.clone(),
            "workload-pods.json" => {
                for p in v["items"].as_array_mut().unwrap() {
                    if p["metadata"]["name"] == "web-7d9c6b5f8-x2k4p" {
                        p["status"] = status.clone();
                    }
                }
            }
            _ => v["items"] = Value::Array(events.to_vec()),
        }
        *bytes = serde_json::to_vec(&v).unwrap();
    }
    files
}

/// A container the kubelet cannot start (CreateContainerConfigError and
/// the other start failures of kuberuntime, images and sync_result) fails
/// its revision as a crash loop does: the comparison is made, the first
/// failure is the kubelet's first Failed event, else the pod's start.
/// Near miss: a container still being created has failed at nothing yet.
#[test]
fn a_container_that_never_starts_fails_its_revision_too() {
    let failed = serde_json::json!({
        "kind": "Event", "reason": "Failed", "type": "Warning",
        "message": "Error: couldn't find key cache_mode in ConfigMap shop/web-config",
        "involvedObject": {"kind": "Pod", "name": "web-7d9c6b5f8-x2k4p", "namespace": "shop"},
        "firstTimestamp": "2026-11-30T10:00:35Z", "lastTimestamp": "2026-11-30T10:20:10Z", "count": 90
    });
    let report = crashdoc_core::diagnose_all(&read_memory(&[web_pod(never_started(
        "CreateContainerConfigError",
        &[failed],
    ))]));
    let c = report.pods[0].changes.as_ref().expect("changes");
    assert_eq!(c.verdict, crashdoc_core::changes::Verdict::Coincides);
    assert_compares(c, 3, 2);
    let first = c.first_crash.as_ref().expect("first failure");
    assert_eq!(
        (first.at.as_str(), first.is_exact()),
        ("2026-11-30T10:00:35Z", true)
    );

    // No event dates it: the pod's start does, said as such.
    let report = crashdoc_core::diagnose_all(&read_memory(&[web_pod(never_started(
        "CreateContainerConfigError",
        &[],
    ))]));
    let c = report.pods[0].changes.as_ref().expect("changes");
    assert_eq!(c.verdict, crashdoc_core::changes::Verdict::Coincides);
    let first = c.first_crash.as_ref().expect("first failure");
    assert_eq!(first.at, "2026-11-30T10:00:30Z");
    assert_eq!(first.qualifier(), "failing since the pod started at ");

    let report = crashdoc_core::diagnose_all(&read_memory(&[web_pod(never_started(
        "ContainerCreating",
        &[],
    ))]));
    assert!(
        report.pods[0].changes.is_none(),
        "{:?}",
        report.pods[0].changes
    );
}
