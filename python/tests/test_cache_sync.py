"""neff.cache_sync against `neff cache sync --json`: the same records, every
ok entry copied and nothing else, nothing overwritten."""

import datetime
import json
import os

import neff
from conftest import cli
from test_cache import make_cache


def test_cache_sync_copies_the_ok_entries_with_the_records_of_the_cli(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    made = make_cache(str(src))
    dry = neff.cache_sync(src, dst, dry_run=True)
    assert not dst.exists()
    assert [e["action"] for e in dry] == ["copy", "copy"]
    assert dry.passed_over == len(made) - 2
    done = neff.cache_sync(src, dst)
    assert [e["action"] for e in done] == ["copied", "copied"]
    ok = sorted(d for d, s in made.items() if s == "ok")
    assert sorted(e["path"] for e in done) == ok
    for e in done:
        for name in os.listdir(e["path"]):
            with open(os.path.join(e["path"], name), "rb") as a, open(os.path.join(e["dest"], name), "rb") as b:
                assert a.read() == b.read()
    assert {e["state"] for e in neff.cache_status(dst).entries} == {"ok"}
    # Again: the records the CLI prints, every entry skipped.
    again = neff.cache_sync(src, dst)
    p = cli("cache", "sync", str(src), str(dst), "--json")
    assert p.returncode == 0, p.stderr
    assert list(again) == [json.loads(line) for line in p.stdout.splitlines()]
    assert {e["action"] for e in again} == {"skipped"}
    # Filters, and a destination entry that differs: a conflict, untouched.
    assert neff.cache_sync(src, tmp_path / "none", dry_run=True, version="2.15.128.0") != []
    assert neff.cache_sync(src, tmp_path / "none", dry_run=True, glob=["nothing*"]) == []
    later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
    assert neff.cache_sync(src, tmp_path / "none", dry_run=True, since=later) == []
    flags = os.path.join(done[0]["dest"], "compile_flags.json")
    open(flags, "w").write('["-O3"]')
    c = neff.cache_sync(src, dst)
    assert [e["action"] for e in c] == ["conflict", "skipped"]
    assert open(flags).read() == '["-O3"]'
