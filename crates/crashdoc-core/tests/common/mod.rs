//! Helpers shared by the fixture runners (rules.rs, model_servers.rs).
#![allow(dead_code)] // each test binary uses a part of these helpers

use std::io::Write;
use std::path::{Path, PathBuf};

/// `tests/fixtures/<sub>` of this crate.
pub fn fixtures(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(sub)
}

/// Print past libtest's output capture, so warnings show on a passing run.
pub fn warn(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{msg}");
}

/// The sub-folders of a folder, sorted.
pub fn sorted_dirs(path: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

/// The last component of a path.
pub fn name_of(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Read a fixture folder as crashdoc reads a folder, without its label:
/// `expected.json` is copied out of the way first (an unknown file would be
/// read like a paste), so the label can never be evidence.
pub fn read_case(dir: &Path) -> Result<crashdoc_core::Evidence, crashdoc_core::InputError> {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let tmp = std::env::temp_dir().join(format!(
        "crashdoc-fixture-{}-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        name_of(dir)
    ));
    copy_without_label(dir, &tmp).expect("copy fixture");
    let ev = crashdoc_core::ingest::read_path(&tmp);
    let _ = std::fs::remove_dir_all(&tmp);
    ev
}

fn copy_without_label(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let p = e.path();
        if p.is_dir() {
            copy_without_label(&p, &to.join(e.file_name()))?;
        } else if e.file_name() != "expected.json" {
            std::fs::copy(&p, to.join(e.file_name()))?;
        }
    }
    Ok(())
}
