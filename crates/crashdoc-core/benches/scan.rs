//! Log scanner throughput and whole-analysis cost on a large log.
//!
//! `cargo bench -p crashdoc-core --bench scan` (a plain binary, harness = false).
//!
//! Throughputs are computed on the thread's CPU time (schedstat), so that a
//! busy shared machine does not halve them; the headline scan also gives wall time.
//!
//! 1. Generates a realistic ~256 MiB log in memory (a vLLM-like Python model
//!    server: INFO/WARNING lines, uvicorn access lines, CRI timestamps, JSON
//!    structured lines, Python tracebacks, a Java stack trace now and then,
//!    and rare lines that match cause signatures) and measures
//!    `Catalog::global().scan` on one core, best of 3.
//! 2. Breaks the cost down: newline count, the first pass
//!    (`Catalog::candidate_lines`, lock-step DFA walks) with 1 to 8 walks,
//!    classification; then the previous first pass (one leftmost-first
//!    aho-corasick DFA) and the alternatives measured against it (automaton
//!    kinds, the regex crate, a Teddy trigger prefilter), to show where the
//!    time goes.
//! 3. Measures known slow shapes: one very long line full of keywords, and
//!    the fixed cost of one `scan` call.
//! 4. Writes a 1 GiB `logs-previous.txt` next to a small `describe-pod.txt`
//!    in a temporary folder, and times `ingest::read_path` + `diagnose_all`
//!    in a child process (so its peak memory, VmHWM, is its own). Then
//!    compares the whole child process (start-up, catalog, analysis, JSON)
//!    with one `grep -c -i error` over the same file, by wall time and by
//!    the CPU time the kernel charges the finished child (best of 3 each):
//!    the target is that crashdoc takes at most one grep's wall time. The
//!    folder is deleted afterwards.
//!
//! Environment: `CRASHDOC_BENCH_MIB` (default 256) sizes the in-memory log,
//! `CRASHDOC_BENCH_FILE_MIB` (default 1024, 0 to skip) the file.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use crashdoc_core::scan::{Catalog, LogKind};
use std::fmt::Write as _;
use std::hint::black_box;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------- log generator

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const PY_FILES: &[&str] = &[
    "metrics.py:351",
    "engine.py:275",
    "async_llm_engine.py:140",
    "serving_chat.py:120",
    "scheduler.py:1211",
    "logger.py:39",
    "api_server.py:1043",
];
const PATHS: &[&str] = &[
    "/v1/chat/completions",
    "/v1/completions",
    "/health",
    "/metrics",
    "/v1/models",
];
const JAVA_FRAMES: &[&str] = &[
    "org.apache.http.impl.conn.PoolingHttpClientConnectionManager.requestConnection(PoolingHttpClientConnectionManager.java:266)",
    "org.apache.http.impl.execchain.MainClientExec.execute(MainClientExec.java:176)",
    "org.apache.http.impl.execchain.ProtocolExec.execute(ProtocolExec.java:186)",
    "org.apache.http.impl.client.InternalHttpClient.doExecute(InternalHttpClient.java:185)",
    "com.example.inference.client.ModelClient.complete(ModelClient.java:118)",
    "com.example.inference.service.BatchService.lambda$run$3(BatchService.java:74)",
    "java.base/java.util.concurrent.ThreadPoolExecutor.runWorker(ThreadPoolExecutor.java:1136)",
    "java.base/java.util.concurrent.ThreadPoolExecutor$Worker.run(ThreadPoolExecutor.java:635)",
    "java.base/java.lang.Thread.run(Thread.java:840)",
];
/// Rare lines that match cause signatures (about 1 in 20,000 lines).
const SIGNATURE_LINES: &[&str] = &[
    "ERROR 06-05 06:18:13 [engine.py:160] RuntimeError: CUDA error: out of memory",
    "psycopg2.OperationalError: could not connect to server: Connection refused",
    "OSError: [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use",
    "PermissionError: [Errno 13] Permission denied: '/models/cache/hub'",
    "OSError: [Errno 28] No space left on device",
    "Received SIGTERM, shutting down",
];

#[derive(Default)]
struct Mix {
    lines: u64,
    info: u64,
    access: u64,
    warn: u64,
    json: u64,
    json_error: u64,
    traceback: u64,
    java: u64,
    signature: u64,
    with_in: u64,
}

