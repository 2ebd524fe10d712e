//! A compile's flags: an entry's `compile_flags.json` (2.15+ entries hold
//! it: a JSON list of strings) read bounded, never through a link nor from
//! a FIFO; and the flags hash of an entry's name
//! (`MODULE_<graph hash>+<flags hash>`) a flag list gives, by each rule
//! public logs show the compiler wrapper forming it with
//! (docs/GUIDE.md, "Why did it compile again?").

use std::io;
use std::path::Path;

use md5::{Digest, Md5};
use serde::Serialize;

/// The file of an entry that holds its compile's flags.
pub(super) const FLAGS_FILE: &str = "compile_flags.json";
/// Most of a `compile_flags.json` read: a larger one is not taken.
pub(super) const FLAGS_CAP: u64 = 64 << 10;

/// How the compiler wrapper forms a flags hash from a flag list: the first
/// 8 hex digits of the MD5 of a text the list is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum HashRule {
    /// The flags joined by single spaces (an empty list: the empty text,
    /// `d41d8cd9`). Public logs of wrappers shipped with compilers 2.7 to
    /// 2.15 show it.
    Joined,
    /// The list as Python's `json.dumps` writes it (`["-O1", "--lnc=2"]`:
    /// `", "` between items, non-ASCII escaped). Public logs of later
    /// wrappers (one of 2.15, and of late 2024 on) show it.
    Json,
}

impl HashRule {
    /// Every rule, in the order reports give them.
    pub const ALL: [HashRule; 2] = [HashRule::Joined, HashRule::Json];

    /// Its name in reports (`joined`, `json`).
    pub fn name(self) -> &'static str {
        match self {
            HashRule::Joined => "joined",
            HashRule::Json => "json",
        }
    }

    /// The flags hash `flags` give by this rule.
    pub fn hash(self, flags: &[String]) -> String {
        let text = match self {
            HashRule::Joined => flags.join(" "),
            HashRule::Json => python_json(flags),
        };
        let digest = Md5::digest(text.as_bytes());
        crate::header::hex(&digest[..4])
    }

    /// The rule by which `flags` give `hash`, if one does.
    pub fn matching(flags: &[String], hash: &str) -> Option<HashRule> {
        HashRule::ALL
            .into_iter()
            .find(|r| r.hash(flags).eq_ignore_ascii_case(hash))
    }
}

/// The flags hash `flags` give by each rule, as (rule, hash) pairs.
pub fn flags_hashes(flags: &[String]) -> Vec<(HashRule, String)> {
    HashRule::ALL
        .into_iter()
        .map(|r| (r, r.hash(flags)))
        .collect()
}

/// `flags` as Python's `json.dumps` writes a list of strings: `[`, the
/// items quoted and joined by `", "`, `]`; `"`, `\` and control characters
/// escaped, every character past ASCII written `\uXXXX` (UTF-16).
fn python_json(flags: &[String]) -> String {
    use std::fmt::Write as _;
    let mut out = String::from("[");
    for (i, f) in flags.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push('"');
        for c in f.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        let _ = write!(out, "\\u{u:04x}");
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
    }
    out.push(']');
    out
}

/// The flags a `compile_flags.json`'s bytes hold: `None` unless they are a
/// JSON list of strings.
pub(super) fn parse(bytes: &[u8]) -> Option<Vec<String>> {
    serde_json::from_slice::<Vec<String>>(bytes).ok()
}

/// The flags of the entry `dir` on disk, from its `compile_flags.json`:
/// `Ok(None)` when it holds none; an error when the file is a link, not a
/// regular file, larger than [`FLAGS_CAP`], unreadable, or not a JSON list
/// of strings.
pub(crate) fn read_flags(dir: &Path) -> io::Result<Option<Vec<String>>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(FLAGS_FILE);
    let f = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(&path);
    let f = match f {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(io::Error::other(format!(
                "{FLAGS_FILE} is a link: not followed"
            )))
        }
        Err(e) => return Err(e),
    };
    let meta = f.metadata()?;
    if !meta.file_type().is_file() {
        return Err(io::Error::other(format!(
            "{FLAGS_FILE} is not a regular file: not read"
        )));
    }
    if meta.len() > FLAGS_CAP {
        return Err(io::Error::other(format!(
            "{FLAGS_FILE} is larger than {FLAGS_CAP} bytes: not read"
        )));
    }
    let mut buf = Vec::new();
    f.take(FLAGS_CAP + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > FLAGS_CAP {
        return Err(io::Error::other(format!(
            "{FLAGS_FILE} grew past {FLAGS_CAP} bytes while read: not taken"
        )));
    }
    parse(&buf)
        .map(Some)
        .ok_or_else(|| io::Error::other(format!("{FLAGS_FILE} is not a JSON list of strings")))
}

