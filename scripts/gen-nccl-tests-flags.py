#!/usr/bin/env python3
"""Generate nccl-tests' command-line flags as data, from its source.

Reads src/common.cu of a fetched NVIDIA/nccl-tests tree and writes, for every entry of its
getopt_long table (`static struct option longopts[]`):

  short, long     the option's letters, as the table gives them
  argument        required / none (getopt's has_arg)
  variable        the global the option's `case 'X':` assigns (the first assignment in it)
  default         that global's initializer, evaluated when it is integer arithmetic
                  ("32*1024*1024" -> 33554432), else the expression as written ("ncclSum")
  usage           the option's text in the USAGE printf
  option_line, case_line, default_line: file lines (1-based) of each

The output's header records the repository, tag, commit and file. The generator fails,
naming the option, when a table entry has no case, or the case assigns nothing.

  python3 scripts/gen-nccl-tests-flags.py --tree /path/to/nccl-tests --tag v2.19.6 \\
      --commit a0b82b2260cf5152b9f8c061bbf7eaf0ba096432 --out data/nccl-tests/flags.json
"""
import argparse
import json
import re
import sys
from pathlib import Path

OPTION = re.compile(r'\{\s*"(\w+)"\s*,\s*(\w+)\s*,\s*0\s*,\s*\'(.)\'\s*\}')
ARITHMETIC = re.compile(r"^[0-9\s*+\-<>()]+$")


def option_table(lines):
    start = next((i for i, l in enumerate(lines) if "struct option longopts[]" in l), None)
    if start is None:
        sys.exit("gen-nccl-tests-flags: no `struct option longopts[]` in src/common.cu")
    out = []
    for i in range(start + 1, len(lines)):
        if lines[i].strip().startswith("};"):
            break
        m = OPTION.search(lines[i])
        if m:
            out.append((m.group(1), m.group(2), m.group(3), i + 1))
    return out


def case_of(lines, short, after):
    """The names `case 'X':` of the option switch (after line `after`) assigns, up to its
    break, in order, with their lines; and the case's line."""
    for i, l in enumerate(lines):
        if i < after or not re.search(r"case\s+'%s'\s*:" % re.escape(short), l):
            continue
        assigned = []
        for j in range(i, min(i + 40, len(lines))):
            body = lines[j] if j > i else lines[j].split(":", 1)[1]
            if j > i and re.search(r"case\s+'", body):
                break
            for m in re.finditer(r"\b([A-Za-z_]\w*)\s*=[^=]", body):
                assigned.append((m.group(1), j + 1))
            if "break;" in body:
                break
        return assigned, i + 1
    return [], None


def default_of(lines, variable, file_scope):
    """`variable`'s initializer and line: declared at file scope (column 0), or, when
    `file_scope` is false, anywhere."""
    decl = re.compile(r"^(\s*)(?:static\s+)?(?:thread_local\s+)?(?:const\s+)?[A-Za-z_][\w\s\*]*?"
                      r"[\s\*]%s\s*=\s*([^;]+);" % re.escape(variable))
    for i, l in enumerate(lines):
        m = decl.match(l)
        if m and (not file_scope or m.group(1) == ""):
            value = m.group(2).strip()
            if ARITHMETIC.match(value):
                value = int(eval(value, {"__builtins__": {}}))  # digits and operators only
            return value, i + 1
    return None, None


def pick(lines, assigned):
    """The option's variable: the first assigned name declared at file scope (the setting),
    else the first declared anywhere with an initializer."""
    for file_scope in (True, False):
        for name, line in assigned:
            value, default_line = default_of(lines, name, file_scope)
            if default_line is not None:
                return name, line, value, default_line
    return None, None, None, None


def usage_of(lines, short, long):
    tag = "[-%s,--%s" % (short, long)
    for l in lines:
        if tag in l:
            text = l.strip().strip('"')
            text = text.split(tag, 1)[1]
            text = text.replace("\\n", " ").replace("\\t", " ")
            return re.sub(r'[\s\]",]+$', "", text).strip()
    return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", required=True, help="a checkout of NVIDIA/nccl-tests")
    ap.add_argument("--tag", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    path = Path(a.tree) / "src" / "common.cu"
    if not path.is_file():
        sys.exit("gen-nccl-tests-flags: %s is not there: give --tree a nccl-tests checkout" % path)
    lines = path.read_text().split("\n")
    flags = []
    for long, has_arg, short, line in option_table(lines):
        entry = {"short": short, "long": long,
                 "argument": "none" if has_arg == "no_argument" else "required",
                 "option_line": line, "usage": usage_of(lines, short, long)}
        if short != "h":
            assigned, case_line = case_of(lines, short, line)
            if case_line is None:
                sys.exit("gen-nccl-tests-flags: --%s (-%s) has no case in the switch" % (long, short))
            variable, _, value, default_line = pick(lines, assigned)
            if variable is None:
                sys.exit("gen-nccl-tests-flags: --%s (-%s): its case (line %d) assigns no "
                         "declared variable" % (long, short, case_line))
            entry.update({"variable": variable, "case_line": case_line,
                          "default": value, "default_line": default_line})
        flags.append(entry)
    out = {"source": {"repository": "NVIDIA/nccl-tests", "tag": a.tag, "commit": a.commit,
                      "file": "src/common.cu",
                      "generator": "scripts/gen-nccl-tests-flags.py"},
           "flags": flags}
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
