//! Text output that a name cannot forge: member names, link targets and
//! paths escaped the way GNU tar's default (`escape`) quoting style prints
//! them, so that a name with a newline cannot print a second, fake line and
//! an escape sequence never reaches a terminal.
//!
//! Printable UTF-8 passes through unchanged (`café`, `sg٣/def.json`); a
//! backslash is doubled; `\a \b \t \n \v \f \r` are written as those
//! escapes; every other control character (C0, DEL, and the C1 range
//! U+0080–U+009F) and every byte that is not valid UTF-8 is written as a
//! three-digit octal escape per byte (`\033`, `\177`, `\377`), as
//! `tar tf` prints them. JSON output needs none of this: it escapes by
//! construction.

use std::borrow::Cow;

/// `bytes` as one line of text, escaped as `tar tf` escapes a name.
pub fn quote(bytes: &[u8]) -> Cow<'_, str> {
    // Most names are printable ASCII without a backslash: one pass over the
    // bytes, no per-character decoding.
    if bytes
        .iter()
        .all(|&b| (0x20..0x7f).contains(&b) && b != b'\\')
    {
        return Cow::Borrowed(std::str::from_utf8(bytes).expect("ASCII"));
    }
    match std::str::from_utf8(bytes) {
        Ok(s) if !s.chars().any(needs_escape) => Cow::Borrowed(s),
        _ => Cow::Owned(escape(bytes)),
    }
}

/// Like [`quote`], for text that is already a `str`.
pub fn quote_str(s: &str) -> Cow<'_, str> {
    quote(s.as_bytes())
}

/// A message (a reason, a path in a message, a table cell) as one line:
/// control characters escaped as in [`quote`], but a backslash kept as it
/// is, so that text quoted from elsewhere (a pattern such as
/// `sg\d+/def\.json`, a guard string) reads verbatim.
pub fn one_line(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(escape_with(s.as_bytes(), false))
}

/// [`one_line`] for bytes that may not be UTF-8 (a path).
pub fn one_line_bytes(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => one_line(s),
        Err(_) => Cow::Owned(escape_with(bytes, false)),
    }
}

fn needs_escape(c: char) -> bool {
    c == '\\' || c.is_control()
}

fn escape(bytes: &[u8]) -> String {
    escape_with(bytes, true)
}

fn escape_with(mut bytes: &[u8], backslash: bool) -> String {
    let mut out = String::with_capacity(bytes.len() + 8);
    loop {
        let (valid, rest) = match std::str::from_utf8(bytes) {
            Ok(s) => (s, &b""[..]),
            Err(e) => {
                let (v, r) = bytes.split_at(e.valid_up_to());
                (std::str::from_utf8(v).expect("valid prefix"), r)
            }
        };
        for c in valid.chars() {
            match c {
                '\\' if backslash => out.push_str("\\\\"),
                '\u{7}' => out.push_str("\\a"),
                '\u{8}' => out.push_str("\\b"),
                '\t' => out.push_str("\\t"),
                '\n' => out.push_str("\\n"),
                '\u{b}' => out.push_str("\\v"),
                '\u{c}' => out.push_str("\\f"),
                '\r' => out.push_str("\\r"),
                c if c.is_control() => {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        out.push_str(&format!("\\{b:03o}"));
                    }
                }
                c => out.push(c),
            }
        }
        // One invalid byte, then on with the rest.
        match rest.split_first() {
            None => return out,
            Some((b, tail)) => {
                out.push_str(&format!("\\{b:03o}"));
                bytes = tail;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_as_gnu_tar_lists_names() {
        // What `tar tf` printed for these names (GNU tar 1.34, C.UTF-8).
        for (name, want) in [
            (&b"a\nb"[..], r"a\nb"),
            (b"tab\there", r"tab\there"),
            (b"esc\x1b[31mred", r"esc\033[31mred"),
            (b"back\\slash", r"back\\slash"),
            (b"del\x7f", r"del\177"),
            (b"bad\xffutf", r"bad\377utf"),
            ("caf\u{e9}".as_bytes(), "caf\u{e9}"),
            (b"q\"uote", "q\"uote"),
            (b"sp ace", "sp ace"),
            (b"bell\x07", r"bell\a"),
            (b"cr\r", r"cr\r"),
            ("c1\u{9b}".as_bytes(), r"c1\302\233"),
            (b"cut\xe2\x82", r"cut\342\202"),
        ] {
            assert_eq!(quote(name), want, "{:?}", String::from_utf8_lossy(name));
        }
    }

    #[test]
    fn messages_keep_backslashes_and_lose_control_characters() {
        assert_eq!(
            one_line(r"no member matches sg\d+/def\.json"),
            r"no member matches sg\d+/def\.json"
        );
        assert_eq!(one_line("a\nb\x1b[2J"), r"a\nb\033[2J");
        assert_eq!(one_line_bytes(b"p\xff\\q\n"), r"p\377\q\n");
    }

    #[test]
    fn plain_names_are_borrowed() {
        assert!(matches!(quote(b"sg00/def.json"), Cow::Borrowed(_)));
    }
}
