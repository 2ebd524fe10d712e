//! Writing an object by URL, never over one that is there: a conditional
//! put (`If-None-Match: *` on S3), so that two writers of one key cannot
//! both win and nothing a reader holds is replaced.

use object_store::{ObjectStore, PutMode, PutOptions, PutPayload};

use super::link::Request;
use super::store::*;
use crate::error::Result;

/// What a conditional put did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Put {
    /// The object was written; the ETag the store gave it, if it said.
    Written(Option<String>),
    /// An object was there under the key already: nothing was written.
    Exists,
}

/// Writes `bytes` as the object at `url` unless an object is there under
/// its key; the store's refusal as one line naming nothing secret.
pub(crate) fn put_new(url: &str, bytes: Vec<u8>) -> Result<Put> {
    let (store, path) = store_for(url, Timeout::PerRead)?;
    let opts = PutOptions {
        mode: PutMode::Create,
        ..Default::default()
    };
    let n = bytes.len();
    let _request = Request::start();
    let put = runtime()?.block_on(store.put_opts(&path, PutPayload::from(bytes), opts));
    match put {
        Ok(r) => {
            log::debug!("{url}: PUT {n} bytes (if none is there)");
            Ok(Put::Written(r.e_tag))
        }
        Err(
            object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. },
        ) => {
            log::debug!("{url}: PUT refused: an object is there");
            Ok(Put::Exists)
        }
        Err(e) => Err(describe(&e, None)),
    }
}
