//! Every accessor, on every fixture, equals what `tests/helpers/oracle.py` (a
//! standard-library Python reading of docs/FORMAT.md) computes, as a value
//! and as the text Python's `json.dumps` prints.

use std::process::Command;

use crate::common::*;
use neff::accessors::Accessor;
use neff::Neff;

#[test]
fn accessors_match_the_python_oracle_on_every_fixture() {
    let mut checked = 0;
    for dir in ["fixtures/acc", "fixtures/interop"] {
        let o = Command::new("python3")
            .arg(root().join("tests/helpers/oracle.py"))
            .arg(root().join(dir))
            .output()
            .expect("python3 runs the oracle");
        assert!(
            o.status.success(),
            "oracle: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let all: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        for (path, want) in all.as_object().unwrap() {
            let n = Neff::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let names: Vec<String> = n.files().map(|e| n.name_str(e).into_owned()).collect();
            let want_names: Vec<String> = serde_json::from_value(want["members"].clone()).unwrap();
            assert_eq!(names, want_names, "{path}: member list");
            for a in Accessor::ALL {
                let w = &want["accessors"][a.name()];
                let mut out = Vec::new();
                match (a.write_json(&n, &mut out), w.get("text"), w.get("error")) {
                    (Ok(()), Some(text), _) => {
                        if let Some(v) = w.get("value") {
                            let got: serde_json::Value = serde_json::from_slice(&out).unwrap();
                            assert_eq!(&got, v, "{path} {}", a.name());
                        }
                        // Byte for byte what Python's json.dumps prints: key
                        // order, number forms and escapes included.
                        let text = text.as_str().expect("the oracle prints the text");
                        assert_eq!(
                            String::from_utf8_lossy(&out),
                            text,
                            "{path} {}: text differs from json.dumps",
                            a.name()
                        );
                    }
                    (Err(e), _, Some(msg)) => {
                        let msg = msg.as_str().unwrap();
                        let got = e.to_string();
                        let ok = if msg.starts_with("invalid JSON") {
                            got.starts_with("invalid JSON")
                        } else {
                            got.contains(msg)
                        };
                        assert!(ok, "{path} {}: error {got:?}, oracle {msg:?}", a.name());
                    }
                    (r, _, _) => panic!(
                        "{path} {}: neff gave {:?} / {:?}, oracle {w}",
                        a.name(),
                        r.err().map(|e| e.to_string()),
                        String::from_utf8_lossy(&out)
                    ),
                }
                checked += 1;
            }
        }
    }
    assert!(
        checked >= 11 * 40,
        "only {checked} accessor results checked"
    );
}
