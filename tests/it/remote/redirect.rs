//! No credential handed on (issue 56): what a redirect to another origin
//! receives, usage errors that quote a URL, and catalogue rows of URLs
//! that differ in their query. The servers here are tiny ones of the
//! test's own, on loopback, that record every request they receive (its
//! line and headers) and answer as each case needs; `neff` reaches them
//! through its real client.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::Output;
use std::sync::{Arc, Mutex};

use crate::common::root;

/// Runs `neff` with S3's environment pointing at `endpoint` (test keys,
/// plain HTTP, few retries) and `extra`.
fn run_env(args: &[&str], endpoint: &str, extra: &[(&str, &str)]) -> Output {
    let mut cmd = super::s3_command(args, endpoint);
    cmd.env("NEFF_REMOTE_RETRIES", "1")
        .env_remove("AWS_SESSION_TOKEN");
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.output().expect("run neff")
}

/// A request as a server received it.
#[derive(Debug, Clone)]
struct Req {
    /// `GET /path?query HTTP/1.1`
    line: String,
    /// Names in lower case.
    headers: Vec<(String, String)>,
}

impl Req {
    fn target(&self) -> &str {
        self.line.split(' ').nth(1).unwrap_or("")
    }
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

type Seen = Arc<Mutex<Vec<Req>>>;

/// A server on `host` (any free port) answering each request with the
/// bytes `answer` gives (a whole response; the connection is closed
/// after it), every request recorded in order.
fn serve(host: &str, answer: impl Fn(&Req) -> Vec<u8> + Send + Sync + 'static) -> (String, Seen) {
    let listener = std::net::TcpListener::bind((host, 0)).unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let answer = Arc::new(answer);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let (log, answer) = (log.clone(), answer.clone());
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let mut headers = Vec::new();
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                        break;
                    }
                    if let Some((k, v)) = h.split_once(':') {
                        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
                    }
                }
                let req = Req {
                    line: line.trim().to_string(),
                    headers,
                };
                log.lock().unwrap().push(req.clone());
                let _ = conn.write_all(&answer(&req));
            });
        }
    });
    (base, seen)
}

/// A redirect with `status` to `location`.
fn redirect(status: &str, location: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .into_bytes()
}

/// `bytes` as a server of files answers `req`: its `Range` honoured,
/// `validators` among the headers (an ETag, a Last-Modified, or none).
fn file(req: &Req, bytes: &[u8], validators: &str) -> Vec<u8> {
    let n = bytes.len();
    let range = req
        .header("range")
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.split_once('-'))
        .map(|(a, b)| {
            let a: usize = a.parse().unwrap();
            let b = b.parse::<usize>().map_or(n - 1, |b| b.min(n - 1));
            (a, b)
        });
    let (status, body, extra) = match range {
        Some((a, b)) if a < n => (
            "206 Partial Content",
            &bytes[a..=b],
            format!("Content-Range: bytes {a}-{b}/{n}\r\n"),
        ),
        Some(_) => ("416 Range Not Satisfiable", &[][..], String::new()),
        None => ("200 OK", bytes, String::new()),
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\n{extra}{validators}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !req.line.starts_with("HEAD ") {
        out.extend_from_slice(body);
    }
    out
}

const REL: &str = "acc/cc-replica-groups-gz.neff";
const VALIDATORS: &str = "ETag: \"v1\"\r\nLast-Modified: Mon, 07 Dec 2026 00:00:00 GMT\r\n";

/// What each secret of the requests below is called.
const SECRETS: [&str; 4] = ["SIGSECRET", "CREDSECRET", "TOKSECRET", "PWSECRET"];

/// Why `req`, received by another origin than the one asked, carries
/// what it must not: a header that authorises, signs or names the
/// original, or a query.
fn handed_on(req: &Req) -> Vec<String> {
    let mut bad: Vec<String> = req
        .headers
        .iter()
        .filter(|(k, _)| {
            k == "authorization" || k == "referer" || k == "cookie" || k.starts_with("x-amz-")
        })
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    if req.target().contains('?') {
        bad.push(req.line.clone());
    }
    let all = format!("{req:?}");
    bad.extend(
        SECRETS
            .iter()
            .filter(|s| all.contains(*s))
            .map(|s| s.to_string()),
    );
    bad
}

/// The fixture every read below serves.
fn fixture() -> PathBuf {
    root().join("fixtures").join(REL)
}

/// The local answer of `neff get FILE cc-world-size` for the fixture.
fn local_cc() -> Vec<u8> {
    crate::common::neff_ok(&["get", fixture().to_str().unwrap(), "cc-world-size"])
}

