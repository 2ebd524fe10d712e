//! A gzip payload that arrives in pieces (a network body, a pipe): any
//! [`Read`] source, inflated on the calling thread as the pieces come,
//! holding one buffer of input (256 KiB, more only while a member header
//! longer than that is read, up to [`HEADER_MAX`]) and zlib-rs's window.
//!
//! The framing is the slice paths' ([`crate::gzip`]), with the same error
//! texts: every member header strict, every trailer checked, only another
//! member or zero padding after a member, the first member at offset 0,
//! the output capped. The one difference: a member header (its extra
//! field, name and comment) longer than [`HEADER_MAX`] is refused here,
//! where a slice holding it is read.

use std::io::Read;

use flate2::{Decompress, FlushDecompress, Status};

use crate::error::{Error, Result};
use crate::gzip::{self, Trailer, MIN_MEMBER, TRAILER};

/// The most input held to read one member header (its optional fields
/// included).
pub const HEADER_MAX: usize = 1 << 20;
/// Input read at a time.
const PIECE: usize = 256 << 10;

/// Where the reader is in the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the first member, or after a member's trailer.
    Between,
    /// Inside a member's DEFLATE data.
    Member,
    /// Every member read and checked.
    Done,
    /// A failure was returned: no more bytes.
    Failed,
}

/// A gzip payload read from `R` as it arrives, one window of output at a
/// time.
///
/// ```
/// # fn main() -> neff_inflate::Result<()> {
/// use std::io::Write;
/// let data = b"weights and more weights ".repeat(5000);
/// let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
/// gz.write_all(&data)?;
/// let gz = gz.finish()?;
///
/// // Any Read: here a slice, as a network body's pieces would come.
/// let mut r = neff_inflate::GzReader::new(&gz[..], 1 << 30);
/// let (mut out, mut window) = (Vec::new(), [0u8; 4096]);
/// loop {
///     let n = r.fill(&mut window)?;
///     if n == 0 {
///         break;
///     }
///     out.extend_from_slice(&window[..n]);
/// }
/// assert_eq!(out, data);
/// # Ok(()) }
/// ```
pub struct GzReader<R> {
    input: R,
    /// Input read and not yet used: `buf[pos..len]`; `base` is the payload
    /// offset of `buf[0]`.
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    base: u64,
    eof: bool,
    state: State,
    z: Decompress,
    /// The member being read: where its header starts, its output's
    /// CRC-32 and length so far.
    at: u64,
    crc: libdeflater::Crc,
    out: u64,
    total: u64,
    cap: u64,
}

impl<R> std::fmt::Debug for GzReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GzReader")
            .field("offset", &(self.base + self.pos as u64))
            .field("total_out", &self.total)
            .finish()
    }
}

impl<R: Read> GzReader<R> {
    /// A reader of the gzip payload `input`, producing at most `cap`
    /// bytes.
    pub fn new(input: R, cap: u64) -> GzReader<R> {
        GzReader {
            input,
            buf: vec![0u8; PIECE],
            pos: 0,
            len: 0,
            base: 0,
            eof: false,
            state: State::Between,
            z: Decompress::new(false),
            at: 0,
            crc: libdeflater::Crc::new(),
            out: 0,
            total: 0,
            cap,
        }
    }

    /// Bytes produced so far.
    pub fn produced(&self) -> u64 {
        self.total
    }

