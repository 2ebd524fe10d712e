"""Read AWS Neuron NEFF files in-process, from the Rust ``neff`` library.

Three ways in:

* :class:`NeffInfo`: a drop-in for the reference NeffInfo reader (same
  constructor, ``parseFile`` and getters, same Python types and refusal
  messages, memoized per instance), with the answers of ``neff get``.
* :func:`open` / :class:`Neff`: the Pythonic API (header, members, bytes,
  accessors as methods; a context manager).
* :func:`scan` / :func:`scan_batches` / :func:`scan_table`: the records of
  ``neff scan --json`` for whole zoos, streamed (as dicts, or as Arrow
  record batches in bounded memory); ``index=`` keeps an SQLite catalogue
  that :class:`Catalog` queries; :mod:`neff.ray` fans a scan out on Ray
  Data.
* :func:`verify`, :func:`cache_status`, :func:`cache_prune`, :func:`cache_sync`: ``neff
  verify`` and ``neff cache``; :class:`Limits` caps resources wherever a
  NEFF is read.

Errors: a file the reader refuses raises a subclass of :class:`NeffError`
(itself a subclass of ``Exception``), named after the library's error kind;
its message is the library's one-line reason, the text ``neff`` prints after
``neff: <path>: `` (for the reference reader's guards, its guard string
verbatim). The classes, all exported here::

    Exception
     +-- NeffError                    any refusal of the library
          +-- HeaderError             not a NEFF header, or sizes that do not fit the file
          +-- GzipError               corrupt or truncated gzip payload
          +-- TarError                malformed tar ("tar at byte N: ...")
          +-- HashError               payload hash differs from the header's
          +-- LimitError              a resource cap reached (inflated size, JSON size or depth, ...)
          +-- ChangedError            the file was truncated or rewritten while read
          +-- OutOfMemoryError        (also MemoryError) an allocation the input justified failed
          +-- NoMatchError            (also LookupError) no member matches a pattern
          +-- JsonError               a JSON member is not valid JSON
          +-- ShapeError              valid JSON of the wrong shape for an accessor
          +-- GuardError              a guard of the reference reader ("NEFF does not have CC op")
          +-- UnsafePathError         unpacking would write outside the target
          +-- CatalogError            the scan catalogue (SQLite) failed
          +-- RefusedError            refused for a reason outside the bytes (a FIFO, a device)
          +-- UsageError              (also ValueError) a malformed request (a bad regular expression)

``HashError`` comes from :func:`verify` (and ``scan(verify=True)``
records), ``CatalogError`` from :class:`Catalog` and ``scan(index=...)``;
``UnsafePathError`` from unpacking, which this package does not expose: it
is here so that every kind has its class. Operating-system errors
raise the matching ``OSError`` subclass
(``FileNotFoundError``, ``PermissionError``, ``IsADirectoryError``, ...), not
a NeffError. Python-level misuse raises the usual built-ins: ``KeyError``
from :meth:`Neff.read` for a missing exact name, ``ValueError`` after
:meth:`Neff.close` or for an unknown accessor. :class:`NeffInfo`, as a
drop-in for the reference reader, raises ``NeffError`` itself (never a
subclass), as the reference does. The classes pickle (Ray hands them
between processes). The GIL is released during every read, inflate,
parse and scan, so Python threads run in parallel.
"""

import base64 as _base64
import datetime as _datetime
import functools as _functools
import json as _json
import os as _os
import shlex as _shlex
from dataclasses import dataclass as _dataclass
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple, Union

from . import _neff
from ._neff import (
    CatalogError,
    ChangedError,
    GuardError,
    GzipError,
    HashError,
    HeaderError,
    JsonError,
    LimitError,
    NeffError,
    NoMatchError,
    OutOfMemoryError,
    RefusedError,
    ShapeError,
    TarError,
    UnsafePathError,
    UsageError,
)

__all__ = [
    "__version__",
    "NeffError",
    "HeaderError",
    "GzipError",
    "TarError",
    "HashError",
    "LimitError",
    "ChangedError",
    "OutOfMemoryError",
    "NoMatchError",
    "JsonError",
    "ShapeError",
    "GuardError",
    "UnsafePathError",
    "CatalogError",
    "RefusedError",
    "UsageError",
    "NeffInfo",
    "Neff",
    "Header",
    "Member",
    "Limits",
    "open",
    "verify",
    "scan",
    "scan_batches",
    "scan_table",
    "Catalog",
    "CacheStatus",
    "cache_status",
    "cache_prune",
    "cache_sync",
    "cache_explain",
    "set_threads",
    "set_io_depth",
    "set_max_bytes_moved",
    "remote_stats",
    "set_aws_profile",
    "set_s3_access",
    "ACCESSORS",
]

