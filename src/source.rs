//! Where a path the user named reads from: a local file or directory, a
//! remote object, or a bucket or repository prefix. Decided once, by
//! [`Source::of`], where a path or URL enters the crate (the command line,
//! Python, the library's functions that take a path), then carried: a walk
//! makes local sources, a listing remote ones, and nothing below asks
//! again. Also how a source is printed (a URL's secrets hidden).

use std::path::{Path, PathBuf};

/// A path or URL, with what it names decided once.
///
/// Ordered, compared and hashed as its path: a sorted scan sorts sources
/// as it sorts the paths they print as.
///
/// ```
/// use neff::Source;
/// let local = Source::of("fixtures/interop/gnutar-pax-gz.neff");
/// assert!(!local.is_remote());
/// # #[cfg(feature = "remote")]
/// # {
/// let object = Source::of("s3://bucket/model.neff");
/// assert_eq!(object.url(), Some("s3://bucket/model.neff"));
/// assert!(!object.is_prefix());
/// assert!(Source::of("s3://bucket/cache/").is_prefix());
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Source(Named);

/// What a source names.
#[derive(Clone, Debug)]
enum Named {
    /// A local file or directory.
    Local(PathBuf),
    /// A remote object (`s3://b/k.neff`, `https://…`), or with `prefix` a
    /// prefix of a store that can be listed (`s3://b/cache/`, `hf://…`):
    /// what a scan lists, or a compile-cache entry's prefix holding no
    /// NEFF.
    #[cfg(feature = "remote")]
    Remote { url: String, prefix: bool },
}

impl Source {
    /// What `path` names: with the feature `remote` (default), a path
    /// that reads `s3://…`, `gs://…`, `az://…`, `hf://…`, `https://…` or
    /// `http://…` is a URL (a local file of such a name is read as
    /// `./s3://…`); one of a store that can be listed and not ending in
    /// `.neff` is a prefix. The one place the crate asks.
    pub fn of(path: impl AsRef<Path>) -> Source {
        let path = path.as_ref();
        #[cfg(feature = "remote")]
        if let Some(url) = url_in(path) {
            return Source::remote(url.to_string());
        }
        Source::local(path.to_path_buf())
    }

    /// A local path (what a walk meets).
    pub(crate) fn local(path: PathBuf) -> Source {
        Source(Named::Local(path))
    }

    /// A URL a listing gave, or one [`Source::of`] recognised.
    #[cfg(feature = "remote")]
    pub(crate) fn remote(url: String) -> Source {
        let prefix = crate::remote::is_listable(&url) && !url.ends_with(".neff");
        Source(Named::Remote { url, prefix })
    }

    /// The path as named (a URL as a path: what a record's `path` and a
    /// compile-cache entry's name are read from).
    pub fn path(&self) -> &Path {
        match &self.0 {
            Named::Local(p) => p,
            #[cfg(feature = "remote")]
            Named::Remote { url, .. } => Path::new(url),
        }
    }

    /// The local path, when the source is local.
    pub fn local_path(&self) -> Option<&Path> {
        match &self.0 {
            Named::Local(p) => Some(p),
            #[cfg(feature = "remote")]
            Named::Remote { .. } => None,
        }
    }

    /// Another path of the same place (an ancestor of this one, or a name
    /// joined below it): local if this one is, else a URL.
    pub(crate) fn at(&self, path: &Path) -> Source {
        match &self.0 {
            Named::Local(_) => Source::local(path.to_path_buf()),
            // (Made of this URL's parts: UTF-8.)
            #[cfg(feature = "remote")]
            Named::Remote { .. } => Source::remote(path.to_string_lossy().into_owned()),
        }
    }

    /// The path as named, owned.
    pub fn into_path(self) -> PathBuf {
        match self.0 {
            Named::Local(p) => p,
            #[cfg(feature = "remote")]
            Named::Remote { url, .. } => PathBuf::from(url),
        }
    }

    /// The URL, when the source is remote.
    pub fn url(&self) -> Option<&str> {
        match &self.0 {
            Named::Local(_) => None,
            #[cfg(feature = "remote")]
            Named::Remote { url, .. } => Some(url),
        }
    }

    /// Whether the source is a remote object or prefix.
    pub fn is_remote(&self) -> bool {
        self.url().is_some()
    }

    /// Whether the source is a prefix a scan lists (not one object).
    pub fn is_prefix(&self) -> bool {
        match &self.0 {
            Named::Local(_) => false,
            #[cfg(feature = "remote")]
            Named::Remote { prefix, .. } => *prefix,
        }
    }

