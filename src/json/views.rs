//! Typed views (filled below).
