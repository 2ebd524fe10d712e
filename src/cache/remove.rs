//! The last look before an entry goes, the same dry or not: the entry
//! reached from the root by descriptors (no link followed, no mount
//! crossed: [`super::descend`]), judged again through its own descriptor
//! in the state it was selected in, and only then, with `apply`, removed
//! through the descriptors it was reached by. In a bucket, exactly the
//! keys of the listing just judged are deleted.

use std::path::Path;

use rustix::fd::OwnedFd;

use super::descend::{self, Refused};
use super::status::{rejudge, CacheEntry};
use crate::error::{Error, Result};

/// What became of an entry that was not left.
pub(super) enum Outcome {
    /// It went (or, dry, would go).
    Went,
    /// It was gone already (another prune removed it).
    Gone,
}

/// A cache root as a prune holds it: on disk opened once (and, with
/// `apply`, locked against a second prune of the same cache: a lock on the
/// directory itself, so nothing is written there); a bucket by its URL.
pub(super) struct At {
    root: std::path::PathBuf,
    fd: Option<OwnedFd>,
}

/// How long a prune waits for another prune of the same cache.
const WAIT: std::time::Duration = std::time::Duration::from_secs(600);

impl At {
    pub(super) fn open(root: &Path, apply: bool) -> Result<At> {
        #[cfg(feature = "remote")]
        if super::root::url_of(root).is_some() {
            return Ok(At {
                root: root.to_path_buf(),
                fd: None,
            });
        }
        let fd = descend::open_root(root).map_err(Error::Io)?;
        if apply {
            take_turn(&fd)?;
        }
        Ok(At {
            root: root.to_path_buf(),
            fd: Some(fd),
        })
    }

    pub(super) fn root(&self) -> &Path {
        &self.root
    }

    /// Checks the entry `e` and, with `apply`, removes it; `unchanged`
    /// says whether it stands now as it was judged. `Err` says why it is
    /// (or would be) left.
    pub(super) fn remove(
        &self,
        e: &CacheEntry,
        apply: bool,
        unchanged: &dyn Fn(&CacheEntry) -> std::result::Result<(), String>,
    ) -> std::result::Result<Outcome, String> {
        let Some(root_fd) = &self.fd else {
            return self.remove_keys(e, apply, unchanged);
        };
        let rel = e
            .path
            .strip_prefix(&self.root)
            .map_err(|_| "outside the cache root: left".to_string())?;
        let reached = match descend::reach(root_fd, rel) {
            Ok(r) => r,
            Err(Refused::Gone) => return Ok(Outcome::Gone),
            Err(Refused::Left(why)) => return Err(why),
        };
        let again = rejudge(e, None, Some((reached.entry_path(), reached.parent_path())));
        unchanged(&again)?;
        if apply {
            match reached.remove() {
                Ok(()) => {}
                Err(Refused::Gone) => return Ok(Outcome::Gone),
                Err(Refused::Left(why)) => return Err(why),
            }
        }
        Ok(Outcome::Went)
    }

    #[cfg(feature = "remote")]
    fn remove_keys(
        &self,
        e: &CacheEntry,
        apply: bool,
        unchanged: &dyn Fn(&CacheEntry) -> std::result::Result<(), String>,
    ) -> std::result::Result<Outcome, String> {
        let url = self.root.to_str().unwrap_or_default();
        let base = format!("{}/", url.trim_end_matches('/'));
        if !e.path.to_str().is_some_and(|p| p.starts_with(&base)) {
            return Err("outside the cache root: left".into());
        }
        let dir = e.path.to_str().unwrap_or_default();
        let mut gone = false;
        super::bucket::remove(dir, apply, |objects| {
            if objects.is_empty() {
                gone = true;
                return Err(String::new());
            }
            unchanged(&rejudge(e, Some(objects.to_vec()), None))
        })
        .map(|()| Outcome::Went)
        .or_else(|why| if gone { Ok(Outcome::Gone) } else { Err(why) })
    }

    #[cfg(not(feature = "remote"))]
    fn remove_keys(
        &self,
        _: &CacheEntry,
        _: bool,
        _: &dyn Fn(&CacheEntry) -> std::result::Result<(), String>,
    ) -> std::result::Result<Outcome, String> {
        Err("not a directory: left".into())
    }
}

/// Waits (up to [`WAIT`]) for any other prune holding the cache root
/// `fd`, then holds it until this prune ends. A file system that cannot
/// lock a directory (NFS without a lock manager) is pruned without turns.
fn take_turn(fd: &OwnedFd) -> Result<()> {
    use rustix::fs::FlockOperation as Op;
    let start = std::time::Instant::now();
    let mut said = false;
    loop {
        match rustix::fs::flock(fd, Op::NonBlockingLockExclusive) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::WOULDBLOCK) => {}
            Err(e) => {
                log::debug!("the cache root cannot be locked ({e}): no turns with other prunes");
                return Ok(());
            }
        }
        if !said {
            log::info!("another prune of this cache is running: waiting for it");
            said = true;
        }
        if start.elapsed() > WAIT {
            return Err(Error::refused(
                "another prune of this cache has held it for 10 minutes: try again once it has \
                 finished",
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
