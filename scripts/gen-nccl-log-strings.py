#!/usr/bin/env python3
"""Generate data/nccl/log-strings.json: the log format strings NCCL can print.

Reads an extracted NVIDIA/nccl source tree and writes, as data, every format string
passed to WARN(...) anywhere under src/ and plugins/ (*.cc, *.cu, *.h, *.c), the format
strings passed to INFO(FLAGS, ...) in the files that show transport choice and fallbacks
(INFO_FILES below), the call sites of the check macros whose body WARNs with the checked
call's name pasted into the format, and the strings returned by ncclGetErrorString()
(level "ERRSTR"), each with its file and line, so that fabricscope's failure signatures
can cite the exact upstream line. Check macros are found, not listed: those defined in
src/include/ (in 2.30.7 SYSCHECK, SYSCHECKGOTO, PTHREADCHECK, PTHREADCHECKGOTO of
checks.h) count at every call site in src/; one defined in any other file (in 2.30.7
IBV_*CHECK* of src/misc/ibvwrap.cc, MLX5DV_*CHECK* of src/misc/mlx5dvwrap.cc, NVMLCHECK
of src/misc/nvmlwrap.cc) only in that file.

Regenerate (the tree is NVIDIA's code under its license: extract it outside this repo):

    # 1. get the repository as a bare git dir (the session tool `fetch` with source
    #    "github:NVIDIA/nccl" leaves it in /work/.mirror/NVIDIA+nccl/repo; a plain
    #    `git clone --bare https://github.com/NVIDIA/nccl.git nccl.git` does the same)
    NCCL_GIT=/work/.mirror/NVIDIA+nccl/repo
    git --git-dir=$NCCL_GIT tag -l 'v2.30.*'
    # 2. extract the tag
    rm -rf /tmp/nccl-2.30.7 && mkdir -p /tmp/nccl-2.30.7
    git --git-dir=$NCCL_GIT archive v2.30.7-1 | tar -x -C /tmp/nccl-2.30.7
    # 3. generate (an archive is not a git checkout, so pass the tag's commit)
    python3 scripts/gen-nccl-log-strings.py --tree /tmp/nccl-2.30.7 --tag v2.30.7-1 \\
        --commit $(git --git-dir=$NCCL_GIT rev-parse 'v2.30.7-1^{commit}') \\
        --out data/nccl/log-strings.json
    # the test fixture:
    python3 scripts/gen-nccl-log-strings.py --tree tests/check/data/nccl-tree-fixture \\
        --tag fixture --commit 0000000000000000000000000000000000000000 \\
        --out tests/check/data/nccl-tree-fixture.expected.json

Without --commit the commit is read with `git rev-parse HEAD` in the tree (if it is a
git checkout); otherwise --commit is required.

Output: {"generated_by", "repository", "tag", "commit", "strings": [...]}, the strings
sorted by file, line, then the rest of the record; json indent=1, so a rerun on the same
tree gives identical bytes. Records:
  {"level": "WARN"|"INFO", "format": F, "file": "src/...", "line": N}
      a WARN/INFO call; N is the line of the WARN/INFO token. F is the format argument
      with adjacent literals joined and C escapes decoded. A <inttypes.h> macro between
      literals is replaced by its conversion, as the C library expands it less the length
      modifier ("%" PRIu64 -> "%u", PRIx64 -> "%x"); any other macro identifier by "%d".
      When the call sits in a #define body the record also has "in_macro": the macro's
      name, and a macro parameter pasted between literals appears as "{param}"
      (e.g. "Call to {name} failed: %s" in SYSCHECK).
      A format that is a conditional (c ? "a" : "b") gives one record per branch.
  {"level": "WARN", "macro": M, "call": C, "format": F, "file", "line"}
      + "macro_file", "macro_line"
      a call site of check macro M (SYSCHECK etc.); C is its name argument (the
      argument's text for a #stringized one), F the macro's WARN format with C
      substituted (what the log line shows), macro_file:macro_line that WARN. A macro
      WARNing with the name twice gives a record per WARN.
  {"level": "ERRSTR", "code": "ncclSystemError", "format": F, "file", "line"}
      a string returned by ncclGetErrorString() (line of the string literal).
Calls whose format argument is not built from string literals are skipped and listed
on stderr.

Standard library only.
"""

import argparse
import json
import os
import re
import subprocess
import sys

SCAN_DIRS = ("src", "plugins")
SCAN_EXTS = (".cc", ".cu", ".h", ".c")
CHECKS_H = "src/include/checks.h"