    /// Inflates into `out`: the number of bytes written, 0 only at the end
    /// of the payload (every member's trailer checked). An error of the
    /// source is [`Error::Io`]; after any error no more bytes come.
    pub fn fill(&mut self, out: &mut [u8]) -> Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        match self.fill_any(out) {
            Ok(n) => Ok(n),
            Err(e) => {
                self.state = State::Failed;
                Err(e)
            }
        }
    }

    fn fill_any(&mut self, out: &mut [u8]) -> Result<usize> {
        loop {
            match self.state {
                State::Done => return Ok(0),
                State::Failed => return Err(gzip::corrupt(self.at as usize)),
                State::Between => self.start_member()?,
                State::Member => {
                    let n = self.inflate(out)?;
                    if n > 0 {
                        return Ok(n);
                    }
                }
            }
        }
    }

    /// Reads a piece when no input is left: `buf[pos..len]` is then
    /// empty only at the source's end.
    fn refill(&mut self) -> Result<()> {
        if self.pos == self.len && !self.eof {
            self.base += self.len as u64;
            (self.pos, self.len) = (0, 0);
            self.read_more()?;
        }
        Ok(())
    }

    /// Reads at least one more byte into the buffer after `len` (growing
    /// it when full), unless the source is at its end.
    fn read_more(&mut self) -> Result<()> {
        if self.len == self.buf.len() {
            if self.pos > 0 {
                self.buf.copy_within(self.pos..self.len, 0);
                self.base += self.pos as u64;
                (self.len, self.pos) = (self.len - self.pos, 0);
            } else {
                let grown = (self.buf.len() * 2).max(PIECE);
                self.buf.resize(grown, 0);
            }
        }
        loop {
            match self.input.read(&mut self.buf[self.len..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.len += n;
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::Io(e)),
            }
        }
    }

    /// At least `n` bytes of input at the position when the source holds
    /// them (fewer only at its end).
    fn want(&mut self, n: usize) -> Result<()> {
        while self.len - self.pos < n && !self.eof {
            self.read_more()?;
        }
        Ok(())
    }

    /// The next member's header, after zero padding unless it is the
    /// first; or the end.
    fn start_member(&mut self) -> Result<()> {
        let first = self.base == 0 && self.pos == 0 && self.total == 0 && self.out == 0;
        if first {
            self.want(MIN_MEMBER)?;
            if self.len < MIN_MEMBER {
                return Err(Error::gzip(format!(
                    "truncated gzip input: {} bytes is shorter than the smallest gzip member",
                    self.len
                )));
            }
        } else {
            // Zero padding, to the end or to the next member.
            loop {
                self.refill()?;
                let rest = &self.buf[self.pos..self.len];
                if rest.is_empty() {
                    self.state = State::Done;
                    return Ok(());
                }
                match rest.iter().position(|&b| b != 0) {
                    Some(skip) => {
                        self.pos += skip;
                        break;
                    }
                    None => self.pos = self.len,
                }
            }
        }
        let at = self.base + self.pos as u64;
        self.at = at;
        self.want(2)?;
        if !self.buf[self.pos..self.len].starts_with(&[0x1f, 0x8b]) {
            return Err(Error::gzip(format!(
                "bytes at offset {at} are neither a gzip member nor zero padding"
            )));
        }
        // The header, with 8 bytes after it (as the slice paths ask of a
        // member's header): read on while it is cut short and may still
        // be one.
        let start = loop {
            self.want(10)?;
            let rest = &self.buf[self.pos..self.len];
            if let Some(start) = gzip::member_header(rest) {
                break start;
            }
            let plausible = rest.len() >= 10 && rest[2] == 8 && rest[3] & 0xe0 == 0;
            if !plausible || self.eof || rest.len() >= HEADER_MAX {
                return Err(gzip::corrupt(at as usize));
            }
            let had = self.len;
            self.read_more()?;
            if self.len == had && self.eof {
                return Err(gzip::corrupt(at as usize));
            }
        };
        self.pos += start;
        self.z.reset(false);
        self.crc = libdeflater::Crc::new();
        self.out = 0;
        self.state = State::Member;
        Ok(())
    }

    /// Inflates some of the member into `out`; at its end, checks its
    /// trailer. 0 when the member ended with no bytes for `out`.
    fn inflate(&mut self, out: &mut [u8]) -> Result<usize> {
        loop {
            let at = self.at as usize;
            self.refill()?;
            let input = &self.buf[self.pos..self.len];
            let (in0, out0) = (self.z.total_in(), self.z.total_out());
            let status = self
                .z
                .decompress(input, out, FlushDecompress::None)
                .map_err(|_| gzip::corrupt(at))?;
            let used = (self.z.total_in() - in0) as usize;
            let n = (self.z.total_out() - out0) as usize;
            self.pos += used;
            self.crc.update(&out[..n]);
            self.out += n as u64;
            self.total += n as u64;
            Error::output_within(self.total, self.cap)?;
            if status == Status::StreamEnd {
                self.end_member()?;
                return Ok(n);
            }
            if n > 0 {
                return Ok(n);
            }
            if used == 0 {
                // No progress: the source ended inside the member, or
                // input was left that the inflater would not take (as the
                // slice stream's one-core inflater, refused, never looped).
                return Err(gzip::corrupt(at));
            }
        }
    }

    /// The member's DEFLATE data ended at the position: its trailer.
    fn end_member(&mut self) -> Result<()> {
        self.want(TRAILER)?;
        let t = Trailer::at(&self.buf[..self.len], self.pos);
        if !t.is_some_and(|t| t.describes(self.crc.sum(), self.out)) {
            return Err(gzip::corrupt(self.at as usize));
        }
        self.pos += TRAILER;
        self.state = State::Between;
        Ok(())
    }
}

