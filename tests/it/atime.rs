//! `cache prune --max-size` evicts by the NEFFs' access times: a
//! `cache status` or `scan` run by any user leaves them (and so the plan)
//! as they were. The owner and root read with `O_NOATIME`; another user
//! reads only the NEFFs whose access time the read would not move, and
//! reports the others (docs/GUIDE.md, "What prune will never do").
//!
//! Run as root (CI does), on a file system mounted `relatime` (the
//! default), as root and as `nobody`; skipped, saying why, elsewhere.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::common::*;

/// The other user: `nobody`.
const OTHER: u32 = 65534;
const VERSION: &str = "neuronxcc-2.15.128.0+56dc5a86";
const DAY: Duration = Duration::from_secs(24 * 60 * 60);

/// How a command is run: as root, or as [`OTHER`].
#[derive(Clone, Copy, PartialEq)]
enum As {
    Root,
    Other,
}

/// Runs `program args` as `who`.
fn run(who: As, program: &Path, args: &[&str]) -> Output {
    let mut c = match who {
        As::Root => Command::new(program),
        As::Other => {
            let mut c = Command::new("setpriv");
            let id = OTHER.to_string();
            c.args(["--reuid", &id, "--regid", &id, "--clear-groups", "--"])
                .arg(program);
            c
        }
    };
    c.args(args).output().expect("run")
}

/// A cache of five `ok` entries (the fourth of vLLM's layout), readable
/// by everyone, in a directory of a file system that keeps access times
/// by `relatime`, with the `neff` binary [`OTHER`] runs; `None` (said
/// why) where the test cannot run.
struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    neff: PathBuf,
    /// Each entry's directory and its NEFF's name.
    entries: Vec<(PathBuf, String)>,
}

fn fixture() -> Option<Fixture> {
    if rustix::process::geteuid().as_raw() != 0 {
        eprintln!("skipped: not root (the test runs neff as another user)");
        return None;
    }
    if !have("setpriv") || !have("findmnt") {
        eprintln!("skipped: no setpriv or findmnt");
        return None;
    }
    let bases = [
        PathBuf::from("/var/tmp"),
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
        std::env::temp_dir(),
    ];
    let dir = bases.iter().find_map(|b| usable(b))?;
    use std::os::unix::fs::PermissionsExt;
    let mode =
        |p: &Path, m: u32| std::fs::set_permissions(p, PermissionsExt::from_mode(m)).unwrap();
    mode(dir.path(), 0o777);
    let root = dir.path().join("cache");
    let good = std::fs::read(crate::common::root().join("fixtures/acc/cc-replica-groups-gz.neff"))
        .unwrap();
    let mut entries = Vec::new();
    for k in 0..5 {
        let vllm = "a".repeat(32);
        let (e, name, done) = match k {
            3 => (
                root.join(&vllm),
                format!("graph_{vllm}.neff"),
                ".compilation_complete",
            ),
            _ => (
                root.join(VERSION).join(format!("MODULE_{k}+{k:08x}")),
                "model.neff".into(),
                "model.done",
            ),
        };
        std::fs::create_dir_all(&e).unwrap();
        std::fs::write(e.join(&name), &good).unwrap();
        std::fs::write(e.join(done), b"").unwrap();
        entries.push((e, name));
    }
    for p in [&root, &root.join(VERSION)]
        .into_iter()
        .chain(entries.iter().map(|e| &e.0))
    {
        mode(p, 0o755);
    }
    // The binary where the other user can run it.
    let mut neff = PathBuf::from(env!("CARGO_BIN_EXE_neff"));
    if !run(As::Other, &neff, &["--version"]).status.success() {
        let copy = dir.path().join("neff");
        std::fs::copy(&neff, &copy).unwrap();
        mode(&copy, 0o755);
        neff = copy;
    }
    Some(Fixture {
        _dir: dir,
        root,
        neff,
        entries,
    })
}

