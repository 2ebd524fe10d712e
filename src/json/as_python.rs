//! What Python would print: a member's bytes re-encoded as
//! `json.dumps(json.loads(member), separators=(",", ":"), ensure_ascii=False)`,
//! the text the reference reader's users see.
//!
//! [`dumps`] validates and re-encodes in one pass over the member's bytes,
//! without building a tree, so that `neff get` prints exactly what the
//! reference would, where a tape parse would lose it:
//!
//! - **key order** is the member's; a **duplicated key** appears once, at its
//!   first position, with its last value (a Python `dict`);
//! - **integers** of any length are printed digit for digit (`-0` is `0`);
//!   more than 4,300 digits is refused, as CPython's `int()` refuses it;
//! - **floats** print as Python's `repr`: shortest round-trip digits,
//!   positional for exponents −4 … 15 (`1.0`, `0.0001`), scientific
//!   otherwise (`1e-05`, `1e+16`); an overflow is `Infinity`;
//! - `NaN`, `Infinity` and `-Infinity`, which Python's reader accepts, are
//!   accepted and printed back;
//! - **strings** are decoded and re-escaped as `json.dumps` does with
//!   `ensure_ascii=False`: `\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`, other
//!   control characters as `\u00XX`, everything else as UTF-8. A surrogate
//!   pair becomes its character. A lone surrogate escape (`\ud800`) has no
//!   UTF-8 form: Python would keep it in the `str` and then fail to print it;
//!   here it is kept as its escape, so no string is ever changed silently.
//!
//! Input is UTF-8, with an optional byte-order mark (Python's `json.loads`
//! of bytes skips one). What Python refuses is refused: control characters
//! inside strings, trailing data, bad escapes; nesting deeper than the cap
//! is refused as well.

use std::fmt;

use super::skim;

/// Why a member is not JSON Python would read (or is deeper than the cap).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpError {
    /// Byte offset in the member where reading stopped.
    pub offset: usize,
    /// What was wrong there.
    pub reason: String,
}

impl fmt::Display for DumpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.reason, self.offset)
    }
}

/// CPython's default `sys.int_info.default_max_str_digits`.
const MAX_INT_DIGITS: usize = 4300;

/// One member of an open object: its key as `[start, end)` in `out` (the
/// text between the quotes, a one-to-one encoding of the decoded key), and
/// the member as `[start, end)` (from the key's opening quote to the end of
/// its value). Later rewrites only touch bytes after a key.
#[derive(Clone, Copy)]
struct Member {
    key: (usize, usize),
    start: usize,
    end: usize,
}

/// One open container on the stack.
struct Frame {
    /// Whether this is an object (else an array).
    object: bool,
    /// For objects: where the object's `{` sits in `out`.
    start: usize,
    /// For objects: where its members begin in [`Reader::members`].
    first: usize,
}

/// Re-encodes `input` as Python's compact `json.dumps` would print it,
/// appending to `out`. `max_depth` caps the nesting (arrays and objects).
pub fn dumps(input: &[u8], max_depth: usize, out: &mut Vec<u8>) -> Result<(), DumpError> {
    encode(input, max_depth, out, false)
}

/// Like [`dumps`], but for a tape parse of a member simd-json refuses (or
/// would misread) that Python reads: `NaN`, `±Infinity`, float overflows
/// and integers outside what simd-json holds (a negative past `i64`, more
/// than 300 digits) are written as the nearest finite float (`NaN` and
/// `Infinity` as `f64::MAX`), which every accessor treats as Python treats
/// the original: a truthy non-integer. A lone surrogate escape becomes the
/// text of the escape (the accessors that print strings refuse such
/// strings: see [`crate::accessors`]). Everything else is as [`dumps`]
/// writes it.
pub fn for_tape(input: &[u8], max_depth: usize, out: &mut Vec<u8>) -> Result<(), DumpError> {
    encode(input, max_depth, out, true)
}

