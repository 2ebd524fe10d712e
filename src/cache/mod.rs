//! The Neuron compile caches users have, as their writers lay them out:
//! the compiler wrapper's
//! `<root>/neuronxcc-<compiler version>/MODULE_<graph hash>+<flags hash>/`
//! holding `model.neff`, `model.done` (2.15+), `model.log`, the compile
//! flags, the HLO graph and `*.lock` files, in every compiler's era
//! (docs/GUIDE.md, "Compile caches of every compiler"); and vLLM's Neuron cache
//! (`<root>/<32 hex key>/`, vllm-neuron's and the LNL stack's). This
//! module says each entry's [`State`] ([`status`]), sums them per compiler
//! version, and removes the entries a user selects ([`prune`]): failed
//! compiles that would be replayed, corrupt NEFFs, locks left by killed
//! compiles, old compiler versions, the least recently used beyond a
//! size; and says why a compile missed anyway ([`explain`]): the
//! entries of the same graph under other flags or compiler releases, and
//! the flags hash a job's flags give. Paths are the file system's bytes
//! throughout; nothing here
//! follows a link below the root, reads a FIFO, or selects an entry
//! whose state is not certain or whose lock is fresh.
//!
//! ```
//! # let dir = tempfile::tempdir()?;
//! # let root = dir.path();
//! let e = root.join("neuronxcc-2.15.128.0+56dc5a86/MODULE_1+ab");
//! std::fs::create_dir_all(&e)?;
//! std::fs::write(e.join("model.log"), "ERROR 70 [neuronx-cc]: bad op\n")?;
//! let status = neff::cache::status(root)?;
//! assert_eq!(status.entries[0].state, neff::cache::State::Failed);
//! assert_eq!(status.entries[0].reason.as_deref(), Some("ERROR 70 [neuronx-cc]: bad op"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[cfg(feature = "remote")]
mod bucket;
mod descend;
mod entry;
mod era;
mod explain;
mod flags;
mod for_scan;
mod found;
mod host;
mod prune;
mod remove;
mod root;
mod staging;
mod state;
mod status;
mod sync;
mod time;
mod vllm;

// The catalogue's flag columns (`catalog::entry_cols`).
#[cfg(feature = "catalog")]
pub(crate) use entry::hashes as module_hashes;
pub use explain::{explain, ExplainQuery, Explanation, Related, Relation};
#[cfg(feature = "catalog")]
pub(crate) use flags::read_flags;
pub use flags::{flags_hashes, split_flags, HashRule};
pub(crate) use for_scan::{
    compiler_of, entry_dir, is_entry_name, judge_entry, read_error, Met, Read,
};
pub use found::{CacheError, CacheNote};
pub use prune::{prune, PruneOptions, Pruned, Removal, DEFAULT_MIN_AGE};
pub use root::{
    default_root, default_roots, local_root, refuse_pruning, root_or_default, DEFAULT_ROOT,
};
pub use state::State;
pub use status::{root_version, status, CacheEntry, CacheStatus, VersionSummary};
pub use sync::{sync, Action as SyncAction, SyncEntry, SyncOptions, Synced};
pub use time::{human, human_bytes};

#[cfg(test)]
mod tests;
