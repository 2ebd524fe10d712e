#!/usr/bin/env python3
r"""Differential-test oracle for `neff get` / `neff ls` (reference semantics in plain Python).

    python3 tests/helpers/oracle.py FILE.neff    -> one JSON object for that file
    python3 tests/helpers/oracle.py DIR          -> {path: object, ...} for every *.neff under DIR
                                            (recursive, sorted by the paths' bytes)

Per file the object is

    {"members":   [regular member names, archive order, duplicates kept],
     "accessors": {ACCESSOR: {"value": V} | {"error": "message"}, ...}}

or, when the file itself cannot be read as a NEFF (short header, data_size past the end,
broken gzip, unreadable tar), {"error": "message"} with no other keys.

Standard library only.  This file is also the written-down semantics the Rust reader
(`neff get`, `neff ls`) is tested against, so every rule is spelled out in a comment next to
the code that implements it.  Design references: docs/FORMAT.md (the header, the inner
archive, the JSON members and the reference reader) and docs/CLI.md.

--------------------------------------------------------------------------------------------
Semantics in short
--------------------------------------------------------------------------------------------
Container
  * header: the first 1024 bytes, little-endian; pkg_version u64 @0, header_size u64 @8,
    data_size u64 @16.  A file shorter than 1024 bytes, or one where
    header_size + data_size > file size, is refused (file-level error).
  * payload = file[header_size : header_size + data_size].  pkg_version is NOT trusted:
    the payload is gzip iff it starts with 1f 8b, otherwise it is a raw tar.
  * gzip: every concatenated member is inflated (CRC32/ISIZE checked); runs of zero bytes
    before/after members are ignored; anything else after a member is an error.
  * tar: Python's tarfile (mode "r:", UTF-8 names): GNU/ustar/PAX, long names, base-256.
    A bad first header is an error; like tarfile, a bad header later ends the archive.
Names
  * regular members only (tarfile isreg(): types '0', '\0', '7', GNU sparse 'S');
  * names: raw bytes decoded as UTF-8 with U+FFFD replacement (Rust from_utf8_lossy), then
    ONE leading "./" removed;
  * a name that occurs more than once refers to its LAST occurrence in the archive.
Member selection for a pattern
  * distinct names, sorted by their UTF-8 bytes; the first one in which the regex is found
    (Python re.search, i.e. unanchored; `\d` is Unicode-aware, as in Rust's regex) is
    selected.  `kelf-0\.json` therefore also matches e.g. "sg00/kelf-0.json.bak".
  * no match -> "no member matches <pattern>" (the pattern text exactly as below).
JSON model (that of serde_json::Value without arbitrary_precision):
  * strict UTF-8 (no BOM), RFC 8259 grammar, no NaN/Infinity, no lone surrogate escapes;
  * integer literals in [-2^63, 2^64) are integers; other integer literals, and "-0"
    (serde_json gives -0.0), are floats; a number that overflows f64 is an error;
  * duplicate object keys: the last value wins (at the first key's position);
  * any failure -> "invalid JSON in <member>: <detail>".
  * Python's parser refuses nesting deeper than its recursion limit (~1000 levels): that is
    reported as invalid JSON too; serde_json's own default limit is 128.
"Wrong shape": every error about a JSON value of an unexpected type contains "wrong shape".
Order of checks (only the message differs, but it is part of the contract)
  * alias, must-alias: the whole alias_map is shape-checked first (list of objects; for alias
    also string input_name/output_name); only then the 1:1 guard / the truthiness test, so
    a truthy top-level must_alias does not excuse a malformed alias_map.
  * cc-world-size: strictly in the order of the code (replica_groups topology by topology,
    then src_target_pairs, then #rank_world_size); the first failure wins.
  * integers (src_target_pairs leaves, #rank_world_size) must fit a u64; the world size
    max + 1 may therefore be 2^64.
"""

import io
import json
import os
import re
import struct
import sys
import tarfile
import zlib

HEADER_BYTES = 1024

# Patterns, exactly as they appear in "no member matches <pattern>" messages.
PAT_INFO = r"info\.json"
PAT_NEFF = r"neff\.json"
PAT_DEF = r"sg\d+/def\.json"
PAT_TENSOR_MAP = r"sg\d+/tensor_map\.json"
PAT_KELF_0 = r"kelf-0\.json"
PAT_KELF_ANY = r"kelf-[^/]*\.json"

CC_KEYS = ("replica_groups", "src_target_pairs", "#rank_world_size")

