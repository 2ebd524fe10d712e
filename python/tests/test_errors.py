"""The exception classes: each kind of library error raises its NeffError
subclass, with the library's one-line reason as its message (what `neff`
prints after `neff: <path>: `), triggered from real files; NeffInfo raises
NeffError itself, as the reference reader does."""

import os
import pickle

import pytest

import neff
from conftest import FIXTURES, ROOT, cli

ACC = os.path.dirname(FIXTURES[0])
HOSTILE_DIR = os.path.join(ROOT, "tests", "hostile")

# Every class: its name, and the built-in it also derives from (if any).
CLASSES = {
    "HeaderError": None,
    "GzipError": None,
    "TarError": None,
    "HashError": None,
    "LimitError": None,
    "ChangedError": None,
    "OutOfMemoryError": MemoryError,
    "NoMatchError": LookupError,
    "JsonError": None,
    "ShapeError": None,
    "GuardError": None,
    "UnsafePathError": None,
    "CatalogError": None,
    "RefusedError": None,
    "UsageError": ValueError,
}

# (class, file, accessor): `neff.open(file)` raises it (accessor None), or
# `get_json(accessor)` on the opened file does. HashError (verify),
# UnsafePathError (unpack), CatalogError (scan --index) and OutOfMemoryError
# have no call of the Python API that reaches them.
CASES = [
    ("HeaderError", "tests/hostile/empty.neff", None),
    ("HeaderError", "tests/hostile/short-1023.neff", None),
    ("HeaderError", "tests/hostile/pkg-version-7-gz.neff", None),
    ("HeaderError", "tests/hostile/data-size-beyond-file-raw.neff", None),
    ("HeaderError", "tests/hostile/header-size-beyond-file-gz.neff", None),
    ("GzipError", "tests/hostile/gzip-bad-crc-gz.neff", None),
    ("GzipError", "tests/hostile/gzip-truncated-gz.neff", None),
    ("TarError", "tests/hostile/tar-bad-checksum-raw.neff", None),
    ("TarError", "tests/hostile/tar-bad-checksum-gz.neff", None),
    ("TarError", "tests/hostile/pax-no-equals-gz.neff", None),
    ("LimitError", "tests/hostile/pax-name-10mb-gz.neff", None),
    ("LimitError", "tests/hostile/json-deep-100k-gz.neff", "cc-world-size"),
    ("JsonError", "tests/hostile/json-deep-100k-gz.neff", "def"),
    ("NoMatchError", "fixtures/acc/no-info-json-gz.neff", "info"),
    ("NoMatchError", "tests/hostile/many-empty-members-gz.neff", "cc-world-size"),
    ("ShapeError", "fixtures/acc/cc-wrong-shape-gz.neff", "cc-world-size"),
    ("ShapeError", "fixtures/acc/cc-rank-not-int-gz.neff", "cc-world-size"),
    ("GuardError", "fixtures/acc/cc-none-gz.neff", "cc-world-size"),
    ("GuardError", "fixtures/acc/cc-replica-groups-empty-gz.neff", "cc-world-size"),
    ("GuardError", "fixtures/acc/kelf-target-list-mixed-gz.neff", "arch"),
    ("GuardError", "tests/hostile/replica-10m-ranks-gz.neff", "cc-world-size"),
]
# The NeffInfo getter of an accessor (of a refusal at open: any getter).
GETTER = {
    "info": "getInfoJson",
    "def": "getDefJson",
    "cc-world-size": "getCCRankWorldSize",
    "arch": "getArchType",
    None: "getDefJson",
}


def cli_reason(path, *args):
    """(exit code, reason) of `neff ARGS...` refusing `path`."""
    p = cli(*args)
    err = p.stderr.decode("utf-8", "surrogateescape")
    prefix = "neff: %s: " % path
    assert err.startswith(prefix) and err.endswith("\n") and err.count("\n") == 1, err
    return p.returncode, err[len(prefix) : -1]


