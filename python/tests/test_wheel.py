"""The abi3 wheel scripts/python-setup built installs and works in a fresh venv."""

import glob
import json
import os
import subprocess
import sys

from conftest import FIXTURES, ROOT, cli


def test_wheel_is_abi3_and_imports_in_a_fresh_venv(tmp_path):
    wheels = glob.glob(
        os.path.join(
            os.environ.get("NEFF_WHEEL_DIR", os.path.join(ROOT, "python", "dist")), "neff-*.whl"
        )
    )
    assert len(wheels) == 1, "run scripts/python-setup first (found %r)" % wheels
    assert "-cp39-abi3-" in os.path.basename(wheels[0])
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # Install with this interpreter's pip into the fresh venv's site-packages (no network).
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            "--target",
            site,
            wheels[0],
        ],
        check=True,
    )
    fixture = os.path.join(os.path.dirname(FIXTURES[0]), "cc-both-gz.neff")
    code = (
        "import json, neff, sys; n = neff.NeffInfo(sys.argv[1]); "
        "print(json.dumps([neff.__file__, n.getArchType(), n.getCCRankWorldSize(), n.getDefJson()],"
        " separators=(',', ':'), ensure_ascii=False))"
    )
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code, fixture],
        check=True,
        capture_output=True,
        text=True,
        cwd=str(tmp_path),
    ).stdout
    where, arch, ws, d = json.loads(out)
    assert where.startswith(site)
    assert json.dumps(arch) + "\n" == cli("get", fixture, "arch").stdout.decode()
    assert str(ws) + "\n" == cli("get", fixture, "cc-world-size").stdout.decode()
    assert (
        json.dumps(d, separators=(",", ":"), ensure_ascii=False) + "\n"
        == cli("get", fixture, "def").stdout.decode()
    )


def _cargo_version(path):
    """The `version` of a Cargo.toml's [package] table."""
    import re

    text = open(path).read()
    package = text.split("[package]", 1)[1].split("\n[", 1)[0]
    return re.search(r'^version\s*=\s*"([^"]+)"', package, re.M).group(1)


def test_the_package_version_is_the_crates():
    import neff

    crate = _cargo_version(os.path.join(ROOT, "Cargo.toml"))
    assert _cargo_version(os.path.join(ROOT, "python", "Cargo.toml")) == crate
    assert neff.__version__ == crate
    wheels = glob.glob(os.path.join(os.environ.get("NEFF_WHEEL_DIR", os.path.join(ROOT, "python", "dist")), "neff-*.whl"))
    assert all(os.path.basename(w).startswith("neff-%s-" % crate) for w in wheels), wheels
