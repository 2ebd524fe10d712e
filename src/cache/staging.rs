//! The names `neff cache sync` copies an entry under before it renames it
//! into place: `.neff-sync.<entry>.<pid>@<host>`, a hidden sibling of the
//! entry in the same directory. No layout calls such a name an entry: a
//! status reports it as a note, a prune never selects it, and the next sync
//! removes it once the sync that made it is gone.

use std::time::Duration;

/// What every staging name starts with.
pub(super) const PREFIX: &str = ".neff-sync.";

/// How long a staging directory made on another host is kept: its process
/// cannot be looked for from here.
pub(super) const OTHER_HOST_AGE: Duration = Duration::from_secs(24 * 3600);

/// A staging name, read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Staging {
    /// The entry it is a copy of.
    pub(super) entry: String,
    /// The process that makes it.
    pub(super) pid: u32,
    /// The host it runs on.
    pub(super) host: String,
}

/// The staging name of the entry `entry` for this process on `host`.
pub(super) fn name(entry: &str, host: &str) -> String {
    format!("{PREFIX}{entry}.{}@{host}", std::process::id())
}

/// The staging name `name` read back; `None` when it is not one.
pub(super) fn parse(name: &str) -> Option<Staging> {
    let rest = name.strip_prefix(PREFIX)?;
    let (left, host) = rest.rsplit_once('@')?;
    let (entry, pid) = left.rsplit_once('.')?;
    if entry.is_empty() || host.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(Staging {
        entry: entry.to_string(),
        pid: pid.parse().ok()?,
        host: host.to_string(),
    })
}

/// This host's name (the kernel's node name), as staging names carry it
/// (`localhost` where it cannot be read).
pub(super) fn host() -> String {
    let n = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let n: String = n
        .trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        .collect();
    if n.is_empty() {
        "localhost".into()
    } else {
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_staging_name_is_read_back_and_no_other_name_is_one() {
        let n = name("MODULE_1+ab", "node-1.example");
        let s = parse(&n).unwrap();
        assert_eq!(s.entry, "MODULE_1+ab");
        assert_eq!(s.pid, std::process::id());
        assert_eq!(s.host, "node-1.example");
        assert_eq!(
            parse(".neff-sync.a.b.12@h").map(|s| s.entry),
            Some("a.b".into())
        );
        for bad in [
            "MODULE_1+ab",
            ".neff-sync.",
            ".neff-sync.x.12",
            ".neff-sync.x.1a@h",
            ".neff-sync..12@h",
            ".neff-sync.x.12@",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        assert!(!host().is_empty());
    }
}
