//! NEFFs read from real servers on localhost (issue 23): moto's S3 server
//! and nginx, started by `scripts/servers` (which fails, and so fails
//! these tests, when they cannot start), and faults injected by
//! `tests/helpers/fault_proxy.py` in front of them. Every answer is compared with
//! the same NEFF read from disk.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::{neffs, noise, root};

/// Secrets in URLs, client failures in words, catalogue rows (issue 49).
mod trust;

/// No credential handed on by a redirect, a usage error or a catalogue
/// key (issue 56).
mod redirect;

/// `neff cache sync` to an S3 prefix and back (issue 57).
mod sync;

struct Servers {
    s3: String,
    http: String,
    proxy: String,
    /// Azurite's blob endpoint (the container `zoo` holds the seed).
    az: String,
    /// fake-gcs-server's endpoint (the bucket `zoo` holds the seed).
    gs: String,
    /// The hub stand-in's endpoint (the seed is `neff/zoo`) and its token.
    hub: String,
    hub_token: String,
    seed: PathBuf,
    proxy_log: PathBuf,
    _dir: tempfile::TempDir,
}

/// A large raw NEFF: 12 members of 8 MiB of noise, a def.json and a
/// kelf between them (96 MiB).
const BIG_RAW: &str = "big/raw.neff";

fn big_raw() -> Vec<u8> {
    big(true)
}

/// A large gzip NEFF: the same members, incompressible (96 MiB of gzip).
const BIG_GZ: &str = "big/gzip.neff";

fn big_gz() -> Vec<u8> {
    big(false)
}

fn big(raw: bool) -> Vec<u8> {
    use neff::pack::{pack, PackEntry, PackOptions};
    let mut entries = vec![
        PackEntry::file("neff.json", br#"{"tvm":[]}"#.to_vec(), 0),
        PackEntry::file(
            "sg00/def.json",
            br#"{"replica_groups":[[[0,1,2,3]]],"var":{}}"#.to_vec(),
            0,
        ),
    ];
    for i in 0..12 {
        entries.push(PackEntry::file(
            &format!("sg00/weights{i:02}.bin"),
            noise(8 << 20, i + 1),
            0,
        ));
    }
    let opts = PackOptions::default().no_gzip(raw).mtime(Some(0));
    pack(&entries, &opts).unwrap()
}

/// A raw NEFF of 3 MiB (12 members of 256 KiB of noise): below
/// `remote::WHOLE_BELOW`.
const MID_RAW: &str = "mid/raw.neff";

fn mid_raw() -> Vec<u8> {
    use neff::pack::{pack, PackEntry, PackOptions};
    let mut entries = vec![PackEntry::file("neff.json", br#"{"tvm":[]}"#.to_vec(), 0)];
    for i in 0..12 {
        entries.push(PackEntry::file(
            &format!("sg00/w{i:02}.bin"),
            noise(256 << 10, 100 + i),
            0,
        ));
    }
    pack(
        &entries,
        &PackOptions::default().no_gzip(true).mtime(Some(0)),
    )
    .unwrap()
}

/// A gzip NEFF of about 2 MiB (12 members of 256 KiB, noise and text,
/// and the JSON the accessors read): past the first GET's 256 KiB and
/// below the size where parallel rounds pay, so inflated as it arrives.
const MID_GZ: &str = "mid/gzip.neff";

fn mid_gz() -> Vec<u8> {
    use neff::pack::{pack, PackEntry, PackOptions};
    let mut entries = vec![
        PackEntry::file("neff.json", br#"{"tvm":[]}"#.to_vec(), 0),
        PackEntry::file(
            "sg00/def.json",
            br#"{"replica_groups":[[[0,1,2,3,4,5,6,7]]],"var":{}}"#.to_vec(),
            0,
        ),
    ];
    for i in 0..12 {
        let data = match i % 2 {
            0 => noise(256 << 10, 200 + i),
            _ => format!("tensor {i} weight {i}\n")
                .repeat(12 << 10)
                .into_bytes(),
        };
        entries.push(PackEntry::file(&format!("sg00/w{i:02}.bin"), data, 0));
    }
    pack(&entries, &PackOptions::default().mtime(Some(0))).unwrap()
}

/// The servers, started once for this test binary (a watchdog stops them
/// when it exits), over a seed of fixtures and generated NEFFs.
fn servers() -> &'static Servers {
    static S: OnceLock<Servers> = OnceLock::new();
    S.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let seed = dir.path().join("seed");
        for sub in ["acc", "interop"] {
            std::fs::create_dir_all(seed.join(sub)).unwrap();
            for f in neffs(&format!("fixtures/{sub}")) {
                std::fs::copy(&f, seed.join(sub).join(f.file_name().unwrap())).unwrap();
            }
        }
        std::fs::create_dir_all(seed.join("big")).unwrap();
        let big = big_raw();
        std::fs::write(seed.join(BIG_RAW), &big).unwrap();
        std::fs::write(seed.join(BIG_GZ), big_gz()).unwrap();
        // A different version of it, served by the proxy's `replace`.
        let mut v2 = big.clone();
        let n = v2.len();
        v2[n - 2048] ^= 1;
        let v2_path = seed.join(format!("{BIG_RAW}.v2"));
        std::fs::write(&v2_path, &v2).unwrap();
        // nginx's ETag is mtime-size: the new version is a day older.
        std::fs::File::options()
            .write(true)
            .open(&v2_path)
            .unwrap()
            .set_modified(std::time::SystemTime::now() - Duration::from_secs(86400))
            .unwrap();
        // A raw NEFF of 3 MiB: small enough to be fetched whole.
        std::fs::create_dir_all(seed.join("mid")).unwrap();
        std::fs::write(seed.join(MID_RAW), mid_raw()).unwrap();
        std::fs::write(seed.join(MID_GZ), mid_gz()).unwrap();
        // A compile cache of every state, twice: one read, one pruned.
        crate::cache::cache(&seed.join("cache"));
        crate::cache::cache(&seed.join("cache-prune"));
        let state = dir.path().join("state");
        let out = Command::new("python3")
            .arg(root().join("scripts/servers"))
            .arg("start")
            .arg(&state)
            .arg(&seed)
            .arg(std::process::id().to_string())
            // Deleted by the servers' watchdog once this process ends
            // (the static holding `dir` is never dropped).
            .arg(dir.path())
            .stderr(Stdio::inherit())
            .output()
            .expect("run scripts/servers");
        assert!(
            out.status.success(),
            "scripts/servers could not start the servers (see above)"
        );
        let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let s = |k: &str| info[k].as_str().unwrap().to_string();
        Servers {
            s3: s("s3"),
            http: s("http"),
            proxy: s("proxy"),
            az: s("az"),
            gs: s("gs"),
            hub: s("hub"),
            hub_token: s("hub_token"),
            seed,
            proxy_log: s("proxy_log").into(),
            _dir: dir,
        }
    })
}

/// `neff ARGS` with S3's environment pointing at `endpoint`: test keys,
/// plain HTTP, a 10 s timeout, no profile of the host's.
fn s3_command(args: &[&str], endpoint: &str) -> Command {
    let mut cmd = s3_env(Command::new(env!("CARGO_BIN_EXE_neff")), endpoint);
    cmd.args(args).env("NEFF_REMOTE_TIMEOUT", "10");
    cmd
}

/// `cmd` with S3's environment pointing at `endpoint`.
fn s3_env(mut cmd: Command, endpoint: &str) -> Command {
    cmd.env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ALLOW_HTTP", "true")
        .env_remove("AWS_PROFILE");
    cmd
}

/// The shell `command` run on a terminal (`script`), S3's environment
/// pointing at `endpoint`: what it drew, each `\r` a new line.
fn on_terminal(command: &str, endpoint: &str) -> String {
    let mut script = Command::new("script");
    script.args(["-qec", command, "/dev/null"]);
    let o = s3_env(script, endpoint)
        .output()
        .expect("script (util-linux)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).replace('\r', "\n")
}

/// Runs `neff` with the S3 environment pointing at `endpoint`, failing the
/// test if it has not finished within 60 s (nothing may hang).
fn run_env(args: &[&str], endpoint: &str, extra: &[(&str, &str)]) -> Output {
    let mut cmd = s3_command(args, endpoint);
    cmd.env("AZURE_STORAGE_USE_EMULATOR", "true")
        .env("AZURITE_BLOB_STORAGE_URL", &servers().az)
        // fake-gcs-server, unsigned (object_store's GCS client otherwise
        // asks the instance's metadata server for a token).
        .env("GOOGLE_BASE_URL", &servers().gs)
        .env("GOOGLE_SKIP_SIGNATURE", "true")
        .env("HF_ENDPOINT", &servers().hub)
        .env("HF_TOKEN", &servers().hub_token)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("run neff");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        out.read_to_end(&mut v).unwrap();
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        err.read_to_end(&mut v).unwrap();
        v
    });
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("neff {args:?} hung (over 60 s)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
    }
}

fn run(args: &[&str]) -> Output {
    run_env(args, &servers().s3, &[])
}

/// The URLs of one seed file: over S3 and over HTTP.
fn urls(rel: &str) -> [String; 2] {
    let s = servers();
    [format!("s3://zoo/{rel}"), format!("{}/{rel}", s.http)]
}

/// What a command prints for the local file and for each URL must be the
/// same (stdout, exit code, and the error's reason after the path).
fn same_as_local(rel: &str, args: &dyn Fn(&str) -> Vec<String>) {
    let local = servers().seed.join(rel);
    let want = run(&args(local.to_str().unwrap())
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    let reason =
        |o: &Output, name: &str| String::from_utf8_lossy(&o.stderr).replace(name, "<file>");
    for url in urls(rel) {
        let got = run(&args(&url).iter().map(String::as_str).collect::<Vec<_>>());
        // Paths printed (mem, verify) are the names given.
        let local_name = local.to_str().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&got.stdout).replace(url.as_str(), "<file>"),
            String::from_utf8_lossy(&want.stdout).replace(local_name, "<file>"),
            "{:?} vs {:?}",
            args(&url),
            args(local.to_str().unwrap())
        );
        assert_eq!(
            got.status.code(),
            want.status.code(),
            "{:?}: {}",
            args(&url),
            reason(&got, &url)
        );
        assert_eq!(
            reason(&got, &url),
            reason(&want, local.to_str().unwrap()),
            "{:?}",
            args(&url)
        );
    }
}

fn seed_files(sub: &str) -> Vec<String> {
    neffs(&format!("fixtures/{sub}"))
        .iter()
        .map(|p| format!("{sub}/{}", p.file_name().unwrap().to_str().unwrap()))
        .collect()
}

#[test]
fn every_fixture_lists_and_answers_the_same_over_s3_and_http_as_from_disk() {
    for rel in seed_files("acc").iter().chain(&seed_files("interop")) {
        same_as_local(rel, &|f| vec!["ls".into(), "--json".into(), f.into()]);
        same_as_local(rel, &|f| vec!["info".into(), "--json".into(), f.into()]);
        same_as_local(rel, &|f| {
            vec!["get".into(), f.into(), "cc-world-size".into()]
        });
        same_as_local(rel, &|f| vec!["get".into(), f.into(), "arch".into()]);
        same_as_local(rel, &|f| vec!["mem".into(), "--json".into(), f.into()]);
        same_as_local(rel, &|f| vec!["verify".into(), f.into()]);
    }
}

