//! The payload hash: MD5 (package version 2) or SHA-256 (version 1) of the
//! payload bytes as stored, against the header (NEFF-FORMAT.md §1.4).
//!
//! Verification needs only the header and the stored bytes: it neither
//! inflates nor indexes, so it runs at the speed of the digest.

use md5::{Digest, Md5};
use sha2::Sha256;

use crate::error::{Error, Result};
use crate::header::{hex, Header};

/// The digest of `payload` that a header of package version `pkg` holds.
pub fn digest(pkg: u64, payload: &[u8]) -> Vec<u8> {
    if pkg == 2 {
        Md5::digest(payload).to_vec()
    } else {
        Sha256::digest(payload).to_vec()
    }
}

/// Checks a whole NEFF file: header sizes against the file, then the hash.
pub fn verify_file(file: &[u8]) -> Result<()> {
    let header = Header::from_file_bytes(file)?;
    let span = header.locate_payload(file)?;
    let payload = &file[span.start..span.start + span.len];
    let pkg = header.pkg_version.get();
    let got = digest(pkg, payload);
    let want = header.hash_bytes();
    if got != want {
        let algo = if pkg == 2 { "MD5" } else { "SHA256" };
        return Err(Error::Hash(format!(
            "{algo} mismatch! header has {}, payload hashes to {}",
            hex(want),
            hex(&got)
        )));
    }
    Ok(())
}
