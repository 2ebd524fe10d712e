//! `neff cache prune` as a hostile neighbour and a busy host would meet
//! it (issue 56): a mount inside an entry, a second process swapping a
//! version directory for a link while it removes, a lock a live process
//! holds (either kind), a compiler started through an interpreter, a copy
//! still arriving, two prunes at once. Each is built for real; the ones
//! that need root (a bind mount) say so and pass over when not root.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::common::*;

const V: &str = "neuronxcc-2.15.128.0+56dc5a86";

fn ndjson(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// A failed entry at `dir` (its log, the compiler's other files).
fn failed(dir: &Path) {
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join("compile_flags.json"), b"[\"-O2\"]").unwrap();
    fs::write(dir.join("model.log"), b"ERROR 70 [neuronx-cc]: bad op\n").unwrap();
}

/// Every file under `dir`, with its bytes.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v: Vec<_> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| (e.path().to_path_buf(), fs::read(e.path()).unwrap()))
        .collect();
    v.sort();
    v
}

fn prune(root: &Path, args: &[&str]) -> std::process::Output {
    let mut a = vec!["cache", "prune", root.to_str().unwrap()];
    a.extend_from_slice(args);
    neff(&a)
}

/// A mount point that goes when dropped.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn bind(from: &Path, to: &Path) -> Option<Mounted> {
    let ok = Command::new("mount")
        .arg("--bind")
        .arg(from)
        .arg(to)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then(|| Mounted(to.to_path_buf()))
}

#[test]
fn a_mount_inside_an_entry_is_never_crossed_and_the_entry_is_unknown() {
    if !is_root() {
        eprintln!("not root: a bind mount cannot be made, the mount case is not tried");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("cache");
    let outside = tmp.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    for i in 0..20 {
        fs::write(outside.join(format!("precious-{i}")), format!("{i}")).unwrap();
    }
    let before = files(&outside);
    // A failed entry with a directory bind-mounted in it (same file
    // system: st_dev cannot tell), and the entry itself a mount point.
    let a = root.join(V).join("MODULE_a+b");
    failed(&a);
    fs::create_dir_all(a.join("sub")).unwrap();
    let b = root.join(V).join("MODULE_c+d");
    fs::create_dir_all(&b).unwrap();
    let other = tmp.path().join("other-entry");
    failed(&other);
    let plain = root.join(V).join("MODULE_e+f");
    failed(&plain);
    let (Some(_m1), Some(_m2)) = (bind(&outside, &a.join("sub")), bind(&other, &b)) else {
        eprintln!("mount --bind refused here (no CAP_SYS_ADMIN in this sandbox): not tried");
        return;
    };
    let st = neff(&["cache", "status", root.to_str().unwrap(), "--json"]);
    let rows = ndjson(&st.stdout);
    let state = |d: &Path| {
        rows.iter()
            .find(|r| r["path"] == d.to_str().unwrap())
            .map(|r| (r["state"].clone(), r["reason"].clone()))
            .unwrap()
    };
    for d in [&a, &b] {
        let (s, why) = state(d);
        assert_eq!(s, "unknown", "{why}");
        assert!(why.as_str().unwrap().contains("mount point"), "{why}");
    }
    assert_eq!(state(&plain).0, "failed");
    // Nothing it cannot judge is selected: the plain failed entry goes, the
    // two beside mounts stay (exit 0: no selected entry was left).
    for _ in 0..2 {
        let o = prune(
            &root,
            &["--failed", "--corrupt", "--min-age", "0s", "--apply"],
        );
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert_eq!(
        files(&outside),
        before,
        "a file behind the mount was removed"
    );
    assert!(other.join("model.log").exists());
    assert!(!plain.exists(), "the plain failed entry went");
}

#[test]
fn a_version_directory_swapped_for_a_link_while_prune_runs_loses_nothing_outside() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("cache");
    let real = root.join(V);
    // The look-alike outside the cache: entries of the same names.
    let decoy = tmp.path().join("decoy");
    let n = 60;
    for i in 0..n {
        failed(&real.join(format!("MODULE_{i}+1")));
        failed(&decoy.join(format!("MODULE_{i}+1")));
    }
    let before = files(&decoy);
    let parked = root.join("parked");
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&decoy, &link).unwrap();
    // A neighbour swaps the version directory and a link to the decoy, in
    // a loop, while three prunes run.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, real, parked, link) = (stop.clone(), real.clone(), parked.clone(), link.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // real -> parked, link -> real; then back.
                if fs::rename(&real, &parked).is_ok() {
                    let _ = fs::rename(&link, &real);
                    let _ = fs::rename(&real, &link);
                    let _ = fs::rename(&parked, &real);
                    swaps += 1;
                }
            }
            swaps
        })
    };
    for _ in 0..3 {
        let _ = prune(&root, &["--failed", "--min-age", "0s", "--apply"]);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(swapper.join().unwrap() > 0, "the neighbour never swapped");
    if !real.exists() {
        fs::rename(&parked, &real).unwrap();
    }
    assert_eq!(
        files(&decoy),
        before,
        "files outside the cache were removed"
    );
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
}

