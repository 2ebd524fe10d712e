//! The library in one page: open a NEFF, list its members, ask the
//! reference reader's questions, and tell refusals apart by kind.
//!
//!     cargo run --example quickstart [FILE.neff]
//!
//! Without an argument it reads a NEFF bundled with the repository.
//! `scripts/test` runs it, so this example cannot rot.

use neff::{accessors, ErrorKind, Kind, Neff};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/acc/cc-replica-groups-gz.neff"
        )
        .into()
    });
    // One open: the file is mapped, the header checked, the payload
    // inflated (or streamed, when large) and the tar indexed.
    let neff = Neff::open(&path)?;
    let h = neff.header();
    println!(
        "{path}: package version {}, {} payload bytes, built by {}",
        h.pkg_version(),
        h.data_size(),
        h.build_version()
    );

    for e in neff.entries() {
        let kind = match e.kind {
            Kind::File => "file",
            Kind::Dir => "dir",
            _ => "other",
        };
        println!("  {kind:4} {:>9}  {}", e.size, neff.name_str(e));
    }

    // The reference reader's getters. A guard of the reference reader is a
    // refusal of this file, not a failure of the program: match its kind.
    println!("arch: {}", accessors::arch(&neff)?);
    println!("cores: {}", accessors::num_cores(&neff)?);
    match accessors::cc_world_size(&neff) {
        Ok(n) => println!("collective world size: {n}"),
        Err(e) if e.kind() == ErrorKind::Guard => println!("no world size: {e}"),
        Err(e) => return Err(e.into()),
    }

    // Any member by the reference reader's rule: an unanchored pattern,
    // first match in sorted name order; its bytes borrowed from the map
    // or the inflated payload.
    let def = neff.find_pattern(r"def\.json$")?;
    let data = neff.data(def)?;
    println!("{}: {} bytes of JSON", neff.name_str(def), data.len());

    // The payload's hash against the header, as `neff verify` checks it.
    neff::verify(&path, &neff::Options::default())?;
    println!("hash: OK");
    Ok(())
}
