//! The crate's one error type: what went wrong, as data a caller can match.
//!
//! Every refusal reads as one line, so that a client can print
//! `neff: <path>: <reason>` and stop. The path is added by the caller, which
//! knows it; the library describes the bytes. How an error maps to an exit
//! code or an exception class is the client's business (the binary and the
//! Python package each map [`ErrorKind`]).
//!
//! Diagnostics are not errors: every layer logs through the `log` facade
//! (why a payload took the path it took, what a server did), and a client
//! installs the logger it wants (the `neff` binary: `-v`, `-vv`,
//! `RUST_LOG`).

use std::io;

/// How the text of [`Error::AtimeKept`] begins: a record that keeps only
/// the text (a scan's) is known by it.
pub(crate) const ATIME_KEPT: &str = "not read: reading it as uid ";

/// Convenience alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong reading, writing or querying a NEFF.
///
/// Match on [`Error::kind`] for the broad class; the variants carry the
/// details. New variants may be added (`#[non_exhaustive]`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The operating system refused (no such file, permission denied, disk full).
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The file shrank or was rewritten while it was being read: the bytes
    /// seen so far may mix two versions, so nothing read is trusted.
    #[error("the file was truncated while being read")]
    Changed,
    /// An allocation the input justified could not be made.
    #[error("no memory for {what}")]
    OutOfMemory {
        /// What was being allocated (e.g. `the member's data`).
        what: &'static str,
    },
    /// The 1024-byte header is not a NEFF header, or its sizes do not fit the file.
    #[error("{reason}")]
    Header {
        /// What is wrong with it.
        reason: String,
    },
    /// The gzip payload is corrupt or truncated.
    #[error("gzip payload: {reason}")]
    Gzip {
        /// What is wrong with it (with the offset into the payload where known).
        reason: String,
    },
    /// The tar archive is malformed at `offset` (bytes into the tar stream).
    #[error("tar at byte {offset}: {reason}")]
    Tar {
        /// Bytes from the start of the tar stream (the inflated payload) to
        /// the header block or record at fault.
        offset: u64,
        /// What is wrong there.
        reason: String,
    },
    /// A configured resource cap was reached; the input is refused, not obeyed.
    #[error("{what} is {found}, over the cap of {cap} (see --help to raise it)")]
    Limit {
        /// What was measured (e.g. `inflated payload size`, `number of archive entries`).
        what: &'static str,
        /// The value the input asked for (bytes, entries or levels, as `what` says).
        found: u64,
        /// The configured cap it exceeds (a field of [`Limits`](crate::Limits)).
        cap: u64,
    },
    /// No regular member's name matches a pattern.
    #[error("no member matches {pattern}")]
    NoMatch {
        /// The pattern, as given.
        pattern: String,
    },
    /// A JSON member is not valid JSON.
    #[error("invalid JSON in {member}: {reason}")]
    Json {
        /// The member's name in the archive.
        member: String,
        /// The parser's complaint.
        reason: String,
    },
    /// A JSON member is valid but does not have the shape an accessor needs.
    #[error("{member}: wrong shape: {what}")]
    Shape {
        /// The member's name in the archive.
        member: String,
        /// What is not as expected, naming the key (e.g. `alias_map is not a list`).
        what: String,
    },
    /// An accessor's guard fired: `message` is the reference reader's own
    /// refusal string (docs/FORMAT.md §4.3), kept verbatim.
    #[error("{message}")]
    Guard {
        /// The refusal, word for word.
        message: String,
    },
    /// The payload's hash does not match the header.
    #[error("{algorithm} mismatch! header has {expected}, payload hashes to {actual}")]
    Hash {
        /// `MD5` (package version 2) or `SHA256` (version 1).
        algorithm: &'static str,
        /// The digest the header holds, in hex.
        expected: String,
        /// The digest of the payload as stored, in hex.
        actual: String,
    },
    /// Unpacking would write outside the target directory, or over itself.
    #[error("unsafe member {name:?}: {reason}")]
    UnsafePath {
        /// The member's name as stored in the archive.
        name: String,
        /// Why writing it would be unsafe (e.g. an absolute path, a `..` component).
        reason: String,
    },
    /// The SQLite catalogue refused or failed (`scan --index`).
    #[error("{context}")]
    Catalog {
        /// What was being done, and what went wrong, in one line.
        context: String,
        /// SQLite's own error, when it was SQLite that failed.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The request was refused for a reason not tied to the file's bytes
    /// (for example a non-empty unpack target, or a path that is a device).
    #[error("{reason}")]
    Refused {
        /// Why.
        reason: String,
    },
    /// A remote object (`s3://`, `https://`) could not be read: no such
    /// bucket or key, access denied, a server that sends a body of the
    /// wrong length, an object too large to read whole from a server that
    /// ignores Range (`NEFF_REMOTE_SPOOL_MAX`), retries exhausted, a
    /// timeout.
    #[error("{reason}")]
    Remote {
        /// What the store or server answered, in one line.
        reason: String,
        /// Its I/O class: `NotFound` (no such object or bucket),
        /// `PermissionDenied` (access denied, not authenticated), else
        /// `Other`. The Python binding raises the matching `OSError`.
        io: std::io::ErrorKind,
    },
    /// A remote object was replaced while it was being read (its ETag no
    /// longer matches the first response's): nothing read is trusted.
    #[error("the object changed while being read (no longer ETag {etag})")]
    ObjectChanged {
        /// The ETag the read was pinned to.
        etag: String,
    },
    /// The file was not read: the caller may not read it without moving
    /// its access time (the kernel refuses `O_NOATIME` to all but the
    /// file's owner and the privileged, and the file's mount would update
    /// the time on this read). Only a read asked to leave access times
    /// alone ([`Options::keep_atime`](crate::Options::keep_atime)) is
    /// refused so: a compile cache's `--max-size` evicts by them.
    #[error("{ATIME_KEPT}{reader} would move its access time, which `neff cache prune --max-size` orders by (run as its owner, uid {owner}, or as root)")]
    AtimeKept {
        /// The file's owner.
        owner: u32,
        /// The caller's effective user.
        reader: u32,
    },
    /// A usage error detected by the library (for example a bad regular expression).
    #[error("{reason}")]
    Usage {
        /// What is wrong with the request.
        reason: String,
    },
}

