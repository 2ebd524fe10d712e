//! A closed standard output is success (issue 49): `neff completions bash
//! | head -1` and every other command, whatever reads its output stopping
//! early, exit 0 without a panic.

use std::io::Read;
use std::process::{Command, Stdio};

use crate::common::root;

/// Runs `neff ARGS` with its stdout a pipe whose reader closes it after
/// one byte, or (`close_first`) at once, before the command has written
/// anything (a command starts in milliseconds: its first write meets the
/// closed pipe); returns (exit code, stderr).
fn into_closed(args: &[&str], close_first: bool) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_neff"))
        .args(args)
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    if !close_first {
        let mut one = [0u8; 1];
        let _ = out.read(&mut one);
    }
    drop(out);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (child.wait().unwrap().code(), err)
}

#[test]
fn every_command_treats_a_closed_stdout_as_success() {
    let tmp = tempfile::tempdir().unwrap();
    let f = "fixtures/acc/cc-replica-groups-gz.neff";
    // A cache of one compiled entry (every entry ok: exit 0).
    let entry = tmp.path().join("cache/neuronxcc-2.15.0/MODULE_1+ab");
    std::fs::create_dir_all(&entry).unwrap();
    std::fs::copy(root().join(f), entry.join("model.neff")).unwrap();
    std::fs::write(entry.join("model.done"), b"").unwrap();
    let cache = tmp.path().join("cache");
    let cache = cache.to_str().unwrap();
    let commands = |out: &str| -> Vec<Vec<String>> {
        let at = |name: &str| format!("{out}/{name}");
        let v: Vec<Vec<&str>> = vec![
            vec!["--help"],
            vec!["--version"],
            vec!["ls", f],
            vec!["ls", "--format", "csv", f],
            vec!["cat", f, "def.json"],
            vec!["get", f, "info"],
            vec!["info", f],
            vec!["info", "--json", f],
            vec!["unpack", f, "-o", "UNPACKED"],
            vec!["pack", "fixtures/acc", "-o", "PACKED"],
            vec!["scan", "--no-progress", "fixtures"],
            vec![
                "scan",
                "--no-progress",
                "--format",
                "json",
                "--sorted",
                "fixtures",
            ],
            vec!["scan", "--no-progress", "--index", "DB", "fixtures/acc"],
            vec!["verify", f],
            vec!["mem", f],
            vec!["mem", "--json", f],
            vec!["optimize", f, "-o", "OPTIMIZED"],
            vec!["diff", f, f],
            vec!["diff", "--json", f, f],
            vec!["cache", "status", cache],
            vec!["cache", "status", "--json", cache],
            vec!["cache", "prune", "--failed", cache],
            vec!["index", "schema"],
            vec!["index", "merge-sql", "s.db"],
            vec!["man"],
            vec!["man", "--dir", out],
            vec!["completions", "bash"],
            vec!["completions", "zsh"],
            vec!["completions", "fish"],
            vec!["completions", "elvish"],
            vec!["completions", "powershell"],
        ];
        v.into_iter()
            .map(|c| {
                c.iter()
                    .map(|a| match *a {
                        "UNPACKED" => at("unpacked"),
                        "PACKED" => at("packed.neff"),
                        "OPTIMIZED" => at("optimized.neff"),
                        "DB" => at("zoo.db"),
                        a => a.to_string(),
                    })
                    .collect()
            })
            .collect()
    };
    let mut failed = Vec::new();
    for close_first in [true, false] {
        // Each pass writes its files into a directory of its own.
        let out = tempfile::tempdir().unwrap();
        for args in commands(out.path().to_str().unwrap()) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (code, err) = into_closed(&args, close_first);
            if code != Some(0) || err.contains("panicked") || err.contains("Broken pipe") {
                failed.push(format!(
                    "{args:?} (closed first: {close_first}): {code:?}: {err}"
                ));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
