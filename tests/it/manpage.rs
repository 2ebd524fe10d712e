//! `neff man` and `neff completions`: the man page and the shell completion
//! scripts, generated from the same clap definitions as the parser, name
//! every subcommand and are valid for the tools that read them.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::common::*;

/// The subcommands, as `neff --help` lists them (without `help`).
fn subcommands() -> Vec<String> {
    let help = String::from_utf8(neff_ok(&["--help"])).unwrap();
    let list = help
        .split("Commands:\n")
        .nth(1)
        .expect("a Commands: section")
        .split("\n\n")
        .next()
        .unwrap();
    let names: Vec<String> = list
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(str::to_string)
        .collect();
    for known in [
        "ls",
        "cat",
        "get",
        "info",
        "unpack",
        "pack",
        "scan",
        "verify",
        "mem",
        "optimize",
        "diff",
        "index",
        "cache",
        "man",
        "completions",
    ] {
        assert!(names.iter().any(|n| n == known), "{known} in {names:?}");
    }
    names
}

/// Renders roff with groff, warnings on: (exit ok, text, warnings).
fn groff(roff: &[u8]) -> (bool, String, String) {
    let mut child = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-P-cbou"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(roff).unwrap();
    let o = child.wait_with_output().unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn man_prints_a_roff_page_naming_every_subcommand() {
    let o = neff(&["man"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(o.stderr.is_empty());
    let page = String::from_utf8(o.stdout).unwrap();
    let th = page
        .lines()
        .find(|l| l.starts_with(".TH "))
        .expect("a .TH line");
    assert!(th.starts_with(".TH neff 1 "), "{th}");
    assert!(
        th.contains(concat!("neff ", env!("CARGO_PKG_VERSION"))),
        "{th}"
    );
    for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "SUBCOMMANDS"] {
        assert!(page.contains(&format!(".SH {section}\n")), "{section}");
    }
    for sub in subcommands() {
        assert!(
            page.contains(&format!("neff\\-{}(1)", sub.replace('-', "\\-"))),
            "{sub}"
        );
    }
    // No page is promised for `help`; no date, so the page is reproducible.
    assert!(!page.contains("neff\\-help"));
    assert_eq!(neff_ok(&["man"]), page.as_bytes());
    // The global caps are documented with their defaults.
    assert!(page.contains("\\-\\-max\\-inflated"));
    assert!(page.contains("[default: 4G]"));

    if have("groff") {
        let (ok, text, warnings) = groff(page.as_bytes());
        assert!(ok && warnings.is_empty(), "groff: {warnings}");
        assert!(text.contains("NAME"), "{text}");
        assert!(text.contains("Read AWS Neuron NEFF files fast and safely"));
        assert!(text.contains("neff-scan(1)"), "{text}");
    }
    if have("man") {
        let mut child = Command::new("man")
            .args(["-l", "-"])
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "80")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(page.as_bytes())
            .unwrap();
        let o = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(text.contains("SUBCOMMANDS") && text.contains("neff-completions(1)"));
    }
}

#[test]
fn man_dir_writes_one_page_per_subcommand() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let o = neff(&["man", "--dir", dir]);
    assert_eq!(o.status.code(), Some(0));
    assert!(o.stdout.is_empty() && o.stderr.is_empty());
    let mut want: Vec<String> = subcommands()
        .iter()
        .map(|s| format!("neff-{s}.1"))
        .collect();
    want.extend(["neff.1".into(), "neff-index-schema.1".into()]);
    want.push("neff-index-merge-sql.1".into());
    want.extend(["neff-cache-status.1".into(), "neff-cache-prune.1".into()]);
    want.push("neff-cache-sync.1".into());
    want.push("neff-cache-explain.1".into());
    want.sort();
    let mut got: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    got.sort();
    assert_eq!(got, want);
    // neff.1 is what `neff man` prints.
    assert_eq!(
        std::fs::read(tmp.path().join("neff.1")).unwrap(),
        neff_ok(&["man"])
    );
    for name in &got {
        let page = std::fs::read_to_string(tmp.path().join(name)).unwrap();
        let title = name.strip_suffix(".1").unwrap();
        let th = format!(".TH {title} 1  \"neff {}\"", env!("CARGO_PKG_VERSION"));
        assert!(page.contains(&th), "{name}: {th}");
        if have("groff") {
            let (ok, _, warnings) = groff(page.as_bytes());
            assert!(ok && warnings.is_empty(), "{name}: {warnings}");
        }
    }
    let scan = std::fs::read_to_string(tmp.path().join("neff-scan.1")).unwrap();
    assert!(scan.contains("\\-\\-shard") && scan.contains("\\-\\-index"));
}

