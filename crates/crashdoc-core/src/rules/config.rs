//! Configuration: references to ConfigMaps and Secrets, the application's
//! own settings, and credentials.

use super::{Context, Finding, Outrank, Rule, RuleDoc};
use crate::catalog::Place;
use crate::causes::Cause;
use crate::classes;
use crate::model::*;
use crate::scan::SigKind;
use crate::strength::{Strength, adjust};
use regex::Regex;
use std::sync::LazyLock;

pub static CONFIG_REF_MISSING: Rule = Rule {
    cause: Cause::ConfigRefMissing,
    doc: RuleDoc {
        what: "The pod spec references a ConfigMap, a Secret, or a key in one, that does not exist.",
        why: "The kubelet cannot build the container's environment or volumes, so it never starts it: CreateContainerConfigError, or a volume that never mounts. Nothing in the program can fix it.",
        evidence: "waiting reason CreateContainerConfigError; events `Error: secret \"x\" not found`, `couldn't find key K in ConfigMap NS/x`, `MountVolume.SetUp failed ... configmap \"x\" not found`, `... configmap references non-existent config key: K` or `... references non-existent secret key: K` (a volume's items[] naming a key the object lacks); the env/envFrom/volume references in the spec against the objects and keys that exist.",
        example: "State: Waiting\n  Reason: CreateContainerConfigError\nWarning  Failed  kubelet  Error: configmap \"cluster-config\" not found",
        fix: "Create the object or key (check the namespace and the exact key name), or mark the reference optional: true if the program copes without it.",
        false_positives: "CreateContainerConfigError also comes from runAsNonRoot checks; the event text then says so and permission is reported.",
    },
    outranks: &[
        Outrank {
            cause: Cause::Volume,
            why: "the volume cannot be set up because the ConfigMap or Secret it projects, or a key its items[] name, does not exist (kubernetes v1.36.3 pkg/volume/configmap/configmap.go, pkg/volume/secret/secret.go MakePayload, also under a projected volume); the mount failure is how the missing reference shows, and no storage fix helps",
            only: None,
        },
        super::OUTRANKS_APP_CRASH,
    ],
    reads: &[],
    check: check_config_ref,
};

static NOT_FOUND: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b(configmaps?|secrets?)\s+"([^"]+)"\s+not found"#).expect("static regex")
});
static NO_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)couldn't find key (\S+) in (ConfigMap|Secret) ([\w./-]+)"#)
        .expect("static regex")
});

/// The key of the kubelet's MakePayload errors: `configmap references
/// non-existent config key: K`, `references non-existent secret key: K`
/// (kubernetes v1.36.3 pkg/volume/configmap/configmap.go,
/// pkg/volume/secret/secret.go).
static NON_EXISTENT_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"non-existent (?:config|secret) key: (\S+)").expect("static regex")
});

fn check_config_ref(cx: &Context) -> Vec<Finding> {
    let mut messages: Vec<(&str, &Cite)> = cx
        .pod
        .events
        .iter()
        .map(|e| (e.message.as_str(), &e.cite))
        .collect();
    messages.extend(cx.state_messages());
    let waiting: Option<&Cite> = cx
        .pod
        .containers
        .iter()
        .flat_map(|c| [c.state.as_ref(), c.last_state.as_ref()])
        .flatten()
        .filter_map(|st| st.reason.as_ref())
        .filter(|r| r.value == "CreateContainerConfigError")
        .map(|r| &r.cite)
        .next_back();
    let listed = cx
        .pod
        .listed_status
        .as_ref()
        .filter(|s| s.value.contains("CreateContainerConfigError"))
        .map(|s| &s.cite);
    if let Some(f) = named_in_a_message(cx, &messages, waiting, listed)
        .or_else(|| volume_item_key(cx, &messages))
    {
        return vec![f];
    }
    let known = against_known_objects(cx);
    if !known.is_empty() {
        return known;
    }
    let run_as_non_root = messages
        .iter()
        .any(|(m, _)| classes::is("security.run-as-non-root", m));
    match waiting.or(listed) {
        Some(c) if !run_as_non_root => vec![from_status_alone(cx, c)],
        _ => Vec::new(),
    }
}

