#!/usr/bin/env python3
"""Generate the variable tables of NCCL's network plugins and the ROCm runtime, from source.

The same kind of table as scripts/gen-nccl-env.py writes for NVIDIA/nccl (whose tokenizer,
argument splitter and constant evaluator this script imports), for the sources whose
variables doctor lints beside NCCL's:

  tcpx          google/nccl-plugin-gpudirecttcpx   NCCL_GPUDIRECTTCPX_* (GCP a3-high)
  tcpxo         google/nccl-plugin-gpudirect-tcpxo NCCL_FASTRAK_*       (GCP a3-mega)
  aws-ofi-nccl  aws/aws-ofi-nccl                   OFI_NCCL_*, and the FI_*/NCCL_* it
                                                   reads or sets        (AWS EFA)
  rocr          ROCm/ROCR-Runtime                  HSA_*                (AMD GPUs)

Found, not listed:
  * parameter macros: a function-like #define whose body pastes a string literal (or an
    object-like #define that is one, TCPX_ENV_PREFIX) before one of its parameters
    ("OFI_NCCL_" env), or passes its parameter on to such a macro (TCPX_PARAM ->
    __TCPX_PARAM -> NCCL_PARAM1; OFI_NCCL_PARAM_INT -> OFI_NCCL_PARAM); the prefix must
    look like a variable prefix (FOO_). A parameter named deft*/default* gives the
    default, one named type the C type; a macro named *_DEPRECATED / *_REMOVED marks its
    variables so, with the argument named *msg* as the message. A source whose prefix is
    pasted at run time (tcpxo's NCCL_CONST_PARAM: params.cc builds "NCCL_" + name) names
    its macro in PROFILES with the file that holds the prefix literal; the generator
    fails when that literal is not in that file.
  * reads of a literal name: getenv / secure_getenv / GetEnvVar (ROCR's os::GetEnvVar).
  * writes (aws-ofi-nccl sets variables for libfabric and NCCL): setenv / insert_envvar
    with a literal name, or with a variable initialised from literals in the same file
    (FI_EFA_FORK_SAFE or RDMAV_FORK_SAFE by libfabric's version), and the rows
    {"NAME", "value"} of its per-platform environment tables -> "access": "sets".
  * `export NAME=value` in the shell scripts a repository ships for users to source (tcpxo's
    tcpxo_scripts/nccl-env-profile.sh) -> "access": "exported": names a vendor's profile
    sets whether or not the plugin's source reads them.
Names outside the profile's prefixes are skipped; reads of non-literal names are listed on
stderr.

Regenerate one source at one tag (docs/env.md has the loop over every tag used):

    G=/work/.mirror/aws+aws-ofi-nccl/repo     # the `fetch` tool, or git clone --bare
    t=v1.21.1
    rm -rf /tmp/src-$t && mkdir -p /tmp/src-$t && git --git-dir=$G archive $t | tar -x -C /tmp/src-$t
    python3 scripts/gen-plugin-env.py --source aws-ofi-nccl --tree /tmp/src-$t --tag $t \\
        --commit $(git --git-dir=$G rev-parse "$t^{commit}") --out data/nccl/aws-ofi-nccl/$t.json
    python3 scripts/gen-nccl-env.py --combine data/nccl/aws-ofi-nccl/*.json \\
        --out data/nccl/aws-ofi-nccl-variables.json

Per-tag output: {"generated_by", "repository", "tag", "commit", "macros", "variables"} as
gen-nccl-env.py writes it; a record adds "access" ("reads" or "sets"), "value" (what a
write sets), "status"/"message" (deprecated or removed parameters), "min"/"max" (tcpxo's
bounds). The combined table (gen-nccl-env.py --combine) is the same shape as NCCL's.

Standard library only.
"""

import argparse
import importlib.util
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
_spec = importlib.util.spec_from_file_location("gen_nccl_env",
                                               os.path.join(HERE, "gen-nccl-env.py"))
nccl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nccl)

GENERATED_BY = "scripts/gen-plugin-env.py"
EXTS = (".c", ".cc", ".cpp", ".cu", ".h", ".hpp")
READERS = ("getenv", "secure_getenv", "GetEnvVar")
WRITERS = ("setenv", "insert_envvar")
PREFIX_RE = re.compile(r"^[A-Z][A-Z0-9]*_(?:[A-Z0-9]+_)*$")

