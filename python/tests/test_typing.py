"""The package's types hold: an example caller type-checks under
``mypy --strict`` and runs, and the extension's stub (neff/_neff.pyi)
matches the module as built (mypy's stubtest)."""

import os
import subprocess
import sys

import pytest

from conftest import ROOT

EXAMPLE = os.path.join(ROOT, "python", "examples", "typed_zoo.py")


def mypy(*args: str) -> subprocess.CompletedProcess:
    pytest.importorskip("mypy")
    return subprocess.run(
        [sys.executable, "-m", "mypy", *args], capture_output=True, text=True, timeout=600
    )


def test_an_example_caller_type_checks_under_mypy_strict():
    p = mypy("--strict", "--no-incremental", EXAMPLE)
    assert p.returncode == 0, p.stdout + p.stderr


def test_mypy_strict_catches_a_wrong_type(tmp_path):
    # The check can fail: a caller that treats a record count as text.
    bad = tmp_path / "bad.py"
    bad.write_text("import neff\nx: str = len(neff.Catalog('x.db'))\n")
    p = mypy("--strict", "--no-incremental", str(bad))
    assert p.returncode == 1 and "incompatible types" in p.stdout.lower(), p.stdout


def test_the_extension_stub_matches_the_built_module():
    pytest.importorskip("mypy")
    p = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "neff._neff", "--ignore-missing-stub"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stdout + p.stderr


def test_the_example_runs(tmp_path):
    zoo = os.path.join(ROOT, "fixtures", "acc")
    p = subprocess.run(
        [sys.executable, EXAMPLE, zoo, str(tmp_path / "zoo.db")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.rstrip().endswith("37 NEFFs, 37 in the catalogue, 0 failed"), p.stdout
