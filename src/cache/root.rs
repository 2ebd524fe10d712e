//! Where the compiler wrapper keeps its cache: `--cache_dir` in
//! `NEURON_CC_FLAGS` (split as a shell splits it), else
//! `NEURON_COMPILE_CACHE_URL`, else [`DEFAULT_ROOT`]; a `file://` URL is
//! the directory it names.

/// Where the compiler wrapper keeps its cache when nothing says otherwise.
pub const DEFAULT_ROOT: &str = "/var/tmp/neuron-compile-cache";

/// The cache root the compiler wrapper uses, from the environment as it
/// reads it: `--cache_dir=` in `NEURON_CC_FLAGS`, else
/// `NEURON_COMPILE_CACHE_URL`, else [`DEFAULT_ROOT`]. (Either may name an
/// `s3://` URL; a `file://` one is given as its path.)
pub fn default_root() -> String {
    let flags = std::env::var("NEURON_CC_FLAGS").unwrap_or_default();
    root_from(&flags, std::env::var("NEURON_COMPILE_CACHE_URL").ok())
}

/// A cache root as a user or the environment gives it, as the cache
/// commands read it: a `file://` URL becomes its path (percent-escapes
/// decoded), anything else is kept.
pub fn local_root(root: &str) -> String {
    match root.strip_prefix("file://") {
        // `file:///a` (an empty host) and `file://localhost/a`.
        Some(rest) => {
            let path = rest.strip_prefix("localhost").unwrap_or(rest);
            percent_decoded(path)
        }
        None => root.to_string(),
    }
}

/// The root a cache command reads: the one given (a `file://` URL as its
/// path; bytes that are not UTF-8 kept as they are), else
/// [`default_root`].
pub fn root_or_default(root: Option<std::path::PathBuf>) -> std::path::PathBuf {
    match root {
        Some(r) => match r.to_str() {
            Some(s) => local_root(s).into(),
            None => r,
        },
        None => default_root().into(),
    }
}

/// `s` with `%XX` escapes decoded (an escape that is not two hex digits is
/// kept as written).
fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// [`default_root`] from the two variables' values.
pub(super) fn root_from(cc_flags: &str, cache_url: Option<String>) -> String {
    // As the shell that set the variable would split it; a value that
    // does not split (an open quote) is split on white space.
    let words = shlex::split(cc_flags)
        .unwrap_or_else(|| cc_flags.split_whitespace().map(str::to_string).collect());
    let mut words = words.into_iter();
    while let Some(w) = words.next() {
        if let Some(dir) = w.strip_prefix("--cache_dir=") {
            return local_root(dir);
        }
        if w == "--cache_dir" {
            if let Some(dir) = words.next() {
                return local_root(&dir);
            }
        }
    }
    match cache_url {
        Some(u) if !u.is_empty() => local_root(&u),
        _ => DEFAULT_ROOT.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_root_is_where_the_compiler_wrapper_looks() {
        assert_eq!(root_from("", None), DEFAULT_ROOT);
        assert_eq!(root_from("-O1 --cache_dir=/c1 --x", None), "/c1");
        assert_eq!(root_from("--cache_dir /c2", Some("s3://b/p".into())), "/c2");
        assert_eq!(root_from("-O1", Some("s3://b/p".into())), "s3://b/p");
        assert_eq!(root_from("", Some(String::new())), DEFAULT_ROOT);
    }

    #[test]
    fn flags_are_split_as_a_shell_splits_them() {
        assert_eq!(root_from(r#"--cache_dir="/a b" -O1"#, None), "/a b");
        assert_eq!(root_from("--cache_dir='/c d'", None), "/c d");
        assert_eq!(root_from(r"--cache_dir=/e\ f", None), "/e f");
        assert_eq!(
            root_from(r#"--model-type=transformer --cache_dir "/g h""#, None),
            "/g h"
        );
    }

    #[test]
    fn a_file_url_is_the_directory_it_names() {
        assert_eq!(root_from("", Some("file:///var/c".into())), "/var/c");
        assert_eq!(root_from("--cache_dir=file:///x%20y", None), "/x y");
        assert_eq!(local_root("file://localhost/z"), "/z");
        assert_eq!(local_root("/plain"), "/plain");
        assert_eq!(local_root("s3://b/p"), "s3://b/p");
    }
}
