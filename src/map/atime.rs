//! Whether reading a file would move its access time, asked only where the
//! kernel refused `O_NOATIME` (the caller neither owns the file nor holds
//! `CAP_FOWNER`) and the reader must leave that time alone: a compile
//! cache's `--max-size` evicts the least recently used entries by it, so
//! a judgement of the cache run by another user must not reorder them.
//!
//! The kernel's rule (`atime_needs_update` and `relatime_need_update` in
//! fs/inode.c): a read never updates the access time on a `noatime`
//! mount; on a `relatime` one (the default) it does when the access time
//! is not after the last modification or status change, or is a day old;
//! on a `strictatime` one it always does. The mount's options come from
//! `/proc/self/mountinfo`, read at most once a minute, and are found by
//! the file's device (where several mounts show one file system, the one
//! that updates most is taken), else by the longest mount point above the
//! file's real path (a btrfs subvolume's files do not carry the device
//! the table names). A file whose mount is not found is taken to update
//! on every read.

use std::ffi::OsString;
use std::fs::Metadata;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};

/// How a mount updates access times on a read, the least first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Policy {
    /// `noatime`.
    Never,
    /// `relatime`.
    Relative,
    /// `strictatime` (neither option in the table).
    Always,
}

/// One line of the mount table.
#[derive(Debug)]
struct Mount {
    /// The file system's device, as `major:minor`.
    dev: (u32, u32),
    /// Where it is mounted.
    point: PathBuf,
    policy: Policy,
}

/// Seconds after which `relatime` updates an access time anyway.
const DAY: i64 = 24 * 60 * 60;

/// How much sooner than a day a `relatime` access time is taken to be
/// due: longer than any one read of a NEFF takes, so that the day does not
/// pass during the read.
const MARGIN: i64 = 10 * 60;

/// How long one reading of the mount table is used.
const FRESH: Duration = Duration::from_secs(60);

/// `Err(Error::AtimeKept)` when reading the open file `meta` (at `path`)
/// would move its access time; the caller has already been refused
/// `O_NOATIME` on it.
pub(super) fn untouched(path: &Path, meta: &Metadata) -> Result<()> {
    let policy = policy_of(&mounts(), meta.dev(), path);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let times = Times {
        accessed: (meta.atime(), meta.atime_nsec()),
        modified: (meta.mtime(), meta.mtime_nsec()),
        changed: (meta.ctime(), meta.ctime_nsec()),
    };
    if !moves(policy, times, now) {
        return Ok(());
    }
    let reader = rustix::process::geteuid().as_raw();
    log::debug!(
        "{}: not read: uid {reader} is refused O_NOATIME and the read would move its access time ({policy:?})",
        path.display()
    );
    Err(Error::AtimeKept {
        owner: meta.uid(),
        reader,
    })
}

/// A file's times, as seconds and nanoseconds since the epoch.
#[derive(Debug, Clone, Copy)]
struct Times {
    accessed: (i64, i64),
    modified: (i64, i64),
    changed: (i64, i64),
}

/// Whether a read `now` (seconds since the epoch) of a file of times `t`
/// on a mount of `policy` would update its access time.
fn moves(policy: Policy, t: Times, now: i64) -> bool {
    match policy {
        Policy::Never => false,
        Policy::Always => true,
        Policy::Relative => {
            t.modified >= t.accessed
                || t.changed >= t.accessed
                || now.saturating_sub(t.accessed.0) >= DAY - MARGIN
        }
    }
}

/// The mount table, read again when the last reading is a minute old.
fn mounts() -> Arc<Vec<Mount>> {
    static TABLE: Mutex<Option<(Instant, Arc<Vec<Mount>>)>> = Mutex::new(None);
    let mut held = TABLE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((at, table)) = &*held {
        if at.elapsed() < FRESH {
            return Arc::clone(table);
        }
    }
    let table = match std::fs::read("/proc/self/mountinfo") {
        Ok(t) => parse(&t),
        Err(e) => {
            log::debug!("/proc/self/mountinfo: {e}: every file is taken to update its access time");
            Vec::new()
        }
    };
    let table = Arc::new(table);
    *held = Some((Instant::now(), Arc::clone(&table)));
    table
}

/// The mounts of a `/proc/self/mountinfo` table.
fn parse(table: &[u8]) -> Vec<Mount> {
    table
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let f: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
            let dev = std::str::from_utf8(f.get(2)?).ok()?;
            let (major, minor) = dev.split_once(':')?;
            let opts = std::str::from_utf8(f.get(5)?).ok()?;
            Some(Mount {
                dev: (major.parse().ok()?, minor.parse().ok()?),
                point: PathBuf::from(OsString::from_vec(unescape(f.get(4)?))),
                policy: policy(opts),
            })
        })
        .collect()
}

/// What a mount's options (`rw,relatime,…`) say of access times.
fn policy(opts: &str) -> Policy {
    let mut p = Policy::Always;
    for o in opts.split(',') {
        match o {
            "noatime" => return Policy::Never,
            "relatime" => p = Policy::Relative,
            _ => {}
        }
    }
    p
}

