//! Reading a few top-level keys of a large JSON member without building a
//! tape of all of it: a validating skim, split across two threads.
//!
//! `cc-world-size` needs three keys of a def.json whose variable table may
//! run to tens of MB. A simd-json tape of that table costs several times its
//! size in fresh memory, and fresh memory is slow to fault in. Instead the
//! member is *validated* here (RFC 8259 grammar, UTF-8, escapes, surrogate
//! pairs, a depth cap) with no allocation beyond a container stack bounded
//! by that cap and one entry per wanted key, the byte ranges of the wanted
//! top-level keys' values are kept (the last occurrence wins, as in a full
//! parse), and only a small document made of those values is parsed onto a
//! tape ([`rebuild`]).
//!
//! The skim is at least as strict as simd-json: whatever it refuses is
//! handed to the full parse, so a document it refuses either gets the full
//! parse's error message or, where simd-json is more lenient (a lone
//! leading surrogate escape, bytes trailing a number of 20+ digits, an
//! exponent of 6+ digits, a float within 6% of `f64::MAX`), the full
//! parse's answer. It never accepts a document the full parse refuses: the
//! `json_skim` fuzz target checks that against simd-json and serde_json.
//!
//! # Two threads on one document
//!
//! JSON cannot be validated from the middle: a byte's meaning depends on
//! whether it lies in a string and on the stack of open containers. The
//! split here is speculative and checked:
//!
//! - The first thread ([`lower`]) validates from the start, publishing its
//!   progress every 64 KiB. It may have started long before
//!   the second joins (see `Options::early_cc`).
//! - The second ([`upper`]) picks a split point `P` just after a comma
//!   halfway through what the first has left, publishes it, and validates
//!   `[P, end)` assuming that comma is structural.
//!   The containers it closes without having opened them are "below the
//!   floor": it records their kinds in order (a `}` proves an object, a `]`
//!   an array, and a key or plain value after a comma at the floor must
//!   agree with the kind its closer later proves).
//! - The first thread stops only if it consumes a structural comma ending
//!   exactly at `P`, returning its stack.
//! - The halves join only if that stack, read top-down, is exactly the
//!   sequence of kinds the second thread closed, and nothing follows the
//!   root's closer. Then the two runs are, step for step, the sequential
//!   run. If the first thread never stops at `P` (the comma was inside a
//!   string), it simply validates to the end and the second thread's work
//!   is dropped; if the join fails, the first thread resumes at `P`.
//!
//! Either way the answer is the sequential run's.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The value ranges of the wanted top-level keys of a valid document:
/// `None` if the root is not an object, else `(key index, value range)`
/// pairs, one per key present, in document order of their last occurrence.
pub type Found = Option<Vec<(usize, Range<usize>)>>;

/// Documents at least this long are worth a second thread.
pub const PARALLEL_MIN: usize = 4 << 20;

/// Whether a def.json of `size` bytes is skimmed for the CC keys rather
/// than parsed whole: from 1 MiB (smaller ones parse fast enough) up to
/// the JSON size cap (larger ones are refused by the full parse).
pub(crate) fn worth_it(size: u64, limits: &crate::limits::Limits) -> bool {
    (1 << 20..=limits.max_json_size).contains(&size)
}

/// The collective accessors' keys ([`CC_TOP_KEYS`](super::CC_TOP_KEYS))
/// of a def.json, skimmed under the depth cap of `limits`.
pub(crate) fn cc_keys(
    bytes: &[u8],
    limits: &crate::limits::Limits,
    two_threads: bool,
) -> Option<Found> {
    top_level_keys(
        bytes,
        &super::CC_TOP_KEYS,
        limits.max_json_depth,
        two_threads,
    )
}

/// Skims `bytes` for the top-level `keys`: `None` when the document is not
/// valid JSON or nests deeper than `max_depth`, else what [`Found`] says.
/// With `two_threads`, a document of at least [`PARALLEL_MIN`] bytes is
/// split with a helper thread on another CPU, when the process has one.
pub fn top_level_keys(
    bytes: &[u8],
    keys: &[&str],
    max_depth: usize,
    two_threads: bool,
) -> Option<Found> {
    let cpu = match two_threads && bytes.len() >= PARALLEL_MIN {
        true => crate::pool::helper_cpu(),
        false => None,
    };
    let Some(cpu) = cpu else {
        return finish(lower(bytes, keys, max_depth, None), None);
    };
    let shared = Shared::default();
    std::thread::scope(|s| {
        let shared = &shared;
        let low =
            crate::pool::spawn_on(s, cpu, move || lower(bytes, keys, max_depth, Some(shared)));
        let Some(low) = low else {
            return finish(lower(bytes, keys, max_depth, None), None);
        };
        let up = upper(bytes, keys, max_depth, shared);
        finish(low.join().ok()?, up)
    })
}

/// What two threads skimming one document share: where the thread reading
/// from the start has got to, and where it should stop (or that it should
/// give up).
#[derive(Debug)]
pub struct Shared {
    progress: AtomicUsize,
    stop: AtomicUsize,
}

