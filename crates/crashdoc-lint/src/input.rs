//! Reading manifests: files, folders, multi-document YAML, JSON (one value,
//! an array or several values in a row), `List` objects, standard input.
//! Every object keeps its file and first line, and the text of its document
//! so that fields can be located (`crate::locate`).
//!
//! Secret values are dropped as soon as a Secret is read: only key names are
//! kept, so nothing downstream can print one.

use crate::locate::{Path, locate};
use serde_json::Value;
use std::sync::Arc;

/// Input that cannot be linted.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("cannot read {path}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}:{line}: not valid {what}: {message}")]
    Syntax {
        file: String,
        line: usize,
        what: &'static str,
        message: String,
    },
    #[error("{0}: no Kubernetes object in it (nothing with `kind` and `metadata`)")]
    NoObjects(String),
    #[error("{0}: binary data, not YAML or JSON")]
    Binary(String),
}

impl crashdoc_core::Hint for InputError {
    /// The `hint:` line after the error (the CLI prints it; the MCP server's
    /// `lint` tool puts it in its error result).
    fn hint(&self) -> Option<std::borrow::Cow<'_, str>> {
        Some(std::borrow::Cow::Borrowed(match self {
            InputError::Syntax { .. } => {
                "fix the YAML/JSON at that line; for a chart, check `helm template` itself succeeds"
            }
            InputError::NoObjects(_) => {
                "crashdoc lint reads Kubernetes manifests (objects with kind and metadata), e.g. `helm template REL CHART | crashdoc lint -`"
            }
            InputError::Binary(_) => "pass the rendered YAML or JSON, not an archive",
            InputError::Io { .. } => "check the path exists and is readable",
        }))
    }
}

/// One document's text, shared by the objects read from it.
#[derive(Debug)]
pub struct Doc {
    pub file: String,
    /// 1-based line of the document's first line in its file.
    pub first_line: usize,
    pub text: String,
    pub json: bool,
}

/// One Kubernetes object of the input.
#[derive(Debug, Clone)]
pub struct Object {
    pub value: Value,
    pub doc: Arc<Doc>,
    /// Where the object sits in its document (`items[3]` inside a List).
    pub base: Path,
    /// helm's `# Source: chart/templates/x.yaml` above the document.
    pub template: Option<String>,
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
}

impl Object {
    pub fn file(&self) -> &str {
        &self.doc.file
    }

    /// The 1-based line of a field of this object in its file.
    pub fn line_of(&self, path: &Path) -> usize {
        if self.doc.json {
            return self.line();
        }
        let full = self.base.join(path);
        locate(&self.doc.text, &full)
            .or_else(|| locate(&self.doc.text, &self.base))
            .map(|l| self.doc.first_line + l)
            .unwrap_or_else(|| self.line())
    }

    /// The 1-based line where the object starts.
    pub fn line(&self) -> usize {
        if self.base.0.is_empty() || self.doc.json {
            let skip = self
                .doc
                .text
                .lines()
                .take_while(|l| {
                    let t = l.trim();
                    t.is_empty() || t.starts_with('#') || t == "---"
                })
                .count();
            return self.doc.first_line + skip;
        }
        locate(&self.doc.text, &self.base)
            .map(|l| self.doc.first_line + l)
            .unwrap_or(self.doc.first_line)
    }

    /// `Deployment llm/vllm`.
    pub fn display(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {ns}/{}", self.kind, self.name),
            None => format!("{} {}", self.kind, self.name),
        }
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.value
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
    }
}

/// Everything read, in input order.
#[derive(Debug, Default, Clone)]
pub struct Input {
    pub objects: Vec<Object>,
    pub files: usize,
}

