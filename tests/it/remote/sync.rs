//! `neff cache sync` between a directory and an S3 prefix (moto_server):
//! every ok entry put with its marker last and read back byte for byte;
//! nothing in the bucket overwritten; the objects a killed sync left,
//! finished by the next one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{ndjson, run, upload};
use crate::cache_sync::{big_cache, caches, states, tree};
use crate::common::put;

/// A fresh prefix of the bucket `zoo` for one test.
fn prefix(name: &str) -> String {
    format!("s3://zoo/sync-{}-{name}", std::process::id())
}

fn sync(src: &str, dst: &str, more: &[&str]) -> (Option<i32>, Vec<Value>) {
    let mut args = vec!["cache", "sync", src, dst, "--json"];
    args.extend_from_slice(more);
    let o = run(&args);
    assert!(
        o.status.code() != Some(101),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.code(), ndjson(&o.stdout))
}

/// The bucket's entries and their states, by path below `url`.
fn bucket_states(url: &str) -> BTreeMap<String, String> {
    let o = run(&["cache", "status", url, "--json"]);
    ndjson(&o.stdout)
        .iter()
        .map(|r| {
            let p = r["path"].as_str().unwrap();
            let rel = p.strip_prefix(url).unwrap().trim_start_matches('/');
            (rel.to_string(), r["state"].as_str().unwrap().to_string())
        })
        .collect()
}

/// The length of the log at `path` once no line has come for half a
/// second (at most 5 s): the proxy writes a request's line after its
/// answer is sent.
fn settled(path: &Path) -> usize {
    let len = || std::fs::metadata(path).map_or(0, |m| m.len() as usize);
    let mut n = len();
    for _ in 0..10 {
        std::thread::sleep(std::time::Duration::from_millis(500));
        if len() == n {
            break;
        }
        n = len();
    }
    n
}

