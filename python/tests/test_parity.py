"""What the CLI does, callable from Python (issue 35): caps, verify, the
catalogue, the walk's flags, Arrow batches in bounded memory; each against
the CLI's own answer."""

import json
import os

import pytest

import neff
from conftest import ROOT, cli

ACC = os.path.join(ROOT, "fixtures", "acc")
GOOD = os.path.join(ROOT, "fixtures", "interop", "gnutar-pax-gz.neff")


def cli_records(*args, code=0):
    p = cli("scan", "--json", "--no-progress", *args)
    assert p.returncode == code, p.stderr
    return sorted((json.loads(line) for line in p.stdout.splitlines()), key=lambda r: r["path"])


def test_limits_cap_an_open_and_a_scan_as_the_flags_do():
    with pytest.raises(neff.LimitError) as e:
        neff.open(GOOD, limits=neff.Limits(max_members=3))
    p = cli("--max-members", "3", "ls", GOOD)
    assert p.returncode == 1
    assert str(e.value) in p.stderr.decode()
    got = sorted(neff.scan([ACC], limits=neff.Limits(max_json_size=100)), key=lambda r: r["path"])
    assert got == cli_records("--max-json-size", "100", ACC)
    with neff.open(GOOD, limits=neff.Limits(max_members=1000), read_mode="read") as n:
        assert n.arch()
    with pytest.raises(ValueError):
        neff.open(GOOD, read_mode="mmap")


def test_verify_answers_as_neff_verify():
    assert neff.verify(GOOD) is None
    bad = os.path.join(ROOT, "tests", "hostile", "md5-mismatch-gz.neff")
    with pytest.raises(neff.HashError) as e:
        neff.verify(bad)
    p = cli("verify", bad)
    assert p.returncode == 1 and str(e.value) in (p.stdout + p.stderr).decode()
    with pytest.raises(FileNotFoundError):
        neff.verify(os.path.join(ROOT, "no-such.neff"))
    got = sorted(neff.scan([ACC], verify=True), key=lambda r: r["path"])
    assert got == cli_records("--verify", ACC)


def test_an_indexed_scan_and_its_catalogue_answer_as_the_cli(tmp_path):
    db = str(tmp_path / "zoo.db")
    got = sorted(neff.scan([ACC], index=db), key=lambda r: r["path"])
    assert got == cli_records(ACC)
    # Warm: the same records, from the catalogue.
    assert sorted(neff.scan([ACC], index=db), key=lambda r: r["path"]) == got
    cat = neff.Catalog(db)
    assert len(cat) == len(got)
    one = got[0]["path"]
    assert cat.by_path(one) == got[0]
    # However the path is typed.
    assert cat.by_path(os.path.join(ACC, ".", os.path.basename(one))) == got[0]
    assert cat.by_path(str(tmp_path / "none.neff")) is None
    cayman = cat.query(arch="cayman", ok=True)
    assert cayman and all(r["arch"] == "cayman" for r in cayman)
    assert [r["path"] for r in cayman] == sorted(
        r["path"] for r in got if r["ok"] and r["arch"] == "cayman"
    )
    with pytest.raises(neff.CatalogError):
        neff.Catalog(GOOD)


def test_the_walk_flags_choose_the_files_as_the_cli(tmp_path):
    for args, kw in [
        (["--max-depth", "1"], {"max_depth": 1}),
        (["-g", "cc-*"], {"glob": ["cc-*"]}),
        (["-g", "!cc-*"], {"glob": ["!cc-*"]}),
        (["--no-follow"], {"follow": False}),
        (["--one-file-system"], {"one_file_system": True}),
    ]:
        want = cli_records(*args, os.path.join(ROOT, "fixtures"))
        got = sorted(neff.scan([os.path.join(ROOT, "fixtures")], **kw), key=lambda r: r["path"])
        assert got == want, args
    with pytest.raises(neff.UsageError):
        list(neff.scan([ACC], glob=["[bad"]))


def test_scan_batches_stream_record_batches_of_the_size_asked():
    pa = pytest.importorskip("pyarrow")
    from neff import arrow

    reader = neff.scan_batches([ACC], batch_size=5)
    assert isinstance(reader, pa.RecordBatchReader) and reader.schema == arrow.SCHEMA
    sizes = [b.num_rows for b in reader]
    assert sum(sizes) == 37 and max(sizes) == 5 and len(sizes) == 8
    t = neff.scan_table([ACC])
    assert arrow.to_records(t) == cli_records(ACC)
    with pytest.raises(ValueError):
        neff.scan_batches([ACC], batch_size=0)
