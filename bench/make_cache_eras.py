#!/usr/bin/env python3
"""One Neuron compile cache with entries of every neuronxcc era, for the
side-by-side in docs/GUIDE.md of `neff cache status|prune` and
optimum-neuron's `optimum-cli neuron cache status|cleanup`.

    python3 bench/make_cache_eras.py OUT_DIR [--neff PATH]
    neff cache status OUT_DIR

Lays out OUT_DIR/neuronxcc-<version>/MODULE_<hash>+<flags>/ as each era's
compiler wrapper leaves it (GUIDE, "Compile caches of every compiler"):

  2.12.54.0   no model.done: ok, failed (log + 5-byte placeholder
              model.neff), locked (model.hlo.pb.lock, no NEFF)
  2.13.66.0   ok with a 2-day-old lock left behind; failed (log, no NEFF)
  2.15.128.0  model.done era: ok, failed (log only), failed with a
              placeholder NEFF, incomplete (truncated NEFF, no done, 2 days
              old), corrupt (truncated NEFF + done), a log that is a link to a
              file outside the cache, a log that is a FIFO, and a failed
              entry whose directory name is not UTF-8
  2.20.0.0    ok with wrapped_neff.hlo; failed

The NEFF is --neff (default fixtures/acc/cc-replica-groups-gz.neff, 2219
bytes). The link's target is OUT_DIR's sibling OUT_DIR.outside. Each
entry's hash is sha256 of version/label (the label is printed with it).
Stdlib only; OUT_DIR must be absent or empty.
"""
import argparse
import hashlib
import os
import sys
import time

LOG = b"Failed compilation with ['neuronx-cc', 'compile']: 70\nERROR 70 [neuronx-cc]: bad op\n"
HLO = b"\x0a\x04main\x12\x00"  # stand-in compiler input; no tool reads it
FLAGS_TXT = b"--target=trn1 --model-type=transformer\n"
FLAGS_JSON = b'["--target=trn1", "--model-type=transformer"]\n'
TWO_DAYS = 2 * 24 * 3600

V212 = "neuronxcc-2.12.54.0+f631c2365"
V213 = "neuronxcc-2.13.66.0+6dfecc895"
V215 = "neuronxcc-2.15.128.0+56dc5a86"
V220 = "neuronxcc-2.20.0.0+abcdef01"


def entries(neff, outside):
    """(version, label, files, what it is); a file's value is bytes, or
    ("link", target), ("fifo",), ("old", bytes): written 2 days ago."""
    pb = {"model.hlo.pb": HLO}
    mpb = {"model.hlo_module.pb": HLO}
    marked_in = {"compile_flags.json": FLAGS_JSON, **mpb}
    return [
        (V212, "ok", {"compile_flags.txt": FLAGS_TXT, **pb, "model.neff": neff},
         "finished compile (2.12 writes no model.done)"),
        (V212, "failed-placeholder", {**pb, "model.log": LOG, "model.neff": b"dummy"},
         "failed compile: log + 5-byte placeholder model.neff"),
        (V212, "locked", {**pb, "model.hlo.pb.lock": b""},
         "compile in progress: fresh model.hlo.pb.lock, no NEFF"),
        (V213, "ok-stale-lock", {"compile_flags.txt": FLAGS_TXT, **mpb, "model.neff": neff,
                                  "model.hlo_module.pb.lock": ("old", b"")},
         "finished compile + 2-day-old lock left behind"),
        (V213, "failed", {**mpb, "model.log": LOG}, "failed compile: log, no NEFF"),
        (V215, "ok", {**marked_in, "model.neff": neff, "model.done": b""},
         "finished compile: NEFF + model.done"),
        (V215, "failed", {"model.log": LOG}, "failed compile: model.log only"),
        (V215, "failed-placeholder", {"model.log": LOG, "model.neff": b"dummy"},
         "failed compile: log + 5-byte placeholder model.neff"),
        (V215, "incomplete", {k: ("old", v) for k, v in
                              {**marked_in, "model.neff": neff[:2000]}.items()},
         "compile stopped mid-write: NEFF cut at 2000 bytes, no done, 2 days old"),
        (V215, "corrupt", {**marked_in, "model.neff": neff[:1500], "model.done": b""},
         "NEFF cut at 1500 bytes beside model.done"),
        (V215, "log-link", {**mpb, "model.log": ("link", outside)},
         "model.log is a symlink to a file outside the cache"),
        (V215, "log-fifo", {**mpb, "model.log": ("fifo",)},
         "model.log is a FIFO (reading it would block)"),
        (V215, b"MODULE_\xff+1", {**mpb, "model.log": LOG},
         "failed compile in a directory whose name is not UTF-8"),
        (V220, "ok-wrapped", {**marked_in, "model.neff": neff, "model.done": b"",
                              "wrapped_neff.hlo": HLO},
         "finished compile with wrapped_neff.hlo (NxD priority model)"),
        (V220, "failed", {**marked_in, "model.log": LOG}, "failed compile: log, no NEFF"),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--neff", default=os.path.join(here, "..", "fixtures", "acc",
                                                   "cc-replica-groups-gz.neff"))
    a = ap.parse_args()
    root = os.fsencode(os.path.abspath(a.out_dir))
    if os.path.isdir(root) and os.listdir(root):
        sys.exit(f"{a.out_dir}: not empty (remove it first)")
    with open(a.neff, "rb") as f:
        neff = f.read()
    outside = root + b".outside"
    with open(outside, "wb") as f:
        f.write(b"a file outside the cache, which no cache tool should read\n")
    old = time.time() - TWO_DAYS
    for version, label, files, what in entries(neff, outside):
        if isinstance(label, bytes):
            name = label
        else:
            h = hashlib.sha256(f"{version}/{label}".encode()).hexdigest()
            name = f"MODULE_{h[:20]}+{h[20:28]}".encode()
        d = os.path.join(root, version.encode(), name)
        os.makedirs(d)
        aged = False
        for fname, v in files.items():
            p = os.path.join(d, fname.encode())
            if isinstance(v, tuple) and v[0] == "link":
                os.symlink(v[1], p)
            elif isinstance(v, tuple) and v[0] == "fifo":
                os.mkfifo(p)
            else:
                body = v[1] if isinstance(v, tuple) else v
                with open(p, "wb") as f:
                    f.write(body)
                if isinstance(v, tuple):  # ("old", bytes)
                    os.utime(p, (old, old))
                    aged = True
        if aged and all(isinstance(v, tuple) for v in files.values()):
            os.utime(d, (old, old))
        shown = os.path.relpath(d, root).decode("utf-8", "backslashreplace")
        tag = label if isinstance(label, str) else "non-utf8"
        print(f"{shown}  [{tag}] {what}")


if __name__ == "__main__":
    main()