const NO_STOP: usize = usize::MAX;
const CANCEL: usize = 0;
/// How often (in bytes) the lower walk publishes its progress and looks
/// for a split point.
const WATCH_STEP: usize = 64 << 10;

impl Default for Shared {
    fn default() -> Shared {
        Shared {
            progress: AtomicUsize::new(0),
            stop: AtomicUsize::new(NO_STOP),
        }
    }
}

impl Shared {
    /// Tells the lower walk to give up (its result is no longer wanted).
    pub fn cancel(&self) {
        self.stop.store(CANCEL, Ordering::Relaxed);
    }
}

/// The outcome of the walk from the start of a document (see [`lower`]).
pub struct Lower<'a>(Step<End<'a>>);

/// The outcome of the walk from a split point (see [`upper`]).
pub struct Upper<'a>(Step<Walk<'a>>);

/// Validates `bytes` from the start. With `shared`, it looks at its first
/// comma and then every 64 KiB for a split point that an [`upper`] walk
/// has published, and stops there if it reaches it on a structural comma.
pub fn lower<'a>(
    bytes: &'a [u8],
    keys: &'a [&'a str],
    max_depth: usize,
    shared: Option<&'a Shared>,
) -> Lower<'a> {
    let mut w = Walk::new(bytes, 0, keys, max_depth, Mode::Sequential);
    w.shared = shared;
    w.watch = if shared.is_some() { 0 } else { NO_STOP };
    Lower(w.run(State::Value))
}

/// Joins a [`lower`] walk in progress: picks a split point halfway through
/// what it has left, publishes it, and validates from there to the end.
/// `None` when there is too little left to share (or no comma to split at);
/// the lower walk then finishes alone.
pub fn upper<'a>(
    bytes: &'a [u8],
    keys: &'a [&'a str],
    max_depth: usize,
    shared: &Shared,
) -> Option<Upper<'a>> {
    let done = shared.progress.load(Ordering::Relaxed);
    let left = bytes.len().saturating_sub(done);
    if left < 2 * WATCH_STEP.max(1 << 20) {
        return None;
    }
    let p = split_point(bytes, done + left / 2)?;
    Some(upper_at(bytes, keys, max_depth, shared, p))
}

/// Publishes the split point `p` and validates `[p, end)` in floor mode.
fn upper_at<'a>(
    bytes: &'a [u8],
    keys: &'a [&'a str],
    max_depth: usize,
    shared: &Shared,
    p: usize,
) -> Upper<'a> {
    shared.stop.store(p, Ordering::Relaxed);
    Upper(Walk::new(bytes, p, keys, max_depth, Mode::Floor).floor_run())
}

/// The answer of a [`lower`] walk, joined with an [`upper`] one if any:
/// exactly what one walk over the whole document would give.
pub fn finish(lower: Lower<'_>, upper: Option<Upper<'_>>) -> Option<Found> {
    match lower.0.ok()? {
        End::Done(w) => w.found(),
        End::Stopped(w) => match upper.map(|u| u.0) {
            Some(Ok(up)) if w.joins(&up) => w.merge(up),
            _ => w.resume().ok()?.found(),
        },
    }
}

/// The two-walk answer with the split point forced to `p` (any byte
/// offset): what [`top_level_keys`] gives whatever point it picks. For the
/// tests and the fuzz target that pin that.
#[cfg(any(test, feature = "fuzzing"))]
pub fn with_split(bytes: &[u8], keys: &[&str], max_depth: usize, p: usize) -> Option<Found> {
    if p == CANCEL || p > bytes.len() {
        return finish(lower(bytes, keys, max_depth, None), None);
    }
    let shared = Shared::default();
    let up = upper_at(bytes, keys, max_depth, &shared, p);
    finish(lower(bytes, keys, max_depth, Some(&shared)), Some(up))
}

/// A small JSON object made of `keys[k]: bytes[range]` for each pair, or
/// `[]` when the skimmed document was not an object.
pub fn rebuild(bytes: &[u8], keys: &[&str], found: &Found) -> Vec<u8> {
    let Some(pairs) = found else {
        return b"[]".to_vec();
    };
    let mut out = b"{".to_vec();
    for (n, (k, r)) in pairs.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        out.extend_from_slice(
            serde_json::to_string(keys[*k])
                .expect("a string serializes")
                .as_bytes(),
        );
        out.push(b':');
        out.extend_from_slice(&bytes[r.clone()]);
    }
    out.push(b'}');
    out
}

/// Just after a comma at or after `from` that is likely structural
/// (followed by the start of a key or value); `None` if there is none.
fn split_point(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    for _ in 0..64 {
        let c = at + memchr::memchr(b',', &bytes[at..])?;
        if matches!(bytes.get(c + 1), Some(b'"' | b'{' | b'[' | b'0'..=b'9')) {
            return Some(c + 1);
        }
        at = c + 1;
    }
    None
}

/// The document is not valid JSON (or is too deep): no detail is kept, the
/// full parse gives the message.
#[derive(Debug)]
struct Invalid;

type Step<T> = std::result::Result<T, Invalid>;

const OBJ: u8 = b'}';
const ARR: u8 = b']';