/// The broad class of an [`Error`], for callers that branch on it (the
/// binary's exit code, the Python package's exception class).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::Io`], and [`Error::Remote`] (a store or server that failed).
    Io,
    /// [`Error::Changed`] and [`Error::ObjectChanged`].
    Changed,
    /// [`Error::OutOfMemory`].
    OutOfMemory,
    /// [`Error::Header`].
    Header,
    /// [`Error::Gzip`].
    Gzip,
    /// [`Error::Tar`].
    Tar,
    /// [`Error::Limit`].
    Limit,
    /// [`Error::NoMatch`].
    NoMatch,
    /// [`Error::Json`].
    Json,
    /// [`Error::Shape`].
    Shape,
    /// [`Error::Guard`].
    Guard,
    /// [`Error::Hash`].
    Hash,
    /// [`Error::UnsafePath`].
    UnsafePath,
    /// [`Error::Catalog`].
    Catalog,
    /// [`Error::Refused`] and [`Error::AtimeKept`].
    Refused,
    /// [`Error::Usage`].
    Usage,
}

/// The inflater's errors, with the same texts: corrupt input is a gzip
/// payload error, a cap passed is a limit, memory refused an I/O error.
impl From<neff_inflate::Error> for Error {
    fn from(e: neff_inflate::Error) -> Error {
        match e {
            neff_inflate::Error::Corrupt(reason) => Error::Gzip { reason },
            neff_inflate::Error::Limit { what, found, cap } => Error::Limit { what, found, cap },
            neff_inflate::Error::Io(e) => Error::Io(e),
        }
    }
}

impl Error {
    /// The broad class of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Io(_) => ErrorKind::Io,
            Error::Changed => ErrorKind::Changed,
            Error::OutOfMemory { .. } => ErrorKind::OutOfMemory,
            Error::Header { .. } => ErrorKind::Header,
            Error::Gzip { .. } => ErrorKind::Gzip,
            Error::Tar { .. } => ErrorKind::Tar,
            Error::Limit { .. } => ErrorKind::Limit,
            Error::NoMatch { .. } => ErrorKind::NoMatch,
            Error::Json { .. } => ErrorKind::Json,
            Error::Shape { .. } => ErrorKind::Shape,
            Error::Guard { .. } => ErrorKind::Guard,
            Error::Hash { .. } => ErrorKind::Hash,
            Error::UnsafePath { .. } => ErrorKind::UnsafePath,
            Error::Catalog { .. } => ErrorKind::Catalog,
            Error::Refused { .. } | Error::AtimeKept { .. } => ErrorKind::Refused,
            Error::Usage { .. } => ErrorKind::Usage,
            Error::Remote { .. } => ErrorKind::Io,
            Error::ObjectChanged { .. } => ErrorKind::Changed,
        }
    }

    pub(crate) fn tar(offset: usize, reason: impl Into<String>) -> Error {
        Error::Tar {
            offset: offset as u64,
            reason: reason.into(),
        }
    }

    pub(crate) fn shape(member: &str, what: impl Into<String>) -> Error {
        Error::Shape {
            member: member.to_string(),
            what: what.into(),
        }
    }

    pub(crate) fn header(reason: impl Into<String>) -> Error {
        Error::Header {
            reason: reason.into(),
        }
    }

    #[cfg(test)]
    pub(crate) fn gzip(reason: impl Into<String>) -> Error {
        Error::Gzip {
            reason: reason.into(),
        }
    }

    pub(crate) fn guard(message: impl Into<String>) -> Error {
        Error::Guard {
            message: message.into(),
        }
    }

    pub(crate) fn refused(reason: impl Into<String>) -> Error {
        Error::Refused {
            reason: reason.into(),
        }
    }

    #[cfg(feature = "catalog")]
    pub(crate) fn catalog(context: impl Into<String>) -> Error {
        Error::Catalog {
            context: context.into(),
            source: None,
        }
    }

    pub(crate) fn usage(reason: impl Into<String>) -> Error {
        Error::Usage {
            reason: reason.into(),
        }
    }

    pub(crate) fn no_match(pattern: impl Into<String>) -> Error {
        Error::NoMatch {
            pattern: pattern.into(),
        }
    }

    pub(crate) fn no_memory(what: &'static str) -> Error {
        Error::OutOfMemory { what }
    }
}
