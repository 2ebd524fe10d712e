//! Deleting objects by URL (a compile-cache entry's keys), each
//! deletion's own result.

use std::sync::Arc;

use futures_util::StreamExt;
use object_store::ObjectStoreExt;

use super::failure::*;
use super::listing::*;
use super::store::*;
use crate::error::Result;

/// Deletes the objects `urls` (all in one `s3://` bucket), a few requests
/// at once; each gets its own answer, in order. An object already gone is
/// deleted.
pub fn delete(urls: &[String]) -> Vec<Result<()>> {
    let Some(first) = urls.first() else {
        return Vec::new();
    };
    let store = match bucket_prefix(first) {
        Ok((_, store, _)) => store,
        Err(e) => {
            let why = e.to_string();
            return urls.iter().map(|_| Err(remote(why.clone()))).collect();
        }
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            let why = e.to_string();
            return urls.iter().map(|_| Err(remote(why.clone()))).collect();
        }
    };
    rt.block_on(async {
        let jobs = urls.iter().map(|u| {
            let store = Arc::clone(&store);
            async move {
                let parsed =
                    url::Url::parse(u).map_err(|e| remote(format!("not a valid URL: {e}")))?;
                let path = object_path(&parsed)?;
                match store.delete(&path).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => {
                        log::debug!("{u}: DELETE");
                        Ok(())
                    }
                    Err(e) => Err(describe(&e, None)),
                }
            }
        });
        futures_util::stream::iter(jobs)
            .buffered(8)
            .collect::<Vec<_>>()
            .await
    })
}
