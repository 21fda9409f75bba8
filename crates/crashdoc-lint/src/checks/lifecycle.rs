//! Lifecycle: what the container does once started, and what it may do.

use super::probes::numbers;
use super::{Check, Ctx, Severity, each_container, old_twin};
use crate::Hit;
use crate::k8s::{self, ContainerRef};
use crashdoc_core::Cause;
use serde_json::Value;

/// The last command a container runs: through `sh -c`, after `&&`, `;` or newlines.
fn last_command(c: &ContainerRef) -> Vec<String> {
    let mut words = c.strings("command");
    words.extend(c.strings("args"));
    if words.len() >= 3
        && matches!(
            words[0].rsplit('/').next(),
            Some("sh" | "bash" | "ash" | "dash")
        )
        && words[1].starts_with('-')
        && words[1].contains('c')
    {
        let script = words[2..].join(" ");
        let last = script
            .split(['\n', ';'])
            .flat_map(|s| s.split("&&"))
            .map(str::trim)
            .filter(|s| !s.is_empty() && !s.starts_with('#'))
            .last()
            .unwrap_or("")
            .to_string();
        return last.split_whitespace().map(str::to_string).collect();
    }
    words
}

/// Why a command ends by itself, when it is a known one-shot.
fn one_shot(cmd: &[String]) -> Option<String> {
    let mut w: Vec<&str> = cmd.iter().map(String::as_str).collect();
    while w
        .first()
        .is_some_and(|x| *x == "exec" || x.rsplit('/').next() == Some("env") && w.len() > 1)
    {
        w.remove(0);
    }
    let first = w.first()?.rsplit('/').next()?;
    let line = w.join(" ");
    match first {
        "sleep" => {
            let arg = w.get(1)?;
            if arg.contains("inf") {
                return None;
            }
            let n: String = arg.chars().take_while(|c| c.is_ascii_digit()).collect();
            return (!n.is_empty()).then(|| format!("`sleep {arg}` ends after {arg}"));
        }
        "echo" | "true" | "exit" | "date" | "printenv" | "cp" | "mkdir" | "chmod" | "chown"
        | "touch" | "rm" | "ln" => {
            return Some(format!("`{first}` ends at once"));
        }
        "kubectl" | "helm"
            if !line.contains(" proxy")
                && !line.contains("port-forward")
                && !line.contains(" -w")
                && !line.contains("--watch") =>
        {
            return Some(format!("`{first} ...` ends when the call returns"));
        }
        "curl" | "wget" => return Some(format!("`{first}` ends when the request returns")),
        _ => {}
    }
    const MIGRATIONS: &[&str] = &[
        "manage.py migrate",
        "db:migrate",
        "alembic upgrade",
        "flyway migrate",
        "migrate deploy",
        "migrate:latest",
        "liquibase update",
        "sequelize db:migrate",
        "goose up",
        "migrate -path",
        "rake db:",
        "knex migrate",
        "diesel migration run",
        "sqlx migrate run",
    ];
    MIGRATIONS
        .iter()
        .find(|m| line.contains(*m))
        .map(|m| format!("`{m}` is a migration: it ends when the schema is up to date"))
}

