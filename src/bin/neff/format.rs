//! `--format json|ndjson|csv|table` for the listing commands (`scan`,
//! `ls`, `cache status`, `cache prune`): one writer that takes the rows a
//! command makes, whatever their type, and prints them as asked. The
//! table is each command's own; the other three are made here from the
//! rows' JSON.

use std::io::{self, Write};

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde::Serialize;
use serde_json::Value;

/// How a listing command prints its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// One JSON array of objects
    Json,
    /// One JSON object per line
    Ndjson,
    /// Comma-separated values with a header line (RFC 4180: CRLF line
    /// ends, a field with a comma, quote or line break quoted; text as it
    /// is, control characters included; nested values as JSON)
    Csv,
    /// Aligned columns for people
    Table,
}

/// A JSON object's members in the order they were written (serde_json's
/// own map sorts them).
struct Ordered(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Ordered, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Ordered, A::Error> {
                let mut v = Vec::new();
                while let Some(kv) = m.next_entry::<String, Value>()? {
                    v.push(kv);
                }
                Ok(Ordered(v))
            }
        }
        d.deserialize_map(V)
    }
}

/// A cell of a CSV row: empty for null, text as it is, anything nested as
/// compact JSON.
fn cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    }
}

/// Prints rows as JSON, NDJSON or CSV (a table is the caller's).
pub(crate) struct Rows<W: Write> {
    format: Format,
    out: W,
    rows: usize,
    csv_header: Option<Vec<String>>,
}

impl<W: Write> Rows<W> {
    pub(crate) fn new(format: Format, out: W) -> Rows<W> {
        Rows {
            format,
            out,
            rows: 0,
            csv_header: None,
        }
    }

    /// Prints one row.
    pub(crate) fn row<T: Serialize>(&mut self, t: &T) -> io::Result<()> {
        let text = serde_json::to_string(t).map_err(io::Error::other)?;
        match self.format {
            Format::Ndjson => writeln!(self.out, "{text}")?,
            Format::Json => {
                let sep = if self.rows == 0 { "[\n" } else { ",\n" };
                write!(self.out, "{sep}{text}")?;
            }
            Format::Csv => {
                let Ordered(fields) = serde_json::from_str(&text).map_err(io::Error::other)?;
                // RFC 4180: records end in CRLF; a field holding a comma, a
                // quote, CR or LF is quoted (quotes doubled). The bytes of
                // a name are kept as they are (an ESC included): a CSV
                // reader gets them back; escaping is the table's.
                let mut w = csv::WriterBuilder::new()
                    .terminator(csv::Terminator::CRLF)
                    .from_writer(Vec::new());
                let header = match &self.csv_header {
                    Some(h) => h,
                    None => {
                        let names: Vec<String> = fields.iter().map(|(k, _)| k.clone()).collect();
                        w.write_record(&names).map_err(io::Error::other)?;
                        self.csv_header.insert(names)
                    }
                };
                // The header's columns, in its order (a field a row lacks
                // is empty).
                let at = |name: &str| fields.iter().find(|(k, _)| k == name).map(|(_, v)| v);
                w.write_record(header.iter().map(|h| at(h).map(cell).unwrap_or_default()))
                    .map_err(io::Error::other)?;
                let bytes = w
                    .into_inner()
                    .map_err(|e| io::Error::other(e.to_string()))?;
                self.out.write_all(&bytes)?;
            }
            Format::Table => unreachable!("a table is printed by its command"),
        }
        self.rows += 1;
        Ok(())
    }

    /// Ends the listing (closes a JSON array) and flushes.
    pub(crate) fn finish(mut self) -> io::Result<W> {
        if self.format == Format::Json {
            if self.rows == 0 {
                writeln!(self.out, "[]")?;
            } else {
                writeln!(self.out, "\n]")?;
            }
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

/// `--json` as each command has always meant it, else `--format`, else the
/// table.
pub(crate) fn chosen(format: Option<Format>, json: bool, json_means: Format) -> Format {
    match (format, json) {
        (Some(f), _) => f,
        (None, true) => json_means,
        (None, false) => Format::Table,
    }
}

/// `n entries` (or `1 entry`), as the cache commands' summaries say it.
pub(crate) fn entries(n: usize) -> String {
    if n == 1 {
        "1 entry".into()
    } else {
        format!("{n} entries")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct R {
        z: u32,
        a: Option<&'static str>,
        n: Vec<u8>,
    }

    fn print(format: Format, rows: &[R]) -> String {
        let mut w = Rows::new(format, Vec::new());
        for r in rows {
            w.row(r).unwrap();
        }
        String::from_utf8(w.finish().unwrap()).unwrap()
    }

    #[test]
    fn each_format_prints_the_rows_in_field_order() {
        let rows = [
            R {
                z: 1,
                a: Some("x,y"),
                n: vec![1, 2],
            },
            R {
                z: 2,
                a: None,
                n: vec![],
            },
        ];
        assert_eq!(
            print(Format::Csv, &rows),
            "z,a,n\r\n1,\"x,y\",\"[1,2]\"\r\n2,,[]\r\n"
        );
        assert_eq!(
            print(Format::Ndjson, &rows),
            "{\"z\":1,\"a\":\"x,y\",\"n\":[1,2]}\n{\"z\":2,\"a\":null,\"n\":[]}\n"
        );
        let json: Value = serde_json::from_str(&print(Format::Json, &rows)).unwrap();
        assert_eq!(json.as_array().unwrap().len(), 2);
        assert_eq!(print(Format::Json, &[]), "[]\n");
        assert_eq!(print(Format::Csv, &[]), "");
    }
}
