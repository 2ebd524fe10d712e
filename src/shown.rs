//! Paths and URLs as the crate prints them (a record's `path`, a
//! catalogue row's `path`): a URL made printable by
//! [`crate::remote::redact`] (its query values and userinfo hidden), a
//! local path as it is.

use std::path::Path;

/// `p` as a record or a row prints it.
pub(crate) fn path(p: &Path) -> String {
    let s = p.display().to_string();
    #[cfg(feature = "remote")]
    if crate::remote::is_url(&s) {
        return crate::remote::redact(&s).into_owned();
    }
    s
}
