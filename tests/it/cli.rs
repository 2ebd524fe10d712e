//! The command-line contract of docs/CLI.md: exit codes, keys, outputs.

use crate::common::*;

fn fixture(rel: &str) -> String {
    root().join(rel).to_str().unwrap().to_string()
}

#[test]
fn missing_file_is_an_io_error_exit_3() {
    let o = neff(&["ls", "/nonexistent/x.neff"]);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("neff: /nonexistent/x.neff: "));
}

#[test]
fn usage_errors_exit_2() {
    let f = fixture("fixtures/acc/kelf-0-gz.neff");
    assert_eq!(neff(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(neff(&["ls"]).status.code(), Some(2));
    assert_eq!(neff(&["cat", &f, "("]).status.code(), Some(2));
    assert_eq!(neff(&["get", &f, "nonsense"]).status.code(), Some(2));
    assert_eq!(neff(&["ls", &f, "--bogus"]).status.code(), Some(2));
}

#[test]
fn cat_with_no_match_is_refused() {
    let f = fixture("fixtures/acc/kelf-0-gz.neff");
    let reason = assert_refused(&["cat", &f, "no-such-member"], std::path::Path::new(&f));
    assert_eq!(reason, "no member matches no-such-member");
}

#[test]
fn cat_picks_the_first_match_in_sorted_order() {
    // sg00/def.json sorts before sg01/def.json whatever the archive order.
    let f = fixture("fixtures/acc/two-sg-raw.neff");
    let n = neff::Neff::open(&f).unwrap();
    let want = n
        .data(n.files().find(|e| n.name(e) == b"sg00/def.json").unwrap())
        .unwrap()
        .to_vec();
    assert_eq!(neff_ok(&["cat", &f, r"def\.json"]), want);
}

#[test]
fn verify_passes_on_every_fixture_and_fails_on_a_flipped_byte() {
    let mut args = vec!["verify".to_string()];
    for dir in ["fixtures/interop", "fixtures/acc"] {
        args.extend(neffs(dir).iter().map(|p| p.to_str().unwrap().to_string()));
    }
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = String::from_utf8(neff_ok(&argv)).unwrap();
    assert_eq!(out.lines().count(), args.len() - 1);
    assert!(out.lines().all(|l| l.starts_with("OK ")));

    let tmp = tempfile::tempdir().unwrap();
    for name in [
        "fixtures/interop/gnutar-pax-gz.neff",
        "fixtures/interop/gnutar-pax-raw.neff",
    ] {
        let mut bytes = std::fs::read(root().join(name)).unwrap();
        let last = bytes.len() - 600;
        bytes[last] ^= 1;
        let p = tmp.path().join("flipped.neff");
        std::fs::write(&p, &bytes).unwrap();
        let o = neff(&["verify", p.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&o.stdout).contains("mismatch"));
    }
}

#[test]
fn info_json_has_the_contract_keys() {
    for f in [
        "fixtures/interop/gnutar-pax-gz.neff",
        "fixtures/interop/gnutar-pax-raw.neff",
    ] {
        let v: serde_json::Value =
            serde_json::from_slice(&neff_ok(&["info", &fixture(f), "--json"])).unwrap();
        for k in [
            "pkg_version",
            "header_size",
            "data_size",
            "version_major",
            "version_minor",
            "build_version",
            "hash",
            "uuid",
            "name",
            "requested_tpb_count",
            "feature_bits",
            "vnc_size",
            "compressed",
            "members",
        ] {
            assert!(v.get(k).is_some(), "{f}: info --json lacks {k}");
        }
        let gz = f.ends_with("gz.neff");
        assert_eq!(v["compressed"], gz);
        assert_eq!(v["hash"].as_str().unwrap().len(), if gz { 32 } else { 64 });
        assert_eq!(v["uuid"].as_str().unwrap().len(), 32);
        assert_eq!(v["header_size"], 1024);
        let plain = String::from_utf8(neff_ok(&["info", &fixture(f)])).unwrap();
        assert!(plain.contains("Package Version:") && plain.contains(v["hash"].as_str().unwrap()));
    }
}

#[test]
fn get_prints_compact_json_and_accepts_getter_names() {
    let f = fixture("fixtures/acc/cc-replica-groups-gz.neff");
    assert_eq!(neff_ok(&["get", &f, "cc-world-size"]), b"2\n");
    assert_eq!(neff_ok(&["get", &f, "getCCRankWorldSize"]), b"2\n");
    let def = neff_ok(&["get", &f, "def"]);
    assert_eq!(def.iter().filter(|&&b| b == b'\n').count(), 1);
    let _: serde_json::Value = serde_json::from_slice(&def).unwrap();
}

#[test]
fn guard_strings_reach_stderr_verbatim() {
    let cases = [
        (
            "cc-none-gz.neff",
            "cc-world-size",
            "NEFF does not have CC op",
        ),
        (
            "cc-replica-groups-empty-gz.neff",
            "cc-world-size",
            "Empty replica_groups found",
        ),
        (
            "cc-src-target-pairs-empty-gz.neff",
            "cc-world-size",
            "Empty src_target_pairs found",
        ),
        (
            "cc-empty-topology-gz.neff",
            "cc-world-size",
            "Empty topology found at index 0, possible MPMD neff file",
        ),
        (
            "cc-mpmd-inconsistent-gz.neff",
            "cc-world-size",
            "Inconsistent worker count across topologies",
        ),
        (
            "tm-duplicate-input-gz.neff",
            "alias",
            "1 input aliasing to multiple outputs is not supported",
        ),
        (
            "kelf-target-list-mixed-gz.neff",
            "arch",
            "mixed accelerator usage is not supported",
        ),
    ];
    for (file, acc, want) in cases {
        let f = fixture(&format!("fixtures/acc/{file}"));
        let reason = assert_refused(&["get", &f, acc], std::path::Path::new(&f));
        assert!(reason.contains(want), "{file}: {reason:?}");
    }
}

#[test]
fn pack_never_packs_its_own_output() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tree");
    std::fs::create_dir_all(dir.join("sg00")).unwrap();
    std::fs::write(dir.join("sg00/def.json"), b"{}").unwrap();
    std::fs::write(dir.join("kelf-0.json"), b"{\"target\":\"trn1\"}").unwrap();
    let out = dir.join("x.neff");
    for _ in 0..2 {
        // The second run finds the first run's output in DIR: still skipped.
        neff_ok(&["pack", dir.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        let names = String::from_utf8(neff_ok(&["ls", out.to_str().unwrap()])).unwrap();
        assert_eq!(names, "kelf-0.json\nsg00/def.json\n");
    }
}

#[test]
fn verify_honours_read_mode() {
    let f = fixture("fixtures/acc/kelf-0-gz.neff");
    for mode in ["map", "read", "auto"] {
        let out = neff_ok(&["verify", "--read-mode", mode, &f]);
        assert!(String::from_utf8(out).unwrap().starts_with("OK "));
    }
    // A directory cannot be read in either mode: the mode reaches the open
    // (an input that cannot be read: 3, as `ls` of it).
    let o = neff(&["verify", "--read-mode", "read", "/"]);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("FAIL /: "));
}

/// A raw NEFF whose member `name` has its mode field set to `mode` (8 bytes,
/// written as is), with the header checksum recomputed.
fn with_mode_field(name: &str, mode: [u8; 8]) -> Vec<u8> {
    use neff::pack::{pack, PackEntry, PackOptions};
    let opts = PackOptions::default().no_gzip(true).mtime(Some(0));
    let mut bytes = pack(&[PackEntry::file(name, &b"{}"[..], 0)], &opts).unwrap();
    let at = (1024..bytes.len())
        .step_by(512)
        .find(|&o| bytes[o..].starts_with(name.as_bytes()))
        .expect("the member's header");
    let h = &mut bytes[at..at + 512];
    h[100..108].copy_from_slice(&mode);
    h[148..156].fill(b' ');
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    bytes
}

#[test]
fn a_base256_mode_over_32_bits_is_refused_not_truncated() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("m.neff");
    // 2^32 in base-256: truncated to 32 bits it would read as mode 0.
    std::fs::write(
        &p,
        with_mode_field("info.json", [0x80, 0, 0, 1, 0, 0, 0, 0]),
    )
    .unwrap();
    let o = neff(&["ls", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("mode field: 4294967296 does not fit in 32 bits"),
        "{err}"
    );
    // 0o644 in base-256 is read.
    std::fs::write(
        &p,
        with_mode_field("info.json", [0x80, 0, 0, 0, 0, 0, 0x01, 0xA4]),
    )
    .unwrap();
    let json = neff_ok(&["ls", "--json", p.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v[0]["name"], "info.json");
}

/// A gzip NEFF holding members with these names (each a small JSON file).
fn neff_named(names: &[&str]) -> Vec<u8> {
    use neff::pack::{pack, PackEntry, PackOptions};
    let entries: Vec<PackEntry> = names
        .iter()
        .map(|n| PackEntry::file(n, &b"{}"[..], 0))
        .collect();
    let opts = PackOptions::default().mtime(Some(0));
    pack(&entries, &opts).unwrap()
}

#[test]
fn a_name_cannot_forge_a_line_or_reach_the_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("n.neff");
    std::fs::write(
        &p,
        neff_named(&[
            "ok.json\nfake.json",
            "red\x1b[31m.json",
            "back\\slash.json",
            "café.json",
        ]),
    )
    .unwrap();
    let out = String::from_utf8(neff_ok(&["ls", p.to_str().unwrap()])).unwrap();
    // Escaped as `tar tf` escapes them: one line per member.
    assert_eq!(
        out,
        "ok.json\\nfake.json\nred\\033[31m.json\nback\\\\slash.json\ncafé.json\n"
    );
    // JSON output is unchanged: it escapes by construction.
    let json: serde_json::Value =
        serde_json::from_slice(&neff_ok(&["ls", "--json", p.to_str().unwrap()])).unwrap();
    assert_eq!(json[0]["name"], "ok.json\nfake.json");
}

#[test]
fn a_refusal_stays_one_line_whatever_the_path_holds() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("bad\nneff: forged: line\x1b[2J.neff");
    std::fs::write(&p, b"short").unwrap();
    let o = neff(&["ls", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("bad\\nneff: forged: line\\033[2J.neff: "),
        "{err}"
    );
    let o = neff(&["verify", p.to_str().unwrap()]);
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.starts_with("FAIL "), "{out}");
}

#[test]
fn a_scan_root_that_does_not_exist_is_reported_and_the_others_scanned_exit_3() {
    let zoo = fixture("fixtures/acc");
    let o = neff(&["scan", "--json", "--no-progress", "/nonexistent/zoo", &zoo]);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.starts_with("neff: /nonexistent/zoo: "), "{err}");
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        out.lines().filter(|l| l.contains("\"ok\":true")).count() > 10,
        "{out}"
    );
    // Without it the same scan exits 0.
    let o = neff(&["scan", "--json", "--no-progress", &zoo]);
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn verify_and_ls_of_a_missing_file_exit_alike() {
    let ls = neff(&["ls", "/nonexistent/x.neff"]);
    let verify = neff(&["verify", "/nonexistent/x.neff"]);
    assert_eq!(ls.status.code(), Some(3));
    assert_eq!(verify.status.code(), ls.status.code());
    // A refusal beside it stays 1 alone, and the worst code wins.
    let bad = fixture("README.md");
    assert_eq!(neff(&["verify", &bad]).status.code(), Some(1));
    let both = neff(&["verify", &bad, "/nonexistent/x.neff"]);
    assert_eq!(both.status.code(), Some(3));
}

