//! Compile caches of every neuronxcc era and the shapes a shared cache
//! holds (placeholder NEFFs, another user's NEFF, names that are not
//! UTF-8, a log that is a link or a FIFO), judged and pruned through the
//! `neff` binary: every successful compile `ok`, every failed one
//! `failed`, a prune with every selector leaves every good compile byte
//! for byte and reads or removes nothing outside an entry, and records
//! carry no relative time (docs/GUIDE.md, "Compile caches of every
//! compiler").

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, FileTimes};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use serde_json::Value;

use crate::common::*;

const V12: &str = "2.12.54.0+f631c2365";
const V13: &str = "2.13.66.0+6dfecc895";
const V15: &str = "2.15.128.0+56dc5a86";
const V20: &str = "2.20.0.0+abcdef01";
/// What the linked log points at: a secret outside the cache.
const SECRET: &str = "aws_secret_access_key = ERROR wJalrXUtnFEMI-SECRET";

/// One entry made: its directory, the state it must be judged in, and
/// whether it is a successful compile a prune must keep.
struct Made {
    dir: PathBuf,
    state: &'static str,
    good: bool,
}

/// Sets a file's times to `ago` in the past (its access time `read_ago`).
fn age(p: &Path, ago: Duration, read_ago: Duration) {
    let now = SystemTime::now();
    let f = File::options().write(true).open(p).unwrap();
    f.set_times(
        FileTimes::new()
            .set_modified(now - ago)
            .set_accessed(now - read_ago),
    )
    .unwrap();
}

const TWO_DAYS: Duration = Duration::from_secs(2 * 86_400);
const FAILED_LOG: &[u8] =
    b"Failed compilation with ['neuronx-cc', 'compile']: 70\nERROR 70 [neuronx-cc]: bad op\n";

