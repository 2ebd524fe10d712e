//! Reading a few top-level keys of a large JSON member without building a
//! tape of all of it.
//!
//! `cc-world-size` needs three keys of a def.json whose variable table may
//! run to tens of MB. A simd-json tape of that table costs several times its
//! size in fresh memory, and fresh memory is slow to fault in. Instead the
//! member is checked with serde_json while skipping every value (no
//! allocation), the wanted keys' values are kept as borrowed raw text (the
//! last occurrence wins, as in a full parse), and only a small document made
//! of those values is parsed onto a tape. Any error falls back to the full
//! parse, so messages are those of [`super::Parsed`]. The depth cap applies
//! to the values kept; skipped values are walked iteratively by serde_json
//! and cost no memory however deep they nest.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

/// What a skim found: `None` if the document is not valid JSON (or nests
/// deeper than serde_json's limit of 128), `Some(None)` if it is valid but
/// not an object, else the raw text of the wanted keys present.
pub type Skimmed<'a> = Option<Option<Vec<(String, &'a RawValue)>>>;

/// Skims `bytes` for the top-level `keys`.
pub fn top_level_keys<'a>(bytes: &'a [u8], keys: &[&str]) -> Skimmed<'a> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let found = de.deserialize_any(Keys { keys }).ok()?;
    de.end().ok()?;
    Some(found)
}

struct Keys<'k> {
    keys: &'k [&'k str],
}

impl<'de> Visitor<'de> for Keys<'_> {
    /// `Some(pairs)` for an object, `None` for any other value.
    type Value = Option<Vec<(String, &'de RawValue)>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found: Vec<(String, &'de RawValue)> = Vec::new();
        while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if self.keys.contains(&k.as_ref()) {
                let v: &'de RawValue = map.next_value()?;
                found.retain(|(name, _)| name != k.as_ref());
                found.push((k.into_owned(), v));
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Some(found))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// A JSON object made of `pairs` (raw values copied in), or `[]` when the
/// skimmed document was not an object.
pub fn rebuild(pairs: Option<&[(String, &RawValue)]>) -> Vec<u8> {
    let Some(pairs) = pairs else {
        return b"[]".to_vec();
    };
    let mut out = b"{".to_vec();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(
            serde_json::to_string(k)
                .expect("a string serializes")
                .as_bytes(),
        );
        out.push(b':');
        out.extend_from_slice(v.get().as_bytes());
    }
    out.push(b'}');
    out
}
