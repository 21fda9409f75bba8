//! References to ConfigMaps and Secrets, against the objects of the same
//! input (key names only: Secret values are dropped when read).

use super::{Check, ConfigIndex, RefKind, Severity, near};
use crate::Hit;
use crate::k8s;
use crate::locate::Path;
use crashdoc_core::Cause;
use serde_json::Value;

/// One reference of a pod spec to a ConfigMap or Secret (or one of its keys).
pub(crate) struct Ref {
    pub kind: RefKind,
    pub name: String,
    pub key: Option<String>,
    pub optional: bool,
    pub path: Path,
    pub container: Option<String>,
    /// `env DATABASE_URL`, `envFrom`, `volume config`, `imagePullSecrets`.
    pub via: String,
}

fn opt(v: &Value) -> bool {
    v.get("optional").and_then(Value::as_bool).unwrap_or(false)
}

fn s(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_string)
}

/// Every ConfigMap and Secret reference of the object's pod spec.
pub(crate) fn refs_of(obj: &crate::input::Object) -> Vec<Ref> {
    let mut out = Vec::new();
    let Some((spec, sp)) = k8s::pod_spec(obj) else {
        return out;
    };
    for c in k8s::containers(spec, &sp, true) {
        if let Some(env) = c.v.get("env").and_then(Value::as_array) {
            for (i, e) in env.iter().enumerate() {
                for (field, kind) in [
                    ("configMapKeyRef", RefKind::ConfigMap),
                    ("secretKeyRef", RefKind::Secret),
                ] {
                    if let Some(r) = e.get("valueFrom").and_then(|v| v.get(field))
                        && let Some(name) = s(r, "name")
                    {
                        out.push(Ref {
                            kind,
                            name,
                            key: s(r, "key"),
                            optional: opt(r),
                            path: c
                                .path
                                .clone()
                                .key("env")
                                .index(i)
                                .key("valueFrom")
                                .key(field),
                            container: Some(c.name.clone()),
                            via: format!("env {}", s(e, "name").unwrap_or_default()),
                        });
                    }
                }
            }
        }
        if let Some(ef) = c.v.get("envFrom").and_then(Value::as_array) {
            for (i, e) in ef.iter().enumerate() {
                for (field, kind) in [
                    ("configMapRef", RefKind::ConfigMap),
                    ("secretRef", RefKind::Secret),
                ] {
                    if let Some(r) = e.get(field)
                        && let Some(name) = s(r, "name")
                    {
                        out.push(Ref {
                            kind,
                            name,
                            key: None,
                            optional: opt(r),
                            path: c.path.clone().key("envFrom").index(i).key(field),
                            container: Some(c.name.clone()),
                            via: "envFrom".into(),
                        });
                    }
                }
            }
        }
    }
    let source = |v: &Value,
                  kind: RefKind,
                  name_field: &str,
                  path: Path,
                  via: String,
                  out: &mut Vec<Ref>| {
        let Some(name) = s(v, name_field) else { return };
        let optional = opt(v);
        let items = v
            .get("items")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty());
        match items {
            Some(items) => {
                for (j, it) in items.iter().enumerate() {
                    out.push(Ref {
                        kind,
                        name: name.clone(),
                        key: s(it, "key"),
                        optional,
                        path: path.clone().key("items").index(j).key("key"),
                        container: None,
                        via: via.clone(),
                    });
                }
            }
            None => out.push(Ref {
                kind,
                name,
                key: None,
                optional,
                path,
                container: None,
                via,
            }),
        }
    };
    if let Some(vols) = spec.get("volumes").and_then(Value::as_array) {
        for (i, vol) in vols.iter().enumerate() {
            let vp = sp.clone().key("volumes").index(i);
            let vname = s(vol, "name").unwrap_or_default();
            if let Some(cm) = vol.get("configMap") {
                source(
                    cm,
                    RefKind::ConfigMap,
                    "name",
                    vp.clone().key("configMap"),
                    format!("volume {vname}"),
                    &mut out,
                );
            }
            if let Some(sec) = vol.get("secret") {
                source(
                    sec,
                    RefKind::Secret,
                    "secretName",
                    vp.clone().key("secret"),
                    format!("volume {vname}"),
                    &mut out,
                );
            }
            if let Some(srcs) = vol.pointer("/projected/sources").and_then(Value::as_array) {
                for (j, src) in srcs.iter().enumerate() {
                    let pp = vp.clone().key("projected").key("sources").index(j);
                    if let Some(cm) = src.get("configMap") {
                        source(
                            cm,
                            RefKind::ConfigMap,
                            "name",
                            pp.clone().key("configMap"),
                            format!("projected volume {vname}"),
                            &mut out,
                        );
                    }
                    if let Some(sec) = src.get("secret") {
                        source(
                            sec,
                            RefKind::Secret,
                            "name",
                            pp.clone().key("secret"),
                            format!("projected volume {vname}"),
                            &mut out,
                        );
                    }
                }
            }
        }
    }
    out
}

