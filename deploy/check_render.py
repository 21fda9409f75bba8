#!/usr/bin/env python3
"""Static checks on one `helm template` rendering of the chart (deploy/check.sh).

    check_render.py VARIANT RENDERED.yaml

Prints one "ok"/"FAIL" line per check and exits 1 if any failed. VARIANT names
the values used (see VARIANTS in check.sh); the checks are the promises the
chart makes in values.yaml and deploy/README.md.
"""
import json
import posixpath
import re
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
check("the data volume at /var/lib/crashdoc",
      any(m["mountPath"] == "/var/lib/crashdoc" and m["name"] == "data" for m in c["volumeMounts"]))
check("--listen on all addresses", any(a.startswith("--listen=0.0.0.0:") or a.startswith("--listen=[::]:") for a in args))
check("POD_NAME/POD_NAMESPACE from the downward API",
      env.get("POD_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.name"
      and env.get("POD_NAMESPACE", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.namespace")
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
    narrow = all(all(r["resources"] in (["nodes"], ["namespaces"]) for r in d["rules"]) for d in crs)
    check("ClusterRole (if any) is nodes or namespaces/kube-system only", narrow)
    check("nodes ClusterRole iff readNodes",
          any(r["resources"] == ["nodes"] for d in crs for r in d["rules"]) == ("nonodes" not in v))
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

# --- the history database: the redb file, or PostgreSQL from a Secret ------
database = "database" in v
dbargs = [a for a in args if a.startswith("--db=")]
check("one --db", len(dbargs) == 1)
dbarg = dbargs[0][len("--db="):] if dbargs else ""
check("CRASHDOC_DB is the --db value (for exec'd `crashdoc history`)",
      env.get("CRASHDOC_DB", {}).get("value") == dbarg)
mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
vols = {x["name"]: x for x in pod["volumes"]}
flag = lambda name: [a.split("=", 1)[1] for a in args if a.startswith(name + "=")]
# No credential ever reaches an argument or an env value: no URL with a
# password in its user part or a password= parameter, no env taken from the
# database Secret (its keys reach the container only as files), no PGPASSWORD.
userinfo_pw = re.compile(r"://[^/?#@]*:[^/?#@]*@")
values = args + [e.get("value", "") for e in env.values()]
check("no password in a URL of args or env values",
      not any(userinfo_pw.search(x) or re.search(r"[?&]password=", x) for x in values))
check("no PGPASSWORD in env", "PGPASSWORD" not in env)
check("no envFrom", "envFrom" not in c)
db_secrets = {vols[n]["secret"]["secretName"] for n in ("db-password", "db-ca") if n in vols and "secret" in vols[n]}
check("no env from the database Secrets",
      not any(e.get("valueFrom", {}).get("secretKeyRef", {}).get("name") in db_secrets for e in env.values()))
cluster_id = [d for d in kinds("ClusterRole") for r in d.get("rules", [])
              if "namespaces" in r.get("resources", [])]
ns_rules = [r for d in kinds("ClusterRole") + kinds("Role") for r in d.get("rules", [])
            if "namespaces" in r.get("resources", [])]
check("namespaces only ever get kube-system",
      all(r["verbs"] == ["get"] and r.get("resourceNames") == ["kube-system"] and r["apiGroups"] == [""]
          for r in ns_rules))
check("no namespaces rule in a Role (cluster-scoped)",
      not any("namespaces" in r.get("resources", []) for r in rules("Role")))
want_cluster_id = database and "clustername" not in v
check("get namespaces/kube-system iff a database without clusterName",
      bool(cluster_id) == want_cluster_id and len(cluster_id) <= 1)
if cluster_id:
    bound = [b for b in kinds("ClusterRoleBinding") if b["roleRef"]["name"] == cluster_id[0]["metadata"]["name"]]
    check("the kube-system rule's ClusterRole is bound to the service account",
          any(s["kind"] == "ServiceAccount" and s["name"] == pod["serviceAccountName"]
              and s["namespace"] == w["metadata"]["namespace"] for b in bound for s in b["subjects"]))
if not database:
    check("--db is the redb file on the data volume", dbarg == "/var/lib/crashdoc/history.redb")
    check("no database flags", not any(a.split("=")[0] in ("--db-password-file", "--cluster", "--spool",
                                       "--spool-max-captures", "--spool-max-mib") for a in args))
    check("no CRASHDOC_DB_PASSWORD_FILE", "CRASHDOC_DB_PASSWORD_FILE" not in env)
    check("nothing mounted under /etc/crashdoc", not any(p.startswith("/etc/crashdoc") for p in mounts))
else:
    check("--db is a postgres:// URL without a password",
          dbarg.startswith("postgres://") and not userinfo_pw.search(dbarg) and "password=" not in dbarg)
    pwf = flag("--db-password-file")
    check("one --db-password-file", len(pwf) == 1)
    pwf = pwf[0] if pwf else ""
    check("CRASHDOC_DB_PASSWORD_FILE is the --db-password-file path",
          env.get("CRASHDOC_DB_PASSWORD_FILE", {}).get("value") == pwf)
    m = mounts.get(posixpath.dirname(pwf), {})
    vol = vols.get(m.get("name"), {})
    items = vol.get("secret", {}).get("items", [])
    check("--db-password-file is a file of the mounted password Secret",
          m.get("readOnly") is True and "subPath" not in m
          and vol.get("secret", {}).get("secretName") == "crashdoc-db"
          and items == [{"key": "password", "path": posixpath.basename(pwf)}])
    check("the password Secret is not world-readable", vol.get("secret", {}).get("defaultMode", 0o644) & 0o007 == 0)
    ca = "/etc/crashdoc/db-ca/ca.crt"
    cm = mounts.get(posixpath.dirname(ca), {})
    cvol = vols.get(cm.get("name"), {}).get("secret", {})
    check("the CA Secret mounted read-only for sslrootcert",
          cm.get("readOnly") is True and cvol.get("secretName") == "crashdoc-db-ca"
          and cvol.get("items") == [{"key": "ca.crt", "path": "ca.crt"}])
    check("the URL's sslrootcert is the mounted CA", f"sslrootcert={ca}" in dbarg)
    check("--spool on the data volume", flag("--spool") == ["/var/lib/crashdoc/spool.redb"])
    check("--spool-max-captures and --spool-max-mib",
          len(flag("--spool-max-captures")) == 1 and len(flag("--spool-max-mib")) == 1)
    cl = flag("--cluster")
    check("--cluster iff clusterName", cl == (["prod-eu-1"] if "clustername" in v else []))

# --- mcp: the sidecar's doors (token and/or JWTs, TLS, hosts), its Service, its NetworkPolicy
mcp = "mcp" in v
sidecars = [x for x in pod["containers"] if x["name"] == "mcp"]
check("an mcp sidecar iff mcp.enabled", len(sidecars) == (1 if mcp else 0))
svc_mcp = [d for d in kinds("Service") if d["metadata"]["name"].endswith("-mcp")]
np_mcp = [d for d in kinds("NetworkPolicy") if d["metadata"]["name"].endswith("-mcp")]
check("an mcp Service and NetworkPolicy iff mcp.enabled", len(svc_mcp) == len(np_mcp) == (1 if mcp else 0))
if mcp and sidecars:
    m = sidecars[0]
    margs = m["args"]
    mvols = {vv["name"]: vv for vv in pod.get("volumes", [])}
    mmounts = {mm["mountPath"]: mm for mm in m.get("volumeMounts", [])}

    def mflag(name):
        return [margs[i + 1] for i, a in enumerate(margs[:-1]) if a == name]

    check("mcp: --http on the Service's target port",
          mflag("--http") and mflag("--http")[0].endswith(":%d" % svc_mcp[0]["spec"]["ports"][0]["port"]))
    check("mcp: Service is ClusterIP", svc_mcp[0]["spec"]["type"] == "ClusterIP")
    check("mcp: the NetworkPolicy admits the MCP port only from a selector",
          any(r.get("from") and any(p["port"] == svc_mcp[0]["spec"]["ports"][0]["port"] for p in r["ports"])
              for r in np_mcp[0]["spec"]["ingress"]))
    check("mcp: no --insecure-no-auth", "--insecure-no-auth" not in margs)
    token, jwks, tls = mflag("--auth-token-file"), mflag("--auth-jwks-file"), mflag("--tls-cert")
    check("mcp: a token file or a JWKS file", bool(token or jwks))
    check("mcp: --auth-jwks-file iff jwks", bool(jwks) == ("jwks" in v))
    check("mcp: --auth-token-file unless jwks alone", bool(token) == ("jwksonly" not in v))
    for f, vol_kind in [(token, "secret"), (jwks, "configMap"), (tls, "secret")]:
        if f:
            mm = mmounts.get(posixpath.dirname(f[0]), {})
            vol = mvols.get(mm.get("name"), {})
            check(f"mcp: {f[0]} is mounted read-only from a {vol_kind}",
                  mm.get("readOnly") is True and vol_kind in vol)
            if vol_kind == "secret":
                check(f"mcp: the Secret behind {f[0]} is not world-readable",
                      vol["secret"].get("defaultMode", 0o644) & 0o007 == 0)
    check("mcp: --tls-cert and --tls-key iff tls", (bool(tls) and bool(mflag("--tls-key"))) == ("tls" in v))
    if jwks:
        check("mcp: JWTs with --auth-issuer and --auth-audience",
              len(mflag("--auth-issuer")) == 1 and len(mflag("--auth-audience")) == 1)
    hosts = ",".join(mflag("--allow-host")).split(",")
    name = svc_mcp[0]["metadata"]["name"]
    ns_ = svc_mcp[0]["metadata"]["namespace"]
    check("mcp: --allow-host has the Service's DNS names",
          {name, f"{name}.{ns_}", f"{name}.{ns_}.svc", f"{name}.{ns_}.svc.cluster.local"} <= set(hosts))

sys.exit(1 if failed else 0)
