//! A borrowed view of one value on a simd-json tape, with the few typed
//! reads the accessors need and the reference reader's conventions (Python
//! truthiness, last duplicate key wins).
//!
//! A tape lays a document out flat: an array or object node records how
//! many nodes its contents take, so a value is a slice that starts at its
//! node, and walking an array means stepping over each element's span.

use std::io::{self, Write};

use simd_json::tape::Node;
use simd_json::StaticNode;

/// One JSON value, borrowed from a [`Parsed`](super::Parsed) member.
#[derive(Clone, Copy, Debug)]
pub struct Json<'a> {
    nodes: &'a [Node<'a>],
}

/// An object: its key/value pairs in document order.
#[derive(Clone, Copy, Debug)]
pub struct Obj<'a> {
    json: Json<'a>,
}

/// Number of tape nodes the value starting at `n` occupies.
fn span(n: &Node<'_>) -> usize {
    match n {
        Node::Array { count, .. } | Node::Object { count, .. } => 1 + count,
        _ => 1,
    }
}

impl<'a> Json<'a> {
    pub(crate) fn new(nodes: &'a [Node<'a>]) -> Json<'a> {
        Json { nodes }
    }

    fn node(self) -> Option<&'a Node<'a>> {
        self.nodes.first()
    }

    /// Children (array elements, or object keys and values alternating).
    fn children(self) -> Children<'a> {
        let (len, body) = match self.node() {
            Some(Node::Array { len, count }) => (*len, &self.nodes[1..1 + count]),
            Some(Node::Object { len, count }) => (2 * len, &self.nodes[1..1 + count]),
            _ => (0, &self.nodes[..0]),
        };
        Children {
            rest: body,
            left: len,
        }
    }

    /// The value as an object.
    pub fn object(self) -> Option<Obj<'a>> {
        matches!(self.node(), Some(Node::Object { .. })).then_some(Obj { json: self })
    }

    /// The value as an array's elements.
    pub fn array(self) -> Option<Children<'a>> {
        matches!(self.node(), Some(Node::Array { .. })).then(|| self.children())
    }

    /// The array's length, if the value is an array.
    pub fn array_len(self) -> Option<usize> {
        match self.node() {
            Some(Node::Array { len, .. }) => Some(*len),
            _ => None,
        }
    }

    /// The value as a string (borrowed from the member's bytes).
    pub fn str(self) -> Option<&'a str> {
        match self.node() {
            Some(Node::String(s)) => Some(s),
            _ => None,
        }
    }

    /// A JSON integer that fits a u64 (not a float, not a bool).
    pub fn u64(self) -> Option<u64> {
        match self.node() {
            Some(Node::Static(StaticNode::U64(u))) => Some(*u),
            Some(Node::Static(StaticNode::I64(i))) => u64::try_from(*i).ok(),
            _ => None,
        }
    }

    /// Whether the value is a JSON integer (of any sign; not a float, not a bool).
    pub fn is_int(self) -> bool {
        matches!(
            self.node(),
            Some(Node::Static(StaticNode::U64(_) | StaticNode::I64(_)))
        )
    }

    /// Any JSON number, as f64.
    pub fn f64(self) -> Option<f64> {
        match self.node() {
            Some(Node::Static(StaticNode::U64(u))) => Some(*u as f64),
            Some(Node::Static(StaticNode::I64(i))) => Some(*i as f64),
            Some(Node::Static(StaticNode::F64(f))) => Some(*f),
            _ => None,
        }
    }

    /// The value as a boolean.
    pub fn bool(self) -> Option<bool> {
        match self.node() {
            Some(Node::Static(StaticNode::Bool(b))) => Some(*b),
            _ => None,
        }
    }

    /// Whether the value is `null`.
    pub fn is_null(self) -> bool {
        matches!(self.node(), Some(Node::Static(StaticNode::Null)))
    }

    /// Python truthiness: `false`, `null`, `0`, `0.0`, `""`, `[]`, `{}` are false.
    pub fn truthy(self) -> bool {
        match self.node() {
            Some(Node::Static(StaticNode::Null)) | None => false,
            Some(Node::Static(StaticNode::Bool(b))) => *b,
            Some(Node::Static(StaticNode::I64(i))) => *i != 0,
            Some(Node::Static(StaticNode::U64(u))) => *u != 0,
            Some(Node::Static(StaticNode::F64(f))) => *f != 0.0,
            Some(Node::String(s)) => !s.is_empty(),
            Some(Node::Array { len, .. }) | Some(Node::Object { len, .. }) => *len != 0,
        }
    }

    /// Compact JSON text of the value (keys in document order).
    pub fn encode(self) -> String {
        let mut v = Vec::new();
        self.write(&mut v).expect("writing to a Vec");
        String::from_utf8(v).expect("JSON text is UTF-8")
    }

    /// Writes compact JSON text of the value. Recursion is bounded by the
    /// depth cap checked when the member was parsed.
    pub fn write<W: Write>(self, w: &mut W) -> io::Result<()> {
        match self.node() {
            None | Some(Node::Static(StaticNode::Null)) => w.write_all(b"null"),
            Some(Node::Static(StaticNode::Bool(b))) => write!(w, "{b}"),
            Some(Node::Static(StaticNode::I64(i))) => write!(w, "{i}"),
            Some(Node::Static(StaticNode::U64(u))) => write!(w, "{u}"),
            Some(Node::Static(StaticNode::F64(f))) => {
                serde_json::to_writer(&mut *w, f).map_err(io::Error::from)
            }
            Some(Node::String(s)) => serde_json::to_writer(&mut *w, s).map_err(io::Error::from),
            Some(Node::Array { .. }) => {
                w.write_all(b"[")?;
                for (i, x) in self.children().enumerate() {
                    if i > 0 {
                        w.write_all(b",")?;
                    }
                    x.write(w)?;
                }
                w.write_all(b"]")
            }
            Some(Node::Object { .. }) => {
                w.write_all(b"{")?;
                let mut c = self.children();
                let mut first = true;
                while let (Some(k), Some(v)) = (c.next(), c.next()) {
                    if !first {
                        w.write_all(b",")?;
                    }
                    first = false;
                    k.write(w)?;
                    w.write_all(b":")?;
                    v.write(w)?;
                }
                w.write_all(b"}")
            }
        }
    }

    /// The address of the value's first tape node: two views of one parse
    /// share it (used by tests that check a parse is reused).
    #[doc(hidden)]
    pub fn str_ptr_for_test(self) -> usize {
        self.nodes.as_ptr() as usize
    }

    /// A short name of the value's type, for error messages.
    pub fn type_name(self) -> &'static str {
        match self.node() {
            Some(Node::String(_)) => "a string",
            Some(Node::Array { .. }) => "a list",
            Some(Node::Object { .. }) => "an object",
            Some(Node::Static(StaticNode::Null)) | None => "null",
            Some(Node::Static(StaticNode::Bool(_))) => "a boolean",
            Some(Node::Static(_)) => "a number",
        }
    }
}

