"""neff.open / neff.Neff: header, members, bytes and accessors, each
compared with the CLI's answer on the same file; life cycle and errors."""

import json
import os
import subprocess

import pytest

import neff
from conftest import FIXTURES, cli, neff_bin

FIX = os.path.join(os.path.dirname(FIXTURES[0]), "cc-both-gz.neff")


def test_header_and_summary_equal_neff_info_json():
    want = json.loads(cli("info", FIX, "--json").stdout)
    with neff.open(FIX) as n:
        assert n.summary() == want
        h = n.header
        assert h.pkg_version == want["pkg_version"] and h.uuid == want["uuid"]
        assert list(h.features) == want["features"]
        with pytest.raises(Exception):
            h.name = "x"  # frozen


@pytest.mark.parametrize("path", FIXTURES[:20], ids=os.path.basename)
def test_members_equal_neff_ls_json(path):
    rows = json.loads(cli("ls", path, "--json", "--all").stdout)
    with neff.open(path) as n:
        got = [(m.name, m.size, m.kind) for m in n.members(all=True)]
        assert got == [(r["name"], r["size"], r["kind"]) for r in rows]
        assert [m.name for m in n.members()] == [r["name"] for r in rows if r["kind"] == "file"]


def test_read_and_find_return_the_bytes_neff_cat_writes():
    with neff.open(FIX) as n:
        for m in n.members():
            assert n.read(m.name) == cli("cat", FIX, "^" + m.name.replace(".", r"\.") + "$").stdout
        assert n.find(r"sg\d+/def\.json") == cli("cat", FIX, r"sg\d+/def\.json").stdout
        name, data = n.find_member(r"def\.json")
        assert name == "sg00/def.json" and data == n.read(name)
        with pytest.raises(KeyError):
            n.read("no-such-member")
        with pytest.raises(neff.NeffError, match="no member matches zzz"):
            n.find("zzz")


@pytest.mark.parametrize("path", FIXTURES, ids=os.path.basename)
def test_accessor_methods_equal_neff_get(path):
    methods = {
        "info": "info",
        "neff": "neff_json",
        "def": "def_json",
        "kelf": "kelf",
        "tensor-map": "tensor_map",
        "alias": "alias",
        "must-alias": "must_alias",
        "arch": "arch",
        "has-cc": "has_cc",
        "cc-world-size": "cc_world_size",
        "num-cores": "num_cores",
    }
    with neff.open(path) as n:
        for acc, meth in methods.items():
            p = cli("get", path, acc)
            try:
                got = getattr(n, meth)()
            except neff.NeffError as e:
                assert p.returncode == 1
                assert p.stderr.decode().rstrip("\n") == "neff: %s: %s" % (path, e)
                continue
            assert p.returncode == 0, p.stderr
            assert (
                json.dumps(got, separators=(",", ":"), ensure_ascii=False)
                .encode("utf-8", "backslashreplace")
                .decode("utf-8")
                + "\n"
                == p.stdout.decode()
            )
            assert n.get_json(acc) + b"\n" == p.stdout


def test_close_releases_and_later_calls_raise_value_error():
    n = neff.open(FIX)
    with n:
        assert not n.closed
    assert n.closed
    with pytest.raises(ValueError, match="closed"):
        n.arch()
    n.close()  # idempotent


def test_missing_file_is_file_not_found_and_garbage_is_neff_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        neff.open(tmp_path / "missing.neff")
    bad = tmp_path / "bad.neff"
    bad.write_bytes(b"\x07" * 4096)
    with pytest.raises(neff.NeffError) as ei:
        neff.open(bad)
    want = cli("info", str(bad)).stderr.decode().rstrip("\n")
    assert want == "neff: %s: %s" % (bad, ei.value)


def test_directory_is_an_os_error(tmp_path):
    with pytest.raises(OSError):
        neff.open(tmp_path)


def test_unknown_accessor_is_a_value_error():
    with neff.open(FIX) as n, pytest.raises(ValueError, match="unknown accessor"):
        n.get("nope")


def test_accessors_list_matches_the_cli_help():
    helptext = subprocess.run(
        [neff_bin(), "get", "--help"],
        capture_output=True,
        text=True,
    ).stdout
    for a in neff.ACCESSORS:
        assert a in helptext
