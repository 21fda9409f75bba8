//! Best-effort readers for YAML and JSON that were cut short or mangled in a
//! paste. They recover what the text still says; the caller reports that
//! the input was partial.

use serde_json::{Map, Value};

/// Recover a tree from broken YAML or JSON.
pub fn parse(text: &str) -> Option<Value> {
    if text.trim_start().starts_with(['{', '[']) {
        repair_json(text)
    } else {
        yaml(text)
    }
}

/// Close what a truncated JSON document left open, backing off to the last
/// complete element when the cut fell inside one.
fn repair_json(text: &str) -> Option<Value> {
    let bytes = text.as_bytes();
    let mut stack: Vec<u8> = Vec::new();
    let mut in_str = false;
    let mut esc = false;
    // (position just before a separating comma, stack at that point)
    let mut cuts: Vec<(usize, Vec<u8>)> = Vec::new();
    for (i, &b) in bytes.iter().enumerate() {
        if in_str {
            match (esc, b) {
                (true, _) => esc = false,
                (false, b'\\') => esc = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'{' => stack.push(b'}'),
            b'[' => stack.push(b']'),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => {
                cuts.push((i, stack.clone()));
                if cuts.len() > 4096 {
                    cuts.drain(..2048);
                }
            }
            _ => {}
        }
    }
    for (pos, st) in cuts.iter().rev().take(64) {
        let mut s = String::from(&text[..*pos]);
        for c in st.iter().rev() {
            s.push(*c as char);
        }
        if let Ok(v) = serde_json::from_str::<Value>(&s) {
            return Some(v);
        }
    }
    None
}

struct Line<'a> {
    indent: usize,
    text: &'a str,
}

/// An indentation-driven reader for block YAML: maps, lists, scalars and
/// single-line flow collections. Lines it cannot read are skipped.
fn yaml(text: &str) -> Option<Value> {
    let lines: Vec<Line> = text
        .lines()
        .filter_map(|l| {
            let l = l.trim_end_matches('\r');
            let t = l.trim_start();
            if t.is_empty() || t.starts_with('#') || t == "---" || t == "..." {
                return None;
            }
            Some(Line {
                indent: l.len() - t.len(),
                text: t,
            })
        })
        .collect();
    if lines.is_empty() {
        return None;
    }
    let mut pos = 0;
    let mut root = Map::new();
    let mut items = Vec::new();
    // Read blocks at whatever indentation they start, so a fragment whose
    // first lines are deeper than later ones still yields everything.
    while pos < lines.len() {
        let before = pos;
        let indent = lines[pos].indent;
        match block(&lines, &mut pos, indent, 0) {
            Value::Object(m) => root.extend(m),
            Value::Array(a) => items.extend(a),
            _ => {}
        }
        if pos == before {
            pos += 1;
        }
    }
    if root.is_empty() && !items.is_empty() {
        return Some(Value::Array(items));
    }
    if !items.is_empty() {
        root.insert("items".into(), Value::Array(items));
    }
    (!root.is_empty()).then_some(Value::Object(root))
}

/// Deeper than this, a document is not a Kubernetes object: the rest of the
/// branch is skipped (and the stack is safe).
const MAX_DEPTH: usize = 64;

fn block(lines: &[Line], pos: &mut usize, indent: usize, depth: usize) -> Value {
    if depth > MAX_DEPTH {
        while *pos < lines.len() && lines[*pos].indent >= indent {
            *pos += 1;
        }
        return Value::Null;
    }
    if *pos < lines.len() && lines[*pos].text.starts_with("- ")
        || lines.get(*pos).is_some_and(|l| l.text == "-")
    {
        let mut arr = Vec::new();
        while *pos < lines.len()
            && lines[*pos].indent == indent
            && (lines[*pos].text.starts_with("- ") || lines[*pos].text == "-")
        {
            let rest = lines[*pos].text[1..].trim_start();
            let item_indent = indent + (lines[*pos].text.len() - rest.len());
            if rest.is_empty() {
                *pos += 1;
                if *pos < lines.len() && lines[*pos].indent > indent {
                    let ind = lines[*pos].indent;
                    arr.push(block(lines, pos, ind, depth + 1));
                }
                continue;
            }
            if let Some((k, v)) = split_kv(rest) {
                // A map item: first key on the dash line, the rest below it.
                let mut m = Map::new();
                *pos += 1;
                insert_kv(lines, pos, item_indent, &mut m, k, v, depth + 1);
                while *pos < lines.len()
                    && lines[*pos].indent == item_indent
                    && !lines[*pos].text.starts_with("- ")
                {
                    let t = lines[*pos].text;
                    match split_kv(t) {
                        Some((k, v)) => {
                            *pos += 1;
                            insert_kv(lines, pos, item_indent, &mut m, k, v, depth + 1);
                        }
                        None => *pos += 1,
                    }
                }
                arr.push(Value::Object(m));
            } else {
                arr.push(scalar(rest));
                *pos += 1;
            }
        }
        return Value::Array(arr);
    }
    let mut m = Map::new();
    while *pos < lines.len() && lines[*pos].indent >= indent {
        let l = &lines[*pos];
        if l.indent > indent {
            *pos += 1; // stray deeper line: skip
            continue;
        }
        if l.text.starts_with("- ") {
            break;
        }
        match split_kv(l.text) {
            Some((k, v)) => {
                *pos += 1;
                insert_kv(lines, pos, indent, &mut m, k, v, depth);
            }
            None => *pos += 1,
        }
    }
    Value::Object(m)
}

