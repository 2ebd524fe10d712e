//! The states a compile-cache entry can be judged in, and which of them a
//! prune selector may ever remove.

use serde::{Deserialize, Serialize};

/// The state of a compile-cache entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// A finished compile whose NEFF reads: `model.neff` and `model.done`
    /// (neuronxcc 2.15 and later), or a `model.neff` that reads whole in an
    /// entry of a compiler that writes no `model.done` (2.14 and earlier).
    Ok,
    /// An entry that says it finished (`model.done`, or an older
    /// compiler's `model.neff`) but whose NEFF is refused, or missing
    /// beside `model.done`, with no log to say the compile failed.
    Corrupt,
    /// A failed compile: `model.log` and no NEFF, or a placeholder
    /// `model.neff` that is not a NEFF beside it. The compiler wrapper
    /// replays the failure from the cache until the entry is removed.
    Failed,
    /// A `*.lock` anywhere in the entry and no finished NEFF: a compile in
    /// progress, or one that died holding its lock.
    Locked,
    /// `model.neff` without `model.done` in an entry of a compiler that
    /// writes one, and no lock: a compile stopped while it wrote its output.
    Incomplete,
    /// None of the compiler's output: no NEFF, log, `model.done` or lock.
    Empty,
    /// A file or directory of the entry could not be read (permissions, a
    /// FIFO, socket or device where a file should be): nothing about it is
    /// known, and no selector removes it.
    Unreadable,
    /// The entry's files do not say what it is (a link where a file
    /// should be, a layout whose completeness has no marker): no selector
    /// removes it.
    Unknown,
}

impl State {
    /// Every state, in the order reports list them.
    pub const ALL: [State; 8] = [
        State::Ok,
        State::Corrupt,
        State::Failed,
        State::Locked,
        State::Incomplete,
        State::Empty,
        State::Unreadable,
        State::Unknown,
    ];

    /// The state's name, as JSON and the catalogue spell it.
    pub fn name(self) -> &'static str {
        match self {
            State::Ok => "ok",
            State::Corrupt => "corrupt",
            State::Failed => "failed",
            State::Locked => "locked",
            State::Incomplete => "incomplete",
            State::Empty => "empty",
            State::Unreadable => "unreadable",
            State::Unknown => "unknown",
        }
    }

    /// Whether what this state says is certain enough for a selector to
    /// act on (every state but `unreadable` and `unknown`).
    pub fn is_judged(self) -> bool {
        !matches!(self, State::Unreadable | State::Unknown)
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
