#!/usr/bin/env python3
"""Writes tests/cluster/kwok/60-containers.yaml (run it after editing this file).

kwok v0.8.0 Stage steps are a fixed list and an `apply` step creates exactly one
object (sigs.k8s.io/kwok@v0.8.0 pkg/utils/lifecycle/next.go doStageSteps,
computeApply; apply.go ApplyResource), so per-container events are written by
one step per container *slot* (SLOTS main containers at most). A slot with
nothing to say (no such container, or an event that does not apply to it)
re-applies the pod's Logs object unchanged, which the API server treats as a
no-op server-side apply.
"""
import pathlib

SLOTS = 4
POD_EVENT_SLOTS = 2
OUT = pathlib.Path(__file__).with_name("60-containers.yaml")

A = '{{ $a := .metadata.annotations }}'
def ann(field, c="$c.name"):
    return f'(index $a (printf "crashdoc.test/container.%s.{field}" {c}))'
BEH = '{{ $b := or ' + ann("behavior") + ' "run" }}'

LOGS = '''{{ $a := .metadata.annotations }}
{{ $entries := list }}
{{ range .spec.containers }}{{ $l := (index $a (printf "crashdoc.test/container.%s.logs" .name)) }}{{ if $l }}{{ $f := printf "@LOGS_DIR@/%s" $l }}{{ $entries = append $entries (dict "containers" (list .name) "logsFile" $f "previousLogsFile" $f) }}{{ end }}{{ end }}
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Logs
metadata:
  name: {{ .metadata.name }}
  namespace: {{ .metadata.namespace }}
  ownerReferences:
  - apiVersion: v1
    kind: Pod
    name: {{ .metadata.name }}
    uid: {{ .metadata.uid }}
spec:
  logs: {{ toJson $entries }}
'''

def event(reason, etype, message, count, field="spec.containers{%s}", name_extra="$c.name"):
    return f'''apiVersion: v1
kind: Event
metadata:
  name: {{{{ .metadata.name }}}}.{{{{ sha256sum (print .metadata.uid "{reason}" {name_extra}) | trunc 16 }}}}
  namespace: {{{{ .metadata.namespace }}}}
involvedObject: {{apiVersion: v1, kind: Pod, name: {{{{ .metadata.name }}}}, namespace: {{{{ .metadata.namespace }}}}, uid: {{{{ .metadata.uid }}}}, fieldPath: {{{{ printf "{field}" $c.name | Quote }}}}}}
type: {etype}
reason: {reason}
message: {{{{ {message} | Quote }}}}
count: {count}
firstTimestamp: {{{{ or .status.startTime Now | Quote }}}}
lastTimestamp: {{{{ Now | Quote }}}}
source: {{component: kubelet, host: {{{{ .spec.nodeName }}}}}}
reportingComponent: kubelet
reportingInstance: {{{{ .spec.nodeName }}}}
'''

def slot_step(i, cond, body):
    """One apply step for container slot i: body when the container exists and cond holds, else the Logs no-op."""
    t = (f'{A}\n{{{{ $cs := .status.containerStatuses }}}}\n'
         f'{{{{ if lt {i} (len .spec.containers) }}}}{{{{ $c := index .spec.containers {i} }}}}{BEH}'
         f'{{{{ $s := dict }}}}{{{{ if and $cs (lt {i} (len $cs)) }}}}{{{{ $s = index $cs {i} }}}}{{{{ end }}}}'
         f'{{{{ $rc := int (or $s.restartCount 0) }}}}\n'
         f'{{{{ if {cond} }}}}\n{body}{{{{ else }}}}\n{LOGS}{{{{ end }}}}\n'
         f'{{{{ else }}}}\n{LOGS}{{{{ end }}}}\n')
    return "  - apply:\n      template: |\n" + "".join("        " + l + "\n" if l else "\n" for l in t.split("\n")).rstrip("\n") + "\n"

def stage(name, key, delay, steps):
    return f'''---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: {name}
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.annotations["crashdoc.test/behavior"]'
      operator: 'In'
      values: ['containers']
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
{key}  delay:
    durationMilliseconds: {delay}
  steps:
{steps}'''

def patch(t):
    return "  - patch:\n      subresource: status\n      root: status\n      template: |\n" + "".join("        " + l + "\n" if l else "\n" for l in t.strip("\n").split("\n"))

IMG = '{{ $img := $c.image }}{{ if not (regexMatch "^[^/]+[.:][^/]*/" $img) }}{{ if contains "/" $img }}{{ $img = print "docker.io/" $img }}{{ else }}{{ $img = print "docker.io/library/" $img }}{{ end }}{{ end }}'

