//! Numeric header fields: octal text, or GNU base-256 binary.
//!
//! GNU tar and libarchive parse these fields differently at the edges, so
//! both parsers are modelled here, byte for byte from their sources (GNU
//! tar 1.34 `from_header`, libarchive 3.6 `tar_atol` and the format bid's
//! `validate_number_field`). A field that decides what is read (the size)
//! is read only where the two agree ([`parse_size`]); a field that is
//! metadata only (mode, mtime) is read as libarchive, the runtime's reader,
//! reads it ([`parse_meta`]): where GNU tar rejects such a field it warns,
//! exits 2, and still lists and extracts the same members and bytes.

/// GNU tar's reading of a numeric field (`from_header`), or why it
/// rejects the field (it then reports an error; for a size it skips the
/// header). Values outside `min..=max` are rejected too.
pub fn gnu(f: &[u8], min: i128, max: i128) -> Result<i128, &'static str> {
    let lim = f.len();
    let mut i = usize::from(f.first() == Some(&0)); // one leading NUL
    loop {
        if i == lim {
            return Err("it is blank"); // "Blanks in header where numeric value expected"
        }
        if !is_c_space(f[i]) {
            break;
        }
        i += 1;
    }
    let mut value: i128 = 0;
    if is_octal(f[i]) {
        while i < lim && is_octal(f[i]) {
            // At most 12 digits (36 bits): no overflow, and GNU's
            // two's-complement reading of overflowing octal never applies.
            value = value * 8 + i128::from(f[i] - b'0');
            i += 1;
        }
    } else if f[i] == b'-' || f[i] == b'+' {
        // Base-64, written by GNU tar test versions of 1999.
        let negative = f[i] == b'-';
        i += 1;
        while i < lim {
            let Some(d) = base64_digit(f[i]) else { break };
            value = value * 64 + i128::from(d);
            if value > i128::from(u64::MAX) {
                return Err("it overflows 64 bits");
            }
            i += 1;
        }
        if negative {
            value = -value;
        }
    } else if i + 2 <= lim && (f[i] == 0x80 || f[i] == 0xff) {
        // Base-256: bit 6 of the marker byte is the sign.
        value = i128::from(f[i] & 0x3f) - if f[i] & 0x40 != 0 { 0x40 } else { 0 };
        i += 1;
        while i < lim {
            value = value * 256 + i128::from(f[i]);
            i += 1;
        }
        // GNU computes in 64 bits and rejects what does not fit.
        if value > i128::from(u64::MAX) || value < i128::from(i64::MIN) {
            return Err("it overflows 64 bits");
        }
    }
    if i != lim && f[i] != 0 && !is_c_space(f[i]) {
        // "Archive contains ... where numeric value expected"
        return Err("a byte other than a space or NUL follows the number");
    }
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err("it is out of range")
    }
}

/// libarchive's reading of a numeric field (`tar_atol`): base-256 when
/// the top bit of the first byte is set (any such byte), else octal after
/// spaces and tabs, with an optional `-`, up to the first other byte;
/// overflow saturates.
pub fn libarchive(f: &[u8]) -> i64 {
    match f.first() {
        Some(&b) if b & 0x80 != 0 => libarchive_base256(f),
        _ => libarchive_octal(f),
    }
}

fn libarchive_octal(f: &[u8]) -> i64 {
    let mut i = 0;
    while i < f.len() && (f[i] == b' ' || f[i] == b'\t') {
        i += 1;
    }
    let negative = f.get(i) == Some(&b'-');
    i += usize::from(negative);
    let mut v: i128 = 0;
    while i < f.len() && is_octal(f[i]) {
        v = v * 8 + i128::from(f[i] - b'0');
        let bound = if negative {
            -i128::from(i64::MIN)
        } else {
            i128::from(i64::MAX)
        };
        if v > bound {
            return if negative { i64::MIN } else { i64::MAX };
        }
        i += 1;
    }
    let v = if negative { -v } else { v };
    v as i64 // in range: checked above
}

