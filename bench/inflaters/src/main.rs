//! One inflater over one NEFF's gzip payload (or every NEFF of a directory),
//! output discarded: `neff-inflaters MODE FILE|DIR`. Prints the bytes
//! produced; time and peak RSS are measured from outside (run.sh).
//!
//! Modes: `libdeflate` (one buffer of ISIZE bytes), `split` (neff's
//! whole-payload path: libdeflate, split across cores above 8 MiB),
//! `zlib-rs` (flate2 over zlib-rs, raw DEFLATE into a 256 KiB window),
//! `neff-stream` (neff's streamed path: zlib-rs, or parallel rounds on a
//! free core), `rapidgzip` (rapidgzip-core, 2 threads, 256 KiB reads).
use std::io::Read;
use std::os::unix::fs::FileExt;

struct At(std::fs::File, u64, u64);

impl rapidgzip_core::ReadAt for At {
    fn len(&self) -> std::io::Result<u64> {
        Ok(self.2)
    }
    fn read_at(&self, off: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        if off >= self.2 {
            return Ok(0);
        }
        let n = buf.len().min((self.2 - off) as usize);
        FileExt::read_at(&self.0, &mut buf[..n], self.1 + off)
    }
}

fn one(mode: &str, path: &std::path::Path) -> u64 {
    let bytes = std::fs::read(path).unwrap();
    let gz = &bytes[1024..];
    let window = &mut vec![0u8; 256 << 10];
    match mode {
        "libdeflate" => {
            let isize = u32::from_le_bytes(gz[gz.len() - 4..].try_into().unwrap()) as usize;
            let mut out = vec![0u8; isize];
            libdeflater::Decompressor::new()
                .gzip_decompress(gz, &mut out)
                .unwrap() as u64
        }
        "split" => neff::fuzzing::steps::inflate(gz, u64::MAX).unwrap().len() as u64,
        "zlib-rs" => {
            let start = neff::fuzzing::steps::member_header(gz).unwrap();
            let mut d = flate2::Decompress::new(false);
            let (mut pos, mut total) = (start, 0u64);
            loop {
                let (i0, o0) = (d.total_in(), d.total_out());
                let st = d
                    .decompress(&gz[pos..], window, flate2::FlushDecompress::None)
                    .unwrap();
                pos += (d.total_in() - i0) as usize;
                total += d.total_out() - o0;
                if st == flate2::Status::StreamEnd {
                    return total;
                }
            }
        }
        "neff-stream" => neff::fuzzing::steps::stream_inflate(gz, true).unwrap(),
        "rapidgzip" => {
            let dec = rapidgzip_core::Decoder::builder()
                .decoder_threads(2)
                .build()
                .unwrap();
            let f = std::fs::File::open(path).unwrap();
            let mut r = dec.reader(At(f, 1024, gz.len() as u64)).unwrap();
            let mut total = 0u64;
            loop {
                let n = r.read(window).unwrap();
                if n == 0 {
                    return total;
                }
                total += n as u64;
            }
        }
        _ => panic!("unknown mode {mode}"),
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let (mode, path) = (&a[1], std::path::Path::new(&a[2]));
    let total: u64 = if path.is_dir() {
        let mut files: Vec<_> = std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "neff"))
            .collect();
        files.sort();
        files.iter().map(|p| one(mode, p)).sum()
    } else {
        one(mode, path)
    };
    println!("{mode}: {total} bytes");
}