fn pull_secrets(obj: &crate::input::Object) -> Vec<(String, Path)> {
    let Some((spec, sp)) = k8s::pod_spec(obj) else {
        return vec![];
    };
    spec.get("imagePullSecrets")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .enumerate()
                .filter_map(|(i, p)| {
                    Some((s(p, "name")?, sp.clone().key("imagePullSecrets").index(i)))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A reference whose object is in the input (in the pod's namespace) but whose key is not.
fn key_missing<'a>(
    ix: &'a ConfigIndex,
    ns: Option<&str>,
    r: &'a Ref,
) -> Option<(&'a std::collections::BTreeSet<String>, &'a str)> {
    let key = r.key.as_deref()?;
    let keys = ix.keys(r.kind, ns, &r.name)?;
    (!keys.contains(key)).then_some((keys, key))
}

fn key_fix(
    r: &Ref,
    key: &str,
    keys: &std::collections::BTreeSet<String>,
    suggestion: Option<&str>,
) -> String {
    match suggestion {
        Some(k) => format!(
            "# {} {} has `{k}`, not `{key}`\nkey: {k}",
            r.kind.word(),
            r.name
        ),
        None => format!(
            "# add the key to {} {} (it has: {}):\ndata:\n  {key}: ...",
            r.kind.word(),
            r.name,
            keys.iter().take(8).cloned().collect::<Vec<_>>().join(", ")
        ),
    }
}

pub static MISSING_KEY: Check = Check {
    id: "ref/missing-key",
    cause: Cause::ConfigRefMissing,
    severity: Severity::Error,
    what: "An env var, envFrom, volume `items` or projected source names a key that the ConfigMap or Secret of the same input does not have, and the reference is not optional.",
    why: "The kubelet cannot build the container's environment (CreateContainerConfigError: `couldn't find key ... in ConfigMap`) or mount the volume (FailedMount), so the container never starts; when the key is read by the application instead, it exits at start on the missing setting.",
    fix: "Use the key the object has (a near-identical one is suggested), or add the key to the object.",
    source: "Kubernetes source pkg/kubelet/kubelet_pods.go makeEnvironmentVariables (`couldn't find key %v in ConfigMap %v/%v`), pkg/volume/configmap and secret (items must exist unless optional).",
    example: r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: api-config
data:
  DATABASE_URL: postgres://db:5432/app
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  template:
    spec:
      containers:
      - name: api
        image: ghcr.io/acme/api:1.8.0
        env:
        - name: DATABASE_URL
          valueFrom:
            configMapKeyRef: {name: api-config, key: DATABSE_URL}
"#,
    near_miss: r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: api-config
data:
  DATABASE_URL: postgres://db:5432/app
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  template:
    spec:
      containers:
      - name: api
        image: ghcr.io/acme/api:1.8.0
        env:
        - name: DATABASE_URL
          valueFrom:
            configMapKeyRef: {name: api-config, key: DATABASE_URL}
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        let obj = cx.obj(oi);
        for r in refs_of(obj) {
            if r.optional {
                continue;
            }
            let Some((keys, key)) = key_missing(&cx.configs, obj.namespace.as_deref(), &r) else {
                continue;
            };
            // In diff mode a key the older render had is DIFF_REMOVED_KEY's.
            if let Some(old) = &cx.old_configs
                && old
                    .keys(r.kind, obj.namespace.as_deref(), &r.name)
                    .is_some_and(|k| k.contains(key))
            {
                continue;
            }
            let sug = near(key, keys.iter().map(String::as_str));
            out.push(Hit {
                path: r.path.clone(),
                container: r.container.clone(),
                message: format!(
                    "{} references key `{key}` of {} {}, which has no such key{}",
                    r.via,
                    r.kind.word(),
                    r.name,
                    sug.map(|k| format!(" (it has `{k}`)")).unwrap_or_default()
                ),
                fix: key_fix(&r, key, keys, sug),
            });
        }
    },
};

/// The names something in the input creates at run time: objects a Role
/// grants by name (`resourceNames`), words of a Job's command line.
pub(crate) fn run_time_names(input: &crate::input::Input) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    for o in &input.objects {
        match o.kind.as_str() {
            "Role" | "ClusterRole" => {
                for r in o
                    .value
                    .get("rules")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    for n in r
                        .get("resourceNames")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        if let Some(n) = n.as_str() {
                            out.insert(n.to_string());
                        }
                    }
                }
            }
            "Job" | "CronJob" => {
                if let Some((spec, sp)) = k8s::pod_spec(o) {
                    for c in k8s::containers(spec, &sp, true) {
                        out.extend(
                            c.command_line()
                                .split(|ch: char| ch.is_whitespace() || ch == '=')
                                .map(str::to_string),
                        );
                    }
                }
            }
            _ => {}
        }
    }
    out
}

