//! `crashdoc history`'s fleet views: counts per group, the causes that are
//! new, and one workload's causes in every cluster side by side. The
//! numbers come from the store ([`crashdoc_history::Store::group`],
//! [`crashdoc_history::Store::new_causes`]); this only lays them out.

use crashdoc_history::{Group, GroupBy, NewCause};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

/// `-` for an empty value (a capture without a cluster, cause or node).
pub fn or_dash(s: &str) -> String {
    if s.is_empty() {
        "-".into()
    } else {
        s.to_string()
    }
}

fn when(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%d %H:%M").to_string()
}

fn table() -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    t.load_style(comfy_table::presets::NOTHING);
    t
}

/// "oom-killed 12, bad-config 3, +2 more"
fn causes_line(causes: &[(String, u64)]) -> String {
    let mut parts: Vec<String> = causes
        .iter()
        .take(3)
        .map(|(c, n)| format!("{} {n}", if c.is_empty() { "unknown" } else { c }))
        .collect();
    if causes.len() > 3 {
        parts.push(format!("+{} more", causes.len() - 3));
    }
    parts.join(", ")
}

pub fn print_groups(
    out: &mut impl Write,
    by: GroupBy,
    groups: &[Group],
    format: crate::Format,
    location: &str,
) -> anyhow::Result<()> {
    if format == crate::Format::Json {
        let v = serde_json::json!({
            "group_by": by,
            "groups": groups.iter().map(group_json).collect::<Vec<_>>(),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(());
    }
    if format == crate::Format::Markdown {
        anyhow::bail!("history prints text or json");
    }
    if groups.is_empty() {
        writeln!(out, "no captures in {location}")?;
        return Ok(());
    }
    let mut t = table();
    t.set_header([
        by.as_str().to_uppercase().as_str(),
        "CAPTURES",
        "PODS",
        "FIRST",
        "LAST",
        "CAUSES",
    ]);
    for g in groups {
        t.add_row([
            or_dash(&g.key),
            g.captures.to_string(),
            g.pods.to_string(),
            when(g.first),
            when(g.last),
            causes_line(&g.causes),
        ]);
    }
    writeln!(out, "{t}")?;
    Ok(())
}

fn group_json(g: &Group) -> serde_json::Value {
    serde_json::json!({
        "key": g.key,
        "captures": g.captures,
        "pods": g.pods,
        "first": g.first.to_string(),
        "last": g.last.to_string(),
        "causes": g.causes.iter().map(|(c, n)| serde_json::json!({"cause": c, "captures": n})).collect::<Vec<_>>(),
    })
}

pub fn print_new_causes(
    out: &mut impl Write,
    rows: &[NewCause],
    format: crate::Format,
) -> anyhow::Result<()> {
    if format == crate::Format::Json {
        writeln!(out, "{}", serde_json::to_string_pretty(rows)?)?;
        return Ok(());
    }
    if format == crate::Format::Markdown {
        anyhow::bail!("history prints text or json");
    }
    if rows.is_empty() {
        writeln!(
            out,
            "no new causes: every cause in that window was seen before it"
        )?;
        return Ok(());
    }
    let mut t = table();
    t.set_header(["CLUSTER", "WORKLOAD", "CAUSE", "FIRST SEEN", "CAPTURES"]);
    for r in rows {
        t.add_row([
            or_dash(&r.cluster),
            format!(
                "{}/{}/{}",
                r.namespace,
                r.owner_kind.as_deref().unwrap_or("Pod"),
                r.owner.as_deref().unwrap_or("-")
            ),
            r.cause.clone(),
            when(r.first_seen),
            r.captures.to_string(),
        ]);
    }
    writeln!(out, "{t}")?;
    Ok(())
}

/// One workload's causes (rows) in each cluster (columns).
pub fn print_side_by_side(
    out: &mut impl Write,
    target: &str,
    per_cluster: &[Group],
    format: crate::Format,
) -> anyhow::Result<()> {
    let clusters: Vec<&str> = {
        let mut v: Vec<&str> = per_cluster.iter().map(|g| g.key.as_str()).collect();
        v.sort_unstable();
        v
    };
    let mut cells: BTreeMap<&str, BTreeMap<&str, u64>> = BTreeMap::new();
    let mut causes: BTreeSet<&str> = BTreeSet::new();
    for g in per_cluster {
        for (c, n) in &g.causes {
            causes.insert(c.as_str());
            cells
                .entry(c.as_str())
                .or_default()
                .insert(g.key.as_str(), *n);
        }
    }
    if format == crate::Format::Json {
        let v = serde_json::json!({
            "workload": target,
            "clusters": clusters,
            "causes": cells,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(());
    }
    if format == crate::Format::Markdown {
        anyhow::bail!("history prints text or json");
    }
    if per_cluster.is_empty() {
        writeln!(out, "no captures of {target} in any cluster")?;
        return Ok(());
    }
    let mut t = table();
    let mut header = vec!["CAUSE".to_string()];
    header.extend(clusters.iter().map(|c| or_dash(c)));
    t.set_header(header);
    // Most captures across the fleet first.
    let mut rows: Vec<(&str, u64)> = causes
        .iter()
        .map(|c| (*c, cells.get(c).map_or(0, |m| m.values().sum())))
        .collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    for (cause, _) in rows {
        let mut row = vec![if cause.is_empty() {
            "unknown".to_string()
        } else {
            cause.to_string()
        }];
        for c in &clusters {
            let n = cells
                .get(cause)
                .and_then(|m| m.get(c))
                .copied()
                .unwrap_or(0);
            row.push(if n == 0 { ".".into() } else { n.to_string() });
        }
        t.add_row(row);
    }
    writeln!(out, "{target}: captures by cause in each cluster")?;
    writeln!(out, "{t}")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(key: &str, causes: &[(&str, u64)]) -> Group {
        let t = jiff::Timestamp::from_second(1_764_583_200).unwrap();
        Group {
            key: key.into(),
            captures: causes.iter().map(|c| c.1).sum(),
            pods: 1,
            first: t,
            last: t,
            causes: causes.iter().map(|(c, n)| (c.to_string(), *n)).collect(),
        }
    }

    fn text(f: impl FnOnce(&mut Vec<u8>) -> anyhow::Result<()>) -> String {
        let mut v = Vec::new();
        f(&mut v).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn side_by_side_puts_each_cluster_in_its_column() {
        let per = [
            g("west", &[("oom-killed", 4)]),
            g("east", &[("oom-killed", 1), ("bad-config", 2)]),
        ];
        let s = text(|o| print_side_by_side(o, "deploy/web", &per, crate::Format::Text));
        let lines: Vec<&str> = s.lines().collect();
        assert!(
            lines[1].split_whitespace().eq(["CAUSE", "east", "west"]),
            "{s}"
        );
        // oom-killed (5 in all) before bad-config (2); a cause a cluster
        // never had is a dot, not a zero to misread.
        assert!(
            lines[2].split_whitespace().eq(["oom-killed", "1", "4"]),
            "{s}"
        );
        assert!(
            lines[3].split_whitespace().eq(["bad-config", "2", "."]),
            "{s}"
        );
        let j: serde_json::Value = serde_json::from_str(&text(|o| {
            print_side_by_side(o, "deploy/web", &per, crate::Format::Json)
        }))
        .unwrap();
        assert_eq!(j["causes"]["oom-killed"]["west"], 4);
        assert!(j["causes"]["bad-config"].get("west").is_none());
    }

    #[test]
    fn groups_list_their_top_causes() {
        let groups = [g(
            "prod-eu",
            &[
                ("oom-killed", 9),
                ("bad-config", 3),
                ("probe-failure", 2),
                ("image-pull", 1),
            ],
        )];
        let s = text(|o| print_groups(o, GroupBy::Cluster, &groups, crate::Format::Text, "db"));
        assert!(s.starts_with(" CLUSTER") || s.starts_with("CLUSTER"), "{s}");
        assert!(
            s.contains("oom-killed 9, bad-config 3, probe-failure 2, +1 more"),
            "{s}"
        );
        let empty = text(|o| print_groups(o, GroupBy::Node, &[], crate::Format::Text, "db"));
        assert_eq!(empty.trim(), "no captures in db");
    }
}
