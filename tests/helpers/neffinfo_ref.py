#!/usr/bin/env python3
"""The reference NEFF reader, re-created: how `NeffInfo` reads a NEFF today.

`NeffInfo` is the Python class users of the Neuron tools call to answer
questions about a NEFF (its def.json, its collective world size, ...). This
module re-creates its access path and its getters so that tests and
benchmarks can hold `neff` to it. It is the project's own code, written from
the reader's documented behaviour (docs/FORMAT.md, "the reference reader"),
not copied from it. The tests compare neff's output with this module's byte
for byte, so every observable detail below is deliberate:

* No tar parsing in Python. Each member read shells out twice, with the
  NEFF's path pasted unquoted into the command line, as the original does:
    - list:     dd if=PATH bs=1024 skip=1 | tar tf - | sort     (tzf if gzip)
    - extract:  dd if=PATH bs=1024 skip=1 | tar xvf - -O MEMBER  (xvzf if gzip)
  The extract step's stderr is thrown away; the list step's is not, so dd's
  transfer report reaches the caller's stderr. A failed pipeline raises
  subprocess.CalledProcessError (the list's status is sort's).
* A member is chosen by splitting the sorted listing on whitespace and taking
  the first name in which `re.findall(pattern, name)` finds anything (an
  unanchored search; `.` is not escaped).
* The bytes go to `json.loads` as they are. The five member getters are
  memoized with functools.lru_cache (keyed on the instance); the derived
  getters are not, and reach the members through the memoized ones.
* Package version 2 in the header's first 8 bytes (little-endian) means a
  gzip payload; anything else is read as a raw tar.

Command line (used by the bench scripts):

    neffinfo_ref.py FILE ACCESSOR   one accessor's result as compact JSON
    neffinfo_ref.py --scan DIR      every accessor of every *.neff under DIR,
                                    one JSON record per file

ACCESSOR is a getter name (getDefJson, ...) or its `neff get` name (info,
neff, def, kelf, tensor-map, alias, must-alias, arch, has-cc, cc-world-size,
num-cores). Exit status: 0 answered, 1 refused, 2 usage, 3 cannot read.
"""

import functools
import json
import os
import re
import subprocess
import sys

USAGE = """usage: neffinfo_ref.py FILE ACCESSOR
       neffinfo_ref.py --scan DIR"""

# Where each member getter looks (a regular expression, searched).
KELF = "kelf-0.json"
INFO = "info.json"
NEFF_JSON = "neff.json"
DEF = r"sg\d+/def.json"
TENSOR_MAP = r"sg\d+/tensor_map.json"

# The keys whose presence in def.json (or its CCInfo) means "has collectives".
CC_KEYS = ("replica_groups", "src_target_pairs", "#rank_world_size")


class NeffError(Exception):
    """A refusal of the reference reader (its guard strings)."""


def _payload_pipe(path, tar_args):
    # Plain concatenation, as the original builds its command lines.
    return "dd if=" + path + " bs=1024 skip=1 | tar " + tar_args


