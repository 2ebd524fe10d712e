//! Caches of every state, built here as the compiler wrapper lays them out.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::*;

/// A NEFF the crate bundles (arch `cayman`, world size 2).
fn good_neff() -> Vec<u8> {
    let p = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/acc/cc-replica-groups-gz.neff"
    );
    std::fs::read(p).unwrap()
}

fn touch(p: &Path, bytes: &[u8]) {
    std::fs::write(p, bytes).unwrap();
}

fn age(p: &Path, by: Duration) {
    let f = std::fs::File::options().write(true).open(p).unwrap();
    f.set_modified(SystemTime::now() - by).unwrap();
}

/// Writes an entry of `state` at `dir` (the `k`th of its kind, so that
/// some vary: a corrupt entry without its NEFF, an old lock, an old
/// incomplete NEFF).
fn entry(dir: &Path, state: State, k: usize) {
    std::fs::create_dir_all(dir).unwrap();
    touch(&dir.join("compile_flags.json"), b"[\"--target=trn1\"]");
    touch(&dir.join("model.hlo_module.pb"), &[7u8; 300]);
    let neff = good_neff();
    match state {
        State::Ok => {
            touch(&dir.join("model.neff"), &neff);
            touch(&dir.join("model.done"), b"");
            if k == 1 {
                // A lock left behind after the compile finished.
                touch(&dir.join("model.hlo_module.pb.lock"), b"");
            }
        }
        State::Corrupt => {
            if k % 2 == 0 {
                touch(&dir.join("model.neff"), &neff[..1500]);
            }
            touch(&dir.join("model.done"), b"");
        }
        State::Failed => {
            touch(
                &dir.join("model.log"),
                format!("compiling\nERROR {k} [neuronx-cc]: failed\ncleanup\n").as_bytes(),
            );
        }
        State::Locked => {
            let l = dir.join("model.hlo_module.pb.lock");
            touch(&l, b"");
            if k % 2 == 0 {
                age(&l, Duration::from_secs(3 * 3600));
            }
            if k == 3 {
                touch(&dir.join("model.neff"), &neff[..100]);
            }
        }
        State::Incomplete => {
            let n = dir.join("model.neff");
            touch(&n, &neff[..2000]);
            if k % 2 == 0 {
                for f in ["model.neff", "compile_flags.json", "model.hlo_module.pb"] {
                    age(&dir.join(f), Duration::from_secs(2 * 86_400));
                }
            }
        }
        State::Empty => {
            // Junk beside the compiler's files counts in bytes only.
            touch(&dir.join("notes.txt"), b"junk");
        }
        State::Unreadable | State::Unknown => unreachable!("made by the tests that need them"),
    }
}

/// Two releases that mark a finished compile with `model.done`.
const VERSIONS: [&str; 2] = ["2.15.128.0+56dc5a86", "2.16.1.0+2d4f85be"];

/// The states a cache of the compiler wrapper's own files can be made in.
const MADE: [State; 6] = [
    State::Ok,
    State::Corrupt,
    State::Failed,
    State::Locked,
    State::Incomplete,
    State::Empty,
];

/// A cache of two compiler versions holding four entries of each state
/// each (48 in all): the entries and the state each was made in.
fn cache(root: &Path) -> Vec<(PathBuf, State)> {
    let mut made = Vec::new();
    for (v, version) in VERSIONS.iter().enumerate() {
        for (s, state) in MADE.iter().enumerate() {
            for k in 0..4 {
                let name = format!("MODULE_{}{s}{k}+{:08x}", 100 + v, 0xabc0 + k);
                let dir = root.join(format!("neuronxcc-{version}")).join(name);
                entry(&dir, *state, k);
                made.push((dir, *state));
            }
        }
    }
    made
}

fn state_of(status: &CacheStatus, dir: &Path) -> State {
    let e = status.entries.iter().find(|e| e.path == dir);
    e.unwrap_or_else(|| panic!("{} not reported", dir.display()))
        .state
}

