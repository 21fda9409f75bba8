//! The log scanner: every rule's signatures matched in one pass.
//!
//! All literal keywords of all signatures go into one Aho-Corasick
//! automaton. The scanner runs it over the raw bytes of a log, block by
//! block, and only the lines that contain a keyword are decoded and checked
//! against the signatures' regular expressions. Memory stays flat whatever
//! the log's size: a bounded number of hits per signature, and the first and
//! last lines of the log, are all that is kept.

use crate::causes::Cause;
use crate::text::{clean_line, strip_log_prefix};
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use regex::Regex;
use serde::Serialize;
use std::io::{self, Read};
use std::sync::LazyLock;

/// What a matching line means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SigKind {
    /// Evidence for a cause.
    Cause(Cause),
    /// The process received SIGTERM (who sent it is for the rules to weigh).
    Sigterm,
    /// A generic exception or panic line: an application crash unless a
    /// more specific signature explains it.
    Exception,
    /// A model server startup stage (for the startup timeline).
    Stage(Stage),
}

/// Startup stages of model servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    Download,
    LoadWeights,
    WeightsLoaded,
    KvCache,
    CudaGraphs,
    Listening,
}

impl Stage {
    pub fn describe(self) -> &'static str {
        match self {
            Stage::Download => "downloading weights",
            Stage::LoadWeights => "loading weights",
            Stage::WeightsLoaded => "weights loaded",
            Stage::KvCache => "allocating the KV cache",
            Stage::CudaGraphs => "capturing CUDA graphs / compiling",
            Stage::Listening => "listening on its port",
        }
    }
}

/// A log signature: case-insensitive keywords, any of which selects a line,
/// and an optional regular expression the line must then match.
#[derive(Debug)]
pub struct Signature {
    /// Stable id, unique across rules (`oom.java-heap`).
    pub id: &'static str,
    pub kind: SigKind,
    /// How strongly a match alone supports the cause, 0..1.
    pub weight: f32,
    pub keywords: &'static [&'static str],
    pub regex: Option<&'static str>,
    /// What the line means, for the summary.
    pub meaning: &'static str,
}

/// A log line, numbered from 1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Line {
    pub number: u64,
    pub text: String,
}

/// A line that matched a signature.
#[derive(Debug, Clone)]
pub struct Hit {
    pub sig: &'static Signature,
    pub line: Line,
    /// The line is where the program says why it stopped: the final line of
    /// a traceback, a panic, a fatal log line.
    pub decisive: bool,
}

/// Which run of the container a log belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogKind {
    /// `kubectl logs --previous`: the run that crashed.
    Previous,
    /// `kubectl logs`: the current run, or a run the input does not name.
    Current,
    /// Free text scanned like a log (`other.txt`, pasted output).
    Other,
}

/// The result of scanning one log.
#[derive(Debug, Clone)]
pub struct LogScan {
    pub file: String,
    pub container: Option<String>,
    pub kind: LogKind,
    /// A pod named by a `$ kubectl logs NAME` line inside the text.
    pub pod_hint: Option<String>,
    pub lines: u64,
    pub bytes: u64,
    pub hits: Vec<Hit>,
    /// Hits not kept because a signature matched more often than the cap.
    pub dropped_hits: u64,
    pub head: Vec<Line>,
    pub tail: Vec<Line>,
    pub invalid_utf8: bool,
}

impl LogScan {
    pub fn is_empty(&self) -> bool {
        self.bytes == 0 || self.lines == 0
    }

    /// Hits whose signature supports `cause`.
    pub fn hits_for(&self, cause: Cause) -> impl Iterator<Item = &Hit> {
        self.hits
            .iter()
            .filter(move |h| h.sig.kind == SigKind::Cause(cause))
    }
}

const HEAD_LINES: usize = 40;
const TAIL_LINES: usize = 40;
/// Hits kept per signature: the first few and the most recent ones.
const FIRST_HITS: usize = 3;
const LAST_HITS: usize = 12;
const BLOCK: usize = 4 << 20;
const MAX_LINE: usize = 4096;

/// The compiled set of every signature.
pub struct Catalog {
    sigs: Vec<&'static Signature>,
    regexes: Vec<Option<Regex>>,
    ac: AhoCorasick,
    /// Automaton pattern index -> signatures using that keyword.
    by_pattern: Vec<Vec<usize>>,
    /// Finds keywords inside one line (all overlapping matches).
    line_ac: AhoCorasick,
}

