"""What a typed caller of the ``neff`` package writes: scan a zoo into a
catalogue, ask it what a NEFF needs, verify a file, and check a compile
cache. ``python/tests/test_typing.py`` type-checks this file with
``mypy --strict`` and runs it.

    python examples/typed_zoo.py ZOO_DIR CATALOGUE.db
"""

import sys
from typing import Dict, List, Optional

import neff


def needs(path: str) -> Dict[str, object]:
    """What the NEFF at ``path`` needs, read under tight caps."""
    caps = neff.Limits(max_inflated=1 << 30, max_json_size=64 << 20)
    with neff.open(path, limits=caps) as n:
        world: Optional[int] = n.cc_world_size() if n.has_cc() else None
        return {"arch": n.arch(), "cores": n.num_cores(), "world": world}


def main(zoo: str, db: str) -> int:
    failed: List[str] = []
    for record in neff.scan([zoo], index=db, glob=["*.neff"]):
        if not record["ok"]:
            failed.append(str(record["path"]))
    catalog = neff.Catalog(db)
    for r in catalog.query(ok=True, min_cc_world_size=2):
        path = str(r["path"])
        try:
            print(path, needs(path))
        except neff.NeffError as e:  # a question this NEFF refuses
            print(path, "refused:", e)
        neff.verify(path)
    batches = neff.scan_batches([zoo], batch_size=16)
    rows = sum(b.num_rows for b in batches)
    print("%d NEFFs, %d in the catalogue, %d failed" % (rows, len(catalog), len(failed)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