#[test]
fn every_entry_of_a_cache_gets_the_state_it_was_made_in() {
    let d = tempfile::tempdir().unwrap();
    let made = cache(d.path());
    let status = status(d.path()).unwrap();
    assert_eq!(status.entries.len(), 48);
    assert!(status.errors.is_empty(), "{:?}", status.errors);
    for (dir, state) in &made {
        assert_eq!(state_of(&status, dir), *state, "{}", dir.display());
    }
    assert!(!status.all_ok());
    let ok = status
        .entries
        .iter()
        .find(|e| e.state == State::Ok)
        .unwrap();
    assert_eq!(
        (ok.arch.as_deref(), ok.num_cores.is_some(), ok.cc_world_size),
        (Some("cayman"), true, Some(2))
    );
    assert_eq!(ok.compiler.as_deref(), Some(VERSIONS[0]));
    assert!(ok.graph_hash.starts_with("100") && ok.flags_hash.is_some());
    let failed = status
        .entries
        .iter()
        .find(|e| e.state == State::Failed)
        .unwrap();
    assert_eq!(
        failed.reason.as_deref(),
        Some("ERROR 0 [neuronx-cc]: failed")
    );
    let corrupt: Vec<_> = status
        .entries
        .iter()
        .filter(|e| e.state == State::Corrupt)
        .map(|e| e.reason.clone().unwrap())
        .collect();
    assert!(corrupt.iter().any(|r| r.contains("no model.neff")));
    assert!(corrupt.iter().any(|r| !r.contains("no model.neff")));
    let locked = status
        .entries
        .iter()
        .find(|e| e.state == State::Locked)
        .unwrap();
    assert!(locked
        .reason
        .as_deref()
        .unwrap()
        .starts_with("locked, lock last modified 20"));
    // Per version, newest first: both name every state, four entries each.
    let by = status.by_version();
    assert_eq!(by.len(), 2);
    assert_eq!(by[0].compiler.as_deref(), Some(VERSIONS[1]));
    for v in &by {
        assert_eq!(v.states.len(), 6);
        assert!(v.states.values().all(|&(n, bytes)| n == 4 && bytes > 0));
    }
}

#[test]
fn prune_is_dry_until_applied_and_then_removes_exactly_what_it_selected() {
    let d = tempfile::tempdir().unwrap();
    let made = cache(d.path());
    let st = status(d.path()).unwrap();
    let failed = PruneOptions::default().failed(true);
    let plan = prune(d.path(), &st, &failed.clone().min_age(Duration::ZERO))
        .unwrap()
        .removals;
    assert_eq!(plan.len(), 8);
    assert!(plan.iter().all(|r| r.state == State::Failed && !r.removed));
    assert!(
        made.iter().all(|(dir, _)| dir.exists()),
        "a dry run removed"
    );
    let done = prune(d.path(), &st, &failed.min_age(Duration::ZERO).apply(true))
        .unwrap()
        .removals;
    assert!(done.iter().all(|r| r.removed && r.error.is_none()));
    for (dir, state) in &made {
        assert_eq!(dir.exists(), *state != State::Failed, "{}", dir.display());
    }
}

#[test]
fn a_fresh_lock_is_never_pruned_and_an_old_one_only_when_asked() {
    let d = tempfile::tempdir().unwrap();
    let made = cache(d.path());
    // Ages count from the later of modification and change time: the
    // "old" locks and NEFFs are a second and a half old, and the others
    // are written again now (a copy that keeps old modification times
    // still changed when it was copied).
    std::thread::sleep(Duration::from_millis(1500));
    for (dir, s) in &made {
        for f in ["model.hlo_module.pb.lock", "model.neff"] {
            let p = dir.join(f);
            let recent = SystemTime::now() - Duration::from_secs(60);
            let fresh = p
                .symlink_metadata()
                .is_ok_and(|m| m.modified().unwrap() > recent);
            if fresh && matches!(s, State::Locked | State::Incomplete | State::Ok) {
                touch(&p, &std::fs::read(&p).unwrap());
            }
        }
    }
    let st = status(d.path()).unwrap();
    let old_age = Duration::from_secs(1);
    // Every version but the newest: its fresh locks (and the ok entry
    // holding a lock) stay.
    // Without --locked-older-than every lock counts as fresh: the four
    // locked entries and the ok one holding a lock stay.
    let old = PruneOptions::default()
        .keep_versions(1)
        .min_age(Duration::ZERO);
    let plan = prune(d.path(), &st, &old).unwrap().removals;
    assert_eq!(plan.len(), 24 - 5, "{plan:#?}");
    assert!(plan
        .iter()
        .all(|r| r.compiler.as_deref() == Some(VERSIONS[0])));
    assert!(plan.iter().all(|r| r.state != State::Locked));
    // With it, the two old locks of the old version go too, and those of
    // the newest version by that rule; the fresh ones still stay.
    let plan = prune(d.path(), &st, &old.clone().locked_older_than(old_age))
        .unwrap()
        .removals;
    assert_eq!(plan.len(), 24 - 3 + 2, "{plan:#?}");
    // --min-age of a second keeps every entry, whatever selects it.
    let young = prune(d.path(), &st, &old.clone().min_age(Duration::from_secs(60)))
        .unwrap()
        .removals;
    assert!(
        young.iter().all(|r| r.kept.is_some() && !r.removed),
        "{young:#?}"
    );
    // Locks older than a second: the two old ones of each version.
    let locks = PruneOptions::default()
        .locked_older_than(old_age)
        .min_age(Duration::ZERO)
        .apply(true);
    let done = prune(d.path(), &st, &locks).unwrap().removals;
    assert_eq!(done.len(), 4);
    assert!(done.iter().all(|r| r.removed && r.state == State::Locked));
    let left = made
        .iter()
        .filter(|(dir, s)| *s == State::Locked && dir.exists())
        .count();
    assert_eq!(left, 4);
    // Incomplete entries untouched for a second: the two old ones of each.
    let inc = PruneOptions::default()
        .incomplete_older_than(old_age)
        .min_age(Duration::ZERO);
    assert_eq!(prune(d.path(), &st, &inc).unwrap().removals.len(), 4);
}

