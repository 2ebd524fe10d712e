//! `neff cache sync SRC DST` between directories: every `ok` entry copied
//! byte for byte and nothing else (no entry of another state, no lock);
//! a second sync copies nothing; an entry the destination holds is never
//! overwritten (a conflict when it differs, left alone when locked); a
//! sync killed at any point leaves nothing but `ok` entries under entry
//! names, and the next one cleans up and finishes; a reader polling the
//! destination never sees a half entry; a dry run writes nothing; no link
//! at the destination is followed (docs/CLI.md, "neff cache sync").

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::*;

const V12: &str = "2.12.54.0+f631c2365";

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn ndjson(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn sync(src: &Path, dst: &Path, more: &[&str]) -> Output {
    let mut args = vec!["cache", "sync", s(src), s(dst), "--json"];
    args.extend_from_slice(more);
    neff(&args)
}

fn key(c: char) -> String {
    std::iter::repeat_n(c, 32).collect()
}

/// A wrapper cache of every state in two 2.15 builds (crate::cache), a
/// 2.12 entry (no model.done) with a nested file and a lock, and a vLLM
/// cache beside it: one entry ok (with neff_size), one locked beside it,
/// one unmarked. Returns the two roots.
pub(crate) fn caches(top: &Path) -> (PathBuf, PathBuf) {
    let wrapper = top.join("src");
    crate::cache::cache(&wrapper);
    let good = good_neff();
    let old = wrapper.join(format!("neuronxcc-{V12}/MODULE_9+9"));
    put(&old, "model.neff", &good);
    put(&old, "compile_flags.txt", b"-O1");
    put(&old, "sub/deeper/notes.txt", b"nested");
    put(&old, "sub/model.hlo_module.pb.lock", b"");
    let vllm = top.join("vllm/neuron/compile_cache");
    let done = vllm.join(key('a'));
    put(&done, "graph.hlo", &[1; 100]);
    put(&done, &format!("graph_{}.neff", key('a')), &good);
    put(&done, ".artifact_metadata_v0.json", b"{}");
    put(
        &done,
        ".compilation_complete",
        format!("completed:1712.5\nneff_size:{}\n", good.len()).as_bytes(),
    );
    let running = vllm.join(key('b'));
    put(&running, "graph.hlo", &[1; 100]);
    put(
        &vllm,
        &format!(".{}.compilation_metadata.lock", key('b')),
        b"",
    );
    put(
        &vllm,
        &format!(".{}.compilation_metadata.lock", key('a')),
        b"",
    );
    let unmarked = vllm.join(key('c'));
    put(&unmarked, "graph_c.neff", &good);
    (wrapper, vllm)
}

/// Every file under `dir` (no link followed) by its path below it, with
/// its bytes; `*.lock` files left out when `locks` is false.
pub(crate) fn tree(dir: &Path, locks: bool) -> BTreeMap<PathBuf, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| !e.file_type().is_dir())
        .filter(|e| locks || !e.file_name().to_string_lossy().ends_with(".lock"))
        .map(|e| {
            let rel = e.path().strip_prefix(dir).unwrap().to_path_buf();
            (rel, std::fs::read(e.path()).unwrap_or_default())
        })
        .collect()
}

/// The `cache status` records of `root`, by path below it.
pub(crate) fn states(root: &Path) -> BTreeMap<PathBuf, String> {
    let o = neff(&["cache", "status", s(root), "--json"]);
    ndjson(&o.stdout)
        .iter()
        .map(|r| {
            let p = PathBuf::from(r["path"].as_str().unwrap());
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            (rel, r["state"].as_str().unwrap().to_string())
        })
        .collect()
}