#: The package's version: the ``neff`` crate's.
__version__: str = _neff.__version__

#: The accessor names of ``neff get``, in CLI.md's order.
ACCESSORS: Tuple[str, ...] = tuple(_neff.ACCESSORS)

_HEADER_FIELDS = (
    "pkg_version",
    "header_size",
    "data_size",
    "version_major",
    "version_minor",
    "build_version",
    "hash",
    "uuid",
    "name",
    "num_tpb",
    "requested_tpb_count",
    "tpb_per_node",
    "feature_bits",
    "features",
    "vnc_size",
)


@_dataclass(frozen=True)
class Header:
    """The decoded 1024-byte header (the header fields of ``neff info --json``)."""

    pkg_version: int
    header_size: int
    data_size: int
    version_major: int
    version_minor: int
    build_version: str
    #: Lower-case hex of the meaningful hash bytes (16 for MD5, 32 for SHA-256).
    hash: str
    #: Lower-case hex, 32 digits.
    uuid: str
    name: str
    num_tpb: int
    requested_tpb_count: int
    tpb_per_node: Tuple[int, ...]
    feature_bits: int
    features: Tuple[str, ...]
    vnc_size: int


@_dataclass(frozen=True)
class Limits:
    """Resource caps, as ``neff``'s ``--max-*`` flags set them: each field
    left ``None`` keeps the library's default (``neff --help`` lists them).
    A NEFF that needs more than a cap is refused with :class:`LimitError`."""

    #: Largest inflated payload, bytes (default 4 GiB).
    max_inflated: Optional[int] = None
    #: Most archive entries (default 1,000,000).
    max_members: Optional[int] = None
    #: Largest PAX or GNU long-name extended header, bytes (default 1 MiB).
    max_extended_header: Optional[int] = None
    #: Longest member name or link target, bytes (default 64 KiB).
    max_name_len: Optional[int] = None
    #: Largest JSON member parsed, bytes (default 256 MiB).
    max_json_size: Optional[int] = None
    #: Deepest JSON nesting (default 512).
    max_json_depth: Optional[int] = None
    #: Largest gzip payload inflated whole; larger ones stream (default 64 MiB).
    inflate_budget: Optional[int] = None
    #: Most segments in an archive's GNU sparse maps (default 1,048,576).
    max_sparse_segments: Optional[int] = None
    #: Largest real size of one GNU sparse member, bytes (default 64 GiB).
    max_sparse_size: Optional[int] = None

    def _set(self) -> Dict[str, int]:
        return {k: int(v) for k, v in self.__dict__.items() if v is not None}


def _limits(limits: Optional[Limits]) -> Optional[Dict[str, int]]:
    return None if limits is None else limits._set()


@_dataclass(frozen=True)
class Member:
    """One archive entry: its name, data size and kind (``file``, ``dir``, ...)."""

    name: str
    size: int
    kind: str