/// An event or state message naming the missing ConfigMap or Secret, or the
/// key it lacks (kubelet: `configmap "X" not found`, `couldn't find key K in
/// Secret NS/X`).
fn named_in_a_message(
    cx: &Context,
    messages: &[(&str, &Cite)],
    waiting: Option<&Cite>,
    listed: Option<&Cite>,
) -> Option<Finding> {
    for (m, cite) in messages {
        let (kind, name, key) = if let Some(c) = NO_KEY.captures(m) {
            (c[2].to_string(), c[3].to_string(), Some(c[1].to_string()))
        } else if let Some(c) = NOT_FOUND.captures(m) {
            (
                c[1].trim_end_matches('s').to_string(),
                c[2].to_string(),
                None,
            )
        } else {
            continue;
        };
        let kind_word = if kind.eq_ignore_ascii_case("secret") {
            "Secret"
        } else {
            "ConfigMap"
        };
        let summary = match &key {
            Some(k) => {
                format!("the pod needs key {k} of {kind_word} {name}, which does not have it")
            }
            None => format!("the pod references {kind_word} {name}, which does not exist"),
        };
        let short = name.rsplit('/').next().unwrap_or(&name).to_string();
        let mut f = Finding::new(Cause::ConfigRefMissing, Strength::Certain.score(), summary)
            .container(
                container_referencing(cx, &short)
                    .or(cx.mounting(m))
                    .or(cx.focus_name()),
            )
            .cite(cite);
        f = f.cite_opt(waiting).cite_opt(listed);
        if let Some(env) = cx
            .pod
            .containers
            .iter()
            .flat_map(|c| c.env.iter())
            .find(|e| e.from.as_ref().is_some_and(|f| f.name == short))
        {
            f = f.cite(&env.cite);
        }
        let describe = if kind_word == "Secret" {
            format!("describe secret {short}")
        } else {
            format!("get configmap {short} -o yaml")
        };
        f = f
            .fix(match &key {
                Some(k) => format!("add key {k} to {kind_word} {short} (names are case-sensitive), or change the reference to a key that exists"),
                None => format!("create {kind_word} {short} in the pod's namespace, or fix the name in the pod spec"),
            })
            .fix("if the program can run without it, mark the reference `optional: true`")
            .cmd(cx.kubectl(&describe))
            .cmd(cx.kubectl(&format!("get {} ", kind_word.to_ascii_lowercase())).replace("  ", " "));
        return Some(f);
    }
    None
}

/// A configMap or secret volume (or a projected one's source) whose items[]
/// name a key the object lacks: the kubelet cannot set the volume up, so no
/// container of the pod is created. The FailedMount event is the pod's; the
/// container is the one that mounts the volume.
fn volume_item_key(cx: &Context, messages: &[(&str, &Cite)]) -> Option<Finding> {
    for (m, cite) in messages {
        let kind_word = if classes::is("kubernetes.volume-configmap-key-missing", m) {
            "ConfigMap"
        } else if classes::is("kubernetes.volume-secret-key-missing", m) {
            "Secret"
        } else {
            continue;
        };
        let key = NON_EXISTENT_KEY
            .captures(m)
            .map(|c| c[1].to_string())
            .unwrap_or_else(|| "it names".to_string());
        let volume = super::volume_in(m)
            .map(|v| format!("volume {v}"))
            .unwrap_or_else(|| "a volume".to_string());
        return Some(
            Finding::new(
                Cause::ConfigRefMissing,
                Strength::Decisive.score(),
                format!(
                    "{volume} projects key {key} of its {kind_word} (items[]), which the {kind_word} does not have: the kubelet cannot set the volume up"
                ),
            )
            .container(cx.mounting(m).or(cx.focus_name()))
            .cite(cite)
            .fix(format!(
                "add key {key} to the {kind_word} that {volume} projects (names are case-sensitive), or change items[].key to a key it has"
            ))
            .fix("if the program can run without the file, mark the volume source `optional: true` (a missing key is then skipped)")
            .cmd(cx.kubectl(&format!(
                "get pod {} -o jsonpath='{{.spec.volumes}}'",
                cx.pod_name()
            )))
            .cmd(cx.kubectl(&format!("get {}s", kind_word.to_ascii_lowercase()))),
        );
    }
    None
}