#[test]
fn every_ok_entry_is_copied_byte_for_byte_and_nothing_else_and_a_second_sync_copies_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (wrapper, vllm) = caches(tmp.path());
    for src in [&wrapper, &vllm] {
        let dst = tmp.path().join("dst").join(src.file_name().unwrap());
        let o = sync(src, &dst, &[]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let records = ndjson(&o.stdout);
        let ok: Vec<PathBuf> = states(src)
            .into_iter()
            .filter(|(_, st)| st == "ok")
            .map(|(p, _)| p)
            .collect();
        assert!(!ok.is_empty());
        assert_eq!(records.len(), ok.len(), "{records:?}");
        assert!(
            records.iter().all(|r| r["action"] == "copied"),
            "{records:?}"
        );
        // The destination holds exactly the ok entries, all ok.
        let got = states(&dst);
        assert_eq!(got.keys().cloned().collect::<Vec<_>>(), ok);
        assert!(got.values().all(|st| st == "ok"), "{got:?}");
        // Byte for byte: every file of the ok entries but their locks.
        for rel in &ok {
            assert_eq!(
                tree(&dst.join(rel), true),
                tree(&src.join(rel), false),
                "{rel:?}"
            );
        }
        // Nothing else: no lock (vLLM's beside the entry neither), no
        // staging left.
        let all = tree(&dst, true);
        assert!(
            all.keys().all(|p| !p.to_string_lossy().contains(".lock")),
            "{all:?}"
        );
        assert!(all
            .keys()
            .all(|p| !p.to_string_lossy().contains(".neff-sync")));
        // Again: all skipped, nothing written.
        let before = tree(&dst, true);
        let o = sync(src, &dst, &[]);
        assert_eq!(o.status.code(), Some(0));
        let again = ndjson(&o.stdout);
        assert_eq!(again.len(), ok.len());
        assert!(again.iter().all(|r| r["action"] == "skipped"), "{again:?}");
        assert_eq!(tree(&dst, true), before);
    }
    // The summary a person reads.
    let dst = tmp.path().join("dst/src");
    let o = neff(&["cache", "sync", s(&wrapper), s(&dst)]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("0 entries, 0 B copied; 9 entries"), "{text}");
    assert!(text.contains("40 not ok at the source"), "{text}");
}

#[test]
fn filters_select_by_version_name_and_time() {
    let tmp = tempfile::tempdir().unwrap();
    let (wrapper, _) = caches(tmp.path());
    let dst = tmp.path().join("dst");
    let picked = |more: &[&str]| -> Vec<String> {
        let o = sync(&wrapper, &dst, &[&["--dry-run"], more].concat());
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        ndjson(&o.stdout)
            .iter()
            .map(|r| {
                assert_eq!(r["action"], "copy");
                r["compiler"].as_str().unwrap().to_string()
            })
            .collect()
    };
    assert_eq!(picked(&["--version", "2.12"]), vec![V12.to_string()]);
    assert_eq!(picked(&["--version", "2.15"]).len(), 8);
    assert_eq!(picked(&["--version", "2.15.100.0+2d4f85be"]).len(), 4);
    assert_eq!(picked(&["--glob", "MODULE_9*"]), vec![V12.to_string()]);
    assert_eq!(
        picked(&["--glob", "MODULE_?0?+*", "--glob", "MODULE_9+9"]).len(),
        9
    );
    assert_eq!(picked(&["--since", "1h"]).len(), 9);
    assert!(picked(&["--since", "2999-01-01T00:00:00Z"]).is_empty());
    let o = neff(&[
        "cache",
        "sync",
        s(&wrapper),
        s(&dst),
        "--since",
        "yesterday-ish",
    ]);
    assert_eq!(o.status.code(), Some(2));
    // A dry run wrote nothing: not even the destination's root.
    assert!(!dst.exists());
    // A cache onto itself, a side that cannot be written or listed,
    // --since of the hub (which lists no times): usage errors, one line
    // saying why, nothing read or written.
    let same = format!("{}/", s(&wrapper));
    for (from, to, more, why) in [
        (s(&wrapper), same.as_str(), "", "the same cache"),
        ("s3://b/c", "S3://b/c/", "", "the same cache"),
        (
            "hf://org/r/c",
            "hf://models/org/r@main/c",
            "",
            "the same cache",
        ),
        (s(&wrapper), "hf://org/repo", "", "never written"),
        (s(&wrapper), "https://h/c", "", "cannot be written"),
        ("http://h/c", s(&dst), "", "cannot be listed"),
        ("hf://org/repo", s(&dst), "--since=1h", "no times"),
        (
            "s3://b/c/neuronxcc-2.15.0.0+ab/",
            s(&dst),
            "",
            "SRC is the compiler version",
        ),
        (
            s(&wrapper),
            "/tmp/c/neuronxcc-2.15.0.0+ab",
            "",
            "DST is the compiler version",
        ),
    ] {
        let mut args = vec!["cache", "sync", from, to];
        if !more.is_empty() {
            args.push(more);
        }
        let o = neff(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{from} {to}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(why), "{from} {to}: {err}");
    }
    assert!(!dst.exists());
    // A destination that cannot be made: one line naming it, exit 3.
    let file = tmp.path().join("a-file");
    std::fs::write(&file, b"").unwrap();
    let o = neff(&["cache", "sync", s(&wrapper), s(&file.join("cache"))]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("the destination {}/cache: ", s(&file))),
        "{err}"
    );
}

