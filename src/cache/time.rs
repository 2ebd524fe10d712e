//! Times as records carry them: absolute, RFC 3339 in UTC to the second
//! (`2026-12-06T03:41:23Z`), so that two reports of an unchanged cache are
//! the same text; ages and sizes (`1.5 GiB`) are for tables and messages
//! people read.

use std::time::{Duration, SystemTime};

use serde::Serializer;

/// `t` in RFC 3339, UTC, to the second.
pub(super) fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

/// Serializes an optional time as [`rfc3339`] text (or null).
pub(super) fn serialize<S: Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&rfc3339(*t)),
        None => s.serialize_none(),
    }
}

/// `d` as people read it: `42s`, `17m`, `5h`, `3d`.
pub fn human(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=119 => format!("{s}s"),
        120..=7199 => format!("{}m", s / 60),
        7200..=172_799 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

/// `n` bytes as people read them: `512 B`, `1.5 GiB` (powers of 1024).
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(human(Duration::from_secs(42)), "42s");
        assert_eq!(human(Duration::from_secs(17 * 60)), "17m");
        assert_eq!(human(Duration::from_secs(5 * 3600)), "5h");
        assert_eq!(human(Duration::from_secs(3 * 86_400)), "3d");
    }

    #[test]
    fn sizes_read_in_powers_of_1024() {
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536 << 20), "1.5 GiB");
    }

    #[test]
    fn times_are_utc_to_the_second() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_528_483_900);
        assert_eq!(rfc3339(t), "2026-12-06T03:41:23Z");
    }
}