class Neff:
    """An open, indexed NEFF. Use :func:`open`; also a context manager.

    Bytes returned by :meth:`read` and :meth:`find` are copies (``bytes``),
    valid after :meth:`close`.
    """

    def __init__(
        self,
        path: Union[str, "_os.PathLike[str]"],
        *,
        early_cc: bool = False,
        limits: Optional[Limits] = None,
        read_mode: str = "auto",
    ):
        self._r = _neff.open(_os.fspath(path), early_cc, _limits(limits), read_mode)
        self._header: Optional[Header] = None

    # ---- life cycle
    @property
    def path(self) -> str:
        """The path this NEFF was opened from."""
        return str(self._r.path)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._r.closed

    def close(self) -> None:
        """Releases the file (idempotent); later calls raise ``ValueError``."""
        self._r.close()

    def __enter__(self) -> "Neff":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return "<neff.Neff %r%s>" % (self.path, " closed" if self.closed else "")

    # ---- header and archive
    def summary(self) -> Dict[str, Any]:
        """What ``neff info --json`` prints: the header decoded plus an archive summary."""
        return _json.loads(self._r.summary_json())

    @property
    def header(self) -> Header:
        """The decoded header, as a frozen :class:`Header`."""
        if self._header is None:
            s = self.summary()
            vals = {k: s[k] for k in _HEADER_FIELDS}
            vals["tpb_per_node"] = tuple(vals["tpb_per_node"])
            vals["features"] = tuple(vals["features"])
            self._header = Header(**vals)
        return self._header

    @property
    def compressed(self) -> bool:
        """Whether the payload is gzip-compressed."""
        return self._r.is_compressed()

    def members(self, all: bool = False) -> List[Member]:
        """Regular members in archive order (every entry with ``all=True``)."""
        return [Member(n, s, k) for n, s, k in self._r.members(all)]

    def read(self, name: str) -> bytes:
        """The bytes of the regular member named exactly ``name``; ``KeyError`` if none."""
        return self._r.read(name)

    def find(self, pattern: str) -> bytes:
        """The bytes of the first regular member (byte-wise name order) whose name
        the regular expression ``pattern`` matches, unanchored (``neff cat``).
        No match raises :class:`NoMatchError`; a pattern that is not a regular
        expression, :class:`UsageError`."""
        return self._r.find(pattern)[1]

    def find_member(self, pattern: str) -> Tuple[str, bytes]:
        """Like :meth:`find`, returning ``(name, bytes)``."""
        return self._r.find(pattern)

    # ---- accessors (CLI.md's ``neff get``)
    def get(self, accessor: str) -> Any:
        """An accessor's answer by its ``neff get`` name (or NeffInfo getter name),
        as the Python object ``json.loads`` makes of ``neff get``'s output."""
        return _json.loads(self._r.get_json(accessor))

    def get_json(self, accessor: str) -> bytes:
        """An accessor's answer as the compact JSON text ``neff get`` prints."""
        return self._r.get_json(accessor)

    def info(self) -> Any:
        """``info.json``, parsed."""
        return self.get("info")

    def neff_json(self) -> Any:
        """``neff.json``, parsed."""
        return self.get("neff")

    def def_json(self) -> Any:
        """The first ``sg\\d+/def.json``, parsed."""
        return self.get("def")

    def kelf(self) -> Any:
        """``kelf-0.json`` (else the first ``kelf-*.json``), parsed."""
        return self.get("kelf")

    def tensor_map(self) -> Any:
        """The first ``sg\\d+/tensor_map.json``, parsed."""
        return self.get("tensor-map")

    def alias(self) -> Dict[str, str]:
        """``{input_name: output_name}`` from the tensor map's ``alias_map``."""
        return self.get("alias")

    def must_alias(self) -> bool:
        """Whether the tensor map asks for a must-alias."""
        return self._r.must_alias()

    def arch(self) -> str:
        """The single target arch (kelf's ``target``); mixed arches are refused."""
        return self._r.arch()

    def has_cc(self) -> bool:
        """Whether def.json carries collective metadata."""
        return self._r.has_cc()

    def cc_world_size(self) -> int:
        """The collective world size (>= 1), refused with the reference's guard strings."""
        return self._r.cc_world_size()

    def num_cores(self) -> int:
        """NeuronCores: neff.json's kelf nodes, else the kelf's graphs."""
        return self._r.num_cores()


def open(  # noqa: A001
    path: Union[str, "_os.PathLike[str]"],
    *,
    early_cc: bool = False,
    limits: Optional[Limits] = None,
    read_mode: str = "auto",
) -> Neff:
    """Opens and indexes a NEFF (GIL released): maps it, checks the header,
    inflates a gzip payload and walks the tar. ``early_cc=True``: on a raw
    NEFF, skim def.json's collective keys during the walk, for a caller whose
    first question is :meth:`Neff.has_cc` or :meth:`Neff.cc_world_size`.
    ``limits`` caps resources (:class:`Limits`); ``read_mode`` is ``auto``,
    ``map`` or ``read`` (``neff --read-mode``)."""
    return Neff(path, early_cc=early_cc, limits=limits, read_mode=read_mode)


def verify(
    path: Union[str, "_os.PathLike[str]"],
    *,
    limits: Optional[Limits] = None,
    read_mode: str = "auto",
) -> None:
    """Checks a NEFF as ``neff verify`` does: its header's sizes and its
    payload's hash (every byte read). Returns ``None``; raises
    :class:`HashError` when the hash differs, another :class:`NeffError`
    when the file is refused, ``OSError`` when it cannot be read."""
    _neff.verify(_os.fspath(path), _limits(limits), read_mode)


# Getter name -> `neff get` accessor; the getters whose answer is JSON go
# through the library's compact JSON and `json.loads`, so that their types,
# key order and numbers are what the reference's `json.loads` makes.
_GETTERS = {
    "getInfoJson": "info",
    "getNeffJson": "neff",
    "getDefJson": "def",
    "getKelf": "kelf",
    "getTensorMapJson": "tensor-map",
    "getTensorMap": "tensor-map",
    "getAliasInfo": "alias",
    "hasMustAlias": "must-alias",
    "getArchType": "arch",
    "hasCC": "has-cc",
    "getCCRankWorldSize": "cc-world-size",
    "getNumNc": "num-cores",
    "getNumNeuronCores": "num-cores",
}