/// Append lines to `out` until it holds at least `target` bytes.
fn generate(out: &mut Vec<u8>, target: usize, rng: &mut Rng, mix: &mut Mix) {
    let mut line = String::with_capacity(512);
    let mut t: u64 = 6 * 3600 + 17 * 60; // 06:17:00
    let mut n: u64 = 0;
    while out.len() < target {
        n += 1;
        if n.is_multiple_of(7) {
            t += 1;
        }
        let (h, m, s) = ((t / 3600) % 24, (t / 60) % 60, t % 60);
        let ms = rng.below(1000);
        line.clear();
        // 30 % of lines carry the CRI prefix (logs read from the node).
        if rng.below(10) < 3 {
            let _ = write!(
                line,
                "2025-06-05T{h:02}:{m:02}:{s:02}.{:09}Z stdout F ",
                rng.below(1_000_000_000)
            );
        }
        let roll = rng.below(10_000);
        let file = PY_FILES[rng.below(PY_FILES.len() as u64) as usize];
        match roll {
            // A rare signature line.
            0 => {
                if rng.below(2) == 0 {
                    line.push_str(
                        SIGNATURE_LINES[rng.below(SIGNATURE_LINES.len() as u64) as usize],
                    );
                    mix.signature += 1;
                } else {
                    line.push_str(
                        "INFO 06-05 06:17:02 [api_server.py:1043] vLLM API server version 0.9.0",
                    );
                    mix.info += 1;
                }
            }
            // A Java stack trace (a sidecar), ~1 in 5,000 lines.
            1..=2 => {
                line.push_str("Exception in thread \"pool-2-thread-7\" java.lang.IllegalStateException: Connection pool shut down");
                for f in JAVA_FRAMES {
                    line.push_str("\n\tat ");
                    line.push_str(f);
                }
                line.push_str(
                    "\nCaused by: java.net.SocketTimeoutException: Read timed out\n\t... 12 more",
                );
                mix.java += 1;
                mix.lines += JAVA_FRAMES.len() as u64 + 2;
            }
            // A Python traceback that the server logs and survives, ~1 in 2,500.
            3..=6 => {
                let _ = write!(
                    line,
                    "ERROR {h:02}:{m:02}:{s:02} [serving_chat.py:241] Error in request chatcmpl-{:016x}\nTraceback (most recent call last):\n  File \"/usr/local/lib/python3.10/site-packages/vllm/entrypoints/openai/serving_chat.py\", line 236, in create_chat_completion\n    generator = await handler.create_chat_completion(request, raw_request)\n  File \"/usr/local/lib/python3.10/site-packages/vllm/entrypoints/openai/serving_engine.py\", line 412, in _validate_input\n    raise ValueError(\nValueError: This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.",
                    rng.next()
                );
                mix.traceback += 1;
                mix.lines += 6;
            }
            // JSON structured lines from the gateway (15 %), 1 % of them errors.
            7..=1506 => {
                let level = match rng.below(100) {
                    0 => "error",
                    1..=5 => "warn",
                    _ => "info",
                };
                if level == "error" {
                    mix.json_error += 1;
                    let _ = write!(
                        line,
                        "{{\"ts\":\"2025-06-05T{h:02}:{m:02}:{s:02}.{ms:03}Z\",\"level\":\"error\",\"logger\":\"gateway.upstream\",\"msg\":\"upstream request failed\",\"error\":\"context deadline exceeded\",\"path\":\"{}\",\"attempt\":{},\"trace_id\":\"{:032x}\"}}",
                        PATHS[rng.below(PATHS.len() as u64) as usize],
                        rng.below(3) + 1,
                        u128::from(rng.next()) << 64 | u128::from(rng.next())
                    );
                } else {
                    let _ = write!(
                        line,
                        "{{\"ts\":\"2025-06-05T{h:02}:{m:02}:{s:02}.{ms:03}Z\",\"level\":\"{level}\",\"logger\":\"gateway.http\",\"msg\":\"request completed\",\"method\":\"POST\",\"path\":\"{}\",\"status\":200,\"duration_ms\":{}.{},\"bytes\":{},\"trace_id\":\"{:032x}\"}}",
                        PATHS[rng.below(PATHS.len() as u64) as usize],
                        rng.below(3000),
                        rng.below(10),
                        rng.below(100_000),
                        u128::from(rng.next()) << 64 | u128::from(rng.next())
                    );
                }
                mix.json += 1;
            }
            // uvicorn access lines (20 %).
            1507..=3506 => {
                let _ = write!(
                    line,
                    "INFO:     10.244.{}.{}:{} - \"POST {} HTTP/1.1\" 200 OK",
                    rng.below(8),
                    rng.below(250),
                    30000 + rng.below(30000),
                    PATHS[rng.below(PATHS.len() as u64) as usize]
                );
                mix.access += 1;
            }
            // Warnings (5 %).
            3507..=4006 => {
                let _ = write!(
                    line,
                    "WARNING {h:02}-{m:02} {h:02}:{m:02}:{s:02} [{file}] The requested max_tokens {} exceeds the remaining context of {} tokens; it is reduced.",
                    rng.below(8192),
                    rng.below(4096)
                );
                mix.warn += 1;
            }
            // Per-request lines, 2 % of which carry a duration (`... in 1.23s`).
            4007..=4206 => {
                let _ = write!(
                    line,
                    "INFO {h:02}-{m:02} {h:02}:{m:02}:{s:02} [async_llm_engine.py:140] Finished request chatcmpl-{:016x} in {}.{:02}s.",
                    rng.next(),
                    rng.below(30),
                    rng.below(100)
                );
                mix.with_in += 1;
            }
            4207..=5206 => {
                let _ = write!(
                    line,
                    "INFO {h:02}-{m:02} {h:02}:{m:02}:{s:02} [engine.py:275] Added request chatcmpl-{:016x}.",
                    rng.next()
                );
                mix.info += 1;
            }
            // Engine metrics (the bulk).
            _ => {
                let _ = write!(
                    line,
                    "INFO {h:02}-{m:02} {h:02}:{m:02}:{s:02} [{file}] Avg prompt throughput: {}.{} tokens/s, Avg generation throughput: {}.{} tokens/s, Running: {} reqs, Swapped: 0 reqs, Pending: {} reqs, GPU KV cache usage: {}.{}%, CPU KV cache usage: 0.0%.",
                    rng.below(5000),
                    rng.below(10),
                    rng.below(500),
                    rng.below(10),
                    rng.below(64),
                    rng.below(8),
                    rng.below(100),
                    rng.below(10)
                );
                mix.info += 1;
            }
        }
        line.push('\n');
        mix.lines += 1;
        out.extend_from_slice(line.as_bytes());
    }
}

// ---------------------------------------------------------------- measuring

/// CPU time of this thread (ns on CPU from schedstat): unlike wall time, it
/// does not count the time other processes hold the core, which matters on
/// a shared machine.
fn thread_cpu() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    Some(Duration::from_nanos(
        s.split_whitespace().next()?.parse().ok()?,
    ))
}

/// Best of `runs`, by the thread's CPU time (wall time where schedstat is
/// not available). The best wall time is kept in WALL for the headline.
fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut best_wall = Duration::MAX;
    let mut last = None;
    for _ in 0..runs {
        let c = thread_cpu();
        let t = Instant::now();
        let r = f();
        let wall = t.elapsed();
        let cpu = match (c, thread_cpu()) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => wall,
        };
        best = best.min(cpu);
        best_wall = best_wall.min(wall);
        last = Some(r);
    }
    WALL.with(|w| w.set(best_wall));
    (best, last.expect("at least one run"))
}

/// Mean CPU time of `f`, run until the runs add up to 100 ms.
fn per_run<T>(mut f: impl FnMut() -> T) -> (Duration, u32) {
    let (c0, t0) = (thread_cpu(), Instant::now());
    let mut runs = 0u32;
    loop {
        black_box(f());
        runs += 1;
        let wall = t0.elapsed();
        let spent = match (c0, thread_cpu()) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => wall,
        };
        if spent >= Duration::from_millis(100) || wall >= Duration::from_secs(10) {
            return (spent / runs, runs);
        }
    }
}

thread_local! {
    static WALL: std::cell::Cell<Duration> = const { std::cell::Cell::new(Duration::ZERO) };
}

fn mb_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

/// CPU time (user + system) of this process's waited-for children so far,
/// from /proc/self/stat (clock ticks, 100 per second on Linux).
fn children_cpu() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses: cutime is
    // field 16 and cstime field 17 of the whole line.
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f.get(13)?.parse::<u64>().ok()? + f.get(14)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// The least CPU time and the least wall time of `runs` runs of a command.
/// Its output is read into a pipe and discarded: GNU grep stops at the
/// first match when its output is /dev/null.
fn child_best(
    runs: usize,
    mut cmd: impl FnMut() -> std::process::Command,
) -> Option<(Duration, Duration)> {
    let mut best: Option<(Duration, Duration)> = None;
    for _ in 0..runs {
        let before = children_cpu()?;
        let t = Instant::now();
        let out = cmd().output().ok()?;
        let wall = t.elapsed();
        // grep -c exits 1 when it counts nothing: still a finished run.
        out.status.code()?;
        let used = children_cpu()?.saturating_sub(before);
        best = Some(best.map_or((used, wall), |(c, w)| (c.min(used), w.min(wall))));
    }
    best
}