pub static ONE_SHOT: Check = Check {
    id: "lifecycle/one-shot-under-controller",
    cause: Cause::ExitZero,
    severity: Severity::Error,
    what: "A Deployment, StatefulSet, DaemonSet or ReplicaSet (or a bare Pod with restartPolicy Always, the default) runs a command that ends by itself: a migration, a script whose last step ends (`echo`, `kubectl apply`, `curl`), `sleep N`.",
    why: "These controllers' pods have restartPolicy Always: when the process exits, even with 0, the kubelet starts it again, with a growing back-off: CrashLoopBackOff with exit code 0 and `Completed`. One-shot work belongs in a Job (or an init container before the server).",
    fix: "Move the one-shot into a Job (a Helm hook for migrations) or an initContainer, and let the main container run the long-lived server.",
    source: "Kubernetes docs, Pod Lifecycle (restartPolicy Always restarts containers that exit, whatever the code) and Jobs; the exit-zero rule of crashdoc-core reads the same pattern from the status.",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: migrate
spec:
  template:
    spec:
      containers:
      - name: migrate
        image: ghcr.io/acme/shop:5.2.0
        command: ["python", "manage.py", "migrate", "--noinput"]
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop
spec:
  template:
    spec:
      initContainers:
      - name: migrate
        image: ghcr.io/acme/shop:5.2.0
        command: ["python", "manage.py", "migrate", "--noinput"]
      containers:
      - name: shop
        image: ghcr.io/acme/shop:5.2.0
        command: ["sh", "-c", "python manage.py migrate --noinput && exec gunicorn shop.wsgi"]
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        let obj = cx.obj(oi);
        // A bare Pod restarts too: its restartPolicy defaults to Always.
        if !k8s::restarts_on_exit(&obj.kind, &obj.value) {
            return;
        }
        each_container(cx, oi, false, |_, _, _, c| {
            let last = last_command(c);
            let Some(why) = one_shot(&last) else { return };
            if c.v.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
                return;
            }
            let field = if c.v.get("command").is_some() {
                "command"
            } else {
                "args"
            };
            out.push(Hit {
                path: c.path.clone().key(field),
                container: Some(c.name.clone()),
                message: format!(
                    "`{}` of this {} runs a one-shot: {why}; the kubelet restarts it after every exit 0, into CrashLoopBackOff",
                    c.name, obj.kind
                ),
                fix: format!(
                    "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {}-{}\nspec:\n  backoffLimit: 3\n  template:\n    spec:\n      restartPolicy: OnFailure\n      containers:\n      - name: {}\n        image: {}\n        command: [\"sh\", \"-c\", {}]",
                    obj.name,
                    c.name,
                    c.name,
                    c.image(),
                    serde_json::to_string(&crashdoc_core::redact::redact(&last.join(" "))).unwrap_or_default()
                ),
            });
        });
    },
};

pub static RESTART_POLICY: Check = Check {
    id: "lifecycle/restart-policy-conflict",
    cause: Cause::BadConfig,
    severity: Severity::Error,
    what: "A restartPolicy the controller does not allow: not Always in a Deployment, StatefulSet, DaemonSet or ReplicaSet template; Always in a Job or CronJob; an init container's restartPolicy other than Always (the only value, for sidecars).",
    why: "The API server rejects the object (`Unsupported value: \"OnFailure\": supported values: \"Always\"`), so the rollout never happens and the old pods, or none, keep running; `helm upgrade` fails half-way through the release.",
    fix: "Use restartPolicy: Always for long-running workloads, OnFailure or Never for Jobs; put one-shot work in a Job.",
    source: "Kubernetes source pkg/apis/apps/validation (template restartPolicy must be Always), pkg/apis/batch/validation (Always is not allowed for Jobs), pkg/apis/core/validation (init container restartPolicy: only Always).",
    example: r#"apiVersion: batch/v1
kind: Job
metadata:
  name: report
spec:
  template:
    spec:
      restartPolicy: Always
      containers:
      - name: report
        image: ghcr.io/acme/report:1.1.0
"#,
    near_miss: r#"apiVersion: batch/v1
kind: Job
metadata:
  name: report
spec:
  template:
    spec:
      restartPolicy: OnFailure
      containers:
      - name: report
        image: ghcr.io/acme/report:1.1.0
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        let obj = cx.obj(oi);
        let Some((spec, sp)) = k8s::pod_spec(obj) else {
            return;
        };
        let policy = spec.get("restartPolicy").and_then(Value::as_str);
        let bad = match (obj.kind.as_str(), policy) {
            (k, Some(p)) if k8s::expects_service(k) && p != "Always" => Some(("Always", p)),
            ("Job" | "CronJob", Some("Always")) => Some(("OnFailure", "Always")),
            _ => None,
        };
        if let Some((want, have)) = bad {
            out.push(Hit {
                path: sp.clone().key("restartPolicy"),
                container: None,
                message: format!(
                    "a {} does not accept restartPolicy {have}: the API server rejects it",
                    obj.kind
                ),
                fix: format!("restartPolicy: {want}"),
            });
        }
        for c in k8s::containers(spec, &sp, true).iter().filter(|c| c.init) {
            if let Some(p) = c.str("restartPolicy")
                && p != "Always"
            {
                out.push(Hit {
                    path: c.path.clone().key("restartPolicy"),
                    container: Some(c.name.clone()),
                    message: format!("init container `{}` sets restartPolicy {p}; only Always (a sidecar) is allowed there", c.name),
                    fix: "restartPolicy: Always   # a sidecar; or remove it for a plain init container".into(),
                });
            }
        }
    },
};

