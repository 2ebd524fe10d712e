#!/usr/bin/env python3
"""The other usual way to read a NEFF from Python, as a timing baseline: read the whole
file, skip the header, hand the payload to the standard library's tarfile.

    tarfile_ref.py FILE ACCESSOR   one accessor's result as compact JSON
    tarfile_ref.py FILE ls         the member names in archive order (directories with "/")
    tarfile_ref.py --scan DIR      every accessor of every *.neff under DIR, one JSON record
                                   per file

What it does per file: read() it into memory, take header_size from the header (u64 at
offset 8), open the rest with tarfile (mode "r:gz" for package version 2, "r:" otherwise),
index every member, parse every regular *.json member with json.loads and note every
regular member's size. The accessors are the reference reader's (the project's re-creation,
tests/helpers/neffinfo_ref.py), with members picked from the parsed ones by the same rule:
the first name, in sorted order, in which the pattern is found.

ACCESSOR is a getter name (getDefJson, ...) or its `neff get` name (def, info, neff, kelf,
tensor-map, alias, must-alias, arch, has-cc, cc-world-size, num-cores).
Exit status: 0 answered, 1 refused, 2 usage, 3 cannot read. The project's own code.
"""

import io
import json
import os
import re
import sys
import tarfile

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "helpers")
)

from neffinfo_ref import (  # noqa: E402 - found through the path above
    ACCESSORS,
    GETTERS,
    DEF,
    INFO,
    KELF,
    NEFF_JSON,
    TENSOR_MAP,
    NeffError,
    NeffInfo,
    dumps,
    find_neffs,
)

USAGE = """usage: tarfile_ref.py FILE ACCESSOR|ls
       tarfile_ref.py --scan DIR"""


def open_payload(path):
    """(package version, an open TarFile over the payload held in memory)."""
    with open(path, "rb") as f:
        whole = f.read()
    pkg = int.from_bytes(whole[0:8], "little")
    start = int.from_bytes(whole[8:16], "little")
    mode = "r:gz" if pkg == 2 else "r:"
    return pkg, tarfile.open(fileobj=io.BytesIO(whole[start:]), mode=mode)


def load(path):
    """(package version, {member: size}, {json member: parsed}) of the whole file."""
    pkg, tar = open_payload(path)
    with tar:
        sizes, parsed = {}, {}
        for m in tar.getmembers():
            if not m.isfile():
                continue
            sizes[m.name] = m.size
            if m.name.endswith(".json"):
                parsed[m.name] = json.loads(tar.extractfile(m).read())
    return pkg, sizes, parsed


class TarNeff(NeffInfo):
    """The reference reader's accessors over members loaded all at once."""

    def __init__(self, path):
        if not os.path.exists(path):
            raise FileNotFoundError("NEFF does not exist.")
        self.neff = path
        pkg, self.sizes, self.parsed = load(path)
        self.gzipped = pkg == 2

    def member(self, pattern):
        for name in sorted(self.parsed):
            if re.findall(pattern, name):
                return self.parsed[name]
        raise NeffError("no member matches %s" % pattern)

    def getKelf(self):
        return self.member(KELF)

    def getInfoJson(self):
        return self.member(INFO)

    def getNeffJson(self):
        return self.member(NEFF_JSON)

    def getDefJson(self):
        return self.member(DEF)

    def getTensorMapJson(self):
        return self.member(TENSOR_MAP)


def scan_one(path):
    """Every accessor of one file, as neffinfo_ref.scan_one asks them, plus member totals."""
    record = {"path": path, "ok": True, "error": None, "bytes": None}
    try:
        record["bytes"] = os.path.getsize(path)
        neff = TarNeff(path)
    except Exception as e:  # noqa: BLE001 - a bad file is a record, not a stop
        record.update(ok=False, error=str(e))
        return record
    record["compressed"] = neff.gzipped
    record["members"] = len(neff.sizes)
    record["member_bytes"] = sum(neff.sizes.values())
    failures = {}

    def ask(accessor):
        try:
            return getattr(neff, ACCESSORS[accessor])()
        except Exception as e:  # noqa: BLE001
            failures[accessor] = str(e)
            return None

    doc = ask("info")
    record["name"] = doc.get("name") if isinstance(doc, dict) else None
    ask("neff")
    ask("kelf")
    doc = ask("def")
    record["def_vars"] = len(doc.get("var", {})) if isinstance(doc, dict) else None
    ask("tensor-map")
    aliases = ask("alias")
    record["aliases"] = None if aliases is None else len(aliases)
    record["must_alias"] = ask("must-alias")
    record["arch"] = ask("arch")
    record["num_cores"] = ask("num-cores")
    record["cc_world_size"] = ask("cc-world-size") if ask("has-cc") else None
    if failures:
        record["ok"] = False
        record["error"] = "; ".join("%s: %s" % (k, failures[k]) for k in sorted(failures))
    return record


def main(argv):
    if len(argv) == 3 and argv[1] == "--scan":
        if not os.path.isdir(argv[2]):
            print("tarfile_ref: %s: not a directory" % argv[2], file=sys.stderr)
            return 3
        with_errors = 0
        for path in find_neffs(argv[2]):
            record = scan_one(path)
            with_errors += not record["ok"]
            sys.stdout.write(dumps(record) + "\n")
        print("tarfile_ref: scanned, %d with errors" % with_errors, file=sys.stderr)
        return 0
    if len(argv) != 3 or argv[1].startswith("-"):
        print(USAGE, file=sys.stderr)
        return 2
    path, accessor = argv[1], argv[2]
    try:
        if accessor == "ls":
            _, tar = open_payload(path)
            with tar:
                names = [m.name + ("/" if m.isdir() else "") for m in tar.getmembers()]
            sys.stdout.write("".join(n + "\n" for n in names))
            return 0
        getter = ACCESSORS.get(accessor, accessor)
        if getter not in GETTERS:
            print("tarfile_ref: unknown accessor %s" % accessor, file=sys.stderr)
            return 2
        answer = getattr(TarNeff(path), getter)()
    except (FileNotFoundError, PermissionError, IsADirectoryError) as e:
        print("tarfile_ref: %s: %s" % (path, e), file=sys.stderr)
        return 3
    except (NeffError, tarfile.TarError, ValueError, KeyError, EOFError, OSError) as e:
        print("tarfile_ref: %s: %s" % (path, e), file=sys.stderr)
        return 1
    sys.stdout.write(dumps(answer) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
