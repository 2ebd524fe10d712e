//! `-j/--threads N` sizes the gzip engine's parallel rounds: the same
//! output at every N, rounds of N segments in the debug log.

use neff::pack::{pack, PackEntry, PackOptions};

use crate::common::{neff, neff_ok};

/// A gzip NEFF of over 16 MiB of gzip (the parallel threshold) whose tar
/// is float32 weights of a slowly varying signal between lines of JSON-like
/// text, every 4 KiB: inflated in rounds (the literals of the weights let
/// a segment's unknown window clear soon), not read in place as stored
/// blocks would be, nor sent to one core as long runs are.
fn mixed_gzip_neff() -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut entries = vec![PackEntry::file(
        "kelf-0.json",
        &br#"{"target":"trn1","graphs":[{}]}"#[..],
        0,
    )];
    let mut signal = 0f32;
    for i in 0..7 {
        let mut data = Vec::with_capacity(4 << 20);
        while data.len() < 4 << 20 {
            for _ in 0..768 {
                signal += ((next() % 2001) as f32 - 1000.0) / 1e5;
                data.extend_from_slice(&signal.to_le_bytes());
            }
            while data.len() % 4096 != 0 {
                let v = next();
                let line = format!(
                    "{{\"tensor_map\": [{}, {}], \"dtype\": \"f32\"}},\n",
                    v >> 44,
                    v % 4096
                );
                let room = 4096 - data.len() % 4096;
                data.extend_from_slice(&line.as_bytes()[..line.len().min(room)]);
            }
        }
        entries.push(PackEntry::file(&format!("sg00/part{i:02}.bin"), data, 0));
    }
    pack(&entries, &PackOptions::default()).unwrap()
}

#[test]
fn every_thread_count_lists_what_the_default_lists_in_rounds_of_that_many_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("mixed.neff");
    let bytes = mixed_gzip_neff();
    assert!(bytes.len() > 17 << 20, "{} bytes", bytes.len());
    std::fs::write(&path, bytes).unwrap();
    let p = path.to_str().unwrap();
    // The bounded stream (a budget below the payload), where rounds run.
    let stream = ["--inflate-budget", "1M"];
    let want = neff_ok(&[&stream[..], &["ls", "--json", p]].concat());
    assert!(String::from_utf8_lossy(&want).contains("sg00/part06.bin"));
    for n in ["1", "3", "8"] {
        let o = neff(&[&stream[..], &["-j", n, "ls", "--json", p]].concat());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(o.stdout, want, "-j {n}");
        // Whole in one pass, split into n chunks: the same listing.
        let whole = neff_ok(&["-j", n, "ls", "--json", p]);
        assert_eq!(whole, want, "-j {n}, inflated whole");
    }
    let log = |n: &str| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_neff"))
            .args([&stream[..], &["-vv", "-j", n, "ls", p]].concat())
            .output()
            .unwrap();
        assert!(o.status.success());
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let eight = log("8");
    // Every round but the stream's last (which splits what is left among
    // as many segments as get 256 KiB each) has 8; the first one too here.
    let rounds: Vec<&str> = eight.lines().filter(|l| l.contains("segments=")).collect();
    assert!(!rounds.is_empty(), "{eight}");
    assert!(rounds[0].contains("segments=8,"), "{eight}");
    for r in &rounds[..rounds.len() - 1] {
        assert!(r.contains("segments=8,"), "{r}");
    }
    let one = log("1");
    assert!(!one.contains("parallel rounds"), "{one}");
}
