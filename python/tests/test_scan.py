"""neff.scan and neff.scan_table against `neff scan --json`."""

import json
import os

import pytest

import neff
from conftest import FIXTURES, HOSTILE, ROOT, cli

ZOO = [os.path.join(ROOT, "fixtures"), os.path.join(ROOT, "tests", "hostile")]


def cli_records(*args, code=0):
    p = cli("scan", "--json", "--no-progress", *args)
    assert p.returncode == code, p.stderr
    return sorted((json.loads(line) for line in p.stdout.splitlines()), key=lambda r: r["path"])


def test_scan_records_equal_the_cli_records():
    want = cli_records(*ZOO)
    got = sorted(neff.scan(ZOO), key=lambda r: r["path"])
    assert len(got) == len(FIXTURES) + len(HOSTILE)
    assert got == want
    # Same field order as the CLI's JSON objects too.
    assert [list(r) for r in got] == [list(r) for r in want]


@pytest.mark.parametrize("shard", ["1/3", "2/3", "3/3"])
def test_scan_shards_equal_the_cli_shards(shard):
    want = cli_records("--shard", shard, *ZOO)
    k, n = map(int, shard.split("/"))
    assert sorted(neff.scan(ZOO, jobs=2, shard=shard), key=lambda r: r["path"]) == want
    assert sorted(neff.scan(ZOO, shard=(k, n)), key=lambda r: r["path"]) == want


def test_scan_streams_one_record_at_a_time():
    it = neff.scan(ZOO, jobs=1)
    first = next(it)
    assert "path" in first and "errors" in first
    it.close()


def test_scan_of_a_missing_path_yields_a_failed_record(tmp_path):
    missing = str(tmp_path / "none")
    got = list(neff.scan([missing]))
    # The CLI keeps the record too, and exits 3 for the root it could not open.
    assert got == cli_records(missing, code=3)
    assert got[0]["ok"] is False and got[0]["error"]


def test_bad_shard_is_a_value_error():
    with pytest.raises(ValueError):
        list(neff.scan(ZOO, shard=(4, 3)))
    with pytest.raises(ValueError):
        list(neff.scan(ZOO, shard="3"))


def test_scan_table_holds_the_cli_records():
    pa = pytest.importorskip("pyarrow")
    from neff import arrow

    t = neff.scan_table(ZOO)
    assert isinstance(t, pa.Table) and t.schema == arrow.SCHEMA
    assert arrow.to_records(t) == cli_records(*ZOO)


def test_a_root_that_cannot_be_opened_is_a_record_and_the_others_are_scanned(tmp_path):
    # Issue 49: no exception; the CLI prints its line and exits 3.
    good = os.path.join(ROOT, "fixtures", "interop")
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    looping = tmp_path / "loop"
    looping.symlink_to(looping)
    for bad in (str(tmp_path / "missing"), str(dangling), str(looping)):
        got = list(neff.scan([bad, good]))
        failed = [r for r in got if r["path"] == bad]
        assert len(failed) == 1 and failed[0]["ok"] is False and failed[0]["error"], got
        assert sum(r["ok"] for r in got) == len(os.listdir(good)), got
        p = cli("scan", "--json", "--no-progress", bad, good)
        assert p.returncode == 3, p.stderr
        assert p.stderr.decode().startswith(f"neff: {bad}: cannot be opened: "), p.stderr


def test_a_root_its_user_may_not_read_is_a_record_too():
    import shutil
    import subprocess
    import sys
    import tempfile
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to run as the user nobody (mode bits do not stop root)")
    top = tempfile.mkdtemp()
    try:
        os.chmod(top, 0o777)
        locked = os.path.join(top, "locked")
        os.mkdir(locked, 0o000)
        code = ("import json, sys, neff; "
                "print(json.dumps(list(neff.scan([sys.argv[1], sys.argv[2]]))))")
        p = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable,
             "-c", code, locked, os.path.join(ROOT, "fixtures", "interop")],
            capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        got = json.loads(p.stdout)
        failed = [r for r in got if r["path"] == locked]
        assert len(failed) == 1 and not failed[0]["ok"] and "ermission" in failed[0]["error"], got
    finally:
        os.chmod(os.path.join(top, "locked"), 0o700)
        shutil.rmtree(top)