START_STATUS = '''
{{ $now := Now }}
{{ $a := .metadata.annotations }}
{{ $unready := list }}{{ $running := false }}{{ $sandbox := false }}
{{ range .spec.containers }}{{ $b := or (index $a (printf "crashdoc.test/container.%s.behavior" .name)) "run" }}{{ if ne $b "run" }}{{ $unready = append $unready .name }}{{ end }}{{ if ne $b "waiting" }}{{ $running = true }}{{ end }}{{ if not (and (eq $b "waiting") (eq (or (index $a (printf "crashdoc.test/container.%s.reason" .name)) "ContainerCreating") "ContainerCreating")) }}{{ $sandbox = true }}{{ end }}{{ end }}
conditions:
- type: PodReadyToStartContainers
  status: {{ if $sandbox }}"True"{{ else }}"False"{{ end }}
  lastTransitionTime: {{ $now | Quote }}
- type: Initialized
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
{{ if $unready }}
- type: Ready
  status: "False"
  reason: ContainersNotReady
  message: {{ printf "containers with unready status: [%s]" (join " " $unready) | Quote }}
  lastTransitionTime: {{ $now | Quote }}
- type: ContainersReady
  status: "False"
  reason: ContainersNotReady
  message: {{ printf "containers with unready status: [%s]" (join " " $unready) | Quote }}
  lastTransitionTime: {{ $now | Quote }}
{{ else }}
- type: Ready
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
- type: ContainersReady
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
{{ end }}
containerStatuses:
{{ range $i, $c := .spec.containers }}
{{ $b := or (index $a (printf "crashdoc.test/container.%s.behavior" $c.name)) "run" }}
IMG
- name: {{ $c.name | Quote }}
  image: {{ $img | Quote }}
  {{ if eq $b "waiting" }}
  imageID: ""
  ready: false
  started: false
  restartCount: 0
  lastState: {}
  state:
    waiting:
      reason: {{ or (index $a (printf "crashdoc.test/container.%s.reason" $c.name)) "ContainerCreating" | Quote }}
      {{ with (index $a (printf "crashdoc.test/container.%s.message" $c.name)) }}message: {{ . | Quote }}{{ end }}
  {{ else }}
  imageID: {{ printf "%s@sha256:%s" (regexReplaceAll ":[^:/]*$" $img "") (sha256sum $img) | Quote }}
  containerID: {{ printf "containerd://%s" (sha256sum (print $.metadata.uid $c.name 0)) | Quote }}
  ready: {{ eq $b "run" }}
  started: true
  restartCount: 0
  state:
    running:
      startedAt: {{ $now | Quote }}
  {{ end }}
{{ end }}
{{ if $sandbox }}
{{ $hostIPs := NodeIPsWith .spec.nodeName }}
{{ with $hostIPs }}
hostIP: {{ index . 0 | Quote }}
hostIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
{{ $podIPs := PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
{{ with $podIPs }}
podIP: {{ index . 0 | Quote }}
podIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
{{ else }}
{{ $hostIPs := NodeIPsWith .spec.nodeName }}
{{ with $hostIPs }}
hostIP: {{ index . 0 | Quote }}
hostIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
{{ end }}
phase: {{ if $running }}Running{{ else }}Pending{{ end }}
startTime: {{ $now | Quote }}
'''.replace("IMG", IMG)

CRASH_STATUS = '''
{{ $now := Now }}
{{ $a := .metadata.annotations }}
containerStatuses:
{{ range $i, $c := .spec.containers }}
{{ $s := index $.status.containerStatuses $i }}
{{ $b := or (index $a (printf "crashdoc.test/container.%s.behavior" $c.name)) "run" }}
{{ if and (eq $b "crashloop") $s.state.running }}
{{ $rc := int $s.restartCount }}
{{ $backoff := index (list "10s" "20s" "40s" "1m20s" "2m40s" "5m0s") (min $rc 5) }}
{{ $run := or (index $a (printf "crashdoc.test/container.%s.run-seconds" $c.name)) "" }}
- name: {{ $c.name | Quote }}
  image: {{ $s.image | Quote }}
  imageID: {{ $s.imageID | Quote }}
  containerID: {{ $s.containerID | Quote }}
  ready: false
  started: false
  restartCount: {{ $rc }}
  state:
    waiting:
      reason: CrashLoopBackOff
      message: {{ printf "back-off %s restarting failed container=%s pod=%s_%s(%s)" $backoff $c.name $.metadata.name $.metadata.namespace $.metadata.uid | Quote }}
  lastState:
    terminated:
      exitCode: {{ or (index $a (printf "crashdoc.test/container.%s.exit-code" $c.name)) "1" }}
      reason: {{ or (index $a (printf "crashdoc.test/container.%s.reason" $c.name)) "Error" | Quote }}
      startedAt: {{ if $run }}{{ dateInZone "2006-01-02T15:04:05Z" (now | dateModify (printf "-%ss" $run)) "UTC" | Quote }}{{ else }}{{ $s.state.running.startedAt | Quote }}{{ end }}
      finishedAt: {{ $now | Quote }}
      containerID: {{ $s.containerID | Quote }}
{{ else }}
- {{ toJson $s }}
{{ end }}
{{ end }}
'''

