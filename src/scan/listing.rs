//! The scan of bucket prefixes pipelined with their listings
//! ([`super::scan_listing`]): each object handed to the workers once its
//! page is in, a compile-cache entry's NEFF once the listing has passed the
//! entry's last key.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use rayon::prelude::*;

use super::record::{failed, Record};
use super::walk::{meet_object, Seen};
use crate::cache;
use crate::error::Result;
use crate::reader::Scratch;
use crate::remote::Listing;
use crate::source::Source;

/// NEFFs listed and not yet handed to the workers: each waits until
/// the listing has passed its compile-cache entry's last key.
pub(super) struct Held {
    waiting: VecDeque<(String, Option<String>)>,
    /// The last key seen, and whether keys have come in order so far
    /// (a store that lists out of order has everything held to the end).
    last: Option<String>,
    ordered: bool,
}

/// Nothing held, and keys in order so far.
impl Default for Held {
    fn default() -> Held {
        Held {
            waiting: VecDeque::new(),
            last: None,
            ordered: true,
        }
    }
}

impl Held {
    /// Notes the key `url` (the listing has reached it) and, if it is a
    /// NEFF, holds it; hands on each NEFF held whose entry is now
    /// complete, in key order.
    pub(super) fn key(&mut self, url: &str, out: &mut dyn FnMut(Source)) {
        // In key order, not the URLs' (a key's `%`, `#`, `?` are escaped
        // in its URL: `remote::object_url`).
        let key = crate::remote::key_part;
        if self.ordered && self.last.as_deref().is_some_and(|l| key(url) < key(l)) {
            let url = crate::remote::redact(url);
            log::warn!("{url}: listed out of key order: the rest is read after the listing");
            self.ordered = false;
        }
        self.last = Some(url.to_string());
        if self.ordered {
            while let Some((_, entry)) = self.waiting.front() {
                if entry.as_deref().is_some_and(|e| url.starts_with(e)) {
                    break;
                }
                out(Source::remote(self.waiting.pop_front().expect("front").0));
            }
        }
        if url.ends_with(".neff") {
            let entry = cache::entry_dir(Path::new(url)).map(|d| format!("{}/", d.display()));
            self.waiting.push_back((url.to_string(), entry));
        }
    }

    /// The listing ended: every NEFF still held.
    pub(super) fn end(&mut self, out: &mut dyn FnMut(Source)) {
        for (url, _) in self.waiting.drain(..) {
            out(Source::remote(url));
        }
    }
}

/// Runs `work` on each of `paths` (listed already) and of the NEFFs
/// and bare compile-cache entries under `prefixes` as their listings
/// find them, on the remote pool of `jobs`; `emit` gets each result,
/// `fail` each listing's error (as a record naming the prefix). What
/// the listings see goes into `seen` before the path it concerns is
/// handed to `work`.
#[allow(clippy::too_many_arguments)]
pub(super) fn read_while_listing<T: Send>(
    prefixes: &[Source],
    paths: &[Source],
    jobs: usize,
    seen: &Seen,
    listed: &(dyn Fn(usize) + Sync),
    work: &(dyn Fn(&Source, &mut Scratch) -> T + Sync),
    emit: &(dyn Fn(T) + Sync),
    fail: &(dyn Fn(Record) + Sync),
) -> Result<()> {
    let (tx, rx) = mpsc::channel::<Source>();
    let pool = super::run::pool_for(true, jobs)?;
    std::thread::scope(|scope| {
        let lister = scope.spawn(|| {
            listed(paths.len());
            for p in paths.iter().cloned() {
                let _ = tx.send(p);
            }
            // A single object named beside a prefix holding it is read once.
            let sent = paths.iter().cloned().collect();
            list_prefixes(prefixes, sent, seen, &tx, listed, fail);
            drop(tx);
        });
        pool.install(|| {
            rx.into_iter()
                .par_bridge()
                .for_each_init(Scratch::default, |scratch, p| {
                    emit(super::run::counted(|| work(&p, scratch)))
                });
        });
        lister.join().expect("the lister does not panic");
    });
    Ok(())
}