#[test]
fn a_large_raw_neff_is_listed_from_its_headers_and_members_fetched_alone() {
    let rel = BIG_RAW;
    for args in [
        &|f: &str| vec!["ls".to_string(), "--json".into(), f.into()] as Vec<String>,
        &|f: &str| vec!["get".into(), f.into(), "cc-world-size".into()],
        &|f: &str| vec!["cat".into(), f.into(), r"sg00/weights07\.bin".into()],
        &|f: &str| vec!["info".into(), "--json".into(), f.into()],
        &|f: &str| vec!["verify".into(), f.into()],
    ] as [&dyn Fn(&str) -> Vec<String>; 5]
    {
        same_as_local(rel, args);
    }
    // Bytes sent, counted by the proxy in front of nginx.
    let s = servers();
    let size = std::fs::metadata(s.seed.join(rel)).unwrap().len();
    // A path of this test's own (`rangex1000000-TAG` keeps every Range):
    // other tests read `ok` at the same time.
    let logged = format!("/http/rangex1000000-bytes/{rel}");
    // Counted once the proxy's log has settled: on a loaded machine a
    // request of the command before can be logged after it has exited.
    let sent = |args: &[&str]| {
        settled_requests(&s.proxy_log, &logged);
        let before = log_bytes(&s.proxy_log, &logged);
        let o = run(args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        settled_requests(&s.proxy_log, &logged);
        log_bytes(&s.proxy_log, &logged) - before
    };
    let url = format!("{}{logged}", s.proxy);
    // On localhost a round trip is worth little more than a member or two:
    // the walk reads through the small ones and hops over the weights,
    // never moving more than the object.
    let ls = sent(&["ls", &url]);
    assert!(ls <= size, "ls fetched {ls} of {size} bytes");
    // The walk prices a read by the link as it measures it: on a loopback
    // shared with the other tests' servers, a first round trip can be
    // measured as a slow link's, and the walk then rightly reads through.
    // The least of three tries is the loopback's.
    let cat = (0..3)
        .map(|_| sent(&["cat", &url, r"sg00/weights07\.bin"]))
        .min()
        .unwrap();
    assert!(
        cat < size / 2,
        "cat fetched {cat} bytes (the least of three tries)"
    );
    // Under a cap of 1% of the object (a user who pays for egress), the
    // walk hops from header to header and the answers stay the same.
    let cap = (size / 100).to_string();
    let (flag, cap) = ("--max-bytes-moved", cap.as_str());
    let ls = sent(&[flag, cap, "ls", "--json", &url]);
    assert!(ls * 100 <= size, "ls fetched {ls} of {size} bytes");
    let local = run(&["ls", "--json", s.seed.join(rel).to_str().unwrap()]);
    let o = run(&[flag, cap, "ls", "--json", &url]);
    assert_eq!(o.stdout, local.stdout);
    let get = sent(&[flag, cap, "get", &url, "cc-world-size"]);
    assert!(get * 100 <= size, "get fetched {get} of {size} bytes");
    // A member larger than the cap is refused, naming the object.
    let o = run(&[flag, cap, "cat", &url, r"sg00/weights07\.bin"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with(&format!("neff: {url}: ")), "{err}");
    assert!(err.contains("--max-bytes-moved"), "{err}");
    // From a server that ignores Range the object could only be read
    // whole: refused on its announced size, the cap kept.
    let whole = format!("{}/http/norange/{rel}", s.proxy);
    let o = run(&[flag, cap, "ls", &whole]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("neff: {whole}: ")) && err.contains("--max-bytes-moved"),
        "{err}"
    );
}

/// Sum of the bytes the proxy sent for `path`.
fn log_bytes(log: &Path, path: &str) -> u64 {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.split(' ').nth(1) == Some(path))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

fn refused(args: &[&str], extra: &[(&str, &str)], endpoint: &str) -> String {
    let o = run_env(args, endpoint, extra);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success(), "{args:?} succeeded");
    assert!(o.stdout.is_empty(), "{args:?} printed {:?}", o.stdout);
    assert_eq!(err.lines().count(), 1, "not one line: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn missing_objects_and_buckets_are_one_line_naming_the_url() {
    let s = servers();
    for url in [
        "s3://zoo/no/such.neff".to_string(),
        "s3://nobucket/x.neff".into(),
        format!("{}/no/such.neff", s.http),
    ] {
        let e = refused(&["ls", &url], &[], &s.s3);
        assert!(e.starts_with(&format!("neff: {url}: ")), "{e}");
        assert!(e.contains("no such object"), "{e}");
    }
}

#[test]
fn an_object_replaced_during_the_read_is_refused_never_mixed() {
    let s = servers();
    let url = format!("{}/http/replace/{BIG_RAW}", s.proxy);
    let o = run_env(&["cat", &url, r"sg00/weights11\.bin"], &s.s3, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("changed while being read"), "{err}");
}

#[test]
fn access_denied_is_one_line_naming_the_url_and_not_retried() {
    let s = servers();
    let rel = "acc/cc-replica-groups-gz.neff";
    let url = format!("{}/http/403/{rel}", s.proxy);
    let t = Instant::now();
    let e = refused(&["ls", &url], &[], &s.s3);
    assert!(e.starts_with(&format!("neff: {url}: ")), "{e}");
    assert!(e.contains("access denied"), "{e}");
    let endpoint = format!("{}/s3/403", s.proxy);
    let url = format!("s3://zoo/{rel}");
    let e = refused(&["ls", &url], &[], &endpoint);
    assert!(e.starts_with(&format!("neff: {url}: ")), "{e}");
    assert!(e.contains("access denied"), "{e}");
    // A refusal is final: no backoff (the default retries would take seconds).
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}

#[test]
fn throttling_is_retried_and_the_answer_is_the_local_one() {
    let s = servers();
    let rel = "acc/cc-replica-groups-gz.neff";
    let want = run(&["get", s.seed.join(rel).to_str().unwrap(), "cc-world-size"]);
    let url = format!("{}/http/503x2/{rel}", s.proxy);
    let got = run(&["get", &url, "cc-world-size"]);
    assert!(
        got.status.success(),
        "{}",
        String::from_utf8_lossy(&got.stderr)
    );
    assert_eq!(got.stdout, want.stdout);
    // And for S3, through the proxy as the endpoint.
    let endpoint = format!("{}/s3/503x2", s.proxy);
    let got = run_env(
        &["get", &format!("s3://zoo/{rel}"), "cc-world-size"],
        &endpoint,
        &[],
    );
    assert!(
        got.status.success(),
        "{}",
        String::from_utf8_lossy(&got.stderr)
    );
    assert_eq!(got.stdout, want.stdout);
}

#[test]
fn faulty_servers_are_one_line_errors_within_bounded_time() {
    let s = servers();
    let few = [("NEFF_REMOTE_RETRIES", "1"), ("NEFF_REMOTE_TIMEOUT", "2")];
    for (mode, what) in [("503", "503"), ("truncate", ""), ("stall", "timed out")] {
        let url = format!("{}/http/{mode}/{BIG_RAW}", s.proxy);
        let t = Instant::now();
        let e = refused(&["ls", &url], &few, &s.s3);
        assert!(e.starts_with(&format!("neff: {url}: ")), "{mode}: {e}");
        assert!(e.to_lowercase().contains(what), "{mode}: {e}");
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "{mode} took {:?}",
            t.elapsed()
        );
    }
    // A small object whose body is cut (the Content-Length lies): refused too.
    let url = format!("{}/http/truncate/acc/cc-replica-groups-gz.neff", s.proxy);
    refused(&["ls", &url], &few, &s.s3);
    // A server that says the object is twice its size: a small one then
    // comes back short of what was asked, refused; a large raw one is read
    // within its real bytes (its tar ends first), with the local answer.
    let url = format!("{}/http/liesize/acc/cc-replica-groups-gz.neff", s.proxy);
    let e = refused(&["ls", &url], &few, &s.s3);
    assert!(
        e.contains("got 0..") || e.contains("bytes for the first"),
        "{e}"
    );
    let url = format!("{}/http/liesize/{BIG_RAW}", s.proxy);
    let got = run_env(&["ls", &url], &s.s3, &few);
    let want = run(&["ls", s.seed.join(BIG_RAW).to_str().unwrap()]);
    assert_eq!(got.stdout, want.stdout);
}

/// `neff ARGS` on `url` prints what it prints for the seed file `rel`
/// (stdout with the name replaced, exit code), with `extra` in the
/// environment; returns its stderr.
fn answers_as_local(
    args: &[&str],
    rel: &str,
    url: &str,
    endpoint: &str,
    extra: &[(&str, &str)],
) -> String {
    let s = servers();
    let local = s.seed.join(rel);
    let local = local.to_str().unwrap();
    fn with<'a>(args: &[&'a str], f: &'a str) -> Vec<&'a str> {
        args.iter()
            .map(|a| if *a == "FILE" { f } else { a })
            .collect()
    }
    let want = run(&with(args, local));
    let got = run_env(&with(args, url), endpoint, extra);
    let err = String::from_utf8_lossy(&got.stderr).into_owned();
    assert_eq!(
        got.status.code(),
        want.status.code(),
        "{args:?} {url}: {err}"
    );
    assert!(want.status.success(), "{args:?} {local}");
    assert!(
        String::from_utf8_lossy(&got.stdout).replace(url, "<file>")
            == String::from_utf8_lossy(&want.stdout).replace(local, "<file>"),
        "{args:?} {url}: not the local answer"
    );
    err
}

#[test]
fn a_server_that_ignores_range_is_read_whole_with_the_local_answers() {
    // The proxy's `norange` drops every Range: the first GET comes back
    // whole (200), and the object is then read by one GET into a
    // temporary file and answered from it, raw and gzip, HTTP and S3.
    let s = servers();
    let s3_norange = format!("{}/s3/norange", s.proxy);
    for rel in [BIG_RAW, BIG_GZ] {
        // `rangex0-count`: every Range dropped, as `norange` does, on a
        // path of this test's own: another test reads `norange` at the same
        // time, and CI once counted its two requests here.
        let http = format!("{}/http/rangex0-count/{rel}", s.proxy);
        let logged = format!("/http/rangex0-count/{rel}");
        for args in [
            &["ls", "--json", "FILE"][..],
            &["get", "FILE", "cc-world-size"][..],
        ] {
            let before = log_requests(&s.proxy_log, &logged);
            let err = answers_as_local(args, rel, &http, &s.s3, &[("RUST_LOG", "neff=debug")]);
            assert!(
                err.contains("the server ignored Range: reading the object whole"),
                "{args:?} {http}: no debug line: {err}"
            );
            // The ranged GET answered whole, then the one GET read whole.
            // (The proxy logs a request once it has sent its answer, which
            // may be after `neff` exits: the count is read when it settles.)
            let sent = settled_requests(&s.proxy_log, &logged) - before;
            assert_eq!(sent, 2, "{args:?} {http}: requests");
            answers_as_local(args, rel, &format!("s3://zoo/{rel}"), &s3_norange, &[]);
        }
    }
}

#[test]
fn a_server_that_stops_honouring_range_midway_is_read_whole_from_there() {
    // `rangexN-TAG`: the first N requests for the path keep their Range,
    // later ones lose it. A raw walk (ls), a member (cat) and a gzip spool
    // then switch to one GET of the whole object, and a payload streamed
    // in parts (verify) goes on from the last part handed on.
    let s = servers();
    let p = |mode: &str, rel: &str| format!("{}/http/{mode}/{rel}", s.proxy);
    answers_as_local(
        &["ls", "--json", "FILE"],
        BIG_RAW,
        &p("rangex1-ls", BIG_RAW),
        &s.s3,
        &[],
    );
    answers_as_local(
        &["cat", "FILE", r"sg00/weights07\.bin"],
        BIG_RAW,
        &p("rangex1-cat", BIG_RAW),
        &s.s3,
        &[],
    );
    answers_as_local(
        &["ls", "--json", "FILE"],
        BIG_GZ,
        &p("rangex1-ls", BIG_GZ),
        &s.s3,
        &[],
    );
    answers_as_local(
        &["ls", "--json", "FILE"],
        BIG_RAW,
        &format!("s3://zoo/{BIG_RAW}"),
        &format!("{}/s3/rangex1-ls", s.proxy),
        &[],
    );
    // verify: the open and the walk's requests, counted on a path of its
    // own where nothing is dropped, then two of the payload's parts keep
    // their Range and the rest do not.
    let counted = p("rangex1000000-count", BIG_RAW);
    let before = log_requests(
        &s.proxy_log,
        &format!("/http/rangex1000000-count/{BIG_RAW}"),
    );
    answers_as_local(&["ls", "FILE"], BIG_RAW, &counted, &s.s3, &[]);
    let walk = log_requests(
        &s.proxy_log,
        &format!("/http/rangex1000000-count/{BIG_RAW}"),
    ) - before;
    let mode = format!("rangex{}-verify", walk + 2);
    let err = answers_as_local(
        &["verify", "FILE"],
        BIG_RAW,
        &p(&mode, BIG_RAW),
        &s.s3,
        &[("RUST_LOG", "neff=debug")],
    );
    assert!(err.contains("the server ignored Range"), "{err}");
}