/// A cache holding entries of neuronxcc 2.12, 2.13, 2.15 and 2.20 (good,
/// failed, placeholders, locks, the hostile shapes), and a secret beside
/// it that a linked log points at.
fn every_era(root: &Path) -> Vec<Made> {
    let neff = good_neff();
    let mut made = Vec::new();
    let mut entry = |v: &str, name: &OsStr, state: &'static str, good: bool| {
        let dir = root.join(format!("neuronxcc-{v}")).join(name);
        fs::create_dir_all(&dir).unwrap();
        made.push(Made {
            dir: dir.clone(),
            state,
            good,
        });
        dir
    };
    let n = |s: &str| OsString::from(s);
    // 2.12: compile_flags.txt, model.hlo.pb, model.neff; no model.done.
    let d = entry(V12, &n("MODULE_1201+2c2d707e"), "ok", true);
    put(&d, "compile_flags.txt", b"--model-type=transformer");
    put(&d, "model.hlo.pb", &[7; 400]);
    put(&d, "model.neff", &neff);
    let d = entry(V12, &n("MODULE_1202+2c2d707e"), "failed", false);
    put(&d, "model.hlo.pb", &[7; 400]);
    put(&d, "model.log", FAILED_LOG);
    put(&d, "model.neff", b"dummy");
    let d = entry(V12, &n("MODULE_1203+2c2d707e"), "locked", false);
    put(&d, "model.hlo.pb", &[7; 400]);
    put(&d, "model.hlo.pb.lock", b"");
    // 2.13: model.hlo_module.pb; a lock left behind by a finished compile.
    let d = entry(V13, &n("MODULE_1301+2c2d707e"), "ok", true);
    put(&d, "compile_flags.txt", b"-O1");
    put(&d, "model.hlo_module.pb", &[8; 400]);
    put(&d, "model.neff", &neff);
    put(&d, "model.hlo_module.pb.lock", b"");
    age(&d.join("model.hlo_module.pb.lock"), TWO_DAYS, TWO_DAYS);
    let d = entry(V13, &n("MODULE_1302+2c2d707e"), "failed", false);
    put(&d, "model.hlo_module.pb", &[8; 400]);
    put(&d, "model.log", FAILED_LOG);
    // 2.15: model.done marks a finished compile.
    let marked = |d: &Path, bytes: &[u8], done: bool| {
        put(d, "compile_flags.json", b"[\"-O1\"]");
        put(d, "model.hlo_module.pb", &[9; 400]);
        put(d, "model.neff", bytes);
        if done {
            put(d, "model.done", b"");
        }
    };
    let d = entry(V15, &n("MODULE_1501+d41d8cd9"), "ok", true);
    marked(&d, &neff, true);
    let d = entry(V15, &n("MODULE_1502+d41d8cd9"), "ok", true);
    marked(&d, &neff, true);
    put(&d, "model.hlo_module.pb.lock", b"");
    age(&d.join("model.hlo_module.pb.lock"), TWO_DAYS, TWO_DAYS);
    let d = entry(V15, &n("MODULE_1503+d41d8cd9"), "failed", false);
    put(&d, "model.log", FAILED_LOG);
    let d = entry(V15, &n("MODULE_1504+d41d8cd9"), "failed", false);
    put(&d, "model.log", FAILED_LOG);
    put(&d, "model.neff", b"dummy");
    let d = entry(V15, &n("MODULE_1505+d41d8cd9"), "incomplete", false);
    marked(&d, &neff[..2000], false);
    for f in ["model.neff", "model.hlo_module.pb", "compile_flags.json"] {
        age(&d.join(f), TWO_DAYS, TWO_DAYS);
    }
    let d = entry(V15, &n("MODULE_1506+d41d8cd9"), "corrupt", false);
    marked(&d, &neff[..1500], true);
    let d = entry(V15, &n("MODULE_1507+d41d8cd9"), "locked", false);
    put(&d, "model.hlo_module.pb", &[9; 400]);
    put(&d, "neuronxcc-abc/graph.lock", b"");
    let d = entry(V15, &n("MODULE_1508+d41d8cd9"), "unknown", false);
    std::os::unix::fs::symlink(root.join("../outside/credentials"), d.join("model.log")).unwrap();
    let d = entry(V15, &n("MODULE_1509+d41d8cd9"), "unreadable", false);
    rustix::fs::mknodat(
        rustix::fs::CWD,
        d.join("model.log"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    // Two names a lossy conversion makes one: the failed one goes, the
    // fresh good one stays.
    let d = entry(
        V15,
        &OsString::from_vec(b"MODULE_\xff+1".to_vec()),
        "failed",
        false,
    );
    put(&d, "model.log", FAILED_LOG);
    let d = entry(V15, &n("MODULE_\u{fffd}+1"), "ok", true);
    marked(&d, &neff, true);
    // A lock file beside the entries is not an entry, nor an error.
    put(
        &root.join(format!("neuronxcc-{V15}")),
        "MODULE_1501+d41d8cd9.lock",
        b"",
    );
    // 2.20: wrapped_neff.hlo beside the rest.
    let d = entry(V20, &n("MODULE_2001+d41d8cd9"), "ok", true);
    marked(&d, &neff, true);
    put(&d, "wrapped_neff.hlo", &[5; 300]);
    let d = entry(V20, &n("MODULE_2002+d41d8cd9"), "failed", false);
    put(&d, "model.log", FAILED_LOG);
    made
}

/// The bytes of every file under `dir`, by name: what "byte for byte"
/// compares.
fn contents(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v: Vec<_> = walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| (e.path().to_path_buf(), fs::read(e.path()).unwrap()))
        .collect();
    v.sort();
    v
}

/// The cache at a temporary root, with a secret outside it; as another
/// user (nobody) where this runs as root, with one NEFF only root may
/// read.
struct Cache {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    secret: PathBuf,
    made: Vec<Made>,
    /// Run the binary as nobody (the test runs as root).
    other: bool,
}

impl Cache {
    fn new() -> Cache {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("cache");
        let outside = tmp.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        let secret = outside.join("credentials");
        fs::write(&secret, SECRET).unwrap();
        let mut made = every_era(&root);
        let other = libc_euid_is_root() && have("setpriv");
        if other {
            // Everything nobody's, but one entry's NEFF: root's, 0600.
            for e in walkdir::WalkDir::new(tmp.path()) {
                let e = e.unwrap();
                std::os::unix::fs::lchown(e.path(), Some(65534), Some(65534)).unwrap();
            }
            let d = root.join(format!("neuronxcc-{V15}/MODULE_1510+d41d8cd9"));
            fs::create_dir_all(&d).unwrap();
            put(&d, "model.neff", &good_neff());
            put(&d, "model.done", b"");
            std::os::unix::fs::chown(&d, Some(65534), Some(65534)).unwrap();
            std::os::unix::fs::chown(d.join("model.done"), Some(65534), Some(65534)).unwrap();
            fs::set_permissions(
                d.join("model.neff"),
                std::os::unix::fs::PermissionsExt::from_mode(0o600),
            )
            .unwrap();
            made.push(Made {
                dir: d,
                state: "unreadable",
                good: true,
            });
        } else {
            eprintln!("not root (or no setpriv): another user's NEFF is not tried");
        }
        // An old access time: a read of the secret would move it.
        age(&secret, TWO_DAYS, TWO_DAYS);
        settle_ages(&root);
        Cache {
            _tmp: tmp,
            root,
            secret,
            made,
            other,
        }
    }

