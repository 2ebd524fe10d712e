//! The one-shot split: a whole payload's DEFLATE stream cut into as many
//! chunks as there are threads, inflated at once and joined in order.

use rayon::prelude::*;

use crate::deflate::{self, MARKER, WINDOW};

use super::search::*;
use super::segment::*;

/// Inflates the raw DEFLATE stream `data` into `out` on up to `threads`
/// threads; returns the bytes written, or `None` to fall back.
pub fn inflate(data: &[u8], out: &mut [u8], threads: usize) -> Option<usize> {
    split_inflate(data, out, threads, MIN_CHUNK)
}

/// [`inflate`] with chunks of at least `min_chunk` compressed bytes.
pub fn split_inflate(
    data: &[u8],
    out: &mut [u8],
    threads: usize,
    min_chunk: usize,
) -> Option<usize> {
    // As many chunks as threads, each of at least `min_chunk` bytes (a
    // chunk's fixed cost, its cut search and marker-decoded start, is then
    // a few percent of its work).
    let k = threads.min(data.len() / min_chunk.max(1)).min(MAX_SEGS);
    if k < 2 {
        return None;
    }
    log::debug!(
        "raw DEFLATE of {} bytes split whole: segments={k}",
        data.len()
    );
    let cuts: Vec<usize> = (1..k).map(|i| data.len() * i / k * 8).collect();
    let found: Vec<Option<usize>> = cuts.par_iter().map(|&c| find_block(data, c)).collect();
    let mut bounds = vec![0usize];
    for f in found {
        let f = f?;
        if f <= *bounds.last()? {
            return None;
        }
        bounds.push(f);
    }
    let ends: Vec<Option<usize>> = bounds[1..].iter().map(|&b| Some(b)).chain([None]).collect();
    // A chunk may produce the whole output, up to 16 chunks; past that, a
    // sixteenth of 16 times the output shared out: the chunks' memory,
    // touched only as they write, is at most 16 times the size the
    // trailer claims, however many threads (the data may lie about it).
    let cap = out.len().min(out.len().saturating_mul(16) / k);
    let (head, rest) = rayon::join(
        || first_chunk(data, bounds[1], out),
        || {
            (1..bounds.len())
                .into_par_iter()
                .map(|i| later_chunk(data, bounds[i], ends[i], cap))
                .collect::<Vec<_>>()
        },
    );
    let mut pos = head?;
    for (i, chunk) in rest.into_iter().enumerate() {
        let window_start = pos.checked_sub(WINDOW)?;
        let Some(chunk) = chunk else {
            // This chunk's window never cleared (highly repetitive data
            // keeps copying from the unknown window): now that the bytes
            // before it are known, inflate the rest on this thread,
            // primed with the real window, straight into place (the primer
            // re-emits the window bytes already there).
            let from = bounds[i + 1];
            let prefix = deflate::primer(&out[window_start..pos], (from % 8) as u32);
            let s = synth(&prefix, data, from, None);
            let n = inflate_synth(&s, &mut out[window_start..], false)?;
            return Some(window_start + n);
        };
        if pos + chunk.len() > out.len() {
            return None;
        }
        let n = chunk.symbols.len();
        let (before, after) = out.split_at_mut(pos);
        let window = &before[window_start..];
        for (dst, &s) in after[..n].iter_mut().zip(&chunk.symbols) {
            *dst = if s < MARKER {
                s as u8
            } else {
                window[usize::from(s - MARKER)]
            };
        }
        pos += n;
        for part in [&chunk.window[..], chunk.tail()] {
            // The big copy runs on every core.
            out[pos..pos + part.len()]
                .par_chunks_mut(4 << 20)
                .zip(part.par_chunks(4 << 20))
                .for_each(|(d, s)| d.copy_from_slice(s));
            pos += part.len();
        }
    }
    Some(pos)
}
