//! A compile's flags: an entry's `compile_flags.json` (a JSON list of
//! strings) or, in entries of 2.11 to 2.14, `compile_flags.txt` (the flags
//! as text), read bounded, never through a link nor from a FIFO; and the
//! flags hash of an entry's name (`MODULE_<graph hash>+<flags hash>`) a
//! flag list gives, by each rule public compile caches show the compiler
//! wrapper forming it with (docs/GUIDE.md, "Why did it compile again?").

use std::io;
use std::path::Path;

use md5::{Digest, Md5};
use serde::Serialize;

/// The files an entry keeps its compile's flags in, the newer first:
/// `compile_flags.json` (a JSON list; public caches show it from 2.15 on)
/// and `compile_flags.txt` (the flags as text; 2.11 to 2.14).
pub(super) const FLAGS_FILES: [&str; 2] = ["compile_flags.json", "compile_flags.txt"];
/// Most of a flags file read: a larger one is not taken.
pub(super) const FLAGS_CAP: u64 = 64 << 10;

/// How the compiler wrapper forms a flags hash from a flag list: the first
/// 8 hex digits of the MD5 of a text the list is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum HashRule {
    /// The flags joined by single spaces (an empty list: the empty text,
    /// `d41d8cd9`): the hash of the entries of public caches that keep
    /// `compile_flags.txt` (compilers 2.13 and 2.14; 2.11 and 2.12
    /// unproven).
    Joined,
    /// The list as Python's `json.dumps` writes it (`["-O1", "--lnc=2"]`:
    /// `", "` between items, non-ASCII escaped; an empty list:
    /// `d7517139`): the hash of the entries of public caches that keep
    /// `compile_flags.json` (compilers 2.15 and 2.16; later ones
    /// unproven).
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

/// The flags a flags file's bytes hold: a `compile_flags.json` holds a
/// JSON list of strings, a `compile_flags.txt` the flags as text (split as
/// a shell splits it); why not, when they are neither.
fn parse(name: &str, bytes: &[u8]) -> io::Result<Vec<String>> {
    let bad = |why: &str| io::Error::other(format!("{name} {why}"));
    if name.ends_with(".json") {
        return serde_json::from_slice::<Vec<String>>(bytes)
            .map_err(|_| bad("is not a JSON list of strings"));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| bad("is not UTF-8"))?;
    split_flags(text).ok_or_else(|| bad("has unbalanced quotes"))
}

/// The flags of the entry `dir` on disk, from the first of
/// [`FLAGS_FILES`] it holds: `Ok(None)` when it holds neither; an error
/// when that file is a link, not a regular file, larger than
/// [`FLAGS_CAP`], unreadable, or not flags.
pub(crate) fn read_flags(dir: &Path) -> io::Result<Option<Vec<String>>> {
    for name in FLAGS_FILES {
        if let Some(bytes) = read_capped(&dir.join(name), name)? {
            return parse(name, &bytes).map(Some);
        }
    }
    Ok(None)
}

/// The bytes of the file `path` (called `name` in errors), at most
/// [`FLAGS_CAP`] of them, never through a link nor from a FIFO; `Ok(None)`
/// when there is none.
fn read_capped(path: &Path, name: &str) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt;
    let bad = |why: String| Err(io::Error::other(format!("{name} {why}")));
    let f = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path);
    let f = match f {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return bad("is a link: not followed".into())
        }
        Err(e) => return Err(e),
    };
    let meta = f.metadata()?;
    if !meta.file_type().is_file() {
        return bad("is not a regular file: not read".into());
    }
    if meta.len() > FLAGS_CAP {
        return bad(format!("is larger than {FLAGS_CAP} bytes: not read"));
    }
    let mut buf = Vec::new();
    f.take(FLAGS_CAP + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > FLAGS_CAP {
        return bad(format!("grew past {FLAGS_CAP} bytes while read: not taken"));
    }
    Ok(Some(buf))
}