PROFILES = {
    "tcpx": {
        "repository": "google/nccl-plugin-gpudirecttcpx",
        "dirs": ("src",),
        # the NCCL adapter is the one built as NCCL's plugin; src/adapter/native is not
        "skip": ("src/adapter/native/",),
        "prefixes": ("NCCL_",),
    },
    "tcpxo": {
        "repository": "google/nccl-plugin-gpudirect-tcpxo",
        "dirs": ("tcpdirect_plugin",),
        "skip": (),
        "prefixes": ("NCCL_",),
        # GCP's environment profile, which its README has users source, exports names too
        "scripts": ("tcpxo_scripts",),
        "macros": {"NCCL_CONST_PARAM": {
            "prefix": "NCCL_", "prefix_file": "tcpdirect_plugin/fastrak_offload/params.cc",
            "env": "env_var_name", "default": "default_value", "min": "min_value",
            "max": "max_value"}},
    },
    "aws-ofi-nccl": {
        "repository": "aws/aws-ofi-nccl",
        "dirs": ("src", "include"),
        "skip": (),
        "prefixes": ("OFI_NCCL_", "FI_", "NCCL_", "RDMAV_"),
        "env_rows": True,
    },
    "rocr": {
        "repository": "ROCm/ROCR-Runtime",
        "dirs": ("src",),
        "skip": (),
        "prefixes": ("HSA_",),
    },
}


def list_files(tree, prof):
    out = []
    for top in prof["dirs"]:
        for root, dirs, names in os.walk(os.path.join(tree, top)):
            dirs.sort()
            for name in sorted(names):
                rel = os.path.relpath(os.path.join(root, name), tree).replace(os.sep, "/")
                if name.endswith(EXTS) and not rel.startswith(prof["skip"]):
                    out.append(rel)
    return sorted(out)


def string_of(tok, strings, depth=0):
    """The string a token stands for: a literal, or an object-like #define of one."""
    if tok.kind == "str":
        return tok.value
    if tok.kind == "ident" and tok.text in strings and depth < 10:
        body = strings[tok.text]
        if body and all(t.kind in ("str", "ident") for t in body):
            parts = [string_of(t, strings, depth + 1) for t in body]
            if all(p is not None for p in parts):
                return "".join(parts)
    return None


def function_macros(file_toks):
    """gen-nccl-env's function-like #defines, with a parameter list continued over lines
    (the tokenizer keeps its backslashes) cleaned."""
    return [(name, [p.replace("\\", "").strip() for p in params], body, path, line)
            for name, params, body, path, line in nccl.function_macros(file_toks)]


def param_index(params, pattern):
    for i, p in enumerate(params):
        if re.match(pattern, p):
            return i
    return None


def macro_info(name, params, env, prefix, path, line):
    info = {"macro": name, "file": path, "line": line, "prefix": prefix, "env": env,
            "default": param_index(params, r"(?i)^(deft?|default)"),
            "type": param_index(params, r"^type$"),
            "msg": param_index(params, r"(?i).*msg"), "min": None, "max": None}
    if name.endswith("_DEPRECATED"):
        info["status"] = "deprecated"
    elif name.endswith("_REMOVED"):
        info["status"] = "removed"
    return info


def find_macros(file_toks, strings, prof):
    """The parameter macros: pasting a prefix before a parameter, or forwarding to one."""
    defs = function_macros(file_toks)
    macros = {}
    for name, params, body, path, line in defs:
        for k in range(len(body) - 1):
            a, b = body[k], body[k + 1]
            if b.kind != "ident" or b.text not in params:
                continue
            prefix = string_of(a, strings)
            if prefix is not None and PREFIX_RE.match(prefix) and name not in macros:
                macros[name] = macro_info(name, params, params.index(b.text), prefix, path,
                                          line)
    changed = True
    while changed:
        changed = False
        for name, params, body, path, line in defs:
            if name in macros:
                continue
            for k in range(len(body) - 1):
                callee = macros.get(body[k].text)
                if callee is None or body[k + 1].text != "(":
                    continue
                args, _ = nccl.split_args(body, k + 1)
                if callee["env"] >= len(args):
                    continue
                env_arg = args[callee["env"]]
                if len(env_arg) != 1 or env_arg[0].text not in params:
                    continue
                info = macro_info(name, params, params.index(env_arg[0].text),
                                  callee["prefix"], path, line)
                if callee["type"] is not None and callee["type"] < len(args) and \
                        info["type"] is None:
                    info["ctype"] = nccl.source_text(args[callee["type"]])
                for fld in ("status",):
                    if fld in callee and fld not in info:
                        info[fld] = callee[fld]
                macros[name] = info
                changed = True
                break
    for name, spec in prof.get("macros", {}).items():
        found = [d for d in defs if d[0] == name]
        if not found:
            raise SystemExit("gen-plugin-env: no #define %s in the tree" % name)
        _, params, _, path, line = found[0]
        where = [t for t in file_toks.get(spec["prefix_file"], [])
                 if t.kind == "str" and t.value == spec["prefix"]]
        if not where:
            raise SystemExit("gen-plugin-env: %s: the prefix %r of %s is not there" % (
                spec["prefix_file"], spec["prefix"], name))
        info = macro_info(name, params, params.index(spec["env"]), spec["prefix"], path, line)
        info["default"] = params.index(spec["default"])
        info["min"] = params.index(spec["min"])
        info["max"] = params.index(spec["max"])
        info["prefix_from"] = "%s:%d" % (spec["prefix_file"], where[0].line)
        macros[name] = info
    return macros