def _as_neff_error(method: Any) -> Any:
    """NeffInfo raises NeffError itself, as the reference reader does: a
    subclass raised by the library becomes a NeffError with its message."""

    @_functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except NeffError as e:
            if type(e) is NeffError:
                raise
            raise NeffError(*e.args) from None

    return wrapper


class NeffInfo:
    """Drop-in for the reference NeffInfo reader, answering what ``neff get`` answers.

    ``NeffInfo(path)`` raises ``FileNotFoundError("NEFF does not exist.")`` for a
    missing path and :class:`NeffError` for a file shorter than the 1024-byte
    header, as the reference does; the file is opened (mapped, inflated,
    indexed) once, at the first getter. Every getter's result is memoized per
    instance (the reference memoizes its member getters with
    ``functools.lru_cache``; here the derived getters are memoized too): a
    repeated call returns the same object, so do not mutate it. Refusals raise
    :class:`NeffError` itself, never one of its subclasses (the reference
    has the one class): a guard of the reference with its string verbatim,
    anything else with the library's reason (what ``neff get`` prints after
    ``neff: <path>: ``). Operating-system errors raise ``OSError``
    subclasses, as with :func:`open`.
    """

    def __init__(self, neff: Optional[str] = None):
        self.neff: Optional[str] = None
        self._reader: Optional[Neff] = None
        if neff is not None:
            self.parseFile(neff)

    def parseFile(self, neff: Union[str, "_os.PathLike[str]"]) -> "NeffInfo":
        """Points this object at ``neff`` (forgetting earlier answers); returns self."""
        path = _os.fspath(neff)
        if not _neff.is_url(path) and not _os.path.exists(path):
            raise FileNotFoundError("NEFF does not exist.")
        self.neff = path
        self._reader = None
        # Per-instance memos: each getter name, looked up on the instance,
        # finds an lru_cache over this object's answer (a hit is one C call,
        # as with the reference's lru_cache; a refusal is not memoized).
        for getter in _GETTERS:
            answer = _functools.partial(self._answer, getter)
            setattr(self, getter, _functools.lru_cache(maxsize=None)(answer))
        if not _neff.is_url(path) and _os.path.isfile(path) and _os.path.getsize(path) < 1024:
            # The reference refuses a file shorter than a header here, at
            # construction: so do we, with the library's reason.
            self._open()
        return self

    @_as_neff_error
    def _open(self, first: str = "") -> Neff:
        if self._reader is None:
            if self.neff is None:
                raise NeffError("no NEFF given (call parseFile first)")
            # As `neff get` does: a first question about collectives starts
            # the def.json skim during the walk.
            self._reader = Neff(self.neff, early_cc=first in ("has-cc", "cc-world-size"))
        return self._reader

    @_as_neff_error
    def _answer(self, getter: str) -> Any:
        acc = _GETTERS[getter]
        r = self._open(acc)
        if acc == "cc-world-size":
            return r.cc_world_size()
        if acc == "num-cores":
            return r.num_cores()
        if acc == "has-cc":
            return r.has_cc()
        if acc == "must-alias":
            return r.must_alias()
        if acc == "arch":
            return r.arch()
        return r.get(acc)

    def _get(self, getter: str) -> Any:
        # Only reached before parseFile installed the memos.
        return self._answer(getter)

    # ---- the member primitive
    @_as_neff_error
    def findInNeff(self, file_rgx: str) -> bytes:
        """The bytes of the first member (sorted name order) ``file_rgx`` matches."""
        return self._open().find(file_rgx)

    @_as_neff_error
    def getNeffFile(self, member: Optional[str] = None) -> Union[str, bytes, None]:
        """The NEFF's path, or with ``member`` that member's bytes."""
        if member is None:
            return self.neff
        return self._open().read(member)

    # ---- member getters
    def getKelf(self) -> Any:
        """``kelf-0.json`` (else the first ``kelf-*.json``), parsed."""
        return self._get("getKelf")

    def getInfoJson(self) -> Any:
        """``info.json``, parsed."""
        return self._get("getInfoJson")

    def getNeffJson(self) -> Any:
        """``neff.json``, parsed."""
        return self._get("getNeffJson")

    def getDefJson(self) -> Any:
        """The first ``sg\\d+/def.json``, parsed."""
        return self._get("getDefJson")

    def getTensorMapJson(self) -> Any:
        """The first ``sg\\d+/tensor_map.json``, parsed."""
        return self._get("getTensorMapJson")

    def getTensorMap(self) -> Any:
        """The tensor map (as :meth:`getTensorMapJson`)."""
        return self._get("getTensorMap")

    # ---- derived getters
    def getAliasInfo(self) -> Dict[str, str]:
        """``{input_name: output_name}``; a repeated input is refused."""
        return self._get("getAliasInfo")

    def hasMustAlias(self) -> bool:
        """Whether the tensor map asks for a must-alias."""
        return self._get("hasMustAlias")

    def getArchType(self) -> str:
        """The single target arch; mixed accelerator usage is refused."""
        return self._get("getArchType")

    def hasCC(self) -> bool:
        """Whether def.json has collective metadata."""
        return self._get("hasCC")

    def getCCRankWorldSize(self) -> int:
        """The collective world size (>= 1), or the reference's guard refusals."""
        return self._get("getCCRankWorldSize")

    def getNumNeuronCores(self) -> int:
        """The number of NeuronCores."""
        return self._get("getNumNeuronCores")

    def getNumNc(self) -> int:
        """The number of NeuronCores (as :meth:`getNumNeuronCores`)."""
        return self._get("getNumNc")


