{{/*
Chart name, truncated to 63 characters (a DNS label).
*/}}
{{- define "crashdoc.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name: the release name, plus the chart name unless the release name
already contains it ("crashdoc" -> "crashdoc", "ops" -> "ops-crashdoc").
*/}}
{{- define "crashdoc.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "crashdoc.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels on every object.
*/}}
{{- define "crashdoc.labels" -}}
helm.sh/chart: {{ include "crashdoc.chart" . }}
{{ include "crashdoc.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/component: watch
app.kubernetes.io/part-of: crashdoc
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
Selector labels: immutable once the workload exists, so only name and instance.
*/}}
{{- define "crashdoc.selectorLabels" -}}
app.kubernetes.io/name: {{ include "crashdoc.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "crashdoc.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "crashdoc.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
"true" when leader election is on (leaderElection.enabled true, or "auto" with
more than one replica), "" otherwise. Refuses several replicas without it.
*/}}
{{- define "crashdoc.leaderElect" -}}
{{- $le := .Values.leaderElection.enabled }}
{{- $replicas := int .Values.replicaCount }}
{{- if eq (toString $le) "auto" }}
{{- if gt $replicas 1 }}true{{ end }}
{{- else if $le }}true
{{- else if gt $replicas 1 }}
{{- fail "leaderElection.enabled=false with replicaCount > 1: every replica would capture and notify. Use leaderElection.enabled=auto (or true), or replicaCount=1." }}
{{- end }}
{{- end }}

{{- define "crashdoc.leaseName" -}}
{{- default (include "crashdoc.fullname" .) .Values.leaderElection.leaseName }}
{{- end }}

{{- define "crashdoc.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/*
The rules crashdoc needs to read a namespace's (or every namespace's)
crash-looping pods and their evidence. get/list/watch only, and only on what
the collector reads. Shared by the ClusterRole (all namespaces) and the Role
(watch.namespace). Nodes are cluster-scoped, so they are not here.
*/}}
{{- define "crashdoc.readRules" -}}
# The pods (watched), and their evidence when one crash-loops. list+watch on
# pods feed the watch; events are watched too (core v1, and events.k8s.io/v1
# for clusters whose components only write the new API).
- apiGroups: [""]
  resources: ["pods", "events"]
  verbs: ["get", "list", "watch"]
# Logs of the previous and current run: a subresource that only has "get".
- apiGroups: [""]
  resources: ["pods/log"]
  verbs: ["get"]
# What a pod depends on: claims it mounts, ConfigMaps it references (keys
# checked), Services behind the hosts its logs fail to reach, its
# ServiceAccount.
- apiGroups: [""]
  resources: ["persistentvolumeclaims", "configmaps", "services", "serviceaccounts"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["get", "list", "watch"]
# The owner chain (Pod -> ReplicaSet -> Deployment, StatefulSet, DaemonSet,
# Job -> CronJob): owner names in the metrics, rollout context in diagnoses;
# a workload's revisions (ReplicaSets, ControllerRevisions) for "what changed".
- apiGroups: ["apps"]
  resources: ["replicasets", "deployments", "statefulsets", "daemonsets", "controllerrevisions"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["batch"]
  resources: ["jobs", "cronjobs"]
  verbs: ["get", "list", "watch"]
{{- if .Values.rbac.readPodMetrics }}
# Memory and CPU usage next to the limits (metrics-server). Harmless when the
# cluster does not serve metrics.k8s.io: crashdoc then notes it as missing.
- apiGroups: ["metrics.k8s.io"]
  resources: ["pods"]
  verbs: ["get", "list"]
{{- end }}
{{- if .Values.secretKeyChecks }}
# secretKeyChecks=true: the Secrets a crashing pod references, by name, to
# check the keys it needs exist. Only "get": crashdoc never lists or watches
# Secrets. RBAC cannot limit this to key names, so the token can read values;
# crashdoc keeps only key names and sizes and never outputs a value.
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get"]
{{- end }}
{{- end }}

{{- define "crashdoc.nodeRules" -}}
# Nodes are cluster-scoped: conditions (memory/disk pressure), taints and
# allocatable of the node a crashing pod ran on.
- apiGroups: [""]
  resources: ["nodes"]
  verbs: ["get", "list", "watch"]
{{- end }}

{{/*
The PostgreSQL history (history.database.url set): the URL crashdoc gets
(--db and env CRASHDOC_DB), with sslrootcert pointing at the mounted CA when
caSecret is set and the URL names none. "" without a database. Refuses a URL
without passwordSecret.name (the schema already refuses one with a password).
*/}}
{{- define "crashdoc.dbUrl" -}}
{{- with .Values.history.database }}
{{- if .url }}
{{- if not .passwordSecret.name }}
{{- fail "history.database.url is set but history.database.passwordSecret.name is empty: name the existing Secret holding the database password (mounted as a file, passed with --db-password-file)." }}
{{- end }}
{{- if and .caSecret.name (not (contains "sslrootcert=" .url)) }}
{{- printf "%s%ssslrootcert=/etc/crashdoc/db-ca/ca.crt" .url (ternary "&" "?" (contains "?" .url)) }}
{{- else }}
{{- .url }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
"true" when crashdoc must read the kube-system namespace's UID to name this
cluster in a shared history (a database and no clusterName), "" otherwise.
*/}}
{{- define "crashdoc.needsClusterId" -}}
{{- if and .Values.history.database.url (not .Values.history.database.clusterName) }}true{{ end }}
{{- end }}

{{- define "crashdoc.clusterIdRules" -}}
# A shared history database names each cluster; without
# history.database.clusterName crashdoc uses the kube-system namespace's UID
# (stable for the cluster's life). get on that one namespace only.
- apiGroups: [""]
  resources: ["namespaces"]
  resourceNames: ["kube-system"]
  verbs: ["get"]
{{- end }}

{{/*
The Host names the MCP sidecar answers (`--allow-host`): its Service's DNS
names, short to fully qualified, and mcp.allowHosts.
*/}}
{{- define "crashdoc.mcpHosts" -}}
{{- $svc := printf "%s-mcp" (include "crashdoc.fullname" .) -}}
{{- $ns := .Release.Namespace -}}
{{- $hosts := list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns .Values.mcp.clusterDomain) -}}
{{- join "," (concat $hosts .Values.mcp.allowHosts) -}}
{{- end -}}
