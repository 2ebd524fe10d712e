//! What the host says that a prune must respect: whether a Neuron
//! compiler (`neuronx-cc`) is running (locks are then not second-guessed,
//! as optimum-neuron's `cache cleanup` refuses too), and whether the file
//! system holding a cache keeps access times (the clock `--max-size`
//! evicts by).

use std::path::Path;

/// The names a compile runs under: the compiler itself, and the SDK's
/// tool that runs many of them.
const COMPILERS: [&str; 2] = ["neuronx-cc", "neuron_parallel_compile"];

/// The id of a running Neuron compile on this host: a process whose
/// command name is the compiler's, or whose command line names it
/// anywhere (`python3 -u …/bin/neuronx-cc compile …`, a shell's `-c`
/// string, `neuron_parallel_compile …`, the module `neuronxcc.…`), if
/// any. This process and those this caller may not inspect are passed
/// over. It sees this host only: compiles on other hosts sharing the
/// cache are covered by their locks ([`lock_held`]) and `--min-age`.
pub(super) fn running_compiler() -> Option<u32> {
    running_compiler_in(Path::new("/proc"))
}

fn running_compiler_in(proc: &Path) -> Option<u32> {
    let me = std::process::id();
    let mut pids: Vec<u32> = std::fs::read_dir(proc)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&pid| pid != me)
        .collect();
    pids.sort_unstable();
    pids.into_iter().find(|pid| {
        let dir = proc.join(pid.to_string());
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if COMPILERS.contains(&comm.trim_end()) {
            return true;
        }
        let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
        names_compiler(&cmdline)
    })
}

/// Whether a command line (`/proc/PID/cmdline`: arguments ended by NUL)
/// names the compiler in any of its words.
fn names_compiler(cmdline: &[u8]) -> bool {
    let sep = |b: &u8| {
        matches!(
            b,
            0 | b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'"' | b'\'' | b'='
        )
    };
    cmdline.split(sep).any(|w| {
        let base = w.rsplit(|&b| b == b'/').next().unwrap_or(w);
        COMPILERS.iter().any(|c| base == c.as_bytes()) || base.starts_with(b"neuronxcc.")
    })
}

/// Whether a live process holds a lock on the file `lock`: probed without
/// waiting for either kind a process may take (BSD `flock`, which
/// Python's `filelock` takes, and POSIX `fcntl` record locks, which
/// neither sees of the other), each let go at once when it was granted.
/// On NFS both reach the server's lock manager, so a lock another host
/// holds is seen too. `Some(why)` when one is held, or when neither probe
/// could tell (counted as held: nothing is removed on a guess).
pub(super) fn lock_held(lock: &Path) -> Option<String> {
    use rustix::fs::{FlockOperation as Op, Mode, OFlags};
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    let fd = match rustix::fs::open(lock, flags, Mode::empty()) {
        Ok(fd) => fd,
        // Gone: nobody holds it.
        Err(rustix::io::Errno::NOENT) => return None,
        Err(e) => return Some(format!("its lock cannot be probed ({e})")),
    };
    let name = lock
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let busy = |e: rustix::io::Errno| {
        matches!(e, rustix::io::Errno::WOULDBLOCK | rustix::io::Errno::ACCESS)
    };
    let flock = match rustix::fs::flock(&fd, Op::NonBlockingLockExclusive) {
        Ok(()) => {
            let _ = rustix::fs::flock(&fd, Op::Unlock);
            Ok(())
        }
        Err(e) => Err(e),
    };
    if let Err(e) = flock {
        if busy(e) {
            return Some(format!(
                "{name} is held by a live process (flock): a compile in progress"
            ));
        }
    }
    // A write lock conflicts with every record lock; it needs the file
    // open for writing, else a read lock sees the write locks.
    let rw = rustix::fs::open(lock, (flags - OFlags::RDONLY) | OFlags::RDWR, Mode::empty());
    let (probe, op) = match &rw {
        Ok(w) => (w, Op::NonBlockingLockExclusive),
        Err(_) => (&fd, Op::NonBlockingLockShared),
    };
    let record = match rustix::fs::fcntl_lock(probe, op) {
        Ok(()) => {
            let _ = rustix::fs::fcntl_lock(probe, Op::NonBlockingUnlock);
            Ok(())
        }
        Err(e) => Err(e),
    };
    match (flock, record) {
        (_, Err(e)) if busy(e) => Some(format!(
            "{name} is held by a live process (fcntl): a compile in progress"
        )),
        (Err(a), Err(b)) => Some(format!(
            "{name} cannot be probed ({a}; {b}): counted as held"
        )),
        _ => None,
    }
}

