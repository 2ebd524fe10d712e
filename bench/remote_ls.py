#!/usr/bin/env python3
"""`neff ls URL` of one object, several builds side by side, against the
whole object downloaded with 8 ranged GETs of 8 MiB in flight (what `aws
s3 cp` does for one large object), through the fault proxy of
`scripts/servers` at 0 and 20 ms a request (its `ok` and `delay20` paths).
Rounds interleaved, medians (PERF.md, remote-ls-1g and remote-ls-gzip).

    python3 scripts/servers start STATE SEED     # SEED holds REL
    python3 bench/remote_ls.py PROXY REL RUNS BIN [BIN...] [--no-whole]
        [--modes MODE,MODE]

PROXY is the `proxy` URL `scripts/servers start` prints; REL the object's
path under the seed (for the 1 GiB raw NEFF of bench/make_corpus.py,
copied to SEED/big/big.neff: big/big.neff). `direct:HTTP` in its place
(HTTP: the `http` URL printed, nginx itself) times the object on loopback
without the proxy in front (PERF.md, remote-ls-1g). A BIN may carry
options after a space, quoted as one argument:
"target/release/neff --max-bytes-moved 10M".
`--modes` names the proxy's modes to time instead of `ok` and `delay20`
(`delay25+bw100`: 25 ms away on a 100 MB/s link; PERF.md, remote-ls-gzip).
"""
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from remote_latency import download_whole  # noqa: E402


def main():
    argv = sys.argv[1:]
    modes = ("ok", "delay20")
    if "--modes" in argv:
        i = argv.index("--modes")
        modes = tuple(argv[i + 1].split(","))
        del argv[i:i + 2]
    args = [a for a in argv if a != "--no-whole"]
    whole = "--no-whole" not in argv
    if len(args) < 4:
        sys.exit(__doc__)
    proxy, rel, runs, bins = args[0], args[1], int(args[2]), args[3:]
    direct = proxy.startswith("direct:")
    for mode in ("direct",) if direct else modes:
        url = f"{proxy[len('direct:'):]}/{rel}" if direct else f"{proxy}/http/{mode}/{rel}"
        res = {b: [] for b in bins}
        if whole:
            res["whole"] = []
        for _ in range(runs):
            for b in bins:
                t = time.monotonic()
                cmd = b.split()
                subprocess.run(cmd[:1] + ["ls", url] + cmd[1:], stdout=subprocess.DEVNULL, check=True)
                res[b].append(time.monotonic() - t)
            if whole:
                t = time.monotonic()
                download_whole(url)
                res["whole"].append(time.monotonic() - t)
        w = statistics.median(res["whole"]) if whole else None
        for k, v in res.items():
            m = statistics.median(v)
            ratio = f" | {m / w:.2f}x the whole download" if w else ""
            print(f"{mode} | {k} | {m:.3f} s{ratio} | runs {' '.join('%.3f' % x for x in v)}",
                  flush=True)


if __name__ == "__main__":
    main()