impl Input {
    /// Read a path: a file, or a folder (every `.yaml`, `.yml` and `.json`
    /// under it, sorted).
    pub fn read_path(&mut self, path: &std::path::Path) -> Result<(), InputError> {
        let shown = path.display().to_string();
        let meta = std::fs::metadata(path).map_err(|source| InputError::Io {
            path: shown.clone(),
            source,
        })?;
        if meta.is_dir() {
            let mut files = Vec::new();
            walk(path, &mut files).map_err(|source| InputError::Io {
                path: shown.clone(),
                source,
            })?;
            files.sort();
            let before = self.objects.len();
            for f in files {
                let bytes = std::fs::read(&f).map_err(|source| InputError::Io {
                    path: f.display().to_string(),
                    source,
                })?;
                self.read_bytes(&f.display().to_string(), &bytes)?;
            }
            if self.objects.len() == before {
                return Err(InputError::NoObjects(shown));
            }
            return Ok(());
        }
        let bytes = std::fs::read(path).map_err(|source| InputError::Io {
            path: shown.clone(),
            source,
        })?;
        let before = self.objects.len();
        self.read_bytes(&shown, &bytes)?;
        if self.objects.len() == before {
            return Err(InputError::NoObjects(shown));
        }
        Ok(())
    }

    /// Read text already in memory (standard input, a test), named `file`.
    pub fn read_bytes(&mut self, file: &str, bytes: &[u8]) -> Result<(), InputError> {
        self.files += 1;
        if bytes.contains(&0) {
            return Err(InputError::Binary(file.to_string()));
        }
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_start_matches('\u{feff}');
        if text.trim_start().starts_with(['{', '[']) {
            return self.read_json(file, text);
        }
        for (first_line, doc) in split_documents(text) {
            self.read_yaml_doc(file, first_line, doc)?;
        }
        Ok(())
    }

    /// Add an object built in memory (from a diagnosis's evidence, or the
    /// API server), cited as `file` line 1 plus its field path.
    pub fn add_object_value(&mut self, file: &str, v: Value) {
        let doc = Arc::new(Doc {
            file: file.to_string(),
            first_line: 1,
            text: String::new(),
            json: true,
        });
        self.add_value(v, &doc, Path::default(), None);
    }

    fn read_json(&mut self, file: &str, text: &str) -> Result<(), InputError> {
        let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
        let mut offset = 0usize;
        loop {
            let next = stream.next();
            let end = stream.byte_offset();
            match next {
                None => break,
                Some(Err(e)) => {
                    return Err(InputError::Syntax {
                        file: file.to_string(),
                        line: e.line(),
                        what: "JSON",
                        message: e.to_string(),
                    });
                }
                Some(Ok(v)) => {
                    let chunk = &text[offset..end];
                    let lead = chunk.len() - chunk.trim_start().len();
                    let first_line = 1 + text[..offset + lead].matches('\n').count();
                    let doc = Arc::new(Doc {
                        file: file.to_string(),
                        first_line,
                        text: String::new(),
                        json: true,
                    });
                    self.add_value(v, &doc, Path::default(), None);
                    offset = end;
                }
            }
        }
        Ok(())
    }

    fn read_yaml_doc(
        &mut self,
        file: &str,
        first_line: usize,
        doc: &str,
    ) -> Result<(), InputError> {
        if doc
            .lines()
            .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
        {
            return Ok(());
        }
        let v: Value = serde_saphyr::from_str(doc).map_err(|e| {
            let msg = e.to_string();
            InputError::Syntax {
                file: file.to_string(),
                line: first_line + yaml_error_line(&msg).unwrap_or(1) - 1,
                what: "YAML",
                message: msg.lines().next().unwrap_or("").to_string(),
            }
        })?;
        let template = doc.lines().find_map(|l| {
            l.trim()
                .strip_prefix("# Source:")
                .map(|s| s.trim().to_string())
        });
        let doc = Arc::new(Doc {
            file: file.to_string(),
            first_line,
            text: doc.to_string(),
            json: false,
        });
        self.add_value(v, &doc, Path::default(), template);
        Ok(())
    }

