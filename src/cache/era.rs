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
const FIRST_MARKED: [&str; 2] = ["2", "15"];

/// The era of the compiler `version` (`None`: unknown; a version whose
/// numbers cannot be read, `nightly`, is of no known era either).
pub(super) fn era(version: Option<&str>) -> Era {
    let Some(nums) = version.and_then(numbers) else {
        return Era::Unknown;
    };
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
/// `2.15.128.0+56dc5a86`) as digit strings without leading zeros (no
/// number overflows: `2.99999999999999999999` is after `2.9`), trailing
/// zeros dropped so that `2.15` and `2.15.0` are one release; a part
/// counts its leading digits (`15rc1` is 15). `None` when a part has no
/// leading digit (`nightly`, `2.x`): such a version cannot be ordered.
pub(super) fn numbers(v: &str) -> Option<Vec<&str>> {
    let release = v.split(['+', '-']).next().unwrap_or("");
    let mut n = Vec::new();
    for p in release.split('.') {
        let digits = p.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let d = p[..digits].trim_start_matches('0');
        n.push(if d.is_empty() { "0" } else { d });
    }
    while n.last() == Some(&"0") {
        n.pop();
    }
    Some(n)
}

/// Whether `v`'s numbers can be read, and so the version ordered among
/// others (`nightly` cannot: `--keep-versions` never counts or removes
/// it).
pub(super) fn orderable(v: &str) -> bool {
    numbers(v).is_some()
}

/// Orders two releases' numbers: part by part, a number by its digits'
/// count, then by its digits.
fn cmp_numbers<A: AsRef<str>, B: AsRef<str>>(a: &[A], b: &[B]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (x.as_ref(), y.as_ref());
        let o = x.len().cmp(&y.len()).then_with(|| x.cmp(y));
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

/// The build of a version: what follows its numbers (`+56dc5a86`).
fn build(v: &str) -> &str {
    v.find(['+', '-']).map_or("", |i| &v[i..])
}

/// Whether two versions are one release (the same numbers; builds of it
/// count as one version for `--keep-versions` and `--include-current`).
/// A version that cannot be ordered is one release with itself only.
pub(super) fn same_release(a: &str, b: &str) -> bool {
    match (numbers(a), numbers(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// Orders two compiler versions by their numbers (`2.9` before `2.15`),
/// then by build; `None` (no version) first, then the versions that
/// cannot be ordered (`nightly`), by name: newest-first reports list them
/// after every numbered release.
pub(super) fn order(a: Option<&str>, b: Option<&str>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => match (numbers(a), numbers(b)) {
            (Some(x), Some(y)) => cmp_numbers(&x, &y)
                .then_with(|| build(a).cmp(build(b)))
                .then_with(|| a.cmp(b)),
            (x, y) => x.is_some().cmp(&y.is_some()).then_with(|| a.cmp(b)),
        },
        _ => a.is_some().cmp(&b.is_some()),
    }
}

/// Whether `--keep-versions n` keeps version `v`, given the `releases`
/// ([`releases`]): one of the newest `n`, or a version that cannot be
/// ordered (never older than another).
pub(super) fn kept(releases: &[Vec<&str>], v: &str, n: usize) -> bool {
    !orderable(v) || releases.iter().take(n).flatten().any(|k| *k == v)
}

/// The releases among `versions`, newest first, each with its builds;
/// versions that cannot be ordered are no release of this list.
pub(super) fn releases<'a>(versions: impl IntoIterator<Item = &'a str>) -> Vec<Vec<&'a str>> {
    let mut all: Vec<&str> = versions.into_iter().filter(|v| orderable(v)).collect();
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
        assert_eq!(era(Some("nightly")), Era::Unknown);
    }

    #[test]
    fn huge_numbers_order_without_overflow() {
        let big = "2.99999999999999999999.0+a";
        assert_eq!(numbers(big), Some(vec!["2", "99999999999999999999"]));
        assert_eq!(order(Some("2.21.0+a"), Some(big)), Ordering::Less);
        assert_eq!(order(Some("2.007"), Some("2.7")), Ordering::Less);
        assert!(same_release("2.007", "2.7.0"));
        assert!(!same_release(big, "2"));
        assert_eq!(era(Some(big)), Era::Marked);
    }

    #[test]
    fn a_version_that_cannot_be_ordered_is_never_older() {
        assert!(!orderable("nightly") && !orderable("2.x") && orderable("2.15rc1"));
        let r = releases(["nightly", "2.15.0+a", "2.16.0+b"]);
        assert_eq!(r, vec![vec!["2.16.0+b"], vec!["2.15.0+a"]]);
        assert!(kept(&r, "nightly", 1));
        assert!(kept(&r, "2.16.0+b", 1) && !kept(&r, "2.15.0+a", 1));
        assert!(!same_release("nightly", "dev") && same_release("dev", "dev"));
        // Newest first: numbered releases, then the unordered, then none.
        let mut v = vec![None, Some("2.15"), Some("nightly"), Some("2.16")];
        v.sort_by(|a, b| order(*b, *a));
        assert_eq!(v, [Some("2.16"), Some("2.15"), Some("nightly"), None]);
    }
}
