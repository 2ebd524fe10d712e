//! PAX extended-header records: `"<len> <key>=<value>\n"`, repeated.
//!
//! Only the keywords that change what the index records are kept: `path`,
//! `linkpath`, `size`, `mtime` and the `GNU.sparse.*` family (read by
//! [`super::sparse`]). Values are kept as spans of the tar bytes.
//! An empty value unsets the keyword (POSIX), which is recorded as
//! `Some(None)`: the walk reads an unset `mtime` as the header's, and
//! refuses an unset `path` or link's `linkpath` (GNU tar reads it as "",
//! libarchive as the header's).

use std::ops::Range;

use super::sparse::Records;

/// The keywords of one `x` or `g` header that the index uses.
#[derive(Debug, Clone)]
pub struct Overrides<N = Range<usize>> {
    pub path: Option<Option<N>>,
    pub linkpath: Option<Option<N>>,
    pub size: Option<Option<u64>>,
    pub mtime: Option<Option<i64>>,
    /// The `GNU.sparse.*` records, if any: the entry is a GNU sparse file
    /// (PAX 0.x or 1.0 encoding, see [`super::sparse`]).
    pub sparse: Option<Box<Records<N>>>,
}

impl<N> Default for Overrides<N> {
    fn default() -> Self {
        Overrides {
            path: None,
            linkpath: None,
            size: None,
            mtime: None,
            sparse: None,
        }
    }
}

impl<N> Overrides<N> {
    /// Converts the kept spans (for example into owned names).
    pub fn map<M>(self, mut f: impl FnMut(N) -> M) -> Overrides<M> {
        let mut conv = |o: Option<Option<N>>| o.map(|v| v.map(&mut f));
        Overrides {
            path: conv(self.path),
            linkpath: conv(self.linkpath),
            size: self.size,
            mtime: self.mtime,
            sparse: self.sparse.map(|r| Box::new(r.map_name(&mut f))),
        }
    }

    /// Applies `newer` on top of `self` (later records win).
    pub fn merge(&mut self, newer: Overrides<N>) {
        if newer.path.is_some() {
            self.path = newer.path;
        }
        if newer.linkpath.is_some() {
            self.linkpath = newer.linkpath;
        }
        if newer.size.is_some() {
            self.size = newer.size;
        }
        if newer.mtime.is_some() {
            self.mtime = newer.mtime;
        }
        if newer.sparse.is_some() {
            self.sparse = newer.sparse;
        }
    }
}

/// Parses the records in `tar[span]` (spans in the result index `tar`).
/// Errors name the record's problem; the caller adds the header's offset.
pub fn parse(tar: &[u8], span: Range<usize>) -> Result<Overrides, String> {
    let mut out = Overrides::default();
    let end = span.end;
    let mut pos = span.start;
    while pos < end {
        // Writers may pad the data with NULs after the last record.
        if tar[pos] == 0 && tar[pos..end].iter().all(|&b| b == 0) {
            if out.sparse.is_some() {
                // libarchive calls such a header malformed and stops before
                // it applies GNU.sparse.name; GNU tar reads every record.
                return Err("NUL padding after GNU.sparse records: libarchive drops \
                            GNU.sparse.name, GNU tar reads it (GNU tar and libarchive \
                            read it differently)"
                    .into());
            }
            break;
        }
        let rec = &tar[pos..end];
        let sp = memchr::memchr(b' ', rec).ok_or("PAX record has no length")?;
        let len_txt = &rec[..sp];
        if len_txt.is_empty() || !len_txt.iter().all(u8::is_ascii_digit) {
            return Err(format!(
                "PAX record length {:?} is not a decimal number",
                String::from_utf8_lossy(len_txt)
            ));
        }
        // Leading zeros are read by GNU tar and libarchive alike; a length
        // too large for the header is refused below.
        let len = len_txt.iter().try_fold(0usize, |n, &d| {
            n.checked_mul(10)?.checked_add(usize::from(d - b'0'))
        });
        let len = len.unwrap_or(usize::MAX);
        if len == 0 {
            return Err("PAX record length is 0".into());
        }
        if len > rec.len() {
            return Err(format!(
                "PAX record length {len} runs past the extended header ({} bytes left)",
                rec.len()
            ));
        }
        if len <= sp + 1 || rec[len - 1] != b'\n' {
            return Err(format!(
                "PAX record of length {len} does not end in a newline"
            ));
        }
        let kv_start = pos + sp + 1;
        let kv_end = pos + len - 1;
        let kv = &tar[kv_start..kv_end];
        let eq = memchr::memchr(b'=', kv).ok_or("PAX record has no '='")?;
        let key = &kv[..eq];
        if key.is_empty() || key.contains(&0) {
            // GNU tar reads the keyword as a C string and finds no '=';
            // libarchive calls the header invalid and drops all of it.
            return Err(format!(
                "PAX record keyword \"{}\" is empty or holds a NUL (GNU tar and libarchive refuse it)",
                key.escape_ascii()
            ));
        }
        let val = kv_start + eq + 1..kv_end;
        let text = &tar[val.clone()];
        // A name ends at its first NUL, as GNU tar and libarchive read it
        // (the rest, `../` included, is never part of the name).
        let name = match memchr::memchr(0, text) {
            Some(nul) => val.start..val.start + nul,
            None => val.clone(),
        };
        match key {
            b"path" => out.path = Some((!name.is_empty()).then_some(name)),
            b"linkpath" => out.linkpath = Some((!name.is_empty()).then_some(name)),
            // An empty size is not "unset": GNU tar calls it invalid and
            // keeps the header's size, libarchive reads 0.
            b"size" => out.size = Some(Some(parse_size(text)?)),
            b"mtime" => {
                if text.is_empty() {
                    out.mtime = Some(None);
                } else if let Some(t) = parse_time(text) {
                    out.mtime = Some(Some(t));
                }
                // Else (malformed or out of range) ignored, as GNU tar
                // ignores it: the header's mtime stands. Metadata only:
                // neither tool lists or extracts other members or bytes.
            }
            k if k.starts_with(b"GNU.sparse.") => out
                .sparse
                .get_or_insert_with(Default::default)
                .record(k, text, name)?,
            _ => {}
        }
        pos += len;
    }
    Ok(out)
}

