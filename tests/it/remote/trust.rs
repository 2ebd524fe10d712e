//! Trust at the edges (issue 49), over the servers and fault proxy of
//! `remote.rs`: no secret of a URL (a presigned query, a password) in any
//! output of any command or in a catalogue; a failed request one line in
//! the project's words, exit 3; an indexed scan of a bucket prefix that
//! retires only what it looked for; plain HTTP(S) objects catalogued.

use std::path::Path;
use std::process::Output;

use super::{ndjson, run, run_env, servers};
use crate::common::neffs;

const REL: &str = "acc/cc-replica-groups-gz.neff";

/// The secret values the URLs below carry (none may be printed).
const SECRETS: [&str; 5] = ["SIGSECRET", "CREDSECRET", "USERSECRET", "PWSECRET", "=sig"];

/// A port nothing listens on.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// `http://host:port` of the proxy, and the proxy's URL with a user and
/// password in it.
fn with_userinfo(base: &str) -> String {
    base.replacen("://", "://USERSECRET:PWSECRET@", 1)
}

/// (name, URL, the exit code every command on it has) for each fault.
fn urls() -> Vec<(&'static str, String, i32)> {
    let p = &servers().proxy;
    let q = "X-Amz-Credential=CREDSECRET&X-Amz-Signature=SIGSECRET&X-Amz-Expires=60";
    vec![
        // Read: the proxy's `presigned` mode wants exactly this signature.
        (
            "presigned",
            format!("{p}/http/presigned/{REL}?X-Amz-Credential=CREDSECRET&X-Amz-Signature=sig"),
            0,
        ),
        ("userinfo", format!("{}/http/ok/{REL}", with_userinfo(p)), 0),
        ("403", format!("{p}/http/403/{REL}?{q}"), 3),
        ("404", format!("{p}/http/ok/no/such.neff?{q}"), 3),
        ("reset", format!("{p}/http/reset/{REL}?{q}"), 3),
        (
            "refused",
            format!(
                "http://USERSECRET:PWSECRET@127.0.0.1:{}/x.neff?{q}",
                closed_port()
            ),
            3,
        ),
    ]
}

const FEW: [(&str, &str); 2] = [("NEFF_REMOTE_RETRIES", "1"), ("NEFF_REMOTE_TIMEOUT", "5")];

fn secrets_in(what: &str, bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    SECRETS
        .iter()
        .filter(|s| text.contains(*s))
        .map(|s| format!("{what} holds {s}: {text}"))
        .collect()
}

#[test]
fn no_secret_of_a_url_reaches_any_output_of_any_command_or_the_catalogue() {
    let s = servers();
    let local = s.seed.join(REL);
    let local = local.to_str().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut leaks = Vec::new();
    for (name, url, code) in urls() {
        let db = tmp.path().join(format!("{name}.db"));
        let db = db.to_str().unwrap();
        let out = tmp.path().join(format!("{name}.out"));
        let out = out.to_str().unwrap();
        let cache = s.seed.join("cache");
        let cache = cache.to_str().unwrap();
        let commands: Vec<Vec<&str>> = vec![
            vec!["ls", &url],
            vec!["ls", "--format", "csv", &url],
            vec!["cat", &url, "def.json"],
            vec!["get", &url, "cc-world-size"],
            vec!["info", &url],
            vec!["info", "--json", &url],
            vec!["verify", &url],
            vec!["mem", &url],
            vec!["mem", "--json", &url],
            vec!["diff", &url, local],
            vec!["optimize", &url, "-o", out],
            vec!["unpack", &url, "-o", out],
            vec!["scan", "--no-progress", &url],
            vec!["scan", "--no-progress", "--format", "csv", &url],
            vec!["scan", "--no-progress", "--json", "--index", db, &url],
            vec!["cache", "status", &url],
            vec!["cache", "prune", "--failed", &url],
            vec!["cache", "sync", &url, out],
            vec!["cache", "sync", "--json", "--dry-run", cache, &url],
            vec!["cache", "explain", &url, "--flags", ""],
        ];
        for args in commands {
            // Every request logged too (-vv), and the client's own log lines.
            let mut all = vec!["-vv"];
            all.extend_from_slice(&args);
            let o = run_env(&all, &s.s3, &[FEW[0], FEW[1], ("RUST_LOG", "debug")]);
            leaks.extend(secrets_in(&format!("{name} {args:?} stdout"), &o.stdout));
            leaks.extend(secrets_in(&format!("{name} {args:?} stderr"), &o.stderr));
            let err = String::from_utf8_lossy(&o.stderr);
            if code == 3 && !matches!(args[0], "scan" | "cache") {
                assert_eq!(o.status.code(), Some(3), "{name} {args:?}: {err}");
            }
            assert!(!err.contains("panicked"), "{name} {args:?}: {err}");
        }
        for suffix in ["", "-wal"] {
            if let Ok(bytes) = std::fs::read(format!("{db}{suffix}")) {
                leaks.extend(secrets_in(&format!("{name} catalogue{suffix}"), &bytes));
            }
        }
    }
    assert!(leaks.is_empty(), "{}", leaks.join("\n"));
}