#[test]
fn an_object_too_large_to_read_whole_from_a_server_that_ignores_range_is_refused() {
    let s = servers();
    let cap = [("NEFF_REMOTE_SPOOL_MAX", "1000000")];
    let s3_norange = format!("{}/s3/norange", s.proxy);
    for (url, endpoint) in [
        (format!("{}/http/norange/{BIG_RAW}", s.proxy), s.s3.clone()),
        (format!("s3://zoo/{BIG_GZ}"), s3_norange),
        // Found midway: refused before the whole object is asked for.
        (
            format!("{}/http/rangex1-cap/{BIG_RAW}", s.proxy),
            s.s3.clone(),
        ),
    ] {
        let e = refused(&["ls", &url], &cap, &endpoint);
        assert!(e.starts_with(&format!("neff: {url}: ")), "{e}");
        assert!(e.contains("the server ignores Range"), "{e}");
        assert!(e.contains("NEFF_REMOTE_SPOOL_MAX"), "{e}");
    }
    // The whole GET was never sent for the one found midway: every
    // request for it asked for a range (a read-ahead may have had several
    // parts in flight when the first answer without one came back).
    let path = format!("/http/rangex1-cap/{BIG_RAW}");
    settled_requests(&s.proxy_log, &path);
    let log = std::fs::read_to_string(&s.proxy_log).unwrap();
    let ranges: Vec<&str> = log
        .lines()
        .filter(|l| l.split(' ').nth(1) == Some(path.as_str()))
        .map(|l| l.split(' ').nth(2).unwrap_or("-"))
        .collect();
    assert!(ranges.len() >= 2, "requests for {path}: {ranges:?}");
    assert!(
        ranges.iter().all(|r| r.starts_with("bytes=")),
        "a request for {path} without a range: {ranges:?}"
    );
}

#[test]
fn a_scan_of_an_s3_prefix_gives_the_records_of_the_local_scan() {
    let s = servers();
    let local = run(&[
        "scan",
        "--json",
        "--sorted",
        "--no-progress",
        s.seed.join("acc").to_str().unwrap(),
    ]);
    let remote = run(&[
        "scan",
        "--json",
        "--sorted",
        "--no-progress",
        "s3://zoo/acc/",
    ]);
    assert!(remote.status.success() || remote.status.code() == local.status.code());
    let strip = |o: &Output, prefix: &str| -> Vec<serde_json::Value> {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                let p = v["path"].as_str().unwrap().replacen(prefix, "", 1);
                v["path"] = p.into();
                v
            })
            .collect()
    };
    let want = strip(&local, &format!("{}/", s.seed.join("acc").display()));
    let got = strip(&remote, "s3://zoo/acc/");
    assert_eq!(got.len(), neffs("fixtures/acc").len());
    assert_eq!(got, want);
}

#[test]
fn a_warm_indexed_rescan_of_an_unchanged_bucket_sends_list_requests_only() {
    let s = servers();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("zoo.db");
    let db = db.to_str().unwrap();
    // Through the proxy, which logs every request, on a path of this
    // test's own (`rangexN-TAG` keeps every Range): the tests running
    // beside it read `ok` at the same time.
    let endpoint = format!("{}/s3/rangex1000000-warm", s.proxy);
    let requests = || {
        std::fs::read_to_string(&s.proxy_log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(" /s3/rangex1000000-warm/zoo"))
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let scan = || {
        run_env(
            &[
                "scan",
                "--json",
                "--no-progress",
                "--index",
                db,
                "s3://zoo/interop/",
            ],
            &endpoint,
            &[],
        )
    };
    // The proxy logs a request once its response is sent: counted once
    // the log has settled (the cold scan's last reads may be logged after
    // it exits, and were then taken for the warm scan's).
    let settled = || {
        let mut n = requests().len();
        for _ in 0..10 {
            std::thread::sleep(Duration::from_millis(500));
            let now = requests().len();
            if now == n {
                break;
            }
            n = now;
        }
        n
    };
    let cold = scan();
    assert!(cold.status.success() || cold.status.code() == Some(1));
    let before = settled();
    let warm = scan();
    assert_eq!(warm.stdout.len(), cold.stdout.len());
    settled();
    let sent = requests()[before..].to_vec();
    assert!(!sent.is_empty());
    for r in &sent {
        assert!(r.contains("list-type=2"), "not a list request: {r}");
    }
}

/// Peak resident memory (KiB) of `neff -j 1 ARGS` with the servers' S3
/// environment, and its stdout (Python's `getrusage` of its one child).
/// One worker: the parallel inflater's buffers (which follow the cores'
/// relative speed, so the load of the tests running beside this one) are
/// not what is measured here, the spool is.
fn peak_rss(args: &[&str]) -> (u64, Vec<u8>) {
    let s = servers();
    let o = Command::new("python3")
        .args([
            "-c",
            "import resource, subprocess, sys\n\
             r = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE)\n\
             assert r.returncode == 0, r.returncode\n\
             sys.stderr.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n\
             sys.stdout.buffer.write(r.stdout)",
            env!("CARGO_BIN_EXE_neff"),
            "-j",
            "1",
        ])
        .args(args)
        .env("AWS_ENDPOINT_URL", &s.s3)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ALLOW_HTTP", "true")
        .output()
        .expect("run python3");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let kib = String::from_utf8(o.stderr).unwrap().trim().parse().unwrap();
    (kib, o.stdout)
}

#[test]
fn a_mid_size_gzip_neff_is_inflated_as_it_arrives_with_no_temporary_file() {
    // With no usable TMPDIR a spool cannot be made: every answer about
    // this NEFF (the walk's, an accessor's, a member not kept, the payload
    // hash) comes from the parts as they arrive, and is the local one.
    let s = servers();
    let local = s.seed.join(MID_GZ);
    let size = std::fs::metadata(&local).unwrap().len();
    assert!((1 << 20..16 << 20).contains(&size), "{size} bytes");
    let local = local.to_str().unwrap();
    let no_tmp = [("TMPDIR", "/nonexistent/neff-test-no-tmp")];
    let commands: [&[&str]; 5] = [
        &["ls", "--json"],
        &["get", "--", "cc-world-size"],
        &["cat", "--", "sg00/w0[37].bin"],
        &["verify"],
        &["info", "--json"],
    ];
    for cmd in commands {
        let with = |file: &str| -> Vec<String> {
            let mut v: Vec<String> = cmd.iter().map(|a| a.to_string()).collect();
            let at = v.iter().position(|a| a == "--").unwrap_or(v.len());
            v.retain(|a| a != "--");
            v.insert(at, file.to_string());
            v
        };
        let args = with(local);
        let want = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(want.status.success(), "{args:?}");
        for url in urls(MID_GZ) {
            let args = with(&url);
            let got = run_env(
                &args.iter().map(String::as_str).collect::<Vec<_>>(),
                &s.s3,
                &no_tmp,
            );
            assert!(
                got.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&got.stderr)
            );
            assert_eq!(
                String::from_utf8_lossy(&got.stdout).replace(url.as_str(), "<f>"),
                String::from_utf8_lossy(&want.stdout).replace(local, "<f>"),
                "{args:?}"
            );
        }
    }
    // A scan's record gives the object's size, not the bytes held.
    for url in urls(MID_GZ) {
        let o = run_env(&["scan", "--json", "--no-progress", &url], &s.s3, &no_tmp);
        let records = ndjson(&o.stdout);
        assert_eq!(records.len(), 1, "{url}");
        assert_eq!(records[0]["ok"], true, "{url}: {:?}", records[0]);
        assert_eq!(records[0]["bytes"], size, "{url}");
    }
    // The large one is still spooled (its payload gets parallel rounds):
    // without a TMPDIR it cannot be, so the check above can fail.
    let got = run_env(&["ls", &format!("s3://zoo/{BIG_GZ}")], &s.s3, &no_tmp);
    assert!(
        !got.status.success(),
        "the large gzip NEFF was read without a spool"
    );
}

#[test]
fn a_large_gzip_neff_is_spooled_to_disk_not_held_in_memory() {
    // A gzip payload cannot be read by ranges: it is fetched whole, but
    // written to a temporary file as it arrives, so memory stays what a
    // local read needs instead of growing by the object's size.
    let s = servers();
    let local = s.seed.join(BIG_GZ);
    let size_kib = std::fs::metadata(&local).unwrap().len() / 1024;
    let (local_kib, want) = peak_rss(&["ls", local.to_str().unwrap()]);
    for url in urls(BIG_GZ) {
        let (kib, got) = peak_rss(&["ls", &url]);
        assert_eq!(got, want, "{url}");
        assert!(
            kib < local_kib + size_kib / 4,
            "{url}: peak RSS {kib} KiB, a local read {local_kib} KiB, the object {size_kib} KiB"
        );
        // Files to be read into memory, not mapped: the spool is read
        // whole once it has landed (not inflated from its map as it
        // lands), with the same answer.
        let (_, got) = peak_rss(&["--read-mode", "read", "ls", &url]);
        assert_eq!(got, want, "{url} --read-mode read");
    }
}

#[test]
fn a_scan_whose_workers_are_all_busy_inflates_a_large_gzip_neff_as_it_arrives_not_spooled() {
    // With no usable TMPDIR a spool cannot be made. A scan's worker with
    // no other worker idle would inflate the payload on one core anyway:
    // it inflates the parts as they arrive, and the record is the local
    // one. With workers to spare, the payload is spooled for parallel
    // rounds, which the missing TMPDIR refuses.
    let s = servers();
    let local = s.seed.join(BIG_GZ);
    assert!(std::fs::metadata(&local).unwrap().len() >= 16 << 20);
    let url = format!("s3://zoo/{BIG_GZ}");
    let no_tmp = [("TMPDIR", "/nonexistent/neff-test-no-tmp")];
    let scan = |depth: &str, file: &str, env: &[(&str, &str)]| {
        let o = run_env(
            &[
                "-j",
                "1",
                "--io-depth",
                depth,
                "scan",
                "--json",
                "--no-progress",
                file,
            ],
            &s.s3,
            env,
        );
        ndjson(&o.stdout).remove(0)
    };
    let want = scan("1", local.to_str().unwrap(), &[]);
    assert_eq!(want["ok"], true, "{want}");
    let got = scan("1", &url, &no_tmp);
    assert_eq!(without_path(&got), without_path(&want), "{got}");
    let spare = scan("8", &url, &no_tmp);
    assert_eq!(spare["ok"], false, "{spare}");
    // The reason names the directory.
    let why = spare["error"].as_str().unwrap();
    assert!(
        why.contains("cannot make a temporary file in /nonexistent/neff-test-no-tmp"),
        "{why}"
    );
}

