//! Where the compiler wrapper keeps its cache: `--cache_dir` in
//! `NEURON_CC_FLAGS` (split as a shell splits it), else
//! `NEURON_COMPILE_CACHE_URL`, else [`DEFAULT_ROOT`]; a `file://` URL is
//! the directory it names. Where vLLM's Neuron cache and the SDK 2.32
//! LNL stack keep theirs ([`default_roots`]), and the roots no prune
//! may act on (`/`, the user's home directory).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The URL `p` spells when it names a store's prefix or object, not a
/// directory, as [`crate::Source::of`] decides: the one place the cache
/// asks. (A build without remote I/O takes any `scheme://` for one, so
/// that it can refuse it.)
pub(super) fn url_of(p: &Path) -> Option<&str> {
    #[cfg(feature = "remote")]
    return crate::source::url_in(p);
    #[cfg(not(feature = "remote"))]
    p.to_str().filter(|s| s.contains("://"))
}

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

/// Every default cache root of the environment, as `neff cache status`
/// without a root reads them: the compiler wrapper's ([`default_root`])
/// first, then vLLM's Neuron cache (`$VLLM_CACHE_ROOT/neuron/compile_cache`,
/// else `~/.cache/vllm/neuron/compile_cache` and, where vllm-neuron falls
/// back to it when the home directory is on NFS or Lustre,
/// `/tmp/vllm_neuron_wdir_$USER/neuron/compile_cache`), its shared tier
/// (`$NEURON_LIBTORCH_REMOTE_CACHE`), and the LNL stack's
/// (`$NEURON_LIBTORCH_CACHE_ROOT/neuron/compile_cache`, else
/// `~/.cache/neuron_libtorch/neuron/compile_cache`). The roots after the
/// first are given only where they are directories; none is given twice.
pub fn default_roots() -> Vec<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = var("HOME");
    let under = |base: Option<PathBuf>, rel: &str| base.map(|b| b.join(rel));
    let mut others = Vec::new();
    match var("VLLM_CACHE_ROOT") {
        Some(r) => others.push(Some(r.join(COMPILE_CACHE))),
        None => {
            others.push(under(home.clone(), ".cache/vllm/neuron/compile_cache"));
            let user = std::env::var("USER").unwrap_or_default();
            others.push(Some(
                Path::new(&format!("/tmp/vllm_neuron_wdir_{user}")).join(COMPILE_CACHE),
            ));
        }
    }
    others.push(var("NEURON_LIBTORCH_REMOTE_CACHE"));
    others.push(match var("NEURON_LIBTORCH_CACHE_ROOT") {
        Some(r) => Some(r.join(COMPILE_CACHE)),
        None => under(home, ".cache/neuron_libtorch/neuron/compile_cache"),
    });
    let mut roots = vec![PathBuf::from(default_root())];
    for r in others.into_iter().flatten() {
        if r.is_dir() && !roots.contains(&r) {
            roots.push(r);
        }
    }
    roots
}

/// Where vLLM's Neuron cache and the LNL stack keep their entries below
/// their cache roots.
const COMPILE_CACHE: &str = "neuron/compile_cache";

/// Refuses a prune of `/` or of the user's home directory (`$HOME`), told
/// by device and inode, not by spelling (`/home/u/.`, a link to it): a
/// cache root is a directory of its own. [`super::prune`] checks it; a
/// caller may check it before judging the cache.
pub fn refuse_pruning(root: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    // A bucket's URL is no directory here: never refused.
    let Ok(meta) = std::fs::metadata(root) else {
        return Ok(());
    };
    let id = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
    let what = if id(Path::new("/")) == Some((meta.dev(), meta.ino())) {
        "the root directory"
    } else if home.is_some_and(|h| id(Path::new(&h)) == Some((meta.dev(), meta.ino()))) {
        "your home directory"
    } else {
        return Ok(());
    };
    Err(Error::refused(format!(
        "{what}, not a compile cache: prune is refused here (give the cache's own directory)"
    )))
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