RESTART_STATUS = '''
{{ $now := Now }}
{{ $a := .metadata.annotations }}
{{ $n := (or (index $a "crashdoc.test/restarts") "3") | atoi }}
containerStatuses:
{{ range $i, $c := .spec.containers }}
{{ $s := index $.status.containerStatuses $i }}
{{ $b := or (index $a (printf "crashdoc.test/container.%s.behavior" $c.name)) "run" }}
{{ if and (eq $b "crashloop") $s.state.waiting (eq $s.state.waiting.reason "CrashLoopBackOff") (lt (int $s.restartCount) $n) }}
- name: {{ $c.name | Quote }}
  image: {{ $s.image | Quote }}
  imageID: {{ $s.imageID | Quote }}
  containerID: {{ printf "containerd://%s" (sha256sum (print $.metadata.uid $c.name (add $s.restartCount 1))) | Quote }}
  ready: false
  started: true
  restartCount: {{ add $s.restartCount 1 }}
  state:
    running:
      startedAt: {{ $now | Quote }}
  lastState: {{ toJson $s.lastState }}
{{ else }}
- {{ toJson $s }}
{{ end }}
{{ end }}
'''

N = '((.metadata.annotations["crashdoc.test/restarts"] // "3") | tonumber)'
def jq_any(cond):
    return ("    - key: '.metadata.annotations as $a | " + N + " as $n | any((.status.containerStatuses // [])[]; "
            "($a[\"crashdoc.test/container.\\(.name).behavior\"] // \"run\") == \"crashloop\" and " + cond + ")'\n"
            "      operator: 'In'\n      values: ['true']\n")

start_steps = "  - apply:\n      template: |\n" + "".join("        " + l + "\n" for l in LOGS.strip("\n").split("\n"))
for i in range(SLOTS):
    ne_wait = '(ne $b "waiting")'
    start_steps += slot_step(i, ne_wait, event("Pulled", "Normal", 'printf "Container image %q already present on machine and can be accessed by the pod" $c.image', 1))
    start_steps += slot_step(i, ne_wait, event("Created", "Normal", 'print "Container created"', 1))
    start_steps += slot_step(i, ne_wait, event("Started", "Normal", 'print "Container started"', 1))
    start_steps += slot_step(i, f'(and (eq $b "waiting") {ann("message")})',
                             event("Failed", "Warning", f'printf "Error: %s" {ann("message")}', 4))
for j in range(POD_EVENT_SLOTS):
    # pod-level events: crashdoc.test/pod-event.<Reason>: <message> (Warning, count 4, no fieldPath), in key order
    body = f'''{{{{ $k := index $keys {j} }}}}{{{{ $reason := trimPrefix "crashdoc.test/pod-event." $k }}}}
apiVersion: v1
kind: Event
metadata:
  name: {{{{ .metadata.name }}}}.{{{{ sha256sum (print .metadata.uid $reason) | trunc 16 }}}}
  namespace: {{{{ .metadata.namespace }}}}
involvedObject: {{apiVersion: v1, kind: Pod, name: {{{{ .metadata.name }}}}, namespace: {{{{ .metadata.namespace }}}}, uid: {{{{ .metadata.uid }}}}}}
type: Warning
reason: {{{{ $reason | Quote }}}}
message: {{{{ index $a $k | Quote }}}}
count: 4
firstTimestamp: {{{{ Now | Quote }}}}
lastTimestamp: {{{{ Now | Quote }}}}
source: {{component: kubelet, host: {{{{ .spec.nodeName }}}}}}
reportingComponent: kubelet
reportingInstance: {{{{ .spec.nodeName }}}}
'''
    t = (f'{A}\n{{{{ $keys := list }}}}{{{{ range $k, $v := $a }}}}{{{{ if hasPrefix "crashdoc.test/pod-event." $k }}}}{{{{ $keys = append $keys $k }}}}{{{{ end }}}}{{{{ end }}}}\n'
         f'{{{{ if lt {j} (len $keys) }}}}\n{body}{{{{ else }}}}\n{LOGS}{{{{ end }}}}\n')
    start_steps += "  - apply:\n      template: |\n" + "".join("        " + l + "\n" if l else "\n" for l in t.split("\n")).rstrip("\n") + "\n"