impl Catalog {
    /// Build the catalog from signatures. Panics only on a malformed static
    /// signature, which the test suite catches.
    pub fn new(sigs: Vec<&'static Signature>) -> Catalog {
        let mut keywords: Vec<String> = Vec::new();
        let mut by_pattern: Vec<Vec<usize>> = Vec::new();
        for (i, s) in sigs.iter().enumerate() {
            for k in s.keywords {
                let k = k.to_ascii_lowercase();
                match keywords.iter().position(|x| *x == k) {
                    Some(p) => by_pattern[p].push(i),
                    None => {
                        keywords.push(k);
                        by_pattern.push(vec![i]);
                    }
                }
            }
        }
        let regexes = sigs
            .iter()
            .map(|s| {
                s.regex
                    .map(|r| Regex::new(r).unwrap_or_else(|e| panic!("signature {}: {e}", s.id)))
            })
            .collect();
        let ac = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostFirst)
            .kind(Some(AhoCorasickKind::DFA))
            .build(&keywords)
            .expect("keywords build");
        let line_ac = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .build(&keywords)
            .expect("keywords build");
        Catalog {
            sigs,
            regexes,
            ac,
            by_pattern,
            line_ac,
        }
    }

    /// The catalog of every rule's signatures.
    pub fn global() -> &'static Catalog {
        static CATALOG: LazyLock<Catalog> =
            LazyLock::new(|| Catalog::new(crate::rules::all_signatures()));
        &CATALOG
    }

    pub fn len(&self) -> usize {
        self.sigs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sigs.is_empty()
    }

    /// Which signatures a single line matches, best first.
    pub fn classify(&self, line: &str) -> Vec<&'static Signature> {
        let mut found: Vec<usize> = Vec::new();
        for m in self.line_ac.find_overlapping_iter(line) {
            for &i in &self.by_pattern[m.pattern().as_usize()] {
                if !found.contains(&i) {
                    found.push(i);
                }
            }
        }
        let body = strip_log_prefix(line);
        let mut out: Vec<&'static Signature> = found
            .into_iter()
            .filter(|&i| self.regexes[i].as_ref().is_none_or(|r| r.is_match(body)))
            .map(|i| self.sigs[i])
            .collect();
        out.sort_by(|a, b| b.weight.total_cmp(&a.weight));
        out
    }

    /// Scan a log from a reader, in one pass and bounded memory.
    pub fn scan<R: Read>(
        &self,
        mut reader: R,
        file: &str,
        kind: LogKind,
        container: Option<String>,
    ) -> io::Result<LogScan> {
        let mut st = ScanState::new(file, kind, container);
        let mut buf: Vec<u8> = Vec::with_capacity(BLOCK + MAX_LINE);
        let mut chunk = vec![0u8; BLOCK];
        loop {
            let n = read_full(&mut reader, &mut chunk)?;
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
            // Process every complete line; keep the unfinished last line.
            let cut = match memchr::memrchr(b'\n', &buf) {
                Some(i) => i + 1,
                None if buf.len() > BLOCK => buf.len(),
                None => continue,
            };
            self.scan_block(&buf[..cut], &mut st);
            buf.drain(..cut);
        }
        if !buf.is_empty() {
            let mut last = std::mem::take(&mut buf);
            last.push(b'\n');
            self.scan_block(&last, &mut st);
            st.bytes -= 1;
        }
        Ok(st.finish())
    }

    /// Scan text already in memory.
    pub fn scan_str(
        &self,
        text: &str,
        file: &str,
        kind: LogKind,
        container: Option<String>,
    ) -> LogScan {
        self.scan(text.as_bytes(), file, kind, container)
            .unwrap_or_else(|_| ScanState::new(file, kind, None).finish())
    }

    fn scan_block(&self, block: &[u8], st: &mut ScanState) {
        st.bytes += block.len() as u64;
        let first_line = st.lines + 1;
        let lines_in_block = memchr::memchr_iter(b'\n', block).count() as u64;

        // Head: the first lines of the log.
        if st.head.len() < HEAD_LINES {
            let mut start = 0;
            for (n, end) in (first_line..).zip(memchr::memchr_iter(b'\n', block)) {
                if st.head.len() >= HEAD_LINES {
                    break;
                }
                let line = st.make_line(n, &block[start..end]);
                st.head.push(line);
                start = end + 1;
            }
        }

        // Keyword hits: decode and classify only the lines that have one.
        // After a line is classified the search resumes at the next line, so
        // a long line full of keywords costs one pass, not one per keyword.
        let mut counted_to = 0usize;
        let mut line_no = first_line;
        let mut pos = 0usize;
        while pos < block.len() {
            let Some(m) = self.ac.find(aho_corasick::Input::new(block).range(pos..)) else {
                break;
            };
            let start = memchr::memrchr(b'\n', &block[pos..m.start()]).map_or(pos, |i| pos + i + 1);
            let end =
                memchr::memchr(b'\n', &block[m.start()..]).map_or(block.len(), |i| m.start() + i);
            line_no += memchr::memchr_iter(b'\n', &block[counted_to..start]).count() as u64;
            counted_to = start;
            let line = st.make_line(line_no, &block[start..end]);
            for sig in self.classify(&line.text) {
                st.record(sig, line.clone());
            }
            pos = end + 1;
        }

        st.lines += lines_in_block;

        // Tail: the last lines seen so far.
        let mut ends: Vec<usize> = Vec::with_capacity(TAIL_LINES + 1);
        let mut pos = block.len().saturating_sub(1); // skip the final newline
        ends.push(pos);
        while ends.len() <= TAIL_LINES {
            match memchr::memrchr(b'\n', &block[..pos]) {
                Some(i) => {
                    ends.push(i);
                    pos = i;
                }
                None => break,
            }
        }
        let reached_start = ends.len() <= TAIL_LINES;
        let mut new_tail: Vec<Line> = Vec::new();
        let count = ends.len() - 1 + usize::from(reached_start);
        for k in (0..count).rev() {
            let end = ends[k];
            let start = if k + 1 < ends.len() {
                ends[k + 1] + 1
            } else {
                0
            };
            let number = st.lines - k as u64;
            new_tail.push(st.make_line(number, &block[start..end.min(block.len())]));
        }
        if reached_start {
            st.tail.extend(new_tail);
            let excess = st.tail.len().saturating_sub(TAIL_LINES);
            st.tail.drain(..excess);
        } else {
            st.tail = new_tail;
        }
    }
}

fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

struct ScanState {
    file: String,
    kind: LogKind,
    container: Option<String>,
    pod_hint: Option<String>,
    lines: u64,
    bytes: u64,
    head: Vec<Line>,
    tail: Vec<Line>,
    /// Per signature id: first hits, then a ring of the latest.
    hits: Vec<(&'static str, Vec<Hit>, Vec<Hit>, u64)>,
    invalid_utf8: bool,
}

static DECISIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?:^|[\s\]>)])(?:[a-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Failure|Failed)(?::\s|:?$|\s*\()",
        r"|^\s*(?:panic|fatal error|FATAL|PANIC|Fatal|F\d{4}|error|ERROR|Error|CRITICAL|Exception in thread)\b",
        r"|panicked at|Caused by:|level=(?:fatal|panic)|\x22level\x22:\s*\x22(?:fatal|panic|error)\x22",
        r"|\((?:[A-Z]\w*Error|[A-Z]\w*Exception)\)\s*$",
    ))
    .expect("static regex")
});

impl ScanState {
    fn new(file: &str, kind: LogKind, container: Option<String>) -> Self {
        ScanState {
            file: file.to_string(),
            kind,
            container,
            pod_hint: None,
            lines: 0,
            bytes: 0,
            head: Vec::new(),
            tail: Vec::new(),
            hits: Vec::new(),
            invalid_utf8: false,
        }
    }

    fn make_line(&mut self, number: u64, raw: &[u8]) -> Line {
        let raw = &raw[..raw.len().min(MAX_LINE)];
        let text = match std::str::from_utf8(raw) {
            Ok(s) => clean_line(s),
            Err(_) => {
                self.invalid_utf8 = true;
                clean_line(&String::from_utf8_lossy(raw))
            }
        };
        Line { number, text }
    }

    fn record(&mut self, sig: &'static Signature, line: Line) {
        let decisive = DECISIVE.is_match(strip_log_prefix(&line.text));
        let hit = Hit {
            sig,
            line,
            decisive,
        };
        let slot = match self.hits.iter().position(|(id, ..)| *id == sig.id) {
            Some(i) => i,
            None => {
                self.hits.push((sig.id, Vec::new(), Vec::new(), 0));
                self.hits.len() - 1
            }
        };
        let (_, first, last, dropped) = &mut self.hits[slot];
        if first.len() < FIRST_HITS {
            first.push(hit);
        } else {
            if last.len() == LAST_HITS {
                last.remove(0);
                *dropped += 1;
            }
            last.push(hit);
        }
    }