#[test]
fn an_entry_the_destination_holds_is_never_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    let (wrapper, _) = caches(tmp.path());
    let dst = tmp.path().join("dst");
    let v = crate::cache::VERSIONS[0];
    let rel = |m: &str| PathBuf::from(format!("neuronxcc-{v}/{m}"));
    // The same entry: skipped. One whose NEFF differs in a byte: a
    // conflict. One with a file more: a conflict. One locked: left alone.
    // One failed: a conflict.
    let good = good_neff();
    let same = dst.join(rel("MODULE_000+00000000"));
    for f in ["model.neff", "model.done", "compile_flags.json"] {
        put(
            &same,
            f,
            &std::fs::read(wrapper.join(rel("MODULE_000+00000000")).join(f)).unwrap(),
        );
    }
    let other = dst.join(rel("MODULE_001+00000001"));
    let mut flipped =
        std::fs::read(wrapper.join(rel("MODULE_001+00000001/compile_flags.json"))).unwrap();
    flipped[2] ^= 1;
    put(&other, "model.neff", &good);
    put(&other, "model.done", b"");
    put(&other, "compile_flags.json", &flipped);
    let more = dst.join(rel("MODULE_002+00000002"));
    put(&more, "model.neff", &good);
    put(&more, "model.done", b"");
    put(&more, "compile_flags.json", b"[\"-O2\"]");
    put(&more, "extra.txt", b"x");
    let locked = dst.join(rel("MODULE_003+00000003"));
    put(&locked, "model.hlo_module.pb.lock", b"");
    let before = tree(&dst, true);
    let o = sync(&wrapper, &dst, &["--version", v]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let by: BTreeMap<String, Value> = ndjson(&o.stdout)
        .into_iter()
        .map(|r| (r["dest"].as_str().unwrap().to_string(), r))
        .collect();
    let action = |d: &Path| by[s(d)]["action"].as_str().unwrap().to_string();
    assert_eq!(action(&same), "skipped");
    assert_eq!(action(&other), "conflict");
    assert!(by[s(&other)]["reason"]
        .as_str()
        .unwrap()
        .contains("compile_flags.json differs"));
    assert_eq!(action(&more), "conflict");
    assert_eq!(action(&locked), "locked");
    // Untouched, every byte.
    let after = tree(&dst, true);
    for (p, b) in &before {
        assert_eq!(after.get(p), Some(b), "{p:?}");
    }
    let text = String::from_utf8_lossy(
        &neff(&["cache", "sync", s(&wrapper), s(&dst), "--version", v]).stdout,
    )
    .into_owned();
    assert!(text.contains("2 conflicts; 1 left"), "{text}");
}

