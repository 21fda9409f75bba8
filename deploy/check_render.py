#!/usr/bin/env python3
"""Static checks on one `helm template` rendering of the chart (deploy/check.sh).

    check_render.py VARIANT RENDERED.yaml

Prints one "ok"/"FAIL" line per check and exits 1 if any failed. VARIANT names
the values used (see VARIANTS in check.sh); the checks are the promises the
chart makes in values.yaml and deploy/README.md.
"""
import json
import sys

import yaml

variant, path = sys.argv[1], sys.argv[2]
docs = [d for d in yaml.safe_load_all(open(path)) if d]
failed = 0


def check(what, cond):
    global failed
    print(("ok   " if cond else "FAIL ") + f"[{variant}] {what}")
    failed += 0 if cond else 1


def kinds(kind):
    return [d for d in docs if d["kind"] == kind]


def rules(kind):
    return [r for d in kinds(kind) for r in d.get("rules", [])]


def grants(rs, group, resource, verb):
    return any(
        group in r.get("apiGroups", [])
        and resource in r.get("resources", [])
        and verb in r.get("verbs", [])
        for r in rs
    )


wl = kinds("Deployment") + kinds("StatefulSet")
check("exactly one workload", len(wl) == 1)
w = wl[0]
pod = w["spec"]["template"]["spec"]
c = pod["containers"][0]
args = c["args"]
env = {e["name"]: e for e in c.get("env", [])}

# --- every variant: hardening, probes, resources, read-only RBAC ----------
sc, psc = c["securityContext"], pod["securityContext"]
check("runAsNonRoot", sc.get("runAsNonRoot") is True and psc.get("runAsNonRoot") is True)
check("readOnlyRootFilesystem", sc.get("readOnlyRootFilesystem") is True)
check("allowPrivilegeEscalation false", sc.get("allowPrivilegeEscalation") is False)
check("capabilities drop ALL", sc.get("capabilities", {}).get("drop") == ["ALL"])
check("seccomp RuntimeDefault", psc.get("seccompProfile", {}).get("type") == "RuntimeDefault"
      and sc.get("seccompProfile", {}).get("type") == "RuntimeDefault")
check("liveness on /healthz", c["livenessProbe"]["httpGet"]["path"] == "/healthz")
check("startup on /healthz", c["startupProbe"]["httpGet"]["path"] == "/healthz")
check("readiness on /readyz", c["readinessProbe"]["httpGet"]["path"] == "/readyz")
check("resources requests and limits", {"requests", "limits"} <= set(c["resources"]))
check("args start with watch", args[0] == "watch")
check("--db on the data volume", "--db=/var/lib/crashdoc/history.redb" in args
      and any(m["mountPath"] == "/var/lib/crashdoc" and m["name"] == "data" for m in c["volumeMounts"]))