/// Known objects and keys (a ConfigMap or Secret in the evidence) against
/// the spec's env references.
fn against_known_objects(cx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for c in &cx.pod.containers {
        for e in &c.env {
            let Some(src) = &e.from else { continue };
            if src.optional {
                continue;
            }
            let Some(obj) = cx
                .pod
                .config_objects
                .iter()
                .find(|o| o.kind == src.kind && o.name == src.name)
            else {
                continue;
            };
            if let Some(k) = &src.key
                && !obj.keys.is_empty()
                && !obj.keys.iter().any(|(n, _)| n == k)
            {
                out.push(
                    Finding::new(
                        Cause::ConfigRefMissing,
                        Strength::Decisive.score(),
                        format!(
                            "env {} wants key {k} of {} {}, which has only: {}",
                            e.name,
                            src.kind.word(),
                            src.name,
                            obj.keys
                                .iter()
                                .map(|(n, _)| n.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    )
                    .container(Some(&c.name))
                    .cite(&e.cite)
                    .cite(&obj.cite)
                    .fix(format!(
                        "add key {k} to {} {} or reference an existing key",
                        src.kind.word(),
                        src.name
                    )),
                );
            }
        }
    }
    out
}

/// CreateContainerConfigError with no message that names what is missing.
fn from_status_alone(cx: &Context, c: &Cite) -> Finding {
    Finding::new(Cause::ConfigRefMissing, Strength::Moderate.score(), "the kubelet cannot build the container's configuration (CreateContainerConfigError): usually a missing ConfigMap, Secret or key")
            .container(cx.focus_name())
            .cite(c)
            .cmd(cx.kubectl(&format!("get events --field-selector involvedObject.name={}", cx.pod_name())))
}

fn container_referencing<'a>(cx: &'a Context, name: &str) -> Option<&'a str> {
    cx.pod
        .containers
        .iter()
        .find(|c| {
            c.env
                .iter()
                .any(|e| e.from.as_ref().is_some_and(|f| f.name == name))
        })
        .map(|c| c.name.as_str())
}

pub static BAD_CONFIG: Rule = Rule {
    cause: Cause::BadConfig,
    doc: RuleDoc {
        what: "The application rejects its own configuration: an invalid flag or value, a missing required setting, an environment variable it cannot parse, a config file with errors.",
        why: "The program validates its settings at start and exits; the same settings come back on every restart.",
        evidence: "`invalid value`, `unknown flag`, `flag provided but not defined`, `unrecognized arguments`, `error parsing config`, `must be set`, a usage text, an exception whose message names an environment variable or a flag (`VLLM_PORT 'tcp://...' appears to be a URI`, `Set the --num-cpus rayStartParam`).",
        example: "ValueError: VLLM_PORT 'tcp://10.0.0.1:8000' appears to be a URI. This may be caused by a Kubernetes service discovery issue",
        fix: "Correct the flag, value or variable the message names; for variables that collide with Kubernetes service links (SERVICE_PORT=tcp://...), rename the Service or set enableServiceLinks: false.",
        false_positives: "A message naming a variable can also come from a missing credential (auth-failure) or an unreachable endpoint (dependency-unreachable); their specific signatures outrank this one.",
    },
    outranks: &[super::OUTRANKS_APP_CRASH],
    reads: &[Place::Log],
    check: check_bad_config,
};

