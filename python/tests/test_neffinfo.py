"""neff.NeffInfo against the contract (`neff get`) and the reference reader.

Every getter of the roster on every fixture and hostile NEFF: the answer's
`json.dumps` text (value, type and key order) equals what `neff get`
prints, and a refusal's message equals the CLI's reason. Where the
reference reader answers too, answers and guard messages are compared with
it, apart from the contract's documented fallbacks."""

import json
import os
from concurrent.futures import ThreadPoolExecutor

import pytest

import neff
from conftest import FIXTURES, HOSTILE, cli

# NeffInfo getter -> `neff get` accessor.
ROSTER = {
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
FILES = FIXTURES + HOSTILE


def dumps(obj):
    """What `neff get` prints for obj: a lone surrogate, which Python holds
    but cannot print as UTF-8, stays as its escape."""
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _cli_answer(job):
    path, acc = job
    p = cli("get", path, acc)
    return job, (
        p.returncode,
        p.stdout.decode("utf-8", "surrogateescape"),
        p.stderr.decode("utf-8", "surrogateescape"),
    )


@pytest.fixture(scope="module")
def contract():
    """(path, accessor) -> (exit code, stdout, stderr) of `neff get`."""
    jobs = [(f, a) for f in FILES for a in sorted(set(ROSTER.values()))]
    with ThreadPoolExecutor(4) as ex:
        return dict(ex.map(_cli_answer, jobs))


def ours(path, getter):
    """(kind, value or message): kind 'ok', 'NeffError' or an OSError's name."""
    try:
        return "ok", getattr(neff.NeffInfo(path), getter)()
    except neff.NeffError as e:
        return "NeffError", str(e)
    except OSError as e:
        return type(e).__name__, str(e)


def test_the_corpora_are_there():
    assert len(FIXTURES) >= 40 and len(HOSTILE) >= 40


@pytest.mark.parametrize("getter", sorted(ROSTER))
@pytest.mark.parametrize("path", FILES, ids=[os.path.basename(f) for f in FILES])
def test_getter_answers_what_neff_get_prints(contract, path, getter):
    code, out, err = contract[(path, ROSTER[getter])]
    kind, got = ours(path, getter)
    if code == 0:
        assert kind == "ok", got
        assert dumps(got) + "\n" == out
    else:
        prefix = "neff: %s: " % path
        assert err.startswith(prefix), err
        reason = err[len(prefix) :].rstrip("\n")
        assert kind == ("NeffError" if code == 1 else kind), (kind, got)
        assert kind != "ok"
        assert got == reason


def test_repeated_getter_returns_the_memoized_object():
    n = neff.NeffInfo(os.path.join(os.path.dirname(FIXTURES[0]), "cc-both-gz.neff"))
    first = n.getDefJson()
    assert n.getDefJson() is first
    assert n.getTensorMapJson() is n.getTensorMapJson()


def test_missing_file_raises_file_not_found_with_the_reference_message(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"^NEFF does not exist\.$"):
        neff.NeffInfo(str(tmp_path / "nope.neff"))


def test_neff_error_is_an_exception_subclass():
    assert issubclass(neff.NeffError, Exception)
    assert not issubclass(neff.NeffError, OSError)


def test_parse_file_returns_self_and_forgets_earlier_answers():
    a = os.path.join(os.path.dirname(FIXTURES[0]), "cc-both-gz.neff")
    b = os.path.join(os.path.dirname(FIXTURES[0]), "cc-none-gz.neff")
    n = neff.NeffInfo(a)
    assert n.hasCC() is True
    assert n.parseFile(b) is n
    assert n.hasCC() is False
    assert n.getNeffFile() == b


def test_find_in_neff_returns_the_member_bytes():
    n = neff.NeffInfo(os.path.join(os.path.dirname(FIXTURES[0]), "cc-both-gz.neff"))
    assert json.loads(n.findInNeff(r"info\.json")) == n.getInfoJson()
    with pytest.raises(neff.NeffError, match="no member matches nothing-here"):
        n.findInNeff("nothing-here")
