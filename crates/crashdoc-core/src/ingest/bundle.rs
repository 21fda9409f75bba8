//! crashdoc's own evidence bundle: what `crashdoc capture` writes and
//! `crashdoc analyze` reads back. See `docs/bundle.md` for the layout.
//!
//! ```text
//! manifest.json                  {"format": "crashdoc-bundle", "version": 1, "pods": [...]}
//! pods/NAMESPACE/POD/pod.json    the Pod object
//! pods/NAMESPACE/POD/events.json EventList of the pod (by uid)
//! pods/NAMESPACE/POD/logs-previous.CONTAINER.txt, logs.CONTAINER.txt
//! pods/NAMESPACE/POD/replicaset.json, deployment.json, ...  owner chain
//! pods/NAMESPACE/POD/node.json, pvc.json
//! pods/NAMESPACE/POD/references.json  ConfigMaps/Secrets: key names and sizes only
//! pods/NAMESPACE/POD/missing.json     what the collector could not read, and why
//! ```

use super::{Doc, Evidence, InputError, Parts, assemble, read_folder_into};
use crate::model::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

pub const FORMAT: &str = "crashdoc-bundle";
pub const VERSION: u32 = 1;

/// `manifest.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub version: u32,
    #[serde(default)]
    pub created: Option<String>,
    #[serde(default)]
    pub tool: Option<String>,
    #[serde(default)]
    pub context: Option<String>,
    pub pods: Vec<ManifestPod>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ManifestPod {
    pub namespace: String,
    pub name: String,
    /// Folder of the pod's files, relative to the bundle root.
    pub path: String,
}

/// One entry of `references.json`: a ConfigMap or Secret the pod references.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reference {
    /// `ConfigMap` or `Secret`.
    pub kind: String,
    pub name: String,
    /// False when the object does not exist; None when it could not be read.
    pub exists: Option<bool>,
    /// Key name -> size of the value in bytes. Never the value.
    #[serde(default)]
    pub keys: BTreeMap<String, Option<u64>>,
}

fn parse_manifest(root: &Path, text: &str) -> Result<Manifest, InputError> {
    let m: Manifest = serde_json::from_str(text)
        .map_err(|e| InputError::BadBundle(root.to_path_buf(), format!("manifest.json: {e}")))?;
    if m.format != FORMAT {
        return Err(InputError::BadBundle(
            root.to_path_buf(),
            format!("manifest format is `{}`, not `{FORMAT}`", m.format),
        ));
    }
    if m.version > VERSION {
        return Err(InputError::BadBundle(
            root.to_path_buf(),
            format!(
                "bundle version {} is newer than this crashdoc reads ({VERSION}); upgrade crashdoc",
                m.version
            ),
        ));
    }
    Ok(m)
}

/// Read a bundle folder.
pub fn read_dir(root: &Path) -> Result<Evidence, InputError> {
    let text =
        std::fs::read_to_string(root.join("manifest.json")).map_err(|source| InputError::Io {
            path: root.join("manifest.json"),
            source,
        })?;
    let manifest = parse_manifest(root, &text)?;
    let mut ev = Evidence::default();
    for mp in &manifest.pods {
        let dir = root.join(&mp.path);
        if !dir.starts_with(root) || mp.path.contains("..") {
            ev.notes
                .push(format!("skipped pod path {} outside the bundle", mp.path));
            continue;
        }
        let mut parts = Parts::default();
        read_folder_into(&dir, &mut parts)?;
        push_pods(&mut ev, parts, mp);
    }
    Ok(ev)
}

fn push_pods(ev: &mut Evidence, parts: Parts, mp: &ManifestPod) {
    let mut e = assemble(parts);
    for p in &mut e.pods {
        p.namespace.get_or_insert_with(|| mp.namespace.clone());
        p.name.get_or_insert_with(|| mp.name.clone());
    }
    for (_, m) in e.collector_missing {
        ev.collector_missing.push((mp.name.clone(), m));
    }
    ev.pods.extend(e.pods);
    ev.notes.extend(e.notes);
}

/// Read a bundle packed as `.tar.gz`, streaming each entry.
pub fn read_tar_gz(path: &Path) -> Result<Evidence, InputError> {
    let io = |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    };
    let f = std::fs::File::open(path).map_err(io)?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(f));
    let mut manifest: Option<Manifest> = None;
    let mut by_dir: BTreeMap<String, Parts> = BTreeMap::new();
    for entry in archive.entries().map_err(io)? {
        let entry = entry.map_err(io)?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let p = entry
            .path()
            .map_err(io)?
            .to_string_lossy()
            .trim_start_matches("./")
            .to_string();
        // A single top-level folder wrapping the bundle is allowed.
        let (dir, name) = match p.rsplit_once('/') {
            Some((d, n)) => (d.to_string(), n.to_string()),
            None => (String::new(), p.clone()),
        };
        if name == "manifest.json" {
            let mut s = String::new();
            entry.take(1 << 20).read_to_string(&mut s).map_err(io)?;
            manifest = Some(parse_manifest(path, &s)?);
            continue;
        }
        let size = entry.header().size().unwrap_or(0);
        let parts = by_dir.entry(dir).or_default();
        if let Err(e) = parts.add_file(&name, size, entry) {
            parts.notes.push(format!("could not read {p}: {e}"));
        }
    }
    let manifest = manifest.ok_or_else(|| {
        InputError::BadBundle(path.to_path_buf(), "no manifest.json in the archive".into())
    })?;
    let mut ev = Evidence::default();
    for mp in &manifest.pods {
        let key = by_dir
            .keys()
            .find(|k| {
                k.as_str() == mp.path.trim_end_matches('/')
                    || k.ends_with(&format!("/{}", mp.path.trim_end_matches('/')))
            })
            .cloned();
        match key.and_then(|k| by_dir.remove(&k)) {
            Some(parts) => push_pods(&mut ev, parts, mp),
            None => ev.notes.push(format!(
                "manifest lists {}/{} but the archive has no files for it",
                mp.namespace, mp.name
            )),
        }
    }
    Ok(ev)
}

/// `references.json` and `missing.json` inside a bundle's pod folder.
pub fn read_meta(parts: &mut Parts, doc: &Doc) {
    if doc.name.eq_ignore_ascii_case("missing.json") {
        match serde_json::from_str::<Vec<Missing>>(&doc.text) {
            Ok(m) => parts.missing.extend(m),
            Err(e) => parts.notes.push(format!("{}: {e}", doc.name)),
        }
        return;
    }
    match serde_json::from_str::<Vec<Reference>>(&doc.text) {
        Ok(refs) => {
            for (i, r) in refs.into_iter().enumerate() {
                let kind = if r.kind == "Secret" {
                    RefKind::Secret
                } else {
                    RefKind::ConfigMap
                };
                let text = match r.exists {
                    Some(false) => format!("{} {} does not exist", r.kind, r.name),
                    _ => format!(
                        "{} {} keys: {}",
                        r.kind,
                        r.name,
                        r.keys.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                };
                let cite = Cite::new(SourceKind::Object, format!("{}[{i}]", doc.name), text);
                if r.exists == Some(false) {
                    parts.notes.push(format!(
                        "{} {} referenced by the pod does not exist",
                        r.kind, r.name
                    ));
                }
                parts.config_objects.push(ConfigObject {
                    kind,
                    name: r.name,
                    keys: r.keys.into_iter().collect(),
                    cite,
                });
            }
        }
        Err(e) => parts.notes.push(format!("{}: {e}", doc.name)),
    }
}