static CONFIG_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]{2,}\b|(?:^|\s|`)--[a-z][a-z0-9-]+|(?i:\b(?:config(?:uration)?|environment variable|env var|setting|parameter)\b)").expect("static regex")
});

/// Whether the word at `start..end` of `text` is part of a module, class,
/// file or path name (`app.configuration`, `configuration_utils`,
/// `/etc/config/x`): a name says where the error happened, not that a
/// setting was rejected.
fn inside_a_name(text: &str, start: usize, end: usize) -> bool {
    let joins = |c: char| matches!(c, '.' | '_' | '/' | '\\');
    let before = text[..start].chars().next_back();
    let after = text[end..].chars().next();
    // A flag (`--config`) is matched with its dashes: only a word can sit in a name.
    let word = text[start..end]
        .trim()
        .chars()
        .next()
        .is_some_and(char::is_alphabetic);
    word && (before.is_some_and(joins) || after.is_some_and(joins))
}

/// The canonical names of gRPC status codes (grpc/grpc doc/statuscodes.md;
/// grpc-go codes/codes.go): upper-case with underscores like a variable,
/// but a call's outcome, not a setting.
fn is_status_code(word: &str) -> bool {
    const GRPC_CODES: &[&str] = &[
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "OUT_OF_RANGE",
        "DATA_LOSS",
    ];
    GRPC_CODES.contains(&word.trim())
}

fn check_bad_config(cx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(f) = cx.from_logs(Cause::BadConfig, |s| {
        format!(
            "the program rejected its configuration: {}",
            s.hit.sig.meaning
        )
    }) {
        out.push(
            f.fix("correct the flag, value or variable the log line names")
                .cmd(cx.logs_previous_cmd(cx.focus_name())),
        );
    }
    // An exception whose message names a variable, a flag or a setting.
    for s in cx.marker_support(SigKind::Exception) {
        let body = crate::text::strip_log_prefix(&s.hit.line.text);
        let Some(m) = CONFIG_WORDS
            .find_iter(body)
            .find(|m| !inside_a_name(body, m.start(), m.end()) && !is_status_code(m.as_str()))
        else {
            continue;
        };
        let mut f = Finding::new(
            Cause::BadConfig,
            (s.score + adjust::DECISIVE_LINE).min(Strength::Moderate.score()),
            format!(
                "the program stopped on its configuration: the error names `{}`",
                m.as_str().trim().trim_start_matches('`')
            ),
        )
        .container(s.container.as_deref().or(cx.focus_name()))
        .cite(&s.cite());
        if m.as_str().ends_with("_PORT") || m.as_str().ends_with("_HOST") || body.contains("tcp://")
        {
            f = f
                .fix("a Service named like the program's variable prefix injects <NAME>_PORT=tcp://... into every pod: rename that Service or set `enableServiceLinks: false` in the pod spec")
                .why("Kubernetes service links set variables like <SERVICE>_PORT=tcp://IP:PORT, which collide with programs that read <PREFIX>_PORT as a number");
        }
        out.push(
            f.fix("set the variable or flag the error names to a valid value")
                .cmd(cx.logs_previous_cmd(s.container.as_deref())),
        );
        break;
    }
    out
}

pub static AUTH_FAILURE: Rule = Rule {
    cause: Cause::AuthFailure,
    doc: RuleDoc {
        what: "Credentials are missing, wrong or expired, or the ServiceAccount lacks an RBAC permission the program needs.",
        why: "The program authenticates at start (a database, a model hub, an object store, the Kubernetes API), is refused, and exits; the credentials are the same on every restart.",
        evidence: "`401 Unauthorized`, `403 Forbidden`, `forbidden: User \"system:serviceaccount:...\" cannot get resource`, `password authentication failed`, `Access denied for user`, `Invalid user token`, `InvalidAccessKeyId`; Secret keys that are empty (0 bytes) while the program fails to authenticate.",
        example: "leases.coordination.k8s.io \"x\" is forbidden: User \"system:serviceaccount:ingress:cainjector\" cannot get resource \"leases\" in API group \"coordination.k8s.io\"",
        fix: "Fix the credential at its source (the Secret's value, a rotated token, the database user's password), or grant the ServiceAccount the missing verb on the resource with a Role/ClusterRole and binding (crashdoc writes the rule from the message).",
        false_positives: "A 403 from a registry during image pull is image-pull; a permission denied on a file is permission.",
    },
    outranks: &[super::OUTRANKS_APP_CRASH],
    reads: &[Place::Log],
    check: check_auth,
};

