//! Where the pod runs and what it runs on: images, scheduling, eviction,
//! volumes, disks and the security context.

use super::facts::{above_its_line, directory_written, paths_in};
use super::{Context, Finding, Outrank, Rule, RuleDoc};
use crate::catalog::Place;
use crate::causes::Cause;
use crate::classes;
use crate::model::*;
use crate::scan::LogKind;
use crate::strength::{Strength, adjust};

/// Whether any container got as far as being created (so the pod was scheduled).
fn started(pod: &Pod) -> bool {
    pod.containers.iter().any(|c| {
        c.last_state.is_some()
            || c.restarts() > 0
            || c.state.as_ref().is_some_and(|s| {
                s.kind != StateKind::Waiting
                    || s.reason
                        .as_ref()
                        .is_some_and(|r| r.value != "ContainerCreating" && r.value != "Pending")
            })
    })
}

pub static NODE_PRESSURE: Rule = Rule {
    cause: Cause::NodePressure,
    doc: RuleDoc {
        what: "A pod evicted by the kubelet, or killed because the node ran low on memory or disk, not because of its own limit.",
        why: "Under node pressure the kubelet evicts the pods that use most above their requests; the controller recreates them and they are evicted again while the node stays short. Ephemeral storage over its limit (a model cache on the container's filesystem) evicts the pod as well.",
        evidence: "pod status reason Evicted and its message (`The node was low on resource: ephemeral-storage`), Evicted events, ContainerStatusUnknown after an eviction, node conditions MemoryPressure / DiskPressure.",
        example: "Status:  Failed\nReason:  Evicted\nMessage: The node was low on resource: ephemeral-storage. Container llm was using 57900024Ki, request is 0",
        fix: "Set requests that match real usage (memory, ephemeral-storage) so the scheduler places the pod where it fits; move large caches (HF_HOME, /tmp downloads) onto a volume; give ephemeral-storage a limit that covers them.",
        false_positives: "An eviction by the API (a drain, preemption) also says Evicted: the message then names no resource. Karpenter's `Evicted pod: <reason>` and the autoscaler's scale-down are the node going away, reported as `terminated` (catalog/node-lifecycle.yaml).",
    },
    outranks: &[super::OUTRANKS_APP_CRASH],
    reads: &[Place::Log],
    check: check_node_pressure,
};

fn check_node_pressure(cx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    let pod = cx.pod;
    let resource_of = |m: &str| -> Option<&'static str> {
        let class = classes::which(
            &[
                "evicted.ephemeral-storage",
                "evicted.memory",
                "evicted.disk",
            ],
            m,
        )?;
        Some(match class.id.as_str() {
            "evicted.ephemeral-storage" => "ephemeral-storage",
            "evicted.memory" => "memory",
            _ => "disk",
        })
    };
    let mut f = Finding::new(Cause::NodePressure, 0.0, String::new()).container(cx.focus_name());
    let mut message = String::new();
    if let Some(r) = pod.reason.as_ref().filter(|r| r.value == "Evicted") {
        f.score = Strength::Certain.score();
        f = f
            .cite(&r.cite)
            .cite_opt(pod.message.as_ref().map(|m| &m.cite));
        message = pod
            .message
            .as_ref()
            .map(|m| m.value.clone())
            .unwrap_or_default();
    }
    if let Some(s) = pod.listed_status.as_ref().filter(|s| s.value == "Evicted") {
        f.score = f.score.max(Strength::Certain.score());
        f = f.cite(&s.cite);
    }
    // Karpenter and the autoscaler's drains also record `Evicted` on the
    // pod: that eviction is the node going away, for the `terminated` rule.
    for e in cx.events_with(|e| {
        e.reason == "Evicted" && super::facts::node_lifecycle(&e.message).is_none()
    }) {
        f.score = f.score.max(Strength::Certain.score());
        f = f.cite(&e.cite);
        if message.is_empty() {
            message = e.message.clone();
        }
    }
    if let Some(lf) = cx.from_logs(Cause::NodePressure, |s| s.hit.sig.meaning.to_string()) {
        f.score = f.score.max(lf.score);
        for c in &lf.evidence {
            if message.is_empty() && c.text.contains("resource") {
                message = c.text.clone();
            }
            f = f.cite(c);
        }
    }
    if let Some(s) = pod
        .listed_status
        .as_ref()
        .filter(|s| s.value == "ContainerStatusUnknown")
    {
        // The kubelet lost track of the container: typical after an eviction.
        f.score = if f.score > 0.0 {
            (f.score + adjust::REPEATED).min(adjust::CEILING)
        } else {
            Strength::Weak.score()
        };
        f = f.cite(&s.cite);
    }
    if let Some(n) = &pod.node {
        for c in n
            .conditions
            .iter()
            .filter(|c| c.value.contains("Pressure=True"))
        {
            f.score = f.score.max(Strength::Weak.score());
            f = f.cite(&c.cite);
        }
    }
    if f.score <= 0.0 {
        return out;
    }
    let resource = resource_of(&message);
    f.summary = match resource {
        Some("ephemeral-storage") => "the kubelet evicted the pod for ephemeral storage: the container wrote more to its own filesystem (caches, downloads, logs) than the node or its limit allows".into(),
        Some("memory") => "the kubelet evicted the pod because the node ran low on memory and this pod used the most above its request".into(),
        Some(_) => "the kubelet evicted the pod because the node ran low on disk".into(),
        None => "the pod was evicted from its node (node pressure or an API eviction)".into(),
    };
    f = match resource {
        Some("ephemeral-storage") => f
            .fix("move large writes (model caches such as HF_HOME, downloads, /tmp) onto a volume (an emptyDir with sizeLimit, or a PVC) instead of the container's filesystem")
            .fix("set resources.requests and limits for ephemeral-storage that cover what the container writes"),
        Some("memory") => f.fix("set the memory request to the real usage so the scheduler places the pod on a node with room; pods using far above their request are evicted first"),
        _ => f.fix("check the node's conditions and free the resource, or move the pod with requests that reflect its use"),
    };
    f = f.cmd(cx.describe_cmd());
    if let Some(n) = &pod.node_name {
        f = f.cmd(format!("kubectl describe node {n}"));
    }
    out.push(f);
    out
}