#[test]
fn an_entry_changed_since_it_was_judged_is_left() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("neuronxcc-2.15.0.0+1/MODULE_1+2");
    entry(&dir, State::Failed, 0);
    let st = status(d.path()).unwrap();
    // The compile is run again: a lock appears, then its NEFF.
    touch(&dir.join("model.hlo_module.pb.lock"), b"");
    let opts = PruneOptions::default()
        .failed(true)
        .min_age(Duration::ZERO)
        .apply(true);
    let r = prune(d.path(), &st, &opts).unwrap().removals;
    assert!(!r[0].removed && r[0].error.as_deref().unwrap().contains("fresh lock"));
    std::fs::remove_file(dir.join("model.hlo_module.pb.lock")).unwrap();
    touch(&dir.join("model.neff"), &good_neff());
    let r = prune(d.path(), &st, &opts).unwrap().removals;
    assert!(!r[0].removed && r[0].error.as_deref().unwrap().contains("changed"));
    assert!(dir.exists());
}

#[test]
fn links_below_the_root_are_never_followed_and_never_pruned() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("cache");
    let elsewhere = d.path().join("elsewhere");
    entry(&elsewhere.join("MODULE_9+9"), State::Failed, 0);
    std::fs::create_dir_all(&root).unwrap();
    std::os::unix::fs::symlink(&elsewhere, root.join("neuronxcc-2.15.0.0+1")).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("MODULE_9+9"), root.join("MODULE_8+8")).unwrap();
    let st = status(&root).unwrap();
    // The linked version directory is not read (an error); the linked
    // entry is reported as what it is, a link, and judged unknown.
    assert_eq!(st.entries.len(), 1, "{:?}", st.entries);
    assert_eq!(st.entries[0].state, State::Unknown);
    assert!(st.entries[0]
        .reason
        .as_deref()
        .unwrap()
        .contains("is a link"));
    assert_eq!(st.errors.len(), 1);
    assert!(st.errors[0].reason.contains("a link: not followed"));
    let every = PruneOptions::default()
        .failed(true)
        .corrupt(true)
        .keep_versions(1)
        .incomplete_older_than(Duration::ZERO)
        .locked_older_than(Duration::ZERO)
        .max_size(0)
        .include_current(true)
        .apply(true);
    assert!(prune(&root, &st, &every).unwrap().removals.is_empty());
    assert!(elsewhere.join("MODULE_9+9/model.log").exists());
}

#[test]
fn unreadable_parts_are_reported_and_the_rest_judged() {
    let d = tempfile::tempdir().unwrap();
    let v = d.path().join("neuronxcc-2.15.0.0+1");
    entry(&v.join("MODULE_1+1"), State::Ok, 0);
    std::fs::create_dir_all(&v).unwrap();
    touch(&v.join("MODULE_2+2"), b"a file, not an entry");
    touch(&d.path().join("stray.txt"), b"");
    let st = status(d.path()).unwrap();
    assert_eq!(st.entries.len(), 1);
    assert_eq!(st.entries[0].state, State::Ok);
    assert_eq!(st.errors.len(), 1);
    assert!(st.errors[0].reason.contains("not a directory"));
    // A root that is a file, or missing, is refused whole.
    let file = d.path().join("stray.txt");
    assert!(status(&file)
        .unwrap_err()
        .to_string()
        .contains("not a directory"));
    assert!(status(&d.path().join("missing")).is_err());
    // A root that is a version directory holds its entries directly.
    let st = status(&v).unwrap();
    assert_eq!(st.entries[0].compiler.as_deref(), Some("2.15.0.0+1"));
}

#[test]
fn a_state_reported_while_the_entry_changes_is_one_it_really_had() {
    // One entry goes from incomplete to ok and back (model.done comes and
    // goes); another from locked to incomplete (its lock comes and goes).
    // Whatever moment a status lands on, it reports one of the two.
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("neuronxcc-2.15.0.0+1/MODULE_1+1");
    let b = d.path().join("neuronxcc-2.15.0.0+1/MODULE_2+2");
    entry(&a, State::Incomplete, 1);
    touch(&a.join("model.neff"), &good_neff());
    entry(&b, State::Incomplete, 1);
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::write(a.join("model.done"), b"");
                let _ = std::fs::write(b.join("x.lock"), b"");
                let _ = std::fs::remove_file(a.join("model.done"));
                let _ = std::fs::remove_file(b.join("x.lock"));
            }
        });
        for _ in 0..200 {
            let st = status(d.path()).unwrap();
            assert_eq!(st.entries.len(), 2);
            let (sa, sb) = (st.entries[0].state, st.entries[1].state);
            assert!(matches!(sa, State::Incomplete | State::Ok), "{sa}");
            assert!(matches!(sb, State::Incomplete | State::Locked), "{sb}");
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
}
