//! kubectl plugin, shell completions, man pages and scripts/install, from the
//! real binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_crashdoc")
}

fn run(exe: &Path, args: &[&str]) -> Output {
    Command::new(exe)
        .args(args)
        .current_dir(repo())
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", exe.display()))
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn bash(script: &str) -> Output {
    Command::new("bash")
        .args(["-c", script])
        .env("CRASHDOC", bin())
        .output()
        .expect("run bash")
}

/// The subcommands `crashdoc --help` lists.
fn subcommands() -> Vec<String> {
    let help = stdout(&run(Path::new(bin()), &["--help"]));
    let list = help
        .split("Commands:")
        .nth(1)
        .and_then(|s| s.split("Options:").next())
        .unwrap_or_default()
        .to_string();
    let subs: Vec<String> = list
        .lines()
        .filter_map(|l| l.strip_prefix("  "))
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| *w != "help")
        .map(str::to_string)
        .collect();
    assert!(subs.len() >= 10, "too few subcommands in --help: {help}");
    subs
}

#[test]
fn bash_completion_loads_and_completes_subcommands() {
    let o = bash(r#"source <("$CRASHDOC" completions bash) && complete -p crashdoc"#);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        stdout(&o).contains("-F _crashdoc crashdoc"),
        "{}",
        stdout(&o)
    );
    // Ask the completion function what `crashdoc di<TAB>` offers, as bash would.
    let o = bash(
        r#"source <("$CRASHDOC" completions bash)
        COMP_WORDS=(crashdoc di); COMP_CWORD=1; COMP_LINE="crashdoc di"; COMP_POINT=${#COMP_LINE}
        _crashdoc crashdoc di crashdoc; printf '%s\n' "${COMPREPLY[@]}""#,
    );
    let offered: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert!(offered.contains(&"diagnose".to_string()), "{offered:?}");
    assert!(!offered.contains(&"rules".to_string()), "{offered:?}");
    // And the subcommand's own flags after `crashdoc scan --all<TAB>`.
    let o = bash(
        r#"source <("$CRASHDOC" completions bash)
        COMP_WORDS=(crashdoc scan --all); COMP_CWORD=2; COMP_LINE="crashdoc scan --all"; COMP_POINT=${#COMP_LINE}
        _crashdoc crashdoc --all scan; printf '%s\n' "${COMPREPLY[@]}""#,
    );
    assert!(
        stdout(&o).lines().any(|l| l == "--all-namespaces"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn completions_for_each_shell_and_none_for_an_unknown_one() {
    for (shell, marker) in [
        ("bash", "complete -F _crashdoc"),
        ("zsh", "#compdef crashdoc"),
        ("fish", "complete -c crashdoc"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let o = run(Path::new(bin()), &["completions", shell]);
        assert!(o.status.success(), "{shell}");
        let s = stdout(&o);
        assert!(s.contains(marker), "{shell}: no {marker}");
        for sub in subcommands() {
            assert!(s.contains(&sub), "{shell}: no {sub}");
        }
    }
    let o = run(Path::new(bin()), &["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("invalid value 'tcsh'"), "{err}");
}

#[test]
fn man_page_names_every_subcommand() {
    let o = run(Path::new(bin()), &["man"]);
    assert!(o.status.success());
    let page = stdout(&o);
    assert!(
        page.starts_with(".ie") || page.contains(".TH crashdoc 1"),
        "{page}"
    );
    assert!(page.contains(".TH crashdoc 1"), "{page}");
    for sub in subcommands() {
        // roff escapes the hyphen: crashdoc\-diagnose(1)
        let r = format!("crashdoc\\-{}(1)", sub.replace('-', "\\-"));
        assert!(page.contains(&r), "man page lacks {r}");
    }
    assert!(!page.contains("crashdoc\\-frobnicate"));
}

#[test]
fn man_dir_writes_one_page_per_subcommand() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().join("man1");
    let o = run(
        Path::new(bin()),
        &["man", "--dir", d.to_str().expect("utf-8 path")],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for sub in subcommands() {
        let p = d.join(format!("crashdoc-{sub}.1"));
        let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert!(
            text.contains(&format!(".TH crashdoc-{sub} 1")),
            "{}",
            p.display()
        );
    }
    assert!(d.join("crashdoc.1").is_file());
    assert!(!d.join("crashdoc-help.1").exists());
}

/// A `kubectl-crashdoc` link to the binary, as scripts/install makes it.
fn plugin_link(dir: &Path) -> PathBuf {
    let link = dir.join("kubectl-crashdoc");
    std::os::unix::fs::symlink(bin(), &link).expect("symlink");
    link
}

#[test]
fn as_kubectl_crashdoc_it_behaves_the_same_and_says_so_in_usage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plugin = plugin_link(dir.path());
    let plain = Path::new(bin());
    let help = stdout(&run(&plugin, &["--help"]));
    assert!(
        help.contains("Usage: kubectl crashdoc [OPTIONS] <COMMAND>"),
        "{help}"
    );
    let help = stdout(&run(&plugin, &["diagnose", "--help"]));
    assert!(help.contains("Usage: kubectl crashdoc diagnose"), "{help}");
    // The plain name does not say kubectl.
    let help = stdout(&run(plain, &["--help"]));
    assert!(
        help.contains("Usage: crashdoc [OPTIONS] <COMMAND>"),
        "{help}"
    );
    assert!(!help.contains("Usage: kubectl"), "{help}");
    // Same behaviour: the same output for the same arguments.
    for args in [
        &["rules"][..],
        &["analyze", "examples/vllm-oom", "--format", "json"][..],
        &["--version"][..],
    ] {
        let (a, b) = (run(&plugin, args), run(plain, args));
        assert!(a.status.success(), "{args:?}");
        assert_eq!(a.status.code(), b.status.code(), "{args:?}");
        assert_eq!(stdout(&a), stdout(&b), "{args:?}");
    }
    // Errors too: exit 2, the same message apart from the usage line.
    let a = run(&plugin, &["analyze", "/nonexistent"]);
    let b = run(plain, &["analyze", "/nonexistent"]);
    assert_eq!(a.status.code(), Some(2));
    assert_eq!(a.stderr, b.stderr);
}

#[test]
fn scripts_install_puts_the_binary_the_plugin_link_completions_and_man_pages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let prefix = dir.path();
    let o = Command::new(repo().join("scripts/install"))
        .args(["--bin", bin(), "--prefix"])
        .arg(prefix)
        .output()
        .expect("run scripts/install");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let link = prefix.join("bin/kubectl-crashdoc");
    assert_eq!(
        std::fs::read_link(&link).expect("kubectl-crashdoc is a link"),
        Path::new("crashdoc")
    );
    let help = stdout(&run(&link, &["--help"]));
    assert!(help.contains("Usage: kubectl crashdoc"), "{help}");
    for f in [
        "share/bash-completion/completions/crashdoc",
        "share/zsh/site-functions/_crashdoc",
        "share/fish/vendor_completions.d/crashdoc.fish",
        "share/man/man1/crashdoc.1",
        "share/man/man1/crashdoc-diagnose.1",
    ] {
        assert!(prefix.join(f).is_file(), "{f} not installed");
    }
    // A wrong --bin is refused.
    let o = Command::new(repo().join("scripts/install"))
        .args(["--bin", "/nonexistent/crashdoc", "--prefix"])
        .arg(prefix.join("other"))
        .output()
        .expect("run scripts/install");
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn krew_manifest_names_the_plugin_and_its_binary_on_every_platform() {
    let m = std::fs::read_to_string(repo().join("deploy/krew/crashdoc.yaml")).expect("manifest");
    // krew: the manifest's file name is the plugin name, which is how it is invoked.
    assert!(
        m.contains("kind: Plugin\nmetadata:\n  name: crashdoc\n"),
        "{m}"
    );
    let platforms = m.matches("- selector:").count();
    assert!(platforms >= 4, "{platforms} platforms");
    assert_eq!(m.matches("      bin: crashdoc\n").count(), platforms);
    assert_eq!(m.matches("      sha256: ").count(), platforms);
    assert_eq!(m.matches("      uri: ").count(), platforms);
    assert!(m.contains("os: linux, arch: amd64") && m.contains("os: darwin, arch: arm64"));
}
