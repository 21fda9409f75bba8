//! Line numbers for fields: a small key-path locator over the YAML text.
//!
//! serde-saphyr deserialises into a tree without positions, so the line of a
//! field is found again in the text: each key of the path is looked up at the
//! indentation of its parent's children, each index counts the `- ` items of
//! a block sequence. Block style only (what kubectl, helm and kustomize
//! print); inside a flow collection (`{...}`, `[...]`) or JSON the deepest
//! line found is returned, at worst the object's first line.

use std::fmt;

/// One step of a path into an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// A path into an object (`spec.template.spec.containers[0].livenessProbe`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Path(pub Vec<Seg>);

impl Path {
    pub fn key(mut self, k: &str) -> Path {
        self.0.push(Seg::Key(k.to_string()));
        self
    }
    pub fn index(mut self, i: usize) -> Path {
        self.0.push(Seg::Index(i));
        self
    }
    /// `a.b[0].c` → the path; keys only contain what Kubernetes field names contain.
    pub fn parse(s: &str) -> Path {
        let mut p = Path::default();
        for part in s.split('.').filter(|x| !x.is_empty()) {
            let mut rest = part;
            if let Some(b) = rest.find('[') {
                if b > 0 {
                    p = p.key(&rest[..b]);
                }
                rest = &rest[b..];
                while let Some(stripped) = rest.strip_prefix('[') {
                    let Some(e) = stripped.find(']') else { break };
                    if let Ok(i) = stripped[..e].parse() {
                        p = p.index(i);
                    }
                    rest = &stripped[e + 1..];
                }
            } else {
                p = p.key(rest);
            }
        }
        p
    }
    pub fn join(&self, other: &Path) -> Path {
        let mut v = self.0.clone();
        v.extend(other.0.iter().cloned());
        Path(v)
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for s in &self.0 {
            match s {
                Seg::Key(k) => {
                    if !first {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?;
                }
                Seg::Index(i) => write!(f, "[{i}]")?,
            }
            first = false;
        }
        Ok(())
    }
}

/// A line as the locator sees it.
struct Line<'a> {
    /// Leading spaces.
    indent: usize,
    /// Column of the first key: after the indentation and any `- ` markers.
    key_col: usize,
    /// Whether the line starts a sequence item (`- `).
    dash: bool,
    /// The text from `key_col`.
    rest: &'a str,
    /// Blank or comment only.
    empty: bool,
}

fn scan(text: &str) -> Vec<Line<'_>> {
    text.lines()
        .map(|l| {
            let l = l.trim_end_matches('\r');
            let indent = l.len() - l.trim_start_matches(' ').len();
            let mut col = indent;
            let mut dash = false;
            let b = l.as_bytes();
            while col < b.len() && b[col] == b'-' && (col + 1 == b.len() || b[col + 1] == b' ') {
                dash = true;
                col += 1;
                while col < b.len() && b[col] == b' ' {
                    col += 1;
                }
            }
            let rest = &l[col.min(l.len())..];
            let t = l.trim();
            Line {
                indent,
                key_col: col,
                dash,
                rest,
                empty: t.is_empty() || t.starts_with('#'),
            }
        })
        .collect()
}

fn key_matches(rest: &str, key: &str) -> bool {
    let unq = |q: char| {
        rest.strip_prefix(q)
            .and_then(|r| r.strip_prefix(key))
            .and_then(|r| r.strip_prefix(q))
    };
    let after = rest
        .strip_prefix(key)
        .or_else(|| unq('"'))
        .or_else(|| unq('\''));
    after.is_some_and(|a| a.starts_with(':') && (a.len() == 1 || a[1..].starts_with([' ', '\t'])))
}

