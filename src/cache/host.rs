//! What the host says that a prune must respect: whether a Neuron
//! compiler (`neuronx-cc`) is running (locks are then not second-guessed,
//! as optimum-neuron's `cache cleanup` refuses too), and whether the file
//! system holding a cache keeps access times (the clock `--max-size`
//! evicts by).

use std::path::Path;

/// The compiler's command name.
const COMPILER: &str = "neuronx-cc";

/// The id of a running `neuronx-cc` process on this host (by its command
/// name, or its program or script's name: it runs as a Python script), if
/// any. Processes this caller may not inspect are passed over.
pub(super) fn running_compiler() -> Option<u32> {
    running_compiler_in(Path::new("/proc"))
}

fn running_compiler_in(proc: &Path) -> Option<u32> {
    let mut pids: Vec<u32> = std::fs::read_dir(proc)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    pids.sort_unstable();
    pids.into_iter().find(|pid| {
        let dir = proc.join(pid.to_string());
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim_end() == COMPILER {
            return true;
        }
        let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
        cmdline
            .split(|&b| b == 0)
            .take(2)
            .any(|arg| arg.rsplit(|&b| b == b'/').next() == Some(COMPILER.as_bytes()))
    })
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
        p("10", "bash\n", b"bash\0-c\0echo neuronx-cc\0");
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
}