    /// The source as a record or a catalogue row prints it: a URL with its
    /// query values and userinfo hidden ([`crate::redact_url`]), a local
    /// path as it is.
    pub fn shown(&self) -> String {
        #[cfg(feature = "remote")]
        if let Some(url) = self.url() {
            return crate::remote::redact(url).into_owned();
        }
        self.path().display().to_string()
    }
}

impl PartialEq for Source {
    fn eq(&self, other: &Source) -> bool {
        self.path() == other.path()
    }
}

impl Eq for Source {}

impl PartialOrd for Source {
    fn partial_cmp(&self, other: &Source) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Source {
    fn cmp(&self, other: &Source) -> std::cmp::Ordering {
        self.path().cmp(other.path())
    }
}

impl std::hash::Hash for Source {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.path().hash(h);
    }
}

/// [`Source::of`] the path.
impl From<PathBuf> for Source {
    fn from(path: PathBuf) -> Source {
        Source::of(path)
    }
}

/// [`Source::of`] the path.
impl From<&Path> for Source {
    fn from(path: &Path) -> Source {
        Source::of(path)
    }
}

/// The URL `path` spells, when it names a remote object or prefix: the
/// rule [`Source::of`] decides by, for a caller that keeps the path (the
/// compile cache's commands, which walk below a root of either kind).
#[cfg(feature = "remote")]
pub(crate) fn url_in(path: &Path) -> Option<&str> {
    path.to_str().filter(|s| crate::remote::is_url(s))
}

/// The sources `roots` name: each path decided by [`Source::of`], each
/// source as it is (what a library function taking roots accepts).
pub(crate) fn all_of<R: Clone + Into<Source>>(roots: &[R]) -> Vec<Source> {
    roots.iter().cloned().map(Into::into).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_path_is_local_whatever_it_spells() {
        for p in ["model.neff", "/abs/dir", "./s3://b/k.neff", "s3:/b/k.neff"] {
            let s = Source::of(p);
            assert!(!s.is_remote() && !s.is_prefix(), "{p}");
            assert_eq!(s.local_path(), Some(Path::new(p)));
            assert_eq!(s.url(), None);
            assert_eq!(s.shown(), p);
        }
    }

    #[cfg(feature = "remote")]
    #[test]
    fn a_url_is_an_object_or_a_listable_prefix() {
        let cases = [
            ("s3://b/k.neff", false),
            ("S3://b/cache/", true),
            ("gs://b/cache", true),
            ("hf://org/repo", true),
            ("az://c/x/model.neff", false),
            ("https://host/cache/", false),
            ("http://host/x.neff", false),
        ];
        for (url, prefix) in cases {
            let s = Source::of(url);
            assert_eq!(s.url(), Some(url), "{url}");
            assert_eq!(s.local_path(), None, "{url}");
            assert_eq!(s.is_prefix(), prefix, "{url}");
        }
        // What a source names follows it to its entry and its files.
        let entry = Source::of("s3://b/c/MODULE_1+a/model.neff");
        let dir = entry.at(Path::new("s3://b/c/MODULE_1+a"));
        assert!(dir.is_prefix());
        assert!(!dir.at(Path::new("s3://b/c/MODULE_1+a/x.neff")).is_prefix());
        assert!(!Source::of("d/MODULE_1+a").at(Path::new("d")).is_remote());
    }

    #[cfg(feature = "remote")]
    #[test]
    fn a_url_shows_without_its_secrets() {
        let s = Source::of("https://user:pw@host/x.neff?X-Amz-Signature=abc");
        assert!(!s.shown().contains("pw") && !s.shown().contains("abc"));
        assert_eq!(
            s.path(),
            Path::new("https://user:pw@host/x.neff?X-Amz-Signature=abc")
        );
    }

    #[test]
    fn sources_sort_and_compare_as_their_paths() {
        let mut got: Vec<Source> = ["b/x.neff", "a/y.neff", "a/x.neff", "s3://b/a.neff"]
            .into_iter()
            .map(Source::of)
            .collect();
        got.sort();
        let paths: Vec<&Path> = got.iter().map(Source::path).collect();
        let mut want = paths.clone();
        want.sort();
        assert_eq!(paths, want);
        assert_eq!(Source::of("a/x.neff"), Source::local("a/x.neff".into()));
        let roots = all_of(&[PathBuf::from("a"), PathBuf::from("b")]);
        assert_eq!(roots, all_of(&roots));
    }
}