start_steps += patch(START_STATUS)

crash_steps = ""
for i in range(SLOTS):
    crash_steps += slot_step(i, '(and (eq $b "crashloop") $s.state.running)',
                             event("BackOff", "Warning", 'printf "Back-off restarting failed container %s in pod %s_%s(%s)" $c.name .metadata.name .metadata.namespace .metadata.uid', '{{ add $rc 1 }}'))
crash_steps += patch(CRASH_STATUS)

restart_cond = '(and (eq $b "crashloop") $s.state.waiting (eq $s.state.waiting.reason "CrashLoopBackOff") (lt $rc ((or (index $a "crashdoc.test/restarts") "3") | atoi)))'
restart_steps = ""
for i in range(SLOTS):
    for reason, msg in (("Pulled", 'printf "Container image %q already present on machine and can be accessed by the pod" $c.image'),
                        ("Created", 'print "Container created"'), ("Started", 'print "Container started"')):
        # the start of run rc+1 is the (rc+2)-th
        restart_steps += slot_step(i, restart_cond, event(reason, "Normal", msg, '{{ add $rc 2 }}'))
restart_steps += patch(RESTART_STATUS)

header = '''# Scenarios of any shape: each main container, by name, gets its own behaviour
# (GENERATED by gen-60-containers.py; edit that and run it).
#
#   crashdoc.test/behavior: containers                 selects these stages
#   crashdoc.test/container.<name>.behavior            crashloop | waiting | run (default run)
#   crashdoc.test/container.<name>.exit-code           crashloop: lastState.terminated.exitCode (default 1)
#   crashdoc.test/container.<name>.reason              crashloop: lastState.terminated.reason (default Error);
#                                                      waiting: state.waiting.reason (default ContainerCreating)
#   crashdoc.test/container.<name>.message             waiting: state.waiting.message, and a Failed event
#                                                      "Error: <message>" (x4) as for CreateContainerConfigError
#   crashdoc.test/container.<name>.logs                file under scenarios/logs/ for kubectl logs [--previous]
#   crashdoc.test/container.<name>.run-seconds         crashloop: startedAt..finishedAt of each run
#   crashdoc.test/restarts: "3"                        restarts of every crashloop container before it settles
#                                                      (its restartCount then; runs 0..restarts crash)
#   crashdoc.test/pod-event.<Reason>: <message>        a pod-level Warning event from the kubelet (x4, no
#                                                      fieldPath), e.g. FailedMount; at most 2, in key order
#
# A pod whose containers all wait with reason ContainerCreating has no sandbox
# yet (PodReadyToStartContainers False, no pod IP, phase Pending): the shape
# of a pod whose volumes cannot be mounted. Init containers and probes are
# not driven here (use the single-container behaviours for those).
#
# start (Pending) -> every container: run = running+ready, crashloop = running,
# waiting = waiting -> crash (every running crashloop container: waiting
# CrashLoopBackOff, lastState.terminated = the crashed run, restartCount and
# containerID unchanged; the others unchanged) -> restart (those whose crashed
# run is below crashdoc.test/restarts: running again, a new containerID,
# restartCount+1, as the kubelet counts a container when it creates it) -> crash ...
'''

doc = header + stage("crashdoc-containers-start",
                     "    - key: '.status.phase'\n      operator: 'In'\n      values: ['Pending']\n"
                     "    - key: '.status.containerStatuses'\n      operator: 'DoesNotExist'\n", 1000, start_steps)
doc += stage("crashdoc-containers-crash",
             "    - key: '.status.phase'\n      operator: 'In'\n      values: ['Running']\n" + jq_any(".state.running != null"), 3000, crash_steps)
doc += stage("crashdoc-containers-restart",
             jq_any('.state.waiting.reason == "CrashLoopBackOff" and (.restartCount // 0) < $n'), 3000, restart_steps)
doc = doc.replace("\n---\napiVersion", "\napiVersion", 1)  # no empty document after the header
OUT.write_text(doc)
print(f"wrote {OUT} ({len(doc.splitlines())} lines)")