    fn add_value(&mut self, v: Value, doc: &Arc<Doc>, base: Path, template: Option<String>) {
        match v {
            Value::Array(items) => {
                for (i, it) in items.into_iter().enumerate() {
                    self.add_value(it, doc, base.clone().index(i), template.clone());
                }
            }
            Value::Object(_) => {
                let kind = v
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                if kind.ends_with("List") && v.get("items").is_some_and(Value::is_array) {
                    let Value::Object(mut m) = v else { return };
                    if let Some(Value::Array(items)) = m.remove("items") {
                        for (i, it) in items.into_iter().enumerate() {
                            self.add_value(
                                it,
                                doc,
                                base.clone().key("items").index(i),
                                template.clone(),
                            );
                        }
                    }
                    return;
                }
                if kind.is_empty() || v.get("metadata").is_none() {
                    return;
                }
                let mut v = v;
                if kind == "Secret" {
                    drop_secret_values(&mut v);
                }
                let name = v
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .or_else(|| v.pointer("/metadata/generateName").and_then(Value::as_str))
                    .unwrap_or("")
                    .to_string();
                let namespace = v
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                self.objects.push(Object {
                    value: v,
                    doc: doc.clone(),
                    base,
                    template,
                    kind,
                    name,
                    namespace,
                });
            }
            _ => {}
        }
    }
}

/// Keep a Secret's key names, never its values.
fn drop_secret_values(v: &mut Value) {
    for field in ["data", "stringData"] {
        if let Some(Value::Object(m)) = v.get_mut(field) {
            for val in m.values_mut() {
                *val = Value::Null;
            }
        }
    }
}

fn yaml_error_line(msg: &str) -> Option<usize> {
    // serde-saphyr says `... at line N column M`.
    let i = msg.find("line ")?;
    msg[i + 5..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// Split a YAML stream on `---` lines; each document with its 1-based first line.
pub fn split_documents(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0usize;
    let mut start_line = 1usize;
    let mut pos = 0usize;
    for (line_no, line) in (1usize..).zip(text.split_inclusive('\n')) {
        let t = line.trim_end_matches(['\n', '\r']);
        let sep = t == "---" || t.starts_with("--- ") || t == "...";
        if sep {
            out.push((start_line, &text[start..pos]));
            start = pos + line.len();
            start_line = line_no + 1;
        }
        pos += line.len();
    }
    out.push((start_line, &text[start..]));
    out
}

fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let p = e.path();
        let ft = e.file_type()?;
        if ft.is_dir() {
            if !p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            {
                walk(&p, out)?;
            }
        } else if p
            .extension()
            .is_some_and(|x| x == "yaml" || x == "yml" || x == "json")
        {
            out.push(p);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_lists_and_lines() {
        let text = "# Source: c/templates/a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: s\n  data:\n    password: c2VjcmV0\n";
        let mut i = Input::default();
        i.read_bytes("x.yaml", text.as_bytes()).unwrap();
        assert_eq!(i.objects.len(), 2);
        assert_eq!(i.objects[0].line(), 2);
        assert_eq!(i.objects[0].template.as_deref(), Some("c/templates/a.yaml"));
        assert_eq!(i.objects[1].kind, "Secret");
        assert_eq!(i.objects[1].line(), 12);
        assert_eq!(i.objects[1].line_of(&Path::parse("data.password")), 17);
        // The value is gone, the key stays.
        assert_eq!(
            i.objects[1].value.pointer("/data/password"),
            Some(&Value::Null)
        );
    }

    #[test]
    fn json_values_in_a_row() {
        let text = "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\"}}\n\n{\"kind\":\"ConfigMap\",\n\"metadata\":{\"name\":\"b\"}}\n";
        let mut i = Input::default();
        i.read_bytes("x.json", text.as_bytes()).unwrap();
        assert_eq!(i.objects.len(), 2);
        assert_eq!(i.objects[1].line(), 3);
    }

    #[test]
    fn broken_yaml_names_file_and_line() {
        let mut i = Input::default();
        let e = i
            .read_bytes(
                "x.yaml",
                b"kind: ConfigMap\nmetadata:\n  name: a\n---\nkind: [unclosed\n",
            )
            .unwrap_err();
        let s = e.to_string();
        assert!(s.starts_with("x.yaml:5"), "{s}");
    }

    #[test]
    fn text_without_objects_reads_nothing() {
        let mut i = Input::default();
        i.read_bytes("x.yaml", b"just: a map\n").unwrap();
        assert!(i.objects.is_empty());
    }
}
