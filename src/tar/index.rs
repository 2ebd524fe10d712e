//! The walk over tar headers, and the index it builds.

use std::ops::Range;

use zerocopy::FromBytes;

use super::block::{Block, BLOCK};
use super::number::parse_numeric;
use super::pax::{self, Overrides};
use crate::error::{Error, Result};
use crate::limits::Limits;

/// What kind of entry a tar header describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    Hardlink,
    /// FIFOs, devices, GNU sparse files and anything else.
    Other,
}

impl Kind {
    /// The `kind` string of `neff ls --json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Dir => "dir",
            Kind::Symlink => "symlink",
            Kind::Hardlink => "hardlink",
            Kind::Other => "other",
        }
    }
}

/// A member name: a span of the tar bytes, or (only when a ustar `prefix`
/// and `name` must be joined) an owned copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Name {
    Span(Range<usize>),
    Joined(Box<[u8]>),
}

impl Name {
    /// The name's bytes, given the tar bytes the index was built from.
    pub fn get<'a>(&'a self, tar: &'a [u8]) -> &'a [u8] {
        match self {
            Name::Span(r) => &tar[r.clone()],
            Name::Joined(b) => b,
        }
    }
}

/// One entry of the archive.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: Name,
    pub kind: Kind,
    /// Offset of the entry's data in the tar stream.
    pub offset: u64,
    /// Size of the entry's data in bytes.
    pub size: u64,
    /// Modification time, whole seconds since the epoch.
    pub mtime: i64,
    /// Permission bits as stored.
    pub mode: u32,
    /// Link target (symlinks and hard links).
    pub link: Option<Name>,
    /// The raw typeflag byte.
    pub typeflag: u8,
    /// Offset of the entry's (first) header block.
    pub header_offset: u64,
}

impl Entry {
    /// The entry's data, given the tar bytes the index was built from.
    pub fn data<'a>(&self, tar: &'a [u8]) -> &'a [u8] {
        // In bounds by construction: the walker checked offset + size.
        &tar[self.offset as usize..(self.offset + self.size) as usize]
    }
}

/// Every entry of one archive, in archive order.
#[derive(Debug, Clone, Default)]
pub struct Index {
    pub entries: Vec<Entry>,
}

/// Extended-header state waiting for the next real entry.
#[derive(Default)]
struct Pending {
    /// Offset of the first extended header not yet consumed.
    first: Option<usize>,
    local: Overrides,
    long_name: Option<Range<usize>>,
    long_link: Option<Range<usize>>,
}

impl Index {
    /// Walks the tar archive in `tar`, checking every length against the
    /// bytes that exist, under `limits`.
    pub fn build(tar: &[u8], limits: &Limits) -> Result<Index> {
        let mut entries = Vec::new();
        let mut global = Overrides::default();
        let mut pending = Pending::default();
        let mut pos = 0usize;
        loop {
            let rest = tar.len() - pos;
            if rest == 0 || tar[pos..].len() < BLOCK && tar[pos..].iter().all(|&b| b == 0) {
                break; // end of data without end-of-archive blocks
            }
            if rest < BLOCK {
                return Err(Error::tar(
                    pos,
                    format!("truncated header: {rest} bytes left, a header needs {BLOCK}"),
                ));
            }
            let raw = &tar[pos..pos + BLOCK];
            if raw.iter().all(|&b| b == 0) {
                break; // end-of-archive marker
            }
            let (block, _) = Block::ref_from_prefix(raw).expect("512 bytes");
            if !block.checksum_ok() {
                return Err(Error::tar(
                    pos,
                    "bad header checksum (not a tar header, or corrupt)",
                ));
            }
            let hsize = parse_numeric(&block.size)
                .map_err(|e| Error::tar(pos, format!("size field: {e}")))?;
            let data = pos + BLOCK;
            let typeflag = block.typeflag;
            let extended = matches!(typeflag, b'x' | b'g' | b'L' | b'K' | b'X');
            // The PAX size record applies to real entries only, never to an
            // extended header in between.
            let size = if extended {
                hsize
            } else {
                match pending.local.size.clone().or(global.size.clone()) {
                    Some(Some(s)) => s,
                    _ => hsize,
                }
            };
            let avail = (tar.len() - data) as u64;
            if size > avail {
                return Err(Error::tar(pos, format!("entry data of {size} bytes runs past the end of the archive ({avail} bytes left)")));
            }
            let end = data + size as usize;
            if extended {
                if size > limits.max_extended_header {
                    return Err(Error::Limit {
                        what: "extended header size",
                        found: size,
                        cap: limits.max_extended_header,
                    });
                }
                if typeflag != b'g' {
                    // A global header applies to every later entry and may
                    // legally end the archive; the others need an entry.
                    pending.first.get_or_insert(pos);
                }
                let span = data..end;
                match typeflag {
                    b'x' | b'X' => {
                        let o = pax::parse(tar, span).map_err(|e| Error::tar(pos, e))?;
                        pending.local.merge(o);
                    }
                    b'g' => {
                        let o = pax::parse(tar, span).map_err(|e| Error::tar(pos, e))?;
                        global.merge(o);
                    }
                    b'L' => pending.long_name = Some(trim_nul(tar, span)),
                    _ => pending.long_link = Some(trim_nul(tar, span)),
                }
            } else {
                if entries.len() >= limits.max_members {
                    return Err(Error::Limit {
                        what: "number of archive entries",
                        found: entries.len() as u64 + 1,
                        cap: limits.max_members as u64,
                    });
                }
                let entry = make_entry(tar, pos, block, &pending, &global, size, limits)?;
                entries.push(entry);
                pending = Pending::default();
            }
            pos = end.div_ceil(BLOCK).saturating_mul(BLOCK).min(tar.len());
        }
        if let Some(at) = pending.first {
            return Err(Error::tar(
                at,
                "extended header (PAX or GNU long name) is not followed by an entry",
            ));
        }
        Ok(Index { entries })
    }
}