fn actions(records: &[Value]) -> Vec<&str> {
    records
        .iter()
        .map(|r| r["action"].as_str().unwrap())
        .collect()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Both caches (every era and state; vLLM's) pushed to a fresh prefix of
/// the store at `store` (`s3://zoo`, `gs://zoo`, `az://zoo`) and pulled
/// back: only the ok entries, every one ok there and back, byte for byte;
/// a dry run puts nothing; a second sync either way is all skipped.
fn round_trip(store: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let (wrapper, vllm) = caches(tmp.path());
    for (i, src) in [wrapper, vllm].iter().enumerate() {
        let url = format!("{store}/sync-{}-round-{i}", std::process::id());
        let ok: Vec<PathBuf> = states(src)
            .into_iter()
            .filter(|(_, st)| st == "ok")
            .map(|(p, _)| p)
            .collect();
        // A dry run puts nothing.
        let (code, r) = sync(s(src), &url, &["--dry-run"]);
        assert_eq!(code, Some(0), "{r:?}");
        assert!(actions(&r).iter().all(|a| *a == "copy"), "{r:?}");
        assert_eq!(r.len(), ok.len());
        let o = run(&["cache", "status", &url, "--json"]);
        assert!(
            ndjson(&o.stdout).is_empty(),
            "{url}: the dry run put something"
        );
        let (code, r) = sync(s(src), &url, &[]);
        assert_eq!(code, Some(0), "{r:?}");
        assert_eq!(actions(&r), vec!["copied"; ok.len()]);
        let got = bucket_states(&url);
        let want: Vec<String> = ok.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(got.keys().cloned().collect::<Vec<_>>(), want);
        assert!(got.values().all(|st| st == "ok"), "{got:?}");
        // Again (the scheme in capitals): the same entries are there,
        // nothing is put.
        let (scheme, rest) = url.split_once("://").unwrap();
        let shouted = format!("{}://{rest}", scheme.to_uppercase());
        let (code, r) = sync(s(src), &shouted, &[]);
        assert_eq!(code, Some(0), "{r:?}");
        assert_eq!(actions(&r), vec!["skipped"; ok.len()]);
        // Back to a directory: every ok entry, byte for byte, locks left
        // out.
        let back = tmp.path().join(format!("back-{i}"));
        let (code, r) = sync(&url, s(&back), &["--dry-run"]);
        assert_eq!((code, actions(&r)), (Some(0), vec!["copy"; ok.len()]));
        assert!(!back.exists());
        let (code, r) = sync(&url, s(&back), &[]);
        assert_eq!(code, Some(0), "{r:?}");
        assert_eq!(actions(&r), vec!["copied"; ok.len()]);
        assert_eq!(states(&back).len(), ok.len());
        assert!(states(&back).values().all(|st| st == "ok"));
        for rel in &ok {
            assert_eq!(
                tree(&back.join(rel), true),
                tree(&src.join(rel), false),
                "{rel:?}"
            );
        }
        let (code, r) = sync(&url, s(&back), &[]);
        assert_eq!(code, Some(0));
        assert_eq!(actions(&r), vec!["skipped"; ok.len()]);
    }
}

#[test]
fn a_cache_synced_to_s3_and_back_is_its_ok_entries_byte_for_byte() {
    round_trip("s3://zoo");
}

#[test]
fn a_cache_synced_to_azure_and_back_is_its_ok_entries_byte_for_byte() {
    // Azurite, through object_store's Azure client: the code path of
    // S3's (one ObjectStore), another store. (A push to gs:// is not run
    // here: object_store's GCS client asks for an OAuth token for every
    // write, and fake-gcs-server takes no PUT of its XML API.)
    round_trip("az://zoo");
}

/// The servers' seed cache (every state, two 2.15 builds) pulled from
/// `root` into a directory: its 8 ok entries, byte for byte, each ok; the
/// 40 others passed over (the corrupt ones, which their listing cannot
/// tell from ok, once read); a second pull skips all. Returns the
/// destination's parent (kept alive) and the destination.
fn pulls_the_seed_cache(root: &str) -> (tempfile::TempDir, PathBuf) {
    let seed = super::servers().seed.join("cache");
    let ok: Vec<PathBuf> = states(&seed)
        .into_iter()
        .filter(|(_, st)| st == "ok")
        .map(|(p, _)| p)
        .collect();
    assert_eq!(ok.len(), 8);
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("cache");
    let o = run(&["cache", "sync", root, s(&dst), "--dry-run"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("8 entries, 17.4 KiB would be copied")
            && text.contains("40 not ok at the source"),
        "{root}: {text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = run(&["cache", "sync", root, s(&dst)]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{root}: {text}");
    assert!(
        text.contains("8 entries, 17.4 KiB copied") && text.contains("40 not ok at the source"),
        "{root}: {text}"
    );
    let got = states(&dst);
    assert_eq!(got.keys().cloned().collect::<Vec<_>>(), ok, "{root}");
    assert!(got.values().all(|st| st == "ok"), "{root}: {got:?}");
    assert_eq!(
        tree(&dst, true).len(),
        ok.len() * 3,
        "{root}: files but the ok entries'"
    );
    for rel in &ok {
        assert_eq!(
            tree(&dst.join(rel), true),
            tree(&seed.join(rel), true),
            "{rel:?}"
        );
    }
    let (code, r) = sync(root, s(&dst), &[]);
    assert_eq!(code, Some(0), "{r:?}");
    assert_eq!(actions(&r), vec!["skipped"; ok.len()], "{root}");
    (tmp, dst)
}

#[test]
fn a_cache_in_s3_gcs_or_azure_pulls_as_its_ok_entries_only() {
    // (A scheme in capitals names the same store.)
    for store in ["s3://zoo", "gs://zoo", "az://zoo", "S3://zoo"] {
        pulls_the_seed_cache(&format!("{store}/cache"));
    }
    // Azure's client takes no suffix range: the failed entries' logs and
    // vLLM's markers are read by their size (a status of the seed cache
    // there is the status on disk).
    let seed = super::servers().seed.join("cache");
    assert_eq!(bucket_states("az://zoo/cache"), {
        states(&seed)
            .into_iter()
            .map(|(p, st)| (p.display().to_string(), st))
            .collect::<BTreeMap<_, _>>()
    });
}

#[test]
fn a_hub_cache_pulls_as_its_ok_entries_and_a_second_pull_reads_only_the_listing() {
    let servers = super::servers();
    let hub_log = servers.seed.parent().unwrap().join("hub.log");
    let lines = || std::fs::read_to_string(&hub_log).unwrap_or_default();
    // However the repository is spelled.
    for root in ["hf://neff/zoo/cache", "hf://models/neff/zoo@main/cache/"] {
        let (_tmp, dst) = pulls_the_seed_cache(root);
        // Once more, the hub's requests logged: its listing's pages, and
        // no file of an entry skipped. (The corrupt entries' NEFFs, which
        // their listing cannot tell from ok ones, are read again: only the
        // NEFF says it is cut short.)
        let from = lines().len();
        let (code, r) = sync(root, s(&dst), &[]);
        assert_eq!((code, r.len()), (Some(0), 8));
        let sent: Vec<String> = lines()[from..].lines().map(String::from).collect();
        assert!(
            sent.iter().any(|l| l.contains("/tree/main/cache")),
            "{sent:?}"
        );
        let corrupt = |l: &str| l.contains("/MODULE_01") || l.contains("/MODULE_11");
        assert!(
            sent.iter()
                .filter(|l| l.contains("/resolve/") || l.contains("/cdn/"))
                .all(|l| corrupt(l)),
            "{sent:?}"
        );
        // A file of the destination changed: a conflict, found by the
        // listing's digest, untouched.
        let e = dst.join(format!(
            "neuronxcc-{}/MODULE_100+00000000",
            crate::cache::VERSIONS[1]
        ));
        std::fs::write(e.join("compile_flags.json"), b"[\"-O3\"]").unwrap();
        let (code, r) = sync(root, s(&dst), &["--glob", "MODULE_100+*"]);
        assert_eq!((code, actions(&r)), (Some(1), vec!["conflict"]), "{r:?}");
        assert!(r[0]["reason"]
            .as_str()
            .unwrap()
            .contains("compile_flags.json differs"));
        assert_eq!(
            std::fs::read(e.join("compile_flags.json")).unwrap(),
            b"[\"-O3\"]"
        );
    }
}

#[test]
fn a_second_sync_of_an_unchanged_cache_reads_no_object_body() {
    let servers = super::servers();
    let tmp = tempfile::tempdir().unwrap();
    let (wrapper, vllm) = caches(tmp.path());
    // Through the proxy (`ok`), which logs every request.
    let endpoint = format!("{}/s3/ok", servers.proxy);
    let log = &servers.proxy_log;
    let logged = || std::fs::read_to_string(log).unwrap_or_default();
    for (i, src) in [wrapper, vllm].iter().enumerate() {
        let url = prefix(&format!("nobody-{i}"));
        let name = url.strip_prefix("s3://zoo/").unwrap();
        let back = tmp.path().join(format!("back-{i}"));
        assert_eq!(sync(s(src), &url, &[]).0, Some(0));
        assert_eq!(sync(&url, s(&back), &[]).0, Some(0));
        for (from, to) in [(s(src), url.as_str()), (url.as_str(), s(&back))] {
            let before = settled(log);
            let args = ["cache", "sync", from, to, "--json"];
            let o = super::run_env(&args, &endpoint, &[]);
            assert_eq!(o.status.code(), Some(0));
            let r = ndjson(&o.stdout);
            assert!(
                !r.is_empty() && actions(&r).iter().all(|a| *a == "skipped"),
                "{r:?}"
            );
            settled(log);
            let sent: Vec<String> = logged()[before..]
                .lines()
                .filter(|l| l.contains(name))
                .map(String::from)
                .collect();
            assert!(
                !sent.is_empty(),
                "{from} -> {to}: nothing through the proxy"
            );
            for l in &sent {
                assert!(
                    l.starts_with("GET ") && l.contains("list-type=2"),
                    "{from} -> {to}: {l}"
                );
            }
        }
    }
}

#[test]
fn an_entry_found_not_ok_once_read_is_not_read_again_until_it_changes() {
    // A NEFF cut short under its marker: the listing calls the entry
    // finished, only reading it shows it is not. The first pull reads it
    // and passes it over; the second reads no object's body.
    let servers = super::servers();
    let tmp = tempfile::tempdir().unwrap();
    let (wrapper, _) = caches(tmp.path());
    let url = prefix("cut");
    let name = url.strip_prefix("s3://zoo/").unwrap();
    upload(&wrapper, &format!("{name}/"));
    let endpoint = format!("{}/s3/ok", servers.proxy);
    let xdg = tmp.path().join("xdg");
    let back = tmp.path().join("back");
    let log = &servers.proxy_log;
    let pull = || {
        let before = settled(log);
        let args = ["cache", "sync", &url, s(&back), "--json"];
        let o = super::run_env(&args, &endpoint, &[("XDG_CACHE_HOME", s(&xdg))]);
        assert_eq!(o.status.code(), Some(0));
        settled(log);
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let bodies = text[before..]
            .lines()
            .filter(|l| l.contains(name) && l.starts_with("GET ") && !l.contains("list-type=2"))
            .count();
        (ndjson(&o.stdout).len(), bodies)
    };
    let (copied, read) = pull();
    assert_eq!(copied, 9);
    assert!(read > 0);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert_eq!(pull(), (9, 0), "the second pull read a body");
    // The cut NEFF whole again under its marker: read, and copied.
    let v = crate::cache::VERSIONS[0];
    let e = format!("neuronxcc-{v}/MODULE_010+00000000");
    let fixed = tmp.path().join("fixed");
    put(
        &fixed.join(&e),
        "model.neff",
        &std::fs::read(wrapper.join(format!("neuronxcc-{v}/MODULE_000+00000000/model.neff")))
            .unwrap(),
    );
    upload(&fixed, &format!("{name}/"));
    let (copied, read) = pull();
    assert_eq!(copied, 10);
    assert!(read > 0);
}

#[test]
fn in_a_bucket_nothing_is_overwritten_and_a_killed_sync_is_finished() {
    let tmp = tempfile::tempdir().unwrap();
    let (wrapper, _) = caches(tmp.path());
    let url = prefix("conflict");
    let (code, _) = sync(s(&wrapper), &url, &["--glob", "MODULE_9*"]);
    assert_eq!(code, Some(0));
    // Another cache whose entry of that name differs in one file.
    let other = tmp.path().join("other");
    let e = format!("neuronxcc-{}/MODULE_9+9", "2.12.54.0+f631c2365");
    for (rel, bytes) in tree(&wrapper.join(&e), false) {
        put(&other.join(&e), s(&rel), &bytes);
    }
    put(&other.join(&e), "compile_flags.txt", b"-O3");
    let (code, r) = sync(s(&other), &url, &[]);
    assert_eq!(code, Some(1), "{r:?}");
    assert_eq!(actions(&r), vec!["conflict"]);
    assert!(r[0]["reason"]
        .as_str()
        .unwrap()
        .contains("compile_flags.txt differs"));
    // Untouched: what comes back is the first cache's entry.
    let back = tmp.path().join("back");
    assert_eq!(sync(&url, s(&back), &[]).0, Some(0));
    assert_eq!(tree(&back.join(&e), true), tree(&wrapper.join(&e), false));
    // A sync killed before the marker: part of an entry under its keys,
    // no model.done. Status says so; the next sync puts the rest.
    let v = crate::cache::VERSIONS[1];
    let m = format!("neuronxcc-{v}/MODULE_100+00000000");
    let part = tmp.path().join("part");
    put(
        &part.join(&m),
        "model.neff",
        &std::fs::read(wrapper.join(&m).join("model.neff")).unwrap(),
    );
    let killed = prefix("killed");
    upload(
        &part,
        &format!("{}/", killed.strip_prefix("s3://zoo/").unwrap()),
    );
    assert_eq!(bucket_states(&killed)[&m], "incomplete");
    // One whose part is not the source's is a conflict, untouched.
    let m2 = format!("neuronxcc-{v}/MODULE_101+00000001");
    put(&part.join(&m2), "compile_flags.json", b"[\"-O3\"]");
    std::fs::remove_dir_all(part.join(&m)).unwrap();
    upload(
        &part,
        &format!("{}/", killed.strip_prefix("s3://zoo/").unwrap()),
    );
    let (code, r) = sync(s(&wrapper), &killed, &["--version", v]);
    assert_eq!(code, Some(1), "{r:?}");
    let by: BTreeMap<&str, &str> = r
        .iter()
        .map(|x| {
            let d = x["dest"].as_str().unwrap();
            (&d[killed.len() + 1..], x["action"].as_str().unwrap())
        })
        .collect();
    assert_eq!(by[m.as_str()], "copied", "{r:?}");
    assert_eq!(by[m2.as_str()], "conflict", "{r:?}");
    let st = bucket_states(&killed);
    assert_eq!(st[&m], "ok");
    assert_eq!(st[&m2], "empty");
    assert_eq!(st.values().filter(|s| *s == "ok").count(), 3);
}

#[test]
fn a_cache_in_one_store_or_the_hub_syncs_into_another_store() {
    let tmp = tempfile::tempdir().unwrap();
    let (wrapper, _) = caches(tmp.path());
    let ok = states(&wrapper)
        .into_iter()
        .filter(|(_, st)| st == "ok")
        .count();
    let pid = std::process::id();
    let from = prefix("store-to-store");
    assert_eq!(sync(s(&wrapper), &from, &[]).0, Some(0));
    // S3 into Azure, and the hub's cache into S3: the ok entries only (the
    // hub's corrupt ones read, and passed over), each ok there.
    for (src, dst, n) in [
        (from.clone(), format!("az://zoo/sync-{pid}-from-s3"), ok),
        (
            "hf://neff/zoo/cache".to_string(),
            format!("s3://zoo/sync-{pid}-from-hub"),
            8,
        ),
    ] {
        let (code, r) = sync(&src, &dst, &[]);
        assert_eq!(code, Some(0), "{src} -> {dst}: {r:?}");
        assert_eq!(actions(&r), vec!["copied"; n], "{src} -> {dst}");
        let got = bucket_states(&dst);
        assert_eq!(got.len(), n, "{dst}: {got:?}");
        assert!(got.values().all(|st| st == "ok"), "{dst}: {got:?}");
        let (code, r) = sync(&src, &dst, &[]);
        assert_eq!((code, actions(&r)), (Some(0), vec!["skipped"; n]));
    }
}

#[test]
fn a_sync_on_a_terminal_shows_what_it_syncs_and_its_requests() {
    // util-linux's `script` gives neff a terminal for stderr; what it drew
    // comes back on our stdout. The bucket 50 ms away, through the proxy.
    let servers = super::servers();
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("cache");
    let command = format!(
        "{} cache sync s3://zoo/cache {} > /dev/null",
        env!("CARGO_BIN_EXE_neff"),
        s(&dst)
    );
    let endpoint = format!("{}/s3/delay50", servers.proxy);
    let drawn = super::on_terminal(&command, &endpoint);
    let lines: Vec<&str> = drawn
        .lines()
        .filter(|l| l.contains(&format!("syncing s3://zoo/cache into {}", s(&dst))))
        .collect();
    assert!(
        lines.iter().any(|l| l.contains(" requests, ")),
        "no progress line: {drawn}"
    );
    assert_eq!(states(&dst).len(), 8);
}

#[test]
fn a_reader_polling_the_bucket_during_a_push_never_sees_a_finished_entry_without_its_neff() {
    // Six entries of 4 MiB NEFFs pushed one at a time to a bucket 25 ms
    // away; `cache status` of the prefix meanwhile, again and again.
    let servers = super::servers();
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    big_cache(&src, 6, 4);
    let url = prefix("polled");
    let endpoint = format!("{}/s3/delay25", servers.proxy);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let seen = std::thread::scope(|sc| {
        let poll = sc.spawn(|| {
            let mut seen = BTreeMap::<String, usize>::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let o = run(&["cache", "status", &url, "--json"]);
                for r in ndjson(&o.stdout) {
                    *seen
                        .entry(r["state"].as_str().unwrap().to_string())
                        .or_default() += 1;
                }
            }
            seen
        });
        let args = ["cache", "sync", s(&src), &url, "--io-depth", "1", "--json"];
        let o = super::run_env(&args, &endpoint, &[]);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        poll.join().unwrap()
    });
    // Half there: no NEFF yet (`empty`) or no marker yet (`incomplete`);
    // never a marker without its NEFF, nor a NEFF cut short.
    assert!(
        seen.keys()
            .all(|st| ["ok", "empty", "incomplete"].contains(&st.as_str())),
        "{seen:?}"
    );
    assert!(seen.get("ok").is_some_and(|n| *n > 0), "{seen:?}");
    let got = bucket_states(&url);
    assert_eq!(got.len(), 6);
    assert!(got.values().all(|st| st == "ok"), "{got:?}");
}

#[test]
fn two_hosts_pushing_one_cache_at_once_both_end_well_and_the_bucket_holds_it_once() {
    // Two syncs of the same cache into one prefix at once, each listing it
    // empty, 25 ms away: their puts meet key by key. Neither overwrites;
    // what the other put is the same bytes, so both finish (exit 0).
    let servers = super::servers();
    let tmp = tempfile::tempdir().unwrap();
    let (wrapper, _) = caches(tmp.path());
    let url = prefix("two-hosts");
    let endpoint = format!("{}/s3/delay25", servers.proxy);
    let outs: Vec<_> = std::thread::scope(|sc| {
        let push = || {
            let args = [
                "cache",
                "sync",
                s(&wrapper),
                &url,
                "--io-depth",
                "2",
                "--json",
            ];
            super::run_env(&args, &endpoint, &[])
        };
        let (a, b) = (sc.spawn(push), sc.spawn(push));
        vec![a.join().unwrap(), b.join().unwrap()]
    });
    for o in &outs {
        let r = ndjson(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{r:?}");
        assert!(
            actions(&r)
                .iter()
                .all(|a| ["copied", "skipped"].contains(a)),
            "{r:?}"
        );
    }
    let back = tmp.path().join("back");
    let (code, r) = sync(&url, s(&back), &[]);
    assert_eq!(code, Some(0), "{r:?}");
    for (rel, st) in states(&wrapper) {
        assert_eq!(st == "ok", back.join(&rel).exists(), "{rel:?}");
        if st == "ok" {
            assert_eq!(
                tree(&back.join(&rel), true),
                tree(&wrapper.join(&rel), false)
            );
        }
    }
}
