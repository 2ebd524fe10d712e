//! The parts of a URL's query that sign it, told from those that choose
//! the object: a catalogue keys an object on its URL with the second
//! kept (`versionId`, `generation`, `snapshot`, a hub revision) and the
//! first removed, so that a URL signed again names the same row and two
//! versions never share one.
//!
//! The signing parameters, as each scheme names them:
//!
//! - S3 Signature Version 4 (presigned): every `X-Amz-*`
//!   (`X-Amz-Algorithm`, `-Credential`, `-Date`, `-Expires`,
//!   `-SignedHeaders`, `-Signature`, `-Security-Token`, …);
//! - Google Cloud Storage V4 signing: every `X-Goog-*`;
//! - S3 Signature Version 2, GCS V2 signing and CloudFront signed URLs,
//!   when the query has a `Signature`: `Signature`, `Expires`,
//!   `AWSAccessKeyId`, `GoogleAccessId`, `Key-Pair-Id`, `Policy`;
//! - an Azure shared access signature, when the query has a `sig`: the
//!   SAS fields (`sv`, `ss`, `srt`, `sp`, `se`, `st`, `spr`, `sip`, `si`,
//!   `sr`, `sdd`, `sig`, `ses`, the user-delegation `sk*`, `saoid`,
//!   `suoid`, `scid`, `sduoid`, and the response overrides `rscc`, `rscd`,
//!   `rsce`, `rscl`, `rsct`).
//!
//! The short names of the last two are removed only beside their
//! signature: on a URL of another kind, `st` or `Expires` may choose what
//! is served.

/// The fields of an S3 V2, GCS V2 or CloudFront signature.
const WITH_SIGNATURE: &[&str] = &[
    "signature",
    "expires",
    "awsaccesskeyid",
    "googleaccessid",
    "key-pair-id",
    "policy",
];

/// The fields of an Azure shared access signature.
const WITH_SIG: &[&str] = &[
    "sv", "ss", "srt", "sp", "se", "st", "spr", "sip", "si", "sr", "sdd", "sig", "ses", "skoid",
    "sktid", "skt", "ske", "sks", "skv", "saoid", "suoid", "scid", "sduoid", "skdutid", "rscc",
    "rscd", "rsce", "rscl", "rsct",
];

/// A query element's name, lower case (its value left aside).
fn name_of(part: &str) -> String {
    part.split_once('=')
        .map_or(part, |(n, _)| n)
        .to_ascii_lowercase()
}

/// `query` without the parameters that sign it, in the order given;
/// `None` when nothing is left.
pub(crate) fn unsigned_query(query: &str) -> Option<String> {
    let parts: Vec<&str> = query.split('&').filter(|p| !p.is_empty()).collect();
    let names: Vec<String> = parts.iter().map(|p| name_of(p)).collect();
    let v2 = names.iter().any(|n| n == "signature");
    let sas = names.iter().any(|n| n == "sig");
    let kept: Vec<&str> = parts
        .iter()
        .zip(&names)
        .filter(|(_, n)| {
            !(n.starts_with("x-amz-")
                || n.starts_with("x-goog-")
                || v2 && WITH_SIGNATURE.contains(&n.as_str())
                || sas && WITH_SIG.contains(&n.as_str()))
        })
        .map(|(p, _)| *p)
        .collect();
    (!kept.is_empty()).then(|| kept.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_go_selectors_stay() {
        assert_eq!(
            unsigned_query(
                "versionId=a&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=K%2F1\
                 &X-Amz-Date=1&X-Amz-Expires=60&X-Amz-SignedHeaders=host\
                 &X-Amz-Security-Token=t&X-Amz-Signature=s"
            )
            .as_deref(),
            Some("versionId=a")
        );
        assert_eq!(
            unsigned_query("generation=7&X-Goog-Algorithm=a&X-Goog-Signature=s").as_deref(),
            Some("generation=7")
        );
        assert_eq!(
            unsigned_query("AWSAccessKeyId=K&Expires=1&Signature=s&versionId=b").as_deref(),
            Some("versionId=b")
        );
        assert_eq!(
            unsigned_query("snapshot=2024&sv=1&se=2&sp=r&sr=b&st=0&spr=https&sig=s").as_deref(),
            Some("snapshot=2024")
        );
        assert_eq!(unsigned_query("X-Amz-Signature=s"), None);
    }

    #[test]
    fn short_names_stay_without_their_signature() {
        assert_eq!(
            unsigned_query("st=3&Expires=9&sp=x").as_deref(),
            Some("st=3&Expires=9&sp=x")
        );
    }
}