/// Whether a walk owns its whole stack or starts above an unknown floor.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Sequential,
    Floor,
}

/// Where a walk starts.
#[derive(Clone, Copy)]
enum State {
    Value,
    Key,
    /// Just after a comma at the floor, whose container kind is unknown.
    FloorComma,
}

/// How a sequential walk ended.
enum End<'a> {
    /// The whole document is valid.
    Done(Walk<'a>),
    /// Stopped just after a structural comma ending at the split point.
    Stopped(Walk<'a>),
}

/// One validating pass over (part of) a document.
struct Walk<'a> {
    b: &'a [u8],
    i: usize,
    keys: &'a [&'a str],
    max_depth: usize,
    mode: Mode,
    /// Open containers (their closing bytes), above the floor in floor mode.
    stack: Vec<u8>,
    /// Floor mode: the kinds of the containers closed below the floor, in
    /// order (the split point's container first, the root last).
    under: Vec<u8>,
    /// Floor mode: where each of those containers ended.
    under_end: Vec<usize>,
    /// Floor mode: the kind the current floor container has shown, if any.
    floor_kind: Option<u8>,
    /// Floor mode: whether a comma was read at the current floor (after the
    /// last closer below the floor, nothing may follow).
    floor_used: bool,
    /// Deepest `stack.len() - under.len()` seen.
    max_rel: isize,
    /// Sequential: where the split is coordinated, if it may be.
    shared: Option<&'a Shared>,
    /// Sequential: the next position past which `shared` is looked at.
    watch: usize,
    /// A wanted key whose value is being read: (key, floor level, start).
    pending: Option<(usize, usize, usize)>,
    /// Wanted keys' values: (key, floor level, range).
    found: Vec<(usize, usize, Range<usize>)>,
}

impl<'a> Walk<'a> {
    fn new(b: &'a [u8], i: usize, keys: &'a [&'a str], max_depth: usize, mode: Mode) -> Self {
        Walk {
            b,
            i,
            keys,
            max_depth,
            mode,
            stack: Vec::new(),
            under: Vec::new(),
            under_end: Vec::new(),
            floor_kind: None,
            floor_used: true,
            max_rel: 0,
            shared: None,
            watch: NO_STOP,
            pending: None,
            found: Vec::new(),
        }
    }

    /// The stack depth at which keys are top-level keys.
    fn key_depth(&self) -> usize {
        match self.mode {
            Mode::Sequential => 1,
            Mode::Floor => 0,
        }
    }

    fn floor_run(mut self) -> Step<Walk<'a>> {
        self.floor_used = true;
        match self.run(State::FloorComma)? {
            End::Done(w) => Ok(w),
            End::Stopped(_) => Err(Invalid),
        }
    }