#[test]
fn a_failed_request_is_one_line_in_the_projects_words_and_exit_3() {
    let p = &servers().proxy;
    let port = closed_port();
    let cases = [
        (
            format!("http://127.0.0.1:{port}/x.neff"),
            "could not connect: connection refused (2 tries in ",
        ),
        (
            format!("{p}/http/403/{REL}"),
            "access denied (403, 1 try in ",
        ),
        (
            format!("{p}/http/ok/no/such.neff"),
            "no such object (or no such bucket) (404, 1 try in ",
        ),
        (
            format!("{p}/http/503/{REL}"),
            "the server answered 503 Service Unavailable (2 tries in ",
        ),
    ];
    for (url, want) in cases {
        let o = run_env(&["ls", &url], &servers().s3, &FEW);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{url}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with(&format!("neff: {url}: {want}")), "{err}");
        assert!(err.trim_end().ends_with(" s)"), "{err}");
        for internal in [
            "Generic",
            "max_retries",
            "retry_timeout",
            "os error",
            "error sending request",
            "Error performing",
        ] {
            assert!(!err.contains(internal), "{internal} in {err}");
        }
    }
    // A stall: a timeout, I/O too.
    let url = format!("{p}/http/stall/{REL}");
    let o = run_env(
        &["ls", &url],
        &servers().s3,
        &[("NEFF_REMOTE_RETRIES", "0"), ("NEFF_REMOTE_TIMEOUT", "1")],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.starts_with(&format!("neff: {url}: timed out (no answer within 1 s")),
        "{err}"
    );
}

/// Uploads `files` (relative names) of fixtures under `prefix` of the
/// bucket `zoo`.
fn upload(prefix: &str, files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let src = neffs("fixtures/acc");
    for (i, rel) in files.iter().enumerate() {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::copy(&src[i], p).unwrap();
    }
    super::upload(dir.path(), prefix);
    dir
}

/// The catalogue's keys below `base`, sorted.
fn keys(db: &Path, base: &str) -> Vec<String> {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut st = c.prepare("SELECT key FROM neffs ORDER BY key").unwrap();
    let rows = st.query_map([], |r| r.get::<_, String>(0)).unwrap();
    rows.map(|k| k.unwrap().trim_start_matches(base).to_string())
        .collect()
}

/// A row for an object that is not in the bucket (gone since it was
/// scanned): a copy of the row `from` under the key `key`.
fn fake_row(db: &Path, from: &str, key: &str) {
    let c = rusqlite::Connection::open(db).unwrap();
    let cols = neff::catalog::NEFF_COLUMNS[1..].join(", ");
    c.execute(
        &format!("INSERT INTO neffs (key, {cols}) SELECT ?1, {cols} FROM neffs WHERE key = ?2"),
        [key, from],
    )
    .unwrap();
}

