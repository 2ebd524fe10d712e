#!/usr/bin/env python3
"""Runs the reference re-creation (tests/helpers/neffinfo_ref.py) on NEFFs and
prints, for each file and accessor, the text it would print (its `dumps`) or
its refusal, as one JSON object: {path: {accessor: {"text"|"error": ...}}}.

usage: ref_texts.py NEFFINFO_REF.py FILE.neff...

One NeffInfo per file serves every accessor (its getters are memoized, as for
a user of the class). A lone surrogate, which the reference keeps in its str
but cannot write as UTF-8, is shown as its escape (what `neff get` prints).
"""
import importlib.util
import json
import os
import sys


def main(argv):
    # The reference lets dd's transfer statistics reach stderr; keep them out.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    spec = importlib.util.spec_from_file_location("neffinfo_ref", argv[1])
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    out = {}
    for path in argv[2:]:
        res = out[path] = {}
        try:
            info = ref.NeffInfo(path)
        except Exception as e:  # noqa: BLE001 - reported, not raised
            res["open"] = {"error": str(e)}
            continue
        for acc, getter in ref.ACCESSORS.items():
            try:
                text = ref.dumps(getattr(info, getter)())
                res[acc] = {"text": text.encode("utf-8", "backslashreplace").decode("utf-8")}
            except Exception as e:  # noqa: BLE001
                res[acc] = {"error": "%s: %s" % (type(e).__name__, e)}
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