def literal_name(arg, strings):
    """The name an argument spells: adjacent literals and string #defines."""
    if not arg:
        return None
    parts = [string_of(t, strings) for t in arg]
    return "".join(parts) if all(p is not None for p in parts) else None


def initialiser_names(toks, var, before, strings):
    """String literals of `var = ...;` (or `var(...)`) in the file before index `before`."""
    names = []
    for i in range(before - 1, 0, -1):
        if toks[i].text == var and toks[i + 1].text == "=" and toks[i - 1].text != ".":
            j = i + 2
            while j < len(toks) and toks[j].text != ";":
                s = string_of(toks[j], strings)
                if s is not None:
                    names.append((s, toks[j].line))
                j += 1
            break
    return names


EXPORT_RE = re.compile(r"^\s*export\s+([A-Z][A-Z0-9_]*)=(\"[^\"]*\"|'[^']*'|\S*)")


def exported(tree, prof):
    """(file, line, name, value) of `export NAME=value` in the shell scripts the
    repository ships for users to source (profile "scripts")."""
    out = []
    for top in prof.get("scripts", ()):
        for root, dirs, names in os.walk(os.path.join(tree, top)):
            dirs.sort()
            for name in sorted(names):
                if not name.endswith(".sh"):
                    continue
                path = os.path.join(root, name)
                rel = os.path.relpath(path, tree).replace(os.sep, "/")
                with open(path, encoding="utf-8", errors="replace") as f:
                    for n, text in enumerate(f, 1):
                        m = EXPORT_RE.match(text)
                        if m:
                            out.append((rel, n, m.group(1), m.group(2).strip("\"'")))
    return out


