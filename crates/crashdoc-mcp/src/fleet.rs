//! The `fleet` tool: the history's fleet queries ([`Store::group`],
//! [`Store::new_causes`]) as `crashdoc history --group-by`,
//! `--new-causes` and `--compare-clusters` answer them.

use crate::tools::{ArgError, FleetParams, FleetQuery};
use crashdoc_history::{GroupBy, Since, Store};
use serde_json::{Value, json};

pub(crate) fn answer(p: FleetParams, store: &dyn Store) -> anyhow::Result<(Value, String)> {
    let since = p
        .since
        .as_deref()
        .map(|s| crashdoc_core::time::parse_since(s, jiff::Timestamp::now()))
        .transpose()
        .map_err(|m| ArgError::new(&m, "give `since` as 2h, 7d or 2026-12-01T08:00:00Z"))?;
    let mut q = crashdoc_watch::history::query(
        p.target.as_deref(),
        p.namespace.clone(),
        None,
        None,
        usize::MAX,
    )?;
    q.cluster = p.cluster.clone();
    q.since = since;
    let location = store.location();
    match p.query {
        FleetQuery::Group => {
            let by: GroupBy =
                p.group_by
                    .as_deref()
                    .unwrap_or("cluster")
                    .parse()
                    .map_err(|m: String| {
                        ArgError::new(
                            &m,
                            "group_by is one of cluster, namespace, workload, cause, node",
                        )
                    })?;
            let groups = store.group(&q, by)?;
            let mut text = format!(
                "{} group(s) by {} in {location}\n",
                groups.len(),
                by.as_str()
            );
            for g in groups.iter().take(30) {
                let causes: Vec<String> = g
                    .causes
                    .iter()
                    .take(3)
                    .map(|(c, n)| format!("{} {n}", if c.is_empty() { "unknown" } else { c }))
                    .collect();
                text.push_str(&format!(
                    "{}: {} capture(s) of {} pod(s): {}\n",
                    if g.key.is_empty() { "-" } else { &g.key },
                    g.captures,
                    g.pods,
                    causes.join(", ")
                ));
            }
            Ok((
                json!({"db": location, "group_by": by, "groups": groups}),
                text,
            ))
        }
        FleetQuery::NewCauses => {
            let from = match (p.revision, since) {
                (Some(r), _) => Since::Revision(r),
                (None, Some(t)) => Since::At(t),
                (None, None) => {
                    return Err(ArgError::new(
                        "`new_causes` needs `since` or `revision`: new since when?",
                        "give `since` (7d, or an RFC 3339 time) or `revision` (a pod-template-hash)",
                    )
                    .into());
                }
            };
            // The window selects what to report; "new" is judged over all.
            q.since = None;
            let rows = store.new_causes(&q, from)?;
            let mut text = format!("{} new cause(s)\n", rows.len());
            for r in rows.iter().take(30) {
                text.push_str(&format!(
                    "{} {}/{}/{}: {} first seen {} ({} capture(s))\n",
                    if r.cluster.is_empty() {
                        "-"
                    } else {
                        &r.cluster
                    },
                    r.namespace,
                    r.owner_kind.as_deref().unwrap_or("Pod"),
                    r.owner.as_deref().unwrap_or("-"),
                    r.cause,
                    r.first_seen,
                    r.captures
                ));
            }
            Ok((json!({"db": location, "new_causes": rows}), text))
        }
        FleetQuery::CompareClusters => {
            let Some(target) = p.target else {
                return Err(ArgError::new(
                    "`compare_clusters` needs `target`",
                    "give the workload, e.g. deploy/web, and its `namespace`",
                )
                .into());
            };
            let per = store.group(&q, GroupBy::Cluster)?;
            let mut causes = serde_json::Map::new();
            for g in &per {
                for (c, n) in &g.causes {
                    let e = causes
                        .entry(c.clone())
                        .or_insert_with(|| Value::Object(Default::default()));
                    e[g.key.as_str()] = json!(n);
                }
            }
            let clusters: Vec<&str> = per.iter().map(|g| g.key.as_str()).collect();
            let mut text = format!("{target} in {} cluster(s)\n", per.len());
            for g in &per {
                let line: Vec<String> = g.causes.iter().map(|(c, n)| format!("{c} {n}")).collect();
                text.push_str(&format!("{}: {}\n", g.key, line.join(", ")));
            }
            Ok((
                json!({"db": location, "workload": target, "clusters": clusters, "causes": causes}),
                text,
            ))
        }
    }
}
