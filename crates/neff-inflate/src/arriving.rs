//! Input that may still be arriving (a payload downloaded under its map):
//! the [`Arriving`] callback a caller gives, and the one [`Gate`] every
//! read of such input goes through, the stream's walk and the parallel
//! rounds alike.

/// Input that is still arriving (a file being downloaded under its map, in
/// parts that may land in any order): the stream asks for each range of
/// the payload before it reads it, and reads nothing it did not ask for.
/// It asks for what it reads next, and for what a search ahead of it
/// needs (up to 64 MiB ahead where a member's end is looked for, the
/// payload's last 8 bytes first of all), so that the parts are best
/// fetched in order, the last one early.
pub trait Arriving: Sync {
    /// Returns once the payload's bytes `range` are in place (and stay so),
    /// or the error that will keep them from arriving (the stream fails
    /// with it as [`Error::Io`](crate::Error::Io)). It may be asked from
    /// any of the engine's threads.
    fn wait(&self, range: std::ops::Range<usize>) -> std::io::Result<()>;
}

impl<F: Fn(std::ops::Range<usize>) -> std::io::Result<()> + Sync> Arriving for F {
    fn wait(&self, range: std::ops::Range<usize>) -> std::io::Result<()> {
        self(range)
    }
}

/// The one gate before any read of input that may still be arriving
/// ([`Arriving`]): the stream's walk (`base` 0) and the rounds (whose
/// stream starts `base` bytes into the caller's payload) wait through it.
/// In the rounds, a range that will not arrive fails the round: one core
/// goes on from the last good one, and meets the failure itself.
#[derive(Clone, Copy)]
pub(crate) struct Gate<'a> {
    input: Option<&'a dyn Arriving>,
    base: usize,
}

impl<'a> Gate<'a> {
    /// The gate of input that is whole: nothing to wait for.
    pub(crate) const WHOLE: Gate<'static> = Gate {
        input: None,
        base: 0,
    };

    /// The gate of `input` (if still arriving) for data starting `base`
    /// bytes into the caller's payload.
    pub(crate) fn new(input: Option<&'a dyn Arriving>, base: usize) -> Gate<'a> {
        Gate { input, base }
    }

    /// The same input, for data starting `base` bytes into the payload.
    pub(crate) fn at(self, base: usize) -> Gate<'a> {
        Gate { base, ..self }
    }

    /// Whether the input is whole (nothing is waited for).
    pub(crate) fn whole(&self) -> bool {
        self.input.is_none()
    }

    /// Waits for `data[from..end]` (clamped).
    pub(crate) fn wait(&self, data: &[u8], from: usize, end: usize) -> std::io::Result<()> {
        let end = end.min(data.len());
        match self.input {
            Some(a) if from < end => a.wait(self.base + from..self.base + end),
            _ => Ok(()),
        }
    }

    /// `data` up to `end` (clamped), waited for from `from` on, when the
    /// input is still arriving: for a search that must not read past what
    /// it waited for (a longer header, block or match then goes unseen:
    /// the searches' answers are guesses, checked). All of it when whole.
    pub(crate) fn upto<'d>(
        &self,
        data: &'d [u8],
        from: usize,
        end: usize,
    ) -> std::io::Result<&'d [u8]> {
        if self.whole() {
            return Ok(data);
        }
        self.wait(data, from, end)?;
        Ok(&data[..end.min(data.len())])
    }
}
