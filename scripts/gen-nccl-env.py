#!/usr/bin/env python3
"""Generate data/nccl/env/: the environment variables NCCL reads, from NCCL's own source.

Reads an extracted NVIDIA/nccl source tree and writes, as data, every NCCL_* environment
variable that the code under src/, plugins/ and the older bundled plugin directories
ext-net/, ext-tuner/, ext-profiler/ (*.cc, *.cu, *.h, *.c) reads, each with its file
and line, so that the doctor's NCCL variable lint can tell a real variable from a typo
and cite the upstream line. Found, not listed:

  * the parameter macros: every function-like #define in src/include/param.h or
    src/include/param/*.h whose body pastes a prefix literal before a parameter
    ("NCCL_" env: NCCL_PARAM(name, env, deftVal) in every tag 2.18 .. 2.30, type int64_t
    from the body's `int64_t ncclParam##name()`), or stringizes a `key` parameter next
    to `type` and `default` parameters (DEFINE_NCCL_PARAM(name, type, key, default,
    flags, parser, desc), new in 2.30). Their call sites outside #define bodies are the
    variables; a default that is a constant integer expression (literals, object-like
    #defines of the tree, <limits.h>/<stdint.h> limits) is evaluated, otherwise kept as
    its source text; the source text is kept in "default_source" either way.
  * reads of a literal name: getenv / std::getenv / secure_getenv / ncclGetEnv /
    ncclEnvPluginGetEnv ("NCCL_X") -> kind "string" (a row {"NCCL_X", getenv("NCCL_X"),
    "default", "description"} of a table, as in the inspector plugin, gives the default).
  * wrappers: a function that passes one of its parameters to one of the readers above
    (ncclGetLevel(level, disableEnv, levelEnv) of src/graph/paths.cc, the inspector's
    getPoolSizeFromEnv/getRingSizeFromEnv, ...), and functions that pass a parameter on
    to a wrapper; each call site with a literal NCCL_ name at that argument is a read.
    The wrapper's body gives the kind: the value strcmp'd against a name table indexed
    by the loop variable -> "level" with "accepted" = that table's entries up to the
    loop bound (e.g. topoPathTypeStr[] of src/graph/topo.cc up to PATH_SYS, whose value
    is a #define in the tree), "accepted_from" = the table's file:line and
    "accepted_numeric" = the old numeric levels (a static const int table of PATH_*
    values used in the body, e.g. levelsOldToNew[]; NCCL reads a larger number as
    the last one); parsed with strtol/strtoul/atoi...
    -> "int"; otherwise "string". A call argument whose parameter is named def*/
    default* gives the default.

Variables with another prefix (CUDA_LAUNCH_BLOCKING, SLURM_JOB_ID, ...) are skipped; a
reader called with a name that is neither a literal nor a wrapper's parameter, and
NCCL_* literals (exact names) that none of the above explains, are listed on stderr.

Regenerate (the tree is NVIDIA's code under its license: extract it outside this repo):

    # 1. get the repository as a bare git dir (the session tool `fetch` with source
    #    "github:NVIDIA/nccl" leaves it in /work/.mirror/NVIDIA+nccl/repo; a plain
    #    `git clone --bare https://github.com/NVIDIA/nccl.git nccl.git` does the same)
    NCCL_GIT=/work/.mirror/NVIDIA+nccl/repo
    # 2. the newest patch tag of each release v2.18 .. v2.30
    TAGS=$(git --git-dir=$NCCL_GIT tag -l 'v2.*' | sort -V |
           awk -F. '{k=$1"."$2; last[k]=$0; if (!(k in s)) {s[k]=1; o[++n]=k}}
                    END {for (i=1; i<=n; i++) print last[o[i]]}' |
           awk -F. '$2 >= 18 && $2 <= 30')
    # (v2.18.6-1 v2.19.4-1 v2.20.5-1 v2.21.5-1 v2.22.3-1 v2.23.4-1 v2.24.3-1
    #  v2.25.1-1 v2.26.6-1 v2.27.7-1 v2.28.9-1 v2.29.7-1 v2.30.7-1)
    # 3. extract each tag and generate its table (an archive is not a git checkout,
    #    so pass the tag's commit)
    for t in $TAGS; do
      rm -rf /tmp/nccl-$t && mkdir -p /tmp/nccl-$t
      git --git-dir=$NCCL_GIT archive $t | tar -x -C /tmp/nccl-$t
      python3 scripts/gen-nccl-env.py --tree /tmp/nccl-$t --tag $t \\
          --commit $(git --git-dir=$NCCL_GIT rev-parse "$t^{commit}") \\
          --out data/nccl/env/$t.json
    done
    # 4. the combined table
    python3 scripts/gen-nccl-env.py --combine data/nccl/env/*.json \\
        --out data/nccl/env-variables.json
    # the test fixture:
    python3 scripts/gen-nccl-env.py --tree tests/doctor/data/nccl-env-fixture \\
        --tag fixture --commit 0000000000000000000000000000000000000000 \\
        --out tests/doctor/data/nccl-env-fixture.expected.json

Without --commit the commit is read with `git rev-parse HEAD` in the tree (if it is a
git checkout); otherwise --commit is required. Without --out, tree mode writes
data/nccl/env/<tag>.json of this repository.

Per-tag output: {"generated_by", "repository": "NVIDIA/nccl", "tag", "commit",
"macros": [the parameter macros found, with file:line], "variables": [...]}, one record
per read site, sorted by name, file, line, then the rest; json indent=1, so a rerun on
the same tree gives identical bytes. A record:
  {"name": "NCCL_IB_GID_INDEX", "kind": "int64", "type": "int64_t", "default": -1,
   "default_source": "-1", "via": "NCCL_PARAM", "param": "ncclParamIbGidIndex",
   "file": "src/...", "line": N}
  "kind": int64 (NCCL_PARAM); bool, string, int32, uint32, uint64, int64, double, enum
  (a ncclParamOneOf parser), bitset (ncclParamBitsetOf), list, or the C type
  (DEFINE_NCCL_PARAM, which also gives "accepted" = its makeOption names, "flags" and
  "description"); string (a literal read); level, int, string (a wrapper's read).
  "via": the macro or the function that reads it. N is the line of the macro or
  function name of the call. "plugin": the bundled plugin's directory
  ("plugins/profiler/inspector", "ext-profiler/inspector") for a file under one.

Combined output (--combine): {"generated_by", "repository", "tags": [{"tag",
"commit"}] oldest first, "variables": [...]} sorted by name, one record per name:
  {"name", "first", "last", "tags": [the tags that read it], "kind", "type", "default",
   "default_source", "accepted", ..., "via", "file", "line", "plugin", "sites"}
taken from the newest tag that reads it: its primary site (a parameter macro before a
wrapper's read before a literal read; then a site with a known default; then file,
line), "sites" = that tag's other sites as "file:line". "default_changes" /
"kind_changes" = [{"tag", "default"|"kind"}, ...] (the first tag of each value) when
the primary default or kind differs between tags.

Standard library only.
"""