fn vm_kib(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

struct Table {
    rows: Vec<(String, String, String)>,
}

impl Table {
    fn new() -> Table {
        Table { rows: Vec::new() }
    }
    fn row(&mut self, what: impl Into<String>, value: impl Into<String>, note: impl Into<String>) {
        let (what, value, note) = (what.into(), value.into(), note.into());
        println!("  {what:<58} {value:>14}  {note}");
        self.rows.push((what, value, note));
    }
    fn print(&self, title: &str) {
        println!("\n=== {title} ===");
        for (w, v, n) in &self.rows {
            println!("| {w:<58} | {v:>14} | {n}");
        }
    }
}

/// The keywords of every signature, lowercased and deduplicated, as
/// `Catalog::new` builds them.
fn keywords() -> Vec<String> {
    let mut k: Vec<String> = Vec::new();
    for s in crashdoc_core::catalog::signatures() {
        for w in s.keywords {
            let w = w.to_ascii_lowercase();
            if !k.contains(&w) {
                k.push(w);
            }
        }
    }
    k
}

fn build(
    kw: &[String],
    kind: Option<AhoCorasickKind>,
    match_kind: MatchKind,
    prefilter: bool,
) -> AhoCorasick {
    AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(match_kind)
        .kind(kind)
        .prefilter(prefilter)
        .build(kw)
        .expect("build")
}

/// The automaton alone: every non-overlapping match, as scan_block iterates.
fn count_matches(ac: &AhoCorasick, hay: &[u8]) -> usize {
    ac.find_iter(hay).count()
}

/// scan_block's candidate-line loop as written in scan.rs (memrchr back to
/// the line start for every match), without decoding or classifying.
fn candidate_lines_current(ac: &AhoCorasick, block: &[u8]) -> (u64, u64) {
    let mut lines = 0;
    let mut bytes = 0;
    let mut last_line_start = usize::MAX;
    for m in ac.find_iter(block) {
        let start = memchr::memrchr(b'\n', &block[..m.start()]).map_or(0, |i| i + 1);
        if start == last_line_start {
            continue;
        }
        last_line_start = start;
        let end = memchr::memchr(b'\n', &block[m.start()..]).map_or(block.len(), |i| m.start() + i);
        lines += 1;
        bytes += (end - start) as u64;
    }
    (lines, bytes)
}

/// The same selection, but after a match the search resumes at the next
/// line: one automaton match per candidate line, no backward search, linear
/// in the line's length.
fn candidate_lines_skip(ac: &AhoCorasick, block: &[u8]) -> (u64, u64) {
    let mut lines = 0;
    let mut bytes = 0;
    let mut pos = 0; // always the start of a line
    while pos < block.len() {
        let Some(m) = ac.find(aho_corasick::Input::new(block).span(pos..block.len())) else {
            break;
        };
        let start = memchr::memrchr(b'\n', &block[pos..m.start()]).map_or(pos, |i| pos + i + 1);
        let end = memchr::memchr(b'\n', &block[m.end()..]).map_or(block.len(), |i| m.end() + i);
        lines += 1;
        bytes += (end - start) as u64;
        pos = end + 1;
    }
    (lines, bytes)
}

/// Candidate lines with decoding and `Catalog::classify` (the per-line work
/// of the real scanner, less `record`).
fn candidate_lines_classified(ac: &AhoCorasick, block: &[u8]) -> (u64, u64) {
    let cat = Catalog::global();
    let mut lines = 0;
    let mut matched = 0;
    let mut last_line_start = usize::MAX;
    for m in ac.find_iter(block) {
        let start = memchr::memrchr(b'\n', &block[..m.start()]).map_or(0, |i| i + 1);
        if start == last_line_start {
            continue;
        }
        last_line_start = start;
        let end = memchr::memchr(b'\n', &block[m.start()..]).map_or(block.len(), |i| m.start() + i);
        let raw = &block[start..end.min(start + 4096)];
        let text = crashdoc_core::text::clean_line(&String::from_utf8_lossy(raw));
        lines += 1;
        matched += cat.classify(&text).len() as u64;
    }
    (lines, matched)
}

/// The scanner as it could be: resume at the next line after a match,
/// decode and classify that line (what a fixed scan_block would cost).
fn skip_and_classify(ac: &AhoCorasick, block: &[u8]) -> (u64, u64) {
    let cat = Catalog::global();
    let (mut lines, mut matched) = (0, 0);
    let mut pos = 0;
    while pos < block.len() {
        let Some(m) = ac.find(aho_corasick::Input::new(block).span(pos..block.len())) else {
            break;
        };
        let start = memchr::memrchr(b'\n', &block[pos..m.start()]).map_or(pos, |i| pos + i + 1);
        let end = memchr::memchr(b'\n', &block[m.end()..]).map_or(block.len(), |i| m.end() + i);
        let raw = &block[start..end.min(start + 4096)];
        let text = crashdoc_core::text::clean_line(&String::from_utf8_lossy(raw));
        lines += 1;
        matched += cat.classify(&text).len() as u64;
        pos = end + 1;
    }
    (lines, matched)
}

/// Which keywords select lines, and how many.
fn keyword_census(ac: &AhoCorasick, kw: &[String], block: &[u8]) -> Vec<(String, u64)> {
    let mut counts = vec![0u64; kw.len()];
    let mut last_line_start = usize::MAX;
    for m in ac.find_iter(block) {
        let start = memchr::memrchr(b'\n', &block[..m.start()]).map_or(0, |i| i + 1);
        if start == last_line_start {
            continue;
        }
        last_line_start = start;
        counts[m.pattern().as_usize()] += 1;
    }
    let mut v: Vec<(String, u64)> = kw
        .iter()
        .cloned()
        .zip(counts)
        .filter(|(_, c)| *c > 0)
        .collect();
    v.sort_by_key(|x| std::cmp::Reverse(x.1));
    v
}

/// A first pass (`Catalog::candidate_lines` or a variant) over 1 MiB
/// pieces, cut at newlines as the scanner cuts its sub-blocks. Returns
/// candidate lines and their bytes.
fn first_pass(data: &[u8], pass: &dyn Fn(&[u8], &mut Vec<usize>)) -> (u64, u64) {
    let mut out = Vec::new();
    let (mut lines, mut bytes) = (0, 0);
    let mut pos = 0;
    while pos < data.len() {
        let at = (pos + (1 << 20)).min(data.len());
        let end = memchr::memchr(b'\n', &data[at..]).map_or(data.len(), |i| at + i + 1);
        let piece = &data[pos..end];
        out.clear();
        pass(piece, &mut out);
        lines += out.len() as u64;
        for &s in &out {
            bytes += memchr::memchr(b'\n', &piece[s..]).map_or(piece.len() - s, |i| i) as u64;
        }
        pos = end;
    }
    (lines, bytes)
}

/// The first pass, then decoding and `Catalog::classify` of each candidate
/// line (the scanner's work less `record`, head and tail).
fn first_pass_classified(cat: &Catalog, data: &[u8]) -> (u64, u64) {
    let mut out = Vec::new();
    let (mut lines, mut matched) = (0, 0);
    let mut pos = 0;
    while pos < data.len() {
        let at = (pos + (1 << 20)).min(data.len());
        let end = memchr::memchr(b'\n', &data[at..]).map_or(data.len(), |i| at + i + 1);
        let piece = &data[pos..end];
        out.clear();
        cat.candidate_lines(piece, &mut out);
        for &s in &out {
            let e = memchr::memchr(b'\n', &piece[s..]).map_or(piece.len(), |i| s + i);
            let raw = &piece[s..e.min(s + 4096)];
            let text = crashdoc_core::text::clean_line(&String::from_utf8_lossy(raw));
            lines += 1;
            matched += cat.classify(&text).len() as u64;
        }
        pos = end;
    }
    (lines, matched)
}

/// The decoded candidate lines, as the scanner hands them to classify.
fn candidate_texts(cat: &Catalog, data: &[u8]) -> Vec<String> {
    let mut texts = Vec::new();
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let at = (pos + (1 << 20)).min(data.len());
        let end = memchr::memchr(b'\n', &data[at..]).map_or(data.len(), |i| at + i + 1);
        let piece = &data[pos..end];
        out.clear();
        cat.candidate_lines(piece, &mut out);
        for &s in &out {
            let e = memchr::memchr(b'\n', &piece[s..]).map_or(piece.len(), |i| s + i);
            let raw = &piece[s..e.min(s + 4096)];
            texts.push(crashdoc_core::text::clean_line(&String::from_utf8_lossy(
                raw,
            )));
        }
        pos = end;
    }
    texts
}

