"""neff.NeffInfo against the reference reader (tests/helpers/neffinfo_ref.py).

Where both answer, the answers are equal (value, type, key order), except
where CLI.md's contract has a rule the reference lacks (listed below, each
with its reason). Where the reference raises one of its guard strings
(docs/FORMAT.md) on a NEFF the library can read, NeffInfo raises
NeffError with the same message, and the other way round. A missing member
is refused as `no member matches <pattern>` by both, the library naming the
pattern it searched (dots escaped), the reference its own: that message is
CLI.md's, not a guard string. Other disagreements are refusals of hostile
input by the library (a corrupt tar, a size past the end of the file, a
cap) that the reference reads past, or shapes the reference crashes on
(TypeError)."""

import json
import os
import re

import pytest

import neff
from conftest import FIXTURES, HOSTILE

GETTERS = [
    "getInfoJson",
    "getNeffJson",
    "getDefJson",
    "getKelf",
    "getTensorMapJson",
    "getAliasInfo",
    "hasMustAlias",
    "getArchType",
    "hasCC",
    "getCCRankWorldSize",
    "getNumNeuronCores",
]
GUARDS = [
    r"NEFF does not have CC op",
    r"Empty replica_groups found",
    r"Empty src_target_pairs found",
    r"Empty topology found at index \d+, possible MPMD neff file\. Try --stopAfter=compile",
    r"Inconsistent worker count across topologies: \d+ vs \d+\. Possible MPMD neff file",
    r"1 input aliasing to multiple outputs is not supported",
    r"mixed accelerator usage is not supported",
]
# The reference needs minutes on these (it inflates 300 MB, or a bomb, per getter).
SLOW_FOR_THE_REFERENCE = {
    "def-300mb-gz.neff",
    "gzip-bomb-member-gz.neff",
    "gzip-bomb-zeros-gz.neff",
}
# (file, getter) -> why the contract's answer differs from the reference's.
CONTRACT_WINS = {
    (
        "kelf-metadata-target-arch-gz.neff",
        "getArchType",
    ): "the arch is found in kelf metadata where `target` is absent (reference: None)",
    (
        "neffjson-tvm-nodes-raw.neff",
        "getNumNeuronCores",
    ): "neff.json's TVM `nodes` form is counted (reference: 0)",
}
FILES = [f for f in FIXTURES + HOSTILE if os.path.basename(f) not in SLOW_FOR_THE_REFERENCE]


def is_guard(msg):
    return any(re.fullmatch(g, msg) for g in GUARDS)


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def run(cls, err, path, getter):
    try:
        return "ok", getattr(cls(path), getter)()
    except err as e:
        return "NeffError", str(e)
    except Exception as e:  # noqa: BLE001 - the reference crashes on some shapes
        return type(e).__name__, str(e)


@pytest.mark.parametrize("path", FILES, ids=[os.path.basename(f) for f in FILES])
def test_neffinfo_agrees_with_the_reference_reader(ref, path):
    base = os.path.basename(path)
    try:
        neff.open(path).close()
        readable = True
    except (neff.NeffError, OSError):
        readable = False  # hostile input the library refuses as a whole
    for getter in GETTERS:
        a = run(neff.NeffInfo, neff.NeffError, path, getter)
        b = run(ref.NeffInfo, ref.NeffError, path, getter)
        where = (base, getter, a, b)
        if a[0] == "ok" and b[0] == "ok" and (base, getter) not in CONTRACT_WINS:
            assert dumps(a[1]) == dumps(b[1]), where
        if b[0] == "NeffError" and is_guard(b[1]) and readable:
            if a[0] == "NeffError" and ": wrong shape: " in a[1]:
                # CLI.md refuses JSON of the wrong shape for an accessor; the
                # reference reads some loosely (a CCInfo list is "no CC").
                continue
            assert a == b, where
        if a[0] == "NeffError" and is_guard(a[1]):
            assert a == b, where


def test_contract_divergences_are_still_divergences(ref):
    """The allow-list stays honest: each entry still differs."""
    for base, getter in CONTRACT_WINS:
        path = [f for f in FILES if os.path.basename(f) == base][0]
        a = run(neff.NeffInfo, neff.NeffError, path, getter)
        b = run(ref.NeffInfo, ref.NeffError, path, getter)
        assert a[0] == "ok" and a != b
