//! Every check's fixtures: the documented example must be flagged by the
//! check, the near miss must not be.

use crashdoc_lint::checks::ALL;
use crashdoc_lint::{input::Input, lint};

fn findings_of(id: &str, yaml: &str, opts: &crashdoc_lint::Options) -> Vec<String> {
    let mut input = Input::default();
    input
        .read_bytes("fixture.yaml", yaml.as_bytes())
        .unwrap_or_else(|e| panic!("{id}: fixture does not parse: {e}"));
    assert!(!input.objects.is_empty(), "{id}: fixture has no object");
    lint(&input, opts)
        .findings
        .into_iter()
        .filter(|f| f.check.id == id)
        .map(|f| format!("{}:{} {}", f.source.file, f.source.line, f.message))
        .collect()
}

#[test]
fn every_documented_example_is_flagged() {
    let mut failed = Vec::new();
    for c in ALL {
        let f = findings_of(c.id, c.example, &c.fixture_options());
        if f.is_empty() {
            failed.push(c.id);
        }
    }
    assert!(failed.is_empty(), "examples not flagged: {failed:?}");
    println!("{} checks: every example flagged", ALL.len());
}

#[test]
fn no_near_miss_is_flagged() {
    let mut failed = Vec::new();
    for c in ALL {
        let f = findings_of(c.id, c.near_miss, &c.fixture_options());
        if !f.is_empty() {
            failed.push(format!("{}: {f:?}", c.id));
        }
    }
    assert!(failed.is_empty(), "near misses flagged: {failed:#?}");
}

#[test]
fn options_gate_the_checks_that_need_them() {
    // Without the capacity, the digest policy or the older render, these
    // checks say nothing even on their own example.
    for id in [
        "rollout/surge-exceeds-gpu-capacity",
        "rollout/surge-exceeds-memory-capacity",
        "image/no-digest",
        "diff/removed-key-still-referenced",
        "diff/image-changed",
        "diff/probe-changed",
        "diff/volume-removed",
    ] {
        let c = crashdoc_lint::check(id).unwrap();
        let f = findings_of(id, c.example, &crashdoc_lint::Options::default());
        assert!(f.is_empty(), "{id} ran without its option: {f:?}");
    }
}

#[test]
fn findings_cite_the_field_line() {
    let c = crashdoc_lint::check("probe/liveness-without-startup").unwrap();
    let mut input = Input::default();
    input
        .read_bytes("deploy.yaml", c.example.as_bytes())
        .unwrap();
    let r = lint(&input, &Default::default());
    let f = r.findings.iter().find(|f| f.check.id == c.id).unwrap();
    let line = c
        .example
        .lines()
        .position(|l| l.contains("livenessProbe:"))
        .unwrap()
        + 1;
    assert_eq!(f.source.line, line, "{:?}", f.source);
    assert_eq!(
        f.source.field,
        "spec.template.spec.containers[0].livenessProbe"
    );
    assert!(
        f.fix.contains("startupProbe:") && f.fix.contains("failureThreshold: "),
        "{}",
        f.fix
    );
}

#[test]
fn the_annotation_suppresses_only_the_named_checks() {
    let c = crashdoc_lint::check("image/mutable-tag").unwrap();
    let annotated = c.example.replace(
        "  name: web\n",
        "  name: web\n  annotations:\n    crashdoc.io/ignore: image/mutable-tag\n",
    );
    let mut input = Input::default();
    input.read_bytes("a.yaml", annotated.as_bytes()).unwrap();
    let r = lint(&input, &Default::default());
    assert!(r.findings.iter().all(|f| f.check.id != c.id));
    assert_eq!(r.suppressed, 1);
    // Another check on the same object still reports.
    assert!(
        r.findings
            .iter()
            .any(|f| f.check.id == "resources/no-memory")
    );
    let other = c.example.replace(
        "  name: web\n",
        "  name: web\n  annotations:\n    crashdoc.io/ignore: image/pull-policy-never\n",
    );
    let mut input = Input::default();
    input.read_bytes("a.yaml", other.as_bytes()).unwrap();
    assert!(
        lint(&input, &Default::default())
            .findings
            .iter()
            .any(|f| f.check.id == c.id)
    );
}