fn encode(input: &[u8], max_depth: usize, out: &mut Vec<u8>, tape: bool) -> Result<(), DumpError> {
    out.reserve(input.len());
    let mut r = Reader {
        s: input,
        i: 0,
        out,
        tape,
        members: Vec::new(),
    };
    if r.s.starts_with(b"\xEF\xBB\xBF") {
        r.i = 3;
    }
    let base = r.out.len();
    r.document(max_depth).inspect_err(|_| r.out.truncate(base))
}

struct Reader<'a, 'o> {
    s: &'a [u8],
    i: usize,
    out: &'o mut Vec<u8>,
    /// Write only numbers a tape can hold ([`for_tape`]).
    tape: bool,
    /// The members of every open object, innermost last.
    members: Vec<Member>,
}

impl Reader<'_, '_> {
    fn err<T>(&self, reason: impl Into<String>) -> Result<T, DumpError> {
        Err(DumpError {
            offset: self.i,
            reason: reason.into(),
        })
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn document(&mut self, max_depth: usize) -> Result<(), DumpError> {
        let mut stack: Vec<Frame> = Vec::new();
        self.ws();
        loop {
            // A value is expected here.
            match self.peek() {
                Some(b'{') | Some(b'[') => {
                    let object = self.peek() == Some(b'{');
                    if stack.len() >= max_depth {
                        return self.err(format!("JSON nesting depth over the cap of {max_depth}"));
                    }
                    let start = self.out.len();
                    self.out.push(if object { b'{' } else { b'[' });
                    self.i += 1;
                    self.ws();
                    let close = if object { b'}' } else { b']' };
                    if self.peek() == Some(close) {
                        self.i += 1;
                        self.out.push(close);
                    } else {
                        stack.push(Frame {
                            object,
                            start,
                            first: self.members.len(),
                        });
                        if object {
                            self.key()?;
                        }
                        continue;
                    }
                }
                Some(b'"') => self.string()?,
                Some(_) => self.scalar()?,
                None => return self.err("expecting value"),
            }
            // A value ended: close containers or move to the next member.
            loop {
                let Some(top) = stack.last_mut() else {
                    self.ws();
                    if self.i != self.s.len() {
                        return self.err("extra data");
                    }
                    return Ok(());
                };
                if top.object {
                    let m = self.members.last_mut().expect("a key came first");
                    m.end = self.out.len();
                }
                self.ws();
                match (self.peek(), top.object) {
                    (Some(b','), _) => {
                        self.i += 1;
                        self.out.push(b',');
                        self.ws();
                        if top.object {
                            self.key()?;
                        }
                        break;
                    }
                    (Some(b'}'), true) | (Some(b']'), false) => {
                        self.i += 1;
                        let frame = stack.pop().expect("top");
                        if frame.object {
                            collapse_duplicates(
                                self.out,
                                frame.start,
                                &self.members[frame.first..],
                            );
                            self.members.truncate(frame.first);
                            self.out.push(b'}');
                        } else {
                            self.out.push(b']');
                        }
                    }
                    (_, true) => return self.err("expecting ',' delimiter or '}'"),
                    (_, false) => return self.err("expecting ',' delimiter or ']'"),
                }
            }
        }
    }

    /// An object key, its colon, and the whitespace before the value.
    fn key(&mut self) -> Result<(), DumpError> {
        if self.peek() != Some(b'"') {
            return self.err("expecting property name enclosed in double quotes");
        }
        let start = self.out.len();
        self.string()?;
        self.members.push(Member {
            key: (start + 1, self.out.len() - 1),
            start,
            end: start,
        });
        self.ws();
        if self.peek() != Some(b':') {
            return self.err("expecting ':' delimiter");
        }
        self.i += 1;
        self.out.push(b':');
        self.ws();
        Ok(())
    }

    /// A string, decoded and re-escaped the way `json.dumps` escapes.
    /// Runs of plain bytes are found eight at a time and copied whole.
    fn string(&mut self) -> Result<(), DumpError> {
        self.out.push(b'"');
        let b = self.s;
        let mut i = self.i + 1; // past the opening quote
        let mut run = i;
        loop {
            while let Some(chunk) = b.get(i..i + 8) {
                let (_, special) =
                    skim::special(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
                if special != 0 {
                    i += (special.trailing_zeros() / 8) as usize;
                    break;
                }
                i += 8;
            }
            match b.get(i) {
                None => {
                    self.i = i;
                    return self.err("unterminated string");
                }
                Some(b'"') => {
                    self.out.extend_from_slice(&b[run..i]);
                    self.out.push(b'"');
                    self.i = i + 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    self.out.extend_from_slice(&b[run..i]);
                    self.i = i;
                    self.escape()?;
                    i = self.i;
                    run = i;
                }
                Some(0..=0x1f) => {
                    self.i = i;
                    return self.err("invalid control character in a string");
                }
                Some(&lead) if lead >= 0x80 => {
                    let len = match lead {
                        0xC2..=0xDF => 2,
                        0xE0..=0xEF => 3,
                        0xF0..=0xF4 => 4,
                        _ => 0,
                    };
                    let valid = len > 0
                        && b.get(i..i + len)
                            .is_some_and(|c| std::str::from_utf8(c).is_ok());
                    if !valid {
                        self.i = i;
                        return self.err("invalid UTF-8 in a string");
                    }
                    i += len;
                }
                Some(_) => i += 1,
            }
        }
    }

    fn escape(&mut self) -> Result<(), DumpError> {
        let Some(&e) = self.s.get(self.i + 1) else {
            return self.err("unterminated string");
        };
        let simple = match e {
            b'"' => Some(&b"\\\""[..]),
            b'\\' => Some(&b"\\\\"[..]),
            b'/' => Some(&b"/"[..]),
            b'b' => Some(&b"\\b"[..]),
            b'f' => Some(&b"\\f"[..]),
            b'n' => Some(&b"\\n"[..]),
            b'r' => Some(&b"\\r"[..]),
            b't' => Some(&b"\\t"[..]),
            b'u' => None,
            _ => return self.err("invalid \\escape"),
        };
        if let Some(text) = simple {
            self.out.extend_from_slice(text);
            self.i += 2;
            return Ok(());
        }
        let hi = self.hex4(self.i + 2)?;
        self.i += 6;
        let cp = if (0xD800..0xDC00).contains(&hi) {
            // A high surrogate: Python joins it with a following low one.
            let lo = if self.s.get(self.i) == Some(&b'\\') && self.s.get(self.i + 1) == Some(&b'u')
            {
                self.hex4(self.i + 2).ok()
            } else {
                None
            };
            match lo {
                Some(lo) if (0xDC00..0xE000).contains(&lo) => {
                    self.i += 6;
                    0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                }
                _ => return self.lone_surrogate(hi),
            }
        } else if (0xDC00..0xE000).contains(&hi) {
            return self.lone_surrogate(hi);
        } else {
            hi
        };
        let c = char::from_u32(cp).expect("not a surrogate");
        match c {
            '"' => self.out.extend_from_slice(b"\\\""),
            '\\' => self.out.extend_from_slice(b"\\\\"),
            '\n' => self.out.extend_from_slice(b"\\n"),
            '\r' => self.out.extend_from_slice(b"\\r"),
            '\t' => self.out.extend_from_slice(b"\\t"),
            '\u{8}' => self.out.extend_from_slice(b"\\b"),
            '\u{c}' => self.out.extend_from_slice(b"\\f"),
            c if (c as u32) < 0x20 => {
                self.out
                    .extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes());
            }
            c => {
                let mut buf = [0u8; 4];
                self.out
                    .extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
        Ok(())
    }

    /// A lone surrogate has no UTF-8 form: keep it as its escape.
    /// In the tape form the escape's own text is written as the string's
    /// content (`\\ud800` in JSON): a tape string must be UTF-8.
    fn lone_surrogate(&mut self, cp: u32) -> Result<(), DumpError> {
        let escape = if self.tape { "\\\\u" } else { "\\u" };
        self.out
            .extend_from_slice(format!("{escape}{cp:04x}").as_bytes());
        Ok(())
    }

    fn hex4(&self, at: usize) -> Result<u32, DumpError> {
        let Some(h) = self.s.get(at..at + 4) else {
            return Err(DumpError {
                offset: at,
                reason: "invalid \\uXXXX escape".into(),
            });
        };
        let mut v = 0;
        for &b in h {
            let d = (b as char).to_digit(16).ok_or_else(|| DumpError {
                offset: at,
                reason: "invalid \\uXXXX escape".into(),
            })?;
            v = v * 16 + d;
        }
        Ok(v)
    }

    /// A literal or a number.
    fn scalar(&mut self) -> Result<(), DumpError> {
        let rest = &self.s[self.i..];
        if matches!(rest, [b'0'..=b'9', ..] | [b'-', b'0'..=b'9', ..]) {
            return self.number();
        }
        for lit in [
            &b"null"[..],
            b"true",
            b"false",
            b"NaN",
            b"Infinity",
            b"-Infinity",
        ] {
            if rest.starts_with(lit) {
                self.i += lit.len();
                match lit {
                    b"NaN" | b"Infinity" if self.tape => write_float_repr(f64::MAX, self.out),
                    b"-Infinity" if self.tape => write_float_repr(f64::MIN, self.out),
                    _ => self.out.extend_from_slice(lit),
                }
                return Ok(());
            }
        }
        self.err("expecting value")
    }

    /// -?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?, as Python reads and prints it.
    fn number(&mut self) -> Result<(), DumpError> {
        let start = self.i;
        let mut j = start;
        let digits = |j: &mut usize, s: &[u8]| {
            let from = *j;
            while s.get(*j).is_some_and(u8::is_ascii_digit) {
                *j += 1;
            }
            *j - from
        };
        if self.s.get(j) == Some(&b'-') {
            j += 1;
        }
        let int_start = j;
        match self.s.get(j) {
            Some(b'0') => j += 1,
            Some(b'1'..=b'9') => {
                digits(&mut j, self.s);
            }
            _ => return self.err("expecting value"),
        }
        let int_end = j;
        let mut float = false;
        if self.s.get(j) == Some(&b'.') && self.s.get(j + 1).is_some_and(u8::is_ascii_digit) {
            j += 1;
            digits(&mut j, self.s);
            float = true;
        }
        if matches!(self.s.get(j), Some(b'e' | b'E')) {
            let mut k = j + 1;
            if matches!(self.s.get(k), Some(b'+' | b'-')) {
                k += 1;
            }
            if digits(&mut k, self.s) > 0 {
                j = k;
                float = true;
            }
        }
        self.i = j;
        let text = std::str::from_utf8(&self.s[start..j]).expect("ASCII");
        if float {
            let v: f64 = text.parse().expect("a JSON number parses as f64");
            write_float_repr(if self.tape { finite(v) } else { v }, self.out);
            return Ok(());
        }
        let n_digits = int_end - int_start;
        if n_digits > MAX_INT_DIGITS {
            self.i = start;
            return self.err(format!(
                "integer of {n_digits} digits exceeds Python's limit of {MAX_INT_DIGITS}"
            ));
        }
        if &self.s[int_start..int_end] == b"0" {
            self.out.push(b'0'); // `-0` is the integer 0
        } else if self.tape && text.parse::<i64>().is_err() && text.parse::<u64>().is_err() {
            let v: f64 = text.parse().expect("a JSON integer parses as f64");
            write_float_repr(finite(v), self.out);
        } else {
            self.out.extend_from_slice(text.as_bytes());
        }
        Ok(())
    }
}

/// Rewrites an object whose members repeat a key the way a Python `dict`
/// holds it: each key once, at its first position, with its last value.
fn collapse_duplicates(out: &mut Vec<u8>, start: usize, members: &[Member]) {
    let key = |m: &Member| &out[m.key.0..m.key.1];
    // Most objects are small and have no duplicate: look pairwise, with no
    // allocation, before building a map.
    if members.len() < 2 {
        return;
    }
    if members.len() <= 16 {
        let dup = (1..members.len()).any(|j| (0..j).any(|i| key(&members[i]) == key(&members[j])));
        if !dup {
            return;
        }
    }
    let mut last = std::collections::HashMap::with_capacity(members.len());
    for (i, m) in members.iter().enumerate() {
        last.insert(key(m), i);
    }
    if last.len() == members.len() {
        return;
    }
    let mut text = Vec::with_capacity(out.len() - start);
    text.push(b'{');
    for m in members {
        let Some(keep) = last.remove(key(m)) else {
            continue; // a later repeat of a key already written
        };
        let kept = members[keep];
        if text.len() > 1 {
            text.push(b',');
        }
        text.extend_from_slice(&out[kept.start..kept.end]);
    }
    out.truncate(start);
    out.extend_from_slice(&text);
}

/// `v`, or the largest finite float of its sign.
fn finite(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        f64::MAX.copysign(v)
    }
}

/// Writes `v` as Python's `float.__repr__` (and `json.dumps`) does.
pub fn write_float_repr(v: f64, out: &mut Vec<u8>) {
    if v.is_nan() {
        out.extend_from_slice(b"NaN");
        return;
    }
    if v.is_infinite() {
        out.extend_from_slice(if v < 0.0 { b"-Infinity" } else { b"Infinity" });
        return;
    }
    // Shortest round-trip digits, as `d.ddde±x`.
    let sci = format!("{:e}", v.abs());
    let (mant, exp) = sci.split_once('e').expect("LowerExp has an e");
    let exp: i32 = exp.parse().expect("exponent");
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    if v.is_sign_negative() {
        out.push(b'-');
    }
    if (-4..16).contains(&exp) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                out.extend_from_slice(digits.as_bytes());
                out.extend(std::iter::repeat_n(b'0', int_len - digits.len()));
                out.extend_from_slice(b".0");
            } else {
                out.extend_from_slice(&digits.as_bytes()[..int_len]);
                out.push(b'.');
                out.extend_from_slice(&digits.as_bytes()[int_len..]);
            }
        } else {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-exp - 1) as usize));
            out.extend_from_slice(digits.as_bytes());
        }
    } else {
        out.extend_from_slice(&digits.as_bytes()[..1]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits.as_bytes()[1..]);
        }
        let sign = if exp < 0 { '-' } else { '+' };
        out.extend_from_slice(format!("e{sign}{:02}", exp.abs()).as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> String {
        let mut out = Vec::new();
        dumps(s.as_bytes(), 512, &mut out).unwrap_or_else(|e| panic!("{s}: {e}"));
        String::from_utf8(out).unwrap()
    }

    fn refused(s: &str) -> String {
        let mut out = Vec::new();
        dumps(s.as_bytes(), 512, &mut out).unwrap_err().reason
    }

    #[test]
    fn floats_print_as_python_repr() {
        for (v, want) in [
            (1.0, "1.0"),
            (1e-5, "1e-05"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (123456789012345.6, "123456789012345.6"),
            (0.0001, "0.0001"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
            (1e100, "1e+100"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (100.0, "100.0"),
            (9999999999999998.0, "9999999999999998.0"),
            (2.5e-5, "2.5e-05"),
        ] {
            let mut out = Vec::new();
            write_float_repr(v, &mut out);
            assert_eq!(String::from_utf8(out).unwrap(), want, "{v:e}");
        }
    }

    #[test]
    fn compact_form_keeps_key_order_and_collapses_duplicates_like_a_dict() {
        assert_eq!(
            d(" { \"b\" : 1 , \"a\" : [ 1 , 2 ] } "),
            r#"{"b":1,"a":[1,2]}"#
        );
        assert_eq!(d(r#"{"a":1,"b":2,"a":3}"#), r#"{"a":3,"b":2}"#);
        assert_eq!(
            d(r#"{"x":{"k":1,"k":{"k":2,"k":3}},"y":[{"z":0,"z":[]}]}"#),
            r#"{"x":{"k":{"k":3}},"y":[{"z":[]}]}"#
        );
        // Keys equal after unescaping are the same key.
        assert_eq!(d(r#"{"\u0061":1,"a":2}"#), r#"{"a":2}"#);
    }

    #[test]
    fn numbers_print_as_python_prints_them() {
        let big = "123456789012345678901234567890";
        assert_eq!(d(&format!("[{big},-{big}]")), format!("[{big},-{big}]"));
        assert_eq!(
            d("[-0,0,1E2,1e-7,2.50,1e400,-1e400,NaN,-Infinity]"),
            "[0,0,100.0,1e-07,2.5,Infinity,-Infinity,NaN,-Infinity]"
        );
        assert!(refused(&"9".repeat(4301)).contains("4300"));
        assert_eq!(d(&"9".repeat(4300)), "9".repeat(4300));
        assert!(refused("[01]").contains("expecting ','"));
        assert!(refused("1.").contains("extra data"));
        assert!(refused("-").contains("expecting value"));
    }

    #[test]
    fn strings_are_reescaped_as_json_dumps_does_and_never_silently_changed() {
        assert_eq!(
            d(r#""\u00e9\/\u0001\u001f\u007f\t""#),
            "\"é/\\u0001\\u001f\u{7f}\\t\""
        );
        assert_eq!(d(r#""\ud83d\ude00""#), "\"😀\"");
        assert_eq!(d(r#""\ud800""#), r#""\ud800""#);
        assert_eq!(d(r#""\udc00\ud800x""#), r#""\udc00\ud800x""#);
        assert_eq!(d("\"\u{2028}\""), "\"\u{2028}\"");
        assert!(refused("\"a\nb\"").contains("control character"));
        assert!(refused(r#""\x""#).contains("escape"));
        assert!(refused(r#""\u12""#).contains("escape"));
        let mut out = Vec::new();
        assert!(dumps(b"\"\xff\"", 8, &mut out)
            .unwrap_err()
            .reason
            .contains("UTF-8"));
        assert!(out.is_empty(), "nothing is left behind on a refusal");
    }

    #[test]
    fn the_tape_form_holds_only_numbers_a_tape_holds() {
        let mut out = Vec::new();
        let doc = br#"{"a":[NaN,Infinity,-Infinity,1e400,-9223372036854775809,18446744073709551615,-9223372036854775808,7,"NaN"],"a":1}"#;
        for_tape(doc, 8, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            r#"{"a":1}"#,
            "duplicates collapse as in dumps"
        );
        out.clear();
        for_tape(&doc[..doc.len() - 7], 8, &mut out).unwrap_err();
        out.clear();
        for_tape(&br#"[NaN,Infinity,-Infinity,1e400,-9223372036854775809,18446744073709551615,-9223372036854775808,7,"NaN"]"#[..], 8, &mut out).unwrap();
        let text = String::from_utf8(out.clone()).unwrap();
        assert_eq!(
            text,
            "[1.7976931348623157e+308,1.7976931348623157e+308,-1.7976931348623157e+308,\
             1.7976931348623157e+308,-9.223372036854776e+18,18446744073709551615,\
             -9223372036854775808,7,\"NaN\"]"
        );
        assert!(simd_json::to_tape(&mut out).is_ok(), "simd-json reads it");
    }

    #[test]
    fn structure_errors_and_depth() {
        assert_eq!(d("\u{feff}{}"), "{}");
        assert!(refused("").contains("expecting value"));
        assert!(refused("{} x").contains("extra data"));
        assert!(refused("{1:2}").contains("property name"));
        assert!(refused("[1 2]").contains("delimiter"));
        assert!(refused("{\"a\" 1}").contains("':'"));
        assert!(refused("[1,]").contains("expecting value"));
        let deep = "[".repeat(513) + &"]".repeat(513);
        assert!(refused(&deep).contains("nesting depth over the cap of 512"));
        let ok = "[".repeat(512) + &"]".repeat(512);
        assert_eq!(d(&ok), ok);
    }
}