#[test]
fn a_long_range_is_fetched_as_parts_several_in_flight_at_once() {
    // The gzip object is fetched whole (first 256 KiB, then the rest in
    // 8 MiB parts). Through the proxy's `slow` mode every request waits
    // 1 s before it is answered: one after another, each part would reach
    // the proxy at least a second after the one before; in flight
    // together, several arrive at once. (The arrival times, not the total
    // time: the proxy's Python pumps every byte, and on a loaded machine
    // its throughput, shared with the other remote tests, set the total.)
    // Same answer as the disk.
    let s = servers();
    let size = std::fs::metadata(s.seed.join(BIG_GZ)).unwrap().len();
    let parts = (size - (256 << 10)).div_ceil(8 << 20);
    assert!(parts >= 10, "{parts} parts");
    let want = run(&["ls", s.seed.join(BIG_GZ).to_str().unwrap()]);
    let url = format!("{}/http/slow/{BIG_GZ}", s.proxy);
    let before = log_requests(&s.proxy_log, &format!("/http/slow/{BIG_GZ}"));
    let t = Instant::now();
    let got = run(&["ls", &url]);
    let took = t.elapsed();
    assert!(
        got.status.success(),
        "{}",
        String::from_utf8_lossy(&got.stderr)
    );
    assert_eq!(got.stdout, want.stdout);
    let path = format!("/http/slow/{BIG_GZ}");
    let sent = log_requests(&s.proxy_log, &path) - before;
    assert_eq!(sent, 1 + parts, "requests for the object");
    let mut arrived: Vec<f64> = std::fs::read_to_string(&s.proxy_log)
        .unwrap()
        .lines()
        .filter(|l| l.split(' ').nth(1) == Some(path.as_str()))
        .filter_map(|l| l.split(' ').nth(4)?.parse().ok())
        .collect();
    // This run's lines (the log is in order of completion), by arrival.
    let mut arrived = arrived.split_off(before as usize);
    arrived.sort_by(f64::total_cmp);
    // Several parts (one object alone: up to 8) are sent at once: at
    // least two of them arrive within half a second of the one before.
    // Sent one after another, none could.
    let together = arrived.windows(2).filter(|w| w[1] - w[0] < 0.5).count();
    assert!(
        together >= 2,
        "{sent} requests in {took:?}, arriving at {arrived:?}: not in flight together"
    );
}

/// [`log_requests`] once no new line has come for half a second (at most
/// 5 s): the proxy writes a request's line after its answer is sent.
fn settled_requests(log: &Path, path: &str) -> u64 {
    let mut n = log_requests(log, path);
    for _ in 0..10 {
        std::thread::sleep(Duration::from_millis(500));
        let now = log_requests(log, path);
        if now == n {
            break;
        }
        n = now;
    }
    n
}

/// Requests the proxy logged for `path`.
fn log_requests(log: &Path, path: &str) -> u64 {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.split(' ').nth(1) == Some(path))
        .count() as u64
}

