"""neff.cache_status and neff.cache_prune against `neff cache status|prune
--json`, on a compile cache laid out as the compiler wrapper writes it."""

import json
import os
import shutil
import time

import pytest

import neff
from conftest import ROOT, cli

GOOD = os.path.join(ROOT, "fixtures", "acc", "cc-replica-groups-gz.neff")
VERSIONS = ("2.15.100.0+2d4f85be", "2.15.128.0+56dc5a86")


def make_cache(root):
    """Two compiler versions, one entry of each state in each: {dir: state}."""
    made = {}
    for v, version in enumerate(VERSIONS):
        base = os.path.join(root, "neuronxcc-" + version)
        for s, state in enumerate(["ok", "corrupt", "failed", "locked", "incomplete", "empty"]):
            d = os.path.join(base, "MODULE_%d%d+%08x" % (v, s, s))
            os.makedirs(d)
            open(os.path.join(d, "compile_flags.json"), "w").write('["-O2"]')
            if state == "ok":
                shutil.copy(GOOD, os.path.join(d, "model.neff"))
                open(os.path.join(d, "model.done"), "w").close()
            elif state == "corrupt":
                open(os.path.join(d, "model.neff"), "wb").write(open(GOOD, "rb").read()[:1500])
                open(os.path.join(d, "model.done"), "w").close()
            elif state == "failed":
                open(os.path.join(d, "model.log"), "w").write("ERROR 1 [neuronx-cc]: failed\n")
            elif state == "locked":
                lock = os.path.join(d, "model.hlo_module.pb.lock")
                open(lock, "w").close()
                old = time.time() - 7200
                os.utime(lock, (old, old))
            elif state == "incomplete":
                open(os.path.join(d, "model.neff"), "wb").write(b"\0" * 2000)
            made[d] = state
    return made


def cli_json(*args, code):
    p = cli(*args, "--json")
    assert p.returncode == code, p.stderr
    return [json.loads(line) for line in p.stdout.splitlines()]


def test_cache_status_gives_every_entry_its_state_as_the_cli_does(tmp_path):
    made = make_cache(str(tmp_path))
    st = neff.cache_status(tmp_path)
    assert st.errors == []
    assert {e["path"]: e["state"] for e in st.entries} == made
    assert st.entries == cli_json("cache", "status", str(tmp_path), code=1)
    ok = [e for e in st.entries if e["state"] == "ok"]
    assert ok[0]["arch"] == "cayman" and ok[0]["cc_world_size"] == 2


def test_cache_prune_is_dry_until_applied(tmp_path):
    made = make_cache(str(tmp_path))
    plan = neff.cache_prune(tmp_path, failed=True)
    assert sorted(r["path"] for r in plan) == sorted(d for d, s in made.items() if s == "failed")
    assert all(not r["removed"] for r in plan)
    assert all(os.path.exists(d) for d in made)
    assert plan == cli_json("cache", "prune", str(tmp_path), "--failed", code=0)
    done = neff.cache_prune(tmp_path, failed=True, locked_older_than=3600, apply=True)
    assert len(done) == 4 and all(r["removed"] for r in done)
    for d, s in made.items():
        assert os.path.exists(d) == (s not in ("failed", "locked")), d


def test_cache_prune_needs_a_selector_and_a_root_that_exists(tmp_path):
    with pytest.raises(ValueError):
        neff.cache_prune(tmp_path)
    with pytest.raises(FileNotFoundError):
        neff.cache_status(tmp_path / "missing")