def raised(fn, *args):
    with pytest.raises(Exception) as ei:
        fn(*args)
    return ei.value


def open_and_get(path, accessor):
    with neff.open(path) as n:
        if accessor is not None:
            n.get_json(accessor)


def make_neff(tmp_path, files, *flags):
    """A NEFF packed by `neff pack` from `files` ({name: bytes})."""
    src = tmp_path / "src"
    for name, data in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(data)
    out = tmp_path / "m.neff"
    r = cli("pack", str(src), "-o", str(out), *flags)
    assert r.returncode == 0, r.stderr
    return str(out)


@pytest.mark.parametrize("name,base", sorted(CLASSES.items()), ids=sorted(CLASSES))
def test_each_class_is_exported_a_neff_error_and_pickles(name, base):
    cls = getattr(neff, name)
    assert name in neff.__all__
    assert cls.__module__ == "neff" and cls.__name__ == name and cls.__doc__
    assert issubclass(cls, neff.NeffError) and issubclass(cls, Exception)
    assert not issubclass(cls, OSError)
    if base is not None:
        assert issubclass(cls, base)
    for other in (MemoryError, LookupError, ValueError, KeyError):
        if other is not base and not issubclass(base or object, other):
            assert not issubclass(cls, other), other
    e = cls("a reason")
    assert str(e) == "a reason"
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is cls and str(back) == "a reason"


def test_the_base_class_is_kept():
    assert neff.NeffError.__module__ == "neff"
    assert neff.NeffError.__bases__ == (Exception,)
    assert "NeffError" in neff.__all__
    subclasses = {c.__name__ for c in neff.NeffError.__subclasses__()}
    assert subclasses == set(CLASSES)


@pytest.mark.parametrize(
    "name,rel,accessor",
    CASES,
    ids=["%s-%s-%s" % (c, os.path.basename(f), a or "open") for c, f, a in CASES],
)
def test_each_kind_raises_its_class_with_the_cli_reason(name, rel, accessor):
    path = os.path.join(ROOT, rel)
    e = raised(open_and_get, path, accessor)
    assert type(e) is getattr(neff, name), (type(e), str(e))
    assert isinstance(e, neff.NeffError)
    args = ("get", path, accessor) if accessor else ("ls", path)
    code, reason = cli_reason(path, *args)
    assert code == 1
    assert str(e) == reason
    assert e.args == (reason,)


NEFFINFO_CASES = [c for c in CASES if c[2] is not None] + [
    ("TarError", "tests/hostile/tar-bad-checksum-raw.neff", None),
    ("LimitError", "tests/hostile/pax-name-10mb-gz.neff", None),
]


@pytest.mark.parametrize(
    "name,rel,accessor",
    NEFFINFO_CASES,
    ids=["%s-%s-%s" % (c, os.path.basename(f), a or "open") for c, f, a in NEFFINFO_CASES],
)
def test_neffinfo_raises_neff_error_itself_with_the_same_message(name, rel, accessor):
    path = os.path.join(ROOT, rel)
    e = raised(getattr(neff.NeffInfo(path), GETTER[accessor]))
    assert type(e) is neff.NeffError, type(e)
    ours = raised(open_and_get, path, accessor)
    assert str(e) == str(ours) and e.args == ours.args
    assert e.__cause__ is None and e.__suppress_context__


def test_neffinfo_refuses_a_short_file_at_construction_with_neff_error_itself():
    path = os.path.join(HOSTILE_DIR, "short-1023.neff")
    e = raised(neff.NeffInfo, path)
    assert type(e) is neff.NeffError
    assert str(e) == "file is 1023 bytes, shorter than the 1024-byte NEFF header"


