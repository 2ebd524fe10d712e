//! Files that change under the reader, and paths that are not files: no
//! read may kill the process or block it. A NEFF truncated or rewritten
//! while `neff` reads it gives that file an error (exit 1 or 3, `ok: false`
//! in a scan), and a FIFO or device named like a NEFF is refused at once.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use neff::pack::{pack, PackEntry, PackOptions};

/// A raw NEFF with a large member (mapped, and slow enough to read that a
/// truncation lands mid-read).
fn big_raw_neff(mb: usize) -> Vec<u8> {
    let big: Vec<u8> = (0..mb << 20).map(|i| (i * 7 + i / 4096) as u8).collect();
    let def = br#"{"var":{},"replica_groups":[[[0,1,2,3]]]}"#;
    let entries = vec![
        PackEntry::file("kelf-0.json", &br#"{"target":"trn1","graphs":[{}]}"#[..], 0),
        PackEntry::file("sg00/big.bin", big, 0),
        PackEntry::file("sg00/def.json", &def[..], 0),
    ];
    let opts = PackOptions::default().no_gzip(true).mtime(Some(0));
    pack(&entries, &opts).unwrap()
}

/// A gzip NEFF of `mb` MiB of noise: over the inflate budget, so it is
/// walked as a stream, and over 16 MiB of gzip, so in parallel rounds.
fn big_gzip_neff(mb: usize) -> Vec<u8> {
    let big = noise(mb << 20, 0x9e3779b97f4a7c15);
    let def = br#"{"var":{},"replica_groups":[[[0,1,2,3]]]}"#;
    let entries = vec![
        PackEntry::file("kelf-0.json", &br#"{"target":"trn1","graphs":[{}]}"#[..], 0),
        PackEntry::file("sg00/big.bin", big, 0),
        PackEntry::file("sg00/def.json", &def[..], 0),
    ];
    pack(&entries, &PackOptions::default()).unwrap()
}

#[test]
fn truncating_and_rewriting_while_reading_never_kills_a_process() {
    truncate_while_reading(big_raw_neff(24), &[]);
}

#[test]
fn truncating_a_streamed_gzip_neff_while_reading_never_kills_a_process() {
    truncate_while_reading(big_gzip_neff(20), &["--inflate-budget", "1M"]);
}

/// 100 rounds of a command over the NEFF `bytes` while the file is
/// truncated under it, then rewritten: every process exits 0, 1 or 3.
fn truncate_while_reading(bytes: Vec<u8>, global: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("zoo");
    std::fs::create_dir(&dir).unwrap();
    let p = dir.join("m.neff");
    std::fs::write(&p, &bytes).unwrap();
    let path = p.to_str().unwrap().to_string();
    let dir_s = dir.to_str().unwrap().to_string();
    let commands: Vec<Vec<&str>> = vec![
        vec!["verify", &path],
        vec!["cat", &path, "big"],
        vec!["get", &path, "cc-world-size"],
        vec!["scan", "--json", "--no-progress", "--verify", &dir_s],
        vec!["--read-mode", "map", "unpack", &path, "-o"],
    ];
    let mut outcomes = std::collections::BTreeMap::<String, usize>::new();
    for round in 0..100 {
        let args = &commands[round % commands.len()];
        let out_dir = tmp.path().join(format!("out{round}"));
        let mut full: Vec<String> = global.iter().chain(args).map(|s| s.to_string()).collect();
        if full.last().is_some_and(|a| a == "-o") {
            full.push(out_dir.to_str().unwrap().to_string());
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_neff"))
            .args(&full)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Truncate at a moment that moves through the read, then rewrite.
        std::thread::sleep(Duration::from_micros((round as u64 * 397) % 6000));
        let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        f.set_len(((round * 7919) % (bytes.len() / 2)) as u64 + 1024)
            .unwrap();
        drop(f);
        let status = child.wait().unwrap();
        std::fs::write(&p, &bytes).unwrap();
        let code = status.code();
        assert!(
            matches!(code, Some(0 | 1 | 3)),
            "round {round}: neff {full:?} ended with {status:?}"
        );
        *outcomes
            .entry(format!("{} {code:?}", full[global.len()]))
            .or_default() += 1;
        let _ = std::fs::remove_dir_all(&out_dir);
    }
    eprintln!("outcomes: {outcomes:?}");
}

#[test]
fn a_truncated_mapped_file_is_reported_not_answered() {
    // Deterministic: truncate while a process holds the map, via a reader
    // in this process.
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("m.neff");
    std::fs::write(&p, big_raw_neff(4)).unwrap();
    let opts = neff::Options::default().read_mode(neff::ReadMode::Map);
    let n = neff::Neff::open_with(&p, &opts).unwrap();
    assert!(!n.changed());
    let big = n
        .entries()
        .iter()
        .find(|e| n.name(e) == b"sg00/big.bin")
        .unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.set_len(8192).unwrap();
    // The read survives (zeros where the pages were) and is flagged.
    let data = n.held(big).unwrap();
    let sum: u64 = data.iter().map(|&b| u64::from(b)).sum();
    assert!(n.changed(), "the fault was recorded (sum {sum})");
    let e = n.check_unchanged().unwrap_err();
    assert!(e.to_string().contains("truncated while being read"), "{e}");
    assert_eq!(e.kind(), neff::ErrorKind::Changed);
}

#[test]
fn a_fifo_or_device_is_refused_without_blocking() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("x.neff");
    let ok = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(ok.success());
    let t = Instant::now();
    for args in [
        vec!["ls", fifo.to_str().unwrap()],
        vec!["get", fifo.to_str().unwrap(), "def"],
        vec!["verify", fifo.to_str().unwrap()],
        vec!["ls", "/dev/zero"],
        vec!["info", "/dev/null"],
    ] {
        let o = neff(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let text =
            String::from_utf8_lossy(&o.stderr).to_string() + &String::from_utf8_lossy(&o.stdout);
        assert!(text.contains("not a regular file"), "{args:?}: {text}");
    }
    // Inside a scanned directory: the walk skips it, or its record says why.
    std::fs::write(tmp.path().join("good.neff"), big_raw_neff(1)).unwrap();
    let o = neff(&[
        "scan",
        "--json",
        "--no-progress",
        tmp.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.contains("good.neff"), "{out}");
    // Inside a packed directory: skipped by the walk, never opened.
    let tree = tmp.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("a.json"), b"{}").unwrap();
    assert!(Command::new("mkfifo")
        .arg(tree.join("f.json"))
        .status()
        .unwrap()
        .success());
    let out = tmp.path().join("p.neff");
    neff_ok(&["pack", tree.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let names = String::from_utf8(neff_ok(&["ls", out.to_str().unwrap()])).unwrap();
    assert_eq!(names, "a.json\n");
    assert!(t.elapsed() < Duration::from_secs(10), "nothing blocked");
}
