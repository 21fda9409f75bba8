//! Images and models: what is pulled, and whether it stays the same.

use super::{Check, Ctx, Severity, each_container, old_twin};
use crate::Hit;
use crate::k8s::{self, ContainerRef};
use crashdoc_core::Cause;

/// (repository, tag, digest) of an image reference.
pub(crate) fn split_image(image: &str) -> (&str, Option<&str>, Option<&str>) {
    let (rest, digest) = match image.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (image, None),
    };
    // A tag is after the last ':' that follows the last '/' (not a registry port).
    let slash = rest.rfind('/').map_or(0, |i| i + 1);
    match rest[slash..].rfind(':') {
        Some(c) => (&rest[..slash + c], Some(&rest[slash + c + 1..]), digest),
        None => (rest, None, digest),
    }
}

const MOVING: &[&str] = &["latest", "main", "master", "nightly", "edge"];

pub static MUTABLE_TAG: Check = Check {
    id: "image/mutable-tag",
    cause: Cause::ImagePull,
    severity: Severity::Warning,
    what: "An image has no tag, or a moving tag (`latest`, `main`, `master`, `nightly`, `edge`), and no digest.",
    why: "With no tag or `:latest` the API server defaults imagePullPolicy to Always: every restart pulls again, so a registry outage or rate limit (ErrImagePull, ImagePullBackOff) stops every restart, and two replicas of the same spec can run different code; a new image pushed under the tag can start crashing pods that were fine.",
    fix: "Pin a version tag, or better a digest (`image@sha256:...`).",
    source: "Kubernetes docs, Images: imagePullPolicy defaults to Always when the tag is `:latest` or omitted (pkg/apis/core/v1/defaults.go SetDefaults_Container).",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: web
        image: nginx:latest
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.27.2
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        each_container(cx, oi, true, |_, _, _, c| {
            let image = c.image();
            if image.is_empty() || image.contains("{{") {
                return;
            }
            let (repo, tag, digest) = split_image(image);
            if digest.is_some() {
                return;
            }
            let why = match tag {
                None => "has no tag (it means `latest`)".to_string(),
                Some(t) if MOVING.contains(&t) => format!("uses the moving tag `{t}`"),
                _ => return,
            };
            out.push(Hit {
                path: c.path.clone().key("image"),
                container: Some(c.name.clone()),
                message: format!(
                    "image `{image}` of `{}` {why}: every start pulls whatever it points to now",
                    c.name
                ),
                fix: format!("image: {repo}:X.Y.Z   # or {repo}@sha256:..."),
            });
        });
    },
};

pub static NO_DIGEST: Check = Check {
    id: "image/no-digest",
    cause: Cause::ImagePull,
    severity: Severity::Error,
    what: "Policy asks for digests (`--require-digest` or `require-digest: true` in the config) and an image has none.",
    why: "A tag can be moved or deleted in the registry; only a digest names exactly the bytes that were tested, and a deleted tag makes every new pod fail to pull (`manifest unknown`).",
    fix: "Reference the image by digest: `repo:tag@sha256:...` (the tag is kept for readers).",
    source: "OCI distribution spec (a digest addresses content; tags are mutable references); active only when policy asks for it.",
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
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.27.2@sha256:2d194184b067db3598771b4cf326cfe6ad5051937ba1132b8b7d4b0184e0d0a6
"#,
    fixture_flags: &["require-digest"],
    fixture_against: "",
    run: |cx, oi, out| {
        if !cx.options.require_digest {
            return;
        }
        each_container(cx, oi, true, |_, _, _, c| {
            let image = c.image();
            if image.is_empty() || split_image(image).2.is_some() {
                return;
            }
            out.push(Hit {
                path: c.path.clone().key("image"),
                container: Some(c.name.clone()),
                message: format!("image `{image}` of `{}` has no digest, and policy requires one", c.name),
                fix: format!("image: {image}@sha256:...   # `crane digest {image}` or `docker buildx imagetools inspect {image}`"),
            });
        });
    },
};