U64_MAX = 2 ** 64 - 1
I64_MIN = -(2 ** 63)


class Refusal(Exception):
    """A refusal with a user-facing message (the accessor's or the file's error)."""


def wrong_shape(what):
    return Refusal("wrong shape: " + what)


# ------------------------------------------------------------------------------- container
def gunzip_all(buf):
    """Inflate every gzip member of `buf`; zero bytes between/after members are padding."""
    out = []
    rest = buf
    while True:
        rest = rest.lstrip(b"\x00")          # zero padding (before a member or at the end)
        if not rest:
            break
        if rest[:2] != b"\x1f\x8b":
            raise Refusal("trailing garbage after gzip stream")
        d = zlib.decompressobj(wbits=31)     # gzip wrapper: header parsed, CRC32+ISIZE checked
        try:
            out.append(d.decompress(rest))
        except zlib.error as e:
            raise Refusal("gzip decompression failed: %s" % e) from None
        if not d.eof:
            raise Refusal("truncated gzip stream")
        rest = d.unused_data
    return b"".join(out)


def read_tar_bytes(data):
    """File bytes -> the (decompressed) tar stream, applying the header rules above."""
    if len(data) < HEADER_BYTES:
        raise Refusal("file shorter than the 1024-byte NEFF header (%d bytes)" % len(data))
    _pkg_version, header_size, data_size = struct.unpack_from("<QQQ", data, 0)
    end = header_size + data_size            # Python ints: no overflow
    if end > len(data):
        raise Refusal("data_size runs past the end of the file (header_size %d + data_size %d"
                      " > file size %d)" % (header_size, data_size, len(data)))
    payload = data[header_size:end]
    if payload[:2] == b"\x1f\x8b":           # sniff; pkg_version is not trusted
        return gunzip_all(payload)
    return payload


def member_name(tarinfo):
    """Name as the reader reports it: lossy UTF-8, one leading "./" removed."""
    raw = tarinfo.name.encode("utf-8", "surrogateescape")   # undo tarfile's decoding
    name = raw.decode("utf-8", "replace")
    if name.startswith("./"):
        name = name[2:]
    return name


class Archive:
    """Regular members of the tar: archive order, and name -> last occurrence."""

    def __init__(self, tar_bytes):
        try:
            self.tf = tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:",
                                   encoding="utf-8", errors="surrogateescape")
            infos = self.tf.getmembers()
        except (tarfile.TarError, EOFError, ValueError, OSError) as e:
            raise Refusal("unreadable tar: %s" % e) from None
        self.order = []       # names in archive order (duplicates kept)
        self.latest = {}      # name -> TarInfo of its last occurrence
        for ti in infos:
            if not ti.isreg():
                continue
            name = member_name(ti)
            self.order.append(name)
            self.latest[name] = ti
        self.sorted_names = sorted(self.latest, key=lambda n: n.encode("utf-8"))

    def select(self, pattern):
        """First name in byte order in which `pattern` is found (unanchored), or None."""
        rx = re.compile(pattern)
        for name in self.sorted_names:
            if rx.search(name):
                return name
        return None

    def read(self, name):
        f = self.tf.extractfile(self.latest[name])
        try:
            return f.read()
        except (tarfile.TarError, EOFError, OSError) as e:
            raise Refusal("cannot read member %s: %s" % (name, e)) from None


# ------------------------------------------------------------------------------------ JSON
def parse_json(raw, name):
    """Python's json.loads of a member's bytes (UTF-8, a BOM skipped); any failure ->
    'invalid JSON in <name>: ...'."""
    try:
        text = raw.decode("utf-8")           # strict UTF-8
        if text.startswith("\ufeff"):        # json.loads of bytes skips a BOM
            text = text[1:]
        value = json.loads(text)             # NaN, Infinity, big integers: as Python
    except RecursionError:
        raise Refusal("invalid JSON in %s: nesting too deep" % name) from None
    except (UnicodeError, ValueError) as e:  # JSONDecodeError is a ValueError
        raise Refusal("invalid JSON in %s: %s" % (name, e)) from None
    return value


def python_text(raw, name):
    """What the reference's users see for a whole member: the text of
    json.dumps(json.loads(member), separators=(",", ":"), ensure_ascii=False).
    json.loads of bytes skips a UTF-8 BOM. A lone surrogate, which Python keeps
    but cannot print as UTF-8, stays as its escape."""
    try:
        text = raw.decode("utf-8")
        if text.startswith("\ufeff"):
            text = text[1:]
        value = json.loads(text)
        out = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except RecursionError:
        raise Refusal("invalid JSON in %s: nesting too deep" % name) from None
    except (UnicodeError, ValueError) as e:  # JSONDecodeError is a ValueError
        raise Refusal("invalid JSON in %s: %s" % (name, e)) from None
    return out.encode("utf-8", "backslashreplace").decode("utf-8")