/// Paths a known program writes at start, and what it is.
fn writes(c: &ContainerRef) -> Option<(&'static str, Vec<String>)> {
    let image = c.image().to_ascii_lowercase();
    if let Some(server) = k8s::model_server(c) {
        let cache = c
            .env_value("HF_HOME")
            .or_else(|| c.env_value("HUGGINGFACE_HUB_CACHE"))
            .or_else(|| {
                c.env_value("HOME")
                    .map(|h| format!("{}/.cache", h.trim_end_matches('/')))
            })
            .unwrap_or_else(|| "/root/.cache".into());
        return Some((server, vec![cache, "/tmp".into()]));
    }
    if image.contains("nginx") && !image.contains("unprivileged") && !image.contains("ingress") {
        return Some(("nginx", vec!["/var/cache/nginx".into(), "/var/run".into()]));
    }
    None
}

fn writable(spec: &Value, c: &ContainerRef, path: &str) -> bool {
    let _ = spec;
    c.v.get("volumeMounts")
        .and_then(Value::as_array)
        .is_some_and(|ms| {
            ms.iter().any(|m| {
                let mp = m
                    .get("mountPath")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .trim_end_matches('/');
                !mp.is_empty()
                    && (path == mp || path.starts_with(&format!("{mp}/")))
                    && m.get("readOnly").and_then(Value::as_bool) != Some(true)
            })
        })
}

pub static READONLY_ROOT: Check = Check {
    id: "lifecycle/readonly-root-without-writable-cache",
    cause: Cause::Permission,
    severity: Severity::Warning,
    what: "readOnlyRootFilesystem is on for software that writes at start under paths with no writable mount: a model server's Hugging Face cache (HF_HOME, else ~/.cache) and /tmp; nginx's /var/cache/nginx and /var/run.",
    why: "The program's first write fails with `Read-only file system` (EROFS) and it exits at start, on every start: a model server cannot download or lock its weights, nginx cannot create its temp paths or pid file.",
    fix: "Mount an emptyDir (or the model's PVC) at each path the program writes, or point the program's cache at a mounted path.",
    source: "huggingface_hub docs, environment variables (HF_HOME defaults to ~/.cache/huggingface); the nginx Docker image docs, running as read-only (/var/cache/nginx, /var/run must be writable); crashdoc-core's permission rule reads EROFS.",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.27.2
        securityContext:
          readOnlyRootFilesystem: true
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      volumes:
      - {name: cache, emptyDir: {}}
      - {name: run, emptyDir: {}}
      containers:
      - name: web
        image: nginx:1.27.2
        securityContext:
          readOnlyRootFilesystem: true
        volumeMounts:
        - {name: cache, mountPath: /var/cache/nginx}
        - {name: run, mountPath: /var/run}
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        each_container(cx, oi, false, |_, spec, _, c| {
            if c.v
                .pointer("/securityContext/readOnlyRootFilesystem")
                .and_then(Value::as_bool)
                != Some(true)
            {
                return;
            }
            let Some((what, paths)) = writes(c) else {
                return;
            };
            let missing: Vec<&String> = paths.iter().filter(|p| !writable(spec, c, p)).collect();
            if missing.is_empty() {
                return;
            }
            let mut fix = String::from("volumeMounts:\n");
            for (i, p) in missing.iter().enumerate() {
                fix.push_str(&format!("- name: writable-{i}\n  mountPath: {p}\n"));
            }
            fix.push_str("volumes:\n");
            for i in 0..missing.len() {
                fix.push_str(&format!("- name: writable-{i}\n  emptyDir: {{}}\n"));
            }
            out.push(Hit {
                path: c.path.clone().key("securityContext").key("readOnlyRootFilesystem"),
                container: Some(c.name.clone()),
                message: format!(
                    "{what} in `{}` writes to {} at start, which the read-only root filesystem forbids",
                    c.name,
                    missing.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" and ")
                ),
                fix: fix.trim_end().to_string(),
            });
        });
    },
};

/// Images known to run as root (no USER, or USER 0) by default.
fn root_image(image: &str) -> bool {
    let (repo, _, _) = super::images::split_image(image);
    let repo = repo.to_ascii_lowercase();
    let name = repo
        .trim_start_matches("docker.io/")
        .trim_start_matches("library/");
    const ROOT: &[&str] = &[
        "nginx",
        "busybox",
        "alpine",
        "ubuntu",
        "debian",
        "centos",
        "fedora",
        "python",
        "node",
        "golang",
        "ruby",
        "php",
        "httpd",
        "redis",
        "postgres",
        "mysql",
        "mariadb",
        "mongo",
        "memcached",
        "rabbitmq",
        "vllm/vllm-openai",
        "ghcr.io/huggingface/text-generation-inference",
        "ollama/ollama",
        "lmsysorg/sglang",
    ];
    ROOT.contains(&name)
}

