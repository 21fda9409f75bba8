//! The log scanner: every rule's signatures matched in one pass.
//!
//! All literal keywords of all signatures (ASCII case-insensitive) go into
//! one Aho-Corasick DFA. The scanner reads a log block by block (4 MiB, cut
//! at the last newline) and, for each block:
//!
//! 1. First pass, over every byte: which lines contain a keyword. The DFA
//!    is copied into a compact table (`LineDfa`: one column per byte
//!    class, rows in breadth-first order so the states ordinary text visits
//!    share cache lines, every match state merged into one `MATCH` row).
//!    One walk of it is bound by the latency of its look-ups, each waiting
//!    for the last; so each sub-block (1 MiB, cut at a newline) is cut into
//!    `WALKS` equal segments whose walks run in lock step in one loop, and
//!    the CPU overlaps their independent look-ups (two to three times the
//!    speed of one walk). Each walk starts the longest keyword's length
//!    early, so it is in the right state where its segment starts, even
//!    mid-line. A walk that reaches `MATCH` reports its line and resumes at
//!    the next line start, so a long line full of keywords still costs one
//!    pass.
//!
//!    The DFA is built on another thread once a log fills a whole block,
//!    and until it is ready (and for small inputs, always) the first pass
//!    is a leftmost search of the line automaton from each line start,
//!    which reports the same lines. A block's sub-blocks are shared out to
//!    up to `MAX_THREADS` threads: the first pass is a pure function of the
//!    bytes, so the lines found do not depend on the thread count.
//! 2. Only those lines are decoded and classified: the keywords found in
//!    the line (all overlapping matches) name the signatures, whose regular
//!    expressions are then checked.
//!
//! The first pass gives exactly the lines the keyword automaton matches: it
//! needs no guess about which bytes are rare in logs, so its speed does not
//! depend on the log's text, and it stays exact whatever keywords the rules
//! add (the tests compare it with a plain leftmost-first search on generated
//! logs). Memory stays flat whatever the log's size: two blocks of buffer,
//! a bounded number of hits per signature, and the first and last lines of
//! the log, are all that is kept.

use crate::catalog::Places;
use crate::causes::Cause;
use crate::strength::Strength;
use crate::text::{clean_line, strip_log_prefix};
use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, Anchored, MatchKind};
use regex::Regex;
use serde::Serialize;
use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, OnceLock};

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

/// A catalog entry, compiled: case-insensitive keywords, any of which
/// selects a line, and an optional regular expression the line must then
/// match. Entries are read from the catalog's data (`crate::catalog`).
#[derive(Debug)]
pub struct Signature {
    /// Stable id, unique across the catalog (`errno.enoent`).
    pub id: &'static str,
    pub kind: SigKind,
    /// How strongly a match alone supports the cause.
    pub strength: Strength,
    /// Where the text can stand.
    pub places: Places,
    pub keywords: &'static [&'static str],
    pub regex: Option<&'static str>,
    /// What the line means, for the summary.
    pub meaning: &'static str,
    /// The software that prints it (repository and file), or the document
    /// that defines it.
    pub source: &'static str,
    /// The catalog family and file the entry comes from.
    pub family: &'static str,
    pub file: &'static str,
    /// A line as the software prints it; it must match the entry.
    pub test: &'static str,
    /// Lines that look alike and must not match.
    pub near_miss: &'static [&'static str],
}

impl Signature {
    /// An entry written in code (tests, benchmarks): a log-only entry
    /// without a source.
    pub const fn code(
        id: &'static str,
        kind: SigKind,
        strength: Strength,
        keywords: &'static [&'static str],
        regex: Option<&'static str>,
        meaning: &'static str,
    ) -> Signature {
        Signature {
            id,
            kind,
            strength,
            places: Places::LOG,
            keywords,
            regex,
            meaning,
            source: "code",
            family: "code",
            file: "code",
            test: "",
            near_miss: &[],
        }
    }

    /// The support score of one match.
    pub fn weight(&self) -> f32 {
        self.strength.score()
    }

    /// Whether a line matches this entry alone (slow: for tests and tools;
    /// the scanner matches every entry at once).
    pub fn matches(&self, line: &str) -> bool {
        let lower = line.to_ascii_lowercase();
        self.keywords
            .iter()
            .any(|k| lower.contains(&k.to_ascii_lowercase()))
            && self
                .regex
                .is_none_or(|r| Regex::new(r).is_ok_and(|r| r.is_match(strip_log_prefix(line))))
    }
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
    /// The text of a structured input (describe output, YAML, an events
    /// table), read line by line too, so that evidence outside the layout
    /// its parser expects is still seen.
    Text,
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
/// Independent walks of the keyword DFA run in lock step by the first pass.
const WALKS: usize = 4;
/// The first pass looks for candidate lines in sub-blocks of about this
/// size, so the list of candidates it hands over stays small.
const SUB_BLOCK: usize = 1 << 20;