class NeffInfo:
    """One NEFF, read through `dd | tar` on every member access."""

    def __init__(self, neff):
        if not os.path.exists(neff):
            raise FileNotFoundError("NEFF does not exist.")
        self.neff = neff
        with open(neff, "rb") as f:
            header = f.read(1024)
        if len(header) < 1024:
            raise NeffError("file shorter than the 1024-byte NEFF header")
        self.gzipped = int.from_bytes(header[:8], "little") == 2

    def findInNeff(self, file_rgx):
        """The raw bytes of the first listed member matching `file_rgx`."""
        z = "z" if self.gzipped else ""
        listing = subprocess.check_output(_payload_pipe(self.neff, "t%sf - | sort" % z), shell=True)
        name = None
        for candidate in listing.decode("utf_8").split():
            if re.findall(file_rgx, candidate):
                name = candidate
                break
        if name is None:
            raise NeffError("no member matches %s" % file_rgx)
        return subprocess.check_output(
            _payload_pipe(self.neff, "xv%sf - -O " % z + name),
            shell=True,
            stderr=subprocess.DEVNULL,
        )

    # The member getters: parsed JSON, memoized per instance.

    @functools.lru_cache
    def getKelf(self):
        return json.loads(self.findInNeff(KELF))

    @functools.lru_cache
    def getInfoJson(self):
        return json.loads(self.findInNeff(INFO))

    @functools.lru_cache
    def getNeffJson(self):
        return json.loads(self.findInNeff(NEFF_JSON))

    @functools.lru_cache
    def getDefJson(self):
        return json.loads(self.findInNeff(DEF))

    @functools.lru_cache
    def getTensorMapJson(self):
        return json.loads(self.findInNeff(TENSOR_MAP))

    # The derived getters.

    def getAliasInfo(self):
        """{input_name: output_name} over the tensor map's alias_map, in its order."""
        out = {}
        for alias in self.getTensorMapJson().get("alias_map", []):
            src = alias["input_name"]
            if src in out:
                raise NeffError("1 input aliasing to multiple outputs is not supported")
            out[src] = alias["output_name"]
        return out

    def hasMustAlias(self):
        tm = self.getTensorMapJson()
        if tm.get("must_alias"):
            return True
        return any(bool(alias.get("must_alias")) for alias in tm.get("alias_map", []))

    def getArchType(self):
        """kelf-0.json's target; one accelerator only (a list must hold one value)."""
        target = self.getKelf().get("target")
        if isinstance(target, list):
            if len(set(target)) != 1:
                raise NeffError("mixed accelerator usage is not supported")
            target = target[0]
        return target

    def _collectives(self):
        d = self.getDefJson()
        return d.get("CCInfo", d)

    def hasCC(self):
        cc = self._collectives()
        return any(key in cc for key in CC_KEYS)

    def getCCRankWorldSize(self):
        """The largest of: the ranks per group of replica_groups (every
        topology must agree), one past the highest rank in src_target_pairs,
        #rank_world_size, and 1."""
        if not self.hasCC():
            raise NeffError("NEFF does not have CC op")
        cc = self._collectives()
        from_groups = 0
        if "replica_groups" in cc:
            topologies = cc["replica_groups"]
            if not topologies:
                raise NeffError("Empty replica_groups found")
            for i, topology in enumerate(topologies):
                if not topology:
                    raise NeffError(
                        "Empty topology found at index %d, possible MPMD neff file. "
                        "Try --stopAfter=compile" % i
                    )
                ranks = max(len(group) for group in topology)
                if from_groups and ranks != from_groups:
                    raise NeffError(
                        "Inconsistent worker count across topologies: %d vs %d. "
                        "Possible MPMD neff file" % (from_groups, ranks)
                    )
                from_groups = ranks
        from_pairs = 0
        if "src_target_pairs" in cc:
            pairs = cc["src_target_pairs"]
            if not pairs:
                raise NeffError("Empty src_target_pairs found")
            from_pairs = max(_leaves_as_ints(pairs)) + 1
        explicit = int(cc.get("#rank_world_size", 0) or 0)
        return max(from_groups, from_pairs, explicit, 1)

    def getNumNeuronCores(self):
        """How many of neff.json's graph nodes are kelfs (op `__kelf`)."""
        graphs = self.getNeffJson().get("graphs", {})
        if isinstance(graphs, dict):
            graphs = graphs.values()
        return sum(1 for node in graphs if isinstance(node, dict) and node.get("op") == "__kelf")


def _leaves_as_ints(value):
    """Every non-list leaf of nested lists, through int()."""
    if isinstance(value, list):
        for item in value:
            yield from _leaves_as_ints(item)
    else:
        yield int(value)


# `neff get` name -> getter, in the order a scan asks them.
ACCESSORS = {
    "info": "getInfoJson",
    "neff": "getNeffJson",
    "def": "getDefJson",
    "kelf": "getKelf",
    "tensor-map": "getTensorMapJson",
    "alias": "getAliasInfo",
    "must-alias": "hasMustAlias",
    "arch": "getArchType",
    "has-cc": "hasCC",
    "cc-world-size": "getCCRankWorldSize",
    "num-cores": "getNumNeuronCores",
}
GETTERS = set(ACCESSORS.values())


def dumps(value):
    """Compact JSON, non-ASCII kept (what the command line prints)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def find_neffs(top):
    """Every *.neff under `top`, directories and names in sorted order."""
    found = []
    for here, subdirs, names in os.walk(top):
        subdirs.sort()
        found += [os.path.join(here, n) for n in sorted(names) if n.endswith(".neff")]
    return found


def scan_one(path):
    """Every accessor of one file, in turn, as a user scanning a zoo would."""
    record = {"path": path, "ok": True, "error": None, "bytes": None}
    try:
        record["bytes"] = os.path.getsize(path)
        info = NeffInfo(path)
    except Exception as e:  # noqa: BLE001 - a bad file is a record, not a stop
        record["ok"] = False
        record["error"] = str(e)
        return record
    record["compressed"] = info.gzipped
    failures = {}

    def ask(accessor):
        try:
            return getattr(info, ACCESSORS[accessor])()
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
        top = argv[2]
        if not os.path.isdir(top):
            print("neffinfo_ref: %s: not a directory" % top, file=sys.stderr)
            return 3
        with_errors = 0
        for path in find_neffs(top):
            record = scan_one(path)
            if not record["ok"]:
                with_errors += 1
            sys.stdout.write(dumps(record) + "\n")
        print("neffinfo_ref: scanned, %d with errors" % with_errors, file=sys.stderr)
        return 0
    if len(argv) != 3 or argv[1].startswith("-"):
        print(USAGE, file=sys.stderr)
        return 2
    path, accessor = argv[1], argv[2]
    getter = ACCESSORS.get(accessor, accessor)
    if getter not in GETTERS:
        print("neffinfo_ref: unknown accessor %s" % accessor, file=sys.stderr)
        return 2
    try:
        answer = getattr(NeffInfo(path), getter)()
    except (FileNotFoundError, PermissionError, IsADirectoryError) as e:
        print("neffinfo_ref: %s: %s" % (path, e), file=sys.stderr)
        return 3
    except (NeffError, subprocess.CalledProcessError, ValueError, KeyError) as e:
        print("neffinfo_ref: %s: %s" % (path, e), file=sys.stderr)
        return 1
    sys.stdout.write(dumps(answer) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