def printable(*strings):
    """A string holding a lone surrogate has no UTF-8 form: it cannot be printed."""
    for x in strings:
        if any(0xD800 <= ord(c) <= 0xDFFF for c in x):
            raise Refusal("invalid JSON: a string to print holds a lone surrogate escape")


def truthy(v):
    """Python truthiness of a JSON value: false, null, 0, 0.0, -0.0, "", [], {} are false."""
    return bool(v)


def is_json_int(v):
    """A JSON integer (not a bool, not a float)."""
    return isinstance(v, int) and not isinstance(v, bool)


# ------------------------------------------------------------------------------- accessors
class Neff:
    def __init__(self, archive):
        self.ar = archive
        self._cache = {}

    # ---- member JSON (cached per pattern; errors are cached as well)
    def _json(self, pattern):
        """(name, parsed JSON) of the member selected by `pattern`, or (None, None)."""
        if pattern not in self._cache:
            name = self.ar.select(pattern)
            try:
                val = (name, parse_json(self.ar.read(name), name)) if name is not None \
                    else (None, None)
            except Refusal as e:
                val = e
            self._cache[pattern] = val
        val = self._cache[pattern]
        if isinstance(val, Refusal):
            raise val
        return val

    def _require(self, pattern):
        name, value = self._json(pattern)
        if name is None:
            raise Refusal("no member matches %s" % pattern)
        return value

    def _kelf_member(self):
        """kelf-0.json if any name matches it, else the first kelf-*.json; (None, None) if
        neither.  A selected member that is not valid JSON is an error (no fallback)."""
        name, value = self._json(PAT_KELF_0)
        if name is None:
            name, value = self._json(PAT_KELF_ANY)
        return name, value

    # ---- whole members as `neff get` prints them
    def member_text(self, patterns):
        """python_text of the first of `patterns` that selects a member."""
        for pattern in patterns:
            name = self.ar.select(pattern)
            if name is not None:
                return python_text(self.ar.read(name), name)
        raise Refusal("no member matches %s" % patterns[-1])

    # ---- plain member accessors: the parsed JSON, whatever its type
    def info(self):
        return self._require(PAT_INFO)

    def neff(self):
        return self._require(PAT_NEFF)

    def def_(self):
        return self._require(PAT_DEF)

    def tensor_map(self):
        return self._require(PAT_TENSOR_MAP)

    def kelf(self):
        name, value = self._kelf_member()
        if name is None:
            raise Refusal("no member matches %s" % PAT_KELF_ANY)
        return value

    # ---- tensor map
    def _alias_map(self):
        """The tensor map's alias_map as a list of objects (shape checked in full)."""
        tm = self.tensor_map()
        if not isinstance(tm, dict):
            raise wrong_shape("tensor_map.json is not an object")
        am = tm.get("alias_map", [])         # missing -> []; present null is not a list
        if not isinstance(am, list):
            raise wrong_shape("alias_map is not a list")
        for i, entry in enumerate(am):
            if not isinstance(entry, dict):
                raise wrong_shape("alias_map[%d] is not an object" % i)
        return tm, am

    def alias(self):
        # Shape of every entry is checked first; only then the 1:1 guard.
        _tm, am = self._alias_map()
        for i, entry in enumerate(am):
            for key in ("input_name", "output_name"):
                if not isinstance(entry.get(key), str):
                    raise wrong_shape("alias_map[%d].%s is not a string" % (i, key))
        out = {}
        for entry in am:
            if entry["input_name"] in out:
                raise Refusal("1 input aliasing to multiple outputs is not supported")
            out[entry["input_name"]] = entry["output_name"]
        printable(*out.keys(), *out.values())
        return out

    def must_alias(self):
        # alias_map is validated in full even when the top-level flag already decides.
        tm, am = self._alias_map()
        if truthy(tm.get("must_alias")):
            return True
        return any(truthy(e.get("must_alias")) for e in am)

    # ---- kelf
    def arch(self):
        k = self.kelf()
        if not isinstance(k, dict):
            raise wrong_shape("kelf is not an object")
        if "target" in k:
            t = k["target"]                  # present (even null): must be a string or list
            if isinstance(t, str):
                printable(t)
                return t
            if isinstance(t, list):
                if not t:
                    raise wrong_shape("kelf target is an empty list")
                if not all(isinstance(x, str) for x in t):
                    raise wrong_shape("kelf target list holds a non-string")
                if len(set(t)) != 1:
                    raise Refusal("mixed accelerator usage is not supported")
                printable(t[0])
                return t[0]
            raise wrong_shape("kelf target is neither a string nor a list")
        md = k.get("metadata")
        if isinstance(md, dict) and isinstance(md.get("target_arch"), str):
            printable(md["target_arch"])
            return md["target_arch"]
        raise Refusal("kelf has no target")

    # ---- collectives (def.json)
    def _cc(self):
        d = self.def_()
        if not isinstance(d, dict):
            raise wrong_shape("def.json is not an object")
        if any(k in d for k in CC_KEYS):     # top level first
            return d
        if "CCInfo" not in d:
            return d
        if not isinstance(d["CCInfo"], dict):
            raise wrong_shape("CCInfo is not an object")
        return d["CCInfo"]

    def has_cc(self):
        cc = self._cc()
        return any(k in cc for k in CC_KEYS)

    def cc_world_size(self):
        cc = self._cc()
        if not any(k in cc for k in CC_KEYS):
            raise Refusal("NEFF does not have CC op")

        # replica_groups: [topology][group][rank]; checked topology by topology, in order.
        rg = 0
        if "replica_groups" in cc:
            groups = cc["replica_groups"]
            if not isinstance(groups, list):
                raise wrong_shape("replica_groups is not a list")
            if not groups:
                raise Refusal("Empty replica_groups found")
            for idx, topo in enumerate(groups):
                if not isinstance(topo, list):
                    raise wrong_shape("replica_groups[%d] is not a list" % idx)
                if not topo:
                    raise Refusal("Empty topology found at index %d, possible MPMD neff file."
                                  " Try --stopAfter=compile" % idx)
                for j, g in enumerate(topo):
                    if not isinstance(g, list):
                        raise wrong_shape("replica_groups[%d][%d] is not a list" % (idx, j))
                    for k, r in enumerate(g):
                        if not is_json_int(r):
                            raise wrong_shape("replica_groups[%d][%d][%d] is not an integer"
                                              % (idx, j, k))
                size = max(len(g) for g in topo)
                if rg != 0 and size != rg:
                    raise Refusal("Inconsistent worker count across topologies: %d vs %d."
                                  " Possible MPMD neff file" % (rg, size))
                rg = size

        # src_target_pairs: any nesting of lists; leaves are rank ids; size = max + 1.
        pairs = 0
        if "src_target_pairs" in cc:
            stp = cc["src_target_pairs"]
            if not isinstance(stp, list):
                raise wrong_shape("src_target_pairs is not a list")
            if not stp:
                raise Refusal("Empty src_target_pairs found")
            leaves = []
            stack = [stp]
            while stack:                      # iterative flatten (order is irrelevant: max)
                for x in stack.pop():
                    if isinstance(x, list):
                        stack.append(x)
                    elif is_json_int(x) and x >= 0:
                        leaves.append(x)
                    else:
                        raise wrong_shape("src_target_pairs holds a non-rank value")
            if not leaves:
                raise Refusal("Empty src_target_pairs found")
            pairs = max(leaves) + 1           # may reach 2^64: compute wider than u64

        # "#rank_world_size": null/absent -> 0; u64 integer; or a string of ASCII digits.
        expl = cc.get("#rank_world_size")
        if expl is None:
            expl = 0
        elif is_json_int(expl) and expl >= 0:
            pass
        elif isinstance(expl, str) and re.fullmatch(r"[0-9]+", expl) \
                and len(expl.lstrip("0")) <= 20 and int(expl) <= U64_MAX:
            expl = int(expl)                 # "007" -> 7; must fit in a u64
        else:
            raise wrong_shape("#rank_world_size is not a non-negative integer")

        return max(rg, pairs, expl, 1)

    # ---- core count
    @staticmethod
    def _is_kelf_node(n):
        if not isinstance(n, dict):
            return False
        if n.get("op") == "__kelf" or n.get("func_name") == "__kelf":
            return True
        attrs = n.get("attrs")
        return isinstance(attrs, dict) and attrs.get("func_name") == "__kelf"

    def num_cores(self):
        neff_name, nj = self._json(PAT_NEFF)
        if neff_name is not None:
            if not isinstance(nj, dict):
                raise wrong_shape("neff.json is not an object")
            count = 0
            if "nodes" not in nj and "graphs" not in nj:
                raise wrong_shape("neff.json has neither a graphs object nor a nodes list")
            # (a) runtime form: top-level nodes[], a list of objects
            if "nodes" in nj:
                nodes = nj["nodes"]
                if not isinstance(nodes, list):
                    raise wrong_shape("nodes is not a list")
                for i, n in enumerate(nodes):
                    if not isinstance(n, dict):
                        raise wrong_shape("nodes[%d] is not an object" % i)
                    count += self._is_kelf_node(n)
            if "graphs" in nj:
                graphs = nj["graphs"]
                if isinstance(graphs, dict):
                    # (b) {key: node}: keys sg_core... count whatever their value
                    count += sum(1 for k, v in graphs.items()
                                 if k.startswith("sg_core") or self._is_kelf_node(v))
                elif isinstance(graphs, list):
                    # (c) envelope form: graphs[] objects, and graphs[].definition.nodes[]
                    for i, g in enumerate(graphs):
                        if not isinstance(g, dict):
                            raise wrong_shape("graphs is neither an object nor a list of"
                                              " objects (graphs[%d])" % i)
                        if self._is_kelf_node(g):
                            count += 1
                        if isinstance(g.get("definition"), dict):
                            inner = g["definition"].get("nodes")
                            if isinstance(inner, list):
                                count += sum(1 for n in inner if self._is_kelf_node(n))
                else:
                    raise wrong_shape("graphs is neither an object nor a list of objects")
            if count > 0:
                return count
        # Fallback: the kelf descriptor's graphs[] (one per physical core).
        kelf_name, k = self._kelf_member()
        if kelf_name is None:
            if neff_name is not None:
                return 0
            raise Refusal("no member matches %s" % PAT_KELF_ANY)
        if not isinstance(k, dict):
            raise wrong_shape("kelf is not an object")
        if "graphs" not in k:
            return 0
        if not isinstance(k["graphs"], list):
            raise wrong_shape("kelf graphs is not a list")
        return len(k["graphs"])


