//! The ConfigMaps and Secrets a pod template references: when each last
//! changed, against the window in which a change can explain the first
//! crash, and which referenced keys are gone. Key names only, never values.
//!
//! References read (kubernetes v1.36.3 staging/src/k8s.io/api/core/v1/types.go):
//! `env[].valueFrom.configMapKeyRef|secretKeyRef {name, key, optional}`,
//! `envFrom[].configMapRef|secretRef`, `volumes[].configMap {name, items[].key}`,
//! `volumes[].secret {secretName, items[].key}`, `volumes[].projected.sources[]`.

use crate::ingest::rollout::ConfigTime;
use crate::model::Cite;
use crate::time::parse_timestamp;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// What the template asks of one object.
#[derive(Debug, Default, Clone)]
struct Wanted {
    /// Key -> where it is referenced and whether it is optional.
    keys: BTreeMap<String, (String, bool)>,
}

fn refs(template: &Value) -> BTreeMap<(String, String), Wanted> {
    let mut out: BTreeMap<(String, String), Wanted> = BTreeMap::new();
    let spec = template.get("spec").unwrap_or(template);
    let s = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).unwrap_or("").to_string();
    let opt = |v: &Value| v.get("optional").and_then(Value::as_bool) == Some(true);
    for list in ["initContainers", "containers"] {
        for c in spec
            .get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let cname = s(c, "name");
            for e in c.get("env").and_then(Value::as_array).into_iter().flatten() {
                for (field, kind) in [("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret")]
                {
                    if let Some(r) = e.pointer(&format!("/valueFrom/{field}")) {
                        let at = format!("spec.{list}[{cname}].env[{}]", s(e, "name"));
                        out.entry((kind.into(), s(r, "name")))
                            .or_default()
                            .keys
                            .insert(s(r, "key"), (at, opt(r)));
                    }
                }
            }
            for e in c
                .get("envFrom")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                for (field, kind) in [("configMapRef", "ConfigMap"), ("secretRef", "Secret")] {
                    if let Some(r) = e.get(field) {
                        out.entry((kind.into(), s(r, "name"))).or_default();
                    }
                }
            }
        }
    }
    let mut volume = |src: &Value, kind: &str, name: String, vname: &str| {
        let w = out.entry((kind.to_string(), name)).or_default();
        for it in src
            .get("items")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            w.keys.insert(
                s(it, "key"),
                (format!("spec.volumes[{vname}].items"), opt(src)),
            );
        }
    };
    for v in spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let vname = s(v, "name");
        if let Some(cm) = v.get("configMap") {
            volume(cm, "ConfigMap", s(cm, "name"), &vname);
        }
        if let Some(sec) = v.get("secret") {
            volume(sec, "Secret", s(sec, "secretName"), &vname);
        }
        for src in v
            .pointer("/projected/sources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(cm) = src.get("configMap") {
                volume(cm, "ConfigMap", s(cm, "name"), &vname);
            }
            if let Some(sec) = src.get("secret") {
                volume(sec, "Secret", s(sec, "name"), &vname);
            }
        }
    }
    out
}

/// One referenced object, its last change and its missing keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigChange {
    pub kind: String,
    pub name: String,
    /// When it last changed (RFC 3339), when known.
    pub changed: Option<String>,
    /// `before-first-crash`, `after-first-crash` or `unknown`.
    pub relation: &'static str,
    /// Changed after the last healthy revision rolled out and before the
    /// first crash.
    pub in_window: bool,
    pub exists: Option<bool>,
    /// Referenced, not optional, and not among the object's keys (names only).
    pub missing_keys: Vec<String>,
    /// Where each missing key is referenced.
    pub referenced_by: Vec<String>,
    pub cite: Cite,
}

impl ConfigChange {
    pub fn sentence(&self, since: &str) -> String {
        let mut s = format!(
            "{} {} changed at {}, after {since} and before the first crash",
            self.kind,
            self.name,
            self.changed.as_deref().unwrap_or("?")
        );
        if !self.missing_keys.is_empty() {
            s.push_str(&format!(
                "; it lacks the referenced key(s) {} ({})",
                self.missing_keys.join(", "),
                self.referenced_by.join(", ")
            ));
        }
        s
    }
}

