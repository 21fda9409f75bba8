//! Where users already work: kubectl's plugin mechanism, shell completions
//! and the man page, all from the one clap definition of the CLI.
//!
//! kubectl runs a plugin by looking up `kubectl-NAME` on PATH and executing
//! it with the remaining arguments (kubectl's `pkg/cmd/plugin`); the binary
//! sees its own name as argv[0]. Installed as (or linked to)
//! `kubectl-crashdoc`, crashdoc behaves the same and says `kubectl crashdoc`
//! in its usage lines.

use anyhow::Context as _;
use clap::{ArgMatches, Command, CommandFactory, FromArgMatches};
use std::ffi::OsStr;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The name kubectl plugins are looked up by.
pub const PLUGIN_EXE: &str = "kubectl-crashdoc";

/// The shells `crashdoc completions` writes for.
#[derive(Clone, Copy, clap::ValueEnum, PartialEq, Eq, Debug)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    Powershell,
}

impl Shell {
    fn generator(self) -> clap_complete::Shell {
        match self {
            Shell::Bash => clap_complete::Shell::Bash,
            Shell::Zsh => clap_complete::Shell::Zsh,
            Shell::Fish => clap_complete::Shell::Fish,
            Shell::Powershell => clap_complete::Shell::PowerShell,
        }
    }
}

/// True when argv[0] is the kubectl plugin name (`kubectl-crashdoc`, with or
/// without a directory or `.exe`).
pub fn is_plugin_name(argv0: &OsStr) -> bool {
    Path::new(argv0)
        .file_stem()
        .is_some_and(|s| s == OsStr::new(PLUGIN_EXE))
}

/// The command line as this invocation should show it: `kubectl crashdoc`
/// when run as the kubectl plugin, `crashdoc` otherwise.
pub fn command<C: CommandFactory>(argv0: Option<&OsStr>) -> Command {
    let cmd = C::command();
    if argv0.is_some_and(is_plugin_name) {
        cmd.bin_name("kubectl crashdoc")
    } else {
        cmd
    }
}

/// Parse the process arguments like `C::parse()`, with the plugin's name when
/// invoked as `kubectl-crashdoc`.
pub fn parse<C: CommandFactory + FromArgMatches>() -> C {
    let argv0 = std::env::args_os().next();
    let mut cmd = command::<C>(argv0.as_deref());
    let matches: ArgMatches = cmd.get_matches_mut();
    C::from_arg_matches(&matches).unwrap_or_else(|e| e.format(&mut cmd).exit())
}

/// `crashdoc completions SHELL`: the completion script on stdout.
pub fn completions<C: CommandFactory>(shell: Shell) -> anyhow::Result<()> {
    let mut cmd = C::command();
    // Into a buffer first: clap_complete panics on a write error (a closed pipe).
    let mut buf = Vec::new();
    clap_complete::generate(shell.generator(), &mut cmd, "crashdoc", &mut buf);
    std::io::stdout()
        .lock()
        .write_all(&buf)
        .context("cannot write the completion script")
}

/// `crashdoc man`: the crashdoc(1) page on stdout, or with `--dir DIR` one
/// page per command (crashdoc.1, crashdoc-diagnose.1, ...) written there.
pub fn man<C: CommandFactory>(dir: Option<PathBuf>) -> anyhow::Result<()> {
    let cmd = C::command();
    let Some(dir) = dir else {
        let mut out = std::io::stdout().lock();
        clap_mangen::Man::new(cmd)
            .render(&mut out)
            .context("cannot write the man page")?;
        return Ok(());
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for path in man_pages(cmd, &dir)? {
        println!("{}", path.display());
    }
    Ok(())
}

/// Every page of `cmd` and its subcommands (crashdoc-SUB.1), written to `dir`.
fn man_pages(cmd: Command, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut cmd = cmd;
    cmd.build();
    let mut written = Vec::new();
    let mut stack = vec![cmd];
    while let Some(c) = stack.pop() {
        let name = c.get_bin_name().unwrap_or(c.get_name()).replace(' ', "-");
        let path = dir.join(format!("{name}.1"));
        let mut buf = Vec::new();
        clap_mangen::Man::new(c.clone())
            .title(&name)
            .render(&mut buf)
            .context("cannot render a man page")?;
        std::fs::write(&path, buf).with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path);
        stack.extend(
            c.get_subcommands()
                .filter(|s| !s.is_hide_set() && s.get_name() != "help")
                .cloned(),
        );
    }
    written.sort();
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    #[command(name = "crashdoc")]
    struct Demo {
        #[command(subcommand)]
        cmd: Sub,
    }
    #[derive(clap::Subcommand)]
    enum Sub {
        Rules,
        Scan,
    }

    #[test]
    fn plugin_name_is_recognised_with_a_path_or_exe() {
        for n in [
            "kubectl-crashdoc",
            "/usr/local/bin/kubectl-crashdoc",
            "kubectl-crashdoc.exe",
        ] {
            assert!(is_plugin_name(OsStr::new(n)), "{n}");
        }
        // Near misses: the plain binary, another plugin, a longer name.
        for n in [
            "crashdoc",
            "/usr/bin/crashdoc",
            "kubectl-crash",
            "kubectl-crashdoc2",
        ] {
            assert!(!is_plugin_name(OsStr::new(n)), "{n}");
        }
    }

    #[test]
    fn usage_says_kubectl_crashdoc_only_as_the_plugin() {
        let mut plugin = command::<Demo>(Some(OsStr::new("/x/kubectl-crashdoc")));
        assert!(
            plugin
                .render_usage()
                .to_string()
                .starts_with("Usage: kubectl crashdoc"),
            "{}",
            plugin.render_usage()
        );
        let mut plain = command::<Demo>(Some(OsStr::new("crashdoc")));
        let u = plain.render_usage().to_string();
        assert!(
            u.starts_with("Usage: crashdoc") && !u.contains("kubectl"),
            "{u}"
        );
    }

    #[test]
    fn one_man_page_per_visible_command() {
        let dir = tempfile::tempdir().unwrap();
        let pages = man_pages(Demo::command(), dir.path()).unwrap();
        let names: Vec<String> = pages
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["crashdoc-rules.1", "crashdoc-scan.1", "crashdoc.1"]);
        let main = std::fs::read_to_string(dir.path().join("crashdoc.1")).unwrap();
        assert!(main.contains(".TH crashdoc 1"), "{main}");
        assert!(main.contains("crashdoc\\-rules") && main.contains("crashdoc\\-scan"));
    }
}