/// Threads for the first pass over one block (its sub-blocks are shared
/// out); at most this many, and no more than the machine has.
const MAX_THREADS: usize = 4;

/// The compiled set of every signature.
pub struct Catalog {
    sigs: Vec<&'static Signature>,
    /// Each entry's regular expression, compiled the first time a line
    /// selects the entry (most entries are never needed by one log).
    regexes: Vec<OnceLock<Option<Regex>>>,
    /// Every keyword, lowercase, in automaton pattern order.
    keywords: Arc<Vec<String>>,
    /// Every keyword: reaching its match state means that a keyword ends
    /// at the byte just read. Built on another thread once a log fills a
    /// whole block (building it costs more than scanning a small input);
    /// until it is ready the first pass searches with `line_ac`.
    dfa: Arc<OnceLock<LineDfa>>,
    /// Whether that build has been started.
    dfa_started: AtomicBool,
    /// Automaton pattern index -> signatures using that keyword.
    by_pattern: Vec<Vec<usize>>,
    /// Finds keywords inside one line (all overlapping matches).
    line_ac: AhoCorasick,
}

/// The keyword automaton in the layout the first pass wants: a dense
/// table of `u32` row offsets, rows in breadth-first order from the start
/// state (the states that ordinary text visits sit together in cache), and
/// every match state merged into one row, `MATCH`, whose transitions are
/// never taken (a walk that reaches it moves on to the next line).
struct LineDfa {
    /// Byte -> column: bytes that occur in no keyword share column 0, and
    /// the two cases of a letter share one.
    classes: [u8; 256],
    /// `trans[row + class]` is the row of the next state.
    trans: Vec<u32>,
    start: u32,
    /// The longest keyword's length less one: a walk started this many
    /// bytes before a position is in the right state there.
    warm_up: usize,
}

impl LineDfa {
    const MATCH: u32 = 0;

    /// From lowercase keywords, none empty.
    fn new(keywords: &[String]) -> LineDfa {
        // The noncontiguous NFA, not a DFA: the walk below computes each
        // reachable state's transitions once (following failure links), for
        // its own case-folded columns only, which is all the table needs and
        // costs less than building a full DFA first.
        let dfa = aho_corasick::nfa::noncontiguous::Builder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .prefilter(false)
            .build(keywords)
            .expect("keywords build");
        let mut in_keyword = [false; 256];
        for k in keywords {
            for &b in k.as_bytes() {
                in_keyword[usize::from(b.to_ascii_lowercase())] = true;
            }
        }
        // One representative byte per column; column 0 gets a byte that is
        // in no keyword (if every byte is in one, column 0 is never used).
        let mut reps: Vec<u8> = vec![
            (0..=255u8)
                .find(|&b| !in_keyword[usize::from(b)])
                .unwrap_or(0),
        ];
        let mut classes = [0u8; 256];
        for b in 0..=255u8 {
            let folded = b.to_ascii_lowercase();
            if !in_keyword[usize::from(folded)] {
                continue;
            }
            if folded == b {
                classes[usize::from(b)] = u8::try_from(reps.len()).expect("at most 231 columns");
                reps.push(b);
            }
        }
        for b in b'A'..=b'Z' {
            classes[usize::from(b)] = classes[usize::from(b.to_ascii_lowercase())];
        }
        let stride = reps.len();
        // Breadth-first from the start state; row 0 is MATCH.
        let start = dfa
            .start_state(Anchored::No)
            .expect("the DFA supports unanchored searches");
        let mut row_of: Vec<u32> = Vec::new();
        let mut order: Vec<StateID> = vec![start];
        let mut trans: Vec<u32> = vec![0; 2 * stride];
        set_row(&mut row_of, start, 1);
        let mut next_row = 2u32;
        let mut i = 0;
        while i < order.len() {
            let sid = order[i];
            let row = i + 1;
            for (c, &rep) in reps.iter().enumerate() {
                let to = dfa.next_state(Anchored::No, sid, rep);
                let target = if dfa.is_match(to) {
                    Self::MATCH
                } else {
                    match row_of.get(to.as_usize()).copied().filter(|&r| r != 0) {
                        Some(r) => r,
                        None => {
                            let r = next_row;
                            next_row += 1;
                            set_row(&mut row_of, to, r);
                            order.push(to);
                            trans.resize(trans.len() + stride, 0);
                            r
                        }
                    }
                };
                trans[row * stride + c] = target;
            }
            i += 1;
        }
        // Row numbers to row offsets; MATCH's row leads back to the start.
        let offset = |r: u32| -> u32 {
            u32::try_from(r as usize * stride).expect("keyword automaton fits u32 offsets")
        };
        for t in &mut trans[stride..] {
            *t = offset(*t);
        }
        let start = offset(1);
        for t in &mut trans[..stride] {
            *t = start;
        }
        LineDfa {
            classes,
            trans,
            start,
            warm_up: keywords.iter().map(|k| k.len()).max().unwrap_or(1) - 1,
        }
    }
}