/// The NDJSON lines of `out`.
fn ndjson(out: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn cache_status_of_a_bucket_gives_every_entry_the_state_it_has_on_disk() {
    let s = servers();
    let local = neff_ok_status(&[
        "cache",
        "status",
        s.seed.join("cache").to_str().unwrap(),
        "--json",
    ]);
    let o = run(&["cache", "status", "s3://zoo/cache", "--json"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let remote = ndjson(&o.stdout);
    assert_eq!(remote.len(), 48);
    let base = s.seed.join("cache").display().to_string();
    for (l, r) in local.iter().zip(&remote) {
        let rel = l["path"].as_str().unwrap().strip_prefix(&base).unwrap();
        assert_eq!(r["path"], format!("s3://zoo/cache{rel}"));
        for k in [
            "state",
            "compiler",
            "graph_hash",
            "flags_hash",
            "bytes",
            "arch",
            "cc_world_size",
        ] {
            assert_eq!(l[k], r[k], "{k} of {rel}");
        }
        if l["state"] != "locked" {
            assert_eq!(l["reason"], r["reason"], "{rel}");
        }
    }
    let text = run(&["cache", "status", "s3://zoo/cache"]);
    let text = String::from_utf8(text.stdout).unwrap();
    for v in ["2.15.100.0+2d4f85be", "2.15.128.0+56dc5a86"] {
        assert!(
            text.contains(&format!("neuronxcc-{v}: 24 entries")),
            "{text}"
        );
    }
}

#[test]
fn cache_explain_of_a_bucket_reads_each_entrys_flags_as_on_disk() {
    // Every entry holds compile_flags.json ["-O2"]: a job's -O1 differs
    // from each, read in the bucket by one ranged request per entry.
    let s = servers();
    let local = s.seed.join("cache");
    let explain = |root: &str| {
        let o = run(&["cache", "explain", root, "--flags", "-O1", "--json"]);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(0), "{err}");
        ndjson(&o.stdout)
    };
    let (local, remote) = (explain(local.to_str().unwrap()), explain("s3://zoo/cache"));
    assert_eq!(remote.len(), 49, "the job's line and 48 entries");
    assert_eq!(local[0], remote[0]);
    for (l, r) in local[1..].iter().zip(&remote[1..]) {
        for k in [
            "relation",
            "flags",
            "flags_error",
            "only_asked",
            "only_here",
        ] {
            assert_eq!(l[k], r[k], "{k} of {}", r["path"]);
        }
        assert_eq!(r["only_here"], serde_json::json!(["-O2"]));
        assert_eq!(r["only_asked"], serde_json::json!(["-O1"]));
    }
}

#[test]
fn cache_prune_of_a_bucket_deletes_exactly_the_failed_entries_when_applied() {
    let o = run(&[
        "cache",
        "prune",
        "s3://zoo/cache-prune",
        "--min-age",
        "0s",
        "--failed",
        "--json",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let plan = ndjson(&o.stdout);
    assert_eq!(plan.len(), 8);
    assert!(plan
        .iter()
        .all(|r| r["state"] == "failed" && r["removed"] == false));
    let before = ndjson(&run(&["cache", "status", "s3://zoo/cache-prune", "--json"]).stdout);
    assert_eq!(before.len(), 48, "a dry run removed something");
    let o = run(&[
        "cache",
        "prune",
        "s3://zoo/cache-prune",
        "--min-age",
        "0s",
        "--failed",
        "--apply",
        "--json",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(ndjson(&o.stdout).iter().all(|r| r["removed"] == true));
    let after = ndjson(&run(&["cache", "status", "s3://zoo/cache-prune", "--json"]).stdout);
    let kept: Vec<_> = before.iter().filter(|r| r["state"] != "failed").collect();
    assert_eq!(after.len(), kept.len());
    for (a, b) in after.iter().zip(&kept) {
        assert_eq!((&a["path"], &a["state"]), (&b["path"], &b["state"]));
    }
    // Every key of the other entries is still there: their bytes are.
    let bytes =
        |v: &[serde_json::Value]| v.iter().map(|r| r["bytes"].as_u64().unwrap()).sum::<u64>();
    assert_eq!(
        bytes(&after),
        kept.iter()
            .map(|r| r["bytes"].as_u64().unwrap())
            .sum::<u64>()
    );
    // Held to one byte less than it holds: the least recently written ok
    // entry of the older release goes (a bucket keeps no access times),
    // the dry run saying what --apply then does.
    let max = (bytes(&after) - 1).to_string();
    let args = [
        "cache",
        "prune",
        "s3://zoo/cache-prune",
        "--min-age",
        "0s",
        "--max-size",
        &max,
        "--json",
    ];
    let plan = ndjson(&run(&args).stdout);
    assert_eq!(plan.len(), 1, "{plan:?}");
    assert_eq!(
        (&plan[0]["state"], &plan[0]["compiler"]),
        (
            &serde_json::Value::from("ok"),
            &serde_json::Value::from(crate::cache::VERSIONS[0])
        )
    );
    assert!(plan[0]["why"].as_str().unwrap().contains("last written"));
    let o = run(&[&args[..], &["--apply"]].concat());
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let done = ndjson(&o.stdout);
    assert_eq!(
        (&done[0]["path"], &done[0]["removed"]),
        (&plan[0]["path"], &serde_json::Value::from(true))
    );
    let last = ndjson(&run(&["cache", "status", "s3://zoo/cache-prune", "--json"]).stdout);
    assert_eq!(last.len(), after.len() - 1);
    assert!(last.iter().all(|r| r["path"] != plan[0]["path"]));
}

/// `neff ARGS` on local files: its NDJSON lines (whatever its exit code).
fn neff_ok_status(args: &[&str]) -> Vec<serde_json::Value> {
    ndjson(&crate::common::neff(args).stdout)
}

#[test]
fn a_scan_of_a_cache_in_a_bucket_gives_each_entry_the_state_it_has_on_disk() {
    let s = servers();
    let base = s.seed.join("cache");
    let local = neff_ok_status(&[
        "scan",
        "--json",
        "--no-progress",
        "--sorted",
        base.to_str().unwrap(),
    ]);
    let o = run(&[
        "scan",
        "--json",
        "--no-progress",
        "--sorted",
        "s3://zoo/cache",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let remote = ndjson(&o.stdout);
    assert_eq!(local.len(), 48, "one record per entry");
    assert_eq!(remote.len(), local.len());
    let base = base.display().to_string();
    for (l, r) in local.iter().zip(&remote) {
        let rel = l["path"].as_str().unwrap().strip_prefix(&base).unwrap();
        assert_eq!(r["path"], format!("s3://zoo/cache{rel}"));
        for k in ["ok", "cache_state", "compiler", "cache_key", "arch"] {
            assert_eq!(l[k], r[k], "{k} of {rel}");
        }
    }
}

/// `neff ARGS` with only what a user's ~/.aws holds: HOME is `home`, and
/// no AWS_* variable but those in `extra`.
fn run_with_home(args: &[&str], home: &Path, extra: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_neff"));
    cmd.args(args)
        .env("HOME", home)
        .env("NEFF_REMOTE_TIMEOUT", "10");
    for (k, _) in std::env::vars() {
        if k.starts_with("AWS_") {
            cmd.env_remove(k);
        }
    }
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn an_aws_profile_in_the_users_files_authenticates_and_names_the_endpoint() {
    let s = servers();
    let home = tempfile::tempdir().unwrap();
    let aws = home.path().join(".aws");
    std::fs::create_dir_all(&aws).unwrap();
    std::fs::write(
        aws.join("config"),
        format!(
            "[default]\nregion = eu-west-1\n\n[profile zoo]\nregion = us-east-1\nendpoint_url = {}\n\n\
             [profile proc]\nendpoint_url = {}\ncredential_process = printf '{{\"Version\": 1, \"AccessKeyId\": \"proc\", \"SecretAccessKey\": \"proc\"}}'\n",
            s.s3, s.s3
        ),
    )
    .unwrap();
    std::fs::write(
        aws.join("credentials"),
        "[zoo]\naws_access_key_id = test\naws_secret_access_key = test\n",
    )
    .unwrap();
    let rel = "acc/cc-none-gz.neff";
    let local = neff_ok_status_raw(&["ls", s.seed.join(rel).to_str().unwrap()]);
    let url = format!("s3://zoo/{rel}");
    // AWS_PROFILE, and --profile; keys from the credentials file, or
    // printed by a credential_process.
    for (args, extra) in [
        (vec!["ls", url.as_str()], vec![("AWS_PROFILE", "zoo")]),
        (vec!["--profile", "zoo", "ls", url.as_str()], vec![]),
        (vec!["--profile", "proc", "ls", url.as_str()], vec![]),
    ] {
        let o = run_with_home(&args, home.path(), &extra);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(o.stdout, local, "{args:?}");
    }
    // A profile that is not there: one line naming it, exit 3.
    let o = run_with_home(&["--profile", "nosuch", "ls", &url], home.path(), &[]);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("\"nosuch\"") && err.lines().count() == 1,
        "{err}"
    );
}

/// `neff ARGS` on local files: its stdout, which must be a success.
fn neff_ok_status_raw(args: &[&str]) -> Vec<u8> {
    crate::common::neff_ok(args)
}

#[test]
fn a_url_with_a_query_string_is_used_exactly_as_given_and_only_with_get() {
    // The proxy's `presigned` mode answers 403 to anything but a GET whose
    // query carries the signature, as a URL presigned for GET does.
    let s = servers();
    let rel = "acc/cc-replica-groups-gz.neff";
    let url = format!(
        "{}/http/presigned/{rel}?X-Amz-Expires=60&X-Amz-Signature=sig",
        s.proxy
    );
    let file = s.seed.join(rel);
    let file = file.to_str().unwrap();
    for args in [
        vec!["ls"],
        vec!["get"],
        vec!["info", "--json"],
        vec!["verify"],
    ] {
        let mut local_args = args.clone();
        local_args.push(file);
        if args[0] == "get" {
            local_args.push("cc-world-size");
        }
        let mut remote_args = args.clone();
        remote_args.push(&url);
        if args[0] == "get" {
            remote_args.push("cc-world-size");
        }
        let local = crate::common::neff(&local_args);
        let o = run(&remote_args);
        assert!(
            o.status.success(),
            "{remote_args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        // (A path printed is the URL made printable: its query's values
        // hidden.)
        let shown = neff::redact_url(&url);
        let local = String::from_utf8_lossy(&local.stdout).replace(file, &shown);
        assert_eq!(String::from_utf8_lossy(&o.stdout), local, "{args:?}");
    }
    // Without the signature: refused in one line, exit 3.
    let bare = format!("{}/http/presigned/{rel}", s.proxy);
    let o = run(&["ls", &bare]);
    assert_eq!(o.status.code(), Some(3));
    // Every request the proxy saw for it was a GET carrying the query.
    let log = std::fs::read_to_string(&s.proxy_log).unwrap();
    let seen: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("/http/presigned/acc/cc-replica-groups-gz.neff?"))
        .collect();
    assert!(!seen.is_empty());
    assert!(
        seen.iter()
            .all(|l| l.starts_with("GET ") && l.contains("X-Amz-Signature=sig")),
        "{seen:?}"
    );
}

#[test]
fn a_bucket_scan_keeps_io_depth_objects_in_flight_whatever_the_worker_count() {
    // Through the proxy's `slow` mode (1 s before each answer), with one
    // worker thread: the objects are still read many at once, `--io-depth`
    // of them (their requests arrive together), and the records are the
    // local scan's.
    let s = servers();
    let endpoint = format!("{}/s3/slow", s.proxy);
    let log_before = std::fs::read_to_string(&s.proxy_log)
        .unwrap()
        .lines()
        .count();
    let o = run_env(
        &[
            "-j",
            "1",
            "--io-depth",
            "16",
            "scan",
            "--json",
            "--no-progress",
            "--sorted",
            "s3://zoo/acc/",
        ],
        &endpoint,
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let local = crate::common::neff_ok(&[
        "scan",
        "--json",
        "--no-progress",
        "--sorted",
        s.seed.join("acc").to_str().unwrap(),
    ]);
    let base = s.seed.join("acc").display().to_string();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&local).replace(&base, "s3://zoo/acc")
    );
    let log = std::fs::read_to_string(&s.proxy_log).unwrap();
    let mut arrived: Vec<f64> = log
        .lines()
        .skip(log_before)
        .filter(|l| l.starts_with("GET /s3/slow/zoo/acc/"))
        .filter_map(|l| l.split(' ').nth(4)?.parse().ok())
        .collect();
    arrived.sort_by(f64::total_cmp);
    assert!(arrived.len() >= 37, "{} GETs", arrived.len());
    // At some moment at least 8 requests were waiting together: arrivals
    // within one second of each other.
    let most = (0..arrived.len())
        .map(|i| {
            arrived[i..]
                .iter()
                .take_while(|&&t| t - arrived[i] < 1.0)
                .count()
        })
        .max()
        .unwrap();
    assert!(
        most >= 8,
        "at most {most} requests in flight together: {arrived:?}"
    );
}

#[test]
fn a_small_raw_neff_a_round_trip_away_is_fetched_whole_in_two_requests_not_walked() {
    // 200 ms away, four round trips' worth of bytes is over 3 MiB on any
    // link faster than 4 MB/s: the object is read whole. (The link's speed
    // is measured, on CI's two loaded cores too: 50 ms away, a CI run
    // measured less than the 15 MB/s that distance needs and walked it. On
    // loopback at 0 ms the round trip is a few hundred microseconds, and
    // walking it is as right: the choice there depends on the load.)
    let s = servers();
    let size = std::fs::metadata(s.seed.join(MID_RAW)).unwrap().len();
    assert!(size > 2 << 20 && size <= neff::REMOTE_WHOLE_BELOW);
    // A path of this test's own (`rangex1000000-TAG` keeps every Range).
    let mode = "delay200+rangex1000000-whole";
    let url = format!("{}/http/{mode}/{MID_RAW}", s.proxy);
    let path = format!("/http/{mode}/{MID_RAW}");
    for args in [vec!["ls", "--all"], vec!["info", "--json"]] {
        let before = log_requests(&s.proxy_log, &path);
        // (`-v`: the plan chosen and why, said on stderr should it fail.)
        let got = run(&[&["-v"], args.as_slice(), &[url.as_str()]].concat());
        let said = String::from_utf8_lossy(&got.stderr);
        assert!(got.status.success(), "{said}");
        let local_path = s.seed.join(MID_RAW);
        let want =
            crate::common::neff_ok(&[args.as_slice(), &[local_path.to_str().unwrap()]].concat());
        assert_eq!(
            String::from_utf8_lossy(&got.stdout),
            String::from_utf8_lossy(&want).replace(local_path.to_str().unwrap(), &url)
        );
        // The first 256 KiB, then the rest in one request.
        assert_eq!(
            settled_requests(&s.proxy_log, &path) - before,
            2,
            "{args:?}: {said}"
        );
    }
}

/// Whether `got` (for `url`) is the local answer `want` (for `local`), or
/// else one line naming the object: what every fault must end in.
fn local_answer_or_one_line(got: &Output, want: &Output, url: &str, local: &str, what: &str) {
    let err = String::from_utf8_lossy(&got.stderr);
    assert!(!err.contains("panicked"), "{what}: {err}");
    if got.status.success() {
        assert_eq!(
            String::from_utf8_lossy(&got.stdout).replace(url, "<file>"),
            String::from_utf8_lossy(&want.stdout).replace(local, "<file>"),
            "{what}: not the local answer"
        );
    } else {
        assert_eq!(err.lines().count(), 1, "{what}: not one line: {err}");
        assert!(err.starts_with(&format!("neff: {url}: ")), "{what}: {err}");
        assert!(got.stdout.is_empty(), "{what}: printed before failing");
    }
}

#[test]
fn faults_twenty_to_fifty_ms_away_end_in_the_local_answer_or_one_line_naming_the_object() {
    let s = servers();
    let few = [("NEFF_REMOTE_RETRIES", "2"), ("NEFF_REMOTE_TIMEOUT", "5")];
    // (The large gzip NEFF is spooled as its parts land, and inflated in
    // parallel rounds as they do: asked for one accessor only, for time.)
    let objects = [
        BIG_RAW,
        MID_RAW,
        MID_GZ,
        BIG_GZ,
        "acc/cc-replica-groups-gz.neff",
    ];
    // Each ends in the local answer: the delay alone, throttling, and a
    // body reset once (asked for again from where it stopped).
    let recover = [
        "delay20",
        "delay50",
        "delay25+503x2",
        "delay30+resetx1",
        "delay20+resetx3",
    ];
    // Each may end in one line: every body reset or cut, a replaced
    // object, a lying size, a server that stops honouring Range.
    let may_fail = [
        "delay50+reset",
        "delay25+truncate",
        "delay20+replace",
        "delay40+liesize",
        "delay20+rangex1",
    ];
    for mode in recover.iter().chain(&may_fail) {
        for rel in objects {
            let local = s.seed.join(rel);
            let local = local.to_str().unwrap();
            let url = format!("{}/http/{mode}/{rel}", s.proxy);
            for args in [
                &["ls", "--json", "FILE"][..],
                &["get", "FILE", "cc-world-size"],
            ] {
                if rel == BIG_GZ && args[0] == "ls" {
                    continue;
                }
                let with = |f: &str| -> Vec<String> {
                    args.iter()
                        .map(|a| if *a == "FILE" { f } else { a }.to_string())
                        .collect()
                };
                let (w, g) = (with(local), with(&url));
                let want = run(&w.iter().map(String::as_str).collect::<Vec<_>>());
                let t = Instant::now();
                let got = run_env(
                    &g.iter().map(String::as_str).collect::<Vec<_>>(),
                    &s.s3,
                    &few,
                );
                let what = format!("{mode} {args:?} {rel}");
                local_answer_or_one_line(&got, &want, &url, local, &what);
                if recover.contains(mode) {
                    assert_eq!(got.status.code(), want.status.code(), "{what}");
                }
                assert!(
                    t.elapsed() < Duration::from_secs(45),
                    "{what}: {:?}",
                    t.elapsed()
                );
            }
        }
    }
    // A bucket 25 ms away that throttles, then resets a body: the scan's
    // records are the local scan's, or each failed object is named.
    let local = run(&[
        "scan",
        "--json",
        "--no-progress",
        s.seed.join("acc").to_str().unwrap(),
    ]);
    assert!(local.status.success());
    let name = record_name;
    let mut local_records = ndjson(&local.stdout);
    local_records.sort_by_key(record_name);
    for mode in ["delay25+503x2", "delay25+resetx1"] {
        let endpoint = format!("{}/s3/{mode}", s.proxy);
        let got = run_env(
            &["scan", "--json", "--no-progress", "s3://zoo/acc/"],
            &endpoint,
            &few,
        );
        let err = String::from_utf8_lossy(&got.stderr);
        assert!(!err.contains("panicked"), "{mode}: {err}");
        let mut records = ndjson(&got.stdout);
        records.sort_by_key(record_name);
        assert_eq!(records.len(), local_records.len(), "{mode}: {err}");
        for (r, l) in records.iter().zip(&local_records) {
            assert_eq!(name(r), name(l), "{mode}");
            if r["ok"] == true {
                assert_eq!(without_path(r), without_path(l), "{mode}: {}", name(r));
            } else {
                let e = r["error"].as_str().unwrap();
                assert!(!e.contains('\n'), "{mode}: {e}");
            }
        }
        // Throttled or reset once, every object is read in the end.
        assert!(got.status.success(), "{mode}: {err}");
    }
}

#[test]
fn a_bucket_scan_on_a_terminal_shows_objects_bytes_and_requests_in_flight() {
    // util-linux's `script` gives neff a terminal for stderr (and stdout,
    // sent to /dev/null inside it); what it drew comes back on our stdout.
    let s = servers();
    let endpoint = format!("{}/s3/delay50", s.proxy);
    let command = format!(
        "{} scan --io-depth 2 s3://zoo/acc/ > /dev/null",
        env!("CARGO_BIN_EXE_neff")
    );
    let drawn = on_terminal(&command, &endpoint);
    let n = seed_files("acc").len();
    let lines: Vec<&str> = drawn.lines().filter(|l| l.contains(" moved, ")).collect();
    assert!(!lines.is_empty(), "no progress line: {drawn}");
    let last = lines.last().unwrap();
    assert!(last.contains(&format!("/{n} NEFFs")), "{last}");
    assert!(
        last.contains(" requests, ") && last.contains(" in flight"),
        "{last}"
    );
    // The bytes moved grow as the objects are read.
    assert!(lines.iter().any(|l| l.contains("KiB moved")), "{drawn}");
}

#[test]
fn dash_v_logs_each_request_with_its_range_bytes_and_time() {
    let s = servers();
    let url = format!("{}/http/ok/{BIG_RAW}", s.proxy);
    let o = run(&["-v", "ls", &url]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    let gets: Vec<&str> = err.lines().filter(|l| l.contains(": GET bytes ")).collect();
    assert!(!gets.is_empty(), "{err}");
    for l in &gets {
        assert!(
            l.starts_with(&format!("neff: info: {url}: GET bytes ")),
            "{l}"
        );
        assert!(l.ends_with(" ms"), "{l}");
    }
    // Without -v, nothing.
    let o = run(&["ls", &url]);
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Every seed fixture's `ls --json` and `get cc-world-size`, the large
/// and mid-size NEFFs (raw walked by ranges, If-Match on each; gzip
/// spooled or inflated as it arrives) and a scan of `acc/`, read from the
/// store at `root` (`az://zoo`, `gs://zoo`), answer as the local files do.
fn a_store_answers_as_local(root: &str) {
    let s = servers();
    for rel in seed_files("acc") {
        let local = s.seed.join(&rel);
        let local = local.to_str().unwrap();
        let url = format!("{root}/{rel}");
        for (cmd, question) in [("ls", "--json"), ("get", "cc-world-size")] {
            // `neff ls --json FILE`, `neff get FILE cc-world-size`.
            let on = |f: &str| match cmd {
                "ls" => run(&[cmd, question, f]),
                _ => run(&[cmd, f, question]),
            };
            let (want, got) = (on(local), on(&url));
            assert_eq!(got.status.code(), want.status.code(), "{url} {cmd}");
            assert_eq!(got.stdout, want.stdout, "{url} {cmd}");
            assert_eq!(
                String::from_utf8_lossy(&got.stderr).replace(&url, "<file>"),
                String::from_utf8_lossy(&want.stderr).replace(local, "<file>"),
                "{url} {cmd}"
            );
        }
    }
    for (rel, args) in [
        (BIG_RAW, &["ls", "--json", "FILE"][..]),
        (BIG_RAW, &["cat", "FILE", r"sg00/weights07\.bin"]),
        (BIG_GZ, &["get", "FILE", "cc-world-size"]),
        (MID_RAW, &["ls", "--json", "FILE"]),
        (MID_GZ, &["ls", "--json", "FILE"]),
    ] {
        answers_as_local(args, rel, &format!("{root}/{rel}"), &s.s3, &[]);
    }
    // A scan of the prefix: the local scan's records.
    scans_as_local_acc(&format!("{root}/acc/"));
}

#[test]
fn a_container_in_azurite_answers_as_the_local_files_and_scans_as_the_local_directory() {
    // Azure's own emulator, started by scripts/servers, holding the seed.
    a_store_answers_as_local("az://zoo");
    // A container that does not exist: one line naming the URL.
    let e = refused(&["ls", "az://nosuch/x.neff"], &[], &servers().s3);
    assert!(e.starts_with("neff: az://nosuch/x.neff: "), "{e}");
}

#[test]
fn a_bucket_in_fake_gcs_server_answers_as_the_local_files_and_scans_as_the_local_directory() {
    // Google Cloud Storage's emulator, started by scripts/servers, holding
    // the seed (XML API: ranged GETs, `list-type=2` listings).
    a_store_answers_as_local("gs://zoo");
    // A key that is not there: one line naming the URL, exit 3.
    let o = run(&["ls", "gs://zoo/acc/nosuch.neff"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{e}");
    assert!(
        e.trim_end().starts_with(
            "neff: gs://zoo/acc/nosuch.neff: no such object (or no such bucket) (404, 1 try in "
        ),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1, "{e}");
}

#[test]
fn a_hub_repository_answers_as_the_local_files_at_any_revision_with_the_users_token() {
    // The hub stand-in serves the seed as the gated model `neff/zoo` (and
    // the dataset `neff/zoo-data`), 25 entries a listing page, files over
    // 64 KiB through a redirect to its CDN, as the hub does.
    let s = servers();
    for root in [
        "hf://neff/zoo/acc/",
        "hf://neff/zoo@v1/acc",
        "hf://datasets/neff/zoo-data/acc/",
    ] {
        scans_as_local_acc(root);
    }
    // The large files: the raw one walked by ranges on the CDN, the gzip
    // one spooled, each as the local file answers.
    for (rel, args) in [
        (BIG_RAW, &["ls", "--json", "FILE"][..]),
        (BIG_RAW, &["cat", "FILE", r"sg00/weights07\.bin"]),
        (BIG_GZ, &["get", "FILE", "cc-world-size"]),
        (MID_RAW, &["ls", "--json", "FILE"]),
    ] {
        answers_as_local(args, rel, &format!("hf://neff/zoo/{rel}"), &s.s3, &[]);
    }
    // The token where the hub client keeps it: $HF_HOME/token.
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("token"), format!("{}\n", s.hub_token)).unwrap();
    let rel = "acc/cc-replica-groups-gz.neff";
    let url = format!("hf://neff/zoo/{rel}");
    let hf_home = home.path().to_str().unwrap();
    answers_as_local(
        &["get", "FILE", "cc-world-size"],
        rel,
        &url,
        &s.s3,
        &[("HF_TOKEN", ""), ("HF_HOME", hf_home)],
    );
    // No token: one line naming the object, saying why.
    let empty = tempfile::tempdir().unwrap();
    let no_token = [
        ("HF_TOKEN", ""),
        ("HF_HOME", empty.path().to_str().unwrap()),
    ];
    let e = refused(&["ls", &url], &no_token, &s.s3);
    assert!(e.starts_with(&format!("neff: {url}: ")), "{e}");
    assert!(e.contains("not authenticated"), "{e}");
    // A scan without it: the root's record says why, and the exit status.
    let o = run_env(
        &["scan", "--json", "--no-progress", "hf://neff/zoo/acc/"],
        &s.s3,
        &no_token,
    );
    assert_eq!(o.status.code(), Some(3), "a root that cannot be listed");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.starts_with("neff: hf://neff/zoo/acc/: "), "{err}");
    let records = ndjson(&o.stdout);
    assert_eq!(records.len(), 1);
    let e = records[0]["error"].as_str().unwrap();
    assert!(e.contains("HF_TOKEN"), "{e}");
    // A repository or revision that does not exist.
    for bad in ["hf://neff/nope/acc/x.neff", "hf://neff/zoo@v9/acc/x.neff"] {
        let e = refused(&["ls", bad], &[], &s.s3);
        assert!(e.starts_with(&format!("neff: {bad}: ")), "{e}");
        assert!(e.contains("no such object"), "{e}");
    }
}

#[test]
fn objects_gone_looping_or_shorter_than_listed_are_one_error_each_the_others_scanned() {
    // The hub stand-in lists three files under faults/ that each fail when
    // read: gone since the listing (404), a redirect to itself, 100 bytes
    // where the listing said 5,000. Scanned with a good prefix beside them.
    let s = servers();
    let o = run(&[
        "scan",
        "--json",
        "--no-progress",
        "--strict",
        "hf://neff/zoo/faults/",
        "hf://neff/zoo/mid/",
    ]);
    assert_eq!(o.status.code(), Some(1), "--strict: some failed");
    let mut records = ndjson(&o.stdout);
    records.sort_by_key(|r| r["path"].as_str().unwrap().to_string());
    let paths: Vec<&str> = records
        .iter()
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "hf://neff/zoo/faults/ghost.neff",
            "hf://neff/zoo/faults/loop.neff",
            "hf://neff/zoo/faults/short.neff",
            "hf://neff/zoo/mid/gzip.neff",
            "hf://neff/zoo/mid/raw.neff",
        ]
    );
    let error = |i: usize| records[i]["error"].as_str().unwrap_or("").to_string();
    assert!(error(0).contains("no such object"), "{}", error(0));
    assert!(error(1).to_lowercase().contains("redirect"), "{}", error(1));
    assert!(!error(2).is_empty(), "short: {:?}", records[2]);
    for r in &records[3..] {
        assert_eq!(r["ok"], true, "{r:?}");
    }
    for (i, r) in records.iter().take(3).enumerate() {
        assert_eq!(r["ok"], false);
        assert!(!error(i).contains('\n'), "{}", error(i));
    }
    let _ = s;
}

/// A one-thread stand-in for the IAM Identity Center portal's
/// `GET /federation/credentials`: it answers role keys for `token` (moto
/// takes any), 401 for another, and records each request's first line and
/// bearer header.
fn sso_portal(token: &'static str) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut first = String::new();
            reader.read_line(&mut first).unwrap_or(0);
            let mut bearer = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((k, v)) = line.split_once(':') {
                    if k.eq_ignore_ascii_case("x-amz-sso_bearer_token") {
                        bearer = v.trim().to_string();
                    }
                }
            }
            log.lock()
                .unwrap()
                .push(format!("{} {bearer}", first.trim()));
            let (status, body) = if bearer == token {
                (
                    "200 OK",
                    r#"{"roleCredentials":{"accessKeyId":"sso","secretAccessKey":"sso","sessionToken":"t","expiration":4102444800000}}"#,
                )
            } else {
                (
                    "401 Unauthorized",
                    r#"{"message":"Session token not found or invalid"}"#,
                )
            };
            let _ = write!(
                conn,
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, seen)
}

#[test]
fn an_sso_profile_logged_in_with_the_aws_cli_authenticates_from_its_token_cache() {
    use sha1::Digest;
    let s = servers();
    let (portal, seen) = sso_portal("tok-1");
    let home = tempfile::tempdir().unwrap();
    let aws = home.path().join(".aws");
    std::fs::create_dir_all(aws.join("sso/cache")).unwrap();
    std::fs::write(
        aws.join("config"),
        format!(
            "[profile dev]\nsso_session = corp\nsso_account_id = 111122223333\nsso_role_name = ReadOnly\n\
             region = us-east-1\nendpoint_url = {s3}\n\n\
             [sso-session corp]\nsso_start_url = https://corp.awsapps.com/start\nsso_region = eu-west-1\n\n\
             [profile old]\nsso_start_url = https://old.awsapps.com/start\nsso_region = eu-west-1\n\
             sso_account_id = 444455556666\nsso_role_name = Admin\nendpoint_url = {s3}\n",
            s3 = s.s3
        ),
    )
    .unwrap();
    // As `aws sso login` leaves them: keyed by the session's name, or by
    // the start URL for a profile of the older form.
    let cache = |key: &str, token: &str, expires: &str| {
        let hex: String = sha1::Sha1::digest(key.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        std::fs::write(
            aws.join(format!("sso/cache/{hex}.json")),
            format!(r#"{{"startUrl":"x","region":"eu-west-1","accessToken":"{token}","expiresAt":"{expires}"}}"#),
        )
        .unwrap();
    };
    cache("corp", "tok-1", "2099-01-01T00:00:00Z");
    cache(
        "https://old.awsapps.com/start",
        "tok-1",
        "2099-01-01T00:00:00UTC",
    );
    let rel = "acc/cc-none-gz.neff";
    let local = neff_ok_status_raw(&["ls", s.seed.join(rel).to_str().unwrap()]);
    let url = format!("s3://zoo/{rel}");
    let portal_env = [("AWS_ENDPOINT_URL_SSO", portal.as_str())];
    for profile in ["dev", "old"] {
        let o = run_with_home(
            &["--profile", profile, "ls", &url],
            home.path(),
            &portal_env,
        );
        assert!(
            o.status.success(),
            "{profile}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(o.stdout, local, "{profile}");
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            "GET /federation/credentials?role_name=ReadOnly&account_id=111122223333 HTTP/1.1 tok-1",
            "GET /federation/credentials?role_name=Admin&account_id=444455556666 HTTP/1.1 tok-1",
        ]
    );
    // An expired session, a missing one, a token the portal refuses: one
    // line each, saying to log in again.
    cache("corp", "tok-1", "2001-01-01T00:00:00Z");
    let o = run_with_home(&["--profile", "dev", "ls", &url], home.path(), &portal_env);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("expired") && err.contains("aws sso login --profile dev"),
        "{err}"
    );
    cache("corp", "tok-2", "2099-01-01T00:00:00Z");
    let o = run_with_home(&["--profile", "dev", "ls", &url], home.path(), &portal_env);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("refused") && err.contains("aws sso login"),
        "{err}"
    );
    std::fs::remove_dir_all(aws.join("sso/cache")).unwrap();
    let o = run_with_home(&["--profile", "dev", "ls", &url], home.path(), &portal_env);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no cached SSO token"), "{err}");
}

#[test]
fn on_a_slow_link_a_small_raw_neff_is_walked_by_its_headers_not_fetched_whole() {
    // 20 ms away on a 5 MB/s link (the proxy paces every body): a round
    // trip's worth of bytes is ~100 KB, less than one of the 256 KiB
    // members, so the walk hops over them. On loopback the same NEFF is
    // fetched whole (a_small_raw_neff_is_fetched_whole_…).
    let s = servers();
    let url = format!("{}/http/delay20+bw5/{MID_RAW}", s.proxy);
    let size = std::fs::metadata(s.seed.join(MID_RAW)).unwrap().len();
    let before = log_bytes(&s.proxy_log, &format!("/http/delay20+bw5/{MID_RAW}"));
    answers_as_local(&["ls", "--json", "FILE"], MID_RAW, &url, &s.s3, &[]);
    std::thread::sleep(Duration::from_millis(300));
    let moved = log_bytes(&s.proxy_log, &format!("/http/delay20+bw5/{MID_RAW}")) - before;
    assert!(moved * 2 < size, "moved {moved} of {size} bytes");
}

/// The last part of a record's path (its file's name).
fn record_name(v: &serde_json::Value) -> String {
    let p = v["path"].as_str().unwrap();
    p.rsplit('/').next().unwrap().to_string()
}

/// A record without its path (the one field a remote scan's differs in).
fn without_path(v: &serde_json::Value) -> serde_json::Value {
    let mut v = v.clone();
    v.as_object_mut().unwrap().remove("path");
    v
}

/// `neff scan --json` of `root` gives the records the local scan of the
/// seed's `acc/` gives, each path under `root`.
fn scans_as_local_acc(root: &str) {
    let s = servers();
    let local = run(&[
        "scan",
        "--json",
        "--no-progress",
        s.seed.join("acc").to_str().unwrap(),
    ]);
    let got = run(&["scan", "--json", "--no-progress", root]);
    assert!(
        got.status.success(),
        "{root}: {}",
        String::from_utf8_lossy(&got.stderr)
    );
    let (mut want, mut have) = (ndjson(&local.stdout), ndjson(&got.stdout));
    want.sort_by_key(record_name);
    have.sort_by_key(record_name);
    assert_eq!(have.len(), want.len(), "{root}: every object listed");
    for (h, w) in have.iter().zip(&want) {
        let p = h["path"].as_str().unwrap();
        assert!(
            p.starts_with(root.trim_end_matches('/')),
            "{p} under {root}"
        );
        assert_eq!(without_path(h), without_path(w), "{p}");
    }
}

/// The compile-cache entry of `pages/` whose keys straddle a page's end.
const PAGES_ENTRY: &str = "b/neuronxcc-2.15.0/MODULE_1+a";

/// Uploads (once) 4,202 keys under `s3://zoo/pages/`: five listing pages
/// of 1,000 listed in one range, seven listed in ranges (`e/` alone is
/// four). A NEFF is the first key; a compile-cache entry straddles the
/// first page's end (its model.neff the page's last key, its lock the next
/// page's first); a plain NEFF sits on the second page. Returns the local
/// copy.
fn pages() -> &'static Path {
    static PAGES: OnceLock<tempfile::TempDir> = OnceLock::new();
    PAGES
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let local = dir.path().join("pages");
            let neff = &neffs("fixtures/acc")[0];
            let put = |rel: &str, bytes: &[u8]| {
                let p = local.join(rel);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, bytes).unwrap();
            };
            let neff_bytes = std::fs::read(neff).unwrap();
            put("0/early.neff", &neff_bytes);
            for i in 0..998 {
                put(&format!("a/f{i:04}.txt"), b"x");
            }
            // No model.done (2.15 writes one): locked with its lock,
            // incomplete without it.
            put(&format!("{PAGES_ENTRY}/model.neff"), &neff_bytes);
            put(&format!("{PAGES_ENTRY}/model.neff.lock"), b"");
            put("d/late.neff", &neff_bytes);
            for i in 0..3199 {
                put(&format!("e/f{i:04}.txt"), b"x");
            }
            upload(&local, "pages/");
            dir
        })
        .path()
}

/// Uploads every file under `dir` to the S3 server's bucket `zoo`, keys
/// under `prefix` (`scripts/servers upload`).
fn upload(dir: &Path, prefix: &str) {
    let up = Command::new("python3")
        .arg(root().join("scripts/servers"))
        .args(["upload", &servers().s3, dir.to_str().unwrap(), prefix])
        .output()
        .unwrap();
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
}

/// Asserts, from the proxy's log lines from byte `from` on, that the
/// listing of `pages/` through `mode` took nine list requests and that
/// `pages/0/early.neff` was asked for before the last of them was (the
/// requests' arrival times).
fn read_while_listed(from: usize, mode: &str) {
    let log = std::fs::read_to_string(&servers().proxy_log).unwrap();
    let arrived = |l: &str| -> f64 { l.split(' ').nth(4).unwrap().parse().unwrap() };
    let lists: Vec<f64> = log[from..]
        .lines()
        .filter(|l| l.starts_with(&format!("GET /s3/{mode}/zoo?")) && l.contains("pages"))
        .map(arrived)
        .collect();
    let early: Vec<f64> = log[from..]
        .lines()
        .filter(|l| l.starts_with(&format!("GET /s3/{mode}/zoo/pages/0/early.neff ")))
        .map(arrived)
        .collect();
    // One listing by delimiter finds the children 0, a, b, d, e; a range
    // from each, listed at once, the last (3,199 keys) in four pages, one
    // after another.
    assert_eq!(lists.len(), 9, "list requests: {lists:?}");
    assert!(!early.is_empty(), "early.neff was read through the proxy");
    let last = lists.iter().copied().fold(0.0, f64::max);
    assert!(
        early[0] < last,
        "early.neff asked for at {} and the last page at {last}",
        early[0],
    );
}

#[test]
fn a_bucket_prefix_is_scanned_while_its_pages_are_listed_each_entry_judged_whole() {
    let s = servers();
    let local = pages();
    let entry = PAGES_ENTRY;
    // 40 ms a request: each listing page waits out its round trip.
    let endpoint = format!("{}/s3/delay40", s.proxy);
    let o = run_env(
        &[
            "scan",
            "--json",
            "--no-progress",
            "--sorted",
            "s3://zoo/pages/",
        ],
        &endpoint,
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let remote = ndjson(&o.stdout);
    let local_out = run(&[
        "scan",
        "--json",
        "--no-progress",
        "--sorted",
        local.to_str().unwrap(),
    ]);
    let want = ndjson(&local_out.stdout);
    let paths: Vec<String> = remote
        .iter()
        .map(|r| r["path"].as_str().unwrap().into())
        .collect();
    assert_eq!(
        paths,
        [
            "s3://zoo/pages/0/early.neff".to_string(),
            format!("s3://zoo/pages/{entry}/model.neff"),
            "s3://zoo/pages/d/late.neff".to_string(),
        ]
    );
    assert_eq!(want.len(), 3);
    for (r, l) in remote.iter().zip(&want) {
        // The straddling entry is judged from all its keys (its lock
        // included): as on disk.
        for k in [
            "ok",
            "cache_state",
            "compiler",
            "cache_key",
            "arch",
            "members",
        ] {
            assert_eq!(r[k], l[k], "{k} of {}", r["path"]);
        }
    }
    assert_eq!(remote[1]["cache_state"], "locked", "{:?}", remote[1]);
    // A single object named beside the prefix holding it is read once.
    let both = run(&[
        "scan",
        "--json",
        "--no-progress",
        "--sorted",
        "s3://zoo/pages/0/early.neff",
        "s3://zoo/pages/",
    ]);
    let both: Vec<String> = ndjson(&both.stdout)
        .iter()
        .map(|r| r["path"].as_str().unwrap().into())
        .collect();
    assert_eq!(both, paths, "each object once");

    // Pipelined: the first NEFF was asked for before the listing ended.
    read_while_listed(0, "delay40");
}

#[test]
fn an_indexed_scan_reads_a_prefix_while_listing_it_and_keeps_the_rows_of_one_it_cannot_list() {
    let s = servers();
    pages();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("pages.db");
    let db = db.to_str().unwrap();
    // 41 ms a request (a mode of its own: the plain scan's test reads the
    // log of `delay40` beside this one).
    let scan = |mode: &str| {
        run_env(
            &[
                "scan",
                "--json",
                "--no-progress",
                "--sorted",
                "--index",
                db,
                "s3://zoo/pages/",
            ],
            &format!("{}/s3/{mode}", s.proxy),
            &[],
        )
    };
    let from = std::fs::metadata(&s.proxy_log).map_or(0, |m| m.len() as usize);
    let cold = scan("delay41");
    let err = String::from_utf8_lossy(&cold.stderr);
    assert!(cold.status.success(), "{err}");
    assert!(
        err.contains("3 files") && err.contains(", 0 from the index"),
        "{err}"
    );
    let plain = run(&[
        "scan",
        "--json",
        "--no-progress",
        "--sorted",
        "s3://zoo/pages/",
    ]);
    // (The lock's age in the entry's reason moves with the clock.)
    let records = |o: &Output| -> Vec<serde_json::Value> {
        let mut v = ndjson(&o.stdout);
        for r in &mut v {
            r.as_object_mut().unwrap().remove("cache_reason");
        }
        v
    };
    assert_eq!(records(&cold), records(&plain));
    // Pipelined: the first NEFF was asked for before the listing ended.
    read_while_listed(from, "delay41");

    let warm = scan("delay41");
    let err = String::from_utf8_lossy(&warm.stderr);
    assert!(err.contains(", 3 from the index"), "{err}");
    assert_eq!(records(&warm), records(&plain));

    // A listing refused: the prefix is named, and its rows are not taken
    // for gone (the next scan answers them from the index).
    let denied = scan("403");
    let err = String::from_utf8_lossy(&denied.stderr);
    assert_eq!(denied.status.code(), Some(3), "{err}");
    assert!(err.contains("s3://zoo/pages/"), "{err}");
    let again = scan("delay41");
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(err.contains(", 3 from the index"), "{err}");
}

/// Keys of every kind around the boundaries a listing in parallel splits
/// at (before `MODULE_0`, after `MODULE_f`, not hex, a boundary's own
/// name, nested, a single child), uploaded once under `s3://zoo/ranges/`.
/// Returns the local copy (its `ranges/` directory).
fn ranges_layout() -> &'static Path {
    static RANGES: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &RANGES
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let local = dir.path().join("ranges");
            let neff_bytes = std::fs::read(&neffs("fixtures/acc")[0]).unwrap();
            let v = "neuronxcc-2.15.0";
            let mut neff_keys: Vec<String> = [
                "early.neff",
                "z.neff",
                "other/deep/x.neff",
                "single/only/neuronxcc-2.14.0/MODULE_3+d/model.neff",
            ]
            .map(String::from)
            .to_vec();
            for k in [
                "0first.neff",
                "MODULE_.neff",
                "MODULE_0123+ab/model.neff",
                "MODULE_f/x.neff",
                "MODULE_1+a/model.neff",
                "MODULE_9z/x.neff",
                "MODULE_A1+b/model.neff",
                "MODULE_f.neff",
                "MODULE_ff+c/model.neff",
                "MODULE_g/model.neff",
                "a/b/c/model.neff",
                "zz.neff",
            ] {
                neff_keys.push(format!("{v}/{k}"));
            }
            // An entry under each first digit of a second version.
            for c in "0123456789abcdef".chars() {
                neff_keys.push(format!("neuronxcc-2.16.0/MODULE_{c}1+e/model.neff"));
            }
            let put = |rel: &str, bytes: &[u8]| {
                let p = local.join(rel);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, bytes).unwrap();
            };
            for k in &neff_keys {
                put(k, &neff_bytes);
            }
            put(&format!("{v}/MODULE_0123+ab/model.done"), b"");
            put(&format!("{v}/MODULE_1+a/model.neff.lock"), b"");
            put(&format!("{v}/MODULE_1"), b"a key named as a boundary");
            put("neuronxcc-2.16.0/MODULE_51+e/model.done", b"");
            upload(&local, "ranges/");
            (dir, local)
        })
        .1
}