pub static MISSING_OBJECT: Check = Check {
    id: "ref/missing-object",
    cause: Cause::ConfigRefMissing,
    severity: Severity::Warning,
    what: "A pod spec references a ConfigMap or Secret that is not in the input, while the input does carry objects of that kind, nothing in it creates the object at run time (a Role granting it by resourceNames, a Job naming it), and the reference is not optional.",
    why: "If nothing else creates it before the pod starts, the kubelet cannot start the container (CreateContainerConfigError: `configmap \"x\" not found`) or mount the volume. A warning, not an error: the object may be created by another chart, an operator or by hand.",
    fix: "Add the object to the release, or make sure it is created first; `optional: true` only if the program really runs without it.",
    source: "Kubernetes source pkg/kubelet/kubelet_pods.go makeEnvironmentVariables (configmap/secret lookup errors), pkg/volume/configmap (object must exist unless optional).",
    example: r#"apiVersion: v1
kind: Secret
metadata:
  name: api-tls
data:
  tls.crt: ""
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  template:
    spec:
      containers:
      - name: api
        image: ghcr.io/acme/api:1.8.0
        envFrom:
        - secretRef: {name: api-credentials}
"#,
    near_miss: r#"apiVersion: v1
kind: Secret
metadata:
  name: api-credentials
data:
  password: ""
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  template:
    spec:
      containers:
      - name: api
        image: ghcr.io/acme/api:1.8.0
        envFrom:
        - secretRef: {name: api-credentials}
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        let obj = cx.obj(oi);
        for r in refs_of(obj) {
            if r.optional || !cx.configs.any.get(&r.kind).copied().unwrap_or(false) {
                continue;
            }
            if cx
                .configs
                .keys(r.kind, obj.namespace.as_deref(), &r.name)
                .is_some()
                || !cx.configs.namespaces_of(r.kind, &r.name).is_empty()
                || near(&r.name, cx.configs.names(r.kind)).is_some()
                || cx.run_time_names.contains(&r.name)
            {
                continue; // present, cross-namespace, a typo (other checks say it better), or made at run time
            }
            out.push(Hit {
                path: r.path.clone(),
                container: r.container.clone(),
                message: format!(
                    "{} references {} {}, which is not in the input",
                    r.via,
                    r.kind.word(),
                    r.name
                ),
                fix: format!(
                    "apiVersion: v1\nkind: {}\nmetadata:\n  name: {}\n# ... created before the workload",
                    r.kind.word(),
                    r.name
                ),
            });
        }
    },
};