/// The 0-based line of `path` in `text` (one YAML document), or the deepest
/// line found on the way. `None` when not even the first key is found.
pub fn locate(text: &str, path: &Path) -> Option<usize> {
    let lines = scan(text);
    // The range of lines that holds the current node's children.
    let mut start = 0usize;
    let mut end = lines.len();
    let mut found: Option<usize> = None;
    // Column of the current node's children; None = take the first line's.
    let mut child_col: Option<usize> = None;
    // Whether the current node starts on the line `found` (a `- key:` item).
    let mut inline_first: Option<usize> = None;
    for seg in &path.0 {
        match seg {
            Seg::Key(k) => {
                let col = match child_col {
                    Some(c) => c,
                    None => {
                        let first =
                            inline_first.or_else(|| (start..end).find(|&i| !lines[i].empty))?;
                        lines[first].key_col
                    }
                };
                let from = inline_first.unwrap_or(start);
                let hit = (from..end).find(|&i| {
                    !lines[i].empty && lines[i].key_col == col && key_matches(lines[i].rest, k)
                });
                let Some(i) = hit else { return found };
                found = Some(i);
                // The key's block: until a line indented less than the key, or
                // as much without being a sequence item of the key's value.
                let key_indent = col;
                let mut j = i + 1;
                while j < end {
                    let l = &lines[j];
                    if !l.empty && (l.indent < key_indent || (l.indent == key_indent && !l.dash)) {
                        break;
                    }
                    j += 1;
                }
                start = i + 1;
                end = j;
                child_col = None;
                inline_first = None;
            }
            Seg::Index(n) => {
                let first = (start..end).find(|&i| !lines[i].empty && lines[i].dash);
                let Some(first) = first else { return found };
                let dash_col = lines[first].indent;
                let items: Vec<usize> = (start..end)
                    .filter(|&i| !lines[i].empty && lines[i].dash && lines[i].indent == dash_col)
                    .collect();
                let Some(&i) = items.get(*n) else {
                    return found;
                };
                found = Some(i);
                let next = items.get(n + 1).copied().unwrap_or(end);
                // The item's keys sit at the column after its dash.
                let l = &lines[i];
                child_col = Some(l.key_col);
                inline_first = Some(i);
                start = i;
                end = next;
                // A nested `- - x` keeps its own key column.
                if l.rest.is_empty() {
                    inline_first = None;
                    child_col = None;
                    start = i + 1;
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: a
        image: x
        ports:
        - containerPort: 80
          name: http
      - name: b
        # a comment
        image: y
        livenessProbe:
          httpGet:
            path: /healthz
";

    #[test]
    fn finds_keys_and_indexes() {
        let at = |p: &str| locate(DOC, &Path::parse(p)).map(|l| l + 1);
        assert_eq!(at("kind"), Some(2));
        assert_eq!(at("metadata.name"), Some(4));
        assert_eq!(at("spec.template.spec.containers"), Some(8));
        assert_eq!(at("spec.template.spec.containers[0]"), Some(9));
        assert_eq!(at("spec.template.spec.containers[0].image"), Some(10));
        assert_eq!(
            at("spec.template.spec.containers[0].ports[0].name"),
            Some(13)
        );
        assert_eq!(at("spec.template.spec.containers[1].name"), Some(14));
        assert_eq!(at("spec.template.spec.containers[1].image"), Some(16));
        assert_eq!(
            at("spec.template.spec.containers[1].livenessProbe.httpGet.path"),
            Some(19)
        );
    }

    #[test]
    fn a_missing_key_gives_the_deepest_line_found() {
        let at = |p: &str| locate(DOC, &Path::parse(p)).map(|l| l + 1);
        // containers[0] has no livenessProbe: the item's line, not container b's probe.
        assert_eq!(
            at("spec.template.spec.containers[0].livenessProbe"),
            Some(9)
        );
        assert_eq!(at("nothing"), None);
    }

    #[test]
    fn indented_sequences_and_quoted_keys() {
        let doc = "spec:\n  containers:\n    - name: a\n      \"image\": x\n    - name: b\n      image: y\n";
        assert_eq!(
            locate(doc, &Path::parse("spec.containers[1].image")),
            Some(5)
        );
        assert_eq!(
            locate(doc, &Path::parse("spec.containers[0].image")),
            Some(3)
        );
    }

    #[test]
    fn path_round_trips() {
        let p = Path::parse("spec.containers[2].env[0].valueFrom");
        assert_eq!(p.to_string(), "spec.containers[2].env[0].valueFrom");
    }
}