#[test]
fn the_config_file_suppresses_per_check_and_per_object() {
    let c = crashdoc_lint::check("image/mutable-tag").unwrap();
    let mut input = Input::default();
    input.read_bytes("a.yaml", c.example.as_bytes()).unwrap();
    let with = |cfg: &str| {
        let o = crashdoc_lint::Options::default()
            .with_config(crashdoc_lint::Config::parse(cfg).unwrap())
            .unwrap();
        lint(&input, &o).findings.iter().any(|f| f.check.id == c.id)
    };
    assert!(!with("ignore: [image/mutable-tag]\n"));
    assert!(!with("ignore: [\"image/mutable-tag:Deployment/web\"]\n"));
    assert!(with("ignore: [\"image/mutable-tag:Deployment/other\"]\n"));
    assert!(with("ignore: []\n"));
}

#[test]
fn secret_values_never_reach_any_output() {
    let yaml = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  password: hunter2-very-secret\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: x:latest\n        command: [\"sh\", \"-c\", \"curl -H 'Authorization: Bearer abcdefghijklmnop123456' http://x\"]\n        env:\n        - name: P\n          valueFrom:\n            secretKeyRef: {name: s, key: pasword}\n";
    let mut input = Input::default();
    input.read_bytes("s.yaml", yaml.as_bytes()).unwrap();
    let r = lint(&input, &Default::default());
    assert!(r.findings.iter().any(|f| f.check.id == "ref/missing-key"));
    let all = format!(
        "{}{}{}",
        crashdoc_lint::output::text(&r),
        crashdoc_lint::output::json(&r),
        crashdoc_lint::output::sarif(&r, "0")
    );
    assert!(!all.contains("hunter2"), "a Secret value leaked");
    assert!(
        !all.contains("abcdefghijklmnop123456"),
        "a token leaked: {all}"
    );
}

fn ids(yaml: &str) -> Vec<&'static str> {
    let mut input = Input::default();
    input.read_bytes("x.yaml", yaml.as_bytes()).unwrap();
    lint(&input, &Default::default())
        .findings
        .iter()
        .map(|f| f.check.id)
        .collect()
}

#[test]
fn ollama_is_not_a_slow_starter_but_vllm_is() {
    // Ollama serves at once and loads a model on the first request.
    let c = crashdoc_lint::check("probe/liveness-without-startup").unwrap();
    let ollama = c
        .example
        .replace("vllm/vllm-openai:v0.6.3", "ollama/ollama:0.4.1")
        .replace(
            "        args: [\"--model\", \"meta-llama/Llama-3.1-70B-Instruct\"]\n",
            "",
        );
    assert!(!ids(&ollama).contains(&c.id), "{ollama}");
    assert!(ids(c.example).contains(&c.id));
}

#[test]
fn a_secret_a_role_grants_by_name_is_made_at_run_time() {
    let c = crashdoc_lint::check("ref/missing-object").unwrap();
    let with_role = format!(
        "{}---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: init\nrules:\n- apiGroups: [\"\"]\n  resources: [secrets]\n  resourceNames: [api-credentials]\n  verbs: [get, create, update]\n",
        c.example
    );
    assert!(!ids(&with_role).contains(&c.id));
    assert!(ids(c.example).contains(&c.id));
}

#[test]
fn another_program_of_a_model_server_image_is_not_a_model_server() {
    // lmcache's cache server ships in a vLLM image: its explicit command names no server.
    let c = crashdoc_lint::check("probe/liveness-without-startup").unwrap();
    let other = c.example.replace(
        "        args: [\"--model\", \"meta-llama/Llama-3.1-70B-Instruct\"]\n",
        "        command: [\"/opt/venv/bin/lmcache_server\", \"0.0.0.0\", \"8080\"]\n",
    );
    assert!(!ids(&other).contains(&c.id), "{other}");
    let module = c.example.replace(
        "        args: [\"--model\", \"meta-llama/Llama-3.1-70B-Instruct\"]\n",
        "        command: [\"python3\", \"-m\", \"vllm.entrypoints.openai.api_server\", \"--model\", \"meta-llama/Llama-3.1-70B-Instruct\"]\n",
    );
    assert!(ids(&module).contains(&c.id), "{module}");
}