fn fold_into(src: &[u8], dst: &mut Vec<u8>) {
    dst.clear();
    dst.extend(
        src.iter()
            .map(|&b| b | (u8::from(b.is_ascii_uppercase()) << 5)),
    );
}

/// Rough byte probabilities of English-like log text: a generic prior,
/// nothing learnt from the generated log.
fn prior(b: u8) -> f64 {
    const EN: [f64; 26] = [
        8.2, 1.5, 2.8, 4.3, 12.7, 2.2, 2.0, 6.1, 7.0, 0.15, 0.77, 4.0, 2.4, 6.7, 7.5, 1.9, 0.095,
        6.0, 6.3, 9.1, 2.8, 0.98, 2.4, 0.15, 2.0, 0.074,
    ];
    match b {
        b'a'..=b'z' => EN[usize::from(b - b'a')] / 100.0 * 0.7,
        b' ' => 0.15,
        b'0'..=b'9' | b'.' | b',' | b':' | b'"' | b'/' | b'-' | b'_' | b'=' => 0.01,
        _ => 0.002,
    }
}

/// Every 3-byte fragment of the keywords (a shorter keyword whole), with
/// the keywords that contain it.
fn fragment_universe(kw: &[String]) -> Vec<(String, Vec<usize>)> {
    let mut map: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
    for (i, k) in kw.iter().enumerate() {
        let b = k.as_bytes();
        let frags: Vec<&[u8]> = if b.len() <= 3 {
            vec![b]
        } else {
            b.windows(3).collect()
        };
        for f in frags {
            let e = map
                .entry(String::from_utf8_lossy(f).into_owned())
                .or_default();
            if e.last() != Some(&i) {
                e.push(i);
            }
        }
    }
    map.into_iter().collect()
}

fn fragment_counts(kw: &[String], folded: &[u8]) -> std::collections::HashMap<String, u64> {
    let frags: Vec<String> = fragment_universe(kw).into_iter().map(|x| x.0).collect();
    let ac = AhoCorasick::new(&frags).expect("build");
    let mut counts = std::collections::HashMap::new();
    for m in ac.find_overlapping_iter(folded) {
        *counts
            .entry(frags[m.pattern().as_usize()].clone())
            .or_insert(0) += 1;
    }
    counts
}

