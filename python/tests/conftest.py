"""Shared paths for the binding's tests: the repository, the `neff` binary
(the CLI is the contract the binding is held to), the fixture and hostile
NEFFs, and the reference reader (../shared/bench/neffinfo_ref.py)."""

import glob
import importlib.util
import os
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = sorted(glob.glob(os.path.join(ROOT, "fixtures", "**", "*.neff"), recursive=True))
HOSTILE = sorted(glob.glob(os.path.join(ROOT, "tests", "hostile", "*.neff")))
REF_PATH = os.environ.get(
    "NEFF_REF", os.path.join(ROOT, "..", "shared", "bench", "neffinfo_ref.py")
)


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