def _shard(shard: Union[None, str, Tuple[int, int]]) -> Optional[Tuple[int, int]]:
    if shard is None:
        return None
    if isinstance(shard, str):
        k, sep, n = shard.partition("/")
        if not sep:
            raise ValueError("shard must be 'K/N' or (K, N), not %r" % shard)
        return int(k), int(n)
    k, n = shard
    return int(k), int(n)


def _paths(paths: Union[str, "_os.PathLike[str]", Iterable[Any]]) -> List[str]:
    if isinstance(paths, (str, bytes, _os.PathLike)):
        return [_os.fsdecode(paths)]
    return [_os.fsdecode(p) for p in paths]


def scan(
    paths: Union[str, "_os.PathLike[str]", Iterable[Any]],
    jobs: Optional[int] = None,
    shard: Union[None, str, Tuple[int, int]] = None,
    *,
    limits: Optional[Limits] = None,
    verify: bool = False,
    glob: Optional[Iterable[str]] = None,
    max_depth: Optional[int] = None,
    follow: bool = True,
    index: Union[None, str, "_os.PathLike[str]"] = None,
    rebuild: bool = False,
    one_file_system: bool = False,
) -> Iterator[Dict[str, Any]]:
    """Yields one record (a dict, the fields of ``neff scan --json``) per
    ``*.neff`` under ``paths`` (directories walked; files named directly kept
    whatever their name), as they are made, on ``jobs`` threads (default: one
    per core). ``shard`` ``"K/N"`` or ``(K, N)`` keeps every N-th file of the
    sorted list from the K-th (``neff scan --shard``).

    As ``neff scan``'s flags: ``limits`` (:class:`Limits`), ``verify`` (check
    every payload's hash), ``glob`` (gitignore-syntax globs, ``!`` to
    exclude), ``max_depth``, ``follow`` (``False``: ``--no-follow``),
    ``one_file_system`` (``--one-file-system``: a mount inside the tree is
    not entered), and
    ``index``: an SQLite catalogue kept current (``rebuild`` starts it
    over), from which unchanged files are answered; :class:`Catalog` reads it.

    A root that cannot be opened (missing, a dangling or looping link, a
    directory its user may not read, a prefix that cannot be listed) raises
    nothing: it is a record, ``ok`` False, whose ``path`` is the root as
    given and whose ``error`` says why; the other roots are scanned. A URL's
    query values are ``<redacted>`` in ``path``."""
    lines = _neff.scan(
        _paths(paths),
        jobs or 0,
        _shard(shard),
        _limits(limits),
        verify,
        list(glob or []),
        max_depth,
        follow,
        None if index is None else _os.fsdecode(index),
        rebuild,
        one_file_system,
    )
    for line in lines:
        yield _json.loads(line)


def scan_batches(
    paths: Union[str, "_os.PathLike[str]", Iterable[Any]],
    jobs: Optional[int] = None,
    shard: Union[None, str, Tuple[int, int]] = None,
    *,
    batch_size: int = 1024,
    **scan_options: Any,
) -> Any:
    """The records of :func:`scan` as a ``pyarrow.RecordBatchReader``
    (schema :data:`neff.arrow.SCHEMA`), in batches of ``batch_size`` made
    as the scan goes: memory holds one batch (and the scan's bounded
    queue), whatever the number of NEFFs. ``scan_options`` are
    :func:`scan`'s keywords. Needs pyarrow."""
    import pyarrow as pa

    from . import arrow

    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")

    def batches() -> Iterator[Any]:
        batch: List[Dict[str, Any]] = []
        for r in scan(paths, jobs=jobs, shard=shard, **scan_options):
            batch.append(r)
            if len(batch) >= batch_size:
                yield arrow.batch(batch)
                batch = []
        if batch:
            yield arrow.batch(batch)

    return pa.RecordBatchReader.from_batches(arrow.SCHEMA, batches())


