"""Scan records as Apache Arrow: the schema and the conversion (needs pyarrow).

One column per field of ``neff scan --json``. ``inputs``/``outputs`` are
``struct<count, bytes>``; ``errors`` (refused questions, keyed by field) is a
``map<string, string>``. ``cc_world_size`` is ``uint64``: a world size beyond
it (only seen in hostile files) is stored as null and explained in ``errors``.
"""

from typing import Any, Dict, List

import pyarrow as pa

_TENSORS = pa.struct([("count", pa.uint64()), ("bytes", pa.uint64())])

#: The Arrow schema of a scan record.
SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("ok", pa.bool_()),
        ("error", pa.string()),
        ("bytes", pa.uint64()),
        ("pkg_version", pa.uint64()),
        ("compressed", pa.bool_()),
        ("members", pa.uint64()),
        ("arch", pa.string()),
        ("num_cores", pa.uint64()),
        ("cc_world_size", pa.uint64()),
        ("hash_ok", pa.bool_()),
        ("uuid", pa.string()),
        ("name", pa.string()),
        ("data_size", pa.uint64()),
        ("inputs", _TENSORS),
        ("outputs", _TENSORS),
        ("aliases", pa.uint64()),
        ("must_alias", pa.bool_()),
        ("neff_features", pa.list_(pa.string())),
        ("feature_bits", pa.uint64()),
        ("cache_key", pa.string()),
        ("compiler", pa.string()),
        ("cache_state", pa.string()),
        ("cache_reason", pa.string()),
        ("errors", pa.map_(pa.string(), pa.string())),
    ]
)

_U64_MAX = (1 << 64) - 1


def _fit(r: Dict[str, Any]) -> Dict[str, Any]:
    ws = r.get("cc_world_size")
    if ws is not None and ws > _U64_MAX:
        r = dict(r, cc_world_size=None)
        r["errors"] = dict(r.get("errors") or {})
        r["errors"]["cc_world_size"] = "world size %d does not fit the uint64 column" % ws
    return r


def batch(records: List[Dict[str, Any]]) -> "pa.RecordBatch":
    """One record batch of scan records (dicts as :func:`neff.scan` yields them)."""
    return pa.RecordBatch.from_pylist([_fit(r) for r in records], schema=SCHEMA)


def table(records: List[Dict[str, Any]]) -> "pa.Table":
    """A table of scan records (dicts as :func:`neff.scan` yields them)."""
    return pa.Table.from_pylist([_fit(r) for r in records], schema=SCHEMA)


def to_records(t: "pa.Table") -> List[Dict[str, Any]]:
    """Back to record dicts (``errors`` as a dict), e.g. to compare with the CLI."""
    out = t.to_pylist()
    for r in out:
        r["errors"] = dict(r["errors"] or [])
    return out
