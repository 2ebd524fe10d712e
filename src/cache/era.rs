//! Compiler versions as the cache names them (`neuronxcc-2.15.128.0+56dc5a86`):
//! their order (numbers, then build), which of them are one release, and
//! which layout each release wrote (whether a finished compile is marked
//! by `model.done`). docs/GUIDE.md ("Compile caches of every compiler")
//! gives the evidence for each era.

use std::cmp::Ordering;

/// How an era's compiler marks a finished compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Era {
    /// neuronxcc 2.15 and later: `model.done` is written once `model.neff`
    /// is whole.
    Marked,
    /// neuronxcc 2.14 and earlier: nothing but `model.neff` itself; a
    /// finished compile is a `model.neff` that reads whole.
    Unmarked,
    /// No compiler version is known (an entry directly under a root that
    /// names none): an entry holding `model.done` is read as `Marked`, one
    /// without it cannot be told from an unfinished one.
    Unknown,
    /// Not the compiler wrapper's cache but vLLM's Neuron cache
    /// (`<root>/<32 hex key>/`): `.compilation_complete` marks a finished
    /// compile; a failed one leaves no mark.
    Vllm,
}

/// Whether `name` is a vLLM Neuron cache entry's (32 lowercase hex
/// digits: an MD5 key).
pub(super) fn is_vllm_key(name: &str) -> bool {
    name.len() == 32 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The first release whose compiler wrapper writes `model.done`.
const FIRST_MARKED: [u64; 2] = [2, 15];

/// The era of the compiler `version` (`None`: unknown).
pub(super) fn era(version: Option<&str>) -> Era {
    let Some(v) = version else {
        return Era::Unknown;
    };
    let nums = numbers(v);
    if nums.is_empty() {
        return Era::Unknown;
    }
    if cmp_numbers(&nums, &FIRST_MARKED) == Ordering::Less {
        Era::Unmarked
    } else {
        Era::Marked
    }
}

/// The release numbers of a version (`2.15.128.0` of
/// `2.15.128.0+56dc5a86`), trailing zeros dropped so that `2.15` and
/// `2.15.0` are one release; a part that is not a number counts its
/// leading digits.
pub(super) fn numbers(v: &str) -> Vec<u64> {
    let release = v.split(['+', '-']).next().unwrap_or("");
    let mut n: Vec<u64> = release
        .split('.')
        .map(|p| {
            let digits = p.bytes().take_while(u8::is_ascii_digit).count();
            p[..digits].parse().unwrap_or(0)
        })
        .collect();
    while n.last() == Some(&0) {
        n.pop();
    }
    n
}

fn cmp_numbers(a: &[u64], b: &[u64]) -> Ordering {
    a.cmp(b)
}

/// The build of a version: what follows its numbers (`+56dc5a86`).
fn build(v: &str) -> &str {
    v.find(['+', '-']).map_or("", |i| &v[i..])
}

/// Whether two versions are one release (the same numbers; builds of it
/// count as one version for `--keep-versions` and `--include-current`).
pub(super) fn same_release(a: &str, b: &str) -> bool {
    numbers(a) == numbers(b)
}

/// Orders two compiler versions by their numbers (`2.9` before `2.15`),
/// then by build; `None` (no version) first.
pub(super) fn order(a: Option<&str>, b: Option<&str>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => cmp_numbers(&numbers(a), &numbers(b))
            .then_with(|| build(a).cmp(build(b)))
            .then_with(|| a.cmp(b)),
        _ => a.is_some().cmp(&b.is_some()),
    }
}

/// The releases among `versions`, newest first, each with its builds.
pub(super) fn releases<'a>(versions: impl IntoIterator<Item = &'a str>) -> Vec<Vec<&'a str>> {
    let mut all: Vec<&str> = versions.into_iter().collect();
    all.sort_by(|a, b| order(Some(b), Some(a)));
    all.dedup();
    let mut out: Vec<Vec<&str>> = Vec::new();
    for v in all {
        match out.last_mut() {
            Some(r) if same_release(r[0], v) => r.push(v),
            _ => out.push(vec![v]),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_order_by_their_numbers_then_by_build() {
        let mut v = vec![
            "2.15.128.0+56dc5a86",
            "2.9.1.0+aa",
            "2.15.128.0+0a11",
            "2.16.0.1+ff",
            "2.15.9.0+ff",
        ];
        v.sort_by(|a, b| order(Some(a), Some(b)));
        assert_eq!(
            v,
            [
                "2.9.1.0+aa",
                "2.15.9.0+ff",
                "2.15.128.0+0a11",
                "2.15.128.0+56dc5a86",
                "2.16.0.1+ff"
            ]
        );
        assert_eq!(order(None, Some("2.1")), Ordering::Less);
    }

    #[test]
    fn builds_of_one_release_are_one_version() {
        let r = releases(["2.15.128.0+56dc5a86", "2.16.1.0+1", "2.15.128.0+0a11"]);
        assert_eq!(
            r,
            vec![
                vec!["2.16.1.0+1"],
                vec!["2.15.128.0+56dc5a86", "2.15.128.0+0a11"]
            ]
        );
        assert!(same_release("2.15.0+a", "2.15+b"));
    }

    #[test]
    fn compilers_before_2_15_mark_no_finished_compile() {
        assert_eq!(era(Some("2.12.54.0+f631c2365")), Era::Unmarked);
        assert_eq!(era(Some("2.13.66.0+6dfecc895")), Era::Unmarked);
        assert_eq!(era(Some("2.14.227.0+2d4f85be")), Era::Unmarked);
        assert_eq!(era(Some("2.15.128.0+56dc5a86")), Era::Marked);
        assert_eq!(era(Some("2.21.18209.0+043b1bf7")), Era::Marked);
        assert_eq!(era(Some("3.0")), Era::Marked);
        assert_eq!(era(None), Era::Unknown);
        assert_eq!(era(Some("dev")), Era::Unknown);
    }
}