/// The first pass's inner loop, on its own so that its state stays in
/// registers: walk `k` reads `segs[k]` (all of one length) from `state[k]`,
/// one byte of each walk per step. Stops at the first walk to reach
/// `LineDfa::MATCH`, with its index and the step's.
#[inline(never)]
fn lock_steps<const K: usize>(
    trans: &[u32],
    classes: &[u8; 256],
    segs: [&[u8]; K],
    state: &mut [usize; K],
) -> Option<(usize, usize)> {
    let steps = segs.iter().map(|s| s.len()).min().unwrap_or(0);
    // All of one length, as the compiler can see: no bounds checks on them.
    let segs = segs.map(|s| &s[..steps]);
    let mut st = *state;
    for i in 0..steps {
        for k in 0..K {
            let next = trans[st[k] + usize::from(classes[usize::from(segs[k][i])])];
            st[k] = next as usize;
            if next == LineDfa::MATCH {
                *state = st;
                return Some((k, i));
            }
        }
    }
    *state = st;
    None
}

fn set_row(row_of: &mut Vec<u32>, sid: StateID, row: u32) {
    let i = sid.as_usize();
    if row_of.len() <= i {
        row_of.resize(i + 1, 0);
    }
    row_of[i] = row;
}

/// A first pass: appends the start offset of each line of a block that
/// holds a keyword, in order.
type FirstPass<'a> = dyn Fn(&[u8], &mut Vec<usize>) + Sync + 'a;

/// The first pass over a block, a sub-block (`SUB_BLOCK`, cut after a
/// newline) at a time, the sub-blocks shared out to up to `MAX_THREADS`
/// threads in contiguous runs; appends block offsets to `out`, in order.
/// The first pass is a pure function of its bytes, so the lines are the
/// same however many threads ran it.
fn first_pass_parallel(block: &[u8], pass: &FirstPass<'_>, threads: usize, out: &mut Vec<usize>) {
    let mut subs: Vec<(usize, usize)> = Vec::new();
    let mut sub = 0usize;
    while sub < block.len() {
        let at = sub + SUB_BLOCK;
        let end = if at >= block.len() {
            block.len()
        } else {
            memchr::memchr(b'\n', &block[at..]).map_or(block.len(), |i| at + i + 1)
        };
        subs.push((sub, end));
        sub = end;
    }
    let run = |subs: &[(usize, usize)], out: &mut Vec<usize>| {
        for &(from, to) in subs {
            let first = out.len();
            pass(&block[from..to], out);
            for o in &mut out[first..] {
                *o += from;
            }
        }
    };
    let threads = threads.min(subs.len());
    if threads <= 1 {
        run(&subs, out);
        return;
    }
    let per = subs.len().div_ceil(threads);
    let parts: Vec<Vec<usize>> = std::thread::scope(|scope| {
        let handles: Vec<_> = subs
            .chunks(per)
            .skip(1)
            .map(|chunk| {
                scope.spawn(move || {
                    let mut v = Vec::new();
                    run(chunk, &mut v);
                    v
                })
            })
            .collect();
        // This thread takes the first run itself.
        let mut mine = Vec::new();
        run(&subs[..per.min(subs.len())], &mut mine);
        let mut parts = vec![mine];
        for h in handles {
            match h.join() {
                Ok(v) => parts.push(v),
                // A panicking first pass is a bug; do not lose the lines.
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        parts
    });
    for p in parts {
        out.extend(p);
    }
}

/// Threads the first pass may use: the machine's parallelism, at most
/// `MAX_THREADS`.
fn threads() -> usize {
    static N: LazyLock<usize> = LazyLock::new(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_THREADS)
    });
    *N
}