    /// Continues a walk stopped at the split point, to the end.
    fn resume(mut self) -> Step<Walk<'a>> {
        self.shared = None;
        self.watch = NO_STOP;
        let state = if self.stack.last() == Some(&OBJ) {
            State::Key
        } else {
            State::Value
        };
        match self.run(state)? {
            End::Done(w) => Ok(w),
            End::Stopped(_) => Err(Invalid),
        }
    }

    /// Whether a floor walk from the split point continues this stopped
    /// walk: the containers it closed below its floor are this stack, top
    /// first, the root's closer ended the document, and the depth holds.
    fn joins(&self, up: &Walk<'_>) -> bool {
        up.under.len() == self.stack.len()
            && up.under.iter().eq(self.stack.iter().rev())
            && !up.floor_used
            && self.stack.len() as isize + up.max_rel <= self.max_depth as isize
    }

    /// The found keys of a joined pair: the root's from both halves, the
    /// upper half's occurrences last. A wanted value open at the split
    /// point ends where the upper half closed the container below the root.
    fn merge(self, up: Walk<'_>) -> Option<Found> {
        let root = up.under.len() - 1;
        let mut me = self;
        if let Some((k, _, start)) = me.pending.take() {
            let end = *up.under_end.get(root.checked_sub(1)?)?;
            me.found.push((k, 0, start..end));
        }
        me.found.extend(
            up.found
                .into_iter()
                .filter(|(_, lvl, _)| *lvl == root)
                .map(|(k, _, r)| (k, 0, r)),
        );
        Walk::collect(me.stack.first() == Some(&OBJ), me.found)
    }

    /// The found keys of a walk that covered the whole document.
    fn found(self) -> Option<Found> {
        let root_is_object = self.b.iter().find(|c| !is_ws(**c)) == Some(&b'{');
        Walk::collect(root_is_object, self.found)
    }

    fn collect(root_is_object: bool, found: Vec<(usize, usize, Range<usize>)>) -> Option<Found> {
        if !root_is_object {
            return Some(None);
        }
        let mut out: Vec<(usize, Range<usize>)> = Vec::new();
        for (k, _, r) in found {
            out.retain(|(o, _)| *o != k);
            out.push((k, r));
        }
        Some(Some(out))
    }

    fn run(mut self, start: State) -> Step<End<'a>> {
        let kd = self.key_depth();
        // Whether the next token is a value (else: just after one).
        let mut at_value = match start {
            State::Value => true,
            State::Key => {
                self.key(kd)?;
                true
            }
            State::FloorComma => self.floor_comma(kd)?,
        };
        loop {
            if at_value {
                match self.peek()? {
                    b'{' => {
                        self.i += 1;
                        self.push(OBJ)?;
                        if self.peek()? != b'}' {
                            self.key(kd)?;
                            continue;
                        }
                        self.i += 1;
                        self.stack.pop();
                    }
                    b'[' => {
                        self.i += 1;
                        self.push(ARR)?;
                        if self.peek()? != b']' {
                            continue;
                        }
                        self.i += 1;
                        self.stack.pop();
                    }
                    b'"' => {
                        self.i += 1;
                        self.string()?;
                    }
                    b'-' | b'0'..=b'9' => self.number()?,
                    b't' => self.literal(b"true")?,
                    b'f' => self.literal(b"false")?,
                    b'n' => self.literal(b"null")?,
                    _ => return Err(Invalid),
                }
            }
            // Just after a value.
            at_value = true;
            if self.stack.len() == kd && self.pending.is_some() {
                self.capture();
            }
            let Some(&top) = self.stack.last() else {
                match self.mode {
                    Mode::Sequential => {
                        self.skip_ws();
                        return if self.i == self.b.len() {
                            Ok(End::Done(self))
                        } else {
                            Err(Invalid)
                        };
                    }
                    Mode::Floor => match self.floor_after_value(kd)? {
                        Some(next_is_value) => {
                            at_value = next_is_value;
                            continue;
                        }
                        None => return Ok(End::Done(self)),
                    },
                }
            };
            match self.peek()? {
                b',' => {
                    self.i += 1;
                    if self.i >= self.watch && self.look(true)? {
                        return Ok(End::Stopped(self));
                    }
                    if top == OBJ {
                        self.key(kd)?;
                    }
                }
                c if c == top => {
                    self.i += 1;
                    self.stack.pop();
                    at_value = false;
                    // Closers are checked too, so that a cancel is seen
                    // soon in a stretch without commas.
                    if self.i >= self.watch {
                        self.look(false)?;
                    }
                }
                _ => return Err(Invalid),
            }
        }
    }

    /// A wanted top-level value ends here. The last occurrence wins: at
    /// most one entry per key and level is kept, so a member repeating a key
    /// millions of times costs nothing.
    #[cold]
    fn capture(&mut self) {
        if let Some((k, lvl, start)) = self.pending.take() {
            self.found.retain(|(k2, l2, _)| (*k2, *l2) != (k, lvl));
            self.found.push((k, lvl, start..self.i));
        }
    }

    /// Past `watch`: publishes progress and reads the split point; true if
    /// it is here (`at_comma`: just after a structural comma). A cancelled
    /// walk ends as invalid.
    #[cold]
    fn look(&mut self, at_comma: bool) -> Step<bool> {
        let Some(sh) = self.shared else {
            self.watch = NO_STOP;
            return Ok(false);
        };
        sh.progress.store(self.i, Ordering::Relaxed);
        match sh.stop.load(Ordering::Relaxed) {
            CANCEL => Err(Invalid),
            NO_STOP => {
                self.watch = self.i + WATCH_STEP;
                Ok(false)
            }
            p if p == self.i && at_comma => Ok(true),
            p if p > self.i => {
                self.watch = p;
                Ok(false)
            }
            _ => {
                // Passed the split point off a structural comma: the upper
                // walk's guess was wrong, this walk goes on to the end.
                self.watch = NO_STOP;
                Ok(false)
            }
        }
    }

    /// After a value at the floor: a comma (then whatever follows it), a
    /// closer of a container below the floor, or the end of the input
    /// (`None`). `Some(true)` if a value comes next.
    fn floor_after_value(&mut self, kd: usize) -> Step<Option<bool>> {
        self.skip_ws();
        let Some(&c) = self.b.get(self.i) else {
            return Ok(None);
        };
        match c {
            b',' => {
                self.i += 1;
                self.floor_used = true;
                self.floor_comma(kd).map(Some)
            }
            OBJ | ARR => {
                if self.floor_kind.is_some_and(|k| k != c) {
                    return Err(Invalid);
                }
                self.i += 1;
                if self.under.len() == self.max_depth {
                    // A split point at most max_depth deep cannot close more
                    // containers than that: this walk can never join.
                    return Err(Invalid);
                }
                let closed = self.under.len();
                self.under.push(c);
                self.under_end.push(self.i);
                // Only the container just closed can still turn out to be
                // the root: keys of the levels inside it are not top-level.
                self.found.retain(|(_, lvl, _)| *lvl >= closed);
                self.floor_kind = None;
                self.floor_used = false;
                Ok(Some(false))
            }
            _ => Err(Invalid),
        }
    }

    /// After a comma at the floor: a key (the floor is an object) or a
    /// value (an array), whichever the bytes show, checked against what
    /// earlier members showed. True if a value comes next; false if the
    /// member was a string value, already read.
    fn floor_comma(&mut self, kd: usize) -> Step<bool> {
        match self.floor_kind {
            Some(OBJ) => {
                self.key(kd)?;
                return Ok(true);
            }
            Some(_) => return Ok(true),
            None => {}
        }
        if self.peek()? != b'"' {
            self.floor_kind = Some(ARR);
            return Ok(true);
        }
        let start = self.i;
        self.i += 1;
        let escaped = self.string()?;
        let end = self.i;
        self.skip_ws();
        if self.b.get(self.i) == Some(&b':') {
            self.floor_kind = Some(OBJ);
            self.i += 1;
            self.after_colon(start, end, escaped)?;
            Ok(true)
        } else {
            self.floor_kind = Some(ARR);
            Ok(false)
        }
    }

    /// A key and its colon; a top-level one (at stack depth `kd`) is
    /// checked against the wanted keys.
    #[inline(always)]
    fn key(&mut self, kd: usize) -> Step<()> {
        if self.peek()? != b'"' {
            return Err(Invalid);
        }
        let start = self.i;
        self.i += 1;
        let escaped = self.string()?;
        let end = self.i;
        if self.peek()? != b':' {
            return Err(Invalid);
        }
        self.i += 1;
        if self.stack.len() == kd {
            self.after_colon(start, end, escaped)?;
        }
        Ok(())
    }

    /// A top-level key `b[start..end]` (quoted) was read with its colon:
    /// if it is wanted, its value starts at the next token.
    fn after_colon(&mut self, start: usize, end: usize, escaped: bool) -> Step<()> {
        let raw = &self.b[start + 1..end - 1];
        let hit = if escaped {
            let s: String = serde_json::from_slice(&self.b[start..end]).map_err(|_| Invalid)?;
            self.keys.iter().position(|k| *k == s)
        } else {
            self.keys.iter().position(|k| k.as_bytes() == raw)
        };
        if let Some(k) = hit {
            self.skip_ws();
            self.pending = Some((k, self.under.len(), self.i));
        }
        Ok(())
    }

    fn push(&mut self, kind: u8) -> Step<()> {
        self.stack.push(kind);
        let rel = self.stack.len() as isize - self.under.len() as isize;
        self.max_rel = self.max_rel.max(rel);
        if self.stack.len() > self.max_depth {
            return Err(Invalid);
        }
        Ok(())
    }

    #[inline(always)]
    fn skip_ws(&mut self) {
        while let Some(&c) = self.b.get(self.i) {
            if !is_ws(c) {
                break;
            }
            self.i += 1;
        }
    }

    /// The next byte after whitespace (not consumed); the end is an error.
    #[inline(always)]
    fn peek(&mut self) -> Step<u8> {
        match self.b.get(self.i) {
            // Whitespace is all at or below b' '.
            Some(&c) if c > b' ' => Ok(c),
            _ => {
                self.skip_ws();
                self.b.get(self.i).copied().ok_or(Invalid)
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Step<()> {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(())
        } else {
            Err(Invalid)
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, at a `-` or digit.
    #[inline(always)]
    fn number(&mut self) -> Step<()> {
        let b = self.b;
        let mut i = self.i;
        if b[i] == b'-' {
            i += 1;
        }
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => i = digits(b, i + 1),
            _ => return Err(Invalid),
        }
        if b.get(i) == Some(&b'.') {
            let j = digits(b, i + 1);
            if j == i + 1 {
                return Err(Invalid);
            }
            i = j;
        }
        let mut exp_digits = 0;
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let j = digits(b, i);
            if j == i {
                return Err(Invalid);
            }
            exp_digits = j - i;
            i = j;
        }
        let text = &b[self.i..i];
        // Up to 18 characters with an exponent of at most two digits is
        // always in range (an integer fits in i64, a float is finite);
        // anything else is checked against what the full parse accepts.
        if (text.len() > 18 || exp_digits > 2) && !in_range(text, exp_digits) {
            return Err(Invalid);
        }
        self.i = i;
        Ok(())
    }

    /// The rest of a string whose opening quote was consumed; returns
    /// whether it held an escape.
    #[inline(always)]
    fn string(&mut self) -> Step<bool> {
        let b = self.b;
        let mut i = self.i;
        let mut escaped = false;
        loop {
            while let Some(chunk) = b.get(i..i + 8) {
                let w = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
                let (quote, m) = special(w);
                if m != 0 {
                    let bit = m.trailing_zeros();
                    i += (bit / 8) as usize;
                    // The first special byte is exactly marked in `quote`
                    // too when it is a quote (no borrow can reach it).
                    if quote & (1 << bit) != 0 {
                        self.i = i + 1;
                        return Ok(escaped);
                    }
                    break;
                }
                i += 8;
            }
            match *b.get(i).ok_or(Invalid)? {
                b'"' => {
                    self.i = i + 1;
                    return Ok(escaped);
                }
                b'\\' => {
                    escaped = true;
                    i = escape(b, i + 1)?;
                }
                0..=0x1f => return Err(Invalid),
                0x80.. => i = utf8(b, i)?,
                _ => i += 1,
            }
        }
    }
}

fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\n' | b'\r' | b'\t')
}

