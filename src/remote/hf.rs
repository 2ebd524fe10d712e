//! `hf://` URLs: files of a Hugging Face hub repository (optimum-neuron's
//! public compile cache lives there), read and listed through the hub's
//! HTTP API with the hub client's own conventions.
//!
//! `hf://[datasets/|spaces/]ORG/REPO[@REV]/PATH` (a model repository
//! unless the first part says otherwise; `REV` defaults to `main`, and a
//! revision holding `/` is written with `%2F`, as `huggingface_hub` does).
//! A file is read from `{HF_ENDPOINT}/[datasets/|spaces/]ORG/REPO/resolve/REV/PATH`
//! by ranged GETs (the hub redirects large files to its CDN, which the
//! client follows); a prefix is listed with
//! `{HF_ENDPOINT}/api/{models|datasets|spaces}/ORG/REPO/tree/REV/PATH?recursive=true`,
//! page after page (`Link: <…>; rel="next"`). `HF_ENDPOINT` defaults to
//! `https://huggingface.co`; the token is `HF_TOKEN`, else the file
//! `HF_TOKEN_PATH`, else `$HF_HOME/token` (`~/.cache/huggingface/token`),
//! sent as `Authorization: Bearer …` to the endpoint only.

use crate::error::{Error, Result};

/// A parsed `hf://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HfUrl {
    /// `models`, `datasets` or `spaces`.
    pub(crate) kind: &'static str,
    /// `ORG/REPO`.
    pub(crate) repo: String,
    /// The revision, as given (percent-encoded where it holds `/`).
    pub(crate) rev: String,
    /// The path in the repository (maybe empty: its root).
    pub(crate) path: String,
}

fn bad(url: &str, why: &str) -> Error {
    Error::Remote {
        reason: format!("not a valid hf:// URL ({why}): {url}"),
        io: std::io::ErrorKind::InvalidInput,
    }
}

impl HfUrl {
    /// Parses `hf://[datasets/|spaces/]ORG/REPO[@REV]/PATH`.
    pub(crate) fn parse(url: &str) -> Result<HfUrl> {
        let rest = url
            .get(..5)
            .filter(|s| s.eq_ignore_ascii_case("hf://"))
            .map(|_| &url[5..])
            .ok_or_else(|| bad(url, "no hf:// scheme"))?;
        let (kind, rest) = match rest.split_once('/') {
            Some(("datasets", r)) => ("datasets", r),
            Some(("spaces", r)) => ("spaces", r),
            Some(("models", r)) => ("models", r),
            _ => ("models", rest),
        };
        let mut parts = rest.splitn(3, '/');
        let org = parts.next().unwrap_or("");
        let repo_rev = parts.next().unwrap_or("");
        let path = parts.next().unwrap_or("");
        let (repo, rev) = match repo_rev.split_once('@') {
            Some((r, v)) => (r, v),
            None => (repo_rev, "main"),
        };
        let ok = |s: &str| {
            !s.is_empty()
                && s != "."
                && s != ".."
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.%".contains(&b))
        };
        if !ok(org) || !ok(repo) {
            return Err(bad(url, "it needs ORG/REPO"));
        }
        if !ok(rev) {
            return Err(bad(url, "a bad revision"));
        }
        if path.split('/').any(|p| p == ".." || p == ".") || path.contains("//") {
            return Err(bad(url, "a bad path"));
        }
        Ok(HfUrl {
            kind,
            repo: format!("{org}/{repo}"),
            rev: rev.to_string(),
            path: path.to_string(),
        })
    }

    /// The repository's part of a resolve URL: `ORG/REPO` for a model,
    /// `datasets/ORG/REPO`, `spaces/ORG/REPO`.
    fn repo_path(&self) -> String {
        match self.kind {
            "models" => self.repo.clone(),
            k => format!("{k}/{}", self.repo),
        }
    }

    /// Where the file's bytes are: the hub's resolve URL.
    pub(crate) fn resolve(&self) -> Result<String> {
        let base = format!("{}/{}/resolve/{}/", endpoint(), self.repo_path(), self.rev);
        self.with_path(&base, self.path.split('/'))
    }

    /// The first page of the recursive listing under the path.
    pub(crate) fn tree(&self) -> Result<String> {
        let base = format!(
            "{}/api/{}/{}/tree/{}/",
            endpoint(),
            self.kind,
            self.repo,
            self.rev
        );
        let path = self.path.trim_end_matches('/');
        let mut u = self.with_path(&base, path.split('/').filter(|p| !p.is_empty()))?;
        u.push_str("?recursive=true&expand=false");
        Ok(u)
    }

