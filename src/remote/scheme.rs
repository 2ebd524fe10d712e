//! Which strings are remote objects (`s3://`, `az://`, `gs://`, `hf://`,
//! `http(s)://`) and which of them name a prefix that can be listed; the
//! URL of a listed key, and back.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;

/// The URL of the object `key` in the bucket at `root` (`s3://bucket`),
/// naming that key and no other: its `%`, `#` and `?` percent-encoded (a
/// key made into a URL as it is was cut at a `#` or `?`, fragment or
/// query, and one holding `%20` was decoded into another key: a read, and
/// a prune's delete, went to the wrong object). Every other byte is as the
/// key has it (a URL's parser encodes what it must, and a store path is
/// made from the decoded path: `remote::store`).
pub(crate) fn object_url(root: &str, key: &str) -> String {
    let mut url = String::with_capacity(root.len() + key.len() + 1);
    url.push_str(root);
    url.push('/');
    for c in key.chars() {
        match c {
            '%' => url.push_str("%25"),
            '#' => url.push_str("%23"),
            '?' => url.push_str("%3F"),
            c => url.push(c),
        }
    }
    url
}

/// Part of a URL [`object_url`] made, as the key's own bytes (every `%`
/// in it begins an escape).
pub(crate) fn key_part(url_part: &str) -> Cow<'_, str> {
    percent_decode_str(url_part).decode_utf8_lossy()
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_keys_url_names_that_key_for_a_read_and_a_delete() {
        // As `remote::store` and `remote::delete` find an object: the URL
        // parsed, its path decoded.
        for key in [
            "a/x.neff",
            "c#d/x.neff",
            "q?x=1/model.neff",
            "e%20f/x.neff",
            "e f/x.neff",
            "b\"q/{y}<z>`|^~[]\\/model.neff",
            "MODULE_\u{e9}+1/model.neff",
            "100%/%25/%",
        ] {
            let url = object_url("s3://bucket", key);
            let parsed = url::Url::parse(&url).unwrap();
            assert_eq!(parsed.query(), None, "{url}");
            assert_eq!(parsed.fragment(), None, "{url}");
            let path = super::super::store::object_path(&parsed).unwrap();
            assert_eq!(path.as_ref(), key, "{url}");
            assert_eq!(key_part(url.strip_prefix("s3://bucket/").unwrap()), key);
        }
    }
}