pub static DEFAULT_SHELL: Check = Check {
    id: "image/default-shell",
    cause: Cause::ExitZero,
    severity: Severity::Error,
    what: "A Deployment, StatefulSet, DaemonSet or ReplicaSet (or a bare Pod with restartPolicy Always) runs an image whose default process is a shell or an interactive interpreter (busybox, alpine, ubuntu, debian, centos, fedora, rockylinux, almalinux; python, node, ruby, php's cli) and sets no `command`, no `args`, no `tty` and no `stdin`.",
    why: "Without a terminal or an open stdin, `sh`, `bash`, `python3`, `node` or `irb` reads end-of-file at once and exits 0; the kubelet restarts it after every exit (restartPolicy Always), into CrashLoopBackOff with exit code 0 and `Completed`.",
    fix: "Set `command` (and `args`) to the program the container exists for; to keep a toolbox container idle, `command: [\"sleep\", \"infinity\"]`.",
    source: "Each image's default CMD from its Dockerfile (crates/crashdoc-core/catalog/images.yaml names the file: docker-library/busybox, alpinelinux/docker-alpine, debuerreotype/docker-debian-artifacts, docker-library/python, nodejs/docker-node, docker-library/ruby, docker-library/php, ...); Kubernetes docs, Define a Command and Arguments for a Container (no command and no args: the image's ENTRYPOINT and CMD run); the exit-zero rule of crashdoc-core reads the same knowledge from the status.",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: toolbox
spec:
  template:
    spec:
      containers:
      - name: toolbox
        image: busybox:1.36
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: toolbox
spec:
  template:
    spec:
      containers:
      - name: toolbox
        image: busybox:1.36
        command: ["sleep", "infinity"]
      - name: shell
        image: python:3.12-slim
        stdin: true
        tty: true
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        let obj = cx.obj(oi);
        // A bare Pod restarts too: its restartPolicy defaults to Always.
        if !k8s::restarts_on_exit(&obj.kind, &obj.value) {
            return;
        }
        let unread: Vec<&str> = obj
            .annotation(crate::SPEC_UNREAD_ANNOTATION)
            .map(|a| a.split(',').map(str::trim).collect())
            .unwrap_or_default();
        each_container(cx, oi, false, |_, _, _, c| {
            if unread.contains(&c.name.as_str()) {
                return;
            }
            let set = |k: &str| {
                c.v.get(k)
                    .is_some_and(|v| !v.is_null() && v != &serde_json::Value::Array(vec![]))
            };
            if set("command") || set("args") {
                return;
            }
            let on = |k: &str| c.v.get(k).and_then(serde_json::Value::as_bool) == Some(true);
            if on("tty") || on("stdin") {
                return;
            }
            let image = c.image();
            let Some(default) = crashdoc_core::images::default_process(image) else {
                return;
            };
            out.push(Hit {
                path: c.path.clone().key("image"),
                container: Some(c.name.clone()),
                message: format!(
                    "`{}` of this {} sets no command or args, so `{image}` runs its default `{}` ({}), which with no tty and no stdin exits 0 at once; the kubelet restarts it into CrashLoopBackOff",
                    c.name,
                    obj.kind,
                    default.command_line(),
                    default.process.words()
                ),
                fix: format!(
                    "- name: {}\n  image: {image}\n  command: [\"/path/to/your/program\"]   # the process this container exists for\n  # a toolbox kept idle instead: command: [\"sleep\", \"infinity\"]",
                    c.name
                ),
            });
        });
    },
};

pub static PULL_NEVER: Check = Check {
    id: "image/pull-policy-never",
    cause: Cause::ImagePull,
    severity: Severity::Warning,
    what: "A container sets `imagePullPolicy: Never`.",
    why: "The kubelet never pulls: on any node where the image was not preloaded the container fails with ErrImageNeverPull, so the pod works on one node and not on the next one it is scheduled to.",
    fix: "Use IfNotPresent (with a pinned tag) unless every node is provisioned with the image.",
    source: "Kubernetes docs, Images (imagePullPolicy Never); kubelet pkg/kubelet/images/image_manager.go (ErrImageNeverPull).",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: web
        image: registry.acme.io/web:4.2.0
        imagePullPolicy: Never
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: web
        image: registry.acme.io/web:4.2.0
        imagePullPolicy: IfNotPresent
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        each_container(cx, oi, true, |_, _, _, c| {
            if c.str("imagePullPolicy") != Some("Never") {
                return;
            }
            out.push(Hit {
                path: c.path.clone().key("imagePullPolicy"),
                container: Some(c.name.clone()),
                message: format!(
                    "`{}` is never pulled: it starts only on nodes that already have `{}`",
                    c.name,
                    c.image()
                ),
                fix: "imagePullPolicy: IfNotPresent".into(),
            });
        });
    },
};

/// The Hugging Face model id a model server is given, and whether a revision is pinned.
pub(crate) fn model_id(c: &ContainerRef) -> Option<(String, bool)> {
    let mut words: Vec<String> = c.strings("command");
    words.extend(c.strings("args"));
    // `sh -c "vllm serve ..."`: split the script too.
    let words: Vec<String> = words
        .iter()
        .flat_map(|w| w.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .collect();
    let mut id = None;
    let mut revision = false;
    for (i, w) in words.iter().enumerate() {
        let next = words.get(i + 1).cloned();
        let (flag, val) = match w.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (w.clone(), next.clone()),
        };
        match flag.as_str() {
            "--model" | "--model-id" | "--model-path" | "--model_id" => id = id.or(val),
            "--revision" | "--code-revision" => revision = true,
            "serve"
                if words
                    .get(i.wrapping_sub(1))
                    .is_some_and(|p| p.ends_with("vllm")) =>
            {
                id = id.or(next.filter(|n| !n.starts_with('-')))
            }
            _ => {}
        }
    }
    for e in ["MODEL_ID", "MODEL_NAME", "MODEL", "HF_MODEL_ID"] {
        if id.is_none() {
            id = c.env_value(e);
        }
    }
    if c.env_value("REVISION").is_some() || c.env_value("HF_REVISION").is_some() {
        revision = true;
    }
    let id = id?;
    let hub = !id.starts_with(['/', '.', '$'])
        && !id.contains("://")
        && id.matches('/').count() == 1
        && id.split('/').all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        });
    hub.then_some((id, revision))
}

