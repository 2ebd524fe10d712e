//! Writing NEFFs: a PAX tar of a directory (or of entries built in memory),
//! optionally gzip-compressed with libdeflate, behind a 1024-byte header.
//!
//! Output is reproducible: entries go in byte-wise order of their whole
//! relative paths, owners are 0, and with a fixed mtime (`--mtime` or
//! `SOURCE_DATE_EPOCH`) and uuid two packs of one tree are byte-identical.
//! Names that do not fit the 100-byte ustar field, or are not ASCII, get a
//! PAX `path` record; sizes past ustar's 8 GiB get a PAX `size` record.

use std::path::Path;

use zerocopy::{FromZeros, IntoBytes};

use crate::error::{Error, Result};
use crate::header::{Header, HEADER_SIZE};
use crate::select::Known;
use crate::tar::{Block, BLOCK};

/// What one packed entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PackKind {
    /// A regular file (typeflag `0`) with these contents.
    File(Vec<u8>),
    /// A directory (typeflag `5`); its name is written with a trailing `/`.
    Dir,
    /// A symbolic link with this target ([`pack_dir`] never packs links).
    Symlink(Vec<u8>),
    /// A hard link to this earlier member.
    Hardlink(Vec<u8>),
    /// Any other typeflag (FIFO `6`, character device `3`, …), no data.
    Other(u8),
}

/// One entry to pack: a relative `/`-separated name, its kind, mode and mtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackEntry {
    /// Path inside the archive, relative and `/`-separated; written as given.
    pub name: Vec<u8>,
    /// What the entry is, with its data or link target.
    pub kind: PackKind,
    /// Permission bits (e.g. `0o644`), written to the ustar `mode` field.
    pub mode: u32,
    /// Modification time, seconds since the Unix epoch.
    pub mtime: u64,
}

impl PackEntry {
    /// A regular file with mode 0644.
    pub fn file(name: &str, data: impl Into<Vec<u8>>, mtime: u64) -> PackEntry {
        PackEntry {
            name: name.as_bytes().to_vec(),
            kind: PackKind::File(data.into()),
            mode: 0o644,
            mtime,
        }
    }
}

/// Header fields and encoding choices of a pack.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct PackOptions {
    /// Raw tar, package version 1, SHA-256 (instead of gzip, 2, MD5).
    pub no_gzip: bool,
    /// The header's model name.
    pub name: String,
    /// The header's uuid. When `None`: derived from the payload's digest if
    /// `mtime` is set (a reproducible pack), else a random version-4 uuid.
    pub uuid: Option<[u8; 16]>,
    /// Every entry's mtime, overriding the files'.
    pub mtime: Option<u64>,
    /// A file never to pack, matched by device and inode: the output
    /// itself, when it is written inside the directory being packed.
    pub exclude: Option<std::path::PathBuf>,
}

impl PackOptions {
    /// Sets `no_gzip`: raw tar, package version 1, SHA-256 (instead of gzip, 2, MD5).
    #[must_use]
    pub fn no_gzip(mut self, v: bool) -> Self {
        self.no_gzip = v;
        self
    }

    /// Sets `name`: the header's model name.
    #[must_use]
    pub fn name(mut self, v: impl Into<String>) -> Self {
        self.name = v.into();
        self
    }

    /// Sets `uuid`: the header's uuid.
    #[must_use]
    pub fn uuid(mut self, v: Option<[u8; 16]>) -> Self {
        self.uuid = v;
        self
    }

    /// Sets `mtime`: every entry's mtime, overriding the files'.
    #[must_use]
    pub fn mtime(mut self, v: Option<u64>) -> Self {
        self.mtime = v;
        self
    }

    /// Sets `exclude`: a file never to pack, matched by device and inode: the output itself, when it is written inside the directory being packed.
    #[must_use]
    pub fn exclude(mut self, v: Option<std::path::PathBuf>) -> Self {
        self.exclude = v;
        self
    }
}

/// The build string written into packed headers.
pub const BUILD_VERSION: &str = concat!("neff-rs ", env!("CARGO_PKG_VERSION"));

/// Packs `dir` into NEFF bytes.
pub fn pack_dir(dir: &Path, opts: &PackOptions) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    pack_dir_to(dir, opts, &mut out)?;
    Ok(out)
}