pub static NON_ROOT_ROOT_IMAGE: Check = Check {
    id: "lifecycle/run-as-non-root-with-root-image",
    cause: Cause::Permission,
    severity: Severity::Error,
    what: "runAsNonRoot is true, no runAsUser is set, and the image is one known to run as root by default (official nginx, busybox, python, postgres, redis, vllm/vllm-openai, TGI, ...).",
    why: "The kubelet checks the image's user before starting it and refuses: CreateContainerConfigError `container has runAsNonRoot and image will run as root`; the container never starts.",
    fix: "Set runAsUser (and runAsGroup, fsGroup) to a non-zero id the image supports, or use the image's unprivileged variant (nginxinc/nginx-unprivileged).",
    source: "Kubernetes source pkg/kubelet/kuberuntime/security_context_others.go verifyRunAsNonRoot (`container has runAsNonRoot and image will run as root`); image users from each image's Dockerfile (Docker official images declare no USER).",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      securityContext:
        runAsNonRoot: true
      containers:
      - name: web
        image: nginx:1.27.2
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      securityContext:
        runAsNonRoot: true
        runAsUser: 101
      containers:
      - name: web
        image: nginx:1.27.2
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        each_container(cx, oi, true, |_, spec, _, c| {
            let pod_sc = spec.get("securityContext");
            let sc = c.v.get("securityContext");
            let get = |k: &str| {
                sc.and_then(|s| s.get(k))
                    .or_else(|| pod_sc.and_then(|s| s.get(k)))
            };
            if get("runAsNonRoot").and_then(Value::as_bool) != Some(true) {
                return;
            }
            if get("runAsUser")
                .and_then(Value::as_i64)
                .is_some_and(|u| u != 0)
            {
                return;
            }
            if !root_image(c.image()) {
                return;
            }
            out.push(Hit {
                path: c.path.clone().key("image"),
                container: Some(c.name.clone()),
                message: format!(
                    "`{}` must run as non-root, but `{}` runs as root and no runAsUser is set: the kubelet refuses to start it",
                    c.name,
                    c.image()
                ),
                fix: "securityContext:\n  runAsNonRoot: true\n  runAsUser: 10001\n  runAsGroup: 10001".into(),
            });
        });
    },
};

pub static DIFF_PROBE_CHANGED: Check = Check {
    id: "diff/probe-changed",
    cause: Cause::ProbeKill,
    severity: Severity::Warning,
    what: "Diff mode (`--against OLD`): a liveness or startup probe changed its handler, lost time from its budget, or the startupProbe was removed.",
    why: "A probe that now kills sooner, or on another endpoint, is the usual way a chart bump makes a slow starter crash-loop (probe-kill) where the previous version started fine.",
    fix: "Keep the budget at least what the older render allowed, or confirm the new endpoint exists in the new image.",
    source: "The seed's chart-bump case; probe budget as in crashdoc-core's probe-kill rule (initialDelaySeconds + periodSeconds x failureThreshold).",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  template:
    spec:
      containers:
      - name: api
        image: ghcr.io/acme/api:1.9.0
        livenessProbe:
          httpGet: {path: /healthz, port: 8080}
          failureThreshold: 3
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  template:
    spec:
      containers:
      - name: api
        image: ghcr.io/acme/api:1.9.0
        livenessProbe:
          httpGet: {path: /healthz, port: 8080}
          failureThreshold: 10
"#,
    fixture_flags: &[],
    fixture_against: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  template:
    spec:
      containers:
      - name: api
        image: ghcr.io/acme/api:1.9.0
        livenessProbe:
          httpGet: {path: /healthz, port: 8080}
          failureThreshold: 10
"#,
    run: |cx: &Ctx, oi, out| {
        let obj = cx.obj(oi);
        let Some(old) = old_twin(cx, obj) else { return };
        let Some((ospec, op)) = k8s::pod_spec(old) else {
            return;
        };
        let olds = k8s::containers(ospec, &op, false);
        each_container(cx, oi, false, |_, _, _, c| {
            let Some(o) = olds.iter().find(|o| o.name == c.name) else {
                return;
            };
            for kind in ["livenessProbe", "startupProbe"] {
                let (was, now) = (o.probe(kind), c.probe(kind));
                let what = match (was, now) {
                    (Some(_), None) if kind == "startupProbe" => "was removed".to_string(),
                    (Some(w), Some(n)) => {
                        let handler = |p: &Value| {
                            ["httpGet", "tcpSocket", "grpc", "exec"]
                                .iter()
                                .find_map(|h| p.get(h))
                                .cloned()
                        };
                        let (bw, bn) = (numbers(w).budget(), numbers(n).budget());
                        if handler(w) != handler(n) {
                            format!(
                                "changed its handler from {} to {}",
                                handler(w).map(|h| h.to_string()).unwrap_or_default(),
                                handler(n).map(|h| h.to_string()).unwrap_or_default()
                            )
                        } else if bn < bw {
                            format!("now kills after {bn}s instead of {bw}s")
                        } else {
                            continue;
                        }
                    }
                    _ => continue,
                };
                let fix = match was {
                    Some(w) => format!(
                        "{kind}:\n  initialDelaySeconds: {}\n  periodSeconds: {}\n  failureThreshold: {}   # as the older render",
                        numbers(w).initial_delay,
                        numbers(w).period,
                        numbers(w).failure
                    ),
                    None => String::new(),
                };
                out.push(Hit {
                    path: c
                        .path
                        .clone()
                        .key(if now.is_some() { kind } else { "name" }),
                    container: Some(c.name.clone()),
                    message: format!("the {kind} of `{}` {what}", c.name),
                    fix,
                });
            }
        });
    },
};