# INFO strings are kept only from these files (transport choice, fallbacks, plugin
# loading). Patterns: "*" matches within one path component, "**" across components.
INFO_FILES = (
    "src/transport/net_socket.cc",
    "src/transport/net_ib*.cc",
    "src/transport/net_ib/**",
    "src/transport/net.cc",
    "src/init.cc",
    "src/bootstrap.cc",
    "src/misc/socket.cc",
    "src/plugin/*.cc",
    "src/plugin/net/*.cc",
    "src/net.cc",
    "src/misc/ibvwrap.cc",
    "src/misc/cudawrap.cc",
    "src/transport/shm.cc",
    "src/transport/p2p.cc",
    "src/graph/*.cc",
    "src/enqueue.cc",
)

# <inttypes.h> format macros: conversion letter without the length modifier.
PRI_RE = re.compile(r"^(?:PRI|SCN)([diouxX])(?:8|16|32|64|MAX|PTR|LEAST\d+|FAST\d+)$")

from nccl_c_strings import decode_c_string  # noqa: E402  (scripts/ is on sys.path)


class Tok:
    __slots__ = ("kind", "text", "value", "line", "macro")

    def __init__(self, kind, text, line, value=None, macro=None):
        self.kind = kind      # ident, str, char, num, punct
        self.text = text
        self.value = value    # decoded value of a str
        self.line = line
        self.macro = macro    # (name, params) when inside a #define body

    def __repr__(self):
        return "Tok(%s,%r,%d)" % (self.kind, self.text, self.line)


