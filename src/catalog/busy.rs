//! A catalogue another process holds, and one that cannot be written:
//! how long an update waits for the other process's lock
//! ([`set_busy_timeout`], `scan --busy-timeout`), and the failures both
//! end in, as I/O errors (exit 3) naming the file, not SQLite's words.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// The default wait for a catalogue another process holds locked: 60 s.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// The wait set for this process, in milliseconds (`u64::MAX`: unset).
static BUSY_MS: AtomicU64 = AtomicU64::new(u64::MAX);

/// Sets how long an update of a catalogue waits for another process that
/// holds it locked (opening it, then each batch of rows written) before
/// it fails with an I/O error; [`DEFAULT_BUSY_TIMEOUT`] unless set. For
/// the whole process (`neff scan --busy-timeout`).
pub fn set_busy_timeout(wait: Duration) {
    let ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX - 1);
    BUSY_MS.store(ms, Ordering::Relaxed);
}

/// The wait in force ([`set_busy_timeout`]).
pub fn busy_timeout() -> Duration {
    match BUSY_MS.load(Ordering::Relaxed) {
        u64::MAX => DEFAULT_BUSY_TIMEOUT,
        ms => Duration::from_millis(ms),
    }
}

/// The error of a catalogue held locked past the wait.
pub(super) fn locked(path: &Path) -> Error {
    Error::Io(io::Error::new(
        io::ErrorKind::ResourceBusy,
        format!(
            "index {}: locked by another process for longer than {} (--busy-timeout)",
            path.display(),
            humantime::format_duration(busy_timeout())
        ),
    ))
}

/// The exclusive `flock` of `file` (the catalogue at `path`), waited for
/// at most [`busy_timeout`].
pub(super) fn flock_within(file: &std::fs::File, path: &Path) -> Result<()> {
    use rustix::fs::{flock, FlockOperation};
    let until = Instant::now() + busy_timeout();
    loop {
        match flock(file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(()),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK || e == rustix::io::Errno::INTR => {
                if Instant::now() >= until {
                    return Err(locked(path));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(Error::Io(e.into())),
        }
    }
}

/// Refuses, before anything is read, a catalogue whose place cannot be
/// written: the file itself, or its directory (SQLite keeps its `-wal`
/// and `-shm` files beside it, and creates the file there).
pub(super) fn check_writable(path: &Path) -> Result<()> {
    use rustix::fs::{access, Access};
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let refused = |what: String, e: rustix::io::Errno| {
        let e = io::Error::from(e);
        Error::Io(io::Error::new(
            e.kind(),
            format!("index {}: {what} ({e})", path.display()),
        ))
    };
    if let Err(e) = access(dir, Access::WRITE_OK | Access::EXEC_OK) {
        return Err(refused(
            format!(
                "its directory {} cannot be written to: the catalogue keeps its -wal and -shm files there",
                dir.display()
            ),
            e,
        ));
    }
    match access(path, Access::WRITE_OK) {
        Err(e) if e != rustix::io::Errno::NOENT => {
            Err(refused("the file is not writable".into(), e))
        }
        _ => Ok(()),
    }
}

/// SQLite's failures that are the place's, not the catalogue's: held
/// locked past the wait, or read-only; as I/O errors naming the file.
pub(super) fn io_failure(path: &Path, e: &rusqlite::Error) -> Option<Error> {
    use rusqlite::ErrorCode as C;
    let rusqlite::Error::SqliteFailure(f, _) = e else {
        return None;
    };
    match f.code {
        C::DatabaseBusy | C::DatabaseLocked => Some(locked(path)),
        C::ReadOnly => Some(Error::Io(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("index {}: cannot be written (read-only)", path.display()),
        ))),
        C::CannotOpen => Some(Error::Io(io::Error::other(format!(
            "index {}: cannot be opened",
            path.display()
        )))),
        _ => None,
    }
}