    fn run(&self, args: &[&OsStr]) -> Output {
        let bin = env!("CARGO_BIN_EXE_neff");
        let mut c = if self.other {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin]);
            c
        } else {
            Command::new(bin)
        };
        c.args(args).output().unwrap()
    }

    /// `neff ARGS[0] ARGS[1] ROOT ARGS[2..]`; a prune without
    /// `--min-age` gets `--min-age 0s` (every file here is seconds old).
    fn cmd(&self, args: &[&str]) -> Output {
        let mut v: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        v.insert(2, self.root.as_os_str());
        if args.get(1) == Some(&"prune") && !args.contains(&"--min-age") {
            v.extend([OsStr::new("--min-age"), OsStr::new("0s")]);
        }
        self.run(&v)
    }

    /// Nothing outside the cache was read: the secret's access time is as
    /// set, and no output holds it.
    fn outside_untouched(&self, outputs: &[&Output]) {
        let read = fs::metadata(&self.secret).unwrap().accessed().unwrap();
        assert!(
            SystemTime::now().duration_since(read).unwrap() > Duration::from_secs(86_400),
            "the secret outside the cache was read"
        );
        for o in outputs {
            for s in [&o.stdout, &o.stderr] {
                assert!(!String::from_utf8_lossy(s).contains("SECRET"), "printed");
            }
        }
    }
}

/// Ages count from the later of a file's modification and change time,
/// and a change time cannot be set back: the files made old (by
/// modification time, [`age`]) are left four seconds behind, and every
/// other file under `root` changes again now. A test then says "3s" where
/// a user says "1d" (and runs its commands within those three seconds).
fn settle_ages(root: &Path) {
    std::thread::sleep(Duration::from_secs(4));
    let recent = SystemTime::now() - Duration::from_secs(3600);
    for e in walkdir::WalkDir::new(root) {
        let e = e.unwrap();
        let m = e.path().symlink_metadata().unwrap();
        if e.file_type().is_file() && m.modified().unwrap() > recent {
            let f = File::options().write(true).open(e.path()).unwrap();
            f.set_modified(m.modified().unwrap()).unwrap();
        }
    }
}

/// Whether this test runs as root (the owner of `/proc/self`).
fn libc_euid_is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    let me = tempfile::tempfile().unwrap();
    me.metadata().unwrap().uid() == 0
}

/// A record's path as bytes: `path_bytes` (base64) where it is given.
fn path_of(r: &Value) -> PathBuf {
    match r["path_bytes"].as_str() {
        Some(b) => PathBuf::from(OsString::from_vec(
            base64::engine::general_purpose::STANDARD.decode(b).unwrap(),
        )),
        None => PathBuf::from(r["path"].as_str().unwrap()),
    }
}

