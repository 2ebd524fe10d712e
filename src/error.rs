//! The one error type of the crate, and how each kind maps to an exit code.
//!
//! Every refusal names what was wrong in one line, so that the CLI can print
//! `neff: <path>: <reason>` and stop. The path is added by the caller, which
//! knows it; the library describes the bytes.

use std::io;

/// Convenience alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong reading, writing or querying a NEFF.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The operating system refused (no such file, permission denied, disk full).
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The 1024-byte header is not a NEFF header, or its sizes do not fit the file.
    #[error("{0}")]
    Header(String),
    /// The gzip payload is corrupt or truncated.
    #[error("gzip payload: {0}")]
    Gzip(String),
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
    #[error("no member matches {0}")]
    NoMatch(String),
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
    /// An accessor's guard fired (the reference reader's refusal strings).
    #[error("{0}")]
    Guard(String),
    /// The payload's hash does not match the header.
    #[error("{0}")]
    Hash(String),
    /// Unpacking would write outside the target directory, or over itself.
    #[error("unsafe member {name:?}: {reason}")]
    Unsafe {
        /// The member's name as stored in the archive.
        name: String,
        /// Why writing it would be unsafe (e.g. an absolute path, a `..` component).
        reason: String,
    },
    /// The request was refused for a reason not tied to the file's bytes
    /// (for example a non-empty unpack target).
    #[error("{0}")]
    Refused(String),
    /// A usage error detected by the library (for example a bad regular expression).
    #[error("{0}")]
    Usage(String),
}

impl Error {
    /// The CLI exit code for this error: 3 for I/O, 2 for usage, 1 for refusals.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Io(_) => 3,
            Error::Usage(_) => 2,
            _ => 1,
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
}