fn trim_nul(tar: &[u8], span: Range<usize>) -> Range<usize> {
    let len = memchr::memchr(0, &tar[span.clone()]).unwrap_or(span.len());
    span.start..span.start + len
}

fn pick(
    local: &Option<Option<Range<usize>>>,
    gnu: &Option<Range<usize>>,
    global: &Option<Option<Range<usize>>>,
) -> Option<Option<Range<usize>>> {
    // Precedence: PAX x > GNU L/K > PAX g > the header's own field. An empty
    // PAX value unsets the keyword: fall through to the header field.
    match local {
        Some(v) => Some(v.clone()),
        None => gnu.clone().map(Some).or_else(|| global.clone()),
    }
}

fn make_entry(
    tar: &[u8],
    pos: usize,
    block: &Block,
    pending: &Pending,
    global: &Overrides,
    size: u64,
    limits: &Limits,
) -> Result<Entry> {
    let field_span = |off: usize, f: &[u8]| pos + off..pos + off + Block::field(f).len();
    let mut name = match pick(&pending.local.path, &pending.long_name, &global.path) {
        Some(Some(r)) => Name::Span(r),
        _ if block.is_ustar() && block.prefix[0] != 0 => {
            let mut v = Block::field(&block.prefix).to_vec();
            v.push(b'/');
            v.extend_from_slice(Block::field(&block.name));
            Name::Joined(v.into_boxed_slice())
        }
        _ => Name::Span(field_span(0, &block.name)),
    };
    let link = match pick(
        &pending.local.linkpath,
        &pending.long_link,
        &global.linkpath,
    ) {
        Some(Some(r)) => Some(Name::Span(r)),
        _ if block.linkname[0] != 0 => Some(Name::Span(field_span(157, &block.linkname))),
        _ => None,
    };
    let mut kind = match block.typeflag {
        b'0' | 0 | b'7' => Kind::File,
        b'5' => Kind::Dir,
        b'2' => Kind::Symlink,
        b'1' => Kind::Hardlink,
        _ => Kind::Other,
    };
    // Old tar marks directories only by a trailing slash.
    if kind == Kind::File && block.typeflag == 0 && name.get(tar).ends_with(b"/") {
        kind = Kind::Dir;
    }
    name = normalize(name, tar, kind);
    let nlen = name.get(tar).len();
    if nlen > limits.max_name_len {
        return Err(Error::Limit {
            what: "member name length",
            found: nlen as u64,
            cap: limits.max_name_len as u64,
        });
    }
    if let Some(l) = &link {
        let llen = l.get(tar).len();
        if llen > limits.max_name_len {
            return Err(Error::Limit {
                what: "link target length",
                found: llen as u64,
                cap: limits.max_name_len as u64,
            });
        }
    }
    let mtime = match pending.local.mtime.or(global.mtime) {
        Some(Some(t)) => t,
        _ => parse_numeric(&block.mtime)
            .map_err(|e| Error::tar(pos, format!("mtime field: {e}")))?
            .min(i64::MAX as u64) as i64,
    };
    let mode =
        parse_numeric(&block.mode).map_err(|e| Error::tar(pos, format!("mode field: {e}")))? as u32;
    Ok(Entry {
        name,
        kind,
        offset: (pos + BLOCK) as u64,
        size,
        mtime,
        mode,
        link,
        typeflag: block.typeflag,
        header_offset: pending.first.unwrap_or(pos) as u64,
    })
}

/// Drops one leading `./` and, for directories, trailing slashes; a name
/// that would become empty becomes `.`.
fn normalize(name: Name, tar: &[u8], kind: Kind) -> Name {
    let bytes = name.get(tar);
    let mut start = 0;
    let mut end = bytes.len();
    if bytes.starts_with(b"./") && bytes.len() > 2 {
        start = 2;
    }
    if kind == Kind::Dir {
        while end > start + 1 && bytes[end - 1] == b'/' {
            end -= 1;
        }
    }
    match name {
        Name::Span(r) => Name::Span(r.start + start..r.start + end),
        Name::Joined(b) => {
            if start == 0 && end == b.len() {
                Name::Joined(b)
            } else {
                Name::Joined(Box::from(&b[start..end]))
            }
        }
    }
}
