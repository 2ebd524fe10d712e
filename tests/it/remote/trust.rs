//! Trust at the edges (issue 49), over the servers and fault proxy of
//! `remote.rs`: no secret of a URL (a presigned query, a password) in any
//! output of any command or in a catalogue; a failed request one line in
//! the project's words, exit 3.

use super::{run_env, servers};

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
        ];
        for args in commands {
            // Every request logged too (-vv), and the client's own log lines.
            let mut all = vec!["-vv"];
            all.extend_from_slice(&args);
            let o = run_env(&all, &s.s3, &[FEW[0], FEW[1], ("RUST_LOG", "debug")]);
            leaks.extend(secrets_in(&format!("{name} {args:?} stdout"), &o.stdout));
            leaks.extend(secrets_in(&format!("{name} {args:?} stderr"), &o.stderr));
            let err = String::from_utf8_lossy(&o.stderr);
            if code == 3 && args[0] != "scan" {
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
