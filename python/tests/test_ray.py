"""neff.ray.scan on a local Ray instance (2 CPUs): its records equal
`neff scan --json`'s on the test zoo, and the dataset writes Parquet."""

import pytest

from test_scan import ZOO, cli_records

ray = pytest.importorskip("ray")
pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

import neff.ray  # noqa: E402
from neff import arrow  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def records_of(ds):
    t = pa.concat_tables(ray.get(ds.to_arrow_refs()))
    return sorted(arrow.to_records(t), key=lambda r: r["path"])


def test_ray_scan_records_equal_the_cli_records(local_ray):
    ds = neff.ray.scan(ZOO, batch_size=16)
    got = records_of(ds)
    assert len(got) > 90
    assert got == cli_records(*ZOO)


def test_ray_scan_shard_and_missing_path(local_ray, tmp_path):
    missing = str(tmp_path / "missing")
    got = records_of(neff.ray.scan(ZOO + [missing], shard="2/3", batch_size=8))
    assert got == cli_records("--shard", "2/3", *ZOO, missing, code=3)


def test_ray_scan_writes_parquet(local_ray, tmp_path):
    out = str(tmp_path / "pq")
    neff.ray.scan(ZOO, batch_size=32).write_parquet(out)
    t = pq.read_table(out)
    assert t.num_rows == len(cli_records(*ZOO))
    assert sorted(t.column("path").to_pylist()) == sorted(r["path"] for r in cli_records(*ZOO))