/// Lists each prefix, sending each NEFF to the workers once its entry
/// is complete, then the entries that hold none.
fn list_prefixes(
    prefixes: &[Source],
    // Paths sent already (roots may overlap).
    mut sent: HashSet<Source>,
    seen: &Seen,
    tx: &mpsc::Sender<Source>,
    listed: &(dyn Fn(usize) + Sync),
    fail: &(dyn Fn(Record) + Sync),
) {
    {
        let mut send = |p: Source| {
            if sent.insert(p.clone()) {
                listed(1);
                let _ = tx.send(p);
            }
        };
        for (root, url) in prefixes.iter().filter_map(|r| Some((r, r.url()?))) {
            // One `Held` a range: each range's keys come in key order, and
            // no compile-cache entry spans two ranges.
            let mut held: HashMap<usize, Held> = HashMap::new();
            let got = crate::remote::list_each(url, &mut |l: Listing| {
                let (range, o) = match l {
                    Listing::Key { range, object } => (range, object),
                    Listing::End { range } => {
                        if let Some(mut h) = held.remove(&range) {
                            h.end(&mut send);
                        }
                        return;
                    }
                };
                meet_object(&o, &mut seen.met.lock().expect("lock"));
                if seen
                    .keep
                    .as_ref()
                    .is_some_and(|k| !k.keeps_listed(url, &o.url))
                {
                    return;
                }
                if o.url.ends_with(".neff") {
                    seen.versions
                        .lock()
                        .expect("lock")
                        .insert(PathBuf::from(&o.url), (o.size, o.version.clone()));
                }
                held.entry(range).or_default().key(&o.url, &mut send);
            });
            // Ranges a failure cut short: what they hold is read all the same.
            let mut rest: Vec<_> = held.into_iter().collect();
            rest.sort_by_key(|(r, _)| *r);
            for (_, mut h) in rest {
                h.end(&mut send);
            }
            if let Err(e) = got {
                seen.unlisted
                    .lock()
                    .expect("lock")
                    .push(root.path().to_path_buf());
                fail(failed(root, &e, None));
            }
        }
    }
    // Entries holding no NEFF, once every listing is done.
    let parents: HashSet<&Path> = sent.iter().filter_map(|p| p.path().parent()).collect();
    let mut bare: Vec<Source> = seen
        .met
        .lock()
        .expect("lock")
        .keys()
        .filter(|d| !parents.contains(Path::new(d.as_os_str())))
        .map(|d| Source::remote(d.to_string_lossy().into_owned()))
        .collect();
    bare.sort();
    listed(bare.len());
    for d in bare {
        let _ = tx.send(d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(keys: &[&str]) -> Vec<(usize, String)> {
        // (keys seen when handed on, path)
        let mut held = Held::default();
        let mut out = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            held.key(k, &mut |p| out.push((i, p.path().display().to_string())));
        }
        held.end(&mut |p| out.push((keys.len(), p.path().display().to_string())));
        out
    }

    #[test]
    fn a_neff_in_an_entry_waits_for_the_entrys_last_key_and_others_go_at_once() {
        let got = run(&[
            "s3://b/c/MODULE_1+a/model.done",
            "s3://b/c/MODULE_1+a/model.neff",
            "s3://b/c/MODULE_1+a/model.neff.lock",
            "s3://b/c/MODULE_2+b/model.neff",
            "s3://b/c/MODULE_2+b/x.log",
            "s3://b/d/one.neff",
            "s3://b/d/two.neff",
            "s3://b/e/MODULE_3+c/model.neff",
        ]);
        assert_eq!(
            got,
            [
                (3, "s3://b/c/MODULE_1+a/model.neff".into()),
                (5, "s3://b/c/MODULE_2+b/model.neff".into()),
                (6, "s3://b/d/one.neff".into()),
                (7, "s3://b/d/two.neff".into()),
                (8, "s3://b/e/MODULE_3+c/model.neff".into()),
            ]
        );
    }

    #[test]
    fn keys_out_of_order_hold_every_neff_to_the_end_of_the_listing() {
        let got = run(&[
            "s3://b/z/MODULE_1+a/model.neff",
            "s3://b/a/MODULE_2+b/model.neff",
            "s3://b/zz/x",
        ]);
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|(i, _)| *i == 3), "{got:?}");
    }

    #[test]
    fn keys_in_order_whose_urls_are_not_hold_nothing_back() {
        // `c#d` sorts before `c$e` (0x23, 0x24); its URL, `c%23d`, after.
        let got = run(&["s3://b/c%23d/x.neff", "s3://b/c$e/y.neff", "s3://b/z"]);
        assert_eq!(got[0], (1, "s3://b/c%23d/x.neff".into()));
    }

    #[test]
    fn an_entry_name_that_prefixes_another_does_not_hold_it() {
        // MODULE_1+a/ is passed by MODULE_1+ab/...
        let got = run(&[
            "s3://b/MODULE_1+a/model.neff",
            "s3://b/MODULE_1+ab/model.neff",
        ]);
        assert_eq!(got[0], (1, "s3://b/MODULE_1+a/model.neff".into()));
    }
}