#[test]
fn a_bare_pod_with_the_default_restart_policy_restarts_a_one_shot() {
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: demo\nspec:\n  containers:\n  - name: demo\n    image: busybox:1.36\n    command: [\"echo\", \"hello\"]\n";
    assert!(ids(pod).contains(&"lifecycle/one-shot-under-controller"));
    let never = pod.replace(
        "spec:\n  containers:",
        "spec:\n  restartPolicy: Never\n  containers:",
    );
    assert!(!ids(&never).contains(&"lifecycle/one-shot-under-controller"));
}

#[test]
fn a_statefulset_claim_template_too_small_for_the_model_is_flagged() {
    let sts = |size: &str| {
        format!(
            r#"apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: tgi
spec:
  volumeClaimTemplates:
  - metadata: {{name: data}}
    spec:
      resources:
        requests: {{storage: {size}}}
  template:
    spec:
      containers:
      - name: tgi
        image: ghcr.io/huggingface/text-generation-inference:2.4.0
        env:
        - {{name: MODEL_ID, value: meta-llama/Llama-3.1-70B-Instruct}}
        volumeMounts:
        - {{name: data, mountPath: /data}}
"#
        )
    };
    let id = "resources/model-cache-pvc-too-small";
    let opts = crashdoc_lint::Options::default();
    let small = findings_of(id, &sts("100Gi"), &opts);
    assert_eq!(small.len(), 1, "{small:?}");
    assert!(
        small[0].contains("volumeClaimTemplate `data` of 100 GiB"),
        "{small:?}"
    );
    assert!(findings_of(id, &sts("300Gi"), &opts).is_empty());
}

#[test]
fn a_claim_of_another_namespace_is_not_the_model_cache() {
    let c = crashdoc_lint::check("resources/model-cache-pvc-too-small").unwrap();
    let id = c.id;
    let opts = crashdoc_lint::Options::default();
    let yaml = c
        .example
        .replacen("name: models\n", "name: models\n  namespace: other\n", 1)
        .replacen("name: vllm\n", "name: vllm\n  namespace: llm\n", 1);
    assert!(findings_of(id, &yaml, &opts).is_empty());
    let same = yaml.replacen("namespace: other", "namespace: llm", 1);
    assert_eq!(findings_of(id, &same, &opts).len(), 1);
}

#[test]
fn a_startup_measured_in_the_history_reaches_the_probe_budget_check() {
    use crashdoc_lint::{MeasuredStartup, apply_startups};
    let id = "probe/budget-below-measured-startup";
    let c = crashdoc_lint::check(id).unwrap();
    // The example without its hand-set annotation: nothing to compare with.
    let bare = c
        .example
        .replace(
            "  annotations:\n    crashdoc.io/startup-seconds: \"240\"\n",
            "",
        )
        .replacen("name: search\n", "name: search\n  namespace: prod\n", 1);
    let read = |yaml: &str| {
        let mut input = Input::default();
        input.read_bytes("d.yaml", yaml.as_bytes()).unwrap();
        input
    };
    let run = |input: &Input| -> Vec<String> {
        lint(input, &Default::default())
            .findings
            .into_iter()
            .filter(|f| f.check.id == id)
            .map(|f| f.message)
            .collect()
    };
    assert!(run(&read(&bare)).is_empty());
    let m = |ns: &str, kind: &str, secs: u64| MeasuredStartup {
        namespace: ns.into(),
        kind: kind.into(),
        name: "search".into(),
        seconds: secs,
        source: format!("history record {secs}"),
    };
    // Another namespace's or another kind's workload of the same name is not this one.
    let mut input = read(&bare);
    assert_eq!(
        apply_startups(
            &mut input,
            &[m("dev", "Deployment", 900), m("prod", "StatefulSet", 900)]
        ),
        0
    );
    assert!(run(&input).is_empty());
    // The longest of the workload's measurements is the one compared.
    let mut input = read(&bare);
    assert_eq!(
        apply_startups(
            &mut input,
            &[m("prod", "Deployment", 60), m("prod", "Deployment", 300)]
        ),
        1
    );
    let f = run(&input);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].contains("need 300s (history record 300)"), "{f:?}");
    // A measurement shorter than the budget (30 + 10 x 3 = 60 s) flags nothing.
    let mut input = read(&bare);
    apply_startups(&mut input, &[m("prod", "Deployment", 50)]);
    assert!(run(&input).is_empty());
    // A longer annotation set by hand is kept.
    let mut input = read(&c.example.replacen(
        "name: search\n",
        "name: search\n  namespace: prod\n",
        1,
    ));
    assert_eq!(
        apply_startups(&mut input, &[m("prod", "Deployment", 100)]),
        0
    );
    assert!(run(&input)[0].contains("need 240s"));
}