/// A PAX `size`: decimal digits (leading zeros allowed) up to
/// `i64::MAX`, which GNU tar and libarchive read alike. Anything else is
/// read differently (GNU tar keeps the header's size where libarchive
/// reads the digits before a space or dot, or 0, or refuses), so refused.
fn parse_size(t: &[u8]) -> Result<u64, String> {
    std::str::from_utf8(t)
        .ok()
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|&v| i64::try_from(v).is_ok())
        .ok_or_else(|| {
            format!(
                "PAX size \"{}\" is not a decimal number up to 2^63-1 (GNU tar and \
                 libarchive read it differently)",
                t.escape_ascii()
            )
        })
}

/// `mtime` is decimal seconds with an optional fraction (`-1.5` is 1.5 s
/// before the epoch); keep whole seconds, rounded towards negative
/// infinity, as tar does. `None` for a value that is not such a number or
/// does not fit in 64 bits.
fn parse_time(t: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(t).ok()?;
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let digits = int.strip_prefix('-').unwrap_or(int);
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let secs: i64 = int.parse().ok()?;
    let has_frac = frac.bytes().any(|b| b != b'0');
    if int.starts_with('-') {
        secs.checked_sub(i64::from(has_frac))
    } else {
        Some(secs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &[u8]) -> Result<Overrides, String> {
        parse(s, 0..s.len())
    }

    #[test]
    fn reads_path_size_and_mtime() {
        let r = b"20 path=a/long/name\n13 size=4096\n30 mtime=1700000000.123456789\n";
        let o = p(r).unwrap();
        assert_eq!(&r[o.path.unwrap().unwrap()], b"a/long/name");
        assert_eq!(o.size, Some(Some(4096)));
        assert_eq!(o.mtime, Some(Some(1_700_000_000)));
    }

    #[test]
    fn zero_length_record_is_refused() {
        assert!(p(b"0 path=x\n").unwrap_err().contains("length is 0"));
    }

    #[test]
    fn record_longer_than_header_is_refused() {
        assert!(p(b"99 path=x\n").unwrap_err().contains("runs past"));
    }

    #[test]
    fn record_without_equals_is_refused() {
        assert!(p(b"11 pathxyz\n").unwrap_err().contains("no '='"));
    }

    #[test]
    fn a_keyword_that_is_empty_or_holds_a_nul_is_refused() {
        // GNU tar: "missing equal sign" / "unknown keyword ''"; libarchive:
        // "malformed pax extended attribute" (and drops the path).
        assert!(p(b"14 path=named\n10 k\0=vle\n")
            .unwrap_err()
            .contains("NUL"));
        assert!(p(b"14 path=named\n9 =value\n").is_err());
    }

    /// One record with its length computed.
    fn rec(k: &str, v: &str) -> Vec<u8> {
        let rest = format!(" {k}={v}\n");
        let mut n = rest.len() + 1;
        while format!("{n}{rest}").len() != n {
            n += 1;
        }
        format!("{n}{rest}").into_bytes()
    }

    #[test]
    fn a_size_other_than_decimal_digits_is_refused() {
        for bad in ["-1", "", " 4", "4 ", "4.0", "+4", "99999999999999999999"] {
            let e = p(&rec("size", bad)).unwrap_err();
            assert!(e.contains("read it differently"), "{bad:?}: {e}");
        }
        assert_eq!(p(&rec("size", "0004")).unwrap().size, Some(Some(4)));
    }

    #[test]
    fn a_length_with_leading_zeros_is_read() {
        let r = b"00019 path=longnam\n";
        let o = p(r).unwrap();
        assert_eq!(&r[o.path.unwrap().unwrap()], b"longnam");
        assert!(p(b"000000000000000000000000000000000000009 path=x\n").is_err());
        assert!(p(b"99999999999999999999999 path=x\n")
            .unwrap_err()
            .contains("runs past"));
    }

    #[test]
    fn mtimes_are_floored_and_malformed_ones_ignored() {
        let m = |v: &str| p(&rec("mtime", v)).unwrap().mtime;
        assert_eq!(m("1.5"), Some(Some(1)));
        assert_eq!(m("-1.5"), Some(Some(-2)));
        assert_eq!(m("-1"), Some(Some(-1)));
        assert_eq!(m("1."), Some(Some(1)));
        assert_eq!(m("99999999999999999999"), None);
        assert_eq!(m("-99999999999999999999.5"), None);
        assert_eq!(m("abc"), None);
        assert_eq!(m(".5"), None);
        assert_eq!(m(""), Some(None));
    }

    #[test]
    fn empty_value_unsets() {
        let o = p(b"8 path=\n").unwrap();
        assert_eq!(o.path, Some(None));
    }

    #[test]
    fn trailing_nul_padding_is_ignored() {
        let o = p(b"11 size=10\n\0\0\0").unwrap();
        assert_eq!(o.size, Some(Some(10)));
    }
}