pub static OPTIONAL_HIDES_TYPO: Check = Check {
    id: "ref/optional-hides-typo",
    cause: Cause::ConfigRefMissing,
    severity: Severity::Error,
    what: "An `optional: true` reference names a key or object that does not exist while a near-identical one does (a typo, a case or `-`/`_` difference).",
    why: "`optional` makes the kubelet start the container without the value, silently; the program then runs without its setting and exits at start (or misbehaves), and nothing in the pod's events says why.",
    fix: "Use the existing name; keep `optional` only for values the program really does without.",
    source: "Kubernetes API reference (ConfigMapKeySelector/SecretKeySelector.optional: the variable is left unset when the key or object is missing).",
    example: r#"apiVersion: v1
kind: Secret
metadata:
  name: smtp
data:
  password: ""
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: mailer
spec:
  template:
    spec:
      containers:
      - name: mailer
        image: ghcr.io/acme/mailer:0.9.2
        env:
        - name: SMTP_PASSWORD
          valueFrom:
            secretKeyRef: {name: smtp, key: Password, optional: true}
"#,
    near_miss: r#"apiVersion: v1
kind: Secret
metadata:
  name: smtp
data:
  password: ""
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: mailer
spec:
  template:
    spec:
      containers:
      - name: mailer
        image: ghcr.io/acme/mailer:0.9.2
        env:
        - name: SMTP_TLS_CA
          valueFrom:
            secretKeyRef: {name: smtp, key: ca.crt, optional: true}
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        let obj = cx.obj(oi);
        for r in refs_of(obj) {
            if !r.optional {
                continue;
            }
            let ns = obj.namespace.as_deref();
            let hit = match cx.configs.keys(r.kind, ns, &r.name) {
                Some(keys) => r
                    .key
                    .as_deref()
                    .filter(|k| !keys.contains(*k))
                    .and_then(|k| {
                        near(k, keys.iter().map(String::as_str)).map(|n| {
                            (
                                format!("key `{k}` of {} {}", r.kind.word(), r.name),
                                format!("key: {n}"),
                                n.to_string(),
                            )
                        })
                    }),
                None => near(&r.name, cx.configs.names(r.kind)).map(|n| {
                    (
                        format!("{} {}", r.kind.word(), r.name),
                        format!("name: {n}"),
                        n.to_string(),
                    )
                }),
            };
            let Some((what, fix, n)) = hit else { continue };
            out.push(Hit {
                path: r.path.clone(),
                container: r.container.clone(),
                message: format!(
                    "{} optionally references {what}, which does not exist, but `{n}` does: the container starts without the value",
                    r.via
                ),
                fix,
            });
        }
    },
};

pub static CROSS_NAMESPACE: Check = Check {
    id: "ref/cross-namespace",
    cause: Cause::ConfigRefMissing,
    severity: Severity::Error,
    what: "A pod references a ConfigMap or Secret that the input defines only in another namespace.",
    why: "ConfigMap and Secret references are resolved in the pod's own namespace; there is no way to name another one. The object is \"not found\" and the container cannot start (or starts without it when optional).",
    fix: "Create the object in the pod's namespace (a copy, or a tool such as a secret replicator), or move the workload.",
    source: "Kubernetes API reference: LocalObjectReference / ConfigMapKeySelector name the object in the pod's namespace only.",
    example: r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: shared-config
  namespace: platform
data:
  region: eu-west-1
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: shop
spec:
  template:
    spec:
      containers:
      - name: api
        image: ghcr.io/acme/api:1.8.0
        envFrom:
        - configMapRef: {name: shared-config}
"#,
    near_miss: r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: shared-config
  namespace: shop
data:
  region: eu-west-1
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: shop
spec:
  template:
    spec:
      containers:
      - name: api
        image: ghcr.io/acme/api:1.8.0
        envFrom:
        - configMapRef: {name: shared-config}
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        let obj = cx.obj(oi);
        let Some(ns) = obj.namespace.as_deref() else {
            return;
        };
        for r in refs_of(obj) {
            if cx.configs.keys(r.kind, Some(ns), &r.name).is_some() {
                continue;
            }
            let others = cx.configs.namespaces_of(r.kind, &r.name);
            if others.is_empty() || others.iter().any(|o| o == ns) {
                continue;
            }
            out.push(Hit {
                path: r.path.clone(),
                container: r.container.clone(),
                message: format!(
                    "{} references {} {} from namespace {ns}, but it exists only in {}: references resolve in the pod's namespace",
                    r.via,
                    r.kind.word(),
                    r.name,
                    others.join(", ")
                ),
                fix: format!(
                    "apiVersion: v1\nkind: {}\nmetadata:\n  name: {}\n  namespace: {ns}   # a copy beside the workload",
                    r.kind.word(),
                    r.name
                ),
            });
        }
    },
};