#[test]
fn diff_of_a_neff_with_itself_is_0_and_with_a_non_neff_is_trouble_not_differ() {
    let f = fixture("fixtures/acc/kelf-0-gz.neff");
    assert_eq!(neff(&["diff", &f, &f]).status.code(), Some(0));
    let o = neff(&["diff", &f, &fixture("README.md")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a NEFF"));
}

#[test]
fn the_debug_log_names_the_inflate_path_under_vv_or_rust_log_and_is_silent_otherwise() {
    let f = fixture("fixtures/acc/kelf-0-gz.neff");
    let quiet = neff(&["ls", &f]);
    assert_eq!(quiet.status.code(), Some(0));
    assert!(
        quiet.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&quiet.stderr)
    );
    let vv = neff(&["-vv", "ls", &f]);
    let err = String::from_utf8_lossy(&vv.stderr);
    assert!(
        err.contains("neff: info: gzip payload of") && err.contains("inflated whole"),
        "{err}"
    );
    assert_eq!(vv.stdout, quiet.stdout, "the log goes to stderr only");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_neff"))
        .args(["ls", &f])
        .env("RUST_LOG", "neff=debug")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("neff: info: gzip payload of"));
}

#[test]
fn one_worker_count_for_every_command_that_fans_out() {
    let zoo = fixture("fixtures/acc");
    let all = neff(&["scan", "--json", "--no-progress", "--sorted", &zoo]);
    for j in ["1", "2", "3"] {
        let o = neff(&["scan", "-j", j, "--json", "--no-progress", "--sorted", &zoo]);
        assert_eq!(o.status.code(), Some(0));
        assert_eq!(o.stdout, all.stdout, "scan -j {j}");
        let o = neff(&[
            "--threads",
            j,
            "ls",
            &fixture("fixtures/acc/kelf-0-gz.neff"),
        ]);
        assert_eq!(o.status.code(), Some(0), "ls --threads {j}");
    }
    // A worker count that is not a number is a usage error.
    assert_eq!(neff(&["-j", "x", "ls", &zoo]).status.code(), Some(2));
}

