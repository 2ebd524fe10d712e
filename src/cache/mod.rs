//! The Neuron compile cache as the compiler wrapper lays it out:
//! `<root>/neuronxcc-<compiler version>/MODULE_<graph hash>+<flags hash>/`
//! holding `model.neff`, `model.done`, `model.log`, `compile_flags.json`,
//! the HLO graph and `*.lock` files. This module says each entry's
//! [`State`] ([`status`]), sums them per compiler version, and removes the
//! entries a user selects ([`prune`]): failed compiles that would be
//! replayed, corrupt NEFFs, locks left by killed compiles, old compiler
//! versions. Nothing here follows a link out of the cache or removes an
//! entry whose lock is fresh.
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
mod entry;
mod for_scan;
mod found;
mod prune;
mod status;

pub use entry::State;
pub(crate) use for_scan::{compiler_of, entry_dir, is_entry_name, judge_entry, Met, Read};
pub use found::CacheError;
pub use prune::{prune, PruneOptions, Removal};
pub use status::{status, CacheEntry, CacheStatus, VersionSummary};

/// Where the compiler wrapper keeps its cache when nothing says otherwise.
pub const DEFAULT_ROOT: &str = "/var/tmp/neuron-compile-cache";

/// The cache root the compiler wrapper uses, from the environment as it
/// reads it: `--cache_dir=` in `NEURON_CC_FLAGS`, else
/// `NEURON_COMPILE_CACHE_URL`, else [`DEFAULT_ROOT`]. (Either may name an
/// `s3://` URL.)
pub fn default_root() -> String {
    let flags = std::env::var("NEURON_CC_FLAGS").unwrap_or_default();
    root_from(&flags, std::env::var("NEURON_COMPILE_CACHE_URL").ok())
}

/// [`default_root`] from the two variables' values.
fn root_from(cc_flags: &str, cache_url: Option<String>) -> String {
    let mut words = cc_flags.split_whitespace();
    while let Some(w) = words.next() {
        if let Some(dir) = w.strip_prefix("--cache_dir=") {
            return dir.to_string();
        }
        if w == "--cache_dir" {
            if let Some(dir) = words.next() {
                return dir.to_string();
            }
        }
    }
    match cache_url {
        Some(u) if !u.is_empty() => u,
        _ => DEFAULT_ROOT.to_string(),
    }
}

#[cfg(test)]
mod tests;