#[test]
fn links_at_the_destination_are_never_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let (wrapper, _) = caches(tmp.path());
    let dst = tmp.path().join("dst");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(&dst).unwrap();
    let v = crate::cache::VERSIONS[0];
    // A version directory that is a link, and an entry name that is one.
    std::os::unix::fs::symlink(&outside, dst.join(format!("neuronxcc-{v}"))).unwrap();
    let v2 = crate::cache::VERSIONS[1];
    std::fs::create_dir_all(dst.join(format!("neuronxcc-{v2}"))).unwrap();
    std::os::unix::fs::symlink(
        &outside,
        dst.join(format!("neuronxcc-{v2}/MODULE_100+00000000")),
    )
    .unwrap();
    let o = sync(&wrapper, &dst, &[]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = ndjson(&o.stdout);
    let of = |a: &str| r.iter().filter(|x| x["action"] == a).count();
    assert_eq!(
        (of("left"), of("conflict"), of("copied")),
        (4, 1, 4),
        "{r:?}"
    );
    assert!(r
        .iter()
        .filter(|x| x["action"] == "left")
        .all(|x| x["reason"].as_str().unwrap().contains("not followed")));
    assert!(
        std::fs::read_dir(&outside).unwrap().next().is_none(),
        "wrote through a link"
    );
}

#[test]
fn a_stale_staging_copy_is_never_an_entry_and_the_next_sync_removes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (wrapper, vllm) = caches(tmp.path());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let host = host.trim();
    let dead = 999_999_999u32;
    for src in [&wrapper, &vllm] {
        let dst = tmp.path().join("dst").join(src.file_name().unwrap());
        // A killed sync's half copy of an entry, and a live one's.
        let (under, name) = match src == &wrapper {
            true => (
                dst.join(format!("neuronxcc-{V12}")),
                "MODULE_9+9".to_string(),
            ),
            false => (dst.clone(), key('a')),
        };
        let stale = under.join(format!(".neff-sync.{name}.{dead}@{host}"));
        let live = under.join(format!(".neff-sync.{name}.{}@{host}", std::process::id()));
        for d in [&stale, &live] {
            put(d, "model.neff", b"half a NEFF");
            put(d, ".compilation_complete", b"neff_size:99\n");
            put(d, "graph.hlo", b"x");
        }
        // A status sees no entry in them: notes only.
        let o = neff(&["cache", "status", s(&dst), "--json"]);
        assert!(
            ndjson(&o.stdout).is_empty(),
            "{}",
            String::from_utf8_lossy(&o.stdout)
        );
        let o = neff(&["cache", "status", s(&dst)]);
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains("neff cache sync"), "{text}");
        let o = sync(src, &dst, &[]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!stale.exists(), "the stale staging copy stayed");
        assert!(live.exists(), "a live sync's staging copy was removed");
        assert!(states(&dst).values().all(|st| st == "ok"));
        assert!(
            states(&dst).contains_key(Path::new(&name))
                || states(&dst).contains_key(&Path::new(&format!("neuronxcc-{V12}")).join(&name))
        );
    }
}

