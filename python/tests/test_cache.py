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
    # Made just now: the default min_age (an hour) keeps every entry.
    young = neff.cache_prune(tmp_path, failed=True)
    assert all(r["kept"] and not r["removed"] and not r["error"] for r in young)
    assert young == cli_json("cache", "prune", str(tmp_path), "--failed", code=0)
    plan = neff.cache_prune(tmp_path, failed=True, min_age=0)
    assert sorted(r["path"] for r in plan) == sorted(d for d, s in made.items() if s == "failed")
    assert all(not r["removed"] and r["kept"] is None for r in plan)
    assert all(os.path.exists(d) for d in made)
    assert plan == cli_json(
        "cache", "prune", str(tmp_path), "--failed", "--min-age", "0s", code=0
    )
    # Lock ages count from the later of modification and change time: the
    # lock made old by its modification time changed a second ago.
    time.sleep(1.2)
    done = neff.cache_prune(tmp_path, failed=True, locked_older_than=1, min_age=0, apply=True)
    assert len(done) == 4 and all(r["removed"] for r in done)
    for d, s in made.items():
        assert os.path.exists(d) == (s not in ("failed", "locked")), d


def test_cache_prune_needs_a_selector_and_a_root_that_exists(tmp_path):
    with pytest.raises(ValueError):
        neff.cache_prune(tmp_path)
    with pytest.raises(FileNotFoundError):
        neff.cache_status(tmp_path / "missing")


def test_a_name_that_is_not_utf8_is_judged_and_pruned_by_its_own_bytes(tmp_path):
    """Two entries a lossy spelling makes one: the failed one's bytes go,
    the good one beside it stays."""
    base = os.path.join(os.fsencode(tmp_path), b"neuronxcc-2.15.128.0+56dc5a86")
    bad = os.path.join(base, b"MODULE_\xff+1")
    good = os.path.join(base, "MODULE_\ufffd+1".encode())
    os.makedirs(bad)
    os.makedirs(good)
    open(os.path.join(bad, b"model.log"), "w").write("ERROR 1 [neuronx-cc]: failed\n")
    shutil.copy(GOOD, os.path.join(good, b"model.neff"))
    open(os.path.join(good, b"model.done"), "w").close()
    st = neff.cache_status(tmp_path)
    states = {os.fsencode(e["path"]): e["state"] for e in st.entries}
    assert states == {bad: "failed", good: "ok"}
    plan = neff.cache_prune(tmp_path, failed=True, apply=True, min_age=0)
    assert [os.fsencode(r["path"]) for r in plan] == [bad]
    assert not os.path.exists(bad) and os.path.exists(os.path.join(good, b"model.neff"))


def test_records_carry_absolute_times_and_selectors_refuse_what_selects_all(tmp_path):
    make_cache(str(tmp_path))
    st = neff.cache_status(tmp_path)
    for e in st.entries:
        assert "age_s" not in e and "lock_age_s" not in e
        assert e["modified"].endswith("Z") and e["modified"][10] == "T"
        assert " ago" not in (e["reason"] or "")
    assert neff.cache_status(tmp_path).entries == st.entries
    with pytest.raises(ValueError):
        neff.cache_prune(tmp_path, keep_versions=0)
    with pytest.raises(ValueError):
        neff.cache_prune(tmp_path, include_current=True)


def test_max_size_takes_the_least_recently_used_good_compiles_of_older_releases(tmp_path):
    now = time.time()
    dirs = []
    for version, days in (("2.15.128.0+56dc5a86", 0), ("2.16.1.0+1", 10)):
        for k in (1, 2, 3):
            d = os.path.join(tmp_path, "neuronxcc-" + version, "MODULE_%d+1" % k)
            os.makedirs(d)
            shutil.copy(GOOD, os.path.join(d, "model.neff"))
            open(os.path.join(d, "model.done"), "w").close()
            read = now - (k + days) * 86400
            os.utime(os.path.join(d, "model.neff"), (read, read - 86400))
            dirs.append(d)
    size = os.path.getsize(GOOD)
    plan = neff.cache_prune(tmp_path, max_size=4 * size + 10, min_age=0)
    assert [r["path"] for r in plan] == [dirs[2], dirs[1]]
    assert not plan.unreadable and plan.short is None
    plan = neff.cache_prune(tmp_path, max_size=4 * size + 10, include_current=True, min_age=0)
    assert [r["path"] for r in plan] == [dirs[5], dirs[4]]
    # Every entry changed just now: --min-age keeps them all, and says why
    # the size is not reached.
    plan = neff.cache_prune(tmp_path, max_size=4 * size + 10)
    assert list(plan) == [] and "within --min-age" in plan.short