fn libarchive_base256(f: &[u8]) -> i64 {
    let neg = f[0] & 0x40 != 0;
    let fill = if neg { 0xff } else { 0x00 };
    let first = if neg { f[0] | 0x80 } else { f[0] & 0x7f };
    // Bytes beyond the last 8 must be sign fill, and the first kept byte
    // must carry the sign, else the value saturates.
    let mut bytes = f.to_vec();
    bytes[0] = first;
    let (high, low) = bytes.split_at(bytes.len().saturating_sub(8));
    let saturated = if neg { i64::MIN } else { i64::MAX };
    if high.iter().any(|&b| b != fill) {
        return saturated;
    }
    if low.first().is_some_and(|&b| (b ^ fill) & 0x80 != 0) {
        return saturated;
    }
    let mut v: u64 = if neg { u64::MAX } else { 0 };
    for &b in low {
        v = (v << 8) | u64::from(b);
    }
    v as i64
}

/// Whether libarchive's format bid accepts the field
/// (`validate_number_field`): a base-256 marker (`0x80`, `0xff`) or a
/// leading NUL, or octal digits between spaces and NULs. libarchive does
/// not recognize a tar whose first header fails this in its mode, uid,
/// gid, mtime, size or device fields.
pub fn libarchive_bids(f: &[u8]) -> bool {
    if matches!(f.first(), Some(0x80 | 0xff | 0)) {
        return true;
    }
    let mut i = 0;
    while i < f.len() && f[i] == b' ' {
        i += 1;
    }
    while i < f.len() && is_octal(f[i]) {
        i += 1;
    }
    f[i..].iter().all(|&b| b == b' ' || b == 0)
}

/// The size field, read only where GNU tar and libarchive read the same
/// non-negative number: both read octal digits up to a space or NUL
/// (whatever follows it), leading spaces, a field without a terminator, a
/// field of NULs (0), and GNU base-256 (`0x80`). They differ on a NUL
/// before the digits, a field of spaces, other bytes after the digits,
/// other base-256 markers and negative numbers: refused, saying so.
pub fn parse_size(f: &[u8]) -> Result<u64, String> {
    let g = gnu(f, 0, i128::from(i64::MAX));
    let l = libarchive(f);
    match g {
        Ok(v) if v == i128::from(l) => Ok(l as u64),
        _ => {
            let gnu = match g {
                Ok(v) => format!("reads {v}"),
                Err(why) => format!("rejects it ({why})"),
            };
            let la = if l < 0 {
                "refuses a negative size".to_string()
            } else {
                format!("reads {l}")
            };
            Err(format!(
                "\"{}\": GNU tar {gnu}, libarchive {la} (GNU tar and libarchive read it differently)",
                f.escape_ascii()
            ))
        }
    }
}

/// A metadata field (mode, mtime) as libarchive reads it. Never refused:
/// where GNU tar rejects the field it reports an error but lists and
/// extracts the same members and bytes.
pub fn parse_meta(f: &[u8]) -> i64 {
    libarchive(f)
}

/// Octal digits after optional spaces, ended by spaces and NULs; a field
/// of only NULs and spaces is 0. Strict: used for the checksum, where
/// anything else means "not a tar header".
pub(crate) fn parse_octal(f: &[u8]) -> Result<u64, String> {
    let mut i = 0;
    while i < f.len() && f[i] == b' ' {
        i += 1;
    }
    let mut v: u64 = 0;
    while i < f.len() && is_octal(f[i]) {
        v = v
            .checked_mul(8)
            .and_then(|v| v.checked_add(u64::from(f[i] - b'0')))
            .ok_or("octal number overflows 64 bits")?;
        i += 1;
    }
    if f[i..].iter().any(|&b| b != b' ' && b != 0) {
        return Err(format!(
            "unexpected byte in numeric field \"{}\"",
            f.escape_ascii()
        ));
    }
    Ok(v)
}

fn is_octal(b: u8) -> bool {
    (b'0'..=b'7').contains(&b)
}

