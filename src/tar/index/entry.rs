//! What one tar header (with the extended headers before it) says of its
//! entry: its name (PAX, GNU long name, ustar prefix, or the header's own
//! field), kind, link target, size and metadata, and the entry shapes GNU
//! tar and libarchive read differently, refused.

use std::ops::Range;

use super::{Entry, Kind, Name, Source};
use crate::error::{Error, Result};
use crate::limits::Limits;
use crate::tar::block::{Block, BLOCK};
use crate::tar::number::parse_meta;
use crate::tar::pax::Overrides;

/// Extended-header state waiting for the next real entry.
#[derive(Default)]
pub(super) struct Pending {
    /// Offset of the first extended header not yet consumed.
    pub(super) first: Option<usize>,
    pub(super) local: Overrides<Name>,
    /// A PAX `x` header was read for this entry.
    pub(super) pax: bool,
    pub(super) long_name: Option<Name>,
    pub(super) long_link: Option<Name>,
}

pub(super) fn trim_nul(b: &[u8]) -> Range<usize> {
    0..memchr::memchr(0, b).unwrap_or(b.len())
}

/// Precedence: PAX `x` > GNU `L`/`K` > the header's own field (a global
/// `g` record that sets a name is refused by the walk, and so is an empty
/// `path`, or an empty `linkpath` on a link, by [`make_entry`]).
fn pick(local: &Option<Option<Name>>, gnu: &Option<Name>) -> Option<Name> {
    match local {
        Some(v) => v.clone(),
        None => gnu.clone(),
    }
}

/// The entry whose header `block` is at `pos`, named and typed as GNU tar
/// and libarchive both read it (`pending`: the extended headers before it;
/// `global`: the PAX global records), or why they would differ.
pub(super) fn make_entry<S: Source>(
    src: &mut S,
    pos: usize,
    block: &Block,
    pending: &Pending,
    global: &Overrides<Name>,
    size: u64,
    limits: &Limits,
) -> Result<Entry> {
    let mut field = |off: usize, f: &[u8]| {
        let b = Block::field(f);
        src.keep(pos + off..pos + off + b.len(), b)
    };
    let empty = |what: &str| {
        Error::tar(
            pos,
            format!(
                "an empty PAX {what}: GNU tar reads it as \"\", libarchive keeps the \
                 header's (GNU tar and libarchive read it differently)"
            ),
        )
    };
    if pending.local.path == Some(None) {
        return Err(empty("path or GNU.sparse.name"));
    }
    let name = match pick(&pending.local.path, &pending.long_name) {
        Some(found) => found,
        None if block.is_ustar() && block.prefix[0] != 0 => {
            let mut v = Block::field(&block.prefix).to_vec();
            v.push(b'/');
            v.extend_from_slice(Block::field(&block.name));
            Name::Joined(v.into_boxed_slice())
        }
        None => field(0, &block.name),
    };
    let kind = match block.typeflag {
        b'5' | b'D' => Kind::Dir,
        b'2' => Kind::Symlink,
        b'1' => Kind::Hardlink,
        b'3' | b'4' | b'6' => Kind::Other,
        // `0`, NUL, `7`, and types neither tool knows: a regular file to
        // both (GNU tar warns "extracted as normal file").
        _ => Kind::File,
    };
    // Only links have a target: a link name on any other entry is ignored
    // by GNU tar and libarchive alike.
    let link = match pick(&pending.local.linkpath, &pending.long_link) {
        _ if !matches!(kind, Kind::Symlink | Kind::Hardlink) => None,
        _ if pending.local.linkpath == Some(None) => return Err(empty("linkpath on a link")),
        Some(found) => Some(found),
        None if block.linkname[0] != 0 => Some(field(157, &block.linkname)),
        None => None,
    };
    let kind = refuse_ambiguous(src, &name, kind, block.typeflag, size, pos)?;
    let name = normalize(name, kind, src);
    lengths_within(src, &name, link.as_ref(), limits)?;
    // Metadata only, read as libarchive reads it (base-256 and negative
    // times included): where GNU tar rejects one of these fields it
    // reports an error but lists and extracts the same members and bytes.
    let mtime = match pending.local.mtime.or(global.mtime) {
        Some(Some(t)) => t,
        _ => parse_meta(&block.mtime),
    };
    // A mode beyond 32 bits (base-256, or negative) is refused rather than
    // truncated to its low bits as libarchive's `mode_t` would (a silent
    // mode 0): the one metadata field kept strict (tests/it/cli.rs).
    let m = parse_meta(&block.mode);
    let mode = u32::try_from(m)
        .map_err(|_| Error::tar(pos, format!("mode field: {m} does not fit in 32 bits")))?;
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
        sparse: None,
    })
}

