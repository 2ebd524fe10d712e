#!/usr/bin/env python3
"""Prints a Markdown table of the medians in hyperfine JSON exports.

    python3 bench/medians.py /tmp/neff-compare/*.json

For each case, the first command is neff's; the ratio column is each
command's median over the first's.
"""
import json
import os
import statistics
import sys


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def short(cmd):
    # This checkout's neff and Python readers (bench/compare.sh's defaults), the
    # interpreter and the corpus path are left out.
    for long, s in [(os.path.join(ROOT, "target", "release", "neff"), "neff"),
                    (sys.executable + " ", ""), ("/root/.pyenv/versions/3.11.7/bin/python3 ", ""),
                    (os.path.join(ROOT, "tests", "helpers") + "/", ""),
                    (os.path.join(ROOT, "bench") + "/", ""), ("/tmp/neff-bench/", "")]:
        cmd = cmd.replace(long, s)
    cmd = cmd.replace(os.path.expanduser("~"), "~")
    return cmd if len(cmd) < 90 else cmd[:87] + "..."


print("| case | command | runs | median s | min s | ratio to neff |")
print("|---|---|---:|---:|---:|---:|")
for path in sys.argv[1:]:
    case = os.path.basename(path)[:-5]
    res = json.load(open(path))["results"]
    base = res[0]["median"]
    for r in res:
        print("| %s | `%s` | %d | %.4f | %.4f | %.1f× |" % (
            case, short(r["command"]), len(r["times"]), r["median"], r["min"], r["median"] / base))