/// The policy of the mount holding the file of device `dev` at `path`.
fn policy_of(mounts: &[Mount], dev: u64, path: &Path) -> Policy {
    let dev = (rustix::fs::major(dev), rustix::fs::minor(dev));
    let by_dev = mounts.iter().filter(|m| m.dev == dev).map(|m| m.policy);
    if let Some(p) = by_dev.max() {
        return p;
    }
    let Ok(real) = std::fs::canonicalize(path) else {
        return Policy::Always;
    };
    // The longest mount point above it; of mounts stacked on one point,
    // the last (the one seen).
    let mut best: Option<&Mount> = None;
    for m in mounts.iter().filter(|m| real.starts_with(&m.point)) {
        if best.is_none_or(|b| m.point.as_os_str().len() >= b.point.as_os_str().len()) {
            best = Some(m);
        }
    }
    best.map_or(Policy::Always, |m| m.policy)
}

/// A mount point as the table writes it (`\040` for a space).
fn unescape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let octal = |c: &u8| (b'0'..=b'7').contains(c);
        if s[i] == b'\\' && i + 3 < s.len() && s[i + 1..i + 4].iter().all(octal) {
            let v = (s[i + 1] - b'0') as u32 * 64 + (s[i + 2] - b'0') as u32 * 8;
            out.push((v + (s[i + 3] - b'0') as u32) as u8);
            i += 4;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &[u8] = b"\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 8:2 / /var/tmp rw,noatime shared:2 - ext4 /dev/sda2 rw
31 22 8:3 / /mnt/a\\040b rw,nosuid shared:3 - xfs /dev/sda3 rw
32 22 8:2 / /srv/bound rw,noatime shared:2 - ext4 /dev/sda2 rw
33 22 8:4 / /data rw,noatime shared:4 - ext4 /dev/sda4 rw
34 22 8:4 / /data2 rw,relatime shared:4 - ext4 /dev/sda4 rw
";

    fn dev(major: u32, minor: u32) -> u64 {
        rustix::fs::makedev(major, minor)
    }

    #[test]
    fn a_files_mount_is_found_by_its_device_the_most_updating_of_its_mounts() {
        let m = parse(TABLE);
        assert_eq!(m.len(), 6);
        assert_eq!(m[2].point, Path::new("/mnt/a b"));
        let nowhere = Path::new("/nonexistent/x");
        assert_eq!(policy_of(&m, dev(8, 1), nowhere), Policy::Relative);
        assert_eq!(policy_of(&m, dev(8, 2), nowhere), Policy::Never);
        assert_eq!(policy_of(&m, dev(8, 3), nowhere), Policy::Always);
        // One file system mounted noatime and relatime: a read through
        // the second moves the time.
        assert_eq!(policy_of(&m, dev(8, 4), nowhere), Policy::Relative);
        // A device the table does not name, at a path that cannot be
        // resolved: taken to update.
        assert_eq!(policy_of(&m, dev(9, 9), nowhere), Policy::Always);
        // …found by its path when it can be.
        assert_eq!(policy_of(&m, dev(9, 9), Path::new("/")), Policy::Relative);
    }

    #[test]
    fn relatime_moves_a_time_not_after_a_change_or_a_day_old() {
        let now = 1_000_000_000;
        let t = |accessed: i64, modified: i64, changed: i64| Times {
            accessed: (accessed, 500),
            modified: (modified, 500),
            changed: (changed, 500),
        };
        let read_since_changed = t(now - 3600, now - 7200, now - 7200);
        assert!(!moves(Policy::Relative, read_since_changed, now));
        assert!(moves(Policy::Always, read_since_changed, now));
        assert!(!moves(Policy::Never, t(0, now, now), now));
        // Not after the last modification, or the last status change.
        assert!(moves(
            Policy::Relative,
            t(now - 10, now - 10, now - 20),
            now
        ));
        assert!(moves(Policy::Relative, t(now - 10, now - 20, now - 5), now));
        // A day old, or about to be while it is read.
        assert!(moves(
            Policy::Relative,
            t(now - DAY, now - 2 * DAY, now - 2 * DAY),
            now
        ));
        let nearly = now - DAY + MARGIN / 2;
        assert!(moves(
            Policy::Relative,
            t(nearly, now - 2 * DAY, now - 2 * DAY),
            now
        ));
        // Nanoseconds count: a time a nanosecond after the change is after it.
        let mut ns = read_since_changed;
        ns.modified = (ns.accessed.0, ns.accessed.1 - 1);
        assert!(!moves(Policy::Relative, ns, now));
        ns.modified = ns.accessed;
        assert!(moves(Policy::Relative, ns, now));
    }

    #[test]
    fn mount_options_say_the_policy() {
        assert_eq!(policy("rw,noatime,nodiratime"), Policy::Never);
        assert_eq!(policy("rw,nosuid,relatime"), Policy::Relative);
        assert_eq!(policy("rw,nodiratime"), Policy::Always);
        assert_eq!(unescape(b"/a\\040b\\134c\\0"), b"/a b\\c\\0");
    }
}