pub static DIFF_VOLUME_REMOVED: Check = Check {
    id: "diff/volume-removed",
    cause: Cause::Volume,
    severity: Severity::Warning,
    what: "Diff mode (`--against OLD`): a volume (or a StatefulSet volumeClaimTemplate) of the older render is gone from the new one.",
    why: "What the program wrote there (a model cache, a database, a socket dir, a writable path under a read-only root) is now on the container's own filesystem or nowhere: it fails to start (EROFS, a missing file) or starts empty; a mount still naming the volume makes the object invalid.",
    fix: "Keep the volume, or check that the new version no longer needs the path.",
    source: "The seed's chart-bump case.",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  template:
    spec:
      containers:
      - name: api
        image: ghcr.io/acme/api:1.9.0
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  template:
    spec:
      volumes:
      - {name: tmp, emptyDir: {}}
      containers:
      - name: api
        image: ghcr.io/acme/api:1.9.0
"#,
    fixture_flags: &[],
    fixture_against: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  template:
    spec:
      volumes:
      - {name: tmp, emptyDir: {}}
      containers:
      - name: api
        image: ghcr.io/acme/api:1.9.0
"#,
    run: |cx: &Ctx, oi, out| {
        let obj = cx.obj(oi);
        let Some(old) = old_twin(cx, obj) else { return };
        let names = |o: &crate::input::Object| -> Vec<String> {
            let mut v: Vec<String> = k8s::pod_spec(o)
                .and_then(|(s, _)| s.get("volumes").and_then(Value::as_array).cloned())
                .unwrap_or_default()
                .iter()
                .filter_map(|x| x.get("name").and_then(Value::as_str).map(str::to_string))
                .collect();
            if let Some(t) = o
                .value
                .pointer("/spec/volumeClaimTemplates")
                .and_then(Value::as_array)
            {
                v.extend(t.iter().filter_map(|x| {
                    x.pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                }));
            }
            v
        };
        let now = names(obj);
        let Some((_, sp)) = k8s::pod_spec(obj) else {
            return;
        };
        for n in names(old) {
            if now.contains(&n) {
                continue;
            }
            out.push(Hit {
                path: sp.clone().key("volumes"),
                container: None,
                message: format!("volume `{n}` of the older render was removed"),
                fix: format!("volumes:\n- name: {n}   # as in the older render, unless the new version no longer uses it"),
            });
        }
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    fn w(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn one_shots_and_servers() {
        assert!(one_shot(&w(&["sleep", "3600"])).is_some());
        assert!(one_shot(&w(&["sleep", "infinity"])).is_none());
        assert!(one_shot(&w(&["rails", "db:migrate"])).is_some());
        assert!(one_shot(&w(&["gunicorn", "app:wsgi"])).is_none());
        assert!(one_shot(&w(&["kubectl", "proxy"])).is_none());
        assert!(one_shot(&w(&["exec", "echo", "hi"])).is_some());
    }

    #[test]
    fn root_images() {
        assert!(root_image("nginx:1.27"));
        assert!(root_image("docker.io/library/postgres:16"));
        assert!(!root_image("nginxinc/nginx-unprivileged:1.27"));
        assert!(!root_image("bitnami/postgresql:16"));
    }
}