/// `neff ARGS` with `input` on its standard input.
fn neff_stdin(args: &[&str], input: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_neff"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn scan_reads_a_list_of_paths_from_a_file_or_stdin_one_a_line_or_nul_separated() {
    use std::os::unix::ffi::OsStrExt;
    let three = ["kelf-0-gz.neff", "cc-none-gz.neff", "def-var-list-gz.neff"]
        .map(|f| fixture(&format!("fixtures/acc/{f}")));
    let lines = three.join("\n") + "\n";
    let records = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).lines().count();
    for args in [&["scan", "--files-from", "-"][..], &["scan", "-"][..]] {
        let mut args = args.to_vec();
        args.extend(["--json", "--no-progress"]);
        let o = neff_stdin(&args, lines.as_bytes());
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        assert_eq!(records(&o), 3, "{args:?}");
    }
    // A list file, NUL-separated, holding a name with a newline and one
    // that is not UTF-8 (copies of a fixture), and one that does not exist.
    let tmp = tempfile::tempdir().unwrap();
    let odd = tmp.path().join("two\nlines.neff");
    let latin = tmp
        .path()
        .join(std::ffi::OsStr::from_bytes(b"caf\xe9.neff"));
    for p in [&odd, &latin] {
        std::fs::copy(&three[0], p).unwrap();
    }
    let missing = tmp.path().join("missing.neff");
    let mut list = Vec::new();
    for p in [&odd, &latin, &missing] {
        list.extend_from_slice(p.as_os_str().as_bytes());
        list.push(0);
    }
    let list_file = tmp.path().join("list");
    std::fs::write(&list_file, &list).unwrap();
    let o = neff(&[
        "scan",
        "--files-from",
        list_file.to_str().unwrap(),
        "-0",
        "--json",
        "--no-progress",
    ]);
    // The missing one is a record of its own and an input that could not
    // be read: exit 3, the others scanned.
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(records(&o), 3);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out.matches("\"ok\":true").count(), 2, "{out}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing.neff"));
    // No path and no list: a usage error.
    assert_eq!(neff(&["scan"]).status.code(), Some(2));
}