/// Whether the file system holding `path` keeps access times: not
/// mounted `noatime` (`relatime`, the default, updates one at most daily
/// and whenever it is older than the last change). `None` when the mount
/// table cannot be read.
pub(super) fn keeps_atime(path: &Path) -> Option<bool> {
    let table = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let path = std::fs::canonicalize(path).ok()?;
    Some(
        !mount_options(&table, &path)?
            .split(',')
            .any(|o| o == "noatime"),
    )
}

/// The options of the mount (in a `/proc/self/mountinfo` table) holding
/// the canonical `path`: the longest mount point above it.
fn mount_options<'t>(table: &'t str, path: &Path) -> Option<&'t str> {
    let mut best: Option<(usize, &str)> = None;
    for line in table.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let (Some(point), Some(opts)) = (f.get(4), f.get(5)) else {
            continue;
        };
        let point = unescape(point);
        if path.starts_with(&point) && best.is_none_or(|(n, _)| point.len() >= n) {
            best = Some((point.len(), opts));
        }
    }
    best.map(|(_, o)| o)
}

/// A mount point as the table writes it (`\040` for a space).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_mount_above_a_path_gives_its_options() {
        let table = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 8:2 / /var/tmp rw,noatime shared:2 - ext4 /dev/sda2 rw
31 22 8:3 / /mnt/a\\040b rw,nosuid shared:3 - xfs /dev/sda3 rw
";
        assert_eq!(
            mount_options(table, Path::new("/var/tmp/neuron-compile-cache")),
            Some("rw,noatime")
        );
        assert_eq!(
            mount_options(table, Path::new("/home/u")),
            Some("rw,relatime")
        );
        assert_eq!(
            mount_options(table, Path::new("/mnt/a b/c")),
            Some("rw,nosuid")
        );
        assert_eq!(
            mount_options(table, Path::new("/var/tmpx")),
            Some("rw,relatime")
        );
    }

    #[test]
    fn a_compiler_is_found_by_its_command_or_script_name() {
        let d = tempfile::tempdir().unwrap();
        let p = |pid: &str, comm: &str, cmd: &[u8]| {
            let dir = d.path().join(pid);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("comm"), comm).unwrap();
            std::fs::write(dir.join("cmdline"), cmd).unwrap();
        };
        p("10", "bash\n", b"bash\0-c\0echo neuron-cc neuronx-ccx\0");
        assert_eq!(running_compiler_in(d.path()), None);
        p(
            "12",
            "python3\n",
            b"/usr/bin/python3\0/opt/venv/bin/neuronx-cc\0compile\0",
        );
        assert_eq!(running_compiler_in(d.path()), Some(12));
        p("11", "neuronx-cc\n", b"");
        assert_eq!(running_compiler_in(d.path()), Some(11));
    }

    #[test]
    fn a_compiler_is_seen_wherever_its_command_line_names_it() {
        assert!(names_compiler(
            b"python3\0-u\0/opt/v/bin/neuronx-cc\0compile\0"
        ));
        assert!(names_compiler(
            b"bash\0-c\0cd /x && neuronx-cc compile a.pb\0"
        ));
        assert!(names_compiler(
            b"/usr/bin/python3\0/opt/v/bin/neuron_parallel_compile\0torchrun\0"
        ));
        assert!(names_compiler(
            b"python\0-m\0neuronxcc.driver.CommandDriver\0compile\0"
        ));
        assert!(!names_compiler(
            b"neff\0cache\0prune\0/var/tmp/neuron-compile-cache/neuronxcc-2.15\0"
        ));
        assert!(!names_compiler(b"vim\0neuronx-cc.txt\0"));
    }

    #[test]
    fn a_held_lock_is_seen_whichever_kind_holds_it_and_a_free_one_is_let_go() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("model.hlo_module.pb.lock");
        std::fs::write(&p, "").unwrap();
        assert_eq!(lock_held(&p), None);
        // Free again after the probe: a second probe says the same.
        assert_eq!(lock_held(&p), None);
        assert_eq!(lock_held(&d.path().join("gone.lock")), None);
    }
}