/// The kind of an entry GNU tar and libarchive both read alike, or why
/// they would not: a name ending in `/` on a file (a directory to both
/// when typed `0` or NUL), a GNU dump directory carrying data, an entry
/// that carries no data but declares a size.
fn refuse_ambiguous<S: Source>(
    src: &S,
    name: &Name,
    kind: Kind,
    typeflag: u8,
    size: u64,
    pos: usize,
) -> Result<Kind> {
    let mut kind = kind;
    // Old tar marks directories only by a trailing slash: GNU tar and
    // libarchive read a regular file (`0` or NUL) whose name ends in `/` as
    // a directory. A contiguous file (`7`) or an unknown type so named is a
    // file to GNU tar, a directory to libarchive: refused.
    if kind == Kind::File && src.name(name).ends_with(b"/") {
        if !matches!(typeflag, b'0' | 0) {
            let what = if typeflag == b'7' {
                "a contiguous-file"
            } else {
                "an unknown-type"
            };
            return Err(Error::tar(
                pos,
                format!(
                    "{what} entry whose name ends in '/': GNU tar reads a file, libarchive \
                     a directory (GNU tar and libarchive read it differently)"
                ),
            ));
        }
        kind = Kind::Dir;
    }
    // A GNU dump directory (`D`) carries a listing of the directory as
    // data: GNU tar skips it, libarchive hands it out as the entry's
    // bytes. Refused unless empty.
    if typeflag == b'D' && size > 0 {
        return Err(Error::tar(
            pos,
            format!(
                "a GNU dump directory ('D') carries {size} bytes: GNU tar skips them, \
                 libarchive reads them as its data (GNU tar and libarchive read it differently)"
            ),
        ));
    }
    // An entry that carries no data (a link, device, directory or FIFO)
    // but declares a size: GNU tar and libarchive disagree on whether the
    // bytes after it are its data or more entries (GNU tar skips them for
    // symlinks, devices and FIFOs, libarchive reads them as entries; for
    // directories and hard links each follows the ustar or the PAX size
    // differently), so a member could hide from one of them. Refused.
    if size > 0 && (matches!(typeflag, b'1'..=b'6') || kind == Kind::Dir) {
        let what = match typeflag {
            b'1' => "hard link",
            b'2' => "symlink",
            b'3' => "character device",
            b'4' => "block device",
            b'6' => "FIFO",
            _ => "directory",
        };
        return Err(Error::tar(
            pos,
            format!(
                "a {what} entry declares {size} bytes of data: tar readers (GNU tar, \
                 libarchive, Python) disagree on whether they are data or more entries"
            ),
        ));
    }
    Ok(kind)
}

/// Refuses a member name or link target longer than the limits allow.
fn lengths_within<S: Source>(
    src: &S,
    name: &Name,
    link: Option<&Name>,
    limits: &Limits,
) -> Result<()> {
    let name_len = src.name(name).len();
    if name_len > limits.max_name_len {
        return Err(Error::Limit {
            what: "member name length",
            found: name_len as u64,
            cap: limits.max_name_len as u64,
        });
    }
    if let Some(l) = link {
        let link_len = src.name(l).len();
        if link_len > limits.max_name_len {
            return Err(Error::Limit {
                what: "link target length",
                found: link_len as u64,
                cap: limits.max_name_len as u64,
            });
        }
    }
    Ok(())
}

/// Drops one leading `./` and, for directories, trailing slashes; a
/// directory name that would become empty becomes `.`.
fn normalize<S: Source>(name: Name, kind: Kind, src: &S) -> Name {
    let bytes = src.name(&name);
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
    if start == 0 && end == bytes.len() {
        return name;
    }
    match name {
        Name::Span(r) => Name::Span(r.start + start..r.start + end),
        Name::Arena(r) => Name::Arena(r.start + start..r.start + end),
        Name::Joined(b) => Name::Joined(b[start..end].into()),
    }
}