#[test]
fn a_path_list_line_longer_than_path_max_is_one_line_naming_the_list_never_read_on() {
    use std::io::Write;
    let good = fixture("fixtures/acc/kelf-0-gz.neff");
    // In a file: the line is named, nothing is scanned.
    let tmp = tempfile::tempdir().unwrap();
    let list = tmp.path().join("list");
    let long = "a".repeat(neff::scan::LIST_LINE_MAX + 1);
    std::fs::write(&list, format!("{good}\n{long}\n")).unwrap();
    let o = neff(&["scan", "--json", "--files-from", list.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    assert!(o.stdout.is_empty());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "neff: {}: entry 2 of the list is longer than",
            list.display()
        )),
        "{err}"
    );
    // A line of the longest length is a path (one that does not exist).
    let longest = "b".repeat(neff::scan::LIST_LINE_MAX);
    std::fs::write(&list, format!("{good}\r\n{longest}\r\n")).unwrap();
    let o = neff(&["scan", "--json", "--files-from", list.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 2);
    // On standard input, a line with no end: refused once past the
    // limit, the rest of the stream never read (the writer finds the
    // pipe closed long before its 256 MiB).
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_neff"))
        .args(["scan", "--json", "--files-from", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let chunk = vec![b'x'; 1 << 20];
        let mut sent = 0usize;
        while sent < 256 << 20 && stdin.write_all(&chunk).is_ok() {
            sent += chunk.len();
        }
        sent
    });
    let o = child.wait_with_output().unwrap();
    let sent = writer.join().unwrap();
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("neff: <stdin>: entry 1 of the list is longer than"),
        "{err}"
    );
    assert!(sent < 64 << 20, "{sent} bytes were read");
}