#[test]
fn an_indexed_scan_of_a_prefix_retires_only_the_rows_it_looked_for() {
    let base = "s3://zoo/retire/";
    let _up = upload(
        "retire/",
        &["a1.neff", "d/b1.neff", "d/e/c1.neff", "old/x.neff"],
    );
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("retire.db");
    let dbs = db.to_str().unwrap();
    let scan = |args: &[&str]| -> Output {
        let mut all = vec!["scan", "--json", "--no-progress", "--index", dbs];
        all.extend_from_slice(args);
        let o = run(&all);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        o
    };
    scan(&[base]);
    let all = ["a1.neff", "d/b1.neff", "d/e/c1.neff", "old/x.neff"];
    assert_eq!(keys(&db, base), all);
    // A shard looks for every object listed (its rows are the other
    // shards' too), and keeps them.
    for shard in ["1/2", "2/2"] {
        scan(&["--shard", shard, base]);
        assert_eq!(keys(&db, base), all, "--shard {shard}");
    }
    // Rows of objects gone since: one at depth 1, one at depth 3.
    fake_row(&db, &format!("{base}a1.neff"), &format!("{base}gone.neff"));
    fake_row(
        &db,
        &format!("{base}a1.neff"),
        &format!("{base}d/e/gone.neff"),
    );
    let with_gone = [
        "a1.neff",
        "d/b1.neff",
        "d/e/c1.neff",
        "d/e/gone.neff",
        "gone.neff",
        "old/x.neff",
    ];
    // Globs apply to the keys below the prefix, as below a local root.
    let o = scan(&["-g", "a1.neff", base]);
    assert_eq!(ndjson(&o.stdout).len(), 1);
    assert_eq!(keys(&db, base), with_gone, "-g a1.neff");
    scan(&["-g", "!d/", "-g", "!gone.neff", base]);
    assert_eq!(keys(&db, base), with_gone, "-g '!d/'");
    let list = tmp.path().join("list");
    std::fs::write(&list, format!("{base}a1.neff\n")).unwrap();
    scan(&["--files-from", list.to_str().unwrap()]);
    assert_eq!(keys(&db, base), with_gone, "--files-from");
    // Depth 1 looks for gone.neff (retired), not for d/e/gone.neff.
    let o = scan(&["--max-depth", "1", base]);
    assert_eq!(ndjson(&o.stdout).len(), 1);
    assert_eq!(
        keys(&db, base),
        [
            "a1.neff",
            "d/b1.neff",
            "d/e/c1.neff",
            "d/e/gone.neff",
            "old/x.neff"
        ]
    );
    // A listing refused: nothing retired; the whole prefix: the rest.
    let denied = run_env(
        &["scan", "--json", "--no-progress", "--index", dbs, base],
        &format!("{}/s3/403", servers().proxy),
        &[],
    );
    assert_eq!(denied.status.code(), Some(3));
    assert_eq!(keys(&db, base).len(), 5);
    scan(&[base]);
    assert_eq!(keys(&db, base), all);
}

#[test]
fn an_http_object_is_catalogued_by_its_url_without_query_and_answered_from_its_row() {
    let s = servers();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("http.db");
    let dbs = db.to_str().unwrap();
    let rel = format!("http/presigned/{REL}");
    let url = format!(
        "{}/{rel}?X-Amz-Credential=CREDSECRET&X-Amz-Signature=sig",
        s.proxy
    );
    let scan = || run(&["scan", "--json", "--no-progress", "--index", dbs, &url]);
    let cold = scan();
    let err = String::from_utf8_lossy(&cold.stderr);
    assert!(cold.status.success(), "{err}");
    assert!(err.contains(", 0 from the index"), "{err}");
    let c = rusqlite::Connection::open(&db).unwrap();
    let (key, path): (String, String) = c
        .query_row("SELECT key, path FROM neffs", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(key, format!("{}/{rel}", s.proxy));
    assert_eq!(
        path,
        format!(
            "{}/{rel}?X-Amz-Credential=<redacted>&X-Amz-Signature=<redacted>",
            s.proxy
        )
    );
    // Warm: answered from the row, after one request for the version.
    let before = std::fs::read_to_string(&s.proxy_log).unwrap().len();
    let warm = scan();
    let err = String::from_utf8_lossy(&warm.stderr);
    assert!(err.contains(", 1 from the index"), "{err}");
    assert_eq!(ndjson(&warm.stdout), ndjson(&cold.stdout));
    let log = std::fs::read_to_string(&s.proxy_log).unwrap();
    let asked = log[before..]
        .lines()
        .filter(|l| l.contains(&format!("/{rel}?")))
        .count();
    assert_eq!(asked, 1, "{}", &log[before..]);
    // Plain http: the same, keyed by its URL.
    let plain = format!("{}/{REL}", s.http);
    run(&["scan", "--json", "--no-progress", "--index", dbs, &plain]);
    let o = run(&["scan", "--json", "--no-progress", "--index", dbs, &plain]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(", 1 from the index"), "{err}");
}
