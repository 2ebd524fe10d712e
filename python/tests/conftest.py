"""Shared paths for the binding's tests: the repository, the `neff` binary
(the CLI is the contract the binding is held to), the fixture and hostile
NEFFs, and the reference reader (tests/helpers/neffinfo_ref.py)."""

import glob
import importlib.util
import os
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = sorted(glob.glob(os.path.join(ROOT, "fixtures", "**", "*.neff"), recursive=True))
HOSTILE = sorted(glob.glob(os.path.join(ROOT, "tests", "hostile", "*.neff")))
REF_PATH = os.environ.get("NEFF_REF", os.path.join(ROOT, "tests", "helpers", "neffinfo_ref.py"))


def neff_bin() -> str:
    """The CLI to compare with: $NEFF_BIN, else target/{debug,release}/neff."""
    env = os.environ.get("NEFF_BIN")
    if env:
        return env
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    for profile in ("debug", "release"):
        p = os.path.join(target, profile, "neff")
        if os.path.exists(p):
            return p
    raise RuntimeError("no neff binary: run `cargo build` or set NEFF_BIN")


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([neff_bin(), *args], capture_output=True, timeout=300)


def load_reference():
    """The reference reader module, or None when it is not beside the repository."""
    if not os.path.exists(REF_PATH):
        return None
    spec = importlib.util.spec_from_file_location("neffinfo_ref", REF_PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def ref():
    mod = load_reference()
    if mod is None:
        pytest.skip("reference reader not found at %s (set NEFF_REF)" % REF_PATH)
    return mod


def make_zoo(dirpath, count, def_mib=2, gzip=True):
    """`count` NEFFs packed by `neff pack`, each with a `def_mib` MiB
    def.json (collective metadata included), under `dirpath`."""
    import json as _json

    src = os.path.join(dirpath, "src")
    os.makedirs(os.path.join(src, "sg00"))
    files = {
        "info.json": {"version": "1.1", "name": "zoo"},
        "kelf-0.json": {
            "graphs": [{"definition": "sg00/def.json", "name": "sg00"}],
            "target": "trn2",
            "version": "0.5",
        },
        "neff.json": {"graphs": {"sg_coreV10": {"op": "__kelf"}, "sg_coreV11": {"op": "__kelf"}}},
        "sg00/tensor_map.json": {"alias_map": [{"input_name": "a", "output_name": "b"}]},
    }
    for name, obj in files.items():
        with open(os.path.join(src, name), "w") as f:
            _json.dump(obj, f)
    var = {
        "t%06d" % i: {"type": "input", "size": i * 7 % 4096, "shape": [i % 13, 64]}
        for i in range(def_mib * 12000)
    }
    with open(os.path.join(src, "sg00", "def.json"), "w") as f:
        _json.dump({"var": var, "replica_groups": [[[0, 1, 2, 3]]]}, f, indent=1)
    out = []
    for i in range(count):
        p = os.path.join(dirpath, "zoo", "m%03d.neff" % i)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        args = ["pack", src, "-o", p, "--name", "m%03d" % i] + ([] if gzip else ["--no-gzip"])
        r = cli(*args)
        assert r.returncode == 0, r.stderr
        out.append(p)
    return out