pub static MISSING_PULL_SECRET: Check = Check {
    id: "ref/missing-pull-secret",
    cause: Cause::ImagePull,
    severity: Severity::Warning,
    what: "imagePullSecrets names a Secret that is not in the input, while the input carries Secrets.",
    why: "The kubelet warns (`Unable to retrieve some image pull secrets`) and pulls without credentials; a private image then fails to pull (ErrImagePull, ImagePullBackOff).",
    fix: "Add the docker-registry Secret to the release, or fix the name.",
    source: "Kubernetes source pkg/kubelet/kubelet_pods.go getPullSecretsForPod (missing secrets are skipped with a warning event).",
    example: r#"apiVersion: v1
kind: Secret
metadata:
  name: registry-creds
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: ""
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  template:
    spec:
      imagePullSecrets:
      - name: registry-credentials
      containers:
      - name: api
        image: registry.acme.io/api:1.8.0
"#,
    near_miss: r#"apiVersion: v1
kind: Secret
metadata:
  name: registry-creds
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: ""
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  template:
    spec:
      imagePullSecrets:
      - name: registry-creds
      containers:
      - name: api
        image: registry.acme.io/api:1.8.0
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        let obj = cx.obj(oi);
        if !cx
            .configs
            .any
            .get(&RefKind::Secret)
            .copied()
            .unwrap_or(false)
        {
            return;
        }
        for (name, path) in pull_secrets(obj) {
            if cx
                .configs
                .keys(RefKind::Secret, obj.namespace.as_deref(), &name)
                .is_some()
            {
                continue;
            }
            let sug = near(&name, cx.configs.names(RefKind::Secret));
            out.push(Hit {
                path,
                container: None,
                message: format!(
                    "imagePullSecrets names Secret {name}, which is not in the input{}",
                    sug.map(|s| format!(" (did you mean {s}?)"))
                        .unwrap_or_default()
                ),
                fix: format!("imagePullSecrets:\n- name: {}", sug.unwrap_or(&name)),
            });
        }
    },
};

pub static DIFF_REMOVED_KEY: Check = Check {
    id: "diff/removed-key-still-referenced",
    cause: Cause::ConfigRefMissing,
    severity: Severity::Error,
    what: "Diff mode (`--against OLD`): a ConfigMap or Secret key (or the whole object) that the older render had is gone or renamed in the new one, and a workload of the new render still references it.",
    why: "This is the chart-bump crash loop: the new chart renamed `DB_HOST` to `DATABASE_HOST` in its ConfigMap, a workload (often one the chart does not own, or an override) still reads the old key, and its pods fail to start after the upgrade.",
    fix: "Reference the new key (the renamed one is named when it can be told), or keep the old key in the object for one release.",
    source: "The seed's chart-bump case (`helm diff upgrade` in CI); kubelet behaviour as for ref/missing-key.",
    example: r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: app
data:
  DATABASE_HOST: db
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
      - name: app
        image: ghcr.io/acme/app:2.0.0
        env:
        - name: DB_HOST
          valueFrom:
            configMapKeyRef: {name: app, key: DB_HOST}
"#,
    near_miss: r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: app
data:
  DB_HOST: db
  DATABASE_HOST: db
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
      - name: app
        image: ghcr.io/acme/app:2.0.0
        env:
        - name: DB_HOST
          valueFrom:
            configMapKeyRef: {name: app, key: DB_HOST}
"#,
    fixture_flags: &[],
    fixture_against: r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: app
data:
  DB_HOST: db
"#,
    run: |cx, oi, out| {
        let Some(old) = &cx.old_configs else { return };
        let obj = cx.obj(oi);
        let ns = obj.namespace.as_deref();
        for r in refs_of(obj) {
            let Some(old_keys) = old.keys(r.kind, ns, &r.name) else {
                continue;
            };
            let new_keys = cx.configs.keys(r.kind, ns, &r.name);
            let (what, fix) = match (&r.key, new_keys) {
                (_, None) => (
                    format!(
                        "{} {} existed in the older render and is gone",
                        r.kind.word(),
                        r.name
                    ),
                    format!(
                        "# keep {} {} in the release, or drop the reference",
                        r.kind.word(),
                        r.name
                    ),
                ),
                (Some(k), Some(nk)) if old_keys.contains(k) && !nk.contains(k) => {
                    let added: Vec<&str> = nk
                        .iter()
                        .filter(|x| !old_keys.contains(*x))
                        .map(String::as_str)
                        .collect();
                    let renamed = if added.len() == 1 {
                        Some(added[0])
                    } else {
                        near(k, added.iter().copied())
                    };
                    (
                        format!(
                            "key `{k}` of {} {} was removed{}",
                            r.kind.word(),
                            r.name,
                            renamed
                                .map(|n| format!(" (renamed to `{n}`?)"))
                                .unwrap_or_default()
                        ),
                        match renamed {
                            Some(n) => format!("key: {n}"),
                            None => format!("data:\n  {k}: ...   # keep it for one release"),
                        },
                    )
                }
                _ => continue,
            };
            out.push(Hit {
                path: r.path.clone(),
                container: r.container.clone(),
                message: format!("{}: {what}, but it is still referenced", r.via),
                fix,
            });
        }
    },
};
