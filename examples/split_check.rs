//! Checks the parallel split on the criterion bench's generated gzip NEFF.
fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if x % 2 == 0 {
            v.extend_from_slice(b"model.layers.17.self_attn.q_proj.weight ");
        } else {
            v.extend_from_slice(&x.to_le_bytes());
        }
    }
    v.truncate(n);
    v
}
fn main() {
    let entries: Vec<neff::pack::PackEntry> = (0..3000)
        .map(|i| neff::pack::PackEntry::file(&format!("w/{i}.bin"), bytes(16 << 10, i as u64), 0))
        .collect();
    let tar = neff::pack::write_tar(&entries);
    let gz = neff::pack::gzip(&tar);
    let start = neff::payload::parallel::deflate_start(&gz).unwrap();
    let data = &gz[start..gz.len() - 8];
    let mut out = vec![0u8; tar.len()];
    for min in [4 << 20, 1 << 20] {
        let r = neff::payload::parallel::split_inflate(data, &mut out, 2, min);
        println!(
            "compressed {} tar {} min_chunk {min}: {:?} ok={}",
            gz.len(),
            tar.len(),
            r,
            r == Some(tar.len()) && out == tar
        );
    }
}