/// Packs `dir` and writes the NEFF to `w`. Files are read straight into the
/// tar buffer (one copy of the data in memory, two with gzip), and the
/// payload is written after its header, not copied behind it.
pub fn pack_dir_to(dir: &Path, opts: &PackOptions, w: &mut impl std::io::Write) -> Result<()> {
    use std::io::Read;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    struct Item {
        name: Vec<u8>,
        path: std::path::PathBuf,
        dir: bool,
        len: u64,
        mode: u32,
        mtime: u64,
    }
    use std::os::unix::fs::MetadataExt;
    let exclude = match &opts.exclude {
        Some(p) => std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino())),
        None => None,
    };
    let mut items = Vec::new();
    for ent in walkdir::WalkDir::new(dir).min_depth(1).follow_links(false) {
        let ent = ent.map_err(|e| Error::Io(e.into()))?;
        let ft = ent.file_type();
        if !ft.is_file() && !ft.is_dir() {
            continue;
        }
        let meta = ent.metadata().map_err(|e| Error::Io(e.into()))?;
        if exclude == Some((meta.dev(), meta.ino())) {
            continue; // the NEFF being written: never pack it into itself
        }
        let rel = ent.path().strip_prefix(dir).expect("under dir");
        items.push(Item {
            name: rel.as_os_str().as_bytes().to_vec(),
            path: ent.path().to_path_buf(),
            dir: ft.is_dir(),
            len: if ft.is_dir() { 0 } else { meta.len() },
            mode: meta.permissions().mode() & 0o777,
            mtime: opts.mtime.unwrap_or_else(|| file_mtime(&meta)),
        });
    }
    items.sort_by(|a, b| a.name.cmp(&b.name));
    let total: u64 = items.iter().map(|i| i.len.div_ceil(512) * 512 + 1024).sum();
    let mut tar = Vec::with_capacity(usize::try_from(total).unwrap_or(0) + 2 * BLOCK);
    let mut files: Vec<(usize, std::ops::Range<usize>)> = Vec::new();
    for (i, it) in items.iter().enumerate() {
        let typeflag = if it.dir { b'5' } else { b'0' };
        push_entry(&mut tar, &it.name, typeflag, b"", it.len, it.mode, it.mtime);
        if !it.dir {
            let start = tar.len();
            // Non-blocking, and refused unless still a regular file: a file
            // swapped for a FIFO since the walk cannot hang the pack.
            let n = crate::map::open_regular(&it.path)?
                .take(it.len)
                .read_to_end(&mut tar)?;
            if n as u64 != it.len {
                return Err(Error::refused(format!(
                    "{} changed size while being packed",
                    it.path.display()
                )));
            }
            files.push((i, start..tar.len()));
            pad(&mut tar);
        }
    }
    tar.resize(tar.len() + 2 * BLOCK, 0);
    let graphs = kelf_graphs(
        files
            .iter()
            .map(|(i, r)| (&items[*i].name[..], &tar[r.clone()])),
    );
    let payload = if opts.no_gzip { tar } else { gzip(&tar) };
    w.write_all(header_for(&payload, graphs, opts)?.as_bytes())?;
    w.write_all(&payload)?;
    Ok(())
}

fn file_mtime(meta: &std::fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs())
}

/// Builds NEFF bytes from entries (written in the order given).
///
/// A regular file whose name ends in `/` is refused: every tar reader
/// (GNU tar, libarchive, this crate's) reads such an entry as a directory.
pub fn pack(entries: &[PackEntry], opts: &PackOptions) -> Result<Vec<u8>> {
    if let Some(e) = entries
        .iter()
        .find(|e| matches!(e.kind, PackKind::File(_)) && e.name.ends_with(b"/"))
    {
        let shown = &e.name[e.name.len().saturating_sub(64)..];
        return Err(Error::refused(format!(
            "a file named \"{}{}\" ends in '/': tar readers read it as a directory",
            if shown.len() < e.name.len() {
                "…"
            } else {
                ""
            },
            shown.escape_ascii()
        )));
    }
    let tar = write_tar(entries);
    let graphs = kelf_graphs(entries.iter().filter_map(|e| match &e.kind {
        PackKind::File(d) => Some((&e.name[..], &d[..])),
        _ => None,
    }));
    let payload = if opts.no_gzip { tar } else { gzip(&tar) };
    behind_header(&payload, graphs, opts)
}