pub static VOLUME: Rule = Rule {
    cause: Cause::Volume,
    doc: RuleDoc {
        what: "A volume that cannot be mounted or used: a mount failure, a volume attached elsewhere (RWO Multi-Attach), a read-only mount the program writes to, ownership the process cannot change.",
        why: "The container cannot start until its volumes mount, or starts and fails on its first write to the volume, on every restart.",
        evidence: "FailedMount / FailedAttachVolume / Multi-Attach events; `Read-only file system`; a permission or write error on a path under a volumeMount (readOnly: true, a ConfigMap, Secret, downwardAPI or projected volume, which the kubelet always mounts read-only, or owned by root without fsGroup).",
        example: "RuntimeError: Unable to write to NIM_CACHE_PATH (/mnt/models/cache)\nContainers:\n  nim:\n    Mounts:\n      /mnt/models from models (ro)",
        fix: "Mount the volume read-write where the program writes, or point the program's cache at a writable volume; set securityContext.fsGroup (and fsGroupChangePolicy) so a non-root user owns the volume; for RWO volumes, let the old pod release it (Recreate strategy) or use RWX storage.",
        false_positives: "A ConfigMap or Secret volume that does not exist, or whose items[] name a key it lacks, also fails to mount: that is reported as config-ref-missing (which declares it outranks this). `Read-only file system` on a path under no volumeMount of a container with securityContext.readOnlyRootFilesystem: true is the container's own root filesystem: reported as permission (which declares it outranks this in that situation).",
    },
    outranks: &[super::OUTRANKS_APP_CRASH],
    reads: &[Place::Log],
    check: check_volume,
};