ACCESSORS = [
    ("info", Neff.info),
    ("neff", Neff.neff),
    ("def", Neff.def_),
    ("kelf", Neff.kelf),
    ("tensor-map", Neff.tensor_map),
    ("alias", Neff.alias),
    ("must-alias", Neff.must_alias),
    ("arch", Neff.arch),
    ("has-cc", Neff.has_cc),
    ("cc-world-size", Neff.cc_world_size),
    ("num-cores", Neff.num_cores),
]


WHOLE_MEMBERS = {
    "info": [PAT_INFO],
    "neff": [PAT_NEFF],
    "def": [PAT_DEF],
    "kelf": [PAT_KELF_0, PAT_KELF_ANY],
    "tensor-map": [PAT_TENSOR_MAP],
}


# ------------------------------------------------------------------------------------ main
def oracle_file(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return {"error": "I/O error: %s" % e}
    try:
        ar = Archive(read_tar_bytes(data))
    except Refusal as e:
        return {"error": str(e)}
    n = Neff(ar)
    acc = {}
    for name, fn in ACCESSORS:
        try:
            if name in WHOLE_MEMBERS:
                # Printed straight from the member, as Python re-prints it
                # (NaN, big integers and lone surrogates included).
                acc[name] = {"text": n.member_text(WHOLE_MEMBERS[name])}
                continue
            value = fn(n)
            # The text `neff get` must print: the reference's compact dumps.
            acc[name] = {"value": value,
                         "text": json.dumps(value, separators=(",", ":"), ensure_ascii=False)}
        except Refusal as e:
            acc[name] = {"error": str(e)}
    return {"members": ar.order, "accessors": acc}


def find_neffs(root):
    out = []
    for d, dirs, files in os.walk(root):
        out.extend(os.path.join(d, f) for f in files
                   if f.endswith(".neff") and os.path.isfile(os.path.join(d, f)))
    return sorted(out, key=os.fsencode)


def main(argv):
    if len(argv) != 2:
        print("usage: oracle.py FILE.neff | DIR", file=sys.stderr)
        return 2
    target = argv[1]
    if os.path.isdir(target):
        result = {p: oracle_file(p) for p in find_neffs(target)}
    elif os.path.exists(target):
        result = oracle_file(target)
    else:
        print("oracle.py: %s: no such file or directory" % target, file=sys.stderr)
        return 3
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