/// Compare what the failing template references with what the input says
/// of each object. `window`: (last healthy revision's rollout, first crash).
pub fn compare(
    template: &Value,
    objects: &[ConfigTime],
    window: (Option<i64>, Option<i64>),
) -> Vec<ConfigChange> {
    let wanted = refs(template);
    let mut out = Vec::new();
    for ((kind, name), w) in &wanted {
        // The entry with a time, when the input has several.
        let Some(o) = objects
            .iter()
            .filter(|o| &o.kind == kind && &o.name == name)
            .max_by_key(|o| (o.changed.is_some(), o.keys.len()))
        else {
            continue;
        };
        let changed = o.changed.as_deref().and_then(parse_timestamp);
        let relation = match (changed, window.1) {
            (Some(c), Some(f)) if c <= f => "before-first-crash",
            (Some(_), Some(_)) => "after-first-crash",
            _ => "unknown",
        };
        let in_window =
            matches!((window.0, changed, window.1), (Some(s), Some(c), Some(f)) if s < c && c <= f);
        let mut missing_keys = Vec::new();
        let mut referenced_by = Vec::new();
        if o.exists != Some(false) && !o.keys.is_empty() {
            for (k, (at, optional)) in &w.keys {
                if !optional && !o.keys.contains(k) {
                    missing_keys.push(k.clone());
                    referenced_by.push(at.clone());
                }
            }
        }
        out.push(ConfigChange {
            kind: kind.clone(),
            name: name.clone(),
            changed: o.changed.clone(),
            relation,
            in_window,
            exists: o.exists,
            missing_keys,
            referenced_by,
            cite: o.cite.clone(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SourceKind;
    use serde_json::json;

    fn obj(kind: &str, name: &str, keys: &[&str], changed: Option<&str>) -> ConfigTime {
        ConfigTime {
            kind: kind.into(),
            name: name.into(),
            exists: Some(true),
            keys: keys.iter().map(|k| k.to_string()).collect(),
            changed: changed.map(str::to_string),
            cite: Cite::new(SourceKind::Object, "references.json[0].changed", ""),
        }
    }

    fn template() -> Value {
        json!({"spec":{"containers":[{"name":"app","env":[
            {"name":"DB_PASSWORD","valueFrom":{"secretKeyRef":{"name":"db","key":"password"}}},
            {"name":"FLAG","valueFrom":{"configMapKeyRef":{"name":"flags","key":"beta","optional":true}}}]}],
            "volumes":[{"name":"cfg","configMap":{"name":"web-config","items":[{"key":"app.yaml","path":"app.yaml"}]}}]}})
    }

    #[test]
    fn a_change_inside_the_window_and_a_vanished_key() {
        let t = |s: &str| parse_timestamp(s);
        let window = (t("2026-11-30T10:00:00Z"), t("2026-11-30T12:00:00Z"));
        let objects = [
            obj("Secret", "db", &["passwd"], Some("2026-11-30T11:00:00Z")),
            obj(
                "ConfigMap",
                "web-config",
                &["app.yaml"],
                Some("2026-11-01T00:00:00Z"),
            ),
            obj("ConfigMap", "flags", &[], Some("2026-11-30T13:00:00Z")),
            obj(
                "ConfigMap",
                "unrelated",
                &["x"],
                Some("2026-11-30T11:00:00Z"),
            ),
        ];
        let c = compare(&template(), &objects, window);
        let by = |n: &str| c.iter().find(|x| x.name == n).unwrap();
        assert!(by("db").in_window);
        assert_eq!(by("db").missing_keys, ["password"]);
        assert_eq!(
            by("db").referenced_by,
            ["spec.containers[app].env[DB_PASSWORD]"]
        );
        // Near misses: changed long before the healthy revision, after the
        // first crash, or not referenced at all.
        assert!(!by("web-config").in_window && by("web-config").missing_keys.is_empty());
        assert_eq!(by("flags").relation, "after-first-crash");
        assert!(!by("flags").in_window && by("flags").missing_keys.is_empty());
        assert!(c.iter().all(|x| x.name != "unrelated"));
        let all = serde_json::to_string(&c).unwrap();
        assert!(
            !all.contains("passwd\""),
            "only missing key names are listed"
        );
    }

    #[test]
    fn without_a_time_nothing_is_in_the_window() {
        let c = compare(
            &template(),
            &[obj("Secret", "db", &["password"], None)],
            (Some(0), Some(10)),
        );
        assert_eq!(c[0].relation, "unknown");
        assert!(!c[0].in_window);
    }
}