    /// `base` (ending in `/`) with the path's segments after it, each
    /// percent-encoded as a URL path segment (a name holding a space, `?`
    /// or `#` stays a name).
    fn with_path<'p>(&self, base: &str, segments: impl Iterator<Item = &'p str>) -> Result<String> {
        let mut u = url::Url::parse(base)
            .map_err(|e| bad(base, &format!("HF_ENDPOINT does not make a URL: {e}")))?;
        u.path_segments_mut()
            .map_err(|()| bad(base, "HF_ENDPOINT cannot have a path"))?
            .pop_if_empty()
            .extend(segments);
        Ok(u.into())
    }

    /// The `hf://` URL of the file at `path` of this repository and
    /// revision (as a listing names it).
    pub(crate) fn file(&self, path: &str) -> String {
        let kind = match self.kind {
            "models" => String::new(),
            k => format!("{k}/"),
        };
        let rev = if self.rev == "main" {
            String::new()
        } else {
            format!("@{}", self.rev)
        };
        let (org, repo) = self.repo.split_once('/').unwrap_or((&self.repo, ""));
        format!("hf://{kind}{org}/{repo}{rev}/{path}")
    }
}

/// `url` as listings name its objects: its scheme in lower case, and an
/// `hf://` URL in the one spelling [`HfUrl::file`] gives
/// (`hf://ORG/REPO/PATH` for a model at `main`, however it was written:
/// `models/`, `@main`); one that does not parse, as it is.
pub(crate) fn canonical(url: &str) -> std::borrow::Cow<'_, str> {
    if super::scheme::is_hf(url) {
        if let Ok(u) = HfUrl::parse(url) {
            return u.file(&u.path).into();
        }
    }
    match url.split_once("://") {
        Some((scheme, rest)) if scheme.bytes().any(|b| b.is_ascii_uppercase()) => {
            format!("{}://{rest}", scheme.to_ascii_lowercase()).into()
        }
        _ => url.into(),
    }
}

/// The hub's address (`HF_ENDPOINT`, default `https://huggingface.co`),
/// without a trailing slash.
pub(crate) fn endpoint() -> String {
    std::env::var("HF_ENDPOINT")
        .ok()
        .filter(|e| !e.is_empty())
        .unwrap_or_else(|| "https://huggingface.co".into())
        .trim_end_matches('/')
        .to_string()
}

/// The user's hub token, as the hub client finds it: `HF_TOKEN`, else the
/// file `HF_TOKEN_PATH`, else `$HF_HOME/token` (`HF_HOME` defaulting to
/// `$XDG_CACHE_HOME/huggingface`, then `~/.cache/huggingface`).
pub(crate) fn token() -> Option<String> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    if let Some(t) = env("HF_TOKEN") {
        return Some(t.trim().to_string());
    }
    let path = env("HF_TOKEN_PATH")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            let home = env("HF_HOME").map(std::path::PathBuf::from).or_else(|| {
                env("XDG_CACHE_HOME")
                    .map(|c| std::path::PathBuf::from(c).join("huggingface"))
                    .or_else(|| {
                        env("HOME").map(|h| std::path::Path::new(&h).join(".cache/huggingface"))
                    })
            })?;
            Some(home.join("token"))
        })?;
    // A token file is a line; a larger file is not one.
    let meta = std::fs::metadata(&path).ok()?;
    if meta.len() > 4096 {
        return None;
    }
    let t = std::fs::read_to_string(path).ok()?;
    let t = t.trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// One file of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    /// Its path in the repository.
    pub(crate) path: String,
    /// Its size in bytes.
    pub(crate) size: u64,
    /// Its version: the LFS object's SHA-256, else the git blob id.
    pub(crate) version: String,
}

/// The files of one page of a tree listing (its JSON body), and the next
/// page's URL from its `Link` header.
pub(crate) fn page(body: &[u8]) -> std::result::Result<Vec<Listed>, String> {
    let items: Vec<serde_json::Value> =
        serde_json::from_slice(body).map_err(|e| format!("the hub's listing is not JSON: {e}"))?;
    let mut out = Vec::new();
    for it in items {
        if it.get("type").and_then(|t| t.as_str()) != Some("file") {
            continue;
        }
        let path = it.get("path").and_then(|p| p.as_str());
        let size = it.get("size").and_then(|s| s.as_u64());
        let (Some(path), Some(size)) = (path, size) else {
            return Err("a file in the hub's listing without a path or a size".into());
        };
        let lfs = it.get("lfs");
        let version = lfs
            .and_then(|l| l.get("oid").or_else(|| l.get("sha256")))
            .or_else(|| it.get("oid"))
            .and_then(|o| o.as_str())
            .unwrap_or("")
            .to_string();
        let size = lfs
            .and_then(|l| l.get("size"))
            .and_then(|s| s.as_u64())
            .unwrap_or(size);
        out.push(Listed {
            path: path.to_string(),
            size,
            version,
        });
    }
    Ok(out)
}