/// Rows of CSV text, as Python's csv module reads them (a reader nobody
/// here wrote), as JSON: a list of {column: text}.
fn csv_rows(text: &[u8]) -> Vec<serde_json::Map<String, serde_json::Value>> {
    use std::io::Write;
    let mut child = std::process::Command::new("python3")
        .args([
            "-c",
            "import csv, json, sys; print(json.dumps(list(csv.DictReader(sys.stdin))))",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(text).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every `--format` of a listing command gives the same rows: json (one
/// array), ndjson (a line each), csv (a header, then a line each).
fn formats_agree(args: &[&str]) -> usize {
    let run = |f: &str| {
        let o = neff(&[args, &["--format", f]].concat());
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{args:?} {f}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        o.stdout
    };
    let nd: Vec<serde_json::Value> = String::from_utf8(run("ndjson"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let json: Vec<serde_json::Value> = serde_json::from_slice(&run("json")).unwrap();
    let sorted = |mut v: Vec<serde_json::Value>| {
        v.sort_by_key(|x| x.to_string());
        v
    };
    assert_eq!(
        sorted(json),
        sorted(nd.clone()),
        "{args:?}: json and ndjson"
    );
    let csv = csv_rows(&run("csv"));
    assert_eq!(csv.len(), nd.len(), "{args:?}: csv rows");
    for row in &csv {
        let key = if row.contains_key("path") {
            "path"
        } else {
            "name"
        };
        let same = nd.iter().find(|r| r[key] == row[key]).unwrap();
        for (k, v) in row {
            let want = match &same[k] {
                serde_json::Value::Null => String::new(),
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let got = v.as_str().unwrap();
            // Nested values are JSON in a cell: compare them parsed.
            if got.starts_with('{') || got.starts_with('[') {
                assert_eq!(
                    serde_json::from_str::<serde_json::Value>(got).unwrap(),
                    same[k]
                );
            } else {
                assert_eq!(got, want, "{args:?}: {k}");
            }
        }
    }
    nd.len()
}

#[test]
fn listing_commands_print_the_same_rows_in_every_format() {
    let acc = root().join("fixtures/acc");
    assert_eq!(
        formats_agree(&["scan", "--no-progress", acc.to_str().unwrap()]),
        37
    );
    let f = root().join("fixtures/interop/gnutar-pax-gz.neff");
    assert!(formats_agree(&["ls", "--all", f.to_str().unwrap()]) > 5);
    let tmp = tempfile::tempdir().unwrap();
    crate::cache::cache(tmp.path());
    let root = tmp.path().to_str().unwrap();
    assert_eq!(formats_agree(&["cache", "status", root]), 48);
    // An age in the rows ("changed 1s ago") would tick between runs.
    assert_eq!(
        formats_agree(&["cache", "prune", root, "--failed", "--min-age", "0s"]),
        8
    );
    // --json keeps its meaning; with --format it is a usage error.
    let o = neff(&["ls", "--json", "--format", "csv", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
}

/// CSV keeps a name's bytes as they are (RFC 4180: quoted where a CR, LF,
/// comma or quote needs it, CRLF after each record); the table escapes
/// them for a terminal (docs/CLI.md, "What each format promises").
#[test]
fn csv_keeps_esc_and_cr_in_names_as_they_are_and_the_table_escapes_them() {
    use neff::pack::{pack, PackEntry, PackOptions};
    let names = ["esc\u{1b}[31mred.bin", "cr\rreturn.bin", "q\"uo,te.bin"];
    let entries: Vec<PackEntry> = names
        .iter()
        .map(|n| PackEntry::file(n, b"x".to_vec(), 0))
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("names.neff");
    std::fs::write(&f, pack(&entries, &PackOptions::default()).unwrap()).unwrap();
    let f = f.to_str().unwrap();
    let csv = neff_ok(&["ls", "--format", "csv", f]);
    // A reader nobody here wrote gets every name back, byte for byte.
    let rows = csv_rows(&csv);
    let mut got: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    got.sort();
    let mut want = names.to_vec();
    want.sort();
    assert_eq!(got, want);
    // Raw ESC and CR in the CSV, and every record ended by CRLF.
    assert!(csv.windows(2).any(|w| w == b"c\x1b"));
    assert!(csv.windows(3).any(|w| w == b"cr\r"));
    assert!(csv.ends_with(b"\r\n"));
    let text = String::from_utf8_lossy(&csv);
    assert!(
        text.starts_with("name,kind,size,offset,mtime,mode,link\r\n"),
        "{text}"
    );
    assert!(text.contains("\"cr\rreturn.bin\""), "{text}");
    // The table: no control character reaches the terminal.
    let table = neff_ok(&["ls", f]);
    let table = String::from_utf8(table).unwrap();
    assert!(
        !table.chars().any(|c| c.is_control() && c != '\n'),
        "{table:?}"
    );
    assert!(table.contains(r"esc\033[31mred.bin"), "{table}");
    assert!(table.contains(r"cr\rreturn.bin"), "{table}");
}