impl Catalog {
    /// Build the catalog from signatures. Panics only on a malformed static
    /// signature, which the test suite catches.
    pub fn new(sigs: Vec<&'static Signature>) -> Catalog {
        let mut keywords: Vec<String> = Vec::new();
        let mut by_pattern: Vec<Vec<usize>> = Vec::new();
        let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for (i, s) in sigs.iter().enumerate() {
            for k in s.keywords {
                // The first pass reports lines, and relies on a keyword
                // never spanning two of them.
                assert!(
                    !k.is_empty() && !k.contains('\n'),
                    "signature {}: keyword {k:?} is empty or spans lines",
                    s.id
                );
                let k = k.to_ascii_lowercase();
                match index.get(&k) {
                    Some(&p) => by_pattern[p].push(i),
                    None => {
                        index.insert(k.clone(), keywords.len());
                        keywords.push(k);
                        by_pattern.push(vec![i]);
                    }
                }
            }
        }
        let regexes = sigs.iter().map(|_| OnceLock::new()).collect();
        let line_ac = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .build(&keywords)
            .expect("keywords build");
        Catalog {
            sigs,
            regexes,
            keywords: Arc::new(keywords),
            dfa: Arc::new(OnceLock::new()),
            dfa_started: AtomicBool::new(false),
            by_pattern,
            line_ac,
        }
    }