    fn finish(mut self) -> LogScan {
        static KUBECTL_LOGS: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r"(?:^|\$\s*)(?:kubectl|oc|kc)\s+(?:-n\s+\S+\s+)?logs\s+(?:(?:-[a-zA-Z-]+(?:[ =]\S+)?)\s+)*(?:pod/)?([a-z0-9][a-z0-9.-]*)").expect("static regex")
        });
        for l in &self.head {
            if let Some(c) = KUBECTL_LOGS.captures(&l.text) {
                self.pod_hint = Some(c[1].to_string());
                break;
            }
        }
        let mut hits: Vec<Hit> = Vec::new();
        let mut dropped_hits = 0;
        for (_, first, last, dropped) in self.hits {
            hits.extend(first);
            hits.extend(last);
            dropped_hits += dropped;
        }
        hits.sort_by_key(|h| h.line.number);
        LogScan {
            file: self.file,
            container: self.container,
            kind: self.kind,
            pod_hint: self.pod_hint,
            lines: self.lines,
            bytes: self.bytes,
            hits,
            dropped_hits,
            head: self.head,
            tail: self.tail,
            invalid_utf8: self.invalid_utf8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static SIGS: &[Signature] = &[
        Signature {
            id: "t.oom",
            kind: SigKind::Cause(Cause::GpuOom),
            weight: 0.9,
            keywords: &["out of memory"],
            regex: Some(r"(?i)cuda.*out of memory"),
            meaning: "CUDA OOM",
        },
        Signature {
            id: "t.refused",
            kind: SigKind::Cause(Cause::DependencyUnreachable),
            weight: 0.7,
            keywords: &["connection refused"],
            regex: None,
            meaning: "refused",
        },
    ];

    fn catalog() -> Catalog {
        Catalog::new(SIGS.iter().collect())
    }

    #[test]
    fn finds_lines_with_numbers() {
        let log = "start\nfoo Connection refused\nbar\nRuntimeError: CUDA error: out of memory\nhost out of memory\n";
        let s = catalog().scan_str(log, "logs.txt", LogKind::Previous, None);
        assert_eq!(s.lines, 5);
        let got: Vec<(&str, u64)> = s.hits.iter().map(|h| (h.sig.id, h.line.number)).collect();
        assert_eq!(got, vec![("t.refused", 2), ("t.oom", 4)]);
        assert!(s.hits[1].decisive);
        assert!(!s.hits[0].decisive);
        assert_eq!(s.tail.last().unwrap().text, "host out of memory");
        assert_eq!(s.head.len(), 5);
    }

    #[test]
    fn no_trailing_newline_and_crlf() {
        let s = catalog().scan_str("a\r\nconnection refused\r", "x", LogKind::Current, None);
        assert_eq!(s.lines, 2);
        assert_eq!(s.hits[0].line.text, "connection refused");
        assert_eq!(s.tail.len(), 2);
    }

    #[test]
    fn hits_are_bounded() {
        let log = "connection refused\n".repeat(10_000);
        let s = catalog().scan_str(&log, "x", LogKind::Current, None);
        assert_eq!(s.lines, 10_000);
        assert_eq!(s.hits.len(), FIRST_HITS + LAST_HITS);
        assert_eq!(s.hits.last().unwrap().line.number, 10_000);
        assert_eq!(s.tail.len(), TAIL_LINES);
        assert_eq!(s.tail.last().unwrap().number, 10_000);
    }

    #[test]
    fn invalid_utf8_is_reported_not_fatal() {
        let bytes = b"ok\n\xff\xfe connection refused\n";
        let s = catalog()
            .scan(&bytes[..], "x", LogKind::Previous, None)
            .unwrap();
        assert!(s.invalid_utf8);
        assert_eq!(s.hits.len(), 1);
        assert_eq!(s.hits[0].line.number, 2);
    }

    #[test]
    fn pod_hint_from_command_line() {
        let s = catalog().scan_str(
            "$ kubectl logs web-6468f86645-x98pq\nboom\n",
            "x",
            LogKind::Current,
            None,
        );
        assert_eq!(s.pod_hint.as_deref(), Some("web-6468f86645-x98pq"));
    }
}
