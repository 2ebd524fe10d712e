//! Resource caps: how much a hostile file may make `neff` allocate or walk.
//!
//! Every cap has a default that real NEFFs stay far below, is configurable
//! from the library ([`Limits`]) and the CLI (`--max-*` flags), and refuses
//! the input with [`Error::Limit`](crate::Error::Limit) when reached, before
//! the allocation it guards is made.

/// The caps applied while opening and querying a NEFF.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Limits {
    /// Largest inflated (tar) size of a gzip payload, and largest GNU
    /// sparse member read whole into memory
    /// ([`Neff::data`](crate::Neff::data); streaming reads such as
    /// [`Neff::copy_data`](crate::Neff::copy_data) and unpack are not held
    /// to it). Default 4 GiB.
    pub max_inflated: u64,
    /// Most tar entries (of any kind) in one archive. Default 1,000,000.
    pub max_members: usize,
    /// Largest PAX `x`/`g` extended header or GNU `L`/`K` long-name payload.
    /// Default 1 MiB, as Go's archive/tar and libarchive use.
    pub max_extended_header: u64,
    /// Longest member name or link target, in bytes. Default 64 KiB.
    pub max_name_len: usize,
    /// Largest JSON member that will be parsed. Default 256 MiB.
    pub max_json_size: u64,
    /// Deepest nesting of arrays and objects in a JSON member. Default 512.
    pub max_json_depth: usize,
    /// Not a cap but a budget: the largest gzip payload (by its trailer's
    /// word, checked as it is inflated) that is inflated whole into one
    /// buffer. Larger payloads, and payloads whose trailer cannot be the
    /// real size, are walked as a bounded stream that keeps only names and
    /// the JSON members the accessors read (each under
    /// [`max_json_size`](Self::max_json_size)). A scan's peak memory is
    /// about `jobs` times this budget plus those members. Default 64 MiB
    /// (measured in PERF.md, ls-gzip-big and memory-3g-tar); 0 streams
    /// every gzip payload.
    pub inflate_budget: u64,
    /// Most segments in the maps of an archive's GNU sparse members, all
    /// together (16 bytes each in the index). Default 1,048,576.
    pub max_sparse_segments: usize,
    /// Largest real (expanded) size of one GNU sparse member, whose holes
    /// the archive does not store (listing reads only its map; streaming
    /// it writes this many bytes). Default 64 GiB.
    pub max_sparse_size: u64,
}

impl Limits {
    /// Sets `max_inflated`: largest inflated (tar) size of a gzip payload, and largest GNU sparse member read whole into memory (`Neff::data`; streaming reads such as `Neff::copy_data` and unpack are not held to it).
    #[must_use]
    pub fn max_inflated(mut self, v: u64) -> Self {
        self.max_inflated = v;
        self
    }

    /// Sets `max_members`: most tar entries (of any kind) in one archive.
    #[must_use]
    pub fn max_members(mut self, v: usize) -> Self {
        self.max_members = v;
        self
    }

    /// Sets `max_extended_header`: largest PAX `x`/`g` extended header or GNU `L`/`K` long-name payload.
    #[must_use]
    pub fn max_extended_header(mut self, v: u64) -> Self {
        self.max_extended_header = v;
        self
    }

    /// Sets `max_name_len`: longest member name or link target, in bytes.
    #[must_use]
    pub fn max_name_len(mut self, v: usize) -> Self {
        self.max_name_len = v;
        self
    }

    /// Sets `max_json_size`: largest JSON member that will be parsed.
    #[must_use]
    pub fn max_json_size(mut self, v: u64) -> Self {
        self.max_json_size = v;
        self
    }

    /// Sets `max_json_depth`: deepest nesting of arrays and objects in a JSON member.
    #[must_use]
    pub fn max_json_depth(mut self, v: usize) -> Self {
        self.max_json_depth = v;
        self
    }

    /// Sets `inflate_budget`: not a cap but a budget: the largest gzip payload (by its trailer's word, checked as it is inflated) that is inflated whole into one buffer.
    #[must_use]
    pub fn inflate_budget(mut self, v: u64) -> Self {
        self.inflate_budget = v;
        self
    }

    /// Sets `max_sparse_segments`: most segments in the maps of an archive's GNU sparse members, all together (16 bytes each in the index).
    #[must_use]
    pub fn max_sparse_segments(mut self, v: usize) -> Self {
        self.max_sparse_segments = v;
        self
    }

    /// Sets `max_sparse_size`: largest real (expanded) size of one GNU sparse member, whose holes the archive does not store (listing reads only its map; streaming it writes this many bytes).
    #[must_use]
    pub fn max_sparse_size(mut self, v: u64) -> Self {
        self.max_sparse_size = v;
        self
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_inflated: 4 << 30,
            max_members: 1_000_000,
            max_extended_header: 1 << 20,
            max_name_len: 64 << 10,
            max_json_size: 256 << 20,
            max_json_depth: 512,
            inflate_budget: 64 << 20,
            max_sparse_segments: 1 << 20,
            max_sparse_size: 64 << 30,
        }
    }
}