/// The `rel="next"` URL of a `Link` header, if any.
pub(crate) fn next_link(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        params
            .split(';')
            .any(|p| {
                let p = p.trim();
                p == "rel=\"next\"" || p == "rel=next"
            })
            .then(|| {
                url.trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_string()
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hf_urls_name_a_repository_a_revision_and_a_path_as_the_hub_client_does() {
        let u =
            HfUrl::parse("hf://aws-neuron/optimum-neuron-cache/neuronxcc-2.14/MODULE_1/model.neff")
                .unwrap();
        assert_eq!(
            (u.kind, u.repo.as_str(), u.rev.as_str(), u.path.as_str()),
            (
                "models",
                "aws-neuron/optimum-neuron-cache",
                "main",
                "neuronxcc-2.14/MODULE_1/model.neff"
            )
        );
        let u = HfUrl::parse("hf://datasets/org/zoo@refs%2Fpr%2F3/a/b.neff").unwrap();
        assert_eq!(
            (u.kind, u.rev.as_str(), u.path.as_str()),
            ("datasets", "refs%2Fpr%2F3", "a/b.neff")
        );
        assert!(u
            .resolve()
            .unwrap()
            .ends_with("/datasets/org/zoo/resolve/refs%2Fpr%2F3/a/b.neff"));
        assert!(u
            .tree()
            .unwrap()
            .contains("/api/datasets/org/zoo/tree/refs%2Fpr%2F3/a/b.neff?recursive=true"));
        assert_eq!(
            u.file("x/y.neff"),
            "hf://datasets/org/zoo@refs%2Fpr%2F3/x/y.neff"
        );
        // Names the URL would misread are encoded as path segments.
        let odd = HfUrl::parse("hf://org/zoo/a b/c?d#e.neff").unwrap();
        assert!(odd
            .resolve()
            .unwrap()
            .ends_with("/org/zoo/resolve/main/a%20b/c%3Fd%23e.neff"));
        let root = HfUrl::parse("hf://org/zoo").unwrap();
        assert_eq!(root.path, "");
        assert!(root
            .tree()
            .unwrap()
            .ends_with("/api/models/org/zoo/tree/main?recursive=true&expand=false"));
        assert_eq!(root.file("m.neff"), "hf://org/zoo/m.neff");
        // One spelling of a prefix, whatever the URL said.
        for same in ["hf://org/zoo/c/", "hf://models/org/zoo@main/c/"] {
            assert_eq!(canonical(same), "hf://org/zoo/c/");
        }
        assert_eq!(canonical("hf://org/zoo@v1/c"), "hf://org/zoo@v1/c");
        assert_eq!(canonical("s3://b/MODULE_1"), "s3://b/MODULE_1");
        assert_eq!(canonical("S3://b/Cache"), "s3://b/Cache");
        assert_eq!(canonical("HF://org/zoo/c"), "hf://org/zoo/c");
        for bad in [
            "hf://",
            "hf://org",
            "hf://org/",
            "hf://../x/y",
            "hf://o/r/../../etc",
            "hf://o/r@/p",
            "s3://o/r",
        ] {
            assert!(HfUrl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_listing_page_gives_files_with_their_lfs_size_and_version_and_the_next_page() {
        let body = br#"[
            {"type":"directory","oid":"d1","size":0,"path":"acc"},
            {"type":"file","oid":"b1","size":134,"path":"acc/a.neff","lfs":{"oid":"sha-a","size":5000,"pointerSize":134}},
            {"type":"file","oid":"b2","size":77,"path":"acc/b.json"}
        ]"#;
        let files = page(body).unwrap();
        assert_eq!(
            files,
            vec![
                Listed {
                    path: "acc/a.neff".into(),
                    size: 5000,
                    version: "sha-a".into()
                },
                Listed {
                    path: "acc/b.json".into(),
                    size: 77,
                    version: "b2".into()
                },
            ]
        );
        assert!(page(b"{").is_err());
        assert!(page(br#"[{"type":"file"}]"#).is_err());
        assert_eq!(
            next_link(r#"<https://hub/api/models/o/r/tree/main?cursor=abc>; rel="next""#)
                .as_deref(),
            Some("https://hub/api/models/o/r/tree/main?cursor=abc")
        );
        assert_eq!(next_link(r#"<https://x>; rel="prev""#), None);
    }
}