fn check_volume(cx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for e in cx.events_with(|e| {
        (e.reason == "FailedMount" || e.reason == "FailedAttachVolume")
            && !classes::is("volume.ref-not-found", &e.message)
    }) {
        let multi = classes::is("volume.multi-attach", &e.message);
        let f = Finding::new(
            Cause::Volume,
            if multi { Strength::Certain.score() } else { Strength::Decisive.score() },
            if multi {
                "the volume is still attached to another pod's node (ReadWriteOnce): the new pod cannot attach it".to_string()
            } else {
                format!("a volume failed to mount: {}", crate::text::clip(&e.message, 160))
            },
        )
        .container(cx.mounting(&e.message).or(cx.focus_name()))
        .cite(&e.cite)
        .cmd(cx.kubectl("get pvc"))
        .cmd(cx.kubectl("get volumeattachments"));
        out.push(if multi { f.fix("use strategy type Recreate for a Deployment with a ReadWriteOnce volume, or storage that supports ReadWriteMany") } else { f.fix("fix the volume source named in the event (PVC bound? storage class? node plugin?)") });
    }
    // The runtime could not mount a volume into the container (a start error).
    let mut start_msgs: Vec<(&str, &Cite)> = cx
        .pod
        .events
        .iter()
        .filter(|e| e.reason == "Failed")
        .map(|e| (e.message.as_str(), &e.cite))
        .collect();
    start_msgs.extend(cx.state_messages());
    if let Some((m, cite)) = start_msgs
        .iter()
        .find(|(m, _)| crate::rules::facts::is_mount_error(m))
    {
        let onto_file = classes::is("start.onto-file", m);
        let target = m
            .split("to rootfs at \"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .map(str::to_string);
        let summary = match (&target, onto_file) {
            (Some(t), true) => format!(
                "the runtime cannot mount a volume at {t}: a directory is mounted onto a file (or the reverse)"
            ),
            (Some(t), false) => format!("the runtime cannot mount a volume at {t}"),
            (None, _) => "the runtime cannot mount one of the container's volumes".to_string(),
        };
        let mut f = Finding::new(Cause::Volume, Strength::Decisive.score(), summary)
            .container(cx.focus_name())
            .cite(cite);
        if onto_file {
            f = f.fix("to put one key of a ConfigMap at a file path, mount it with subPath: KEY (or items: with a path), not the whole volume onto the file");
        }
        out.push(f.cmd(cx.describe_cmd()));
    }
    if let Some(f) = cx.from_logs(Cause::Volume, |s| s.hit.sig.meaning.to_string()) {
        out.push(f.fix("mount the volume read-write where the program writes, or point the program at a writable path").cmd(cx.describe_cmd()));
    }
    // Permission or write failures on a path under a volume mount.
    let mounts: Vec<&Mount> = cx
        .pod
        .containers
        .iter()
        .flat_map(|c| c.mounts.iter())
        .filter(|m| !m.path.starts_with("/var/run/secrets"))
        .collect();
    for s in cx
        .log_support(Cause::Permission)
        .into_iter()
        .chain(cx.log_support(Cause::Volume))
    {
        for p in paths_in(&s.hit.line.text) {
            let Some(m) = mounts.iter().find(|m| {
                p == m.path || p.starts_with(&format!("{}/", m.path.trim_end_matches('/')))
            }) else {
                continue;
            };
            let summary = if let Some(src) = m.kubelet_read_only().filter(|_| !m.read_only) {
                format!(
                    "the program writes to {p}, which is under {} from the {} volume {}: the kubelet always mounts a {} volume read-only",
                    m.path, src.value, m.name, src.value
                )
            } else if m.read_only {
                format!(
                    "the program writes to {p}, which is under the read-only volume mount {} ({})",
                    m.path, m.name
                )
            } else {
                format!(
                    "the program cannot write to {p} on the volume mounted at {} ({}): the volume's ownership or mode does not let the container's user write",
                    m.path, m.name
                )
            };
            // Naming the mount says more than the generic line: it ranks just above it.
            let generic = cx
                .log_support(Cause::Volume)
                .first()
                .map_or(0.0, |g| g.score);
            let base = if m.is_read_only() {
                Strength::Decisive
            } else {
                Strength::Strong
            };
            let f = Finding::new(Cause::Volume, above_its_line(base, generic), summary)
                .container(s.container.as_deref().or(cx.focus_name()))
                .cite(&s.cite())
                .cite(&m.cite)
                .cite_opt(m.kubelet_read_only().map(|f| &f.cite))
                .fix(if m.kubelet_read_only().is_some() && !m.read_only {
                    format!("write somewhere else: mount an emptyDir for what the program writes and point it there (copy the files of {} into it in an init container if the program must change them); readOnly: false does not make a {} volume writable", m.name, m.kubelet_read_only().map_or("", |s| s.value.as_str()))
                } else if m.read_only {
                    format!("mount {} read-write (readOnly: false), or point the program's cache at a separate writable volume", m.path)
                } else {
                    "set securityContext.fsGroup to the container's group so the volume is group-writable, or fix ownership with an init step".to_string()
                })
                .cmd(cx.describe_cmd());
            out.push(f);
            break;
        }
    }
    out
}

pub static DISK_FULL: Rule = Rule {
    cause: Cause::DiskFull,
    doc: RuleDoc {
        what: "No space (or no inodes) left on a volume, /dev/shm or the node's disk.",
        why: "The program fails at its first write after the disk filled; the data stays, so every restart fails the same way until space is freed or the volume grows.",
        evidence: "`No space left on device`, `ENOSPC`, `disk quota exceeded` in the logs; the PVC's capacity; NCCL or PyTorch failing to create shared memory (a 64 MiB /dev/shm).",
        example: "PANIC:  could not write to file \"pg_wal/xlogtemp\": No space left on device",
        fix: "Grow the volume (expand the PVC if its StorageClass allows), add retention or cleanup, or for /dev/shm mount an emptyDir with medium: Memory and a sizeLimit.",
        false_positives: "A full ephemeral-storage that gets the pod evicted is reported as node-pressure.",
    },
    outranks: &[super::OUTRANKS_APP_CRASH],
    reads: &[Place::Log],
    check: check_disk_full,
};

fn check_disk_full(cx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    // `ENOSPC` from inotify (`System limit for number of file watchers
    // reached`) is the node's watch limit, not a full disk.
    let sup = cx.log_support(Cause::DiskFull);
    let inotify = sup
        .iter()
        .any(|s| classes::is("disk.watch-limit", &s.hit.line.text));
    let real_space = sup
        .iter()
        .any(|s| classes::is("disk.space", &s.hit.line.text));
    if inotify && !real_space {
        return out;
    }
    if let Some(mut f) = cx.from_logs(Cause::DiskFull, |s| {
        let l = &s.hit.line.text;
        if classes::is("disk.shared-memory", l) {
            "shared memory (/dev/shm) is full: the container's default 64 MiB /dev/shm is too small for NCCL / PyTorch workers".to_string()
        } else {
            let where_ = paths_in(l).first().map(|p| format!(" writing {p}")).unwrap_or_default();
            format!("the disk is full{where_}: no space left on the device")
        }
    }) {
        if f.summary.contains("/dev/shm") {
            f = f.fix("mount a larger /dev/shm:\nvolumes:\n- name: dshm\n  emptyDir:\n    medium: Memory\n    sizeLimit: 8Gi\n# and in the container:\nvolumeMounts:\n- name: dshm\n  mountPath: /dev/shm");
        } else {
            for p in &cx.pod.pvcs {
                if let Some(cap) = &p.capacity {
                    f = f.cite(&p.cite).fix(format!("expand PVC {} beyond {cap} (if its StorageClass allows volume expansion) or free space with retention", p.name));
                }
            }
            f = f.fix("free space (retention, cleanup of old data) or grow the volume");
        }
        out.push(f.cmd(cx.kubectl(&format!("exec {} -- df -h", cx.pod_name()))).cmd(cx.kubectl("get pvc")));
    }
    if let Some(n) = &cx.pod.node {
        for c in n
            .conditions
            .iter()
            .filter(|c| c.value.starts_with("DiskPressure=True"))
        {
            out.push(
                Finding::new(
                    Cause::DiskFull,
                    Strength::Weak.score(),
                    "the node reports DiskPressure",
                )
                .container(cx.focus_name())
                .cite(&c.cite),
            );
        }
    }
    out
}

pub static PERMISSION: Rule = Rule {
    cause: Cause::Permission,
    doc: RuleDoc {
        what: "The security context forbids what the process needs: runAsNonRoot with an image that runs as root, a non-root user writing to a root-owned path, a sysctl or chown the container may not do, a write to the container's own filesystem under readOnlyRootFilesystem: true.",
        why: "The kubelet refuses to start the container (CreateContainerConfigError), or the program fails on the forbidden operation at every start. With readOnlyRootFilesystem the runtime mounts the image's filesystem read-only, so every write outside a volume fails with EROFS.",
        evidence: "events `container has runAsNonRoot and image will run as root` / `image has non-numeric user`; `Permission denied`, `Operation not permitted`, `EACCES`/`EPERM` in the logs; the pod's runAsUser / runAsNonRoot; `Read-only file system` (EROFS) on a path under none of the container's volumeMounts, with the container's securityContext.readOnlyRootFilesystem: true (from the pod YAML or JSON: `kubectl describe` does not print it, and without it this is not claimed).",
        example: "Error: container has runAsNonRoot and image will run as root",
        fix: "Set runAsUser to a numeric non-root UID the image supports (or build the image with `USER 1000`), give the volume an fsGroup, drop operations that need root (chown, sysctl) into an init container that is allowed them or into the node setup. Under readOnlyRootFilesystem, keep it and mount an emptyDir at the directory the program writes (crashdoc names it from the log line).",
        false_positives: "A permission error on a path under a volume mount is usually the volume's ownership or read-only mode: reported as volume when the mount is known. `Read-only file system` under a readOnly mount, or a ConfigMap, Secret, downwardAPI or projected volume (always mounted read-only), is volume too.",
    },
    outranks: &[
        Outrank {
            cause: Cause::Volume,
            why: "the path the program failed to write with EROFS lies under none of the container's volumeMounts and the container sets securityContext.readOnlyRootFilesystem: true, so the read-only file system is the container's own root filesystem, made read-only by its security context (the kubelet passes readOnlyRootFilesystem to the runtime as the CRI's readonly_rootfs, kubernetes v1.36.3 pkg/kubelet/kuberuntime/security_context.go convertToRuntimeSecurityContext, and the runtime mounts the image's root read-only, OCI runtime-spec root.readonly); no mount is involved and no volume fix helps",
            only: Some(READ_ONLY_ROOT),
        },
        super::OUTRANKS_APP_CRASH,
    ],
    reads: &[Place::Log],
    check: check_permission,
};

/// The basis of the permission finding that a write failed on the
/// container's read-only root filesystem (`Outrank::only` above).
const READ_ONLY_ROOT: &str = "the read-only root filesystem";

/// What the runtime mounts in every container besides its volumeMounts:
/// not the root filesystem (`/sys` is read-only in an unprivileged
/// container whatever readOnlyRootFilesystem says). containerd v2.2
/// pkg/oci/spec.go populateDefaultUnixSpec: /proc, /dev (and /dev/pts,
/// /dev/shm, /dev/mqueue), /sys.
const RUNTIME_MOUNTS: &[&str] = &["/proc", "/dev", "/sys"];

/// The image's system directories (Filesystem Hierarchy Standard 3.0,
/// chapters 3 and 4): an emptyDir mounted over one hides the programs and
/// libraries the container runs, so the fix never mounts one there.
const SYSTEM_DIRECTORIES: &[&str] = &[
    "/bin", "/boot", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/sbin", "/usr", "/var",
];

/// Whether `path` is `root` or under it.
fn under(path: &str, root: &str) -> bool {
    path.strip_prefix(root)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// A write that failed with EROFS (`Read-only file system`, however the
/// program spells it) on a path under none of the container's volumeMounts,
/// in a container whose securityContext.readOnlyRootFilesystem is true: the
/// root filesystem its own security context made read-only. Not claimed
/// when readOnlyRootFilesystem is unknown (describe output does not print
/// it) or the path is under a mount (that is the volume rule's reading).
fn read_only_root(cx: &Context) -> Option<Finding> {
    // The catalog reads EROFS as volume support; which file system it is
    // on is told by the spec.
    let lines = cx.log_support(Cause::Volume);
    for s in &lines {
        let line = &s.hit.line.text;
        // The program's own output: not the text of a structured input
        // (a runtime's start error in a status message is the volume rule's).
        if s.kind == Some(LogKind::Text) || !classes::is("fs.read-only", line) {
            continue;
        }
        let c = match s.container.as_deref() {
            Some(n) => cx.pod.container(n),
            None => cx.focus,
        };
        let Some(c) = c else { continue };
        let Some(ro) = c.read_only_root.as_ref().filter(|f| f.value) else {
            continue;
        };
        // The innermost error names its path last (Go wraps `what: op PATH: err`).
        let Some(&path) = paths_in(line).last() else {
            continue;
        };
        if c.mounts.iter().any(|m| m.covers(path)) || RUNTIME_MOUNTS.iter().any(|r| under(path, r))
        {
            continue;
        }
        let name = cx.container_or_focus(Some(c));
        let mut f = Finding::new(
            Cause::Permission,
            above_its_line(Strength::Decisive, s.score),
            format!(
                "the root filesystem is read-only (securityContext.readOnlyRootFilesystem: true) and {path} is under no volumeMount: the program cannot write there"
            ),
        )
        .container(name)
        .cite(&s.cite())
        .cite(&ro.cite)
        .on(READ_ONLY_ROOT);
        f = match directory_written(line, path) {
            Some(dir) if !SYSTEM_DIRECTORIES.contains(&dir) => f.fix(empty_dir_fix(c, dir)),
            Some(dir) => f.fix(format!("keep readOnlyRootFilesystem: true and point the program at a directory mounted from an emptyDir (for example /tmp): an emptyDir over {dir} would hide the image's {dir}")),
            None => f.fix("keep readOnlyRootFilesystem: true and point the program at a directory mounted from an emptyDir (for example /tmp): it writes at the root of the filesystem, where no volume can be mounted"),
        };
        return Some(
            f.why(format!(
                "{path} is under none of the container's volumeMounts ({}), so the read-only file system is the container's root",
                if c.mounts.is_empty() {
                    "it has none".to_string()
                } else {
                    c.mounts
                        .iter()
                        .map(|m| m.path.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ))
            .cmd(cx.kubectl(&format!(
                "get pod {} -o jsonpath='{{.spec.containers[{sel}].securityContext}} {{.spec.containers[{sel}].volumeMounts}}'",
                cx.pod_name(),
                sel = if c.name.is_empty() {
                    "*".to_string()
                } else {
                    format!("?(@.name==\"{}\")", c.name)
                }
            ))),
        );
    }
    None
}

/// The fix for a write under a read-only root filesystem: an emptyDir
/// mounted at the directory the program writes, readOnlyRootFilesystem kept.
fn empty_dir_fix(c: &Container, dir: &str) -> String {
    let mut volume: String = dir
        .trim_matches('/')
        .to_ascii_lowercase()
        .chars()
        .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    volume.truncate(50);
    let volume = volume.trim_end_matches('-');
    let mut volume = if volume.is_empty() {
        "writable".to_string()
    } else {
        volume.to_string()
    };
    if c.mounts.iter().any(|m| m.name == volume) {
        volume.push_str("-rw");
    }
    let container = if c.name.is_empty() {
        "CONTAINER"
    } else {
        &c.name
    };
    format!(
        "keep readOnlyRootFilesystem: true and give the program a writable {dir}: mount an emptyDir there (it starts empty and hides what the image has at {dir}; if the image ships files there, copy them in with an init container or point the program at another mounted directory):\nspec:\n  containers:\n  - name: {container}\n    securityContext:\n      readOnlyRootFilesystem: true\n    volumeMounts:\n    - name: {volume}\n      mountPath: {dir}\n  volumes:\n  - name: {volume}\n    emptyDir: {{}}"
    )
}

fn check_permission(cx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut messages: Vec<(&str, &Cite)> = cx
        .pod
        .events
        .iter()
        .map(|e| (e.message.as_str(), &e.cite))
        .collect();
    messages.extend(cx.state_messages());
    if let Some((m, cite)) = messages
        .iter()
        .find(|(m, _)| classes::is("security.run-as-non-root", m))
    {
        let nonnumeric = classes::is("security.non-numeric-user", m);
        let mut f = Finding::new(
            Cause::Permission,
            Strength::Certain.score(),
            if nonnumeric {
                "runAsNonRoot is set and the image names its user by name, so the kubelet cannot verify it is not root and refuses to start the container".to_string()
            } else {
                "runAsNonRoot is set but the image runs as root (UID 0), so the kubelet refuses to start the container".to_string()
            },
        )
        .container(cx.focus_name())
        .cite(cite)
        .fix("set securityContext.runAsUser to the image's numeric non-root UID (for example 1000), or build the image with a numeric `USER`")
        .cmd(cx.kubectl(&format!("get pod {} -o jsonpath='{{.spec.securityContext}} {{.spec.containers[*].securityContext}}'", cx.pod_name())));
        if let Some(c) = cx
            .pod
            .containers
            .iter()
            .find_map(|c| c.run_as_non_root.as_ref())
        {
            f = f.cite(&c.cite);
        }
        out.push(f);
    }
    out.extend(read_only_root(cx));
    if let Some(mut f) = cx.from_logs(Cause::Permission, |s| {
        let l = &s.hit.line.text;
        let what =
            if let Some(c) = classes::which(&["permission.chown-chmod", "permission.sysctl"], l) {
                c.meaning.as_str()
            } else {
                s.hit.sig.meaning
            };
        what.to_string()
    }) {
        if let Some(c) = cx
            .pod
            .containers
            .iter()
            .find_map(|c| c.run_as_user.as_ref())
        {
            f = f.cite(&c.cite);
            f.summary
                .push_str(&format!(" (it runs as UID {})", c.value));
        }
        let l = f
            .evidence
            .first()
            .map(|e| e.text.clone())
            .unwrap_or_default();
        if classes::is("permission.chown-chmod", &l) {
            f = f.fix("let Kubernetes set the volume's group with securityContext.fsGroup instead of chown in the container, or run that step in an init container allowed to (runAsUser: 0)");
        } else if classes::is("permission.sysctl", &l) {
            f = f.fix("set the sysctl on the node (or in a privileged init container) instead of in the application container");
        } else {
            f = f.fix("run as a user that may access the path (runAsUser / fsGroup), or make the path writable for it");
        }
        out.push(f.cmd(cx.describe_cmd()));
    }
    out
}

pub static IMAGE_PULL: Rule = Rule {
    cause: Cause::ImagePull,
    doc: RuleDoc {
        what: "The image cannot be pulled: ErrImagePull / ImagePullBackOff. Not a crash loop: the container never ran.",
        why: "A tag that does not exist, a wrong registry or repository, missing pull credentials, or a registry rate limit; the kubelet retries with back-off.",
        evidence: "waiting reason ImagePullBackOff / ErrImagePull / InvalidImageName, `Init:ImagePullBackOff` in `get pods`, events `Failed to pull image`, `Back-off pulling image`, and their message (`manifest unknown`, `not found`, `unauthorized`, `toomanyrequests`).",
        example: "Normal   BackOff  kubelet  Back-off pulling image \"ghcr.io/llm-d/async-processor:v0.6.1\"\nWarning  Failed   kubelet  Error: ImagePullBackOff",
        fix: "Fix the image reference (registry, repository, tag), add an imagePullSecret for a private registry, or mirror the image / authenticate to lift rate limits.",
        false_positives: "None known: the reason is explicit. The message tells which of the causes above applies.",
    },
    outranks: &[super::OUTRANKS_APP_CRASH],
    reads: &[Place::Event, Place::State],
    check: check_image_pull,
};

fn check_image_pull(cx: &Context) -> Vec<Finding> {
    // What the catalog reads as a pull failure in the pod's status (the
    // waiting reason, the STATUS column) and in its events (the kubelet's
    // and the runtime's pull messages, the reasons of Kubernetes' vocabulary).
    let sup: Vec<_> = cx
        .catalog_support(Cause::ImagePull)
        .into_iter()
        .filter(|s| matches!(s.at, Place::State | Place::Event))
        .collect();
    if sup.is_empty() {
        return vec![];
    }
    let waiting_now = sup.iter().any(|s| s.at == Place::State);
    let events: Vec<_> = sup.iter().filter(|s| s.at == Place::Event).collect();
    let mut f = Finding::new(Cause::ImagePull, Strength::Certain.score(), String::new());
    for s in sup
        .iter()
        .filter(|s| s.at == Place::State)
        .take(2)
        .chain(events.iter().copied().take(3))
    {
        f = f.cite(&s.cite());
        if f.container.is_none() {
            f = f.container(s.container.as_deref());
        }
    }
    if f.container.is_none() {
        let init = cx
            .pod
            .listed_status
            .as_ref()
            .is_some_and(|s| s.value.starts_with("Init:"));
        let from_event = cx
            .pod
            .events
            .iter()
            .find(|e| {
                events
                    .iter()
                    .any(|s| s.cite().reference == e.cite.reference)
            })
            .and_then(crate::rules::facts::container_in_event);
        f = f.container(from_event.as_deref().or_else(|| {
            init.then(|| {
                cx.pod
                    .containers
                    .iter()
                    .find(|c| c.kind == ContainerKind::Init)
                    .map(|c| c.name.as_str())
            })
            .flatten()
        }));
    }
    // A pull failure that was followed by a successful pull, or by the
    // container running, is history: it does not explain the crash loop.
    let pulled_since = cx
        .pod
        .events
        .iter()
        .any(|e| e.reason == "Pulled" || classes::is("image.pulled", &e.message));
    let ran = cx.pod.containers.iter().any(|c| {
        c.last_state.is_some()
            || c.restarts() > 0
            || c.state
                .as_ref()
                .is_some_and(|s| s.kind == StateKind::Running)
    });
    if !waiting_now && (pulled_since || ran) {
        f.score = Strength::Hint.score();
        f.status_only = true;
        f = f.why("the image was pulled (or the container ran) after the pull failure: that failure is not what stops the pod now");
    }
    if f.container.is_none() {
        f = f.container(cx.focus_name());
    }
    // The most specific message says why: the catalog entry that reads its
    // innermost part (the runtime wraps the registry's answer: a tag that
    // does not exist, a refused credential, a rate limit).
    let why = events
        .iter()
        .filter(|s| !s.hit.sig.id.starts_with("k8s.reason."))
        .max_by_key(|s| {
            (
                crate::text::innermost(&s.hit.line.text, s.hit.sig.keywords),
                s.hit.sig.strength,
            )
        })
        .map(|s| s.hit.sig.meaning)
        .unwrap_or("the kubelet backs off pulling it; the pull error in the pod's events says why");
    f.summary = format!("the image cannot be pulled: {why}");
    let image = events.iter().find_map(|s| {
        s.hit
            .line
            .text
            .split('"')
            .nth(1)
            .filter(|x| x.contains(':') || x.contains('/'))
            .map(str::to_string)
    });
    if let Some(img) = &image {
        f.summary.push_str(&format!(" ({img})"));
    }
    f = f
        .fix("check the image reference (registry/repository:tag) exists: `crane ls REPO` or the registry's UI")
        .fix("for a private registry, add an imagePullSecret to the pod or its ServiceAccount")
        .cmd(cx.kubectl(&format!("get pod {} -o jsonpath='{{.spec.containers[*].image}} {{.spec.initContainers[*].image}}'", cx.pod_name())))
        .cmd(cx.kubectl(&format!("get events --field-selector involvedObject.name={}", cx.pod_name())));
    vec![f]
}

pub static UNSCHEDULABLE: Rule = Rule {
    cause: Cause::Unschedulable,
    doc: RuleDoc {
        what: "A pod that was never scheduled: Pending with FailedScheduling, or waiting for a PersistentVolumeClaim that cannot bind. Not a crash loop.",
        why: "No node has the requested cpu, memory or nvidia.com/gpu free, the pod does not tolerate the nodes' taints, its affinity matches no node, or its volume claim has no volume and no StorageClass to create one.",
        evidence: "FailedScheduling events (`0/6 nodes are available: 6 Insufficient nvidia.com/gpu`), phase Pending, PVCs in Pending with FailedBinding (`no storage class is set`).",
        example: "Warning  FailedScheduling  default-scheduler  0/6 nodes are available: 6 Insufficient nvidia.com/gpu.",
        fix: "Free or add capacity (delete leftover pods holding GPUs, add nodes), lower the requests, add tolerations for the taint, or give the PVC a StorageClass / create the PersistentVolume.",
        false_positives: "A pod briefly Pending while its image is pulled or volumes attach is not unschedulable: without FailedScheduling or an unbound claim, confidence stays low.",
    },
    outranks: &[super::OUTRANKS_APP_CRASH],
    reads: &[Place::Event, Place::State],
    check: check_unschedulable,
};

fn check_unschedulable(cx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    let pending = cx.pod.phase_is("Pending") || cx.pod.status_is("Pending");
    if let Some(e) = cx.events_with(|e| e.reason == "FailedScheduling").last() {
        let m = &e.message;
        // Why: every scheduler filter the catalog reads in this message (the
        // scheduler prints `0/N nodes are available:` first, then each
        // filter's count and reason), in the order they stand, then the
        // scheduler's own words.
        let read = cx.catalog_support(Cause::Unschedulable);
        // Entries that read the header itself say nothing the event does not.
        let reasons_at = m
            .find("are available: ")
            .map_or(1, |i| i + "are available: ".len());
        let mut found: Vec<(usize, &str)> = read
            .iter()
            .filter(|s| s.at == Place::Event && s.cite().reference == e.cite.reference)
            .filter(|s| !s.hit.sig.id.starts_with("k8s.reason."))
            .map(|s| {
                (
                    crate::text::innermost(m, s.hit.sig.keywords),
                    s.hit.sig.meaning,
                )
            })
            .filter(|(at, _)| *at >= reasons_at)
            .collect();
        found.sort();
        let mut meanings: Vec<&str> = Vec::new();
        for (_, meaning) in found {
            if !meanings.contains(&meaning) && meanings.len() < 2 {
                meanings.push(meaning);
            }
        }
        let words = m
            .split_once("are available: ")
            .map_or(m.as_str(), |(_, r)| {
                r.split(" preemption:").next().unwrap_or(r)
            });
        let why = if meanings.is_empty() {
            format!(
                "the scheduler found no node for it ({})",
                crate::text::clip(words.trim_end_matches('.'), 160)
            )
        } else {
            format!(
                "{} ({})",
                meanings.join("; "),
                crate::text::clip(words.trim_end_matches('.'), 160)
            )
        };
        let scheduled_since = cx.pod.node_name.is_some()
            || started(cx.pod)
            || cx.pod.events.iter().any(|e| e.reason == "Scheduled")
            || cx.pod.phase_is("Running");
        let mut f = Finding::new(
            Cause::Unschedulable,
            if scheduled_since {
                Strength::Hint.score()
            } else {
                Strength::Certain.score()
            },
            format!("the pod is not scheduled: {why}"),
        )
        .container(cx.focus_name())
        .cite(&e.cite);
        if scheduled_since {
            f.status_only = true;
            f.summary =
                format!("the pod waited to be scheduled ({why}) but has been scheduled since");
            f = f.why("a node was found later; the scheduling wait does not explain the failures after it");
        }
        if classes::is("schedule.gpu", m) {
            f = f
                .fix("free GPUs held by leftover pods, or add GPU nodes; `kubectl describe nodes` shows nvidia.com/gpu allocated versus allocatable")
                .cmd("kubectl get pods -A -o wide --field-selector status.phase=Running | grep -i gpu".to_string())
                .cmd("kubectl describe nodes | grep -A8 'Allocated resources'".to_string());
        } else {
            f = f.fix("lower the pod's requests, add capacity, or add the tolerations / affinity that let it land").cmd("kubectl describe nodes | grep -A8 'Allocated resources'".to_string());
        }
        if let Some(s) = &cx.pod.listed_status {
            f = f.cite(&s.cite);
        }
        out.push(f);
    }
    let unbound: Vec<&Pvc> = cx
        .pod
        .pvcs
        .iter()
        .filter(|p| p.phase.as_deref() == Some("Pending"))
        .collect();
    if pending && !unbound.is_empty() {
        let p = unbound[0];
        let mut f = Finding::new(
            Cause::Unschedulable,
            Strength::Strong.score(),
            format!(
                "the pod waits for its volume claim {}, which is not bound",
                p.name
            ),
        )
        .container(cx.focus_name())
        .cite(&p.cite);
        if let Some(s) = &cx.pod.listed_status {
            f = f.cite(&s.cite);
        }
        for e in cx.events_with(|e| e.reason == "FailedBinding" || e.reason == "ProvisioningFailed")
        {
            f = f.cite(&e.cite);
            if classes::is("volume.no-storage-class", &e.message) {
                f.summary.push_str(
                    ": no PersistentVolume matches and no StorageClass is set to provision one",
                );
                f = f.fix("set storageClassName on the claim (or mark a StorageClass as default), or create a matching PersistentVolume");
            }
        }
        out.push(
            f.fix("describe the claim to see why it does not bind")
                .cmd(cx.kubectl(&format!("describe pvc {}", p.name)))
                .cmd("kubectl get storageclass".to_string()),
        );
    } else if pending && out.is_empty() && cx.pod.node_name.is_none() && !started(cx.pod) {
        let mut f = Finding::new(
            Cause::Unschedulable,
            Strength::Hint.score(),
            "the pod is Pending; the events that would say why are not in the input",
        )
        .container(cx.focus_name());
        f = f
            .cite_opt(cx.pod.listed_status.as_ref().map(|s| &s.cite))
            .cite_opt(cx.pod.phase.as_ref().map(|s| &s.cite));
        out.push(f.cmd(cx.kubectl(&format!(
            "get events --field-selector involvedObject.name={}",
            cx.pod_name()
        ))));
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::causes::Cause;
    use crate::diagnose::{Diagnosis, diagnose};
    use crate::ingest::{Doc, FileKind, Parts, assemble};
    use crate::scan::LogKind;

    /// A container `job` with `securityContext`, one emptyDir at /scratch,
    /// and its previous log.
    fn diagnosed(security: &str, log: &str) -> Vec<Diagnosis> {
        let pod = format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: job-1\nspec:\n  containers:\n  - name: job\n    image: job:1\n    securityContext: {security}\n    volumeMounts:\n    - name: scratch\n      mountPath: /scratch\n  volumes:\n  - name: scratch\n    emptyDir: {{}}\nstatus:\n  containerStatuses:\n  - name: job\n    restartCount: 2\n    lastState:\n      terminated: {{exitCode: 1, reason: Error}}\n"
        );
        let mut parts = Parts::default();
        parts.add_doc(FileKind::Objects, doc("pod.yaml", &pod));
        parts.add_doc(
            FileKind::Logs {
                kind: LogKind::Previous,
                container: None,
            },
            doc("logs-previous.txt", log),
        );
        diagnose(&assemble(parts).pods[0], &[]).diagnoses
    }

    fn doc(name: &str, text: &str) -> Doc {
        Doc {
            name: name.into(),
            text: text.into(),
            line_offset: 0,
        }
    }

    fn read_only_root(ds: &[Diagnosis]) -> Option<&Diagnosis> {
        ds.iter()
            .find(|d| d.cause == Cause::Permission && d.summary.contains("root filesystem"))
    }

    #[test]
    fn a_write_to_the_read_only_root_names_the_directory_to_mount() {
        let ds = diagnosed(
            "{readOnlyRootFilesystem: true}",
            "error: open /opt/job/cache/index.db: read-only file system\n",
        );
        assert_eq!(ds[0].cause, Cause::Permission, "{ds:#?}");
        let d = read_only_root(&ds).expect("the read-only root finding");
        assert!(
            d.fix[0].contains("mountPath: /opt/job/cache"),
            "{:?}",
            d.fix
        );
        assert!(d.fix[0].contains("readOnlyRootFilesystem: true"));
        // Without readOnlyRootFilesystem (or with it false) nothing is claimed.
        for sc in ["{readOnlyRootFilesystem: false}", "{runAsUser: 1000}"] {
            let ds = diagnosed(
                sc,
                "error: open /opt/job/cache/index.db: read-only file system\n",
            );
            assert!(read_only_root(&ds).is_none(), "{sc}: {ds:#?}");
        }
        // Under the container's own mount, it is the volume's.
        let ds = diagnosed(
            "{readOnlyRootFilesystem: true}",
            "error: open /scratch/index.db: read-only file system\n",
        );
        assert!(read_only_root(&ds).is_none(), "{ds:#?}");
    }

    #[test]
    fn the_runtimes_mounts_and_system_directories_are_not_mounted_over() {
        // /proc/sys is read-only in an unprivileged container: not the root filesystem.
        let ds = diagnosed(
            "{readOnlyRootFilesystem: true}",
            "fatal: open /proc/sys/net/core/somaxconn: read-only file system\n",
        );
        assert!(read_only_root(&ds).is_none(), "{ds:#?}");
        // A file in /etc: the root filesystem, but no emptyDir over /etc.
        let ds = diagnosed(
            "{readOnlyRootFilesystem: true}",
            "fatal: open /etc/job.conf.lock: read-only file system\n",
        );
        let d = read_only_root(&ds).expect("the read-only root finding");
        assert!(!d.fix[0].contains("mountPath"), "{:?}", d.fix);
        assert!(
            d.fix[0].contains("would hide the image's /etc"),
            "{:?}",
            d.fix
        );
    }
}