/// The reader as a [`Read`]: its errors are [`std::io::Error`]s whose
/// message is the [`Error`]'s (kind `InvalidData`, or the source's own).
impl<R: Read> Read for GzReader<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        self.fill(out).map_err(|e| match e {
            Error::Io(e) => e,
            e => std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gzip::compress as gz;

    /// A source that hands out `bytes` in pieces of pseudo-random sizes
    /// from 1 to `most`.
    struct Pieces<'a> {
        bytes: &'a [u8],
        x: u64,
        most: usize,
    }

    impl Read for Pieces<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            self.x ^= self.x << 13;
            self.x ^= self.x >> 7;
            self.x ^= self.x << 17;
            let n = (1 + self.x as usize % self.most)
                .min(out.len())
                .min(self.bytes.len());
            out[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    /// What the reader makes of `g` in pieces of up to `most` bytes: the
    /// bytes, or the error's text.
    fn read(g: &[u8], most: usize, cap: u64) -> std::result::Result<Vec<u8>, String> {
        let mut r = GzReader::new(
            Pieces {
                bytes: g,
                x: 0x9e37_79b9 ^ most as u64,
                most,
            },
            cap,
        );
        let (mut out, mut w) = (Vec::new(), vec![0u8; 50_000]);
        loop {
            match r.fill(&mut w) {
                Ok(0) => return Ok(out),
                Ok(n) => out.extend_from_slice(&w[..n]),
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    /// What the slice stream makes of `g`.
    fn streamed(g: &[u8], cap: u64) -> std::result::Result<Vec<u8>, String> {
        match crate::GzStream::new(g, cap) {
            Ok(mut s) => s.read_all().0.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn pieces_of_any_size_read_as_the_slice_stream_reads_every_framing() {
        let text = b"tar bytes, sg00/def.json {\"var\": 1} ".repeat(3000);
        let noise = crate::samples::noise(200_000, 9);
        let (a, b) = (gz(&text), gz(&noise));
        let mut cases: Vec<Vec<u8>> = vec![
            a.clone(),
            [a.clone(), b.clone()].concat(),
            [a.clone(), vec![0; 17], b.clone(), vec![0; 10240]].concat(),
            [a.clone(), b"garbage!".to_vec()].concat(),
            a[..a.len() / 2].to_vec(),
            a[..a.len() - 3].to_vec(),
            a[..10].to_vec(),
            [a.clone(), vec![0; 3], vec![0x1f]].concat(),
            [vec![0u8; 4], a.clone()].concat(),
        ];
        let mut bad = a.clone();
        let n = bad.len();
        bad[n - 6] ^= 0xff;
        cases.push(bad);
        let mut reserved = a.clone();
        reserved[3] |= 0x20;
        cases.push(reserved);
        // A member with a name and a comment longer than a piece.
        let mut named = vec![0x1f, 0x8b, 8, 0x18, 0, 0, 0, 0, 0, 255];
        named.extend(std::iter::repeat_n(b'n', 300_000));
        named.push(0);
        named.extend_from_slice(b"comment\0");
        named.extend_from_slice(&a[10..]);
        cases.push(named);
        for (i, g) in cases.iter().enumerate() {
            let want = streamed(g, 1 << 30);
            for most in [1, 7, 4096, 1 << 20] {
                assert_eq!(read(g, most, 1 << 30), want, "case {i}, pieces of {most}");
            }
        }
        // The cap, as the stream's (the size found is where each window
        // ended: 50,000 bytes here, 70,000 there).
        for e in [read(&a, 4096, 1000), streamed(&a, 1000)] {
            let e = e.unwrap_err();
            assert!(e.starts_with("inflated payload size is "), "{e}");
            assert!(e.ends_with("over the cap of 1000"), "{e}");
        }
    }

    #[test]
    fn a_header_longer_than_the_bound_is_refused_and_a_failed_source_is_its_error() {
        let a = gz(b"payload");
        let mut long = vec![0x1f, 0x8b, 8, 0x08, 0, 0, 0, 0, 0, 255];
        long.extend(std::iter::repeat_n(b'n', HEADER_MAX + 10));
        long.push(0);
        long.extend_from_slice(&a[10..]);
        let e = read(&long, 1 << 16, 1 << 30).unwrap_err();
        assert!(
            e.contains("corrupt or truncated gzip member at offset 0"),
            "{e}"
        );

        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("connection reset"))
            }
        }
        let mut r = GzReader::new(Broken, 1 << 30);
        let e = r.fill(&mut [0u8; 16]).unwrap_err();
        assert!(matches!(e, Error::Io(_)) && e.to_string() == "connection reset");
        // As a Read, through std::io::copy.
        let mut out = Vec::new();
        std::io::copy(&mut GzReader::new(&a[..], 1 << 30), &mut out).unwrap();
        assert_eq!(out, b"payload");
    }
}