/// A temporary directory under `base`, when its file system keeps access
/// times by `relatime` and [`OTHER`] can reach it.
fn usable(base: &Path) -> Option<tempfile::TempDir> {
    let dir = tempfile::tempdir_in(base).ok()?;
    let o = Command::new("findmnt")
        .args(["-n", "-o", "OPTIONS", "-T"])
        .arg(dir.path())
        .output()
        .ok()?;
    let opts = String::from_utf8_lossy(&o.stdout).trim().to_string();
    if !opts.split(',').any(|o| o == "relatime") {
        eprintln!("{}: mounted {opts}, not relatime: not used", base.display());
        return None;
    }
    let reach = run(
        As::Other,
        Path::new("/usr/bin/test"),
        &["-x", base.to_str()?],
    );
    if !reach.status.success() {
        eprintln!("{}: uid {OTHER} cannot reach it: not used", base.display());
        return None;
    }
    Some(dir)
}

impl Fixture {
    fn neff(&self, who: As, args: &[&str]) -> Output {
        run(who, &self.neff, args)
    }

    fn root(&self) -> &str {
        self.root.to_str().unwrap()
    }

    /// Every NEFF's access time, to the nanosecond.
    fn atimes(&self) -> Vec<(i64, i64)> {
        use std::os::unix::fs::MetadataExt;
        self.entries
            .iter()
            .map(|(e, name)| {
                let m = std::fs::metadata(e.join(name)).unwrap();
                (m.atime(), m.atime_nsec())
            })
            .collect()
    }

    /// The dry-run plan of `--max-size 1` (every entry, least recently
    /// used first), as root.
    fn plan(&self) -> String {
        let args = [
            "cache",
            "prune",
            self.root(),
            "--max-size",
            "1",
            "--include-current",
            "--min-age",
            "0s",
            "--json",
        ];
        let o = self.neff(As::Root, &args);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    }
}

/// Sets the NEFFs' times: modified ten days ago; accessed 5, 4, 3 and 2
/// days ago (a read would move those: a day old, and not after the
/// status change setting them makes), and the last a minute from now,
/// after that change (a read would not move it).
fn age(f: &Fixture) {
    let now = SystemTime::now();
    let accessed = [5, 4, 3, 2].map(|d| now - d * DAY);
    let accessed = accessed.into_iter().chain([now + Duration::from_secs(60)]);
    for ((e, name), a) in f.entries.iter().zip(accessed) {
        let t = std::fs::FileTimes::new()
            .set_accessed(a)
            .set_modified(now - 10 * DAY);
        std::fs::File::open(e.join(name))
            .unwrap()
            .set_times(t)
            .unwrap();
    }
}

/// How many of the fixture's NEFFs [`age`] makes a read move.
const MOVED: usize = 4;