/// A NEFF of an already-built `payload` (gzip when `opts.no_gzip` is unset):
/// the header of [`pack`], then the payload.
pub fn behind_header(
    payload: &[u8],
    kelf_graphs: Option<u32>,
    opts: &PackOptions,
) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(HEADER_SIZE + payload.len());
    out.extend_from_slice(header_for(payload, kelf_graphs, opts)?.as_bytes());
    out.extend_from_slice(payload);
    Ok(out)
}

/// The 1024-byte header for `payload` (docs/FORMAT.md §1.1).
fn header_for(payload: &[u8], kelf_graphs: Option<u32>, opts: &PackOptions) -> Result<Header> {
    let mut header = Header::new_zeroed();
    let pkg: u64 = if opts.no_gzip { 1 } else { 2 };
    header.pkg_version.set(pkg);
    header.header_size.set(HEADER_SIZE as u64);
    header.data_size.set(payload.len() as u64);
    header.version_major.set(2);
    header.version_minor.set(0);
    copy_str(&mut header.build_version, BUILD_VERSION);
    header.num_tpb.set(u32::from(!opts.no_gzip));
    let digest = crate::verify::digest(pkg, payload);
    if pkg == 2 {
        header.hash = [b'0'; 32];
    }
    header.hash[..digest.len()].copy_from_slice(&digest);
    header.uuid = match (opts.uuid, opts.mtime) {
        (Some(u), _) => u,
        (None, Some(_)) => digest_uuid(&digest),
        (None, None) => random_uuid()?,
    };
    copy_str(&mut header.name, &opts.name);
    header
        .requested_tpb_count
        .set(kelf_graphs.unwrap_or(1).max(1));
    header.vnc_size.set(1);
    Ok(header)
}

fn copy_str(dst: &mut [u8], s: &str) {
    let n = s.len().min(dst.len() - 1);
    dst[..n].copy_from_slice(&s.as_bytes()[..n]);
}

fn random_uuid() -> Result<[u8; 16]> {
    let mut u = [0u8; 16];
    getrandom::fill(&mut u).map_err(|e| Error::Io(std::io::Error::other(e.to_string())))?;
    Ok(set_uuid_bits(u, 4))
}

/// A name-based (version 8) uuid from the payload's digest (the one the
/// header carries: hashing a 1 GiB payload once is enough).
fn digest_uuid(digest: &[u8]) -> [u8; 16] {
    set_uuid_bits(digest[..16].try_into().expect("16 or 32-byte digest"), 8)
}

fn set_uuid_bits(mut u: [u8; 16], version: u8) -> [u8; 16] {
    u[6] = (u[6] & 0x0f) | (version << 4);
    u[8] = (u[8] & 0x3f) | 0x80;
    u
}

/// The number of graphs in `kelf-0.json` (else the first `kelf-*.json`),
/// found by the accessors' own patterns and rule, among `(name, data)` files.
fn kelf_graphs<'a>(files: impl Iterator<Item = (&'a [u8], &'a [u8])>) -> Option<u32> {
    let mut files: Vec<(&[u8], &[u8])> = files.collect();
    files.sort_by(|a, b| a.0.cmp(b.0));
    let (_, data) = [Known::Kelf0, Known::KelfAny]
        .into_iter()
        .find_map(|k| files.iter().find(|(n, _)| crate::select::matches(k, n)))?;
    let v: serde_json::Value = serde_json::from_slice(data).ok()?;
    u32::try_from(v.get("graphs")?.as_array()?.len()).ok()
}

/// One gzip member of `data`, as `pack` compresses a payload: libdeflate at
/// its default level (6), with a zero gzip MTIME.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    use libdeflater::{CompressionLvl, Compressor};
    let mut c = Compressor::new(CompressionLvl::default());
    let mut out = vec![0u8; c.gzip_compress_bound(data.len())];
    let n = c
        .gzip_compress(data, &mut out)
        .expect("the bound is always enough");
    out.truncate(n);
    out
}

