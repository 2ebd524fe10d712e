//! The one place where a URL becomes printable: in an error, a log line,
//! a scan record's `path`, a catalogue row's `path`, a Python exception.
//!
//! A presigned URL carries its signature and credential in its query
//! (`X-Amz-Signature=…`, `X-Amz-Credential=…`, an Azure SAS `sig=…`), a
//! URL may carry a user and password before its host
//! (`http://user:password@host/…`): neither may reach a CI log, cron mail
//! or a shared catalogue. So every query value is replaced by
//! `<redacted>`, its name kept (a reader still sees what kind of URL it
//! was), a query element without a value is replaced whole, a fragment
//! likewise, and the userinfo is dropped. The request itself is made with
//! the URL as given.

use std::borrow::Cow;

/// What replaces a secret.
pub(crate) const REDACTED: &str = "<redacted>";

/// `url` as it may be printed: query values and a fragment replaced by
/// `<redacted>`, userinfo dropped; anything without `://` is returned as
/// it is.
pub fn redact(url: &str) -> Cow<'_, str> {
    let Some(at) = url.find("://") else {
        return Cow::Borrowed(url);
    };
    let after = at + 3;
    let rest = &url[after..];
    let auth_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..auth_end];
    let host = authority
        .rfind('@')
        .map_or(authority, |i| &authority[i + 1..]);
    let tail = &rest[auth_end..];
    let (before_frag, frag) = match tail.find('#') {
        Some(i) => (&tail[..i], Some(&tail[i + 1..])),
        None => (tail, None),
    };
    let (path, query) = match before_frag.find('?') {
        Some(i) => (&before_frag[..i], Some(&before_frag[i + 1..])),
        None => (before_frag, None),
    };
    if host.len() == authority.len() && query.is_none() && frag.is_none() {
        return Cow::Borrowed(url);
    }
    let mut out = String::with_capacity(url.len());
    out.push_str(&url[..after]);
    out.push_str(host);
    out.push_str(path);
    if let Some(q) = query {
        out.push('?');
        for (i, part) in q.split('&').enumerate() {
            if i > 0 {
                out.push('&');
            }
            match part.split_once('=') {
                Some((name, _)) => {
                    out.push_str(name);
                    out.push('=');
                    out.push_str(REDACTED);
                }
                None if part.is_empty() => {}
                None => out.push_str(REDACTED),
            }
        }
    }
    if let Some(f) = frag {
        out.push('#');
        if !f.is_empty() {
            out.push_str(REDACTED);
        }
    }
    Cow::Owned(out)
}

/// `text` with every URL in it (a scheme, `://`, up to the next white
/// space or quote) made printable by [`redact`]: for messages that quote
/// a URL among other words (an HTTP client's).
pub fn redact_text(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        // The scheme: the letters, digits, `+`, `-` and `.` before `://`.
        let start = rest[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |i| i + 1);
        let stop = |c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`');
        let mut end = at;
        loop {
            end = rest[end..].find(stop).map_or(rest.len(), |i| end + i);
            // A URL made printable already goes on past its `<redacted>`
            // (so that a message is redacted once, however often shown).
            match rest[end..].strip_prefix(REDACTED) {
                Some(_) => end += REDACTED.len(),
                None => break,
            }
        }
        // A URL in parentheses ends before the closing one.
        if rest[..start].ends_with('(') && rest[..end].ends_with(')') {
            end -= 1;
        }
        out.push_str(&rest[..start]);
        out.push_str(&redact(&rest[start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_and_userinfo_are_gone_names_kept() {
        assert_eq!(
            redact("https://b.s3.amazonaws.com/k/x.neff?X-Amz-Credential=AKIA%2F1&X-Amz-Signature=abc123&flag"),
            "https://b.s3.amazonaws.com/k/x.neff?X-Amz-Credential=<redacted>&X-Amz-Signature=<redacted>&<redacted>"
        );
        assert_eq!(
            redact("http://user:password@host:8080/a.neff"),
            "http://host:8080/a.neff"
        );
        assert_eq!(
            redact("http://u:p@h/a?sig=s#frag"),
            "http://h/a?sig=<redacted>#<redacted>"
        );
        assert_eq!(redact("http://h?t=1"), "http://h?t=<redacted>");
    }

    #[test]
    fn what_holds_no_secret_is_borrowed_as_it_is() {
        for s in [
            "s3://zoo/acc/a.neff",
            "model.neff",
            "http://h:1/a@b.neff",
            "",
        ] {
            assert!(matches!(redact(s), Cow::Borrowed(x) if x == s), "{s}");
        }
    }

    #[test]
    fn urls_among_words_are_redacted_in_place() {
        assert_eq!(
            redact_text("error sending request for url (http://u:pw@h/x?sig=s3cret) after 3 tries"),
            "error sending request for url (http://h/x?sig=<redacted>) after 3 tries"
        );
        assert_eq!(
            redact_text("a \"https://h/x?a=1\" and https://h/y"),
            "a \"https://h/x?a=<redacted>\" and https://h/y"
        );
        assert_eq!(redact_text("no url here"), "no url here");
        // Redacted once, whatever the number of passes.
        let once = redact_text("see http://u:pw@h/x?a=1&b&c=3#f gone").into_owned();
        assert_eq!(
            once,
            "see http://h/x?a=<redacted>&<redacted>&c=<redacted>#<redacted> gone"
        );
        assert_eq!(redact_text(&once), once);
    }
}
