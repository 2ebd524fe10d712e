//! Whether two copies of an entry's files hold the same bytes, reading as
//! little as can be: a digest a listing gave (an S3 or GCS ETag that is the
//! object's MD5, a hub file's SHA-256 or git blob id) is checked against
//! the other copy's own (the same digest from its listing, or its bytes on
//! disk hashed); where none was given, both copies are read and their
//! SHA-256 compared. So no object's body is read to find an unchanged
//! entry the same when the store's listing gives such digests and the
//! other side is a directory (or a store giving the same kind); and a
//! file on disk is hashed once, its digest remembered ([`super::memo`]).

use std::io;
use std::path::Path;

use super::files::{Print, SrcFile};
use super::memo::digest;
use super::Action;

/// Whether a store's URL (not a path on disk) names the entry `dir`.
fn remote(dir: &Path) -> bool {
    super::url_of(dir).is_some()
}

/// Whether the file `a` of the entry `a_dir` and the file `b` of the
/// entry `b_dir` hold the same bytes, each read only where no digest
/// decides it.
pub(super) fn same_file(a_dir: &Path, a: &SrcFile, b_dir: &Path, b: &SrcFile) -> io::Result<bool> {
    if a.size != b.size {
        return Ok(false);
    }
    if let (Some(pa), Some(pb)) = (a.print, b.print) {
        if pa.same_kind(pb) && (pa == pb || pa.exact()) {
            return Ok(pa == pb);
        }
    }
    // A digest one side's listing gave, checked against the other side's
    // bytes where they are on disk.
    for (known, dir, f) in [(b.print, a_dir, a), (a.print, b_dir, b)] {
        if let (Some(p), false) = (known, remote(dir)) {
            let ours = digest(dir, f, p)?;
            if ours == p || p.exact() {
                return Ok(ours == p);
            }
        }
    }
    Ok(digest(a_dir, a, Print::Sha256([0; 32]))? == digest(b_dir, b, Print::Sha256([0; 32]))?)
}

/// How the files `b` (of the entry at `b_dir`) differ from `a` (of the
/// entry at `a_dir`), both sorted by path: `None` when they are the same
/// (names, sizes and bytes).
pub(super) fn differs(
    a_dir: &Path,
    a: &[SrcFile],
    b_dir: &Path,
    b: &[SrcFile],
) -> Result<Option<String>, (Action, String)> {
    fn sized(f: &[SrcFile]) -> Vec<(&Path, u64)> {
        f.iter().map(|f| (f.rel.as_path(), f.size)).collect()
    }
    if sized(a) != sized(b) {
        let odd = a
            .iter()
            .find(|f| !b.iter().any(|t| t.rel == f.rel && t.size == f.size))
            .or_else(|| b.iter().find(|t| !a.iter().any(|f| f.rel == t.rel)));
        let what = odd.map_or_else(String::new, |f| format!(" ({})", f.rel.display()));
        return Ok(Some(format!("its files or sizes differ{what}")));
    }
    for (f, t) in a.iter().zip(b) {
        let same = same_file(a_dir, f, b_dir, t).map_err(|e| {
            (
                Action::Error,
                format!(
                    "{} of {} or {}: {e}",
                    f.rel.display(),
                    a_dir.display(),
                    b_dir.display()
                ),
            )
        })?;
        if !same {
            return Ok(Some(format!(
                "{} differs (same size, other bytes)",
                f.rel.display()
            )));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn file(dir: &Path, name: &str, bytes: &[u8], print: Option<Print>) -> SrcFile {
        std::fs::write(dir.join(name), bytes).unwrap();
        SrcFile {
            rel: PathBuf::from(name),
            size: bytes.len() as u64,
            modified: None,
            print,
        }
    }

    #[cfg(feature = "remote")]
    #[test]
    fn listings_digests_are_told_by_store_and_shape() {
        let md5 = "\"9e107d9d372bb6826bd81d3542a419d6\"";
        assert!(matches!(Print::of("s3://b/k", md5), Some(Print::Md5(_))));
        assert!(matches!(Print::of("gs://b/k", md5), Some(Print::Md5(_))));
        assert_eq!(
            Print::of("gs://b/k", "nhB9nTcrtoJr2B01QqQZ1g=="),
            Print::of("s3://b/k", md5)
        );
        // A multipart ETag, an Azure one, a time: no digest.
        assert_eq!(
            Print::of("s3://b/k", "\"9e107d9d372bb6826bd81d3542a419d6-3\""),
            None
        );
        assert_eq!(Print::of("az://c/k", "\"0x8DC1234567890AB\""), None);
        assert_eq!(Print::of("s3://b/k", "1712345678"), None);
        let sha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        assert_eq!(Print::of("hf://o/r/k", sha).map(Print::exact), Some(true));
        let git = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";
        assert!(matches!(Print::of("hf://o/r/k", git), Some(Print::Git(_))));
        assert_eq!(Print::of("hf://o/r/k", "zz"), None);
    }

    #[cfg(feature = "remote")]
    #[test]
    fn a_digest_from_a_listing_decides_against_the_bytes_on_disk() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        // The empty file's git blob id and SHA-256, as the hub lists them.
        let git = Print::of("hf://o/r/k", "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
        let sha = Print::of(
            "hf://o/r/k",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        );
        let empty = file(dir, "e", b"", None);
        let listed = |p| SrcFile {
            print: p,
            ..empty.clone()
        };
        assert!(same_file(dir, &empty, dir, &listed(git)).unwrap());
        assert!(same_file(dir, &listed(sha), dir, &empty).unwrap());
        // MD5 of "x": the same; another exact digest: not.
        let x = file(dir, "x", b"x", None);
        let md5 = Print::of("s3://b/k", "\"9dd4e461268c8034f5c8564e155c67a6\"");
        let listed = |p| SrcFile {
            print: p,
            ..x.clone()
        };
        assert!(same_file(dir, &x, dir, &listed(md5)).unwrap());
        let other = Print::of("hf://o/r/k", &"0".repeat(64));
        assert!(!same_file(dir, &x, dir, &listed(other)).unwrap());
        // An ETag that is not the bytes' MD5 (a part upload's): the bytes
        // decide (here, both on disk: the same).
        let not_md5 = Print::of("s3://b/k", &"1".repeat(32));
        assert!(same_file(dir, &x, dir, &listed(not_md5)).unwrap());
    }

    #[test]
    fn files_differ_by_name_size_or_bytes() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let fa = vec![file(&a, "m", b"one", None)];
        let fb = vec![file(&b, "m", b"one", None)];
        assert_eq!(differs(&a, &fa, &b, &fb).unwrap(), None);
        let fb = vec![file(&b, "m", b"two", None)];
        let why = differs(&a, &fa, &b, &fb).unwrap().unwrap();
        assert!(why.contains("m differs"), "{why}");
        let fb = vec![file(&b, "m", b"three", None)];
        let why = differs(&a, &fa, &b, &fb).unwrap().unwrap();
        assert!(why.contains("sizes differ (m)"), "{why}");
        assert!(differs(&a, &fa, &b, &[]).unwrap().is_some());
    }
}
