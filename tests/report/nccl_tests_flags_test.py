#!/usr/bin/env python3
"""nccl-tests' flags as data (data/nccl-tests/flags.json, generated from NVIDIA/nccl-tests
v2.19.6 src/common.cu by scripts/gen-nccl-tests-flags.py) against the generator and the CLI.

1. The generator run on the fixture tree (tests/report/data/nccl-tests-fixture) writes exactly
   the checked-in expected output: a hand edit of either, or a change of the generator, shows.
2. The data file is what the generator writes: its header names the tag and commit, and every
   flag has its file lines.
3. `fabricscope run --help` lists every nccl-tests flag, short and long, with nccl-tests'
   default (32M = 33554432, sum = ncclSum; -J has none: nullptr), and `run --dry-run` takes
   each flag given its default (a flag that parses with nccl-tests' meaning).

usage: nccl_tests_flags_test.py SOURCE_DIR FABRICSCOPE
"""
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

source, binary = Path(sys.argv[1]), sys.argv[2]
failures = []

with tempfile.TemporaryDirectory() as tmp:
    out = Path(tmp) / "fixture.json"
    subprocess.run([sys.executable, str(source / "scripts/gen-nccl-tests-flags.py"), "--tree",
                    str(source / "tests/report/data/nccl-tests-fixture"), "--tag", "vFIXTURE",
                    "--commit", "0" * 40, "--out", str(out)], check=True)
    expected = (source / "tests/report/data/nccl-tests-fixture.expected.json").read_text()
    if out.read_text() != expected:
        failures.append("the generator's output on the fixture differs from "
                        "tests/report/data/nccl-tests-fixture.expected.json")

# A tree without src/common.cu is refused with what to give.
with tempfile.TemporaryDirectory() as tmp:
    r = subprocess.run([sys.executable, str(source / "scripts/gen-nccl-tests-flags.py"), "--tree",
                        tmp, "--tag", "v0", "--commit", "0" * 40, "--out", tmp + "/x.json"],
                       capture_output=True, text=True)
    if r.returncode == 0 or "give --tree a nccl-tests checkout" not in r.stderr:
        failures.append("the generator on an empty tree: exit %d, %r" % (r.returncode, r.stderr))

data = json.loads((source / "data/nccl-tests/flags.json").read_text())
src = data["source"]
if (src["repository"], src["tag"], src["file"]) != ("NVIDIA/nccl-tests", "v2.19.6", "src/common.cu"):
    failures.append("data/nccl-tests/flags.json's header: %s" % src)
if not re.fullmatch(r"[0-9a-f]{40}", src["commit"]):
    failures.append("data/nccl-tests/flags.json: commit %r is not a full hash" % src["commit"])

helptext = subprocess.run([binary, "run", "--help"], capture_output=True, text=True).stdout
units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def normal(value):
    """nccl-tests' default and fabricscope's help default in one form."""
    if value is None or value == "nullptr":
        return None
    text = str(value)
    if text.startswith("nccl"):
        return text[4:].lower()
    m = re.fullmatch(r"(-?\d+(?:\.\d+)?)([KMG]?)", text)
    if m:
        number = float(m.group(1)) * units[m.group(2)]
        return int(number) if number == int(number) else number
    return text


flags = data["flags"]
if len(flags) < 30:
    failures.append("only %d flags in data/nccl-tests/flags.json" % len(flags))
for f in flags:
    if "option_line" not in f or (f["short"] != "h" and "case_line" not in f):
        failures.append("-%s: no file line" % f["short"])
    m = re.search(r"^\s+-%s,--%s(?: (\w+)(?:=(\S+))?)?\s" % (re.escape(f["short"]),
                                                           re.escape(f["long"])),
                  helptext, re.M)
    if not m:
        failures.append("run --help has no -%s,--%s" % (f["short"], f["long"]))
        continue
    if f["short"] == "h":
        continue
    ours = normal(m.group(2))
    theirs = normal(f["default"])
    if ours != theirs:
        failures.append("-%s,--%s: nccl-tests' default %r (common.cu:%s), run --help says %r"
                        % (f["short"], f["long"], f["default"], f["default_line"], m.group(2)))
    if theirs is None:
        continue
    value = str(f["default"]) if not str(f["default"]).startswith("nccl") else theirs
    for spelling in ("-" + f["short"], "--" + f["long"]):
        r = subprocess.run([binary, "run", "--backend", "gloo", "--dry-run", spelling, value],
                           capture_output=True, text=True)
        if r.returncode != 0:
            failures.append("run --dry-run %s %s: exit %d: %s" % (spelling, value, r.returncode,
                                                                  r.stderr.strip()[-300:]))

# docs/benchmark.md's table is the data's.
docs = (source / "docs/benchmark.md").read_text()
for f in flags:
    if f["short"] == "h":
        continue
    row = "| `-%s` | `--%s` | %s |" % (f["short"], f["long"],
                                      "none" if f["default"] in (None, "nullptr") else f["default"])
    if row not in docs:
        failures.append("docs/benchmark.md has no row %s" % row)

for f in failures:
    print("FAIL:", f)
print("%d nccl-tests flags checked, %d failures" % (len(flags), len(failures)))
sys.exit(1 if failures else 0)
