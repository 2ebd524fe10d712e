//! `neff cache sync` between a directory and an S3 prefix (moto_server):
//! every ok entry put with its marker last and read back byte for byte;
//! nothing in the bucket overwritten; the objects a killed sync left,
//! finished by the next one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{ndjson, run, upload};
use crate::cache_sync::{caches, put, states, tree};

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

fn actions(records: &[Value]) -> Vec<&str> {
    records
        .iter()
        .map(|r| r["action"].as_str().unwrap())
        .collect()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_cache_synced_to_s3_and_back_is_its_ok_entries_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let (wrapper, vllm) = caches(tmp.path());
    for (i, src) in [wrapper, vllm].iter().enumerate() {
        let url = prefix(&format!("round-{i}"));
        let ok: Vec<PathBuf> = states(src)
            .into_iter()
            .filter(|(_, st)| st == "ok")
            .map(|(p, _)| p)
            .collect();
        // A dry run puts nothing.
        let (code, r) = sync(s(src), &url, &["--dry-run"]);
        assert_eq!(code, Some(0));
        assert!(actions(&r).iter().all(|a| *a == "copy"), "{r:?}");
        assert!(bucket_states(&url).is_empty());
        let (code, r) = sync(s(src), &url, &[]);
        assert_eq!(code, Some(0), "{r:?}");
        assert_eq!(actions(&r), vec!["copied"; ok.len()]);
        let got = bucket_states(&url);
        let want: Vec<String> = ok.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(got.keys().cloned().collect::<Vec<_>>(), want);
        assert!(got.values().all(|st| st == "ok"), "{got:?}");
        // Again: the same entries are there, nothing is put.
        let (code, r) = sync(s(src), &url, &[]);
        assert_eq!(code, Some(0));
        assert_eq!(actions(&r), vec!["skipped"; ok.len()]);
        // Back to a directory: every ok entry, byte for byte, locks left
        // out.
        let back = tmp.path().join(format!("back-{i}"));
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
