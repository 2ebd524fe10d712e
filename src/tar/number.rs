//! Numeric header fields: octal text, or GNU base-256 binary.

/// Parses a numeric field: base-256 when its first byte has the high bit
/// set (GNU), else octal text. Negative and overflowing values are refused.
pub fn parse_numeric(f: &[u8]) -> Result<u64, String> {
    match f.first() {
        Some(&b) if b & 0x80 != 0 => parse_base256(f),
        _ => parse_octal(f),
    }
}

/// Octal digits after optional spaces, ended by spaces and NULs; a field
/// of only NULs and spaces is 0.
///
/// A NUL before the digits is refused: GNU tar skips one leading NUL and
/// reads the digits after it, libarchive stops at the NUL and reads 0, so
/// the two would read different sizes (and find different members after).
pub(crate) fn parse_octal(f: &[u8]) -> Result<u64, String> {
    let mut i = 0;
    while i < f.len() && f[i] == b' ' {
        i += 1;
    }
    let mut v: u64 = 0;
    while i < f.len() && (b'0'..=b'7').contains(&f[i]) {
        v = v
            .checked_mul(8)
            .and_then(|v| v.checked_add(u64::from(f[i] - b'0')))
            .ok_or("octal number overflows 64 bits")?;
        i += 1;
    }
    if f[i..].iter().any(|&b| b != b' ' && b != 0) {
        if f[i] == 0 {
            return Err(format!(
                "digits after a NUL in numeric field \"{}\" (GNU tar and libarchive read such a field differently)",
                f.escape_ascii()
            ));
        }
        return Err(format!(
            "non-octal character {:?} in numeric field {:?}",
            f[i] as char,
            String::from_utf8_lossy(f)
        ));
    }
    Ok(v)
}

/// GNU base-256: the first byte's top bit marks it, its next bit is the
/// sign, and the rest of the field is a big-endian two's-complement number.
///
/// Only the markers GNU tar writes, `0x80` (positive) and `0xff`
/// (negative, refused), are read: libarchive reads any byte with the top
/// bit set as a marker, GNU tar refuses the others.
fn parse_base256(f: &[u8]) -> Result<u64, String> {
    if f[0] == 0xff {
        return Err("negative base-256 number".into());
    }
    if f[0] != 0x80 {
        return Err(format!(
            "base-256 marker {:#04x} (GNU tar writes and reads only 0x80 and 0xff)",
            f[0]
        ));
    }
    let mut v = u64::from(f[0] & 0x3f);
    for &b in &f[1..] {
        if v > (u64::MAX >> 8) {
            return Err("base-256 number overflows 64 bits".into());
        }
        v = (v << 8) | u64::from(b);
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn octal_with_nul_and_space_terminators() {
        assert_eq!(parse_numeric(b"00000001750\0"), Ok(1000));
        assert_eq!(parse_numeric(b"   1750 \0\0\0\0"), Ok(1000));
        assert_eq!(parse_numeric(b"\0\0\0\0"), Ok(0));
        assert_eq!(parse_numeric(b"  \0 \0"), Ok(0));
    }

    #[test]
    fn digits_after_a_leading_nul_are_refused() {
        // GNU tar reads 0o2273 here, libarchive reads 0.
        let e = parse_numeric(b"\x0000000002273").unwrap_err();
        assert!(e.contains("digits after a NUL"), "{e}");
        assert!(parse_numeric(b"\0\x00123").is_err());
        assert!(parse_numeric(b"  \0 12").is_err());
    }

    #[test]
    fn non_octal_digit_is_refused() {
        assert!(parse_numeric(b"12345678z90\0").is_err());
        assert!(parse_numeric(b"0000000009\0\0").is_err());
    }

    #[test]
    fn base256_positive_negative_and_overflow() {
        let mut f = [0u8; 12];
        f[0] = 0x80;
        f[11] = 0x01;
        f[10] = 0x02;
        assert_eq!(parse_numeric(&f), Ok(0x0201));
        f[0] = 0xff;
        assert!(parse_numeric(&f).unwrap_err().contains("negative"));
        f[0] = 0x81;
        assert!(parse_numeric(&f).unwrap_err().contains("marker 0x81"));
        let mut o = [0xffu8; 12];
        o[0] = 0x80;
        assert!(parse_numeric(&o).unwrap_err().contains("overflow"));
    }

    #[test]
    fn octal_overflow_is_refused() {
        assert!(parse_numeric(b"7777777777777777777777777").is_err());
    }
}