fn ndjson(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What `cache status` and `scan` (as `who`) say of each entry, in the
/// fixture's order: (state, reason) and (ok, error, cache state, cache
/// reason). A dry-run prune runs too: it judges the cache as status does.
fn judged(f: &Fixture, who: As) -> (Vec<(Value, Value)>, Vec<[Value; 4]>) {
    let status = ndjson(&f.neff(who, &["cache", "status", f.root(), "--json"]).stdout);
    let scan = ndjson(
        &f.neff(who, &["scan", f.root(), "--json", "--no-progress"])
            .stdout,
    );
    let prune = [
        "cache",
        "prune",
        f.root(),
        "--max-size",
        "1",
        "--min-age",
        "0s",
        "--json",
    ];
    assert!(f.neff(who, &prune).status.code().is_some());
    let mut by_status = Vec::new();
    let mut by_scan = Vec::new();
    for (e, name) in &f.entries {
        let s = status
            .iter()
            .find(|r| r["path"] == e.to_str().unwrap())
            .unwrap();
        by_status.push((s["state"].clone(), s["reason"].clone()));
        let neff = e.join(name);
        let r = scan
            .iter()
            .find(|r| r["path"] == neff.to_str().unwrap())
            .unwrap();
        let [ok, error, state, reason] = ["ok", "error", "cache_state", "cache_reason"];
        by_scan.push([ok, error, state, reason].map(|k| r[k].clone()));
    }
    (by_status, by_scan)
}

#[test]
fn cache_status_and_scan_by_another_user_leave_every_atime_and_the_max_size_plan() {
    let Some(f) = fixture() else { return };
    age(&f);
    let (atimes, plan) = (f.atimes(), f.plan());
    assert_eq!(plan.lines().count(), f.entries.len(), "{plan}");
    let (status, scan) = judged(&f, As::Other);
    assert_eq!(
        f.atimes(),
        atimes,
        "another user's status and scan moved an access time"
    );
    assert_eq!(f.plan(), plan);
    // The NEFFs a read would touch are not read, and say so, by their
    // names; the last is read (its time stays: the kernel would not move
    // it).
    let why = format!("not read: reading it as uid {OTHER} would move its access time");
    for (k, ((state, reason), [ok, error, cache_state, cache_reason])) in
        status.iter().zip(&scan).enumerate()
    {
        if k == MOVED {
            assert_eq!((state, reason), (&Value::from("ok"), &Value::Null));
            assert_eq!((ok, cache_state), (&Value::from(true), &Value::from("ok")));
            continue;
        }
        let named = format!("{} {why}", f.entries[k].1);
        assert_eq!(
            (state, cache_state),
            (&Value::from("unknown"), &Value::from("unknown"))
        );
        let reason = reason.as_str().unwrap();
        assert!(reason.starts_with(&named), "{reason}");
        assert!(
            reason.contains("--max-size") && reason.contains("uid 0"),
            "{reason}"
        );
        assert_eq!(ok, false);
        assert!(error.as_str().unwrap().starts_with(&why), "{error}");
        assert!(
            cache_reason.as_str().unwrap().starts_with(&named),
            "{cache_reason}"
        );
    }
    // Root reads them all, and moves nothing either.
    let (status, scan) = judged(&f, As::Root);
    assert!(status.iter().all(|(s, _)| s == "ok"), "{status:?}");
    assert!(
        scan.iter().all(|[ok, _, s, _]| ok == true && s == "ok"),
        "{scan:?}"
    );
    assert_eq!(
        f.atimes(),
        atimes,
        "root's status and scan moved an access time"
    );
    assert_eq!(f.plan(), plan);
    // What the test guards against: any other read by the other user
    // moves the oldest time, and the plan with it.
    let (e, name) = &f.entries[0];
    let neff = e.join(name);
    assert!(
        run(As::Other, Path::new("/bin/cat"), &[neff.to_str().unwrap()])
            .status
            .success()
    );
    assert_ne!(
        f.atimes()[0],
        atimes[0],
        "a plain read did not move the access time"
    );
    assert_ne!(f.plan(), plan);
}

/// A catalogue does not keep a record of a NEFF left unread: it says who
/// scanned, not what the file is, and the owner's scan reads it.
#[cfg(feature = "catalog")]
#[test]
fn a_scan_index_keeps_no_record_of_a_cache_neff_left_unread() {
    let Some(f) = fixture() else { return };
    age(&f);
    let db = f.root.parent().unwrap().join("cache.db");
    let db = db.to_str().unwrap();
    let scan = |who| {
        let args = ["scan", f.root(), "--json", "--no-progress", "--index", db];
        let o = f.neff(who, &args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        ndjson(&o.stdout)
    };
    let atimes = f.atimes();
    let other = scan(As::Other);
    assert_eq!(
        other.iter().filter(|r| r["ok"] == false).count(),
        MOVED,
        "{other:?}"
    );
    let root = scan(As::Root);
    assert!(
        root.iter()
            .all(|r| r["ok"] == true && r["cache_state"] == "ok"),
        "{root:?}"
    );
    assert_eq!(f.atimes(), atimes);
}