def scan_table(
    paths: Union[str, "_os.PathLike[str]", Iterable[Any]],
    jobs: Optional[int] = None,
    shard: Union[None, str, Tuple[int, int]] = None,
    **scan_options: Any,
) -> Any:
    """The records of :func:`scan` as a ``pyarrow.Table`` (schema:
    :data:`neff.arrow.SCHEMA`), sorted by path: the whole table in memory
    (:func:`scan_batches` streams instead). Needs pyarrow."""
    table = scan_batches(paths, jobs=jobs, shard=shard, **scan_options).read_all()
    return table.sort_by("path")


class Catalog:
    """A ``neff scan --index`` catalogue (an SQLite file), opened read-only
    while scans may update it. Records are dicts, the fields of ``neff scan
    --json``. Raises :class:`CatalogError` for a file that is not a
    catalogue or one of another schema version."""

    def __init__(self, path: Union[str, "_os.PathLike[str]"]):
        self._c = _neff.Catalog(_os.fsdecode(path))

    def by_path(self, path: Union[str, "_os.PathLike[str]"]) -> Optional[Dict[str, Any]]:
        """The record of the file at ``path`` (however its path is typed:
        rows are keyed by the real path), or ``None``."""
        r = self._c.by_path(_os.fsdecode(path))
        return None if r is None else _json.loads(r)

    def query(
        self,
        *,
        ok: Optional[bool] = None,
        arch: Optional[str] = None,
        min_cc_world_size: Optional[int] = None,
        max_cc_world_size: Optional[int] = None,
        path_prefix: Optional[str] = None,
        input: Optional[str] = None,  # noqa: A002
        input_shape: Optional[List[int]] = None,
        uuid: Optional[str] = None,
    ) -> List[Dict[str, Any]]:
        """The records matching every condition given, in path order."""
        rows = self._c.query(
            ok,
            arch,
            min_cc_world_size,
            max_cc_world_size,
            path_prefix,
            input,
            input_shape,
            uuid,
        )
        return [_json.loads(r) for r in rows]

    def __len__(self) -> int:
        return len(self._c)


@_dataclass(frozen=True)
class CacheStatus:
    """A compile cache's entries (:func:`cache_status`): ``entries``, one dict
    per entry (the fields of ``neff cache status --json``: ``path``,
    ``path_bytes``, ``compiler``, ``graph_hash``, ``flags_hash``,
    ``state``, ``reason``, ``bytes``, ``modified``, ``lock_modified``,
    ``neff_modified``, ``neff_accessed``, ``arch``, ``num_cores``,
    ``cc_world_size``), and ``errors``, one dict (``path``, ``path_bytes``,
    ``reason``) per part of the cache that could not be read."""

    entries: List[Dict[str, Any]]
    errors: List[Dict[str, Any]]

    def table(self) -> Any:
        """The entries as a ``pyarrow.Table``. Needs pyarrow."""
        import pyarrow as pa

        return pa.Table.from_pylist(self.entries)


def _bytes_path(record: Dict[str, Any]) -> Dict[str, Any]:
    """A cache record's ``path`` as the file system's bytes would give it:
    where they are not UTF-8 (``path_bytes``, base64), ``path`` becomes the
    ``os.fsdecode`` spelling of those bytes (``os.fsencode(path)`` gives
    them back exactly), not the lossy one JSON carries."""
    raw = record.get("path_bytes")
    if raw:
        record["path"] = _os.fsdecode(_base64.b64decode(raw))
    return record


def cache_status(root: Union[None, str, bytes, "_os.PathLike[str]"] = None) -> CacheStatus:
    """Every entry of the Neuron compile cache at ``root`` and its state
    (``ok``, ``corrupt``, ``failed``, ``locked``, ``incomplete``,
    ``empty``, ``unreadable``, ``unknown``), as ``neff cache status`` judges
    them: each a dict with absolute times (RFC 3339, UTC) and ``path`` as
    ``os.fsdecode`` spells the entry's bytes. ``root`` defaults to where the
    compiler wrapper looks (``--cache_dir=`` in ``NEURON_CC_FLAGS``, else
    ``NEURON_COMPILE_CACHE_URL``, else ``/var/tmp/neuron-compile-cache``).
    Raises ``OSError`` when the root cannot be read, ``ValueError`` when it
    is an entry rather than a root."""
    entries, errors = _neff.cache_status(None if root is None else _os.fsdecode(root))
    return CacheStatus(
        [_bytes_path(_json.loads(e)) for e in entries],
        [_bytes_path(_json.loads(e)) for e in errors],
    )