/// Writes one entry's header (a PAX `x` header first when the name or link
/// does not fit ustar, or the size needs more than 11 octal digits); the
/// caller appends `size` bytes of data and the padding.
fn push_entry(
    out: &mut Vec<u8>,
    name: &[u8],
    typeflag: u8,
    link: &[u8],
    size: u64,
    mode: u32,
    mtime: u64,
) {
    let mut name = name.to_vec();
    if typeflag == b'5' && !name.ends_with(b"/") {
        name.push(b'/');
    }
    let long = name.len() > 100 || !name.is_ascii();
    let big = size >= 1 << 33;
    let long_link = link.len() > 100 || !link.is_ascii();
    if long || big || long_link {
        let mut rec = Vec::new();
        if long {
            pax_record(&mut rec, "path", &name);
        }
        if long_link {
            pax_record(&mut rec, "linkpath", link);
        }
        if big {
            pax_record(&mut rec, "size", size.to_string().as_bytes());
        }
        let short = format!("PaxHeaders/{}", tail(&name));
        push_header(
            out,
            short.as_bytes(),
            b'x',
            rec.len() as u64,
            0o644,
            mtime,
            b"",
        );
        out.extend_from_slice(&rec);
        pad(out);
    }
    let short_name: &[u8] = if long {
        &name[name.len().saturating_sub(100)..]
    } else {
        &name
    };
    let short_link: &[u8] = if long_link { b"" } else { link };
    push_header(
        out,
        short_name,
        typeflag,
        if big { 0 } else { size },
        mode,
        mtime,
        short_link,
    );
}

/// Pads the data just written to a whole block.
fn pad(out: &mut Vec<u8>) {
    let n = (BLOCK - out.len() % BLOCK) % BLOCK;
    out.resize(out.len() + n, 0);
}

/// Writes a POSIX PAX tar of `entries`, ending with two zero blocks.
pub fn write_tar(entries: &[PackEntry]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        let (typeflag, data, link): (u8, &[u8], &[u8]) = match &e.kind {
            PackKind::File(d) => (b'0', d, b""),
            PackKind::Dir => (b'5', &[], b""),
            PackKind::Symlink(t) => (b'2', &[], t),
            PackKind::Hardlink(t) => (b'1', &[], t),
            PackKind::Other(f) => (*f, &[], b""),
        };
        push_entry(
            &mut out,
            &e.name,
            typeflag,
            link,
            data.len() as u64,
            e.mode,
            e.mtime,
        );
        out.extend_from_slice(data);
        pad(&mut out);
    }
    out.resize(out.len() + 2 * BLOCK, 0);
    out
}

fn tail(name: &[u8]) -> String {
    let s = String::from_utf8_lossy(name);
    let t: String = s
        .chars()
        .rev()
        .take(80)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    t.replace(|c: char| !c.is_ascii() || c == '/', "_")
}

/// One `"<len> <key>=<value>\n"` record; `len` counts its own digits.
fn pax_record(out: &mut Vec<u8>, key: &str, val: &[u8]) {
    let body = key.len() + val.len() + 3; // ' ', '=', '\n'
    let mut len = body + 1;
    while len.to_string().len() + body != len {
        len = body + len.to_string().len();
    }
    out.extend_from_slice(len.to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(key.as_bytes());
    out.push(b'=');
    out.extend_from_slice(val);
    out.push(b'\n');
}

fn push_header(
    out: &mut Vec<u8>,
    name: &[u8],
    typeflag: u8,
    size: u64,
    mode: u32,
    mtime: u64,
    link: &[u8],
) {
    let mut b = Block::new_zeroed();
    b.name[..name.len()].copy_from_slice(name);
    b.linkname[..link.len()].copy_from_slice(link);
    octal(&mut b.mode, u64::from(mode & 0o7777));
    octal(&mut b.uid, 0);
    octal(&mut b.gid, 0);
    octal(&mut b.size, size);
    octal(&mut b.mtime, mtime.min(0o77777777777));
    b.typeflag = typeflag;
    b.magic = *b"ustar\0";
    b.version = *b"00";
    b.chksum = [b' '; 8];
    let sum: u64 = b.as_bytes().iter().map(|&x| u64::from(x)).sum();
    octal(&mut b.chksum[..7], sum);
    out.extend_from_slice(b.as_bytes());
}

/// Zero-padded octal filling all but the last (NUL) byte of the field.
fn octal(field: &mut [u8], v: u64) {
    let w = field.len() - 1;
    let s = format!("{v:0w$o}");
    field[..w].copy_from_slice(&s.as_bytes()[s.len() - w..]);
    field[w] = 0;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pax_record_length_counts_itself() {
        for n in [1usize, 5, 90, 95, 96, 97, 1000, 9990] {
            let mut r = Vec::new();
            pax_record(&mut r, "path", &vec![b'a'; n]);
            let sp = r.iter().position(|&b| b == b' ').unwrap();
            let len: usize = std::str::from_utf8(&r[..sp]).unwrap().parse().unwrap();
            assert_eq!(len, r.len(), "value length {n}");
        }
    }
}