/// (path below the root, ok, cache state, compiler, cache key) of each
/// record of `scan --sorted --json` output.
fn scanned(out: &Output, root: &str) -> Vec<(String, String)> {
    ndjson(&out.stdout)
        .iter()
        .map(|r| {
            let p = r["path"].as_str().unwrap();
            let rel = p
                .strip_prefix(root)
                .unwrap_or_else(|| panic!("{p} not under {root}"));
            // (A key named as an entry, `MODULE_f.neff`, is judged `empty`
            // in a bucket and not at all on disk: not what is compared here.)
            let state = match p.ends_with("/model.neff") {
                true => r["cache_state"].to_string(),
                false => String::new(),
            };
            let fields = [
                r["ok"].to_string(),
                state,
                r["compiler"].to_string(),
                r["cache_key"].to_string(),
            ];
            (rel.trim_start_matches('/').to_string(), fields.join(" "))
        })
        .collect()
}

#[test]
fn a_prefix_listed_in_parallel_ranges_gives_every_key_once_whatever_the_layout() {
    let s = servers();
    let local = ranges_layout();
    let scan_args =
        |root: &str| ["scan", "--json", "--no-progress", "--sorted", root].map(String::from);
    for sub in [
        "",
        "neuronxcc-2.15.0/",
        "neuronxcc-2.16.0/",
        "other/",
        "single/",
        "single/only/neuronxcc-2.14.0/MODULE_3+d/",
    ] {
        let url = format!("s3://zoo/ranges/{sub}");
        let args = scan_args(&url);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run_env(&args, &s.s3, &[]);
        assert!(
            o.status.success(),
            "{url}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let dir = local.join(sub);
        let dir = dir.to_str().unwrap().trim_end_matches('/');
        let want = run(&["scan", "--json", "--no-progress", "--sorted", dir]);
        let got = scanned(&o, url.trim_end_matches('/'));
        assert_eq!(got, scanned(&want, dir), "{url}");
        assert!(!got.is_empty(), "{url}");
    }
    // The whole prefix: 32 NEFFs, an entry's lock and done judged with it.
    let o = run_env(
        &scan_args("s3://zoo/ranges/").each_ref().map(String::as_str),
        &s.s3,
        &[],
    );
    let got = scanned(&o, "s3://zoo/ranges");
    assert_eq!(got.len(), 32, "{got:?}");
    let state = |p: &str| {
        got.iter()
            .find(|(k, _)| k == p)
            .map(|(_, f)| f.clone())
            .unwrap()
    };
    assert!(state("neuronxcc-2.15.0/MODULE_1+a/model.neff").contains("\"locked\""));
}

#[test]
fn a_prefixs_ranges_are_listed_at_once_not_page_after_page() {
    let s = servers();
    ranges_layout();
    let from = std::fs::metadata(&s.proxy_log).map_or(0, |m| m.len() as usize);
    // Each request waits 1 s: listed one after another, the 34 ranges
    // (one from each child but the first, 15 in each version) would take
    // 34 s; at once, 32 in flight, 2 s.
    let t0 = Instant::now();
    let o = run_env(
        &[
            "scan",
            "--json",
            "--no-progress",
            "-g",
            "no-such-*",
            "s3://zoo/ranges/",
        ],
        &format!("{}/s3/slow", s.proxy),
        &[],
    );
    let took = t0.elapsed();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let log = std::fs::read_to_string(&s.proxy_log).unwrap();
    let lists: Vec<f64> = log[from..]
        .lines()
        .filter(|l| l.starts_with("GET /s3/slow/zoo?") && l.contains("ranges"))
        .map(|l| l.split(' ').nth(4).unwrap().parse().unwrap())
        .collect();
    assert!(lists.len() >= 30, "{lists:?}");
    let second = lists[1];
    let together = lists.iter().filter(|&&t| t - second < 0.5).count();
    assert!(
        together >= 30,
        "{together} of {} list requests within 0.5 s: {lists:?}",
        lists.len()
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
}

/// Stops the servers of a state directory when dropped (a test that
/// fails stops them too).
struct Stop(PathBuf);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = Command::new("python3")
            .arg(root().join("scripts/servers"))
            .arg("stop")
            .arg(&self.0)
            .output();
    }
}