/// At most 64 fragments such that every keyword contains one: greedy
/// weighted set cover, each fragment costing `cost + lambda`, with lambda
/// raised until 64 fragments suffice.
fn trigger_fragments(kw: &[String], cost: &dyn Fn(&str) -> f64) -> Vec<String> {
    let uni = fragment_universe(kw);
    let cover = |lambda: f64| -> Vec<String> {
        let mut covered = vec![false; kw.len()];
        let mut out = Vec::new();
        loop {
            let best = uni
                .iter()
                .map(|(f, ks)| (f, ks, ks.iter().filter(|&&i| !covered[i]).count()))
                .filter(|x| x.2 > 0)
                .max_by(|a, b| {
                    (a.2 as f64 / (cost(a.0) + lambda))
                        .total_cmp(&(b.2 as f64 / (cost(b.0) + lambda)))
                });
            let Some((f, ks, _)) = best else { break };
            for &i in ks {
                covered[i] = true;
            }
            out.push(f.clone());
        }
        out
    };
    let (mut lo, mut hi) = (0.0, 1.0);
    if cover(lo).len() <= 64 {
        return cover(lo);
    }
    for _ in 0..20 {
        if cover(hi).len() <= 64 {
            break;
        }
        hi *= 4.0;
    }
    for _ in 0..30 {
        let mid = (lo + hi) / 2.0;
        if cover(mid).len() > 64 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    cover(hi)
}

/// Teddy over lowercased 64 KiB pieces (cut at newlines) finds trigger
/// lines; the exact DFA then checks each. Returns trigger lines, their
/// bytes, and the lines with a keyword.
fn trigger_lines(
    teddy: &aho_corasick::packed::Searcher,
    ac: &AhoCorasick,
    data: &[u8],
) -> (u64, u64, u64) {
    let mut scratch = Vec::with_capacity(128 << 10);
    let (mut tl, mut tb, mut hits) = (0, 0, 0);
    let mut pos = 0;
    while pos < data.len() {
        let mut end = (pos + (64 << 10)).min(data.len());
        if end < data.len() {
            end = match memchr::memrchr(b'\n', &data[pos..end]) {
                Some(i) => pos + i + 1,
                None => memchr::memchr(b'\n', &data[end..]).map_or(data.len(), |i| end + i + 1),
            };
        }
        let piece = &data[pos..end];
        fold_into(piece, &mut scratch);
        let mut off = 0;
        while off < piece.len() {
            let Some(m) = teddy.find_in(&scratch, aho_corasick::Span::from(off..piece.len()))
            else {
                break;
            };
            let ls = memchr::memrchr(b'\n', &piece[off..m.start()]).map_or(off, |i| off + i + 1);
            let le =
                memchr::memchr(b'\n', &piece[m.start()..]).map_or(piece.len(), |i| m.start() + i);
            tl += 1;
            tb += (le - ls) as u64;
            if ac
                .find(aho_corasick::Input::new(piece).range(ls..le))
                .is_some()
            {
                hits += 1;
            }
            off = le + 1;
        }
        pos = end;
    }
    (tl, tb, hits)
}

/// `scan` with its first pass on one thread: the "one core" figures.
fn scan_real(data: &[u8]) -> (u64, usize) {
    let s = Catalog::global()
        .scan_on(data, "logs-previous.txt", LogKind::Previous, None, 1)
        .expect("scan");
    (s.lines, s.hits.len())
}

// ---------------------------------------------------------------- the 1 GiB analysis (child)

fn child_analyze(dir: &Path) {
    let hwm0 = vm_kib("VmHWM:").unwrap_or(0);
    let c0 = thread_cpu().unwrap_or_default();
    let t = Instant::now();
    let ev = crashdoc_core::ingest::read_path(dir).expect("read_path");
    let t_read = t.elapsed();
    let report = crashdoc_core::diagnose_all(&ev);
    let t_all = t.elapsed();
    let json = crashdoc_core::render::json(&report);
    let hwm1 = vm_kib("VmHWM:").unwrap_or(0);
    let cpu = thread_cpu().unwrap_or_default().saturating_sub(c0);
    let top = report
        .pods
        .first()
        .and_then(|p| p.diagnoses.first())
        .map(|d| format!("{:?}", d.cause))
        .unwrap_or_else(|| "?".into());
    println!(
        "CHILD cpu_s={:.3} read_s={:.3} total_s={:.3} hwm0_kib={hwm0} hwm1_kib={hwm1} json_bytes={} top={top}",
        cpu.as_secs_f64(),
        t_read.as_secs_f64(),
        t_all.as_secs_f64(),
        json.len()
    );
}

const DESCRIBE: &str = "Name:             vllm-llama-7d9c8b6f5-x2k4p
Namespace:        ml
Controlled By:    ReplicaSet/vllm-llama-7d9c8b6f5
Containers:
  vllm:
    Image:          vllm/vllm-openai:v0.9.0
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       Error
      Exit Code:    1
    Restart Count:  7
    Limits:
      memory:          32Gi
      nvidia.com/gpu:  1
Events:
  Type     Reason   Age                From     Message
  ----     ------   ----               ----     -------
  Warning  BackOff  2m (x25 over 10m)  kubelet  Back-off restarting failed container vllm in pod vllm-llama-7d9c8b6f5-x2k4p_ml
";

fn temp_dir() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    std::env::temp_dir().join(format!("crashdoc-bench-{}-{nanos}", std::process::id()))
}

