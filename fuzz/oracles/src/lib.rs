//! Other readers of the same tar bytes, and the comparison that the
//! differential fuzz targets (`fuzz/fuzz_targets/vs_*.rs`) and their CI
//! replay (`tests/replay.rs`) run: for every input, `neff` must refuse it
//! or list exactly what the other reader lists (names, types, sizes, link
//! targets, data). Refusing is always allowed: where the readers disagree,
//! refusing is `neff`'s rule (the `tar` module docs).
//!
//! Two oracles: the system libarchive ([`libarchive`], the runtime's
//! reader) and the pure-Rust `tar` crate ([`tar_crate`]). Where the `tar`
//! crate is known to read differently from GNU tar and libarchive, the
//! difference is named in [`tar_crate`] and the input is not judged by it.

pub mod libarchive;
pub mod tar_crate;

use neff::Neff;

/// Most bytes of one entry's data an oracle reads before giving up on
/// judging the input (a sparse file's holes can expand a small input
/// without bound).
pub const MAX_DATA: usize = 16 << 20;

/// One archive entry as a reader lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The name, as raw bytes.
    pub name: Vec<u8>,
    /// `file` (a GNU sparse file too), `dir`, `symlink`, `hardlink` or `other`.
    pub kind: &'static str,
    /// The declared size of the entry's data.
    pub size: u64,
    /// The link target of a symlink or hard link.
    pub link: Option<Vec<u8>>,
    /// The entry's data, as the reader hands it out.
    pub data: Vec<u8>,
}

/// A reader's listing of an archive, or the reason it refused.
pub type Listing = Result<Vec<Listed>, String>;

/// `neff`'s listing of a whole NEFF file.
pub fn neff_listing(file: &[u8]) -> Listing {
    let n = Neff::from_bytes(file.to_vec(), &neff::fuzzing::fuzz_options())
        .map_err(|e| e.to_string())?;
    n.entries()
        .iter()
        .map(|e| {
            Ok(Listed {
                name: n.name(e).to_vec(),
                kind: e.kind.as_str(),
                size: e.size,
                link: n.link(e).map(<[u8]>::to_vec),
                data: n.data(e).map_err(|e| e.to_string())?.into_owned(),
            })
        })
        .collect()
}

/// What `neff` reads from `tar` behind a NEFF header, raw (package
/// version 1) and gzip-compressed (version 2).
pub fn neff_reads(tar: &[u8]) -> [Listing; 2] {
    [
        neff_listing(&neff::fuzzing::wrap(tar)),
        neff_listing(&neff::fuzzing::wrap(&neff::pack::gzip(tar))),
    ]
}

/// An oracle's name as `neff` presents it (CLI.md): one leading `./`
/// dropped, and a directory's trailing slashes (a directory that would
/// become empty is `.`). Naming, not reading: applied before comparing.
fn presented(mut l: Listing) -> Listing {
    if let Ok(v) = l.as_mut() {
        for e in v {
            let mut start = 0;
            let mut end = e.name.len();
            if e.name.starts_with(b"./") && e.name.len() > 2 {
                start = 2;
            }
            if e.kind == "dir" {
                while end > start + 1 && e.name[end - 1] == b'/' {
                    end -= 1;
                }
            }
            e.name = e.name[start..end].to_vec();
        }
    }
    l
}

/// Panics (a finding) unless `neff` refused `tar` or listed exactly what
/// `oracle` listed; `who` names the oracle in the message.
pub fn judge(who: &str, tar: &[u8], oracle: &Listing) {
    for (how, read) in ["raw", "gzip"].iter().zip(neff_reads(tar)) {
        let Ok(got) = read else {
            continue; // neff refused: always allowed
        };
        match oracle {
            Err(why) => panic!(
                "neff ({how}) read {} entries that {who} refuses ({why}): {:?}",
                got.len(),
                brief(&got)
            ),
            Ok(want) => {
                if want != &got {
                    panic!(
                        "neff ({how}) and {who} list differently:\n  neff: {:?}\n  {who}: {:?}",
                        brief(&got),
                        brief(want)
                    );
                }
            }
        }
    }
}

/// Entries without their data, for a readable finding.
fn brief(l: &[Listed]) -> Vec<String> {
    l.iter()
        .map(|e| {
            format!(
                "{} {} size={} link={:?} data={}B",
                String::from_utf8_lossy(&e.name).escape_debug(),
                e.kind,
                e.size,
                e.link.as_deref().map(String::from_utf8_lossy),
                e.data.len()
            )
        })
        .collect()
}

/// Target `vs_libarchive`: `tar` against the system libarchive (inputs
/// with an entry larger than [`MAX_DATA`] are skipped).
pub fn vs_libarchive(tar: &[u8]) {
    if let Some(listing) = libarchive::list(tar) {
        judge("libarchive", tar, &presented(listing));
    }
}

/// Target `vs_tar_crate`: `tar` against the `tar` crate (inputs it is
/// known to read differently from GNU tar and libarchive are skipped).
pub fn vs_tar_crate(tar: &[u8]) {
    if let Some(listing) = tar_crate::list(tar) {
        judge("the tar crate", tar, &presented(listing));
    }
}