import argparse
import json
import os
import re
import subprocess
import sys

GENERATED_BY = "scripts/gen-nccl-env.py"
REPOSITORY = "NVIDIA/nccl"
SCAN_DIRS = ("src", "plugins")
SCAN_DIR_RE = re.compile(r"^ext-[A-Za-z0-9_-]+$")   # ext-net, ext-tuner, ext-profiler
SCAN_EXTS = (".cc", ".cu", ".h", ".c")
CONST_EXTS = (".h.in",)          # read for #define constants only (src/nccl.h.in)
PARAM_HEADER_RE = re.compile(r"^src/include/param(?:\.h|/[^/]+\.h)$")
READERS = ("getenv", "secure_getenv", "ncclGetEnv", "ncclEnvPluginGetEnv")
INT_PARSERS = ("strtol", "strtoll", "strtoul", "strtoull", "atoi", "atol", "atoll",
               "stoi", "stol", "stoll", "stoul", "stoull")
NAME_PREFIX = ("NCCL_",)        # the names kept; --profile sets them
NAME_RE = re.compile(r"^NCCL_[A-Z0-9_]+$")

# --profile: the repository a tree is of, the name prefixes kept, and where per-tag tables
# go by default. ROCm/rccl is NCCL's fork: the same macros, and its own RCCL_PARAM (prefix
# "RCCL_"); its reads of the ROCm runtime's HSA_* variables are kept too.
PROFILES = {
    "nccl": {"repository": "NVIDIA/nccl", "prefixes": ("NCCL_",), "dir": "env"},
    "rccl": {"repository": "ROCm/rccl", "prefixes": ("NCCL_", "RCCL_", "HSA_"),
             "dir": "rccl"},
}


def use_profile(name):
    global REPOSITORY, NAME_PREFIX, NAME_RE
    prof = PROFILES[name]
    REPOSITORY = prof["repository"]
    NAME_PREFIX = prof["prefixes"]
    NAME_RE = re.compile(r"^(?:%s)[A-Z0-9_]+$" % "|".join(NAME_PREFIX))
    return prof
KEYWORDS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "defined",
            "alignof", "decltype", "static_assert", "__attribute__", "do", "else"}

# <limits.h> / <stdint.h> limits a default may use.
LIMITS = {
    "INT_MAX": 2**31 - 1, "INT_MIN": -2**31, "UINT_MAX": 2**32 - 1,
    "INT32_MAX": 2**31 - 1, "INT32_MIN": -2**31, "UINT32_MAX": 2**32 - 1,
    "INT64_MAX": 2**63 - 1, "INT64_MIN": -2**63, "UINT64_MAX": 2**64 - 1,
    "LONG_MAX": 2**63 - 1, "LONG_MIN": -2**63, "LLONG_MAX": 2**63 - 1,
    "LLONG_MIN": -2**63, "ULLONG_MAX": 2**64 - 1, "SIZE_MAX": 2**64 - 1,
    "INT16_MAX": 2**15 - 1, "UINT16_MAX": 2**16 - 1, "INT8_MAX": 127, "UINT8_MAX": 255,
}

# DEFINE_NCCL_PARAM's C type -> kind.
TYPE_KINDS = {
    "bool": "bool", "const char*": "string", "char const*": "string",
    "std::string": "string", "int": "int32", "int32_t": "int32", "unsigned": "uint32",
    "unsigned int": "uint32", "uint32_t": "uint32", "int64_t": "int64", "long": "int64",
    "long long": "int64", "uint64_t": "uint64", "size_t": "uint64", "double": "double",
    "float": "float", "int8_t": "int8", "uint8_t": "uint8", "int16_t": "int16",
    "uint16_t": "uint16",
}
PARSER_KINDS = (("ncclParamOneOf", "enum"), ("ncclParamBitsetOf", "bitset"),
                ("ncclParamListOf", "list"), ("ncclParamList", "list"))

from nccl_c_strings import decode_c_string  # noqa: E402  (scripts/ is on sys.path)


class Tok:
    __slots__ = ("kind", "text", "value", "line", "pp")

    def __init__(self, kind, text, line, value=None, pp=None):
        self.kind = kind      # ident, str, char, num, punct
        self.text = text
        self.value = value    # decoded value of a str
        self.line = line
        self.pp = pp          # None outside directives; else the directive dict

    def __repr__(self):
        return "Tok(%s,%r,%d)" % (self.kind, self.text, self.line)


IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
NUM = re.compile(r"(?:\d|\.\d)(?:[eEpP][+-]|[A-Za-z0-9_.']|)*")
STR_PREFIX = re.compile(r"(u8|u|U|L)?(R)?\"")
CHAR_PREFIX = re.compile(r"(u8|u|U|L)?'")
PUNCT3 = ("<<=", ">>=", "...", "->*", "<=>")
PUNCT2 = ("::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
          "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "##", ".*")


def tokenize(text):
    """Tokens of a C/C++ file without comments. A token inside a preprocessor directive
    has .pp = {"directive": "define"|..., "name", "params", "line"} (name/params for a
    #define), others .pp = None."""
    toks = []
    i, n, line = 0, len(text), 1
    at_line_start = True
    directive = None
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
        if c == "#" and at_line_start:
            at_line_start = False
            m = re.compile(r"[ \t]*([A-Za-z_]+)").match(text, i + 1)
            word = m.group(1) if m else ""
            directive = {"directive": word, "line": line, "name": None, "params": None}
            i = m.end() if m else i + 1
            if word == "define":
                m2 = re.compile(r"[ \t]*([A-Za-z_][A-Za-z_0-9]*)(\()?").match(text, i)
                if m2:
                    directive["name"] = m2.group(1)
                    i = m2.end(1)
                    if m2.group(2):
                        j = text.find(")", i)
                        plist = text[i + 1:j]
                        directive["params"] = [p.strip() for p in plist.split(",")
                                               if p.strip()]
                        line += plist.count("\n")
                        i = j + 1
            elif word == "include":
                # skip the header name (<...> or "...")
                j = text.find("\n", i)
                i = n if j < 0 else j
            continue
        at_line_start = False
        m = STR_PREFIX.match(text, i)
        if m and (m.start() == i):
            start_line = line
            if m.group(2):  # raw string R"delim( ... )delim"
                j = text.find("(", m.end())
                delim = text[m.end():j]
                k = text.find(")" + delim + '"', j)
                body = text[j + 1:k]
                end = k + len(delim) + 2
                value = body
            else:
                j = m.end()
                while j < n and text[j] != '"':
                    if text[j] == "\\":
                        j += 1
                    if j < n and text[j] == "\n":
                        break
                    j += 1
                body = text[m.end():j]
                end = j + 1
                value = decode_c_string(body.replace("\\\n", ""))
            line += text.count("\n", i, end)
            toks.append(Tok("str", text[i:end], start_line, value, directive))
            i = end
            continue
        m = CHAR_PREFIX.match(text, i)
        if m and m.start() == i and (m.group(1) or c == "'"):
            j = m.end()
            while j < n and text[j] != "'" and text[j] != "\n":
                if text[j] == "\\":
                    j += 1
                j += 1
            toks.append(Tok("char", text[i:j + 1], line, None, directive))
            i = j + 1
            continue
        if c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            m = NUM.match(text, i)
            toks.append(Tok("num", m.group(0), line, None, directive))
            i = m.end()
            continue
        m = IDENT.match(text, i)
        if m:
            toks.append(Tok("ident", m.group(0), line, None, directive))
            i = m.end()
            continue
        for p in PUNCT3 + PUNCT2:
            if text.startswith(p, i):
                toks.append(Tok("punct", p, line, None, directive))
                i += len(p)
                break
        else:
            toks.append(Tok("punct", c, line, None, directive))
            i += 1
    return toks


def match_close(toks, i):
    """Index of the bracket closing toks[i] ('(' '[' '{'), or len(toks)."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    opener = toks[i].text
    closer = pairs[opener]
    depth = 0
    for j in range(i, len(toks)):
        t = toks[j]
        if t.kind != "punct":
            continue
        if t.text == opener:
            depth += 1
        elif t.text == closer:
            depth -= 1
            if depth == 0:
                return j
    return len(toks)


def split_args(toks, open_idx):
    """The arguments of the call whose '(' is toks[open_idx]: a list of token lists,
    and the index of the ')'."""
    close = match_close(toks, open_idx)
    args, cur, depth = [], [], 0
    for j in range(open_idx + 1, close):
        t = toks[j]
        if t.kind == "punct" and t.text in "([{":
            depth += 1
        elif t.kind == "punct" and t.text in ")]}":
            depth -= 1
        if depth == 0 and t.kind == "punct" and t.text == ",":
            args.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur or args:
        args.append(cur)
    return args, close


def literal_value(arg):
    """The joined value of an argument made only of adjacent string literals."""
    if arg and all(t.kind == "str" for t in arg):
        return "".join(t.value for t in arg)
    return None


def source_text(arg):
    """An argument's source text: tokens joined by one space, except after ( [ . ->
    :: ~ ! and a unary - or +, before ( ) [ ] , . -> ::, and in `char*`."""
    out = []
    prev = None
    unary = False
    for t in arg:
        if prev is not None:
            tight = (prev.kind == "punct" and prev.text in ("(", "[", ".", "->", "::",
                                                             "~", "!")) or unary
            tight = tight or (t.kind == "punct" and t.text in (
                "(", ")", "[", "]", ",", ".", "->", "::") and prev.text != ",")
            tight = tight or (t.text == "*" and prev.text in ("char", "void"))
            if not tight:
                out.append(" ")
        # a - or + after nothing, an operator or an opening bracket is unary
        unary = t.kind == "punct" and t.text in ("-", "+") and (
            prev is None or (prev.kind == "punct" and prev.text not in (")", "]")))
        out.append(t.text)
        prev = t
    return "".join(out)


# ---------------------------------------------------------------- constant evaluation

class EvalError(Exception):
    pass


def parse_int_literal(text):
    t = text.replace("'", "")
    m = re.match(r"^(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)([uUlL]*)$", t)
    if not m:
        raise EvalError(text)
    s = m.group(1)
    if s[:2] in ("0x", "0X"):
        return int(s, 16)
    if s[:2] in ("0b", "0B"):
        return int(s[2:], 2)
    if len(s) > 1 and s[0] == "0":
        return int(s, 8)
    return int(s)


class ConstEval:
    """Integer constant expressions over literals, object-like #defines and limits."""

    def __init__(self, defines):
        self.defines = defines      # name -> token list (or None when ambiguous)

    def eval(self, toks, depth=0):
        if depth > 20:
            raise EvalError("recursion")
        self.toks = [t for t in toks]
        self.pos = 0
        self.depth = depth
        v = self.expr_or()
        if self.pos != len(self.toks):
            raise EvalError("trailing")
        return v

    def peek(self):
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def take(self, text=None):
        t = self.peek()
        if t is None or (text is not None and t.text != text):
            raise EvalError("expected %s" % text)
        self.pos += 1
        return t

    def binary(self, sub, ops):
        v = sub()
        while self.peek() is not None and self.peek().kind == "punct" and \
                self.peek().text in ops:
            op = self.take().text
            w = sub()
            if op == "|":
                v |= w
            elif op == "^":
                v ^= w
            elif op == "&":
                v &= w
            elif op == "<<":
                v <<= w
            elif op == ">>":
                v >>= w
            elif op == "+":
                v += w
            elif op == "-":
                v -= w
            elif op == "*":
                v *= w
            elif op in ("/", "%"):
                if w == 0:
                    raise EvalError("div0")
                q = abs(v) // abs(w) * (1 if (v >= 0) == (w >= 0) else -1)
                v = q if op == "/" else v - q * w
        return v

    def expr_or(self):
        return self.binary(self.expr_xor, ("|",))

    def expr_xor(self):
        return self.binary(self.expr_and, ("^",))

    def expr_and(self):
        return self.binary(self.expr_shift, ("&",))

    def expr_shift(self):
        return self.binary(self.expr_add, ("<<", ">>"))

    def expr_add(self):
        return self.binary(self.expr_mul, ("+", "-"))

    def expr_mul(self):
        return self.binary(self.unary, ("*", "/", "%"))

    def unary(self):
        t = self.peek()
        if t is None:
            raise EvalError("end")
        if t.kind == "punct" and t.text in ("-", "+", "~", "!"):
            self.take()
            v = self.unary()
            return {"-": -v, "+": v, "~": ~v, "!": int(not v)}[t.text]
        if t.kind == "punct" and t.text == "(":
            # a cast (int64_t)x is skipped: ( ident [ident]* [*]* )
            j = self.pos + 1
            while j < len(self.toks) and self.toks[j].kind == "ident" and \
                    self.toks[j].text not in self.defines and \
                    self.toks[j].text not in LIMITS:
                j += 1
            if j > self.pos + 1 and j < len(self.toks) and self.toks[j].text == ")" and \
                    j + 1 < len(self.toks):
                self.pos = j + 1
                return self.unary()
            self.take("(")
            v = self.expr_or()
            self.take(")")
            return v
        self.take()
        if t.kind == "num":
            return parse_int_literal(t.text)
        if t.kind == "ident":
            if t.text in ("true", "false"):
                return int(t.text == "true")
            if t.text in self.defines and self.defines[t.text]:
                saved = (self.toks, self.pos, self.depth)
                try:
                    return ConstEval(self.defines).eval(self.defines[t.text],
                                                        self.depth + 1)
                finally:
                    self.toks, self.pos, self.depth = saved
            if t.text in LIMITS:
                return LIMITS[t.text]
        raise EvalError(t.text)


def eval_default(arg, consts):
    """(value, source text) of a default argument: an int when it is a constant
    expression, true/false -> bool, nullptr/NULL -> None, a string literal -> str,
    anything else -> its source text."""
    src = source_text(arg)
    lit = literal_value(arg)
    if lit is not None:
        return lit, src
    if len(arg) == 1 and arg[0].kind == "ident":
        if arg[0].text in ("true", "false"):
            return arg[0].text == "true", src
        if arg[0].text in ("nullptr", "NULL"):
            return None, src
    try:
        return consts.eval(arg), src
    except (EvalError, RecursionError):
        return src, src


# ---------------------------------------------------------------- the tree

def version_key(tag):
    m = re.match(r"^(?:v|rocm-)?(\d+)\.(\d+)(?:\.(\d+))?(?:-(\d+))?", tag)
    if m:
        return (0, tuple(int(x or 0) for x in m.groups()), tag)
    return (1, (), tag)


def list_files(tree):
    """Scanned source files (relative paths, '/'), and the constant-only ones."""
    tops = [d for d in SCAN_DIRS if os.path.isdir(os.path.join(tree, d))]
    tops += sorted(d for d in os.listdir(tree)
                   if SCAN_DIR_RE.match(d) and os.path.isdir(os.path.join(tree, d)))
    files, const_files = [], []
    for top in tops:
        for root, dirs, names in os.walk(os.path.join(tree, top)):
            dirs.sort()
            for name in sorted(names):
                rel = os.path.relpath(os.path.join(root, name), tree).replace(os.sep, "/")
                if name.endswith(SCAN_EXTS):
                    files.append(rel)
                elif name.endswith(CONST_EXTS):
                    const_files.append(rel)
    return sorted(files), sorted(const_files)


def plugin_of(path):
    parts = path.split("/")
    if parts[0] == "plugins" and len(parts) >= 3:
        return "/".join(parts[:3]) if len(parts) >= 4 else "/".join(parts[:2])
    if SCAN_DIR_RE.match(parts[0]) and len(parts) >= 2:
        return "/".join(parts[:2]) if len(parts) >= 3 else parts[0]
    return None


def collect_defines(file_toks, paths=None):
    """Object-like #define NAME <tokens> of the files (all by default); a name defined
    differently in two places maps to None."""
    defines = {}
    for path in sorted(file_toks if paths is None else paths):
        toks = file_toks[path]
        i = 0
        while i < len(toks):
            t = toks[i]
            pp = t.pp
            if pp is None or pp["directive"] != "define" or pp["params"] is not None:
                i += 1
                continue
            j = i
            while j < len(toks) and toks[j].pp is pp:
                j += 1
            body = toks[i:j]
            key = " ".join(x.text for x in body)
            name = pp["name"]
            if name in defines and defines[name] is not None and \
                    " ".join(x.text for x in defines[name]) != key:
                defines[name] = None
            elif name not in defines:
                defines[name] = body
            i = j
        # a #define with an empty body has no tokens: nothing to record
    return defines


def function_macros(file_toks):
    """[(name, params, body tokens, file, line)] of every function-like #define, by file."""
    out = []
    for path in sorted(file_toks):
        seen = set()
        toks = file_toks[path]
        for t in toks:
            pp = t.pp
            if pp is None or pp["directive"] != "define" or pp["params"] is None or \
                    id(pp) in seen:
                continue
            seen.add(id(pp))
            out.append((pp["name"], pp["params"], [x for x in toks if x.pp is pp], path,
                        pp["line"]))
    return out


def find_param_macros(file_toks):
    """The parameter macros of src/include/param.h and src/include/param/*.h."""
    macros = {}
    headers = {path: toks for path, toks in file_toks.items() if PARAM_HEADER_RE.match(path)}
    for macro_name, params, body, path, line in function_macros(headers):
        info = None
        for k in range(len(body) - 1):
            a, b = body[k], body[k + 1]
            if a.kind == "str" and b.kind == "ident" and b.text in params and \
                    a.value.startswith(NAME_PREFIX):
                # "NCCL_" env
                dflt = None
                for p in params:
                    if re.match(r"(?i)^(deft?|default)", p):
                        dflt = params.index(p)
                ctype = None
                if body and body[0].kind == "ident" and len(body) > 1 and \
                        body[1].kind == "ident":
                    ctype = body[0].text
                name_idx = 0 if params[0] == "name" else None
                # the accessor the macro defines: ncclParam##name (rcclParam in RCCL)
                accessor = "ncclParam"
                for q in range(len(body) - 2):
                    if body[q].kind == "ident" and body[q + 1].text == "##" and \
                            name_idx is not None and body[q + 2].text == params[0]:
                        accessor = body[q].text
                        break
                info = {"style": "suffix", "prefix": a.value,
                        "env": params.index(b.text), "default": dflt,
                        "type": ctype, "name": name_idx, "accessor": accessor}
                break
            if a.kind == "punct" and a.text == "#" and b.kind == "ident" and \
                    b.text in params and "type" in params and \
                    "default" in params:
                info = {"style": "key", "env": params.index(b.text),
                        "default": params.index("default"),
                        "type_param": params.index("type"),
                        "name": params.index("name") if "name" in params else None,
                        "flags": params.index("flags") if "flags" in params else None,
                        "parser": params.index("parser") if "parser" in params
                        else None,
                        "desc": params.index("desc") if "desc" in params else None}
                break
        if info is not None:
            info["macro"] = macro_name
            info["file"] = path
            info["line"] = line
            macros[macro_name] = info
    return macros


def find_functions(toks):
    """[(name, [param names], body_open, body_close)] of the function definitions."""
    funcs = []
    i = 0
    n = len(toks)
    while i < n:
        t = toks[i]
        if t.pp is not None or t.kind != "punct" or t.text != "{":
            i += 1
            continue
        # walk back over qualifiers to a ')'
        j = i - 1
        while j >= 0 and toks[j].kind == "ident" and toks[j].text in (
                "const", "noexcept", "override", "final", "volatile"):
            j -= 1
        if j >= 0 and toks[j].kind == "punct" and toks[j].text == ")" and \
                toks[j].pp is None:
            depth = 0
            k = j
            while k >= 0:
                if toks[k].kind == "punct" and toks[k].text == ")":
                    depth += 1
                elif toks[k].kind == "punct" and toks[k].text == "(":
                    depth -= 1
                    if depth == 0:
                        break
                k -= 1
            if k > 0 and toks[k - 1].kind == "ident" and toks[k - 1].text not in KEYWORDS:
                args, _ = split_args(toks, k)
                params = []
                for a in args:
                    names = []
                    for x in a:
                        if x.kind == "punct" and x.text in ("=", "["):
                            break
                        if x.kind == "ident":
                            names.append(x.text)
                    params.append(names[-1] if len(names) >= 2 else None)
                close = match_close(toks, i)
                funcs.append((toks[k - 1].text, params, i, close))
        i += 1
    return funcs


def reader_aliases(toks):
    """Names assigned a reader function itself in this file, e.g. in 2.28's debug.cc
    `ncclGetEnvFunc_t getEnvFunc = ncclEnvPluginInitialized() ? ncclGetEnv :
    (ncclGetEnvFunc_t)getenv;`."""
    aliases = set()
    for i in range(1, len(toks) - 1):
        if toks[i].text != "=" or toks[i - 1].kind != "ident" or toks[i].pp is not None:
            continue
        j = i + 1
        while j < len(toks) and toks[j].text not in (";", "{", "}"):
            x = toks[j]
            if x.kind == "ident" and x.text in READERS and \
                    (j + 1 >= len(toks) or toks[j + 1].text != "("):
                aliases.add(toks[i - 1].text)
            j += 1
    return aliases


def is_reader_call(toks, i, aliases=()):
    """toks[i] is a reader function (or an alias of one) called directly, not as a
    method."""
    t = toks[i]
    if t.kind != "ident" or (t.text not in READERS and t.text not in aliases):
        return False
    if i + 1 >= len(toks) or toks[i + 1].text != "(":
        return False
    if i > 0 and toks[i - 1].kind == "punct" and toks[i - 1].text in (".", "->"):
        return False
    return True


def analyse_wrapper(toks, body_open, body_close, call_idx, consts, tables, int_tables):
    """Kind (and level details) of the value a wrapper reads at toks[call_idx]."""
    # the variable the read is assigned to: `<type>* str = getenv(x)` or `str = ...`
    var = None
    k = call_idx - 1
    if k > 0 and toks[k].text == "::":
        k -= 2
    if k >= 0 and toks[k].text == "=" and k > 0 and toks[k - 1].kind == "ident":
        var = toks[k - 1].text
    if var is not None:
        for j in range(call_idx, body_close):
            t = toks[j]
            if t.kind == "ident" and t.text == "strcmp" and j + 3 < body_close:
                args, close = split_args(toks, j + 1)
                names = [source_text(a) for a in args]
                if var in names and len(args) == 2:
                    other = args[1] if names[0] == var else args[0]
                    if len(other) >= 4 and other[0].kind == "ident" and \
                            other[0].text in tables and other[1].text == "[":
                        table = other[0].text
                        idx_var = other[2].text
                        # the loop bound: `idx_var <= BOUND` / `idx_var < BOUND`
                        bound = None
                        for b in range(body_open, j):
                            if toks[b].text == idx_var and b + 2 < j and \
                                    toks[b + 1].text in ("<=", "<"):
                                stop = b + 2
                                while stop < j and toks[stop].text != ";":
                                    stop += 1
                                try:
                                    bound = consts.eval(toks[b + 2:stop])
                                    if toks[b + 1].text == "<":
                                        bound -= 1
                                except EvalError:
                                    bound = None
                        entries, tfile, tline = tables[table]
                        accepted = entries[:bound + 1] if bound is not None else entries
                        res = {"kind": "level", "accepted": accepted,
                               "accepted_from": "%s:%d" % (tfile, tline)}
                        # an old numeric level table used in the body
                        for b in range(body_open, body_close):
                            x = toks[b]
                            if x.kind == "ident" and x.text in int_tables and \
                                    b + 1 < body_close and toks[b + 1].text == "[":
                                vals = []
                                for v in int_tables[x.text]:
                                    try:
                                        idx = consts.eval(v)
                                        vals.append(entries[idx])
                                    except (EvalError, IndexError):
                                        vals = None
                                        break
                                if vals:
                                    res["accepted_numeric"] = {
                                        str(q): vals[q] for q in range(len(vals))}
                                break
                        return res
            if t.kind == "ident" and t.text in INT_PARSERS and j + 2 < body_close and \
                    toks[j + 1].text == "(" and toks[j + 2].text == var:
                return {"kind": "int"}
    return {"kind": "string"}


def collect_tables(file_toks):
    """String tables `const char* NAME[] = {"..", ...}` and int tables
    `static const int NAME[] = {A, B, ...}` (names -> entries, file, line)."""
    str_tables, int_tables = {}, {}
    for path in sorted(file_toks):
        toks = file_toks[path]
        for i in range(len(toks) - 4):
            if toks[i].pp is not None or toks[i].kind != "ident":
                continue
            if toks[i + 1].text == "[" and toks[i + 2].text == "]" and \
                    toks[i + 3].text == "=" and toks[i + 4].text == "{":
                args, close = split_args(toks, i + 4)
                back = [x.text for x in toks[max(0, i - 3):i]]
                if "char" in back and all(literal_value(a) is not None for a in args
                                          if a):
                    str_tables.setdefault(toks[i].text, (
                        [literal_value(a) for a in args if a], path, toks[i].line))
                elif "int" in back:
                    int_tables.setdefault(toks[i].text, [a for a in args if a])
    return str_tables, int_tables


def table_row_default(toks, i, name):
    """A row {"NAME", getenv("NAME"), "default", "description"} around the read at
    toks[i]: (default, description) or None."""
    # find the enclosing '{' of this row
    depth = 0
    j = i - 1
    while j >= 0:
        t = toks[j]
        if t.kind == "punct" and t.text in (")", "]", "}"):
            depth += 1
        elif t.kind == "punct" and t.text in ("(", "["):
            if depth == 0:
                return None
            depth -= 1
        elif t.kind == "punct" and t.text == "{":
            if depth == 0:
                break
            depth -= 1
        elif t.kind == "punct" and t.text == ";" and depth == 0:
            return None
        j -= 1
    if j < 0:
        return None
    args, close = split_args(toks, j)
    if len(args) < 3 or literal_value(args[0]) != name:
        return None
    rest = [literal_value(a) for a in args[2:]]
    if rest[0] is None:
        return None
    desc = rest[1] if len(rest) > 1 else None
    return rest[0], desc


def scan_tree(tree):
    files, const_files = list_files(tree)
    file_toks = {}
    for rel in files + const_files:
        with open(os.path.join(tree, rel), encoding="utf-8", errors="replace") as f:
            file_toks[rel] = tokenize(f.read())
    global_defines = collect_defines(file_toks)
    consts = ConstEval(global_defines)
    local_consts = {}

    def consts_for(rel):
        """The file's own #defines before those of the rest of the tree."""
        if rel not in local_consts:
            local = {k: v for k, v in collect_defines(file_toks, [rel]).items() if v}
            local_consts[rel] = ConstEval(dict(global_defines, **local)) if local \
                else consts
        return local_consts[rel]
    macros = find_param_macros(file_toks)
    str_tables, int_tables = collect_tables(file_toks)
    records = []
    notes = []

    # wrappers: function -> {param index: analysis}; to a fixpoint
    funcs_by_file = {rel: find_functions(file_toks[rel]) for rel in files}
    wrappers = {}
    changed = True
    while changed:
        changed = False
        for rel in files:
            toks = file_toks[rel]
            for fname, params, bo, bc in funcs_by_file[rel]:
                for i in range(bo, bc):
                    t = toks[i]
                    if t.kind != "ident" or i + 1 >= bc or toks[i + 1].text != "(":
                        continue
                    if i > 0 and toks[i - 1].text in (".", "->"):
                        continue
                    if t.text in READERS:
                        args, _ = split_args(toks, i + 1)
                        if len(args) == 1 and len(args[0]) == 1 and \
                                args[0][0].text in params:
                            p = params.index(args[0][0].text)
                            key = (fname, p)
                            if key not in wrappers:
                                info = analyse_wrapper(toks, bo, bc, i, consts,
                                                       str_tables, int_tables)
                                info["file"] = rel
                                info["params"] = params
                                wrappers[key] = info
                                changed = True
                    elif t.text != fname and any(k[0] == t.text for k in wrappers):
                        args, _ = split_args(toks, i + 1)
                        for ai, a in enumerate(args):
                            if (t.text, ai) in wrappers and len(a) == 1 and \
                                    a[0].text in params:
                                key = (fname, params.index(a[0].text))
                                if key not in wrappers:
                                    info = dict(wrappers[(t.text, ai)])
                                    info["file"] = rel
                                    info["params"] = params
                                    wrappers[key] = info
                                    changed = True
    wrapper_names = {k[0] for k in wrappers}

    for rel in files:
        toks = file_toks[rel]
        plugin = plugin_of(rel)
        aliases = reader_aliases(toks)
        for i, t in enumerate(toks):
            if t.kind != "ident" or i + 1 >= len(toks) or toks[i + 1].text != "(":
                continue
            if t.pp is not None:
                continue   # a #define body: the macro's own definition or a paste
            rec = None
            if t.text in macros:
                m = macros[t.text]
                args, _ = split_args(toks, i + 1)
                if len(args) <= m["env"]:
                    continue
                if m["style"] == "suffix":
                    suffix = literal_value(args[m["env"]])
                    if suffix is None:
                        notes.append("%s:%d: %s with a non-literal name %r" % (
                            rel, t.line, t.text, source_text(args[m["env"]])))
                        continue
                    name = m["prefix"] + suffix
                    ctype = m["type"] or "int64_t"
                    rec = {"name": name, "kind": TYPE_KINDS.get(ctype, ctype),
                           "type": ctype}
                    if m["default"] is not None and len(args) > m["default"]:
                        d, src = eval_default(args[m["default"]], consts_for(rel))
                        rec["default"] = d
                        rec["default_source"] = src
                    rec["via"] = t.text
                    if m["name"] is not None:
                        rec["param"] = m["accessor"] + source_text(args[m["name"]])
                else:
                    key = args[m["env"]]
                    if len(key) != 1 or key[0].kind != "ident":
                        continue
                    name = key[0].text
                    ctype = source_text(args[m["type_param"]])
                    kind = TYPE_KINDS.get(ctype.replace(" *", "*"), None)
                    accepted = None
                    if m["parser"] is not None and len(args) > m["parser"]:
                        parser = args[m["parser"]]
                        for ptext, pkind in PARSER_KINDS:
                            if any(x.text == ptext for x in parser):
                                if kind is None or pkind != "list":
                                    kind = pkind
                                break
                        opts = []
                        for q in range(len(parser) - 2):
                            if parser[q].text == "makeOption" and \
                                    parser[q + 1].text == "(" and \
                                    parser[q + 2].kind == "str":
                                opts.append(parser[q + 2].value)
                        if opts:
                            accepted = opts
                    rec = {"name": name, "kind": kind or ctype, "type": ctype}
                    d, src = eval_default(args[m["default"]], consts_for(rel))
                    rec["default"] = d
                    rec["default_source"] = src
                    if accepted:
                        rec["accepted"] = accepted
                    if m["flags"] is not None and len(args) > m["flags"]:
                        rec["flags"] = sorted(
                            x.text for x in args[m["flags"]] if x.kind == "ident")
                    if m["desc"] is not None and len(args) > m["desc"]:
                        desc = literal_value(args[m["desc"]])
                        if desc is not None:
                            rec["description"] = desc
                    rec["via"] = t.text
                    if m["name"] is not None:
                        rec["param"] = source_text(args[m["name"]])
            elif is_reader_call(toks, i, aliases):
                args, _ = split_args(toks, i + 1)
                name = literal_value(args[0]) if len(args) == 1 else None
                if name is None:
                    arg = source_text(args[0]) if args else ""
                    if args and sum(x.kind == "ident" for x in args[0]) >= 2:
                        continue   # a declaration: const char* ncclGetEnv(const char* name)
                    in_func = any(bo < i < bc and arg in params
                                  for _, params, bo, bc in funcs_by_file[rel])
                    if not in_func:
                        notes.append("%s:%d: %s(%s): name not a literal" % (
                            rel, t.line, t.text, arg))
                    continue
                if not name.startswith(NAME_PREFIX):
                    continue
                rec = {"name": name, "kind": "string", "type": "const char*"}
                row = table_row_default(toks, i, name)
                if row is not None:
                    rec["default"] = row[0]
                    if row[1] is not None:
                        rec["description"] = row[1]
                rec["via"] = t.text
            elif t.text in wrapper_names and not (i > 0 and toks[i - 1].text in (
                    ".", "->")):
                args, _ = split_args(toks, i + 1)
                for ai, a in enumerate(args):
                    w = wrappers.get((t.text, ai))
                    name = literal_value(a) if w else None
                    if name is None or not name.startswith(NAME_PREFIX):
                        continue
                    r = {"name": name, "kind": w["kind"]}
                    for fld in ("accepted", "accepted_from", "accepted_numeric"):
                        if fld in w:
                            r[fld] = w[fld]
                    for pi, pname in enumerate(w["params"]):
                        if pname and re.match(r"(?i)^(deft?|default)", pname) and \
                                pi < len(args):
                            d, src = eval_default(args[pi], consts_for(rel))
                            r["default"] = d
                            r["default_source"] = src
                    r["via"] = t.text
                    r["file"] = rel
                    r["line"] = t.line
                    if plugin:
                        r["plugin"] = plugin
                    records.append(r)
                continue
            if rec is None:
                continue
            rec["file"] = rel
            rec["line"] = t.line
            if plugin:
                rec["plugin"] = plugin
            records.append(rec)

    # NCCL_* literals nothing above explains
    names = {r["name"] for r in records}
    for rel in files:
        for i, t in enumerate(file_toks[rel]):
            if t.kind == "str" and NAME_RE.match(t.value) and t.value not in names:
                prev = file_toks[rel][i - 2].text if i >= 2 else ""
                notes.append("%s:%d: literal %s not classified (after %s)" % (
                    rel, t.line, t.value, prev))

    def sort_key(r):
        return (r["name"], r["file"], r["line"], json.dumps(r, sort_keys=True))
    records.sort(key=sort_key)
    macro_list = [{"macro": m["macro"], "file": m["file"], "line": m["line"]}
                  for m in sorted(macros.values(), key=lambda m: (m["file"], m["line"]))]
    return macro_list, records, notes


def git_head(tree):
    try:
        out = subprocess.run(["git", "-C", tree, "rev-parse", "HEAD"],
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def write_json(path, doc):
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")


# ---------------------------------------------------------------- combine

def primary(records, macros):
    """The site that says most: a parameter macro's, then a wrapper's read (no
    "type"), then a literal read; then one with a default; then file, line."""
    def rank(r):
        if r["via"] in macros or "param" in r:
            v = 0
        elif "type" not in r:
            v = 1
        else:
            v = 2
        return (v, 0 if r.get("default") is not None else 1, r["file"], r["line"])
    return sorted(records, key=rank)[0]


def combine(paths):
    docs = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            docs.append(json.load(f))
    docs.sort(key=lambda d: version_key(d["tag"]))
    by_name = {}
    for d in docs:
        macros = {m["macro"] for m in d.get("macros", [])}
        per = {}
        for r in d["variables"]:
            per.setdefault(r["name"], []).append(r)
        for name, recs in per.items():
            by_name.setdefault(name, []).append((d["tag"], primary(recs, macros), recs))
    out = []
    for name in sorted(by_name):
        hist = by_name[name]
        tag, prim, recs = hist[-1]
        r = {"name": name, "first": hist[0][0], "last": tag,
             "tags": [h[0] for h in hist]}
        for k, v in prim.items():
            if k not in ("name", "file", "line", "plugin"):
                r[k] = v
        r["file"] = prim["file"]
        r["line"] = prim["line"]
        if "plugin" in prim:
            r["plugin"] = prim["plugin"]
        accesses = sorted({x["access"] for x in recs if "access" in x})
        if accesses:   # gen-plugin-env.py's tables: read, set, exported by a script
            r["access"] = accesses
        others = ["%s:%d" % (x["file"], x["line"]) for x in recs if x is not prim]
        if others:
            r["sites"] = others
        for fld, label in (("default", "default_changes"), ("kind", "kind_changes")):
            changes = []
            for htag, hp, _ in hist:
                v = hp.get(fld)
                if not changes or changes[-1][fld] != v:
                    changes.append({"tag": htag, fld: v})
            if len(changes) > 1:
                r[label] = changes
        out.append(r)
    repositories = sorted({d["repository"] for d in docs})
    if len(repositories) != 1:
        raise SystemExit("gen-nccl-env: --combine takes tables of one repository, not %s" %
                         ", ".join(repositories))
    return {"generated_by": docs[0]["generated_by"], "repository": repositories[0],
            "tags": [{"tag": d["tag"], "commit": d["commit"]} for d in docs],
            "variables": out}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", help="an extracted NVIDIA/nccl source tree")
    ap.add_argument("--tag", help="the tree's tag, e.g. v2.30.7-1")
    ap.add_argument("--commit", help="the tag's commit (40 hex digits)")
    ap.add_argument("--combine", nargs="+", metavar="JSON",
                    help="per-tag files to merge into one table")
    ap.add_argument("--out", help="output file")
    ap.add_argument("--profile", choices=sorted(PROFILES), default="nccl",
                    help="what the tree is: NVIDIA/nccl (default) or ROCm/rccl")
    a = ap.parse_args()
    prof = use_profile(a.profile)
    if a.combine:
        if a.tree or not a.out:
            ap.error("--combine takes per-tag files and --out")
        write_json(a.out, combine(a.combine))
        return 0
    if not a.tree or not a.tag:
        ap.error("--tree and --tag are required (or --combine)")
    commit = a.commit or git_head(a.tree)
    if not commit:
        ap.error("%s is not a git checkout: pass --commit" % a.tree)
    macros, records, notes = scan_tree(a.tree)
    for n in notes:
        print("gen-nccl-env: %s: %s" % (a.tag, n), file=sys.stderr)
    out = a.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "data", "nccl", prof["dir"], a.tag + ".json")
    write_json(out, {"generated_by": GENERATED_BY, "repository": REPOSITORY,
                     "tag": a.tag, "commit": commit, "macros": macros,
                     "variables": records})
    print("gen-nccl-env: %s: %d records, %d variables" % (
        a.tag, len(records), len({r["name"] for r in records})), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