/// The flags of the entry at `dir` in a bucket (its URL), from the first
/// of [`FLAGS_FILES`] it holds, each asked for by one ranged request for
/// at most [`FLAGS_CAP`] bytes: `Ok(None)` when it holds neither.
#[cfg(feature = "remote")]
pub(super) fn read_flags_url(dir: &str) -> io::Result<Option<Vec<String>>> {
    for name in FLAGS_FILES {
        let url = format!("{}/{name}", dir.trim_end_matches('/'));
        match crate::remote::read_tail(&url, FLAGS_CAP + 1) {
            Ok(b) if b.len() as u64 > FLAGS_CAP => {
                return Err(io::Error::other(format!(
                    "{name} is larger than {FLAGS_CAP} bytes: not read"
                )))
            }
            Ok(b) => return parse(name, &b).map(Some),
            Err(crate::error::Error::Remote {
                io: io::ErrorKind::NotFound,
                ..
            }) => continue,
            Err(e) => return Err(io::Error::other(e.to_string())),
        }
    }
    Ok(None)
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

    // Entries of public compile caches (the Hugging Face hub's
    // aws-neuron/optimum-neuron-cache and
    // optimum-internal-testing/neuron-testing-cache), each named beside
    // the flags file it holds (docs/GUIDE.md, "Why did it compile again?").
    #[test]
    fn public_entries_give_their_flags_hash_by_one_rule() {
        let txt = [
            ("", "d41d8cd9"),
            ("--model-type=transformer --auto-cast=none", "2c2d707e"),
            (
                "--model-type=transformer --model-type=transformer",
                "a1fe2fe5",
            ),
        ];
        for (text, hash) in txt {
            let flags = parse("compile_flags.txt", text.as_bytes()).unwrap();
            assert_eq!(HashRule::matching(&flags, hash), Some(HashRule::Joined));
        }
        let json = [
            ("[]", "d7517139"),
            (
                r#"["--model-type", "transformer", "-O1", "--model-type=transformer"]"#,
                "b64a7507",
            ),
            (
                r#"["--model-type=transformer", "--model-type=transformer"]"#,
                "0662544f",
            ),
            (
                r#"["--target=trn1", "--model-type=transformer", "--auto-cast=none", "--execute-repetition=1"]"#,
                "613edded",
            ),
            (
                r#"["--target=trn2", "--model-type=transformer", "--auto-cast=none", "--execute-repetition=1"]"#,
                "7ac4dbae",
            ),
        ];
        for (text, hash) in json {
            let flags = parse("compile_flags.json", text.as_bytes()).unwrap();
            assert_eq!(HashRule::matching(&flags, hash), Some(HashRule::Json));
        }
        // 2.11.0.34's `+8737852b` beside the same flags fits neither rule
        // (it is the MD5 of the text with a leading space).
        let flags = v(&["--model-type=transformer", "--model-type=transformer"]);
        assert_eq!(HashRule::matching(&flags, "8737852b"), None);
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
        let json = d.join("compile_flags.json");
        assert_eq!(read_flags(d).unwrap(), None);
        std::fs::write(&json, br#"["--target=trn1", "-O2"]"#).unwrap();
        assert_eq!(read_flags(d).unwrap(), Some(v(&["--target=trn1", "-O2"])));
        std::fs::write(&json, b"{}").unwrap();
        let e = read_flags(d).unwrap_err().to_string();
        assert_eq!(e, "compile_flags.json is not a JSON list of strings");
        std::fs::write(&json, vec![b' '; FLAGS_CAP as usize + 1]).unwrap();
        assert!(read_flags(d).unwrap_err().to_string().contains("larger"));
        std::fs::remove_file(&json).unwrap();
        std::fs::write(d.join("real.json"), b"[]").unwrap();
        std::os::unix::fs::symlink(d.join("real.json"), &json).unwrap();
        assert!(read_flags(d).unwrap_err().to_string().contains("link"));
        std::fs::remove_file(&json).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &json,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert!(read_flags(d).unwrap_err().to_string().contains("regular"));
    }

    #[test]
    fn an_older_entrys_flags_are_its_text_split_as_a_shell_splits_it() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let txt = d.join("compile_flags.txt");
        std::fs::write(&txt, b"--model-type=transformer  '-O 1'\n").unwrap();
        let flags = Some(v(&["--model-type=transformer", "-O 1"]));
        assert_eq!(read_flags(d).unwrap(), flags);
        std::fs::write(&txt, b"").unwrap();
        assert_eq!(read_flags(d).unwrap(), Some(vec![]));
        // compile_flags.json, where both are, is the one read.
        std::fs::write(d.join("compile_flags.json"), br#"["-O2"]"#).unwrap();
        assert_eq!(read_flags(d).unwrap(), Some(v(&["-O2"])));
        std::fs::remove_file(d.join("compile_flags.json")).unwrap();
        std::fs::write(&txt, b"'open").unwrap();
        let e = read_flags(d).unwrap_err().to_string();
        assert_eq!(e, "compile_flags.txt has unbalanced quotes");
        std::fs::write(&txt, b"-O\xff").unwrap();
        let e = read_flags(d).unwrap_err().to_string();
        assert_eq!(e, "compile_flags.txt is not UTF-8");
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