def test_no_match_of_find_is_a_lookup_error():
    fix = os.path.join(ACC, "cc-both-gz.neff")
    with neff.open(fix) as n:
        e = raised(n.find, "zzz")
        assert type(e) is neff.NoMatchError and str(e) == "no member matches zzz"
        assert isinstance(e, LookupError) and not isinstance(e, KeyError)
        with pytest.raises(LookupError):
            n.find_member("zzz")
        # A missing exact name stays a KeyError (also a LookupError).
        with pytest.raises(KeyError):
            n.read("zzz")
    e = raised(neff.NeffInfo(fix).findInNeff, "zzz")
    assert type(e) is neff.NeffError and str(e) == "no member matches zzz"


def test_a_bad_pattern_is_a_usage_error_and_a_value_error():
    fix = os.path.join(ACC, "cc-both-gz.neff")
    with neff.open(fix) as n:
        e = raised(n.find, "(")
    assert type(e) is neff.UsageError and isinstance(e, ValueError)
    code, reason = cli_reason(fix, "cat", fix, "(")
    assert code == 2 and str(e) == reason
    e = raised(neff.NeffInfo(fix).findInNeff, "(")
    assert type(e) is neff.NeffError and str(e) == reason


def test_invalid_json_is_a_json_error(tmp_path):
    path = make_neff(tmp_path, {"info.json": b'{"version": 1', "sg00/def.json": b"{}"})
    with neff.open(path) as n:
        e = raised(n.get, "info")
    assert type(e) is neff.JsonError
    code, reason = cli_reason(path, "get", path, "info")
    assert code == 1 and str(e) == reason and reason.startswith("invalid JSON in info.json: ")
    e = raised(neff.NeffInfo(path).getInfoJson)
    assert type(e) is neff.NeffError and str(e) == reason


def test_a_device_or_fifo_is_a_refused_error(tmp_path):
    e = raised(neff.open, "/dev/null")
    assert type(e) is neff.RefusedError
    code, reason = cli_reason("/dev/null", "info", "/dev/null")
    assert code == 1 and str(e) == reason
    fifo = tmp_path / "x.neff"
    os.mkfifo(fifo)
    e = raised(neff.open, fifo)
    assert type(e) is neff.RefusedError
    assert str(e) == "a FIFO, not a regular file: refused without reading it"
    e = raised(neff.NeffInfo(str(fifo)).getArchType)
    assert type(e) is neff.NeffError and str(e) == "a FIFO, not a regular file: refused without reading it"


def test_a_file_truncated_while_read_is_a_changed_error(tmp_path):
    big = bytes(i * 7 % 251 for i in range(1 << 20)) * 4
    path = make_neff(
        tmp_path,
        {"a-big.bin": big, "sg00/def.json": b'{"var":{},"replica_groups":[[[0,1]]]}'},
        "--no-gzip",
    )
    reason = "the file was truncated while being read"
    for call in (
        lambda n: n.read("a-big.bin"),
        lambda n: n.find("big"),
        lambda n: n.get("def"),
        lambda n: n.cc_world_size(),
    ):
        with open(path, "rb") as f:
            whole = f.read()
        with neff.open(path) as n:  # mapped: a raw file of 4 MiB
            with open(path, "r+b") as f:
                f.truncate(8192)
            e = raised(call, n)
            assert type(e) is neff.ChangedError and str(e) == reason
        with open(path, "wb") as f:
            f.write(whole)
    # NeffInfo: the same refusal, as NeffError itself.
    info = neff.NeffInfo(path)
    assert info.hasCC() is True  # opened (mapped) here
    with open(path, "r+b") as f:
        f.truncate(8192)
    e = raised(info.findInNeff, "big")
    assert type(e) is neff.NeffError and str(e) == reason


def test_os_errors_stay_os_errors(tmp_path):
    e = raised(neff.open, tmp_path / "missing.neff")
    assert type(e) is FileNotFoundError and not isinstance(e, neff.NeffError)
    e = raised(neff.open, tmp_path)
    assert type(e) is IsADirectoryError and not isinstance(e, neff.NeffError)
    e = raised(neff.NeffInfo, str(tmp_path / "missing.neff"))
    assert type(e) is FileNotFoundError and str(e) == "NEFF does not exist."