/// C `isspace` in the C locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// GNU tar's base-64 digits: `A-Z a-z 0-9 + /`.
fn base64_digit(b: u8) -> Option<u8> {
    match b {
        b'A'..=b'Z' => Some(b - b'A'),
        b'a'..=b'z' => Some(b - b'a' + 26),
        b'0'..=b'9' => Some(b - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(f: &[u8]) -> Result<u64, String> {
        parse_size(f)
    }

    #[test]
    fn sizes_both_readers_read_alike_are_read() {
        assert_eq!(size(b"00000001750\0"), Ok(1000));
        assert_eq!(size(b"   1750 \0\0\0\0"), Ok(1000));
        assert_eq!(size(b"\0\0\0\0"), Ok(0));
        assert_eq!(size(b"000000001750"), Ok(1000), "no terminator");
        assert_eq!(size(b"0000000004 7"), Ok(4), "a space ends the digits");
        assert_eq!(size(b"0000000004\x007"), Ok(4), "so does a NUL");
        assert_eq!(size(b"0000000004 8"), Ok(4));
        assert_eq!(size(b"\t0000000004\0"), Ok(4));
        assert_eq!(size(b"\0\x00000123"), Ok(0), "both stop at the second NUL");
        let mut f = [0u8; 12];
        f[0] = 0x80;
        f[11] = 0x01;
        f[10] = 0x02;
        assert_eq!(size(&f), Ok(0x0201));
    }

    #[test]
    fn sizes_the_readers_read_differently_are_refused() {
        // GNU tar skips one leading NUL and reads 0o2273; libarchive 0.
        let e = size(b"\x0000000002273").unwrap_err();
        assert!(e.contains("GNU tar reads 1211, libarchive reads 0"), "{e}");
        // GNU tar rejects blanks and trailing garbage; libarchive reads.
        assert!(size(b"            ").unwrap_err().contains("rejects"));
        assert!(size(b"0000000004x\0").unwrap_err().contains("rejects"));
        // A base-256 marker GNU tar does not write.
        let mut f = [0u8; 12];
        f[0] = 0x81;
        f[11] = 2;
        assert!(size(&f).unwrap_err().contains("read it differently"));
        // Negative: GNU tar rejects it, libarchive refuses it.
        assert!(size(&[0xff; 12]).unwrap_err().contains("negative"));
        assert!(size(b"-1\0").is_err());
    }

    #[test]
    fn base256_values_as_both_read_them() {
        let mut f = [0xffu8; 12];
        f[8..].copy_from_slice(&(-86400i32).to_be_bytes());
        assert_eq!(
            gnu(&f, i128::from(i64::MIN), i128::from(i64::MAX)),
            Ok(-86400)
        );
        assert_eq!(libarchive(&f), -86400);
        let mode = [0x80, 0, 0, 0, 0, 0, 0x01, 0xa4];
        assert_eq!(libarchive(&mode), 0o644);
        assert_eq!(gnu(&mode, 0, 0o7777), Ok(0o644));
        // Too large for 64 bits: GNU rejects, libarchive saturates.
        let mut big = [0xffu8; 12];
        big[0] = 0x80;
        assert!(gnu(&big, 0, i128::from(i64::MAX))
            .unwrap_err()
            .contains("overflows"));
        assert_eq!(libarchive(&big), i64::MAX);
    }

    #[test]
    fn metadata_fields_read_as_libarchive_reads_them() {
        assert_eq!(parse_meta(b"0000000001x\0"), 1);
        assert_eq!(parse_meta(b"            "), 0);
        assert_eq!(parse_meta(b"0001 234\0\0\0\0"), 1);
        assert_eq!(parse_meta(b"0000644x"), 0o644);
    }

    #[test]
    fn the_format_bid_accepts_what_libarchive_accepts() {
        assert!(libarchive_bids(b"0000644\0"));
        assert!(libarchive_bids(b" 644 \0\0\0"));
        assert!(libarchive_bids(b"\0garbage"), "a leading NUL passes");
        assert!(libarchive_bids(&[0x80, 1, 2, 3, 4, 5, 6, 7]));
        assert!(!libarchive_bids(b"0001 234"));
        assert!(!libarchive_bids(b"0000644x"));
        assert!(!libarchive_bids(&[0x81, 0, 0, 0, 0, 0, 0, 1]));
    }

    #[test]
    fn checksum_octal_is_strict() {
        assert_eq!(parse_octal(b"001750\0 "), Ok(1000));
        assert!(parse_octal(b"12345678z90\0").is_err());
        assert!(parse_octal(b"7777777777777777777777777").is_err());
    }
}