IDENT_START = re.compile(r"[A-Za-z_]")
IDENT = re.compile(r"[A-Za-z_0-9]*")
NUM = re.compile(r"(?:\d|\.\d)(?:[eEpP][+-]|[A-Za-z0-9_.']|)*")
STR_PREFIX = re.compile(r"(u8|u|U|L)?(R)?\"")
CHAR_PREFIX = re.compile(r"(u8|u|U|L)'")
PUNCT3 = ("<<=", ">>=", "...", "->*", "<=>")
PUNCT2 = ("::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
          "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "##", ".*")


def tokenize(text):
    """Tokens of a C/C++ file, without comments; tokens of #define bodies carry the
    macro's (name, params); tokens of other preprocessor directives are dropped."""
    toks = []
    i, n, line = 0, len(text), 1
    at_line_start = True
    directive = None   # None, or a dict for the current preprocessor directive
    while i < n:
        c = text[i]
        if c == "\\" and text.startswith("\n", i + 1):
            i += 2
            line += 1
            continue
        if c == "\\" and text.startswith("\r\n", i + 1):
            i += 3
            line += 1
            continue
        if c == "\n":
            line += 1
            i += 1
            at_line_start = True
            directive = None
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                if text[i] == "\\" and text.startswith("\n", i + 1):
                    line += 1
                    i += 1
                i += 1
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            i = j
            continue
        if c == "#" and at_line_start and directive is None:
            at_line_start = False
            m = re.compile(r"#[ \t]*([A-Za-z_]\w*)").match(text, i)
            name = m.group(1) if m else ""
            directive = {"kind": name, "state": "start", "macro": None}
            i = m.end() if m else i + 1
            if name == "define":
                dm = re.compile(r"[ \t]+([A-Za-z_]\w*)(\(([^)]*)\))?").match(text, i)
                if dm:
                    params = ()
                    if dm.group(2) is not None:
                        params = tuple(p.strip() for p in dm.group(3).split(",") if p.strip())
                    directive["macro"] = (dm.group(1), params)
                    i = dm.end()
            elif name == "include":
                # skip the header name (<...> may hold quotes or apostrophes)
                while i < n and text[i] != "\n":
                    i += 1
            continue
        at_line_start = False
        start_line = line
        tok = None
        m = STR_PREFIX.match(text, i) if c in 'uULR"' else None
        if m:
            if m.group(2):  # raw string R"delim( ... )delim"
                k = text.find("(", m.end())
                delim = text[m.end():k]
                end = text.find(")" + delim + '"', k)
                if end < 0:
                    end = n
                body = text[k + 1:end]
                j = min(n, end + len(delim) + 2)
                line += text.count("\n", i, j)
                tok = Tok("str", text[i:j], start_line, value=body)
            else:
                j = m.end()
                while j < n and text[j] != '"':
                    if text[j] == "\\":
                        if text.startswith("\n", j + 1):
                            line += 1
                        j += 1
                    elif text[j] == "\n":  # unterminated: stop at end of line
                        break
                    j += 1
                raw = text[m.end():j].replace("\\\n", "")
                tok = Tok("str", text[i:j + 1], start_line, value=decode_c_string(raw))
                j += 1
            i = j
        elif c == "'" or (c in "uUL" and CHAR_PREFIX.match(text, i)):
            k = text.index("'", i)
            j = k + 1
            while j < n and text[j] != "'" and text[j] != "\n":
                if text[j] == "\\":
                    j += 1
                j += 1
            if j < n and text[j] == "'":
                tok = Tok("char", text[i:j + 1], start_line)
                i = j + 1
            else:  # a lone apostrophe (e.g. in #error text)
                tok = Tok("punct", "'", start_line)
                i = k + 1
        elif IDENT_START.match(c):
            m = IDENT.match(text, i + 1)
            tok = Tok("ident", text[i:m.end()], start_line)
            i = m.end()
        elif c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            m = NUM.match(text, i)
            tok = Tok("num", m.group(0), start_line)
            i = m.end()
        else:
            for p in PUNCT3 + PUNCT2:
                if text.startswith(p, i):
                    tok = Tok("punct", p, start_line)
                    i += len(p)
                    break
            else:
                tok = Tok("punct", c, start_line)
                i += 1
        if directive is not None:
            if directive["kind"] != "define" or directive["macro"] is None:
                continue
            tok.macro = directive["macro"]
        toks.append(tok)
    return toks


def call_args(toks, k):
    """toks[k] is '('. Return (list of argument token lists, index after ')') or None."""
    depth = 0
    args, cur = [], []
    j = k
    while j < len(toks):
        t = toks[j]
        if t.kind == "punct" and t.text in "([{":
            depth += 1
            if depth > 1:
                cur.append(t)
        elif t.kind == "punct" and t.text in ")]}":
            depth -= 1
            if depth == 0:
                args.append(cur)
                return args, j + 1
            cur.append(t)
        elif t.kind == "punct" and t.text == "," and depth == 1:
            args.append(cur)
            cur = []
        else:
            cur.append(t)
        j += 1
    return None


def render_literal_seq(seq, params, unknown):
    """Join a sequence of string literals and macro identifiers; None if it holds
    anything else."""
    if not seq or not any(t.kind == "str" for t in seq):
        return None
    parts, macros = [], set()
    stringize = False
    for t in seq:
        if stringize:
            if not (t.kind == "ident" and t.text in params):
                return None
            parts.append("{%s}" % t.text)
            stringize = False
        elif t.kind == "punct" and t.text == "#" and params:
            stringize = True
        elif t.kind == "str":
            parts.append(t.value)
        elif t.kind == "ident":
            m = PRI_RE.match(t.text)
            if m:
                parts.append(m.group(1))
            elif t.text in params:
                parts.append("{%s}" % t.text)
            else:
                macros.add(t.text)
                parts.append("%d")
        else:
            return None
    if stringize:
        return None
    unknown |= macros
    return "".join(parts)


def strip_parens(seq):
    while len(seq) >= 2 and seq[0].text == "(" and seq[-1].text == ")" and seq[0].kind == "punct":
        r = call_args(seq, 0)
        if r is None or r[1] != len(seq) or len(r[0]) != 1:
            break
        seq = r[0][0]
    return seq


def render_formats(seq, params, unknown):
    """Formats of a format argument: literal sequence, or a ?: of such. None if not."""
    seq = strip_parens(seq)
    f = render_literal_seq(seq, params, unknown)
    if f is not None:
        return [f]
    # c ? A : B at top level
    depth, q, col = 0, None, None
    for idx, t in enumerate(seq):
        if t.kind == "punct" and t.text in "([{":
            depth += 1
        elif t.kind == "punct" and t.text in ")]}":
            depth -= 1
        elif depth == 0 and t.kind == "punct" and t.text == "?" and q is None:
            q = idx
        elif depth == 0 and t.kind == "punct" and t.text == ":" and q is not None and col is None:
            col = idx
    if q is None or col is None:
        return None
    a = render_formats(seq[q + 1:col], params, unknown)
    b = render_formats(seq[col + 1:], params, unknown)
    if a is None or b is None:
        return None
    return a + b


def path_pattern(pat):
    out = []
    for part in re.split(r"(\*\*|\*|\?)", pat):
        out.append({"**": ".*", "*": "[^/]*", "?": "[^/]"}.get(part, re.escape(part)))
    return re.compile("".join(out) + r"\Z")


INFO_RES = tuple(path_pattern(p) for p in INFO_FILES)
# check macros defined in these headers apply to every file of src/
SHARED_HEADERS = path_pattern("src/include/**")


def want_info(rel):
    return any(r.match(rel) for r in INFO_RES)


def check_macros(rel, toks):
    """Macros defined in toks whose body WARNs with one macro parameter pasted (or
    #stringized) into the format: {name: [(param index, param, format, line, stringized)]}."""
    found = {}
    for k, t in enumerate(toks):
        if not (t.kind == "ident" and t.text == "WARN" and t.macro and t.macro[1]):
            continue
        if k + 1 >= len(toks) or toks[k + 1].text != "(":
            continue
        r = call_args(toks, k + 1)
        if r is None or not r[0]:
            continue
        name, params = t.macro
        fmt_seq = r[0][0]
        pasted = [x.text for x in fmt_seq if x.kind == "ident" and x.text in params]
        if len(pasted) != 1:
            continue
        fmt = render_literal_seq(fmt_seq, params, set())
        if fmt is None:
            continue
        strz = any(x.kind == "punct" and x.text == "#" for x in fmt_seq)
        found.setdefault(name, []).append(
            (params.index(pasted[0]), pasted[0], fmt, rel, t.line, strz))
    return found


def chained_macros(rel, toks, known):
    """Macros defined in toks whose body calls a check macro of `known` with one of their
    own parameters as its name argument (2.7's SYSCHECK(call, name) is SYSCHECKVAL(call,
    name, retval)): they print that macro's format with their own argument pasted. Added to
    `known` until no more are found."""
    changed = True
    while changed:
        changed = False
        for k, t in enumerate(toks):
            if not (t.kind == "ident" and t.text in known and t.macro and t.macro[1]):
                continue
            outer, params = t.macro
            if outer in known or k + 1 >= len(toks) or toks[k + 1].text != "(":
                continue
            r = call_args(toks, k + 1)
            if r is None:
                continue
            for idx, pname, fmt, mfile, mline, strz in list(known[t.text]):
                if idx >= len(r[0]):
                    continue
                arg = strip_parens(r[0][idx])
                if len(arg) != 1 or arg[0].kind != "ident" or arg[0].text not in params:
                    continue
                known.setdefault(outer, []).append(
                    (params.index(arg[0].text), arg[0].text,
                     fmt.replace("{%s}" % pname, "{%s}" % arg[0].text), mfile, mline, strz))
                changed = True
    return known


def scan_file(rel, toks, checks, records, skipped, unknown):
    info_ok = want_info(rel)
    for k, t in enumerate(toks):
        if t.kind != "ident":
            continue
        if k + 1 >= len(toks) or toks[k + 1].kind != "punct" or toks[k + 1].text != "(":
            continue
        prev = toks[k - 1] if k > 0 else None
        if prev is not None and (prev.kind == "punct" and prev.text in (".", "->", "::")
                                 or prev.kind == "ident" and prev.text in ("void", "int", "static")):
            continue
        name = t.text
        if name in ("WARN", "INFO"):
            if name == "INFO" and not info_ok:
                continue
            r = call_args(toks, k + 1)
            if r is None:
                continue
            args = r[0]
            fi = 0 if name == "WARN" else 1
            if len(args) <= fi:
                skipped.append("%s:%d %s(no format argument)" % (rel, t.line, name))
                continue
            params = t.macro[1] if t.macro else ()
            fmts = render_formats(args[fi], params, unknown)
            if fmts is None:
                skipped.append("%s:%d %s(%s, ...)" % (rel, t.line, name,
                                                     " ".join(x.text for x in args[fi])))
                continue
            for f in dict.fromkeys(fmts):
                rec = {"level": name, "format": f, "file": rel, "line": t.line}
                if t.macro:
                    rec["in_macro"] = t.macro[0]
                records.append(rec)
        elif name in checks and not t.macro:
            r = call_args(toks, k + 1)
            if r is None:
                continue
            args = r[0]
            for idx, pname, fmt, mfile, mline, strz in checks[name]:
                if mfile == rel and mline > t.line:
                    continue  # used before its definition: not this macro
                if len(args) <= idx:
                    continue
                arg = strip_parens(args[idx])
                if strz:
                    call = " ".join(x.text for x in arg)
                else:
                    call = render_literal_seq(arg, (), unknown)
                if call is None:
                    skipped.append("%s:%d %s(..., %s)" % (rel, t.line, name,
                                                         " ".join(x.text for x in arg)))
                    continue
                records.append({"level": "WARN", "macro": name, "call": call,
                                "format": fmt.replace("{%s}" % pname, call),
                                "file": rel, "line": t.line,
                                "macro_file": mfile, "macro_line": mline})
        elif name == "ncclGetErrorString":
            r = call_args(toks, k + 1)
            if r is None or r[1] >= len(toks) or toks[r[1]].text != "{":
                continue
            body = call_args(toks, r[1])
            if body is None:
                continue
            end = body[1]
            code = None
            j = r[1] + 1
            while j < end:
                x = toks[j]
                if x.kind == "ident" and x.text == "case" and j + 1 < end:
                    code = toks[j + 1].text
                elif x.kind == "ident" and x.text == "default":
                    code = "default"
                elif x.kind == "ident" and x.text == "return" and j + 1 < end and toks[j + 1].kind == "str":
                    seq = []
                    m = j + 1
                    while m < end and toks[m].kind in ("str", "ident"):
                        seq.append(toks[m])
                        m += 1
                    f = render_literal_seq(seq, (), unknown)
                    if f is not None:
                        records.append({"level": "ERRSTR", "code": code, "format": f,
                                        "file": rel, "line": toks[j + 1].line})
                j += 1


def tree_files(tree):
    out = []
    for d in SCAN_DIRS:
        root = os.path.join(tree, d)
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for f in filenames:
                if f.endswith(SCAN_EXTS):
                    full = os.path.join(dirpath, f)
                    out.append((os.path.relpath(full, tree).replace(os.sep, "/"), full))
    return sorted(out)


def git_commit(tree):
    try:
        top = subprocess.run(["git", "-C", tree, "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, check=True).stdout.strip()
        if os.path.realpath(top) != os.path.realpath(tree):
            return None  # the tree is a subdirectory of some other checkout
        return subprocess.run(["git", "-C", tree, "rev-parse", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def sort_key(rec):
    return (rec["file"], rec["line"], json.dumps(rec, sort_keys=True))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", required=True, help="extracted NVIDIA/nccl source tree")
    ap.add_argument("--tag", required=True, help="the tag the tree was extracted from")
    ap.add_argument("--commit", help="commit of the tag (default: git rev-parse HEAD in --tree)")
    ap.add_argument("--out", required=True, help="output JSON file")
    a = ap.parse_args()

    commit = a.commit or git_commit(a.tree)
    if not commit:
        ap.error("%s is not a git checkout: give --commit" % a.tree)
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        ap.error("--commit must be 40 lowercase hex digits")

    files = tree_files(a.tree)
    if not files:
        ap.error("no source files under %s/{%s}" % (a.tree, ",".join(SCAN_DIRS)))
    tokens = {}
    for rel, full in files:
        with open(full, "r", encoding="utf-8", errors="surrogateescape") as fh:
            tokens[rel] = tokenize(fh.read())
    # check macros of shared headers (src/include/) apply to every file of src/; those
    # defined in any other file only to that file
    shared = {}
    for rel, _ in files:
        if SHARED_HEADERS.match(rel):
            for name, defs in check_macros(rel, tokens[rel]).items():
                shared.setdefault(name, []).extend(defs)
    for rel, _ in files:
        if SHARED_HEADERS.match(rel):
            chained_macros(rel, tokens[rel], shared)
    if not any(d[3] == CHECKS_H for defs in shared.values() for d in defs):
        print("warning: no WARN-with-name check macros in %s" % CHECKS_H, file=sys.stderr)

    records, skipped, unknown = [], [], set()
    all_checks = set(shared)
    for rel, _ in files:
        checks = dict(shared) if rel.startswith("src/") else {}
        if not SHARED_HEADERS.match(rel):
            for name, defs in check_macros(rel, tokens[rel]).items():
                checks[name] = defs
                all_checks.add(name)
        scan_file(rel, tokens[rel], checks, records, skipped, unknown)
    records.sort(key=sort_key)

    doc = {
        "generated_by": "scripts/gen-nccl-log-strings.py",
        "repository": "NVIDIA/nccl",
        "tag": a.tag,
        "commit": commit,
        "strings": records,
    }
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w", encoding="utf-8", errors="surrogateescape", newline="\n") as fh:
        fh.write(text)

    counts = {}
    for r in records:
        key = r["level"] + ("/" + r["macro"] if "macro" in r else "")
        counts[key] = counts.get(key, 0) + 1
    print("%s: %s" % (a.out, ", ".join("%s=%d" % kv for kv in sorted(counts.items()))),
          file=sys.stderr)
    print("check macros: %s" % ", ".join(sorted(all_checks)), file=sys.stderr)
    if unknown:
        print("identifiers between literals rendered as %%d: %s" % " ".join(sorted(unknown)),
              file=sys.stderr)
    for s in skipped:
        print("skipped (format not literal): %s" % s, file=sys.stderr)


if __name__ == "__main__":
    main()