/// `scripts/servers bucket ROOT STATE EXTRA`: each directory of `root`
/// a bucket, served by `rclone serve s3`; what the script says of it.
fn rclone_bucket(root: &Path, state: &Path, extra: &[&str]) -> serde_json::Value {
    let out = Command::new("python3")
        .arg(crate::common::root().join("scripts/servers"))
        .args(["bucket", root.to_str().unwrap()])
        .arg(state)
        .args(extra)
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success(), "scripts/servers bucket failed");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn keys_a_url_or_a_store_path_would_spell_otherwise_are_listed_and_read_exactly() {
    // A listing in ranges started each range after a key made a store
    // path from its string: `b"q` was asked for as `b%22q`, and the keys
    // of `b"q/` (`"` sorts below `%`) were never listed, nor read, and an
    // indexed scan retired their rows. And a key made into a URL as it is
    // was cut at `#` (a fragment) or decoded at `%20`: `c#d/x.neff` was read
    // as the object `c`, `e%20f/x.neff` as `e f/x.neff` (a prune's delete
    // goes by the same URL: `remote::scheme`'s tests).
    let dir = tempfile::tempdir().unwrap();
    let zoo = dir.path().join("root/zoo");
    let neff = std::fs::read(root().join("fixtures/acc/cc-replica-groups-gz.neff")).unwrap();
    let entry = "t#1/neuronxcc-2.15.0/MODULE_0123456789abcdef0123+01234567";
    let files: [(&str, &[u8]); 8] = [
        ("a/x.neff", &neff),
        ("b\"q/y.neff", &neff),
        ("c#d/x.neff", &neff),
        ("c", b"a decoy the URL cut at # named"),
        ("e%20f/x.neff", &neff),
        ("e f/x.neff", b"a decoy the URL decoded at %20 named"),
        (&format!("{entry}/model.log"), b"ERROR: it broke\n"),
        ("z/w.neff", &neff),
    ];
    for (rel, bytes) in files {
        let p = zoo.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
    }
    let state = dir.path().join("state");
    let _stop = Stop(state.clone());
    let info = rclone_bucket(&dir.path().join("root"), &state, &[]);
    let s3 = info["s3"].as_str().unwrap();
    let args = ["scan", "--json", "--no-progress", "--sorted", "s3://zoo/"];
    let got: Vec<(String, bool)> = ndjson(&run_env(&args, s3, &[]).stdout)
        .iter()
        .map(|r| (r["path"].as_str().unwrap().to_string(), r["ok"] == true))
        .collect();
    let want = [
        ("s3://zoo/a/x.neff", true),
        ("s3://zoo/b\"q/y.neff", true),
        ("s3://zoo/c%23d/x.neff", true),
        ("s3://zoo/e f/x.neff", false),
        ("s3://zoo/e%2520f/x.neff", true),
        (
            "s3://zoo/t%231/neuronxcc-2.15.0/MODULE_0123456789abcdef0123+01234567",
            false,
        ),
        ("s3://zoo/z/w.neff", true),
    ]
    .map(|(p, ok)| (p.to_string(), ok));
    assert_eq!(got, want);
    // Indexed twice: a row per NEFF, each key its own (the entry holding
    // none has no identity to key a row on), none retired.
    let db = dir.path().join("zoo.db");
    let indexed = [
        "scan",
        "--json",
        "--no-progress",
        "--index",
        db.to_str().unwrap(),
        "s3://zoo/",
    ];
    let want_keys = [
        "s3://zoo/a/x.neff",
        "s3://zoo/b%22q/y.neff",
        "s3://zoo/c%23d/x.neff",
        "s3://zoo/e%20f/x.neff",
        "s3://zoo/e%2520f/x.neff",
        "s3://zoo/z/w.neff",
    ];
    for _ in 0..2 {
        let o = run_env(&indexed, s3, &[]);
        assert!(
            o.status.code().is_some_and(|c| c <= 1),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let c = rusqlite::Connection::open(&db).unwrap();
        let mut st = c.prepare("SELECT key FROM neffs ORDER BY key").unwrap();
        let keys: Vec<String> = st
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(keys, want_keys);
    }
}

#[test]
fn a_compile_cache_served_by_rclone_through_the_latency_pipe_scans_as_on_disk() {
    // The bench's server (PERF.md, bucket-scale): rclone serve s3 of a
    // directory, 20 ms away through the latency pipe.
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("root/zoo");
    crate::cache::cache(&cache);
    let state = dir.path().join("state");
    let _stop = Stop(state.clone());
    let info = rclone_bucket(&dir.path().join("root"), &state, &["--delay", "20"]);
    let pipe = info["pipe"].as_str().unwrap();
    let pipe_log = PathBuf::from(info["pipe_log"].as_str().unwrap());
    let args = ["scan", "--json", "--no-progress", "--sorted", "s3://zoo/"];
    let o = run_env(&args, pipe, &[]);
    assert!(
        o.status.success() || o.status.code() == Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let local = cache.to_str().unwrap();
    let want = run(&["scan", "--json", "--no-progress", "--sorted", local]);
    let got = scanned(&o, "s3://zoo");
    assert!(!got.is_empty());
    assert_eq!(got, scanned(&want, local));
    // Each ranged GET was answered 206 (rclone says 200): each small NEFF
    // was read in one GET, not read again whole as from a server that
    // ignores Range.
    let log = std::fs::read_to_string(&pipe_log).unwrap();
    let mut gets: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("GET ") && l.contains(".neff "))
        .map(|l| l.split(' ').nth(1).unwrap())
        .collect();
    let n = gets.len();
    gets.sort();
    gets.dedup();
    assert_eq!(n, gets.len(), "a NEFF read twice:\n{log}");
    assert!(n > 0 && log.contains("list-type=2"), "{log}");
    // `cache status` judges each entry as on disk: a failed entry's log,
    // shorter than the tail asked for, was answered 416 by rclone and the
    // entry said `unreadable`.
    let states = |o: Output, root: &str| -> Vec<(String, String, Option<String>)> {
        ndjson(&o.stdout)
            .iter()
            .map(|e| {
                let path = e["path"].as_str().unwrap();
                let reason = e["reason"].as_str().map(str::to_string);
                let rel = path.strip_prefix(root).unwrap().to_string();
                (rel, e["state"].as_str().unwrap().to_string(), reason)
            })
            .collect()
    };
    let status = ["cache", "status", "--json", "s3://zoo/"];
    let got = states(run_env(&status, pipe, &[]), "s3://zoo");
    let want = states(run(&["cache", "status", "--json", local]), local);
    assert!(got.iter().any(|e| e.1 == "failed"), "{got:?}");
    assert_eq!(got, want);
    // And from rclone directly, which answers a range of the whole object
    // 200 with all of it (the pipe passes that answer on otherwise).
    let s3 = info["s3"].as_str().unwrap();
    assert_eq!(states(run_env(&status, s3, &[]), "s3://zoo"), want);
}