pub static MODEL_REVISION: Check = Check {
    id: "image/model-revision-unpinned",
    cause: Cause::BadConfig,
    severity: Severity::Warning,
    what: "A model server (vLLM, TGI, SGLang, ...) loads a Hugging Face model id without a pinned revision (`--revision`, `REVISION`).",
    why: "Without a revision the server downloads the repository's current main branch at every cold start: a new commit to the model repo (a new config.json needing a newer server, a changed tokenizer, renamed weight files) makes pods that were fine fail at start, and replicas started on different days run different models.",
    fix: "Pin the commit: `--revision <commit sha>` (vLLM, SGLang, TGI) or `REVISION` (TGI); also `--tokenizer-revision` when the tokenizer is separate.",
    source: "vLLM engine arguments (`--revision`, `--tokenizer-revision`, `--code-revision`); TGI launcher (`--revision`, env REVISION); huggingface_hub downloads `main` when no revision is given.",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.6.3
        args: ["--model", "mistralai/Mistral-7B-Instruct-v0.3"]
"#,
    near_miss: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.6.3
        args: ["--model", "mistralai/Mistral-7B-Instruct-v0.3", "--revision", "e0bc86c23ce5aae1db576c8cca6f06f1f73af2db"]
"#,
    fixture_flags: &[],
    fixture_against: "",
    run: |cx, oi, out| {
        each_container(cx, oi, false, |_, _, _, c| {
            let Some(server) = k8s::model_server(c) else {
                return;
            };
            let Some((id, pinned)) = model_id(c) else {
                return;
            };
            if pinned {
                return;
            }
            out.push(Hit {
                path: c.path.clone().key(if c.v.get("args").is_some() { "args" } else { "env" }),
                container: Some(c.name.clone()),
                message: format!("{server} loads `{id}` at its current main branch: a new commit to the model repo changes what every cold start loads"),
                fix: "args: [..., \"--revision\", \"<commit sha of the tested snapshot>\"]".into(),
            });
        });
    },
};

pub static DIFF_IMAGE_CHANGED: Check = Check {
    id: "diff/image-changed",
    cause: Cause::AppCrash,
    severity: Severity::Warning,
    what: "Diff mode (`--against OLD`): a container's image changed between the two renders.",
    why: "A new image is new code: a changed entrypoint, a new required setting, a migration at start. Named so the reviewer of a chart bump looks at the release notes of each changed image before it ships.",
    fix: "Read the image's changelog for required settings and breaking changes; roll out with maxUnavailable 0 and `crashdoc verify`.",
    source: "The seed's chart-bump case (`helm diff upgrade` in CI).",
    example: r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  template:
    spec:
      containers:
      - name: api
        image: ghcr.io/acme/api:2.0.0
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
"#,
    run: |cx: &Ctx, oi, out| {
        let obj = cx.obj(oi);
        let Some(old) = old_twin(cx, obj) else { return };
        let Some((ospec, op)) = k8s::pod_spec(old) else {
            return;
        };
        let olds = k8s::containers(ospec, &op, true);
        each_container(cx, oi, true, |_, _, _, c| {
            let Some(o) = olds.iter().find(|o| o.name == c.name) else {
                return;
            };
            if o.image() == c.image() {
                return;
            }
            out.push(Hit {
                path: c.path.clone().key("image"),
                container: Some(c.name.clone()),
                message: format!(
                    "`{}` changes image from `{}` to `{}`",
                    c.name,
                    o.image(),
                    c.image()
                ),
                fix: format!(
                    "# review the changes between {} and {}\nimage: {}",
                    o.image(),
                    c.image(),
                    c.image()
                ),
            });
        });
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_parts() {
        assert_eq!(split_image("nginx"), ("nginx", None, None));
        assert_eq!(
            split_image("registry:5000/a/b"),
            ("registry:5000/a/b", None, None)
        );
        assert_eq!(
            split_image("registry:5000/a/b:1.2"),
            ("registry:5000/a/b", Some("1.2"), None)
        );
        assert_eq!(split_image("a@sha256:ab"), ("a", None, Some("sha256:ab")));
    }
}