/// Holds a lock of `kind` (`flock` or `lockf`) on `lock` in a second
/// process until killed; returns once it holds it.
fn hold(lock: &Path, kind: &str) -> Child {
    let script = format!(
        "import fcntl, sys, time\n\
         f = open(sys.argv[1], 'a')\n\
         fcntl.{kind}(f, fcntl.LOCK_EX)\n\
         print('held', flush=True)\n\
         time.sleep(120)\n"
    );
    let mut c = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(lock)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(c.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "held");
    c
}

#[test]
fn a_lock_a_live_process_holds_is_fresh_whatever_its_age_and_either_kind() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("cache");
    let mut entries = Vec::new();
    for (i, kind) in ["flock", "lockf", "none"].iter().enumerate() {
        let d = root.join(V).join(format!("MODULE_{i}+1"));
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("model.hlo_module.pb"), [1u8; 64]).unwrap();
        let l = d.join("model.hlo_module.pb.lock");
        fs::write(&l, b"").unwrap();
        // Three hours old by its modification time.
        let f = fs::File::options().write(true).open(&l).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(3 * 3600))
            .unwrap();
        entries.push((d, l, *kind));
    }
    // Ages count from the later of modification and change time.
    std::thread::sleep(Duration::from_millis(1500));
    let mut held: Vec<Child> = entries
        .iter()
        .filter(|(_, _, k)| *k != "none")
        .map(|(_, l, k)| hold(l, k))
        .collect();
    let args = ["--locked-older-than", "1s", "--min-age", "0s", "--json"];
    let dry = ndjson(&prune(&root, &args).stdout);
    let mut apply = args.to_vec();
    apply.push("--apply");
    let done = prune(&root, &apply);
    for c in &mut held {
        c.kill().unwrap();
        c.wait().unwrap();
    }
    assert_eq!(done.status.code(), Some(0));
    let done = ndjson(&done.stdout);
    // Only the lock nobody holds is stale: the dry run says so, and
    // --apply does exactly that.
    let paths = |v: &[Value]| -> Vec<String> {
        v.iter()
            .map(|r| r["path"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(paths(&dry), [entries[2].0.to_str().unwrap()]);
    assert_eq!(paths(&done), paths(&dry));
    assert!(entries[0].0.exists() && entries[1].0.exists());
    assert!(!entries[2].0.exists());
}

#[test]
fn a_compiler_started_through_an_interpreter_stops_stale_lock_judgement() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("cache");
    let d = root.join(V).join("MODULE_1+1");
    fs::create_dir_all(&d).unwrap();
    fs::write(d.join("model.hlo_module.pb.lock"), b"").unwrap();
    let bin = tmp.path().join("venv/bin");
    fs::create_dir_all(&bin).unwrap();
    let script = bin.join("neuronx-cc");
    fs::write(&script, "import time\ntime.sleep(60)\n").unwrap();
    let mut c = Command::new("python3")
        .arg("-u")
        .arg(&script)
        .arg("compile")
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let o = prune(
        &root,
        &["--locked-older-than", "0s", "--min-age", "0s", "--apply"],
    );
    c.kill().unwrap();
    c.wait().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("neuronx-cc is running"), "{err}");
    assert!(d.exists());
}

