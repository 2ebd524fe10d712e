"""The control plane's queries of docs/GUIDE.md from DuckDB attaching the
catalogue (`ATTACH 'zoo.db' (TYPE sqlite)`) give the answers SQLite gives,
and `COPY ... TO 'neffs.parquet'` keeps every row.

DuckDB reads SQLite through its `sqlite` extension; `INSTALL sqlite`
downloads it from extensions.duckdb.org. The PyPI package
`duckdb-ext-sqlite` (scripts/python-setup installs it beside `duckdb`)
carries it, so the test loads it from there with no network; without
either, the test is skipped and says why."""

import importlib.util
import json
import os
import re
import sqlite3
import subprocess

import pytest

from conftest import ROOT, neff_bin

duckdb = pytest.importorskip("duckdb", reason="the duckdb package is not installed")

QUERIES = {
    "by path": "SELECT record FROM neffs WHERE path = :path;",
    "by uuid": "SELECT path FROM neffs WHERE uuid = :uuid ORDER BY path;",
    "by hash": "SELECT path FROM neffs WHERE hash = :hash ORDER BY path;",
    "count for a target": "SELECT count(*) FROM neffs\n"
    "  WHERE arch = :arch AND cc_world_size = :world AND num_cores = :cores AND ok = 1;",
    "which fit a target": "SELECT path FROM neffs\n"
    "  WHERE arch = :arch AND cc_world_size = :world AND num_cores = :cores AND ok = 1\n"
    "  ORDER BY path;",
    "failed per version": "SELECT compiler, count(*) AS failed FROM neffs\n"
    "  WHERE cache_state = 'failed' GROUP BY compiler ORDER BY compiler;",
    "newest for a key": "SELECT path, compiler, cache_state FROM neffs\n"
    "  WHERE cache_key = :key ORDER BY mtime_ns DESC LIMIT 1;",
}

V15 = "neuronxcc-2.15.128.0+56dc5a86"
V16 = "neuronxcc-2.16.372.0+4a9b2326"


def duck():
    """A DuckDB connection with the sqlite extension loaded, or a skip."""
    con = duckdb.connect()
    spec = importlib.util.find_spec("duckdb_ext")
    if spec is not None and spec.submodule_search_locations:
        ext = os.path.join(list(spec.submodule_search_locations)[0], "extensions")
        con.execute("SET extension_directory = '%s'" % ext.replace("'", "''"))
    try:
        con.execute("LOAD sqlite")
    except duckdb.Error as e_load:
        try:
            con.execute("INSTALL sqlite")
            con.execute("LOAD sqlite")
        except duckdb.Error as e_install:
            pytest.skip(
                "DuckDB's sqlite extension is not loadable: not in the duckdb-ext-sqlite "
                "package (%s) and INSTALL sqlite needs the network (%s)" % (e_load, e_install)
            )
    return con


