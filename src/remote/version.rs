//! What a catalogue keys an object named by its URL on (not found by a
//! listing, which gives it): its size and version, asked of its server.

use object_store::{GetOptions, GetRange, ObjectStoreExt};

use super::failure::remote;
use super::link;
use super::object::{ignores_range, Object};
use super::store::{describe, runtime, store_for, Timeout};
use crate::error::Result;

/// Why an object has no version to key a row on.
const NO_VALIDATOR: &str = "the server names no ETag or Last-Modified to know the object by";

impl Object {
    /// The size and version of the object at `url`: its `ETag`, else its
    /// `Last-Modified` (as a listing gives them: what a catalogue compares
    /// to answer from its row), from one GET of its first byte (a URL
    /// presigned for GET allows no HEAD), or a HEAD from a server that
    /// ignores Range. An answer with neither is an error: nothing tells
    /// this object from another of its size, and a catalogue reads it
    /// again each time rather than trust a row.
    pub fn version_of(url: &str) -> Result<(u64, String)> {
        let (store, path) = store_for(url, Timeout::PerRequest)?;
        let opts = GetOptions {
            range: Some(GetRange::Bounded(0..1)),
            ..Default::default()
        };
        runtime()?.block_on(async {
            let _counted = link::Request::start();
            let meta = match store.get_opts(&path, opts).await {
                // (The one byte of body is left unread.)
                Ok(r) => r.meta,
                Err(e) if ignores_range(&e) => {
                    store.head(&path).await.map_err(|e| describe(&e, None))?
                }
                Err(e) => return Err(describe(&e, None)),
            };
            // (object_store dates an answer without Last-Modified at 0.)
            let dated = meta.last_modified.timestamp_nanos_opt() != Some(0);
            let version = match meta.e_tag {
                Some(tag) => tag,
                None if dated => meta.last_modified.to_rfc3339(),
                None => return Err(remote(NO_VALIDATOR)),
            };
            Ok((meta.size, version))
        })
    }
}