#[test]
fn an_entry_still_arriving_is_kept_by_min_age() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("cache");
    let good = fs::read(root_of("fixtures/acc/cc-replica-groups-gz.neff")).unwrap();
    // rsync and `aws s3 sync` write in name order: model.done is there,
    // model.neff not yet (corrupt, as it stands).
    let copying = root.join(V).join("MODULE_1+1");
    fs::create_dir_all(&copying).unwrap();
    fs::write(copying.join("compile_flags.json"), b"[]").unwrap();
    fs::write(copying.join("model.done"), b"").unwrap();
    // `cp -p`: a NEFF whose modification time is two days old, copied now,
    // with no model.done yet (incomplete).
    let kept_times = root.join(V).join("MODULE_2+1");
    fs::create_dir_all(&kept_times).unwrap();
    fs::write(kept_times.join("model.neff"), &good[..2000]).unwrap();
    let f = fs::File::options()
        .write(true)
        .open(kept_times.join("model.neff"))
        .unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(2 * 86_400))
        .unwrap();
    let st = ndjson(&neff_ok_code(&[
        "cache",
        "status",
        root.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(st[0]["state"], "corrupt");
    assert_eq!(st[1]["state"], "incomplete");
    let o = prune(
        &root,
        &[
            "--corrupt",
            "--incomplete-older-than",
            "1h",
            "--apply",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0));
    let rows = ndjson(&o.stdout);
    // The corrupt one is selected but kept (it changed just now); the
    // incomplete one is not even selected (untouched for an hour by its
    // change time, not its kept modification time).
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(rows[0]["kept"]
        .as_str()
        .unwrap()
        .contains("within --min-age"));
    assert_eq!(rows[0]["removed"], false);
    assert!(copying.exists() && kept_times.exists());
    // The table says what it kept.
    let t = prune(&root, &["--corrupt"]);
    let text = String::from_utf8_lossy(&t.stdout);
    assert!(text.contains("kept: changed"), "{text}");
    assert!(
        text.contains("1 entry, 2 B kept (changed within --min-age)"),
        "{text}"
    );
}

fn root_of(rel: &str) -> PathBuf {
    root().join(rel)
}

/// `neff ARGS`' stdout, whatever its exit code.
fn neff_ok_code(args: &[&str]) -> Vec<u8> {
    neff(args).stdout
}

#[test]
fn prunes_at_once_take_turns_and_all_exit_0() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("cache");
    for i in 0..300 {
        failed(&root.join(V).join(format!("MODULE_{i}+1")));
    }
    let bin = env!("CARGO_BIN_EXE_neff");
    let run = || {
        Command::new(bin)
            .args(["cache", "prune"])
            .arg(&root)
            .args(["--failed", "--min-age", "0s", "--apply", "--json"])
            .output()
            .unwrap()
    };
    // Three at once: one that lists the cache while another removes from
    // it meets entries that vanish under its reading.
    let runs: Vec<_> = std::thread::scope(|s| {
        let all: Vec<_> = (0..3).map(|_| s.spawn(run)).collect();
        all.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for o in &runs {
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let removed: usize = runs
        .iter()
        .map(|o| {
            ndjson(&o.stdout)
                .iter()
                .filter(|r| r["removed"] == true)
                .count()
        })
        .sum();
    assert_eq!(removed, 300, "each entry removed once, by one of them");
    assert_eq!(fs::read_dir(root.join(V)).unwrap().count(), 0);
}
