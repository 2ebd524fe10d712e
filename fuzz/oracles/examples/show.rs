//! Prints what neff, libarchive and the tar crate list for each tar file
//! given: `cargo run --example show -- FILE...` (for triaging a finding).

fn main() {
    for path in std::env::args().skip(1) {
        let data = std::fs::read(&path).expect("a readable file");
        println!("== {path} ({} bytes)", data.len());
        let neff = neff_oracles::neff_listing(&neff::fuzzing::wrap(&data));
        show("neff", &neff);
        match neff_oracles::libarchive::list(&data) {
            Some(l) => show("libarchive", &l),
            None => println!("libarchive: (skipped: an entry's data is too large)"),
        }
        match neff_oracles::tar_crate::list(&data) {
            Some(l) => show("tar crate", &l),
            None => println!("tar crate: (skipped: a known departure, or too large)"),
        }
    }
}

fn show(who: &str, l: &neff_oracles::Listing) {
    match l {
        Err(e) => println!("{who}: refused: {e}"),
        Ok(v) => {
            println!("{who}: {} entries", v.len());
            for e in v {
                println!(
                    "  {:?} {} size={} link={:?} data={}B",
                    String::from_utf8_lossy(&e.name),
                    e.kind,
                    e.size,
                    e.link.as_deref().map(String::from_utf8_lossy),
                    e.data.len()
                );
            }
        }
    }
}
