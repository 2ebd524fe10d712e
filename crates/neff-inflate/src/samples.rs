//! The unit tests' inputs: long runs of one byte with islands of noise,
//! and plain noise.

/// `n` bytes of `fill` (zero padding, or some other byte) with islands of
/// noise of 0.5-4 KiB every 32-96 KiB, as the long-runs shape of the
/// benches has them: the tests' long runs.
pub(crate) fn long_runs(n: usize, fill: u8, seed: u64) -> Vec<u8> {
    let mut x = seed;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as usize
    };
    let mut data = vec![fill; n];
    let mut at = 0;
    loop {
        at += (32 << 10) + rnd() % (64 << 10);
        let len = 512 + rnd() % 3584;
        if at + len > n {
            return data;
        }
        data[at..at + len].iter_mut().for_each(|b| *b = rnd() as u8);
    }
}

/// `n` bytes of xorshift noise from `seed`: incompressible data (stored
/// blocks) for the tests.
pub(crate) fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