fn insert_kv(
    lines: &[Line],
    pos: &mut usize,
    indent: usize,
    m: &mut Map<String, Value>,
    k: &str,
    v: &str,
    depth: usize,
) {
    let value = if v.is_empty() {
        match lines.get(*pos) {
            Some(next)
                if next.indent > indent
                    || (next.indent == indent && next.text.starts_with("- ")) =>
            {
                let ind = next.indent;
                block(lines, pos, ind, depth + 1)
            }
            _ => Value::Null,
        }
    } else if v == "|" || v == ">" || v.starts_with("|-") || v.starts_with(">-") {
        let mut s = String::new();
        while *pos < lines.len() && lines[*pos].indent > indent {
            s.push_str(lines[*pos].text);
            s.push('\n');
            *pos += 1;
        }
        Value::String(s)
    } else {
        scalar(v)
    };
    m.insert(k.to_string(), value);
}

fn split_kv(t: &str) -> Option<(&str, &str)> {
    let (k, v) = if let Some(rest) = t.strip_prefix('"') {
        let end = rest.find('"')?;
        let after = rest[end + 1..].trim_start().strip_prefix(':')?;
        (&rest[..end], after)
    } else {
        let i = t
            .find(": ")
            .or_else(|| t.strip_suffix(':').map(|s| s.len()))?;
        (&t[..i], &t[i + 1..])
    };
    if k.is_empty() || k.contains(' ') && !k.starts_with('"') {
        return None;
    }
    Some((k.trim(), v.trim().trim_end_matches(',')))
}

fn scalar(v: &str) -> Value {
    let v = v.trim();
    if v.starts_with(['{', '['])
        && let Ok(x) = serde_saphyr::from_str::<Value>(v)
    {
        return x;
    }
    if let Some(q) = v.strip_prefix('"').and_then(|x| x.strip_suffix('"')) {
        return Value::String(q.to_string());
    }
    if let Some(q) = v.strip_prefix('\'').and_then(|x| x.strip_suffix('\'')) {
        return Value::String(q.to_string());
    }
    if let Ok(n) = v.parse::<i64>() {
        return Value::from(n);
    }
    match v {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        "null" | "~" => Value::Null,
        _ => Value::String(v.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_json() {
        let v = repair_json("{\"status\": {\"containerStatuses\": [{\"name\": \"a\", \"restartCount\": 3, \"lastState\": {\"terminated\": {\"exitCode\": 137, \"rea").unwrap();
        assert_eq!(
            v.pointer("/status/containerStatuses/0/restartCount"),
            Some(&Value::from(3))
        );
    }

    #[test]
    fn yaml_with_broken_line() {
        let v = yaml("status:\n  containerStatuses:\n  - name: m\n    lastState:\n      terminated:\n        exitCode: 137\n        reason: [unclosed\n").unwrap();
        assert_eq!(
            v.pointer("/status/containerStatuses/0/lastState/terminated/exitCode"),
            Some(&Value::from(137))
        );
    }

    #[test]
    fn fragment_with_dedent() {
        let v =
            yaml("    - mountPath: /mnt/models\n      name: src\n      readOnly: true\n").unwrap();
        assert_eq!(v.pointer("/0/readOnly"), Some(&Value::Bool(true)));
    }
}