def pack(tmp, out, i, arch, cores, world):
    src = os.path.join(tmp, "src-%d" % i)
    for c in range(cores):
        os.makedirs(os.path.join(src, "sg%02d" % c))
        with open(os.path.join(src, "kelf-%d.json" % c), "w") as f:
            json.dump({"graphs": [{"name": "sg%02d" % c}], "target": arch}, f)
        d = {"var": {}}
        if world:
            d["#rank_world_size"] = world
        with open(os.path.join(src, "sg%02d" % c, "def.json"), "w") as f:
            json.dump(d, f)
    # neff.json's __kelf nodes are the NeuronCores the scan counts.
    with open(os.path.join(src, "neff.json"), "w") as f:
        json.dump({"graphs": {"sg_coreV1%d" % c: {"op": "__kelf"} for c in range(cores)}}, f)
    with open(os.path.join(src, "info.json"), "w") as f:
        json.dump({"i": i}, f)
    subprocess.run(
        [neff_bin(), "pack", "--uuid", "%02x" % (i + 1) * 16, "-o", out, src],
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("duck"))
    root = os.path.join(tmp, "cache")
    targets = [
        ("sunda", 2, 32),
        ("sunda", 2, 32),
        ("sunda", 1, 32),
        ("cayman", 2, 32),
        ("sunda", 1, 0),
        ("cayman", 1, 8),
    ]
    paths = []
    for i, (arch, cores, world) in enumerate(targets):
        d = os.path.join(root, (V15, V16)[i % 2], "MODULE_%020x+%08x" % (i, i))
        os.makedirs(d)
        pack(tmp, os.path.join(d, "model.neff"), i, arch, cores, world)
        open(os.path.join(d, "model.done"), "w").close()
        paths.append(os.path.join(d, "model.neff"))
    # One module compiled by both versions, 2.16's newer.
    for j, (version, age) in enumerate(((V15, 86400), (V16, 3600))):
        d = os.path.join(root, version, "MODULE_%s+%s" % ("a" * 20, "b" * 8))
        os.makedirs(d)
        pack(tmp, os.path.join(d, "model.neff"), 50 + j, "sunda", 1, 4)
        open(os.path.join(d, "model.done"), "w").close()
        t = 1_767_225_600 - age
        os.utime(os.path.join(d, "model.neff"), (t, t))
    for k, version in enumerate((V15, V15, V16)):
        d = os.path.join(root, version, "MODULE_%020x+%08x" % (0xF0 + k, k))
        os.makedirs(d)
        with open(os.path.join(d, "model.log"), "w") as f:
            f.write("ERROR 70: internal error\n")
    db = os.path.join(tmp, "zoo.db")
    subprocess.run(
        [neff_bin(), "scan", "--json", "--no-progress", "--index", db, root],
        check=True,
        capture_output=True,
    )
    c = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    path = paths[2]
    uuid, hash_ = c.execute("SELECT uuid, hash FROM neffs WHERE path = ?", (path,)).fetchone()
    params = {
        "path": path,
        "uuid": uuid,
        "hash": hash_,
        "arch": "sunda",
        "world": 32,
        "cores": 2,
        "key": "a" * 20 + "+" + "b" * 8,
    }
    return tmp, db, params, paths


def used(sql, params):
    return {k: v for k, v in params.items() if ":" + k in sql}


def test_the_guide_gives_each_query_verbatim():
    with open(os.path.join(ROOT, "docs", "GUIDE.md")) as f:
        guide = f.read()
    for name, sql in QUERIES.items():
        assert sql in guide, name
    assert "ATTACH 'zoo.db' AS zoo (TYPE sqlite, READ_ONLY)" in guide
    assert "(FORMAT parquet)" in guide


def test_duckdb_attaching_the_catalogue_answers_as_sqlite(catalogue):
    tmp, db, params, paths = catalogue
    lite = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    con = duck()
    con.execute("ATTACH '%s' AS zoo (TYPE sqlite, READ_ONLY)" % db.replace("'", "''"))
    con.execute("USE zoo")
    answers = {}
    for name, sql in QUERIES.items():
        p = used(sql, params)
        want = [tuple(r) for r in lite.execute(sql, p).fetchall()]
        # DuckDB's named parameters are $name where SQLite's are :name.
        got = [tuple(r) for r in con.execute(re.sub(r":(\w+)", r"$\1", sql), p).fetchall()]
        assert got == want, name
        assert want, "%s: an empty answer proves nothing" % name
        answers[name] = want
    # And the answers are the right ones.
    assert json.loads(answers["by path"][0][0])["path"] == paths[2]
    assert answers["by uuid"] == [(paths[2],)]
    assert answers["by hash"] == [(paths[2],)]
    assert answers["count for a target"] == [(2,)]
    assert answers["which fit a target"] == sorted([(paths[0],), (paths[1],)])
    assert answers["failed per version"] == [("2.15.128.0+56dc5a86", 2), ("2.16.372.0+4a9b2326", 1)]
    newest = answers["newest for a key"][0]
    assert newest[1:] == ("2.16.372.0+4a9b2326", "ok"), newest


def test_copy_to_parquet_keeps_every_row(catalogue):
    tmp, db, _, _ = catalogue
    con = duck()
    con.execute("ATTACH '%s' AS zoo (TYPE sqlite, READ_ONLY)" % db.replace("'", "''"))
    out = os.path.join(tmp, "neffs.parquet")
    con.execute("COPY (SELECT * FROM zoo.neffs) TO '%s' (FORMAT parquet)" % out)
    lite = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    want = lite.execute("SELECT key, ok, arch, cache_state FROM neffs ORDER BY key").fetchall()
    got = con.execute(
        "SELECT key, ok, arch, cache_state FROM read_parquet('%s') ORDER BY key" % out
    ).fetchall()
    assert [tuple(r) for r in got] == [tuple(r) for r in want]
    assert len(want) == 11
