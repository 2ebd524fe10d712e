//! Criterion benchmark of one [`Catalog`] lookup by path, the question a
//! service in front of a zoo asks most.
//!
//! The catalogue is built here from 2,000 generated NEFFs (so the bench runs
//! without the bench corpus); `NEFF_BENCH_CORPUS=/tmp/neff-bench` also
//! indexes its `small/` zoo (one cold scan) and looks up there
//! (`python3 bench/make_corpus.py` writes that corpus, by default to
//! `/tmp/neff-bench`).
//! `cargo bench --bench catalog`.

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion};
use neff::catalog::{scan_indexed, Catalog};
use neff::pack::{pack, PackEntry, PackOptions};
use neff::scan::ScanOptions;

fn generated(dir: &Path) -> PathBuf {
    let zoo = dir.join("zoo");
    for i in 0..2000 {
        let d = zoo.join(format!("MODULE_{i:04}"));
        std::fs::create_dir_all(&d).unwrap();
        let def = format!(
            "{{\"var\":{{\"in\":{{\"var_id\":0,\"type\":\"input\",\"size\":{},\"shape\":[1,{i}],\"dtype\":\"float32\"}}}}}}",
            4 * i
        );
        let entries = vec![
            PackEntry::file(
                "kelf-0.json",
                b"{\"graphs\":[{\"name\":\"sg00\"}],\"target\":\"sunda\"}".to_vec(),
                0,
            ),
            PackEntry::file("sg00/def.json", def.into_bytes(), 0),
        ];
        let bytes = pack(&entries, &PackOptions::default()).unwrap();
        std::fs::write(d.join(format!("graph_{i:04}.neff")), bytes).unwrap();
    }
    zoo
}

fn lookups(c: &mut Criterion, name: &str, zoo: &Path, db: &Path) {
    let found = std::sync::Mutex::new(Vec::new());
    scan_indexed(
        db,
        true,
        &[zoo.to_path_buf()],
        &ScanOptions::default(),
        &|r, _| found.lock().unwrap().push(r.path),
    )
    .unwrap_or_else(|e| panic!("indexing {}: {e}", zoo.display()));
    let mut paths = found.into_inner().unwrap();
    paths.sort();
    let cat = Catalog::open(db).unwrap();
    let mut i = 0usize;
    c.bench_function(&format!("catalog/by_path/{name}"), |b| {
        b.iter(|| {
            // Walk the paths with a stride so each lookup is a different row.
            i = (i + 7919) % paths.len();
            black_box(cat.by_path(&paths[i]).unwrap().unwrap())
        })
    });
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let zoo = generated(tmp.path());
    lookups(c, "generated-2000", &zoo, &tmp.path().join("gen.db"));
    if let Ok(corpus) = std::env::var("NEFF_BENCH_CORPUS") {
        let small = Path::new(&corpus).join("small");
        lookups(c, "bench-small-2000", &small, &tmp.path().join("small.db"));
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