static RBAC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"User "(system:serviceaccount:([^:"]+):([^"]+))" cannot (\w+) resource "([^"]+)" in API group "([^"]*)"(?: in the namespace "([^"]+)")?"#).expect("static regex")
});
static CREDENTIAL_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)key|token|password|secret|credential|passwd|auth").expect("static regex")
});

fn check_auth(cx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(mut f) = cx.from_logs(Cause::AuthFailure, |s| {
        let l = &s.hit.line.text;
        if let Some(c) = RBAC.captures(l) {
            format!("ServiceAccount {} may not {} {} (API group \"{}\"): RBAC denies what the program needs", &c[3], &c[4], &c[5], &c[6])
        } else if classes::is("auth.model-hub", l) {
            "the model hub refused the token (missing, invalid or without access to a gated model)".to_string()
        } else {
            format!("authentication failed: {}", s.hit.sig.meaning)
        }
    }) {
        if let Some(c) = f.evidence.first().and_then(|e| RBAC.captures(&e.text).map(|c| (c[2].to_string(), c[3].to_string(), c[4].to_string(), c[5].to_string(), c[6].to_string()))) {
            let (ns, sa, verb, resource, group) = c;
            f = f.fix(format!(
                "grant the missing permission:\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: {sa}-{resource}\n  namespace: {ns}\nrules:\n- apiGroups: [\"{group}\"]\n  resources: [\"{resource}\"]\n  verbs: [\"{verb}\"]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: {sa}-{resource}\n  namespace: {ns}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: {sa}-{resource}\nsubjects:\n- kind: ServiceAccount\n  name: {sa}\n  namespace: {ns}"
            ))
            .cmd(format!("kubectl auth can-i {verb} {resource}{} --as=system:serviceaccount:{ns}:{sa} -n {ns}", if group.is_empty() { String::new() } else { format!(".{group}") }));
        } else if f.summary.contains("model hub")
            || f
                .evidence
                .iter()
                .any(|e| classes::is("auth.model-hub", &e.text))
        {
            if !f.summary.contains("model hub") {
                f.summary = "the model hub refused the token (missing, invalid or without access to a gated model)".to_string();
            }
            f = f
                .fix("check the token Secret the pod passes as HF_TOKEN: a valid token of an account that has accepted the model's license (gated models need both)")
                .fix("or pre-load the weights onto a volume and run offline (HF_HUB_OFFLINE=1) so the pod needs no token");
        } else {
            f = f.fix("check the credential the program uses (the Secret's value, its key name, rotation or expiry) against the service it logs in to");
        }
        out.push(f.cmd(cx.logs_previous_cmd(cx.focus_name())));
    }
    // Empty credential keys in a Secret, while the pod fails.
    for o in &cx.pod.config_objects {
        let empty: Vec<&str> = o
            .keys
            .iter()
            .filter(|(k, size)| *size == Some(0) && CREDENTIAL_KEY.is_match(k))
            .map(|(k, _)| k.as_str())
            .collect();
        if empty.is_empty() {
            continue;
        }
        let failing = cx.pod.is_restarting()
            || cx.pod.logs.iter().any(|l| {
                l.hits
                    .iter()
                    .any(|h| matches!(h.sig.kind, SigKind::Cause(_)))
            });
        if !failing {
            continue;
        }
        out.push(
            Finding::new(Cause::AuthFailure, Strength::Strong.score(), format!("Secret {} has empty credential keys ({}): the program starts without credentials", o.name, empty.join(", ")))
                .container(cx.focus_name())
                .cite(&o.cite)
                .fix(format!("put the real values into Secret {} (its keys {} are 0 bytes)", o.name, empty.join(", ")))
                .cmd(cx.kubectl(&format!("describe secret {}", o.name))),
        );
    }
    out
}