/// A raw NEFF of `mib` MiB of noise.
fn big_neff(mib: usize, seed: u64) -> Vec<u8> {
    use neff::pack::{pack, PackEntry, PackOptions};
    let mut entries = vec![PackEntry::file("neff.json", br#"{"tvm":[]}"#.to_vec(), 0)];
    for i in 0..mib {
        entries.push(PackEntry::file(
            &format!("sg00/w{i:03}.bin"),
            noise(1 << 20, seed * 1000 + i as u64),
            0,
        ));
    }
    pack(
        &entries,
        &PackOptions::default().no_gzip(true).mtime(Some(0)),
    )
    .unwrap()
}

/// A cache of `n` entries, each a large NEFF.
pub(crate) fn big_cache(root: &Path, n: usize, mib: usize) {
    for i in 0..n {
        let e = root.join(format!("neuronxcc-2.20.0.0+abcdef01/MODULE_{i}+{i:04x}"));
        put(&e, "model.neff", &big_neff(mib, i as u64 + 1));
        put(&e, "model.done", b"");
    }
}

#[test]
fn a_reader_polling_the_destination_never_sees_a_half_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    big_cache(&src, 4, 24);
    let dst = tmp.path().join("dst");
    let stop = AtomicBool::new(false);
    let seen = std::thread::scope(|sc| {
        let poll = sc.spawn(|| {
            let mut polls = 0;
            let mut entries = 0;
            while !stop.load(Ordering::Relaxed) {
                if let Ok(st) = neff::cache::status(&dst) {
                    for e in &st.entries {
                        assert_eq!(e.state, neff::cache::State::Ok, "{e:?}");
                    }
                    entries += st.entries.len();
                    polls += 1;
                }
            }
            (polls, entries)
        });
        let o = sync(&src, &dst, &[]);
        stop.store(true, Ordering::Relaxed);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        poll.join().unwrap()
    });
    assert!(seen.0 > 0, "the reader never read the destination");
    assert_eq!(tree(&dst, true), tree(&src, true));
}

#[test]
fn a_sync_killed_mid_copy_leaves_only_ok_entries_and_the_next_one_finishes() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    big_cache(&src, 3, 48);
    let dst = tmp.path().join("dst");
    let mut child = Command::new(env!("CARGO_BIN_EXE_neff"))
        .args(["cache", "sync", s(&src), s(&dst), "--io-depth", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once a staging copy holds part of a NEFF.
    let deadline = Instant::now() + Duration::from_secs(60);
    let staged = |d: &Path| {
        walkdir::WalkDir::new(d)
            .into_iter()
            .filter_map(|e| e.ok())
            .any(|e| {
                e.path().to_string_lossy().contains(".neff-sync.") && e.file_name() == "model.neff"
            })
    };
    while !staged(&dst) {
        assert!(Instant::now() < deadline, "no staging copy appeared");
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    child.kill().unwrap();
    let killed = child.wait().unwrap().code().is_none();
    // Killed while it wrote a NEFF of 48 MiB: its staging copy stays.
    let stage = walkdir::WalkDir::new(&dst)
        .into_iter()
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().starts_with(".neff-sync."));
    assert!(!killed || stage, "killed, and no staging copy left");
    assert!(
        states(&dst).values().all(|st| st == "ok"),
        "{:?}",
        states(&dst)
    );
    let o = sync(&src, &dst, &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(states(&dst).len(), 3);
    assert_eq!(
        tree(&dst, true),
        tree(&src, true),
        "a staging copy stayed, or an entry differs"
    );
}

#[test]
fn the_library_answers_as_the_binary() {
    let tmp = tempfile::tempdir().unwrap();
    let (wrapper, _) = caches(tmp.path());
    let dst = tmp.path().join("dst");
    let opts = neff::cache::SyncOptions::default()
        .dry_run(true)
        .glob("MODULE_9*");
    let done = neff::cache::sync(&wrapper, &dst, &opts).unwrap();
    assert_eq!(done.entries.len(), 1);
    assert_eq!(done.entries[0].action, neff::cache::SyncAction::Copy);
    // Entries not `ok` by their files (32); the 8 whose NEFF is cut short
    // under its marker are found so once read, and the pattern leaves
    // them unread.
    assert_eq!(done.passed_over, 32);
    assert!(!dst.exists());
    let done = neff::cache::sync(
        &wrapper,
        &dst,
        &neff::cache::SyncOptions::default().io_depth(2),
    )
    .unwrap();
    assert_eq!(done.count(neff::cache::SyncAction::Copied).0, 9);
    assert!(!done.has_left() && !done.has_io_error());
    let e = neff::cache::sync(&tmp.path().join("nothing"), &dst, &opts).unwrap_err();
    assert_eq!(e.kind(), neff::ErrorKind::Io);
    // A compiler version's directory into one of the same version: its
    // entries directly under it, as the compiler looks them up.
    let v = format!("neuronxcc-{V12}");
    let one = tmp.path().join("one").join(&v);
    let all = neff::cache::SyncOptions::default();
    let done = neff::cache::sync(&wrapper.join(&v), &one, &all).unwrap();
    assert_eq!(done.count(neff::cache::SyncAction::Copied).0, 1);
    assert_eq!(
        tree(&one.join("MODULE_9+9"), true),
        tree(&wrapper.join(&v).join("MODULE_9+9"), false)
    );
}

#[test]
fn an_entry_vllm_compiles_at_the_destination_is_left_alone_until_its_lock_is_let_go() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, vllm) = caches(tmp.path());
    let dst = tmp.path().join("dst");
    // vLLM holds the lock beside the name of the entry it compiles (its
    // directory not made yet); a lock file left by a finished compile is
    // let go, and says nothing.
    let held = dst.join(format!(".{}.compilation_metadata.lock", key('a')));
    put(
        &dst,
        &format!(".{}.compilation_metadata.lock", key('a')),
        b"",
    );
    put(
        &dst,
        &format!(".{}.compilation_metadata.lock", key('d')),
        b"",
    );
    let lock = std::fs::File::open(&held).unwrap();
    lock.lock().unwrap();
    for dry in [true, false] {
        let o = sync(&vllm, &dst, if dry { &["--dry-run"] } else { &[] });
        assert_eq!(
            o.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let r = ndjson(&o.stdout);
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(r[0]["action"], "locked");
        assert!(r[0]["reason"]
            .as_str()
            .unwrap()
            .contains("held by a live process"));
        assert!(!dst.join(key('a')).exists());
    }
    drop(lock);
    let o = sync(&vllm, &dst, &[]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(ndjson(&o.stdout)[0]["action"], "copied");
    assert_eq!(
        tree(&dst.join(key('a')), true),
        tree(&vllm.join(key('a')), true)
    );
}

#[test]
fn a_remembered_digest_never_hides_a_file_changed_since() {
    // A second sync remembers each file's digest (under XDG_CACHE_HOME),
    // so a third reads nothing to find the entries the same; a file then
    // rewritten at the destination with other bytes of the same size and
    // time is still found to differ.
    let tmp = tempfile::tempdir().unwrap();
    let (wrapper, _) = caches(tmp.path());
    let dst = tmp.path().join("dst");
    let xdg = tmp.path().join("xdg");
    let v = crate::cache::VERSIONS[0];
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_neff"))
            .args([
                "cache",
                "sync",
                s(&wrapper),
                s(&dst),
                "--json",
                "--version",
                v,
            ])
            .env("XDG_CACHE_HOME", &xdg)
            .output()
            .unwrap()
    };
    let actions = |o: &Output| -> Vec<String> {
        ndjson(&o.stdout)
            .iter()
            .map(|r| r["action"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(actions(&run()).iter().all(|a| a == "copied"));
    // Both sides hashed, and remembered once they have settled.
    std::thread::sleep(Duration::from_millis(1100));
    let second = run();
    assert!(actions(&second).iter().all(|a| a == "skipped"));
    let memo = std::fs::read_to_string(xdg.join("neff/sync-digests")).unwrap();
    let copied = tree(&dst, false).len();
    assert!(memo.lines().count() > 2 * copied, "{memo}");
    assert!(actions(&run()).iter().all(|a| a == "skipped"));
    let f = dst.join(format!(
        "neuronxcc-{v}/MODULE_000+00000000/compile_flags.json"
    ));
    let t = std::fs::metadata(&f).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(&f).unwrap();
    bytes[2] ^= 1;
    std::fs::write(&f, &bytes).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&f)
        .unwrap()
        .set_modified(t)
        .unwrap();
    let o = run();
    let conflicts: Vec<Value> = ndjson(&o.stdout)
        .into_iter()
        .filter(|r| r["action"] == "conflict")
        .collect();
    assert_eq!(conflicts.len(), 1, "{conflicts:?}");
    assert!(conflicts[0]["reason"]
        .as_str()
        .unwrap()
        .contains("compile_flags.json differs"));
}