check("--listen on all addresses", any(a.startswith("--listen=0.0.0.0:") or a.startswith("--listen=[::]:") for a in args))
check("POD_NAME/POD_NAMESPACE from the downward API",
      env.get("POD_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.name"
      and env.get("POD_NAMESPACE", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.namespace")
check("CRASHDOC_DB is the --db path (for exec'd `crashdoc history`)",
      env.get("CRASHDOC_DB", {}).get("value") == "/var/lib/crashdoc/history.redb")
check("no webhook URL on the command line", not any(a.startswith("--webhook=") or a == "--webhook" for a in args))
for kind in ("ClusterRole", "Role"):
    for d in kinds(kind):
        for r in d.get("rules", []):
            verbs = set(r["verbs"])
            lease = r.get("resources") == ["leases"]
            allowed = {"get", "update", "patch", "create"} if lease else {"get", "list", "watch"}
            check(f"{kind} {d['metadata']['name']} {r['resources']}: only {sorted(allowed)}", verbs <= allowed)
            check(f"{kind} {d['metadata']['name']} {r['resources']}: no wildcard",
                  "*" not in verbs and "*" not in r.get("resources", []) and "*" not in r.get("apiGroups", []))
            if lease:
                check("Lease rule in the release namespace", d["metadata"]["namespace"] == w["metadata"]["namespace"])
                if verbs != {"create"}:
                    check("Lease get/update/patch limited by resourceNames", len(r.get("resourceNames", [])) == 1)

read = rules("ClusterRole") + rules("Role")
check("pods/log: get only", grants(read, "", "pods/log", "get") and not grants(read, "", "pods/log", "list"))
check("owner chain readable", all(grants(read, g, r, "get") for g, r in [
    ("apps", "replicasets"), ("apps", "deployments"), ("apps", "statefulsets"), ("apps", "daemonsets"),
    ("batch", "jobs"), ("batch", "cronjobs")]))
check("events (core and events.k8s.io) watchable", grants(read, "", "events", "watch") and grants(read, "events.k8s.io", "events", "watch"))

v = variant.split("+")
has = lambda name: name in v or "all" in v
secrets = has("secrets")
check("secrets rule only with secretKeyChecks", grants(read, "", "secrets", "get") == secrets)
check("secrets never listed or watched", not grants(read, "", "secrets", "list") and not grants(read, "", "secrets", "watch"))
check("--no-secret-keys unless secretKeyChecks", ("--no-secret-keys" in args) == (not secrets))

replicas = w["spec"]["replicas"]
leader = replicas > 1 or has("leader")
check("--leader-elect iff leader election", ("--leader-elect" in args) == leader)
check("Lease Role iff leader election", any(d["metadata"]["name"].endswith("-lease") for d in kinds("Role")) == leader)
if leader:
    check("--lease-namespace is the release namespace", f"--lease-namespace={w['metadata']['namespace']}" in args)
check("PodDisruptionBudget iff replicas > 1", bool(kinds("PodDisruptionBudget")) == (replicas > 1))
if w["kind"] == "Deployment":
    check("Recreate without leader election", (w["spec"]["strategy"]["type"] == "Recreate") == (not leader))

persist = has("persistence")
check("StatefulSet iff persistence", w["kind"] == ("StatefulSet" if persist else "Deployment"))
if persist:
    vct = w["spec"].get("volumeClaimTemplates", [])
    check("volumeClaimTemplate 'data'", [t["metadata"]["name"] for t in vct] == ["data"])
    check("no shared data volume", not any(x["name"] == "data" for x in pod["volumes"]))
    svc = [s["metadata"]["name"] for s in kinds("Service")]
    check("governing Service exists", w["spec"]["serviceName"] in svc)
else:
    check("data is an emptyDir", any(x["name"] == "data" and "emptyDir" in x for x in pod["volumes"]))

ns = "namespaced" in v
if ns:
    check("-n WATCHED, no -A", "-A" not in args and args[args.index("-n") + 1] == "team-a")
    main = [d for d in kinds("Role") if not d["metadata"]["name"].endswith("-lease")]
    check("read Role in the watched namespace", len(main) == 1 and main[0]["metadata"]["namespace"] == "team-a")
    crs = kinds("ClusterRole")
    nodes_only = all(all(r["resources"] == ["nodes"] for r in d["rules"]) for d in crs)
    check("ClusterRole (if any) is nodes only", nodes_only)
    check("nodes ClusterRole iff readNodes", bool(crs) == ("nonodes" not in v))
    check("pods not readable cluster-wide", not grants(rules("ClusterRole"), "", "pods", "list"))
else:
    check("-A", "-A" in args)
    check("ClusterRole reads pods", grants(rules("ClusterRole"), "", "pods", "watch"))

check("ServiceMonitor iff enabled", bool(kinds("ServiceMonitor")) == has("servicemonitor"))
check("PrometheusRule iff enabled", bool(kinds("PrometheusRule")) == has("prometheusrule"))
if has("prometheusrule"):
    pr = kinds("PrometheusRule")[0]
    alerts = [r for g in pr["spec"]["groups"] for r in g["rules"] if "alert" in r]
    check("PrometheusRule: every alert has a runbook naming crashdoc history and crashdoc diagnose",
          bool(alerts) and all("crashdoc history" in r["annotations"].get("runbook", "")
                               and "crashdoc diagnose" in r["annotations"].get("runbook", "") for r in alerts))
    check("PrometheusRule: no placeholder left", "__" not in json.dumps(pr["spec"]))
    check("PrometheusRule: the ruleSelector label", pr["metadata"]["labels"].get("release") == "kube-prometheus-stack")
if has("webhook"):
    ref = env.get("CRASHDOC_WEBHOOK_URL", {}).get("valueFrom", {}).get("secretKeyRef", {})
    check("CRASHDOC_WEBHOOK_URL from the Secret", ref.get("name") == "crashdoc-webhook" and ref.get("key") == "url")
    check("--webhook-format passed", any(a.startswith("--webhook-format=") for a in args))
else:
    check("no CRASHDOC_WEBHOOK_URL", "CRASHDOC_WEBHOOK_URL" not in env)

sys.exit(1 if failed else 0)