/// The children of an array or object, stepping over nested spans.
#[derive(Clone, Debug)]
pub struct Children<'a> {
    rest: &'a [Node<'a>],
    left: usize,
}

impl<'a> Iterator for Children<'a> {
    type Item = Json<'a>;
    fn next(&mut self) -> Option<Json<'a>> {
        if self.left == 0 {
            return None;
        }
        let n = span(self.rest.first()?);
        let (head, tail) = self.rest.split_at(n.min(self.rest.len()));
        self.rest = tail;
        self.left -= 1;
        Some(Json::new(head))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Children<'_> {}

impl<'a> Obj<'a> {
    /// The value of `key`; where a key repeats, the last one wins.
    pub fn get(self, key: &str) -> Option<Json<'a>> {
        self.iter()
            .filter(|&(k, _)| k == key)
            .last()
            .map(|(_, v)| v)
    }

    /// Whether `key` is present.
    pub fn has(self, key: &str) -> bool {
        self.iter().any(|(k, _)| k == key)
    }

    /// Key/value pairs in document order.
    pub fn iter(self) -> impl Iterator<Item = (&'a str, Json<'a>)> {
        let mut c = self.json.children();
        std::iter::from_fn(move || {
            let k = c.next()?;
            let v = c.next()?;
            Some((k.str().unwrap_or_default(), v))
        })
    }

    /// Number of keys.
    pub fn len(self) -> usize {
        match self.json.node() {
            Some(Node::Object { len, .. }) => *len,
            _ => 0,
        }
    }

    /// Whether the object has no keys.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The object as a value.
    pub fn value(self) -> Json<'a> {
        self.json
    }
}