/// The flags of the entry at `dir` in a bucket (its URL), read by one
/// ranged request for at most [`FLAGS_CAP`] bytes: `Ok(None)` when it
/// holds none.
#[cfg(feature = "remote")]
pub(super) fn read_flags_url(dir: &str) -> io::Result<Option<Vec<String>>> {
    let url = format!("{}/{FLAGS_FILE}", dir.trim_end_matches('/'));
    match crate::remote::read_tail(&url, FLAGS_CAP + 1) {
        Ok(b) if b.len() as u64 > FLAGS_CAP => Err(io::Error::other(format!(
            "{FLAGS_FILE} is larger than {FLAGS_CAP} bytes: not read"
        ))),
        Ok(b) => parse(&b)
            .map(Some)
            .ok_or_else(|| io::Error::other(format!("{FLAGS_FILE} is not a JSON list of strings"))),
        Err(crate::error::Error::Remote {
            io: io::ErrorKind::NotFound,
            ..
        }) => Ok(None),
        Err(e) => Err(io::Error::other(e.to_string())),
    }
}

/// The flags of a job as `NEURON_CC_FLAGS` holds them, split as a shell
/// splits them; `None` when the quoting is unbalanced.
pub fn split_flags(text: &str) -> Option<Vec<String>> {
    shlex::split(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn an_empty_flag_list_joined_gives_the_md5_of_nothing() {
        assert_eq!(HashRule::Joined.hash(&[]), "d41d8cd9");
        assert_eq!(HashRule::Json.hash(&[]), "d7517139");
    }

    // Public logs pairing an entry's name with the flags it was compiled
    // with (docs/GUIDE.md, "Why did it compile again?").
    #[test]
    fn public_entries_give_their_flags_hash_by_one_rule() {
        let joined = [
            (
                v(&["--model-type=transformer", "--auto-cast=none"]),
                "2c2d707e",
            ),
            (v(&["--auto-cast", "none"]), "00875417"),
            (
                v(&[
                    "--model-type=transformer",
                    "--auto-cast=none",
                    "--execute-repetition=1",
                ]),
                "4497a662",
            ),
        ];
        for (flags, hash) in joined {
            assert_eq!(HashRule::matching(&flags, hash), Some(HashRule::Joined));
        }
        let json = [
            (
                v(&[
                    "--model-type=transformer",
                    "--auto-cast=none",
                    "--execute-repetition=1",
                ]),
                "39f12043",
            ),
            (
                v(&[
                    "--target=trn1",
                    "--model-type=cnn-training",
                    "-O1",
                    "--enable-saturate-infinity",
                ]),
                "d505a3f8",
            ),
            (v(&["--target=trn3"]), "70e3f644"),
        ];
        for (flags, hash) in json {
            assert_eq!(HashRule::matching(&flags, hash), Some(HashRule::Json));
        }
        assert_eq!(HashRule::matching(&v(&["-O2"]), "00000000"), None);
    }

    #[test]
    fn json_text_is_pythons() {
        assert_eq!(python_json(&v(&["a", "b\"c"])), r#"["a", "b\"c"]"#);
        assert_eq!(python_json(&v(&["é", "\u{1}"])), r#"["\u00e9", "\u0001"]"#);
        assert_eq!(python_json(&v(&["😀"])), r#"["\ud83d\ude00"]"#);
    }

    #[test]
    fn flags_files_are_read_bounded_and_never_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert_eq!(read_flags(d).unwrap(), None);
        std::fs::write(d.join(FLAGS_FILE), br#"["--target=trn1", "-O2"]"#).unwrap();
        assert_eq!(read_flags(d).unwrap(), Some(v(&["--target=trn1", "-O2"])));
        std::fs::write(d.join(FLAGS_FILE), b"{}").unwrap();
        assert!(read_flags(d).is_err());
        std::fs::write(d.join(FLAGS_FILE), vec![b' '; FLAGS_CAP as usize + 1]).unwrap();
        assert!(read_flags(d).unwrap_err().to_string().contains("larger"));
        std::fs::remove_file(d.join(FLAGS_FILE)).unwrap();
        std::fs::write(d.join("real.json"), b"[]").unwrap();
        std::os::unix::fs::symlink(d.join("real.json"), d.join(FLAGS_FILE)).unwrap();
        assert!(read_flags(d).unwrap_err().to_string().contains("link"));
        std::fs::remove_file(d.join(FLAGS_FILE)).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            d.join(FLAGS_FILE),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert!(read_flags(d).unwrap_err().to_string().contains("regular"));
    }

    #[test]
    fn job_flags_split_as_a_shell_splits_them() {
        assert_eq!(
            split_flags("--target=trn1 '-O 2'"),
            Some(v(&["--target=trn1", "-O 2"]))
        );
        assert_eq!(split_flags(""), Some(vec![]));
        assert_eq!(split_flags("'open"), None);
    }
}