    /// The catalog of every rule's signatures.
    pub fn global() -> &'static Catalog {
        static CATALOG: LazyLock<Catalog> =
            LazyLock::new(|| Catalog::new(crate::catalog::signatures().to_vec()));
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
            .filter(|&i| {
                let sig = self.sigs[i];
                // A regex that does not compile (the catalog test rules
                // that out) matches nothing.
                let rx = self.regexes[i].get_or_init(|| {
                    sig.regex
                        .map(|r| Regex::new(r).unwrap_or_else(|_| crate::classes::NEVER.clone()))
                });
                rx.as_ref().is_none_or(|r| r.is_match(body))
            })
            .map(|i| self.sigs[i])
            .collect();
        out.sort_by_key(|s| std::cmp::Reverse(s.strength));
        out
    }

    /// Scan a log from a reader, in one pass and bounded memory.
    pub fn scan<R: Read>(
        &self,
        reader: R,
        file: &str,
        kind: LogKind,
        container: Option<String>,
    ) -> io::Result<LogScan> {
        self.scan_on(reader, file, kind, container, threads())
    }

    /// `scan` with the first pass on at most `threads` threads (the
    /// benchmark's one-core figures use 1).
    #[doc(hidden)]
    pub fn scan_on<R: Read>(
        &self,
        reader: R,
        file: &str,
        kind: LogKind,
        container: Option<String>,
        threads: usize,
    ) -> io::Result<LogScan> {
        self.scan_with(reader, file, kind, container, threads, &|block: &[u8],
                                                                 out: &mut Vec<
            usize,
        >| {
            self.candidate_lines(block, out)
        })
    }

    /// Build the DFA now, on this thread, if it is not built yet (for the
    /// benchmark, which measures the DFA's first pass).
    #[doc(hidden)]
    pub fn build_dfa_now(&self) {
        self.line_dfa();
    }

    /// `scan`, with the first pass (which lines hold a keyword) given.
    fn scan_with<R: Read>(
        &self,
        mut reader: R,
        file: &str,
        kind: LogKind,
        container: Option<String>,
        threads: usize,
        candidates: &FirstPass<'_>,
    ) -> io::Result<LogScan> {
        let mut st = ScanState::new(file, kind, container);
        // Read straight into the buffer, after the unfinished line that the
        // last block left: it holds at most 2 * BLOCK bytes.
        let mut buf: Vec<u8> = vec![0; BLOCK];
        let mut filled = 0;
        loop {
            if buf.len() < filled + BLOCK {
                buf.resize(filled + BLOCK, 0);
            }
            let n = read_full(&mut reader, &mut buf[filled..filled + BLOCK])?;
            if n == 0 {
                break;
            }
            if n == BLOCK {
                // A large log: worth the DFA.
                self.prepare_dfa();
            }
            filled += n;
            // Process every complete line; keep the unfinished last line.
            let cut = match memchr::memrchr(b'\n', &buf[..filled]) {
                Some(i) => i + 1,
                None if filled > BLOCK => filled,
                None => continue,
            };
            self.scan_block(&buf[..cut], &mut st, threads, candidates);
            buf.copy_within(cut..filled, 0);
            filled -= cut;
        }
        if filled > 0 {
            buf.truncate(filled);
            buf.push(b'\n');
            self.scan_block(&buf, &mut st, threads, candidates);
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

    /// The first pass: appends to `out` the offset of the start of every line
    /// of `block` that contains a keyword (in any ASCII case), in order.
    /// A line ends at `\n` or at the end of `block`.
    ///
    /// The DFA's speed is bound by the latency of its table look-ups, one
    /// after the other. So the block is cut into `WALKS` segments, and one
    /// walk per segment runs in the same loop: the CPU overlaps their
    /// independent look-ups. A walk that reaches the match state has read a
    /// keyword's last byte; it reports that line and resumes at the next one
    /// (a keyword never spans lines, and a newline always leads back to the
    /// start state), so a long line costs one pass.
    ///
    /// Until the DFA is built (see `prepare_dfa`), the first pass is a plain
    /// leftmost search of `line_ac` from each line start instead, which
    /// reports the same lines (see `candidate_lines_nfa`).
    pub fn candidate_lines(&self, block: &[u8], out: &mut Vec<usize>) {
        if self.dfa.get().is_some() {
            self.candidate_lines_walks::<WALKS>(block, out);
        } else {
            self.candidate_lines_nfa(block, out);
        }
    }

    /// Start building the DFA on another thread, once: the first pass uses
    /// it as soon as it is ready. `scan` calls this when a log fills a
    /// whole block; small inputs never pay for the DFA.
    pub fn prepare_dfa(&self) {
        if self.dfa.get().is_some() || self.dfa_started.swap(true, Ordering::Relaxed) {
            return;
        }
        let (dfa, keywords) = (Arc::clone(&self.dfa), Arc::clone(&self.keywords));
        let build = move || {
            dfa.get_or_init(|| LineDfa::new(&keywords));
        };
        if std::thread::Builder::new()
            .name("crashdoc-dfa".into())
            .spawn(build.clone())
            .is_err()
        {
            // No thread to be had: build it here.
            build();
        }
    }

    /// The DFA, built on first use.
    fn line_dfa(&self) -> &LineDfa {
        self.dfa.get_or_init(|| LineDfa::new(&self.keywords))
    }

    /// The first pass without the DFA: from each line start, the first
    /// keyword match (a keyword never spans lines, so a line holds one
    /// exactly when the first match after its start ends inside it); its
    /// line is reported and the search resumes at the next line.
    #[doc(hidden)]
    pub fn candidate_lines_nfa(&self, block: &[u8], out: &mut Vec<usize>) {
        let mut at = 0;
        while at < block.len() {
            let Some(m) = self
                .line_ac
                .find(aho_corasick::Input::new(block).range(at..))
            else {
                break;
            };
            out.push(memchr::memrchr(b'\n', &block[at..m.start()]).map_or(at, |i| at + i + 1));
            at = memchr::memchr(b'\n', &block[m.end()..]).map_or(block.len(), |i| m.end() + i + 1);
        }
    }

    /// `candidate_lines` with `K` walks (for the benchmark).
    #[doc(hidden)]
    pub fn candidate_lines_walks<const K: usize>(&self, block: &[u8], out: &mut Vec<usize>) {
        const { assert!(K > 0, "at least one walk") };
        let first = out.len();
        let len = block.len();
        // Walk k reports the matches that end in [len / K * k, seg_end[k]).
        // A keyword ending there starts at most `warm_up` bytes earlier, and
        // a walk started in the start state finds every keyword that starts
        // where it starts or later: so walk k starts `warm_up` bytes early
        // (possibly mid-line). A line reported by two walks is kept once.
        let d = self.line_dfa();
        let warm_up = d.warm_up;
        let mut pos = [0usize; K];
        let mut seg_end = [len; K];
        for k in 0..K {
            pos[k] = (len / K * k).saturating_sub(warm_up);
            if k + 1 < K {
                seg_end[k] = len / K * (k + 1);
            }
        }
        let (trans, classes) = (&d.trans[..], &d.classes);
        let start = d.start as usize;
        let mut state = [start; K];
        loop {
            // Lock steps while every walk has bytes left.
            let steps = (0..K).map(|k| seg_end[k] - pos[k]).min().unwrap_or(0);
            if steps == 0 {
                break;
            }
            let segs: [&[u8]; K] = std::array::from_fn(|k| &block[pos[k]..pos[k] + steps]);
            let matched = lock_steps(trans, classes, segs, &mut state);
            let Some((hit, i)) = matched else {
                for p in &mut pos {
                    *p += steps;
                }
                continue;
            };
            // Walks up to `hit` have read byte `i` of this run, the others not.
            for (k, p) in pos.iter_mut().enumerate() {
                *p += i + usize::from(k <= hit);
            }
            pos[hit] = self.report_line(block, pos[hit] - 1, seg_end[hit], out);
            state[hit] = start;
        }
        // Walks with bytes left finish alone.
        for k in 0..K {
            while pos[k] < seg_end[k] {
                let next = trans[state[k] + usize::from(classes[usize::from(block[pos[k]])])];
                pos[k] += 1;
                state[k] = next as usize;
                if next == LineDfa::MATCH {
                    pos[k] = self.report_line(block, pos[k] - 1, seg_end[k], out);
                    state[k] = start;
                }
            }
        }
        // Each walk's lines are in order, and the walks' segments follow
        // each other, but the walks reported them interleaved; a line across
        // a segment boundary may come from both walks.
        out[first..].sort_unstable();
        let mut kept = first;
        for i in first..out.len() {
            if kept == first || out[i] != out[kept - 1] {
                out[kept] = out[i];
                kept += 1;
            }
        }
        out.truncate(kept);
    }

    /// A keyword ends at `block[last]`: report its line and return where the
    /// next line starts (at most `seg_end`).
    fn report_line(
        &self,
        block: &[u8],
        last: usize,
        seg_end: usize,
        out: &mut Vec<usize>,
    ) -> usize {
        out.push(memchr::memrchr(b'\n', &block[..last]).map_or(0, |i| i + 1));
        memchr::memchr(b'\n', &block[last..seg_end]).map_or(seg_end, |i| last + i + 1)
    }

    fn scan_block(
        &self,
        block: &[u8],
        st: &mut ScanState,
        threads: usize,
        candidates: &FirstPass<'_>,
    ) {
        st.bytes += block.len() as u64;
        let first_line = st.lines + 1;

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

        // Keyword hits: decode and classify only the lines that have one,
        // a sub-block at a time. `line_no` is the number of the line that
        // starts at `counted_to`.
        let mut counted_to = 0usize;
        let mut line_no = first_line;
        let mut lines = std::mem::take(&mut st.candidates);
        lines.clear();
        first_pass_parallel(block, candidates, threads, &mut lines);
        for &start in &lines {
            let end = memchr::memchr(b'\n', &block[start..]).map_or(block.len(), |i| start + i);
            line_no += memchr::memchr_iter(b'\n', &block[counted_to..start]).count() as u64;
            counted_to = start;
            let line = st.make_line(line_no, &block[start..end]);
            for sig in self.classify(&line.text) {
                st.record(sig, line.clone());
            }
        }
        lines.clear();
        st.candidates = lines;
        st.lines +=
            line_no - first_line + memchr::memchr_iter(b'\n', &block[counted_to..]).count() as u64;

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
    /// Reused buffer: offsets of the candidate lines of a sub-block.
    candidates: Vec<usize>,
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
            candidates: Vec::new(),
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
        Signature::code(
            "t.oom",
            SigKind::Cause(Cause::GpuOom),
            Strength::Decisive,
            &["out of memory"],
            Some(r"(?i)cuda.*out of memory"),
            "CUDA OOM",
        ),
        Signature::code(
            "t.refused",
            SigKind::Cause(Cause::DependencyUnreachable),
            Strength::Moderate,
            &["connection refused"],
            None,
            "refused",
        ),
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

    // ------------------------------------------------ the first pass against the exact search

    /// The first pass as it was before the lock-step walks: a leftmost-first
    /// Aho-Corasick DFA over the block, the line of each match, resuming at
    /// the next line. The reference the fast pass must agree with.
    struct Exact(AhoCorasick);

    impl Exact {
        fn new() -> Exact {
            let mut keywords: Vec<String> = Vec::new();
            for s in crate::catalog::signatures() {
                for k in s.keywords {
                    keywords.push(k.to_ascii_lowercase());
                }
            }
            Exact(
                AhoCorasickBuilder::new()
                    .ascii_case_insensitive(true)
                    .match_kind(MatchKind::LeftmostFirst)
                    .kind(Some(aho_corasick::AhoCorasickKind::DFA))
                    .build(&keywords)
                    .expect("keywords build"),
            )
        }

        fn lines(&self, block: &[u8], out: &mut Vec<usize>) {
            let mut pos = 0usize;
            while pos < block.len() {
                let Some(m) = self.0.find(aho_corasick::Input::new(block).range(pos..)) else {
                    break;
                };
                let start =
                    memchr::memrchr(b'\n', &block[pos..m.start()]).map_or(pos, |i| pos + i + 1);
                let end = memchr::memchr(b'\n', &block[m.start()..])
                    .map_or(block.len(), |i| m.start() + i);
                out.push(start);
                pos = end + 1;
            }
        }
    }

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            // xorshift64*
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
            &v[self.below(v.len())]
        }
    }

    fn all_keywords() -> Vec<&'static str> {
        crate::catalog::signatures()
            .iter()
            .flat_map(|s| s.keywords.iter().copied())
            .collect()
    }

    /// `k` with each letter's case drawn at random.
    fn mixed_case(rng: &mut Rng, k: &[u8]) -> Vec<u8> {
        k.iter()
            .map(|&b| {
                if rng.below(2) == 0 {
                    b.to_ascii_uppercase()
                } else {
                    b.to_ascii_lowercase()
                }
            })
            .collect()
    }

    /// A generated log: ordinary text, keywords in any case (whole, cut
    /// short, or with one byte changed; `percent` of the words), invalid
    /// UTF-8, CR and CRLF line ends, empty lines and, when `long` allows,
    /// lines of up to `long` bytes; with or without a final newline.
    fn generate(rng: &mut Rng, lines: usize, long: usize, percent: usize) -> Vec<u8> {
        const WORDS: &[&str] = &[
            "INFO",
            "the",
            "request",
            "completed",
            "in",
            "0.42s",
            "GPU",
            "KV",
            "cache",
            "usage:",
            "{\"level\":\"info\",",
            "\"msg\":",
            "200",
            "OK",
            "10.244.3.7:8000",
            "-",
            "[engine.py:275]",
            "tokens/s,",
            "Running:",
            "2025-06-05T06:17:02.123456789Z",
            "stdout",
            "F",
            "\t",
            "é",
            "→",
        ];
        let keywords = all_keywords();
        let mut out = Vec::new();
        for _ in 0..lines {
            let len = match rng.below(40) {
                0 if long > 0 => 1 + rng.below(long),
                1 => 0,
                _ => rng.below(200),
            };
            let start = out.len();
            while out.len() - start < len {
                if rng.below(100) < percent {
                    let k = rng.pick(&keywords).as_bytes();
                    let mut k = mixed_case(rng, k);
                    match rng.below(4) {
                        // Cut short: a near miss, unless another keyword is left.
                        0 => k.truncate(rng.below(k.len())),
                        // One byte changed.
                        1 => {
                            let i = rng.below(k.len());
                            k[i] = b"xZ_ 9\xff"[rng.below(6)];
                        }
                        _ => {}
                    }
                    out.extend_from_slice(&k);
                } else {
                    match rng.below(9) {
                        0 => out
                            .extend_from_slice(&[0xff, 0xc3, 0x28, 0xe2, 0x82][..1 + rng.below(5)]),
                        1 => out.push(b'\r'),
                        2 => out.push(rng.below(256) as u8),
                        _ => out.extend_from_slice(rng.pick(WORDS).as_bytes()),
                    }
                }
                if rng.below(3) > 0 {
                    out.push(b' ');
                }
            }
            // Any newline inserted by a random byte starts a new line: fine.
            if rng.below(10) == 0 {
                out.push(b'\r');
            }
            out.push(b'\n');
        }
        if rng.below(2) == 0 {
            out.pop();
        }
        out
    }

    /// The two cases of a letter take the same column of the first pass's
    /// table, so a keyword in any ASCII case walks the same states as in
    /// lowercase; then every keyword, written in lowercase (and, for good
    /// measure, in uppercase and mixed case) selects its line.
    #[test]
    fn every_keyword_in_any_case_selects_its_line() {
        let cat = Catalog::global();
        for b in b'a'..=b'z' {
            let (lower, upper) = (usize::from(b), usize::from(b.to_ascii_uppercase()));
            assert_eq!(cat.line_dfa().classes[lower], cat.line_dfa().classes[upper]);
        }
        let mut rng = Rng(0x5eed);
        for k in all_keywords() {
            let variants = [
                k.to_ascii_lowercase().into_bytes(),
                k.to_ascii_uppercase().into_bytes(),
                mixed_case(&mut rng, k.as_bytes()),
                mixed_case(&mut rng, k.as_bytes()),
            ];
            for v in variants {
                let around: [(&[u8], &[u8]); 4] =
                    [(b"", b""), (b"x ", b" y"), (b"\r", b"\r"), (b"\xff", b"")];
                for (before, after) in around {
                    let mut block = b"plain line\n".to_vec();
                    block.extend_from_slice(before);
                    block.extend_from_slice(&v);
                    block.extend_from_slice(after);
                    block.extend_from_slice(b"\nanother plain line\n");
                    let mut got = Vec::new();
                    cat.candidate_lines(&block, &mut got);
                    assert!(
                        got.contains(&11),
                        "keyword {k:?} written {:?} not found: {got:?}",
                        String::from_utf8_lossy(&v)
                    );
                }
            }
        }
    }

    #[test]
    fn candidate_lines_agree_with_the_exact_search() {
        let cat = Catalog::global();
        let exact = Exact::new();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..300 {
            let long = if round % 7 == 0 { 20_000 } else { 0 };
            let block = generate(&mut rng, 1 + round % 60, long, 1 + round % 30);
            let mut want = Vec::new();
            exact.lines(&block, &mut want);
            let mut got = Vec::new();
            cat.candidate_lines(&block, &mut got);
            assert_eq!(
                got,
                want,
                "round {round}: {:?}",
                String::from_utf8_lossy(&block)
            );
            for (k, got) in [
                (1, walks::<1>(cat, &block)),
                (2, walks::<2>(cat, &block)),
                (3, walks::<3>(cat, &block)),
                (7, walks::<7>(cat, &block)),
            ] {
                assert_eq!(got, want, "round {round}, {k} walks");
            }
        }
    }

    /// Every keyword at every offset of a one-line block, so that it lies
    /// before, across and after the points where the walks' segments meet.
    #[test]
    fn keywords_across_segment_boundaries() {
        let cat = Catalog::global();
        let exact = Exact::new();
        let mut rng = Rng(3);
        for k in all_keywords() {
            let k = mixed_case(&mut rng, k.as_bytes());
            let width = 2 * k.len() + 8;
            for at in 0..=width - k.len() {
                let mut block = vec![b'.'; width];
                block[at..at + k.len()].copy_from_slice(&k);
                let mut want = Vec::new();
                exact.lines(&block, &mut want);
                assert_eq!(want, [0]);
                for got in [
                    nfa(cat, &block),
                    walks::<2>(cat, &block),
                    walks::<3>(cat, &block),
                    walks::<4>(cat, &block),
                ] {
                    assert_eq!(got, want, "{:?}", String::from_utf8_lossy(&block));
                }
            }
        }
    }

    fn walks<const K: usize>(cat: &Catalog, block: &[u8]) -> Vec<usize> {
        let mut v = vec![usize::MAX]; // appends after what `out` holds
        cat.candidate_lines_walks::<K>(block, &mut v);
        v.remove(0);
        v
    }

    fn nfa(cat: &Catalog, block: &[u8]) -> Vec<usize> {
        let mut v = vec![usize::MAX];
        cat.candidate_lines_nfa(block, &mut v);
        v.remove(0);
        v
    }

    /// Everything a scan reports, to compare two scans.
    fn summary(s: &LogScan) -> String {
        let hits: Vec<_> = s
            .hits
            .iter()
            .map(|h| (h.sig.id, h.line.number, &h.line.text, h.decisive))
            .collect();
        format!(
            "lines={} bytes={} utf8={} dropped={} pod={:?}\nhits={hits:?}\nhead={:?}\ntail={:?}",
            s.lines, s.bytes, s.invalid_utf8, s.dropped_hits, s.pod_hint, s.head, s.tail
        )
    }

    /// The scan with each first pass: (the DFA walks, the NFA search, the
    /// exact reference). `scan` itself picks one of the first two.
    fn three_ways(log: &[u8]) -> [String; 3] {
        let cat = Catalog::global();
        let exact = Exact::new();
        let with = |pass: &FirstPass<'_>| {
            summary(
                &cat.scan_with(log, "x", LogKind::Previous, None, threads(), pass)
                    .expect("reading a slice"),
            )
        };
        [
            with(&|b, out| cat.candidate_lines_walks::<WALKS>(b, out)),
            with(&|b, out| cat.candidate_lines_nfa(b, out)),
            with(&|b, out| exact.lines(b, out)),
        ]
    }

    fn both_ways(log: &[u8]) -> (String, String) {
        let [walks, nfa, exact] = three_ways(log);
        assert_eq!(nfa, exact, "the NFA first pass differs from the exact one");
        (walks, exact)
    }

    #[test]
    fn scan_agrees_with_the_exact_path() {
        let mut rng = Rng(42);
        for round in 0..40 {
            let lines = 1 + rng.below(400);
            let log = generate(&mut rng, lines, if round % 4 == 0 { 9_000 } else { 0 }, 2);
            let (fast, slow) = both_ways(&log);
            assert_eq!(fast, slow, "round {round}");
        }
    }

    /// Across blocks and sub-blocks, and through a line longer than a block
    /// (which the reader cuts) with keywords on both sides of the cut.
    #[test]
    fn scan_agrees_with_the_exact_path_on_a_large_log() {
        let mut rng = Rng(7);
        let mut log = Vec::new();
        while log.len() < BLOCK + BLOCK / 2 {
            log.extend_from_slice(&generate(&mut rng, 2_000, 0, 0));
            log.extend_from_slice(b"\nERROR: connection refused\n");
        }
        let mut long = b"Connection refused ".repeat((BLOCK + 1000) / 19);
        long.extend_from_slice(b"tail of a long line: out of memory\n");
        log.extend_from_slice(&long);
        log.extend_from_slice(&generate(&mut rng, 2_000, 0, 1));
        let (fast, slow) = both_ways(&log);
        assert_eq!(fast, slow);
    }
}
