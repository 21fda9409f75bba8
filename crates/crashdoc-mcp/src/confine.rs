//! `--root`: over HTTP, `analyze` and `lint` read only inside one folder.
//! A path is taken relative to the root (an absolute one must lie in it),
//! may hold no `..`, and its canonical form (every symlink followed) must
//! stay inside the canonical root, as must everything under it when it is
//! a folder. No path under `/proc`, `/sys` or `/dev` is read, whatever the
//! root. A refused path gets one answer, whether or not it exists, so a
//! refusal tells nothing of the file.

use std::path::{Component, Path, PathBuf};

/// A path the bounds refuse. Its message names the path as given, never
/// anything read from it.
#[derive(Debug, thiserror::Error)]
#[error("`{given}` is not a readable path under this server's --root")]
pub struct Refused {
    given: String,
    no_root: bool,
}

impl crashdoc_core::Hint for Refused {
    fn hint(&self) -> Option<std::borrow::Cow<'_, str>> {
        Some(if self.no_root {
            "this server reads no paths (it was started without --root): give `text` instead".into()
        } else {
            "give a path relative to the server's --root (no `..`, no symlink leading out of it), or `text` instead".into()
        })
    }
}

const NEVER: &[&str] = &["/proc", "/sys", "/dev"];

/// The canonical path `given` names inside `root`, or [`Refused`].
pub fn confine(root: Option<&Path>, given: &str) -> Result<PathBuf, Refused> {
    let refused = || Refused {
        given: given.chars().take(200).collect(),
        no_root: root.is_none(),
    };
    let root = root.ok_or_else(refused)?;
    let croot = root.canonicalize().map_err(|_| refused())?;
    let p = Path::new(given);
    if p.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(refused());
    }
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        croot.join(p)
    };
    let canon = joined.canonicalize().map_err(|_| refused())?;
    if !inside(&canon, &croot) {
        return Err(refused());
    }
    if canon.is_dir() && !tree_inside(&canon, &croot, 0) {
        return Err(refused());
    }
    Ok(canon)
}

fn inside(p: &Path, croot: &Path) -> bool {
    p.starts_with(croot) && !NEVER.iter().any(|n| p.starts_with(n))
}

/// Every entry under `dir` resolves inside `croot` (symlinks followed).
fn tree_inside(dir: &Path, croot: &Path, depth: usize) -> bool {
    if depth > 32 {
        return false;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    for e in entries {
        let Ok(e) = e else { return false };
        let path = e.path();
        let Ok(canon) = path.canonicalize() else {
            // A dangling symlink: nothing to read, nothing leaks.
            continue;
        };
        if !inside(&canon, croot) {
            return false;
        }
        let is_link = e.file_type().map(|t| t.is_symlink()).unwrap_or(true);
        if canon.is_dir() && !is_link && !tree_inside(&canon, croot, depth + 1) {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_root() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        std::fs::create_dir_all(root.join("case")).unwrap();
        std::fs::write(root.join("case/pod.yaml"), "kind: Pod").unwrap();
        std::fs::write(t.path().join("outside.txt"), "SECRET").unwrap();
        assert!(confine(Some(&root), "case").is_ok());
        assert!(confine(Some(&root), "case/pod.yaml").is_ok());
        let abs = root.join("case/pod.yaml");
        assert!(confine(Some(&root), &abs.to_string_lossy()).is_ok());
        assert!(confine(Some(&root), "../outside.txt").is_err());
        assert!(confine(Some(&root), "case/../../outside.txt").is_err());
        assert!(confine(Some(&root), &t.path().join("outside.txt").to_string_lossy()).is_err());
        assert!(confine(Some(&root), "/proc/self/environ").is_err());
        assert!(confine(Some(&root), "missing").is_err());
        assert!(confine(None, "case").is_err());
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(t.path().join("outside.txt"), root.join("link")).unwrap();
            assert!(confine(Some(&root), "link").is_err());
            // A folder holding a link out is refused as a whole.
            std::os::unix::fs::symlink(t.path().join("outside.txt"), root.join("case/leak.txt"))
                .unwrap();
            assert!(confine(Some(&root), "case").is_err());
        }
    }

    #[test]
    fn refusals_say_the_same_whether_or_not_the_file_exists() {
        let t = tempfile::tempdir().unwrap();
        let a = confine(Some(t.path()), "/etc/hostname")
            .unwrap_err()
            .to_string();
        let b = confine(Some(t.path()), "/etc/no-such-file")
            .unwrap_err()
            .to_string();
        assert_eq!(
            a.replace("/etc/hostname", "X"),
            b.replace("/etc/no-such-file", "X")
        );
    }
}