def cache_explain(
    root: Union[None, str, bytes, "_os.PathLike[str]"] = None,
    *,
    entry: Union[None, str, bytes, "_os.PathLike[str]"] = None,
    graph: Optional[str] = None,
    flags: Union[None, str, List[str]] = None,
) -> Dict[str, Any]:
    """Why a compile missed anyway, as ``neff cache explain`` says it: the
    entries of the compile cache at ``root`` (default as
    :func:`cache_status`) related to ``entry`` (an entry's directory or its
    ``MODULE_<graph hash>+<flags hash>`` name), to ``graph`` (a graph hash),
    or to a job's ``flags`` (a list, or a string split as a shell splits
    ``NEURON_CC_FLAGS``). A dict: ``graph_hash`` and ``flags_hash`` asked
    about, ``flags`` compared with, ``hashes`` (the flags hash the job's
    flags give by each rule, ``joined`` and ``json``: ``{"joined":
    "d41d8cd9", ...}`` for no flags), ``entries`` (one dict per entry: the
    fields of :func:`cache_status`'s, then ``relation``, ``flags``,
    ``flags_error``, ``hash_rule``, ``only_asked``, ``only_here``) and
    ``errors``. Raises ``ValueError`` for a question that names nothing or
    an entry not named ``MODULE_*``, ``OSError`` when the root cannot be
    read."""
    if isinstance(flags, str):
        flags = _shlex.split(flags)
    asked, entries, errors = _neff.cache_explain(
        None if root is None else _os.fsdecode(root),
        None if entry is None else _os.fsdecode(entry),
        graph,
        flags,
    )
    out: Dict[str, Any] = _json.loads(asked)
    out["entries"] = [_bytes_path(_json.loads(e)) for e in entries]
    out["errors"] = [_bytes_path(_json.loads(e)) for e in errors]
    return out


def cache_prune(
    root: Union[str, bytes, "_os.PathLike[str]"],
    *,
    failed: bool = False,
    corrupt: bool = False,
    locked_older_than: Optional[float] = None,
    incomplete_older_than: Optional[float] = None,
    keep_versions: Optional[int] = None,
    max_size: Optional[int] = None,
    include_current: bool = False,
    apply: bool = False,
    min_age: Optional[float] = None,
) -> List[Dict[str, Any]]:
    """The entries of the compile cache at ``root`` that the selectors pick
    (durations in seconds, ``max_size`` in bytes), as ``neff cache prune``
    picks them: one dict per entry (``path``, ``path_bytes``, ``compiler``,
    ``state``, ``bytes``, ``why``, ``removed``, ``error``: why it is, or
    would be, left; ``kept``: why ``min_age`` keeps it; ``gone``: another
    prune removed it first). Nothing is removed unless ``apply``, and a dry
    run runs every check ``apply`` runs; an entry holding a fresh lock or
    one a live process holds, or ``unreadable`` or ``unknown``, is never
    picked, and one that changed within ``min_age`` seconds (default an
    hour, as the CLI; 0: off) is kept. ``ValueError`` when no selector is
    given or ``keep_versions`` is 0; ``neff.NeffError`` for
    ``locked_older_than`` while a ``neuronx-cc`` process runs. The return
    value's ``unreadable`` attribute is true when part of the cache could
    not be read (the CLI's exit 3), and ``short`` says why ``max_size`` was
    not reached (``None`` when it was)."""
    removals, _errors, unreadable, short = _neff.cache_prune(
        _os.fsdecode(root),
        failed,
        corrupt,
        locked_older_than,
        incomplete_older_than,
        keep_versions,
        max_size,
        include_current,
        apply,
        min_age,
    )
    out = _Removals(_bytes_path(_json.loads(r)) for r in removals)
    out.unreadable = unreadable
    out.short = short
    return out


class _Removals(list):
    """The entries ``cache_prune`` picked, with ``unreadable``: whether part
    of the cache could not be read, and ``short``: why ``max_size`` was not
    reached."""

    unreadable = False
    short: Optional[str] = None