def scan(tree, prof):
    files = list_files(tree, prof)
    file_toks = {}
    for rel in files:
        with open(os.path.join(tree, rel), encoding="utf-8", errors="replace") as f:
            file_toks[rel] = nccl.tokenize(f.read())
    defines = nccl.collect_defines(file_toks)
    strings = {k: v for k, v in defines.items() if v}
    consts = nccl.ConstEval(strings)
    macros = find_macros(file_toks, strings, prof)
    prefixes = tuple(prof["prefixes"])
    name_re = re.compile(r"^(?:%s)[A-Z0-9_]+$" % "|".join(prefixes))
    records, notes = [], []

    def add(rec, rel, line):
        if not name_re.match(rec["name"]):
            return
        rec["file"] = rel
        rec["line"] = line
        records.append(rec)

    for rel in files:
        toks = file_toks[rel]
        for i, t in enumerate(toks):
            if t.kind == "punct" and t.text == "{" and prof.get("env_rows") and \
                    t.pp is None and i + 4 < len(toks) and toks[i + 1].kind == "str" and \
                    toks[i + 2].text == "," and toks[i + 3].kind == "str" and \
                    toks[i + 4].text == "}" and name_re.match(toks[i + 1].value):
                add({"name": toks[i + 1].value, "access": "sets", "kind": "string",
                     "value": toks[i + 3].value, "via": "environment table"}, rel,
                    toks[i + 1].line)
                continue
            if t.kind != "ident" or t.pp is not None or i + 1 >= len(toks) or \
                    toks[i + 1].text != "(" or (i > 0 and toks[i - 1].text in (".", "->")
                                                and t.text not in WRITERS):
                continue
            if t.text in macros:
                m = macros[t.text]
                args, _ = nccl.split_args(toks, i + 1)
                if m["env"] >= len(args):
                    continue
                suffix = literal_name(args[m["env"]], strings)
                if suffix is None:
                    if len(args[m["env"]]) == 1 and args[m["env"]][0].kind == "ident":
                        continue   # a forwarding use inside a function
                    notes.append("%s:%d: %s with a non-literal name %s" % (
                        rel, t.line, t.text, nccl.source_text(args[m["env"]])))
                    continue
                rec = {"name": m["prefix"] + suffix, "access": "reads"}
                ctype = None
                if m["type"] is not None and m["type"] < len(args):
                    ctype = nccl.source_text(args[m["type"]])
                ctype = ctype or m.get("ctype") or "int64_t"
                rec["kind"] = nccl.TYPE_KINDS.get(ctype, ctype)
                rec["type"] = ctype
                if m["default"] is not None and m["default"] < len(args):
                    arg = [x for x in args[m["default"]] if x.pp is None]
                    d, src = nccl.eval_default(arg, consts)
                    rec["default"] = d
                    rec["default_source"] = src
                for fld in ("min", "max"):
                    if m[fld] is not None and m[fld] < len(args):
                        rec[fld] = nccl.eval_default(args[m[fld]], consts)[0]
                if "status" in m:
                    rec["status"] = m["status"]
                    if m["msg"] is not None and m["msg"] < len(args):
                        msg = nccl.literal_value(args[m["msg"]])
                        if msg is not None:
                            rec["message"] = msg
                rec["via"] = t.text
                if "prefix_from" in m:
                    rec["prefix_from"] = m["prefix_from"]
                add(rec, rel, t.line)
            elif t.text in READERS or t.text in WRITERS:
                args, _ = nccl.split_args(toks, i + 1)
                if not args:
                    continue
                name = literal_name(args[0], strings)
                access = "reads" if t.text in READERS else "sets"
                if name is not None:
                    rec = {"name": name, "access": access, "kind": "string"}
                    if access == "sets" and len(args) > 1:
                        value = nccl.literal_value(args[1])
                        if value is not None:
                            rec["value"] = value
                    rec["via"] = t.text
                    add(rec, rel, t.line)
                elif access == "sets" and len(args[0]) == 1 and args[0][0].kind == "ident":
                    for n, line in initialiser_names(toks, args[0][0].text, i, strings):
                        add({"name": n, "access": "sets", "kind": "string",
                             "via": t.text + " (" + args[0][0].text + ")"}, rel, line)
                elif sum(x.kind == "ident" for x in args[0]) < 2:
                    notes.append("%s:%d: %s(%s): name not a literal" % (
                        rel, t.line, t.text, nccl.source_text(args[0])))
    for rel, line, name, value in exported(tree, prof):
        add({"name": name, "access": "exported", "kind": "string", "value": value,
             "via": "export"}, rel, line)
    records.sort(key=lambda r: (r["name"], r["file"], r["line"], repr(sorted(r.items()))))
    macro_list = [{"macro": m["macro"], "file": m["file"], "line": m["line"]}
                  for m in sorted(macros.values(), key=lambda m: (m["file"], m["line"]))
                  if any(r["via"] == m["macro"] for r in records)]
    return macro_list, records, notes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", required=True, choices=sorted(PROFILES))
    ap.add_argument("--tree", required=True, help="the source tree, extracted at --tag")
    ap.add_argument("--tag", required=True, help="a tag, or branch@commit for an untagged tree")
    ap.add_argument("--commit", help="the tag's commit (40 hex digits)")
    ap.add_argument("--out", help="output file (default data/nccl/<source>/<tag>.json)")
    a = ap.parse_args()
    prof = PROFILES[a.source]
    commit = a.commit or nccl.git_head(a.tree)
    if not commit:
        ap.error("%s is not a git checkout: pass --commit" % a.tree)
    if not any(os.path.isdir(os.path.join(a.tree, d)) for d in prof["dirs"]):
        ap.error("%s has none of %s: not a %s tree" % (a.tree, ", ".join(prof["dirs"]),
                                                      prof["repository"]))
    macros, records, notes = scan(a.tree, prof)
    for n in notes:
        print("gen-plugin-env: %s: %s" % (a.tag, n), file=sys.stderr)
    out = a.out or os.path.join(HERE, "..", "data", "nccl", a.source, a.tag + ".json")
    nccl.write_json(out, {"generated_by": GENERATED_BY, "repository": prof["repository"],
                          "tag": a.tag, "commit": commit, "macros": macros,
                          "variables": records})
    print("gen-plugin-env: %s %s: %d records, %d variables" % (
        a.source, a.tag, len(records), len({r["name"] for r in records})), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
