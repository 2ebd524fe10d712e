//! The engine's one error type: input that does not inflate, a cap the
//! input would pass, or memory the system would not map.

use std::io;

/// Why a payload was not inflated.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The input is not gzip, or is corrupt or truncated: the reason, with
    /// the offset of the member at fault where known. The texts are the
    /// same on every path (one-shot, stream, parallel), so a file gets one
    /// answer whichever path read it.
    #[error("{0}")]
    Corrupt(String),
    /// The output would pass a cap the caller set: refused, not obeyed.
    #[error("{what} is {found}, over the cap of {cap}")]
    Limit {
        /// What was measured (`inflated payload size`, ...).
        what: &'static str,
        /// The size the input asked for.
        found: u64,
        /// The caller's cap it passes.
        cap: u64,
    },
    /// The operating system would not map memory for the output.
    #[error("{0}")]
    Io(#[from] io::Error),
}

impl Error {
    pub(crate) fn gzip(reason: impl Into<String>) -> Error {
        Error::Corrupt(reason.into())
    }

    /// Refuses output of `total` bytes over the caller's `cap`: the one
    /// text every path gives.
    pub(crate) fn output_within(total: u64, cap: u64) -> Result<()> {
        if total > cap {
            return Err(Error::Limit {
                what: "inflated payload size",
                found: total,
                cap,
            });
        }
        Ok(())
    }
}

/// The engine's results.
pub type Result<T> = std::result::Result<T, Error>;