/// Whether a number the grammar accepts is one the full parse accepts too:
/// an integer within `i64` or `u64`, or one past `u64` of at most 300
/// digits (simd-json reads those as floats, `big-int-as-float`; it refuses
/// the negatives in between), or a float that
/// is finite with a margin below `f64::MAX` and an exponent of at most 5
/// digits. (simd-json refuses infinite floats; the margins only send more
/// borderline numbers to the full parse.)
#[cold]
fn in_range(text: &[u8], exp_digits: usize) -> bool {
    let Ok(s) = std::str::from_utf8(text) else {
        return false;
    };
    if !s.contains(['.', 'e', 'E']) {
        // simd-json 0.15 reads an integer past u64 (either sign) as a
        // float, but refuses a negative one between i64::MIN and -u64::MAX.
        return match s.strip_prefix('-') {
            Some(abs) => {
                s.parse::<i64>().is_ok() || (abs.parse::<u64>().is_err() && abs.len() <= 300)
            }
            None => s.len() <= 300,
        };
    }
    exp_digits <= 5 && s.parse::<f64>().is_ok_and(|v| v.abs() < 1.7e308)
}

#[inline(always)]
/// Past the run of ASCII digits at `i`, eight bytes at a time.
fn digits(b: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = b.get(i..i + 8) {
        let w = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        // A byte is a digit iff its high nibble is 3 and its low nibble,
        // plus 6, does not carry. (A carry out of a byte >= 0xFA can only
        // disturb bytes after that byte, which is a non-digit itself.)
        let off = ((w & 0xF0F0_F0F0_F0F0_F0F0) ^ 0x3030_3030_3030_3030)
            | (((w.wrapping_add(0x0606_0606_0606_0606)) & 0xF0F0_F0F0_F0F0_F0F0)
                ^ 0x3030_3030_3030_3030);
        // High bit set in every byte of `off` that is non-zero.
        let non_digit = ((off & !HI).wrapping_add(!HI) | off) & HI;
        if non_digit != 0 {
            return i + (non_digit.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `w` that is a `"`, and of each byte that
/// ends a run of plain string bytes: `"`, `\`, a control byte or a
/// non-ASCII byte. Only the lowest set bit of each mask is exact (borrows
/// may mark bytes above it), which is all the caller uses.
#[inline(always)]
pub(crate) fn special(w: u64) -> (u64, u64) {
    let zero = |v: u64| v.wrapping_sub(LO) & !v & HI;
    let quote = zero(w ^ (LO * b'"' as u64));
    let backslash = zero(w ^ (LO * b'\\' as u64));
    let control = w.wrapping_sub(LO * 0x20) & !w & HI;
    (quote, quote | backslash | control | (w & HI))
}

/// Past the escape whose backslash precedes `i`; `\u` surrogates must pair.
fn escape(b: &[u8], i: usize) -> Step<usize> {
    match *b.get(i).ok_or(Invalid)? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Ok(i + 1),
        b'u' => {
            let u = hex4(b, i + 1)?;
            match u {
                0xD800..=0xDBFF => {
                    if b.get(i + 5..i + 7) != Some(b"\\u") {
                        return Err(Invalid);
                    }
                    match hex4(b, i + 7)? {
                        0xDC00..=0xDFFF => Ok(i + 11),
                        _ => Err(Invalid),
                    }
                }
                0xDC00..=0xDFFF => Err(Invalid),
                _ => Ok(i + 5),
            }
        }
        _ => Err(Invalid),
    }
}

fn hex4(b: &[u8], i: usize) -> Step<u32> {
    let h = b.get(i..i + 4).ok_or(Invalid)?;
    let s = std::str::from_utf8(h).map_err(|_| Invalid)?;
    if !h.iter().all(u8::is_ascii_hexdigit) {
        return Err(Invalid);
    }
    u32::from_str_radix(s, 16).map_err(|_| Invalid)
}

/// Past the UTF-8 sequence starting at `i` (a byte >= 0x80), if well formed.
fn utf8(b: &[u8], i: usize) -> Step<usize> {
    let len = match b[i] {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => return Err(Invalid),
    };
    let seq = b.get(i..i + len).ok_or(Invalid)?;
    std::str::from_utf8(seq).map_err(|_| Invalid)?;
    Ok(i + len)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: [&str; 3] = ["replica_groups", "src_target_pairs", "CCInfo"];

    fn seq(doc: &[u8]) -> Option<Found> {
        finish(lower(doc, &KEYS, 512, None), None)
    }

    fn split_at(doc: &[u8], p: usize, max_depth: usize) -> Option<Found> {
        with_split(doc, &KEYS, max_depth, p)
    }

    /// Whether the full parse (simd-json) accepts `doc`.
    fn full_parse_accepts(doc: &[u8]) -> bool {
        simd_json::to_tape(&mut doc.to_vec()).is_ok()
    }

    fn text(doc: &[u8], f: &Found) -> Option<Vec<(String, String)>> {
        f.as_ref().map(|v| {
            v.iter()
                .map(|(k, r)| {
                    (
                        KEYS[*k].to_string(),
                        String::from_utf8_lossy(&doc[r.clone()]).into_owned(),
                    )
                })
                .collect()
        })
    }

    /// Every split point of `doc` gives the sequential answer.
    fn all_splits_agree(doc: &[u8]) {
        let want = seq(doc);
        for p in 1..=doc.len() {
            let got = split_at(doc, p, 512);
            assert_eq!(
                got,
                want,
                "split at {p} of {:?}",
                String::from_utf8_lossy(doc)
            );
        }
    }

    #[test]
    fn digit_runs_end_at_the_first_non_digit_byte() {
        let mut doc = Vec::new();
        for stop in 0..=255u8 {
            for len in 0..20 {
                doc.clear();
                doc.extend(std::iter::repeat_n(b'7', len));
                doc.push(stop);
                doc.extend_from_slice(b"123456789");
                let want = if stop.is_ascii_digit() { len + 10 } else { len };
                assert_eq!(digits(&doc, 0), want, "{len} digits then {stop:#x}");
            }
        }
    }

    #[test]
    fn keeps_the_last_occurrence_of_each_top_level_key() {
        let doc = br#"{"CCInfo":1,"a":{"replica_groups":9},"replica_groups":[[0,1]],"CCInfo" : {"x":[2]} }"#;
        let f = seq(doc).unwrap();
        assert_eq!(
            text(doc, &f).unwrap(),
            vec![
                ("replica_groups".into(), "[[0,1]]".into()),
                ("CCInfo".into(), r#"{"x":[2]}"#.into()),
            ]
        );
        all_splits_agree(doc);
    }

    #[test]
    fn escaped_key_names_match_their_unescaped_text() {
        let doc = br#"{"replica\u005fgroups":[[1]]}"#;
        let f = seq(doc).unwrap();
        assert_eq!(
            text(doc, &f).unwrap(),
            vec![("replica_groups".into(), "[[1]]".into())]
        );
    }

    #[test]
    fn a_root_that_is_not_an_object_has_no_keys() {
        assert_eq!(seq(b"[1,2,{\"CCInfo\":1}]"), Some(None));
        assert_eq!(seq(b" 3 "), Some(None));
        all_splits_agree(b"[1,2,{\"CCInfo\":1},[3,4]]");
    }

    #[test]
    fn refuses_what_rfc_8259_refuses() {
        for bad in [
            &b""[..],
            b"{",
            b"{\"a\":1,}",
            b"[1,]",
            b"[01]",
            b"[1.]",
            b"[1e]",
            b"[-]",
            b"[.5]",
            b"[tru]",
            b"[\"a\x01\"]",
            b"[\"\\x\"]",
            b"[\"\\ud800\"]",
            b"[\"\\udc00\"]",
            b"[\"\\ud800\\u0041\"]",
            b"[\"\xff\"]",
            b"[\"\xed\xa0\x80\"]",
            b"[\"\xc3\"]",
            b"{\"a\" 1}",
            b"{1:2}",
            b"[1] [2]",
            b"[1}",
            b"{\"a\":1]",
            b"[NaN]",
            b"[-9223372036854775809]",
            b"[1e309]",
            b"[1.7976931348623159e308]",
            b"[-1e400]",
        ] {
            assert_eq!(seq(bad), None, "{:?}", String::from_utf8_lossy(bad));
            all_splits_agree(bad);
            // The full parse refuses each too (the skim may be stricter,
            // never more lenient): all but a lone leading surrogate, which
            // simd-json reads as U+0000.
            assert!(
                !full_parse_accepts(bad) || bad == b"[\"\\ud800\"]",
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn accepts_what_rfc_8259_accepts() {
        for good in [
            &b"{}"[..],
            b"[]",
            b" { \"a\" : [ 1 , -0.5e+3 , true , false , null , \"\\u00e9\\n\\ud83d\\ude00\" ] } ",
            b"\"caf\xc3\xa9 \xf0\x9f\x98\x80\"",
            b"[[[],{}],{\"a\":{\"b\":[]}}]",
            b"{\"replica_groups\":[[0,1],[2,3]],\"src_target_pairs\":[[0,1]]}",
            b"[18446744073709551615,-9223372036854775808,1e308,1e-400,0e99999,-0]",
            b"[0.0000000000000000000000000000001,1000000000000000000000000000000.5]",
            // Integers past 64 bits: Python reads them, and so does the full
            // parse (as floats, simd-json's `big-int-as-float`).
            b"[18446744073709551616,123456789012345678901234567890]",
        ] {
            assert!(seq(good).is_some(), "{:?}", String::from_utf8_lossy(good));
            assert!(full_parse_accepts(good));
            all_splits_agree(good);
        }
    }

    #[test]
    fn a_split_inside_a_string_or_a_wrong_kind_falls_back_to_the_sequential_answer() {
        // Commas inside strings, and floors whose first member looks like
        // the other kind of container.
        for doc in [
            &br#"{"a":"x,\"y\":[1,2]","replica_groups":[[0,1]],"b":["p,q",{"r":1}]}"#[..],
            br#"[["a",1],{"a":1,"b":"c"},["a","b"]]"#,
            br#"{"a":[1,2],"b":{"c":[3,"d",4]}}"#,
            br#"{"a":1},{"b":2}"#,
            br#"[1,2],3"#,
            br#"{"a":[1,2,{"b":1}],"src_target_pairs":[[0,1]]}  "#,
        ] {
            all_splits_agree(doc);
        }
    }

    #[test]
    fn depth_is_capped_in_either_half() {
        let mut doc = b"{\"a\":1,\"b\":".to_vec();
        doc.extend(std::iter::repeat_n(b'[', 40));
        doc.extend(std::iter::repeat_n(b']', 40));
        doc.push(b'}');
        assert!(split_at(&doc, 7, 41).is_some());
        assert_eq!(split_at(&doc, 7, 40), None);
        assert_eq!(finish(lower(&doc, &KEYS, 40, None), None), None);
        // 100,000 deep costs no recursion.
        let deep = [vec![b'['; 100_000], vec![b']'; 100_000]].concat();
        assert_eq!(seq(&deep), None);
        assert!(finish(lower(&deep, &KEYS, 100_000, None), None).is_some());
    }

    #[test]
    fn memory_stays_bounded_whatever_the_document_repeats() {
        // A key repeated 100,000 times keeps one entry, in either walk.
        let mut doc = b"{\"x\":0".to_vec();
        for _ in 0..100_000 {
            doc.extend_from_slice(b",\"CCInfo\":[0]");
        }
        doc.push(b'}');
        let Lower(Ok(End::Done(w))) = lower(&doc, &KEYS, 512, None) else {
            panic!("valid");
        };
        assert_eq!(w.found.len(), 1);
        let up = Walk::new(&doc, 7, &KEYS, 512, Mode::Floor)
            .floor_run()
            .unwrap();
        assert_eq!(up.found.len(), 1);
        assert_eq!(split_at(&doc, 7, 512), seq(&doc));
        // Keys of levels already closed below the floor are dropped.
        let nested = br#"[{"CCInfo":1,"x":{"CCInfo":2}},{"CCInfo":3}]"#;
        let up = Walk::new(nested, 13, &KEYS, 512, Mode::Floor)
            .floor_run()
            .unwrap();
        assert!(up
            .found
            .iter()
            .all(|(_, lvl, _)| *lvl >= up.under.len() - 1));
        // A floor walk cannot close more containers than a split point can
        // be deep: it gives up at the cap instead of recording them all.
        let closers = [&b"0,"[..], &vec![b']'; 100_000]].concat();
        let up = Walk::new(&closers, 2, &KEYS, 512, Mode::Floor).floor_run();
        assert!(up.is_err());
    }

    #[test]
    fn a_cancel_is_seen_at_closers_too() {
        // No comma after the first: only closers let the lower walk look.
        let doc = [
            &b"[0,"[..],
            &[b'['; 500],
            b"\"",
            &vec![b'x'; 1 << 20],
            b"\"",
            &[b']'; 501],
        ]
        .concat();
        assert!(seq(&doc).is_some());
        let shared = Shared::default();
        shared.cancel();
        assert_eq!(finish(lower(&doc, &KEYS, 512, Some(&shared)), None), None);
    }

    #[test]
    fn large_documents_take_the_two_thread_path_and_agree() {
        let mut doc = b"{\"var\":{".to_vec();
        let mut n = 0;
        while doc.len() < PARALLEL_MIN + 1000 {
            if n > 0 {
                doc.push(b',');
            }
            doc.extend_from_slice(
                format!("\"v{n}, \\\"x\\\"\":{{\"size\":{n},\"type\":\"a,b\"}}").as_bytes(),
            );
            n += 1;
        }
        doc.extend_from_slice(b"},\"replica_groups\":[[0,1,2]],\"CCInfo\":{}}");
        let got = top_level_keys(&doc, &KEYS, 512, true);
        assert_eq!(got, seq(&doc));
        assert_eq!(
            text(&doc, got.as_ref().unwrap()).unwrap(),
            vec![
                ("replica_groups".into(), "[[0,1,2]]".into()),
                ("CCInfo".into(), "{}".into())
            ]
        );
        // The split really happened: an upper walk from halfway joins.
        let shared = Shared::default();
        let up = upper(&doc, &KEYS, 512, &shared).expect("room to split");
        let p = shared.stop.load(Ordering::Relaxed);
        assert!(p > doc.len() / 2 && p < doc.len() / 2 + 100, "{p}");
        assert_eq!(
            finish(lower(&doc, &KEYS, 512, Some(&shared)), Some(up)),
            seq(&doc)
        );
        // A cancelled lower walk gives nothing.
        shared.cancel();
        assert_eq!(finish(lower(&doc, &KEYS, 512, Some(&shared)), None), None);
        // A broken byte near the end is found by the upper half.
        let mut bad = doc.clone();
        let at = bad.len() - 20;
        bad[at] = b'\x01';
        assert_eq!(top_level_keys(&bad, &KEYS, 512, true), None);
        assert_eq!(top_level_keys(&bad, &KEYS, 512, false), None);
    }
}
