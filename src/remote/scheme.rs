//! Which strings are remote objects (`s3://`, `az://`, `gs://`, `hf://`,
//! `http(s)://`) and which of them name a prefix that can be listed.

/// Whether `s` names a remote object (`s3://`, `gs://`, `az://`, `hf://`,
/// `http://` or `https://`) rather than a local path.
pub fn is_url(s: &str) -> bool {
    is_listable(s) || has_scheme(s, "http://") || has_scheme(s, "https://")
}

/// Whether `s` starts with `scheme`, in any case.
pub(super) fn has_scheme(s: &str, scheme: &str) -> bool {
    s.get(..scheme.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(scheme))
}

/// Whether `url` names a store that can be listed (`s3://`, `gs://`,
/// `az://`, `hf://`), not one object behind an HTTP server: a URL of one
/// that does not end in `.neff` is a prefix a scan lists.
pub fn is_listable(url: &str) -> bool {
    ["s3://", "gs://", "az://", "hf://"]
        .iter()
        .any(|b| has_scheme(url, b))
}

pub(super) fn is_hf(url: &str) -> bool {
    has_scheme(url, "hf://")
}