struct RemoveOnDrop(PathBuf);
impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ---------------------------------------------------------------- main

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child-analyze") {
        child_analyze(Path::new(&args[i + 1]));
        return;
    }
    // `cargo test --benches` runs bench binaries with no `--bench`: stay quick.
    if !args.iter().any(|a| a == "--bench") && std::env::var_os("CRASHDOC_BENCH_MIB").is_none() {
        println!("scan bench: run with `cargo bench -p crashdoc-core --bench scan`");
        return;
    }
    let mib = env_usize("CRASHDOC_BENCH_MIB", 256);
    let file_mib = env_usize("CRASHDOC_BENCH_FILE_MIB", 1024);
    let mut table = Table::new();

    // Catalog.
    let t = Instant::now();
    let cat = Catalog::global();
    let t_cat = t.elapsed();
    // The DFA is otherwise built on another thread once a log fills a
    // block; build it here so that every first-pass figure is the DFA's.
    let t = Instant::now();
    cat.build_dfa_now();
    let t_dfa = t.elapsed();
    let kw = keywords();
    println!(
        "crashdoc scan bench ({} MiB in memory, {} MiB file)\n",
        mib, file_mib
    );
    table.row("signatures in the catalog", cat.len().to_string(), "");
    table.row(
        "distinct keywords in the automaton",
        kw.len().to_string(),
        "ascii case-insensitive",
    );
    table.row(
        "Catalog::global() first build",
        format!("{:.1} ms", t_cat.as_secs_f64() * 1e3),
        "the catalog (JSON, converted from YAML at build time) + line automaton; once per process",
    );
    table.row(
        "the first pass's DFA, built",
        format!("{:.1} ms", t_dfa.as_secs_f64() * 1e3),
        "on another thread, once a log fills a 4 MiB block",
    );

    // Generate.
    let t = Instant::now();
    let mut data = Vec::with_capacity((mib << 20) + 4096);
    let mut mix = Mix::default();
    generate(
        &mut data,
        mib << 20,
        &mut Rng(0x9E37_79B9_7F4A_7C15),
        &mut mix,
    );
    println!(
        "  (generated {} bytes, {} lines in {:.1} s: {} metric/info, {} access, {} warning, {} JSON ({} error level), {} `in N s` lines, {} tracebacks, {} Java traces, {} signature lines)",
        data.len(),
        mix.lines,
        t.elapsed().as_secs_f64(),
        mix.info,
        mix.access,
        mix.warn,
        mix.json,
        mix.json_error,
        mix.with_in,
        mix.traceback,
        mix.java,
        mix.signature
    );
    let n = data.len();

    // The real scanner.
    let (d, (lines, hits)) = best_of(3, || scan_real(black_box(&data)));
    let scan_mbs = mb_s(n, d);
    let wall = WALL.with(|w| w.get());
    table.row(
        "Catalog::scan, one core, best of 3 (CPU time)",
        format!("{scan_mbs:.0} MB/s"),
        format!(
            "{:.2} s CPU for {} MB; {lines} lines, {hits} hits kept",
            d.as_secs_f64(),
            n / 1_000_000
        ),
    );
    table.row(
        "Catalog::scan, one core, best of 3 (wall time)",
        format!("{:.0} MB/s", mb_s(n, wall)),
        format!(
            "{:.2} s wall; load average {}",
            wall.as_secs_f64(),
            std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        ),
    );

    // Breakdown.
    let (d, c) = best_of(3, || memchr::memchr_iter(b'\n', black_box(&data)).count());
    table.row(
        "  memchr newline count (floor)",
        format!("{:.0} MB/s", mb_s(n, d)),
        format!("{c} newlines"),
    );
    let (d, (fl, fb)) = best_of(3, || {
        first_pass(black_box(&data), &|b: &[u8], o: &mut Vec<usize>| {
            cat.candidate_lines(b, o)
        })
    });
    table.row(
        "  first pass: Catalog::candidate_lines (as scan.rs)",
        format!("{:.0} MB/s", mb_s(n, d)),
        format!(
            "{fl} candidate lines = {:.2} % of lines, {:.1} % of bytes",
            fl as f64 * 100.0 / mix.lines as f64,
            fb as f64 * 100.0 / n as f64
        ),
    );
    for (walks, (d, (l, _))) in [
        (
            1,
            best_of(2, || {
                first_pass(black_box(&data), &|b: &[u8], o: &mut Vec<usize>| {
                    cat.candidate_lines_walks::<1>(b, o)
                })
            }),
        ),
        (
            2,
            best_of(2, || {
                first_pass(black_box(&data), &|b: &[u8], o: &mut Vec<usize>| {
                    cat.candidate_lines_walks::<2>(b, o)
                })
            }),
        ),
        (
            3,
            best_of(2, || {
                first_pass(black_box(&data), &|b: &[u8], o: &mut Vec<usize>| {
                    cat.candidate_lines_walks::<3>(b, o)
                })
            }),
        ),
        (
            4,
            best_of(2, || {
                first_pass(black_box(&data), &|b: &[u8], o: &mut Vec<usize>| {
                    cat.candidate_lines_walks::<4>(b, o)
                })
            }),
        ),
        (
            6,
            best_of(2, || {
                first_pass(black_box(&data), &|b: &[u8], o: &mut Vec<usize>| {
                    cat.candidate_lines_walks::<6>(b, o)
                })
            }),
        ),
        (
            8,
            best_of(2, || {
                first_pass(black_box(&data), &|b: &[u8], o: &mut Vec<usize>| {
                    cat.candidate_lines_walks::<8>(b, o)
                })
            }),
        ),
    ] {
        table.row(
            format!("    with {walks} lock-step walk(s)"),
            format!("{:.0} MB/s", mb_s(n, d)),
            format!("{l} candidate lines"),
        );
    }
    let (d, (cl0, matched0)) = best_of(1, || first_pass_classified(cat, black_box(&data)));
    table.row(
        "  + decode + Catalog::classify per candidate line",
        format!("{:.0} MB/s", mb_s(n, d)),
        format!("{cl0} lines, {matched0} signature matches"),
    );
    let texts = candidate_texts(cat, &data);
    let classify_all = || {
        texts
            .iter()
            .map(|t| cat.classify(black_box(t)).len())
            .sum::<usize>()
    };
    let m = classify_all();
    let (d, _) = per_run(classify_all);
    table.row(
        "    Catalog::classify alone, per candidate line",
        format!(
            "{:.2} µs",
            d.as_secs_f64() * 1e6 / texts.len().max(1) as f64
        ),
        format!("{} lines, {m} signature matches", texts.len()),
    );
    drop(texts);

    // The previous first pass: one walk of aho-corasick's DFA.
    let ac_dfa = build(
        &kw,
        Some(AhoCorasickKind::DFA),
        MatchKind::LeftmostFirst,
        true,
    );
    let (d, c) = best_of(3, || count_matches(&ac_dfa, black_box(&data)));
    table.row(
        "  previous first pass: DFA alone (leftmost-first)",
        format!("{:.0} MB/s", mb_s(n, d)),
        format!("{c} keyword matches"),
    );
    let (d, (cl, cb)) = best_of(3, || candidate_lines_current(&ac_dfa, black_box(&data)));
    table.row(
        "  + candidate-line extraction (memrchr per match)",
        format!("{:.0} MB/s", mb_s(n, d)),
        format!(
            "{cl} candidate lines = {:.2} % of lines, {:.1} % of bytes",
            cl as f64 * 100.0 / mix.lines as f64,
            cb as f64 * 100.0 / n as f64
        ),
    );
    let (d, (cl2, _)) = best_of(3, || candidate_lines_skip(&ac_dfa, black_box(&data)));
    table.row(
        "  + candidate lines, resuming at the next line",
        format!("{:.0} MB/s", mb_s(n, d)),
        format!(
            "{cl2} candidate lines (same set: {}; as the first pass: {})",
            cl == cl2,
            cl2 == fl
        ),
    );
    let (d, (cl3, matched)) = best_of(1, || candidate_lines_classified(&ac_dfa, black_box(&data)));
    table.row(
        "  + decode + Catalog::classify per candidate line",
        format!("{:.0} MB/s", mb_s(n, d)),
        format!("{cl3} lines, {matched} signature matches"),
    );

    // Automaton variants.
    for (name, kind, mk, pf) in [
        (
            "DFA, leftmost-first, no prefilter",
            Some(AhoCorasickKind::DFA),
            MatchKind::LeftmostFirst,
            false,
        ),
        (
            "DFA, standard match kind",
            Some(AhoCorasickKind::DFA),
            MatchKind::Standard,
            true,
        ),
        (
            "contiguous NFA, leftmost-first",
            Some(AhoCorasickKind::ContiguousNFA),
            MatchKind::LeftmostFirst,
            true,
        ),
        (
            "noncontiguous NFA, leftmost-first",
            Some(AhoCorasickKind::NoncontiguousNFA),
            MatchKind::LeftmostFirst,
            true,
        ),
        (
            "auto kind (builder default)",
            None,
            MatchKind::LeftmostFirst,
            true,
        ),
    ] {
        let ac = build(&kw, kind, mk, pf);
        let (d, c) = best_of(2, || count_matches(&ac, black_box(&data)));
        table.row(
            format!("  variant: {name}"),
            format!("{:.0} MB/s", mb_s(n, d)),
            format!("{c} matches; {:?}", ac.kind()),
        );
    }

    // Keyword census: which keywords select the candidate lines.
    let census = keyword_census(&ac_dfa, &kw, &data);
    println!("\n  candidate lines by first keyword (top 12):");
    for (k, c) in census.iter().take(12) {
        println!("    {c:>10}  {k:?}");
    }
    // Without the keywords that select the most lines (repeatedly: a line
    // dropped by one keyword may be selected by the next), how fast?
    let mut pruned: Vec<String> = kw.clone();
    let mut dropped: Vec<(String, u64)> = Vec::new();
    for _round in 0..6 {
        let ac = build(
            &pruned,
            Some(AhoCorasickKind::DFA),
            MatchKind::LeftmostFirst,
            true,
        );
        let noisy: Vec<(String, u64)> = keyword_census(&ac, &pruned, &data)
            .into_iter()
            .filter(|(_, c)| *c as f64 > mix.lines as f64 * 0.001)
            .collect();
        if noisy.is_empty() {
            break;
        }
        pruned.retain(|k| !noisy.iter().any(|(x, _)| x == k));
        dropped.extend(noisy);
    }
    if !dropped.is_empty() {
        println!("\n  keywords that each select > 0.1 % of the lines (lines selected):");
        for (k, c) in &dropped {
            println!("    {c:>10}  {k:?}");
        }
        let ac = build(
            &pruned,
            Some(AhoCorasickKind::DFA),
            MatchKind::LeftmostFirst,
            true,
        );
        let (d, c) = best_of(2, || count_matches(&ac, black_box(&data)));
        table.row(
            format!(
                "  variant: automaton without those {} keywords",
                dropped.len()
            ),
            format!("{:.0} MB/s", mb_s(n, d)),
            format!("{c} matches"),
        );
        let (d, (pl, pm)) = best_of(2, || skip_and_classify(&ac, black_box(&data)));
        table.row(
            "  variant: ... + resume at next line + classify",
            format!("{:.0} MB/s", mb_s(n, d)),
            format!("{pl} candidate lines, {pm} signature matches (all keywords: {matched})"),
        );
    }
    let (d, (sl, _)) = best_of(1, || skip_and_classify(&ac_dfa, black_box(&data)));
    table.row(
        "  variant: all keywords, resume at next line + classify",
        format!("{:.0} MB/s", mb_s(n, d)),
        format!("{sl} candidate lines"),
    );
    let ac = AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::LeftmostFirst)
        .kind(Some(AhoCorasickKind::DFA))
        .byte_classes(false)
        .build(&kw)
        .expect("build");
    let (d, c) = best_of(2, || count_matches(&ac, black_box(&data)));
    table.row(
        "  variant: DFA without byte classes",
        format!("{:.0} MB/s", mb_s(n, d)),
        format!("{c} matches"),
    );
    let alternation = kw
        .iter()
        .map(|k| regex::escape(k))
        .collect::<Vec<_>>()
        .join("|");
    if let Ok(re) = regex::bytes::RegexBuilder::new(&format!("(?i-u:{alternation})"))
        .size_limit(256 << 20)
        .dfa_size_limit(256 << 20)
        .build()
    {
        let (d, c) = best_of(2, || re.find_iter(black_box(&data)).count());
        table.row(
            "  variant: regex crate, one (?i) alternation",
            format!("{:.0} MB/s", mb_s(n, d)),
            format!("{c} matches"),
        );
    }

    // A trigger prefilter: Teddy (aho-corasick's SIMD packed searcher, at
    // most 64 patterns) over a lowercased copy, with 3-byte fragments that
    // every keyword contains, then the exact DFA on the lines it selects.
    let fold_speed = {
        let mut scratch = Vec::with_capacity(64 << 10);
        best_of(2, || {
            let mut x = 0usize;
            for c in black_box(&data).chunks(64 << 10) {
                fold_into(c, &mut scratch);
                x += usize::from(scratch[0]);
            }
            x
        })
        .0
    };
    table.row(
        "  variant: ASCII lowercasing pass alone (64 KiB pieces)",
        format!("{:.0} MB/s", mb_s(n, fold_speed)),
        "",
    );
    let mut sample = Vec::new();
    fold_into(&data[..data.len().min(1 << 20)], &mut sample);
    for (name, frags) in [
        (
            "generic byte frequencies",
            trigger_fragments(&kw, &|f: &str| f.bytes().map(prior).product::<f64>()),
        ),
        ("counts in this log's first MiB (upper bound)", {
            let counts = fragment_counts(&kw, &sample);
            let total = sample.len() as f64;
            trigger_fragments(&kw, &move |f: &str| {
                (counts.get(f).copied().unwrap_or(0) as f64 + 1.0) / total
                    + f.bytes().map(prior).product::<f64>()
            })
        }),
    ] {
        match aho_corasick::packed::Config::new()
            .builder()
            .extend(frags.iter())
            .build()
        {
            Some(teddy) => {
                let (d, (tl, tb, hits)) =
                    best_of(2, || trigger_lines(&teddy, &ac_dfa, black_box(&data)));
                table.row(
                    format!("  variant: Teddy triggers ({name}) + exact DFA"),
                    format!("{:.0} MB/s", mb_s(n, d)),
                    format!(
                        "{} fragments; {tl} trigger lines ({:.1} % of bytes), {hits} candidates (same: {})",
                        frags.len(),
                        tb as f64 * 100.0 / n as f64,
                        hits == fl
                    ),
                );
            }
            None => table.row(
                format!("  variant: Teddy triggers ({name})"),
                "-",
                format!("no packed searcher for {} fragments", frags.len()),
            ),
        }
    }

    // Does the automaton's speed depend on the number of keywords, and what
    // would a SIMD prefilter (Teddy: case-sensitive, at most 128 patterns) give?
    for k in [16usize, 64, 128, kw.len()] {
        let sub = &kw[..k.min(kw.len())];
        let ac = build(
            sub,
            Some(AhoCorasickKind::DFA),
            MatchKind::LeftmostFirst,
            true,
        );
        let (d, c) = best_of(2, || count_matches(&ac, black_box(&data)));
        let ac_cs = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostFirst)
            .kind(Some(AhoCorasickKind::DFA))
            .build(sub)
            .expect("build");
        let (d2, c2) = best_of(2, || count_matches(&ac_cs, black_box(&data)));
        table.row(
            format!("  variant: first {k} keywords, case-insensitive / -sensitive"),
            format!("{:.0} / {:.0} MB/s", mb_s(n, d), mb_s(n, d2)),
            format!("{c} / {c2} matches"),
        );
    }

    // Known slow shapes.
    let unit = b"{\"id\":1234,\"status\":\"error\",\"error\":null,\"retry\":false},";
    for kib in [64usize, 256, 1024] {
        let mut long = Vec::with_capacity(kib << 10);
        while long.len() < kib << 10 {
            long.extend_from_slice(unit);
        }
        long.push(b'\n');
        // Repeated until it adds up to 100 ms: CPU time is counted in ticks.
        let (d, runs) = per_run(|| scan_real(black_box(&long)));
        table.row(
            format!(
                "one {kib} KiB line with a keyword every {} bytes",
                unit.len() / 2
            ),
            format!("{:.2} ms", d.as_secs_f64() * 1e3),
            format!("{:.1} MB/s, mean of {runs} runs", mb_s(long.len(), d)),
        );
    }
    // Long lines without a keyword: every byte goes through the first pass,
    // whose walks split lines too.
    let unit = b"INFO 06-05 06:17:02 [metrics.py:351] Avg prompt throughput: 1234.5 tokens/s, Running: 7 reqs, GPU KV cache usage: 12.3%; ";
    let mut lines = Vec::with_capacity(64 << 20);
    while lines.len() < 64 << 20 {
        for _ in 0..(4 << 20) / unit.len() {
            lines.extend_from_slice(unit);
        }
        lines.push(b'\n');
    }
    let (d, (nl, nh)) = best_of(3, || scan_real(black_box(&lines)));
    table.row(
        "64 MiB of 4 MiB lines without a keyword",
        format!("{:.0} MB/s", mb_s(lines.len(), d)),
        format!("{nl} lines, {nh} hits"),
    );
    drop(lines);
    let small = b"INFO starting\nERROR: connection refused\n";
    let (d, _) = best_of(3, || {
        for _ in 0..1000 {
            black_box(scan_real(black_box(small)));
        }
    });
    table.row(
        "fixed cost of one scan() call (40-byte log)",
        format!("{:.1} µs", d.as_secs_f64() * 1e6 / 1000.0),
        "a paste with N `kubectl logs` sections pays it N times",
    );
    let hwm_mem = vm_kib("VmHWM:").unwrap_or(0);

    // The 1 GiB file, analysed in a child process.
    let mut vs_grep: Option<f64> = None;
    if file_mib > 0 {
        let dir = temp_dir();
        std::fs::create_dir_all(&dir).expect("temp dir");
        let _cleanup = RemoveOnDrop(dir.clone());
        std::fs::write(dir.join("describe-pod.txt"), DESCRIBE).expect("write describe");
        let path = dir.join("logs-previous.txt");
        let t = Instant::now();
        {
            let mut f = std::io::BufWriter::with_capacity(
                8 << 20,
                std::fs::File::create(&path).expect("create log"),
            );
            let mut written = 0usize;
            while written < file_mib << 20 {
                let take = data.len().min((file_mib << 20) - written);
                f.write_all(&data[..take]).expect("write log");
                written += take;
            }
            // The crash at the end, after a GiB of normal operation.
            f.write_all(
                b"ERROR 06-05 07:01:13 [engine.py:160] RuntimeError: CUDA error: out of memory\n",
            )
            .expect("write log");
            f.flush().expect("flush");
        }
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        println!(
            "\n  (wrote {} bytes to {} in {:.1} s; it is in the page cache, so this measures CPU, not the disk)",
            size,
            path.display(),
            t.elapsed().as_secs_f64()
        );
        drop(data);
        let exe = std::env::current_exe().expect("current exe");
        let out = std::process::Command::new(&exe)
            .arg("--child-analyze")
            .arg(&dir)
            .output()
            .expect("run child");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout
            .lines()
            .find(|l| l.starts_with("CHILD"))
            .unwrap_or("");
        let get = |k: &str| -> String {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{k}=")).map(str::to_string))
                .unwrap_or_default()
        };
        if line.is_empty() {
            println!(
                "child failed: {}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        } else {
            let total: f64 = get("total_s").parse().unwrap_or(f64::NAN);
            let hwm0: f64 = get("hwm0_kib").parse().unwrap_or(0.0);
            let hwm1: f64 = get("hwm1_kib").parse().unwrap_or(0.0);
            table.row(
                format!(
                    "read_path + diagnose_all, {} MiB logs-previous.txt",
                    file_mib
                ),
                format!("{total:.2} s wall"),
                format!(
                    "{} s CPU = {:.0} MB/s; read_path {} s; top cause {}",
                    get("cpu_s"),
                    size as f64 / 1e6 / get("cpu_s").parse::<f64>().unwrap_or(f64::NAN),
                    get("read_s"),
                    get("top")
                ),
            );
            table.row(
                "  peak memory (VmHWM) of the analysing process",
                format!("{:.1} MiB", hwm1 / 1024.0),
                format!(
                    "{:.1} MiB at start, +{:.1} MiB for the analysis",
                    hwm0 / 1024.0,
                    (hwm1 - hwm0) / 1024.0
                ),
            );
        }
        let ours = child_best(3, || {
            let mut c = std::process::Command::new(&exe);
            c.arg("--child-analyze").arg(&dir);
            c
        });
        let grep = child_best(3, || {
            let mut c = std::process::Command::new("grep");
            c.arg("-c").arg("-i").arg("error").arg(&path);
            c
        });
        match (ours, grep) {
            (Some((ours_cpu, ours_wall)), Some((grep_cpu, grep_wall))) if !grep_cpu.is_zero() => {
                let ratio = ours_wall.as_secs_f64() / grep_wall.as_secs_f64();
                vs_grep = Some(ratio);
                table.row(
                    "  the analysing process against `grep -c -i error`, wall",
                    format!("{ratio:.2}x"),
                    format!(
                        "{:.2} s against grep's {:.2} s, best of 3 each (the first pass uses up to {} threads)",
                        ours_wall.as_secs_f64(),
                        grep_wall.as_secs_f64(),
                        std::thread::available_parallelism().map_or(1, |n| n.get()).min(4)
                    ),
                );
                table.row(
                    "  ... by CPU time",
                    format!("{:.2}x", ours_cpu.as_secs_f64() / grep_cpu.as_secs_f64()),
                    format!(
                        "{:.2} s CPU against grep's {:.2} s (ticks of 10 ms)",
                        ours_cpu.as_secs_f64(),
                        grep_cpu.as_secs_f64()
                    ),
                );
            }
            _ => table.row(
                "  the analysing process against `grep -c -i error`",
                "n/a",
                "grep or /proc/self/stat not available",
            ),
        }
    }
    table.row(
        "peak memory of this process (holds the in-memory log)",
        format!("{:.1} MiB", hwm_mem as f64 / 1024.0),
        "",
    );

    table.print("summary");
    println!(
        "\ntarget: scan >= 1000 MB/s on one core, whatever the size of the catalog: {}",
        if scan_mbs >= 1000.0 { "met" } else { "NOT met" }
    );
    if let Some(r) = vs_grep {
        println!(
            "target: analyze of the file takes at most one grep over it, wall (<= 1.00x): {}",
            if r <= 1.0 { "met" } else { "NOT met" }
        );
    }
}