#[test]
fn man_dir_that_does_not_exist_is_an_io_error() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no/such/dir");
    let o = neff(&["man", "--dir", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        err.starts_with(&format!("neff: {}: ", missing.display())),
        "{err}"
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn completions_for_every_shell_name_the_subcommands() {
    let subs = subcommands();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let o = neff(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}");
        assert!(o.stderr.is_empty(), "{shell}");
        let script = String::from_utf8(o.stdout).unwrap();
        for sub in &subs {
            assert!(script.contains(sub.as_str()), "{shell}: {sub}");
        }
        assert!(script.contains("max-inflated"), "{shell}");
    }
    let zsh = String::from_utf8(neff_ok(&["completions", "zsh"])).unwrap();
    assert!(zsh.starts_with("#compdef neff"));
    let fish = String::from_utf8(neff_ok(&["completions", "fish"])).unwrap();
    assert!(fish.contains("complete -c neff"));
}

#[test]
fn bash_completion_completes_subcommands_and_shells() {
    if !have("bash") {
        eprintln!("skipped: no bash");
        return;
    }
    let script = String::from_utf8(neff_ok(&["completions", "bash"])).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("neff.bash");
    std::fs::write(&file, &script).unwrap();
    // Source it, then ask the completion function what `neff <words>` completes to.
    let complete = |words: &str| -> Vec<String> {
        let prog = format!(
            "source {file}; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             _neff neff \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            file = file.display()
        );
        let o = Command::new("bash")
            .args(["--norc", "--noprofile", "-c", &prog])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let mut v: Vec<String> = String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        v.sort();
        v
    };
    assert_eq!(complete("neff sc"), ["scan"]);
    assert_eq!(complete("neff co"), ["completions"]);
    assert_eq!(complete("neff ma"), ["man"]);
    let shells: Vec<String> = complete("neff completions ''")
        .into_iter()
        .filter(|w| !w.starts_with('-'))
        .collect();
    assert_eq!(shells, ["bash", "elvish", "fish", "powershell", "zsh"]);
    assert_eq!(complete("neff scan --sh"), ["--shard"]);
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    for args in [
        &["completions", "tcsh"][..],
        &["completions"][..],
        &["completions", "bash", "zsh"][..],
        &["man", "extra"][..],
    ] {
        let o = neff(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    let err = String::from_utf8(neff(&["completions", "tcsh"]).stderr).unwrap();
    assert!(err.contains("invalid value 'tcsh'"), "{err}");
    assert!(
        err.contains("[possible values: bash, elvish, fish, powershell, zsh]"),
        "{err}"
    );
}

#[test]
fn help_and_the_man_page_carry_the_exit_code_table_of_docs_cli() {
    let help = String::from_utf8(neff_ok(&["--help"])).unwrap();
    let man = String::from_utf8(neff_ok(&["man"])).unwrap();
    let doc = std::fs::read_to_string(root().join("docs/CLI.md")).unwrap();
    for code in [
        "0  success",
        "1  an input was read and refused",
        "2  usage error",
        "3  an input could not be read",
    ] {
        assert!(help.contains(code), "--help lacks {code:?}");
        assert!(man.contains(code), "the man page lacks {code:?}");
    }
    // The codes are docs/CLI.md's.
    for row in ["| 0 | success |", "| 2 | usage error", "| 3 | I/O error"] {
        assert!(doc.contains(row), "docs/CLI.md lacks {row:?}");
    }
}
