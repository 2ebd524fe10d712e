"""Zoo scans on a Ray cluster: ``neff.ray.scan(paths_or_dirs)`` -> ``ray.data.Dataset``.

The file list is made on the driver (the same sorted, sharded walk as
``neff scan``), turned into a dataset with ``ray.data.from_items``, and
``map_batches`` reads each batch of files with the binding on a worker (one
task per batch, the binding's threads inside it), giving Arrow batches of
scan records (:data:`neff.arrow.SCHEMA`). Every worker must see the same
paths: a shared file system (EFS/FSx/NFS) or an S3 bucket mounted at the
same place (Mountpoint for S3, s3fs) on every node::

    import ray, neff.ray
    ray.init(address="auto")
    ds = neff.ray.scan(["/mnt/zoo"], batch_size=256)
    ds.write_parquet("s3://bucket/neff-scan/")

or URLs: ``s3://bucket/prefix/`` prefixes (listed on the driver, as
``neff scan`` lists them) and ``s3://``, ``https://`` objects, each read by
a worker directly (ranged GETs, docs/GUIDE.md). Credentials and endpoint
come from the environment of the workers (``AWS_*``, or the instance's or
container's role), not the driver's: a variable set in the driver's
``os.environ`` after ``ray.init`` does not reach workers already started,
so pass what they need with ``runtime_env``::

    ray.init(runtime_env={"env_vars": {"AWS_REGION": "us-west-2"}})
    ds = neff.ray.scan(["s3://bucket/zoo/"])

Without Ray, ``neff scan --shard K/N`` (one AWS Batch array job per shard)
is the CLI equivalent.
"""

import os
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

import numpy as np
import pyarrow as pa

from . import _neff, _paths, _shard, scan as _scan
from .arrow import table as _table


def list_files(
    paths_or_dirs: Union[str, "os.PathLike[str]", Iterable[Any]],
    shard: Union[None, str, Tuple[int, int]] = None,
) -> List[str]:
    """Every ``*.neff`` under ``paths_or_dirs``, sorted and sharded as ``neff scan``
    lists them (walk errors, such as an unreadable directory, are skipped here)."""
    return [r["path"] for r in _list_records(paths_or_dirs, shard)[0]]


def _list_records(
    paths_or_dirs: Union[str, "os.PathLike[str]", Iterable[Any]],
    shard: Union[None, str, Tuple[int, int]],
) -> Tuple[List[Dict[str, str]], List[Dict[str, Any]]]:
    import json

    files, errors = _neff.list_files(_paths(paths_or_dirs), _shard(shard))
    return [{"path": p} for p in files], [json.loads(e) for e in errors]


def _read_batch(batch: Dict[str, np.ndarray], jobs: int = 1) -> pa.Table:
    paths = [str(p) for p in batch["path"]]
    # Each path is named directly: scan reads it whatever its name.
    return _table(list(_scan(paths, jobs=jobs)))


def scan(
    paths_or_dirs: Union[str, "os.PathLike[str]", Iterable[Any]],
    *,
    shard: Union[None, str, Tuple[int, int]] = None,
    batch_size: int = 64,
    jobs_per_task: int = 1,
    num_cpus: Optional[float] = None,
) -> Any:
    """A Ray Dataset of the scan records of every ``*.neff`` under ``paths_or_dirs``
    (local paths, ``s3://`` prefixes, ``s3://`` and ``http(s)://`` objects).

    ``batch_size`` files per task; ``jobs_per_task`` threads read them inside
    a task (ask Ray for as many CPUs with ``num_cpus``, default
    ``jobs_per_task``). Walk errors come first, as with ``neff scan --shard``. The
    records equal ``neff scan --json``'s (see :func:`neff.arrow.to_records`).
    """
    import ray.data

    files, walk_errors = _list_records(paths_or_dirs, shard)
    ds = ray.data.from_items(files) if files else None
    if ds is not None:
        ds = ds.map_batches(
            _read_batch,
            batch_size=batch_size,
            fn_kwargs={"jobs": jobs_per_task},
            num_cpus=num_cpus if num_cpus is not None else jobs_per_task,
            batch_format="numpy",
        )
    if walk_errors:
        errs = ray.data.from_arrow(_table(walk_errors))
        ds = errs if ds is None else errs.union(ds)
    if ds is None:
        ds = ray.data.from_arrow(_table([]))
    return ds
