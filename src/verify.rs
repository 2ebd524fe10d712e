//! The payload hash: MD5 (package version 2) or SHA-256 (version 1) of the
//! payload bytes as stored, against the header (docs/FORMAT.md §1.4).
//!
//! Verification needs only the header and the stored bytes: it neither
//! inflates nor indexes, so it runs at the speed of the digest.

use md5::digest::DynDigest;
use md5::{Digest, Md5};
use sha2::Sha256;

use crate::error::{Error, Result};
use crate::header::{hex, Header};
use crate::map::FileBytes;
use crate::reader::{Neff, Options};
use crate::source::Source;

/// The hasher of a header of package version `pkg`: MD5 for 2, else SHA-256.
fn hasher(pkg: u64) -> Box<dyn DynDigest> {
    if pkg == 2 {
        Box::new(Md5::new())
    } else {
        Box::new(Sha256::new())
    }
}

/// The digest of `payload` that a header of package version `pkg` holds.
pub fn digest(pkg: u64, payload: &[u8]) -> Vec<u8> {
    let mut d = hasher(pkg);
    d.update(payload);
    d.finalize().to_vec()
}

/// The payload's hash against `header`'s, the payload handed over by
/// `feed` in order, in as many pieces as it likes.
fn check_hash(
    header: &Header,
    feed: impl FnOnce(&mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()>,
) -> Result<()> {
    let pkg = header.pkg_version.get();
    let mut d = hasher(pkg);
    feed(&mut |piece| {
        d.update(piece);
        Ok(())
    })?;
    let got = d.finalize();
    let want = header.hash_bytes();
    if *got != *want {
        return Err(Error::Hash {
            algorithm: if pkg == 2 { "MD5" } else { "SHA256" },
            expected: hex(want),
            actual: hex(&got),
        });
    }
    Ok(())
}

/// What `neff verify` checks of the file at `path`: the header's sizes
/// against the file, the payload's hash against the header, and then that
/// the payload reads (every gzip trailer, every tar header), as the runtime
/// will read it.
///
/// ```
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/interop/gnutar-pax-gz.neff");
/// neff::verify(path, &neff::Options::default())?;
/// # Ok::<(), neff::Error>(())
/// ```
pub fn verify(path: impl AsRef<std::path::Path>, opts: &Options) -> Result<()> {
    let source = Source::of(path);
    #[cfg(feature = "remote")]
    if let Some(url) = source.url() {
        // Opened first (ranged reads of the tar headers), then the payload
        // streamed through the digest: nothing is held whole.
        let neff = Neff::open_url(url, opts)?;
        return verify_open(&neff);
    }
    let bytes = FileBytes::open(source.path(), opts.read_mode)?;
    let verdict = verify_bytes(&bytes);
    if bytes.changed() {
        return Err(Error::Changed);
    }
    verdict?;
    drop(bytes);
    Neff::open_at(&source, opts, None).map(drop)
}

/// The payload hash of an open NEFF against its header: what
/// [`verify_bytes`] checks, with the payload streamed where it is not held
/// (a remote object read by ranges).
pub(crate) fn verify_open(neff: &Neff) -> Result<()> {
    check_hash(neff.header(), |sink| neff.for_each_stored(sink))
}

/// Checks a whole NEFF file held in memory: header sizes against the
/// bytes, then the payload's hash against the header (the payload is not
/// read further; [`verify`] also reads it).
pub fn verify_bytes(file: &[u8]) -> Result<()> {
    let header = Header::from_file_bytes(file)?;
    let span = header.locate_payload(file)?;
    check_hash(header, |sink| {
        sink(&file[span.start..span.start + span.len])
    })
}
