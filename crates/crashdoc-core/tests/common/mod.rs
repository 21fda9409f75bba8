//! Helpers shared by the fixture runners (rules.rs, model_servers.rs).

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