def cache_sync(
    src: Union[str, bytes, "_os.PathLike[str]"],
    dst: Union[str, bytes, "_os.PathLike[str]"],
    *,
    dry_run: bool = False,
    version: Union[None, str, List[str]] = None,
    glob: Union[None, str, List[str]] = None,
    since: Union[None, float, _datetime.datetime] = None,
    io_depth: Optional[int] = None,
) -> List[Dict[str, Any]]:
    """Copies every ``ok`` entry of the compile cache ``src`` that ``dst``
    lacks into ``dst``, as ``neff cache sync`` does (each a directory or an
    ``s3://``, ``gs://`` or ``az://`` prefix; ``src`` also an ``hf://`` hub
    repository): one dict per ``ok``
    entry selected (the fields of ``neff cache sync --json``: ``path``,
    ``path_bytes``, ``dest``, ``compiler``, ``action``: ``copy`` in a dry
    run, ``copied``, ``skipped`` (the same entry is there), ``conflict`` (a
    different one is there: untouched), ``locked``, ``left`` or ``error``;
    ``bytes``, ``files``, ``reason``). Each entry is written under a
    staging name, checked and renamed into place; nothing is ever
    overwritten, and nothing not ``ok`` is ever copied. ``version``: compiler
    versions (``"2.15"``: every build of 2.15), ``glob``: entry name
    patterns (``*``, ``?``), ``since``: entries modified at or after this
    time (a ``datetime`` or POSIX seconds); ``dry_run`` writes nothing. The
    return value's ``passed_over`` counts the source's entries that are
    not ``ok``, ``errors`` lists the parts of the source that could not be
    read, and ``requests`` counts bucket requests. Raises ``OSError`` when
    a root cannot be read or made."""

    def as_list(v: Union[None, str, List[str]]) -> List[str]:
        return [] if v is None else [v] if isinstance(v, str) else list(v)

    if since is not None and not isinstance(since, (int, float)):
        since = since.timestamp()
    entries, errors, passed_over, requests = _neff.cache_sync(
        _os.fsdecode(src),
        _os.fsdecode(dst),
        dry_run,
        as_list(version),
        as_list(glob),
        None if since is None else float(since),
        io_depth,
    )
    out = _Synced(_bytes_path(_json.loads(e)) for e in entries)
    out.errors = [_bytes_path(_json.loads(e)) for e in errors]
    out.passed_over = passed_over
    out.requests = requests
    return out


class _Synced(list):
    """The entries ``cache_sync`` selected, with ``passed_over`` (the
    source's entries that are not ``ok``), ``errors`` (the parts of the
    source that could not be read) and ``requests`` (bucket requests)."""

    passed_over = 0
    requests = 0
    errors: List[Dict[str, Any]] = []


def set_threads(n: int) -> None:
    """Sets the library's worker count (``neff -j``): a scan's workers and a
    large payload's parallel inflate. ``0``: one per core (the default)."""
    _neff.set_threads(n)


def set_io_depth(n: int) -> None:
    """Sets how many remote objects a scan reads at once (``neff
    --io-depth``, default 32): its workers wait on the network, not on a
    core. ``0``: the default."""
    _neff.set_io_depth(n)


def set_max_bytes_moved(n: Optional[int] = None) -> None:
    """Caps the bytes moved per remote object (``neff --max-bytes-moved``),
    for users who pay for egress: the walk of a raw payload then hops from
    header to header in small windows, and a read that would pass the cap
    raises, naming the object. ``None`` lifts the cap."""
    _neff.set_max_bytes_moved(n)


def remote_stats() -> Dict[str, int]:
    """What this process asked of remote servers so far: ``requests`` sent
    (each GET and listing), ``in_flight`` now, and body ``bytes`` received
    (what ``neff scan``'s progress line shows)."""
    requests, in_flight, moved = _neff.remote_stats()
    return {"requests": requests, "in_flight": in_flight, "bytes": moved}


def set_aws_profile(name: str) -> None:
    """Uses the AWS profile ``name`` of ``~/.aws/config`` and
    ``~/.aws/credentials`` for every S3 request of this process (``neff
    --profile``; without it, ``AWS_PROFILE``, then the environment's keys,
    then ``default``). Only the first call counts."""
    _neff.set_aws_profile(name)


def set_s3_access(*, no_sign_request: bool = False, requester_pays: bool = False) -> None:
    """Sends S3 requests unsigned (a public bucket: ``--no-sign-request``)
    and/or agrees to pay for a requester-pays bucket (``--requester-pays``).
    Only the first call counts."""
    _neff.set_s3_access(no_sign_request, requester_pays)