/// A server of the fixture at any path, on `host`.
fn seed_server(host: &str) -> (String, Seen) {
    let bytes = std::fs::read(fixture()).unwrap();
    serve(host, move |req| file(req, &bytes, VALIDATORS))
}

#[test]
fn a_presigned_url_redirected_to_another_origin_hands_it_no_signature_no_referer() {
    let (target, got) = seed_server("127.0.0.2");
    for status in ["302 Found", "307 Temporary Redirect"] {
        let t = target.clone();
        let (origin, asked) = serve("127.0.0.1", move |req| {
            let path = req.target().split('?').next().unwrap().to_string();
            redirect(status, &format!("{t}{path}"))
        });
        let url = format!(
            "{}/{REL}?X-Amz-Credential=CREDSECRET&X-Amz-Security-Token=TOKSECRET\
             &X-Amz-Signature=SIGSECRET",
            origin.replacen("://", "://user:PWSECRET@", 1)
        );
        let o = run_env(&["get", &url, "cc-world-size"], "http://127.0.0.1:9", &[]);
        assert!(
            o.status.success(),
            "{status}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(o.stdout, local_cc(), "{status}");
        // The origin was asked with the URL as given; the other origin
        // got none of it.
        assert!(asked
            .lock()
            .unwrap()
            .iter()
            .all(|r| r.target().contains("SIGSECRET")));
        let got = got.lock().unwrap();
        assert!(!got.is_empty(), "{status}: the redirect was not followed");
        for r in got.iter() {
            assert_eq!(handed_on(r), Vec::<String>::new(), "{status}: {r:?}");
        }
    }
}

#[test]
fn an_s3_read_redirected_to_another_origin_hands_it_no_signature_or_token() {
    let (target, got) = seed_server("127.0.0.2");
    let (endpoint, asked) = serve("127.0.0.1", move |req| {
        let path = req.target().split('?').next().unwrap().to_string();
        redirect("307 Temporary Redirect", &format!("{target}{path}"))
    });
    let token = [("AWS_SESSION_TOKEN", "TOKSECRET")];
    let o = run_env(
        &["get", "s3://zoo/acc/x.neff", "cc-world-size"],
        &endpoint,
        &token,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.stdout, local_cc());
    // The endpoint was asked signed, with the session token...
    let asked = asked.lock().unwrap();
    assert!(asked.iter().all(|r| r.header("authorization").is_some()
        && r.header("x-amz-security-token") == Some("TOKSECRET")));
    // ... and the other origin got no header of the signature.
    let got = got.lock().unwrap();
    assert!(!got.is_empty());
    for r in got.iter() {
        assert_eq!(handed_on(r), Vec::<String>::new(), "{r:?}");
    }
}

#[test]
fn a_redirect_on_the_same_origin_keeps_every_header_and_the_read_works() {
    let bytes = std::fs::read(fixture()).unwrap();
    let (endpoint, seen) = serve("127.0.0.1", move |req| {
        if req.target().starts_with("/moved/") {
            file(req, &bytes, VALIDATORS)
        } else {
            redirect("307 Temporary Redirect", &format!("/moved{}", req.target()))
        }
    });
    let token = [("AWS_SESSION_TOKEN", "TOKSECRET")];
    let o = run_env(
        &["get", "s3://zoo/acc/x.neff", "cc-world-size"],
        &endpoint,
        &token,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.stdout, local_cc());
    let moved: Vec<Req> = seen.lock().unwrap().clone();
    let moved: Vec<&Req> = moved
        .iter()
        .filter(|r| r.target().starts_with("/moved"))
        .collect();
    assert!(!moved.is_empty());
    for r in moved {
        assert!(r.header("authorization").is_some(), "{r:?}");
        assert_eq!(r.header("x-amz-security-token"), Some("TOKSECRET"), "{r:?}");
    }
    // A presigned URL too: its query goes where the server sends it.
    let url = format!("{endpoint}/dl/{REL}?X-Amz-Signature=SIGSECRET");
    let o = run_env(&["get", &url, "cc-world-size"], &endpoint, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.stdout, local_cc());
}

#[test]
fn a_usage_error_never_prints_a_urls_password_or_signature() {
    let url = "https://user:PWSECRET@h.example/x.neff?X-Amz-Credential=CREDSECRET\
               &X-Amz-Signature=SIGSECRET";
    for args in [
        vec!["get", "arch", url],
        vec!["get", url, "no-such-accessor"],
        vec!["get", url],
        vec!["ls", url, url],
        vec!["scan", "--shard", url, url],
        vec!["info", "--no-such-flag", url],
    ] {
        let o = crate::common::neff(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.is_empty(), "{args:?}");
        for s in SECRETS {
            assert!(!err.contains(s), "{args:?} printed {s}: {err}");
        }
    }
    // A help text still prints (to stdout, exit 0).
    let o = crate::common::neff(&["get", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("ACCESSOR"));
}

/// Two raw NEFFs of one size whose `cc-world-size` differ (4 and 8).
fn two_versions() -> [Vec<u8>; 2] {
    use neff::pack::{pack, PackEntry, PackOptions};
    let make = |groups: &str| {
        let def = format!(r#"{{"replica_groups":[[{groups}]],"var":{{}}}}"#);
        let entries = vec![
            PackEntry::file("neff.json", br#"{"tvm":[]}"#.to_vec(), 0),
            PackEntry::file("sg00/def.json", def.into_bytes(), 0),
        ];
        pack(
            &entries,
            &PackOptions::default().no_gzip(true).mtime(Some(0)),
        )
        .unwrap()
    };
    let v = [make("[0,1,2,3]"), make("[0,1,2,3,4,5,6,7]")];
    assert_eq!(v[0].len(), v[1].len());
    v
}

/// `neff scan --index db --json url`'s `cc_world_size`.
fn scanned_cc(db: &std::path::Path, url: &str) -> serde_json::Value {
    let o = run_env(
        &["scan", "--index", db.to_str().unwrap(), "--json", url],
        "http://127.0.0.1:9",
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let recs = super::ndjson(&o.stdout);
    assert_eq!(recs.len(), 1, "{recs:?}");
    recs[0]["cc_world_size"].clone()
}

fn row_keys(db: &std::path::Path) -> Vec<String> {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut st = c.prepare("SELECT key FROM neffs ORDER BY key").unwrap();
    let rows = st.query_map([], |r| r.get::<_, String>(0)).unwrap();
    rows.map(Result::unwrap).collect()
}

#[test]
fn urls_differing_in_a_selector_get_rows_of_their_own_and_a_signature_is_no_part_of_a_key() {
    let [four, eight] = two_versions();
    // `?versionId=a|b` chooses the version; `/etag/` answers with an
    // ETag, `/bare/` with no validator at all; `swap` serves `a` as `b`.
    let swap = Arc::new(Mutex::new(false));
    let swapped = swap.clone();
    let versions: HashMap<&str, Vec<u8>> = HashMap::from([("a", four), ("b", eight)]);
    let (base, seen) = serve("127.0.0.1", move |req| {
        let mut v = if req.target().contains("versionId=b") {
            "b"
        } else {
            "a"
        };
        if *swapped.lock().unwrap() {
            v = "b";
        }
        let validators = if req.target().starts_with("/etag/") {
            format!("ETag: \"{v}\"\r\n")
        } else {
            String::new()
        };
        file(req, &versions[v], &validators)
    });
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("zoo.db");
    let bare = |v: &str| format!("{base}/bare/x.neff?versionId={v}");
    // Same size, no validator: each its own answer, and no row to trust.
    assert_eq!(scanned_cc(&db, &bare("a")), 4);
    assert_eq!(scanned_cc(&db, &bare("b")), 8);
    assert_eq!(row_keys(&db), Vec::<String>::new());
    // Changed since (same size): the scan says so.
    *swap.lock().unwrap() = true;
    assert_eq!(scanned_cc(&db, &bare("a")), 8);
    *swap.lock().unwrap() = false;
    // With an ETag: a row per version, keyed with its selector, not its
    // signature...
    let signed = |v: &str, sig: &str| {
        format!(
            "{base}/etag/x.neff?versionId={v}&X-Amz-Credential=CREDSECRET&X-Amz-Date={sig}\
             &X-Amz-Expires=60&X-Amz-Security-Token=TOKSECRET&X-Amz-Signature={sig}SIGSECRET"
        )
    };
    assert_eq!(scanned_cc(&db, &signed("a", "1")), 4);
    assert_eq!(scanned_cc(&db, &signed("b", "1")), 8);
    let keys = row_keys(&db);
    let key = |v: &str| format!("{base}/etag/x.neff?versionId={v}");
    assert_eq!(keys, [key("a"), key("b")]);
    // ... so a URL signed again is answered from its row: one request,
    // the first byte, for the ETag.
    let before = seen.lock().unwrap().len();
    assert_eq!(scanned_cc(&db, &signed("a", "2")), 4);
    let again: Vec<Req> = seen.lock().unwrap()[before..].to_vec();
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0].header("range"), Some("bytes=0-0"));
    assert_eq!(row_keys(&db), keys);
    let dump = format!("{keys:?}");
    for s in SECRETS {
        assert!(!dump.contains(s), "{dump}");
    }
}