fn ndjson(out: &[u8]) -> Vec<Value> {
    String::from_utf8(out.to_vec())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// No record holds a relative time: no `age` field, no "ago".
fn no_relative_time(records: &[Value]) {
    for r in records {
        let text = r.to_string();
        assert!(!text.contains(" ago") && !text.contains("age_s"), "{text}");
    }
}

#[test]
fn every_era_is_judged_by_its_own_rules_and_shared_cache_shapes_are_never_misjudged() {
    let c = Cache::new();
    let o = c.cmd(&["cache", "status", "--json"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "a FIFO, another's NEFF: {err}");
    let records = ndjson(&o.stdout);
    assert_eq!(records.len(), c.made.len(), "{records:#?}");
    for m in &c.made {
        let r = records
            .iter()
            .find(|r| path_of(r) == m.dir)
            .unwrap_or_else(|| panic!("{} not reported", m.dir.display()));
        assert_eq!(r["state"], m.state, "{r}");
        if m.state == "failed" {
            assert_eq!(r["reason"], "ERROR 70 [neuronx-cc]: bad op", "{r}");
        }
        if m.state == "ok" {
            assert_eq!(r["arch"], "cayman", "{r}");
        }
    }
    let unreadable: Vec<_> = records
        .iter()
        .filter(|r| r["state"] == "unreadable")
        .collect();
    assert!(unreadable
        .iter()
        .any(|r| r["reason"] == "model.log is a FIFO: not read"));
    if c.other {
        assert!(unreadable
            .iter()
            .any(|r| r["reason"].as_str().unwrap().contains("Permission denied")));
    }
    no_relative_time(&records);
    // Unchanged, the cache reads the same: times are absolute.
    let again = c.cmd(&["cache", "status", "--json"]);
    assert!(again.stdout == o.stdout, "two reports differ");
    // The table escapes the name that is not UTF-8.
    let t = c.cmd(&["cache", "status"]);
    let text = String::from_utf8(t.stdout.clone()).unwrap();
    assert!(text.contains("MODULE_\\377+1: ERROR 70"), "{text}");
    // A scan sees the same states (the NEFFs it reads, the entries without
    // one), twice the same.
    let s1 = c.cmd(&["scan", "--json", "--sorted", "--no-progress"]);
    let s2 = c.cmd(&["scan", "--json", "--sorted", "--no-progress"]);
    assert!(s1.stdout == s2.stdout, "two scans differ");
    let scanned = ndjson(&s1.stdout);
    no_relative_time(&scanned);
    for m in c.made.iter().filter(|m| m.dir.to_str().is_some()) {
        let mine = |r: &&Value| {
            let p = path_of(r);
            p == m.dir || p == m.dir.join("model.neff")
        };
        let r = scanned
            .iter()
            .find(mine)
            .unwrap_or_else(|| panic!("{}", m.dir.display()));
        assert_eq!(r["cache_state"], m.state, "{r}");
    }
    c.outside_untouched(&[&o, &again, &t, &s1, &s2]);
}

#[test]
fn a_prune_with_every_selector_keeps_every_good_compile_byte_for_byte() {
    let c = Cache::new();
    let good: Vec<_> = c
        .made
        .iter()
        .filter(|m| m.good)
        .map(|m| (m.dir.clone(), contents(&m.dir)))
        .collect();
    let every = [
        "cache",
        "prune",
        "--failed",
        "--corrupt",
        "--locked-older-than",
        "3s",
        "--incomplete-older-than",
        "3s",
        "--keep-versions",
        "4",
        "--max-size",
        "1T",
        "--json",
    ];
    let dry = c.cmd(&every);
    assert_eq!(
        dry.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    let plan = ndjson(&dry.stdout);
    let mut with_apply = every.to_vec();
    with_apply.push("--apply");
    let done = c.cmd(&with_apply);
    assert_eq!(
        done.status.code(),
        Some(3),
        "part of the cache is unreadable"
    );
    let done_rows = ndjson(&done.stdout);
    // The dry run said exactly what --apply did.
    assert_eq!(plan.len(), done_rows.len());
    for (p, d) in plan.iter().zip(&done_rows) {
        assert_eq!((path_of(p), &p["error"]), (path_of(d), &d["error"]));
        assert_eq!(d["removed"], d["error"].is_null());
    }
    // What went: the failed, the corrupt, the old incomplete one; nothing
    // else, and every good compile is as it was.
    let mut gone: Vec<_> = c
        .made
        .iter()
        .filter(|m| !m.dir.exists())
        .map(|m| m.state)
        .collect();
    gone.sort_unstable();
    assert_eq!(
        gone,
        [
            "corrupt",
            "failed",
            "failed",
            "failed",
            "failed",
            "failed",
            "failed",
            "incomplete"
        ]
    );
    for (dir, before) in &good {
        assert_eq!(&contents(dir), before, "{}", dir.display());
    }
    for m in c.made.iter().filter(|m| !m.good && m.state != "failed") {
        if matches!(m.state, "locked" | "unknown" | "unreadable") {
            assert!(m.dir.exists(), "{} ({})", m.dir.display(), m.state);
        }
    }
    // The name that is not UTF-8 went; the one its lossy spelling gives
    // stayed.
    assert!(!c
        .root
        .join(format!("neuronxcc-{V15}"))
        .join(OsStr::from_bytes(b"MODULE_\xff+1"))
        .exists());
    assert!(c
        .root
        .join(format!("neuronxcc-{V15}/MODULE_\u{fffd}+1"))
        .exists());
    c.outside_untouched(&[&dry, &done]);
}

#[test]
fn keep_versions_counts_releases_and_never_takes_what_it_cannot_judge() {
    let c = Cache::new();
    assert_eq!(
        c.cmd(&["cache", "prune", "--keep-versions", "0"])
            .status
            .code(),
        Some(2)
    );
    let o = c.cmd(&["cache", "prune", "--keep-versions", "3", "--json"]);
    let plan = ndjson(&o.stdout);
    // 2.12 goes but its fresh lock; nothing of the three newest releases.
    let mut states: Vec<_> = plan.iter().map(|r| r["state"].as_str().unwrap()).collect();
    states.sort_unstable();
    assert_eq!(states, ["failed", "ok"], "{plan:#?}");
    assert!(plan.iter().all(|r| r["compiler"] == V12));
    // The table's summary counts what would go and what would be left.
    let t = c.cmd(&["cache", "prune", "--keep-versions", "3"]);
    let text = String::from_utf8(t.stdout).unwrap();
    let last = text.lines().last().unwrap();
    assert!(last.starts_with("2 entries, "), "{text}");
    assert!(
        last.ends_with(" would be removed (dry run: --apply removes them)"),
        "{text}"
    );
}

#[test]
fn a_cache_root_is_read_wherever_the_environment_names_it_and_an_entry_is_not_one() {
    let c = Cache::new();
    let url = format!("file://{}", c.root.display());
    let o = neff(&["cache", "status", &url, "--json"]);
    assert_eq!(ndjson(&o.stdout).len(), c.made.len());
    let entry = c.root.join(format!("neuronxcc-{V15}/MODULE_1501+d41d8cd9"));
    let o = neff(&["cache", "status", entry.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("not a cache root"), "{err}");
    let v = c.root.join(format!("neuronxcc-{V13}"));
    let o = neff(&["cache", "status", v.to_str().unwrap()]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("a version's directory"),
        "{text}"
    );
    // NEURON_CC_FLAGS split as a shell splits it.
    let spaced = c._tmp.path().join("a b");
    fs::create_dir_all(spaced.join("neuronxcc-2.15.0+a")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_neff"))
        .args(["cache", "status"])
        .env(
            "NEURON_CC_FLAGS",
            format!("-O1 --cache_dir=\"{}\"", spaced.display()),
        )
        .env_remove("NEURON_COMPILE_CACHE_URL")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8(o.stdout)
        .unwrap()
        .contains("a b: 0 entries"));
}

#[test]
fn stale_locks_are_not_judged_while_a_compiler_runs() {
    let c = Cache::new();
    let tmp = tempfile::tempdir().unwrap();
    let fake = tmp.path().join("neuronx-cc");
    fs::copy("/bin/sleep", &fake).unwrap();
    let mut child = Command::new(&fake).arg("60").spawn().unwrap();
    let o = c.cmd(&["cache", "prune", "--locked-older-than", "1h", "--apply"]);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(err.contains("neuronx-cc is running"), "{err}");
    assert!(c.made.iter().all(|m| m.dir.exists()), "nothing removed");
}

#[test]
fn max_size_evicts_the_least_recently_used_good_compiles_of_older_releases() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let bytes = good_neff();
    // Three ok entries per release, read 1, 2, 3 days ago; the newest
    // release's are the least recently used of all.
    let mut dirs = Vec::new();
    for (v, days) in [(V15, 0u64), (V20, 10)] {
        for k in 1..=3u64 {
            let d = root.join(format!("neuronxcc-{v}/MODULE_{k}+1"));
            put(&d, "model.neff", &bytes);
            put(&d, "model.done", b"");
            let read = Duration::from_secs((k + days) * 86_400);
            age(&d.join("model.neff"), read + TWO_DAYS, read);
            dirs.push(d);
        }
    }
    let each = bytes.len() as u64;
    let max = (each * 4 + 10).to_string();
    let o = neff_ok(&[
        "cache",
        "prune",
        root.to_str().unwrap(),
        "--max-size",
        &max,
        "--min-age",
        "0s",
        "--json",
    ]);
    let plan = ndjson(&o);
    let picked: Vec<PathBuf> = plan.iter().map(path_of).collect();
    // Over by two entries: the two least recently read of 2.15 (3 and 2
    // days), never one of 2.20 although older.
    assert_eq!(picked, [dirs[2].clone(), dirs[1].clone()], "{plan:#?}");
    assert!(plan[0]["why"]
        .as_str()
        .unwrap()
        .contains("least recently used (last read"));
    let o = neff_ok(&[
        "cache",
        "prune",
        root.to_str().unwrap(),
        "--max-size",
        &max,
        "--min-age",
        "0s",
        "--include-current",
        "--json",
    ]);
    let picked: Vec<PathBuf> = ndjson(&o).iter().map(path_of).collect();
    assert_eq!(picked, [dirs[5].clone(), dirs[4].clone()]);
    // Applied: it fits, and a status after is unchanged in what it says of
    // the others' access times (reading a NEFF is not a use).
    let before = neff_ok(&["cache", "status", root.to_str().unwrap(), "--json"]);
    neff_ok(&[
        "cache",
        "prune",
        root.to_str().unwrap(),
        "--max-size",
        &max,
        "--min-age",
        "0s",
        "--apply",
    ]);
    assert!(!dirs[2].exists() && !dirs[1].exists() && dirs[0].exists());
    let after = neff_ok(&["cache", "status", root.to_str().unwrap(), "--json"]);
    let kept = |out: &[u8]| -> Vec<Value> {
        ndjson(out)
            .into_iter()
            .filter(|r| Path::new(r["path"].as_str().unwrap()).exists())
            .collect()
    };
    assert_eq!(kept(&before), kept(&after));
    assert_eq!(
        neff(&[
            "cache",
            "prune",
            root.to_str().unwrap(),
            "--include-current"
        ])
        .status
        .code(),
        Some(2)
    );
}

#[test]
fn a_vllm_neuron_cache_is_read_with_the_states_its_layout_tells() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("neuron/compile_cache");
    let bytes = good_neff();
    let key = |c: char| std::iter::repeat_n(c, 32).collect::<String>();
    let done = root.join(key('a'));
    put(&done, "graph.hlo", &[1; 100]);
    put(&done, &format!("graph_{}.neff", key('a')), &bytes);
    put(&done, ".artifact_metadata_v0.json", b"{}");
    put(&done, ".compilation_complete", b"");
    let running = root.join(key('b'));
    put(&running, "graph.hlo", &[1; 100]);
    put(
        &root,
        &format!(".{}.compilation_metadata.lock", key('b')),
        b"",
    );
    let unmarked = root.join(key('c'));
    put(&unmarked, "graph.hlo", &[1; 100]);
    put(&unmarked, "graph_c.neff", &bytes);
    let o = neff(&["cache", "status", root.to_str().unwrap(), "--json"]);
    let r = ndjson(&o.stdout);
    let state = |d: &Path| r.iter().find(|x| path_of(x) == d).unwrap()["state"].clone();
    assert_eq!(state(&done), "ok");
    assert_eq!(state(&running), "locked");
    assert_eq!(state(&unmarked), "unknown");
    // No selector takes the unknown one; a scan reads the NEFFs with their
    // entries' states.
    let p = neff_ok(&[
        "cache",
        "prune",
        root.to_str().unwrap(),
        "--failed",
        "--corrupt",
        "--incomplete-older-than",
        "0s",
        "--json",
    ]);
    assert!(ndjson(&p).is_empty());
    let s = ndjson(&neff_ok(&[
        "scan",
        "--json",
        "--no-progress",
        root.to_str().unwrap(),
    ]));
    let st = |n: &str| {
        s.iter()
            .find(|x| x["path"].as_str().unwrap().ends_with(n))
            .unwrap()["cache_state"]
            .clone()
    };
    assert_eq!(st(&format!("graph_{}.neff", key('a'))), "ok");
    assert_eq!(st("graph_c.neff"), "unknown");
}