def test_a_fifo_in_an_entry_is_unreadable_and_never_pruned(tmp_path):
    d = os.path.join(tmp_path, "neuronxcc-2.15.128.0+56dc5a86", "MODULE_1+1")
    os.makedirs(d)
    os.mkfifo(os.path.join(d, "model.log"))
    st = neff.cache_status(tmp_path)
    assert [e["state"] for e in st.entries] == ["unreadable"]
    plan = neff.cache_prune(tmp_path, failed=True, corrupt=True, apply=True)
    assert list(plan) == [] and plan.unreadable
    assert os.path.exists(d)


def test_the_guides_every_era_cache_reads_as_the_guide_says(tmp_path):
    """bench/make_cache_eras.py, the cache of the GUIDE's side-by-side with
    optimum-neuron: each era's entries judged as the table there says."""
    import collections
    import subprocess
    import sys

    out = tmp_path / "eras"
    subprocess.run(
        [sys.executable, os.path.join(ROOT, "bench", "make_cache_eras.py"), str(out)],
        check=True,
        capture_output=True,
    )
    st = neff.cache_status(out)
    counts = collections.Counter(e["state"] for e in st.entries)
    assert counts == {
        "ok": 4,
        "failed": 6,
        "corrupt": 1,
        "incomplete": 1,
        "locked": 1,
        "unreadable": 1,
        "unknown": 1,
    }
    by_version = {e["compiler"].split(".")[1] for e in st.entries if e["state"] == "ok"}
    assert by_version == {"12", "13", "15", "20"}


def test_cache_explain_names_the_flag_that_differs_as_the_cli_does(tmp_path):
    graph = "3540044791706521849"
    for version, fh, flags in [
        ("2.15.128.0+56dc5a86", "aaaa0001", '["--target=trn1", "-O1"]'),
        ("2.16.372.0+4a9b2326", "aaaa0001", '["--target=trn1", "-O1"]'),
        ("2.15.128.0+56dc5a86", "bbbb0002", '["--target=trn1", "-O2"]'),
    ]:
        d = tmp_path / ("neuronxcc-" + version) / ("MODULE_%s+%s" % (graph, fh))
        d.mkdir(parents=True)
        shutil.copy(GOOD, d / "model.neff")
        (d / "model.done").write_bytes(b"")
        (d / "compile_flags.json").write_text(flags)
    x = neff.cache_explain(tmp_path, entry="MODULE_%s+aaaa0001" % graph)
    assert x["graph_hash"] == graph and x["flags"] == ["--target=trn1", "-O1"]
    assert x["entries"] == cli_json(
        "cache", "explain", str(tmp_path), "MODULE_%s+aaaa0001" % graph, code=0
    )
    other = [e for e in x["entries"] if e["relation"] == "other_flags"]
    assert [(e["only_asked"], e["only_here"]) for e in other] == [(["-O1"], ["-O2"])]
    assert [e["compiler"] for e in x["entries"] if e["relation"] == "asked"] == [
        "2.15.128.0+56dc5a86",
        "2.16.372.0+4a9b2326",
    ]
    job = neff.cache_explain(tmp_path, flags="")
    assert job["hashes"] == {"joined": "d41d8cd9", "json": "d7517139"}
    assert neff.cache_explain(tmp_path, flags="--target=trn1 '-O2'")["flags"] == ["--target=trn1", "-O2"]
    with pytest.raises(ValueError):
        neff.cache_explain(tmp_path)
