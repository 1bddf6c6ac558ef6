#!/usr/bin/env python3
"""Print the failure knowledge base (data/failures/*.json) as the Markdown tables of
docs/failures.md ("Signatures and causes"): python3 scripts/failures-table.py; with
--update docs/failures.md, write them between the markers <!-- signatures: begin --> and
<!-- signatures: end --> of that file. tests/failures hold the docs to naming every
signature and cause the data has."""
import contextlib
import glob
import io
import sys
import json
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
ORDER = ["nccl-net", "nccl-more", "nccl-shm-p2p", "nccl-init", "cuda", "pytorch", "plugins", "nccl-tests",
         "shapes", "notes"]


def cite(source):
    if source.get("file"):
        return "%s %s `%s:%d`" % (source["repo"], source["ref"], source["file"], source["line"])
    return "%s: %s" % (source["repo"], source["url"])


def cell(text):
    return text.replace("|", "\\|").replace("\n", " ")


def main():
    causes = {}
    docs = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "data/failures/*.json"))):
        doc = json.load(open(path))
        name = os.path.basename(path)[:-5]
        docs[name] = doc
        for c in doc.get("causes", []):
            causes[c["id"]] = c
    print("| signature | role | matches | causes (when) | printed by |")
    print("|---|---|---|---|---|")
    for name in ORDER:
        for s in docs[name].get("signatures", []):
            text = "`%s`" % cell(s["format"]) if s.get("format") else "shape: %s" % s["shape"]
            links = []
            for link in s.get("causes", []):
                when = ", ".join("%s %s" % (k, json.dumps(v)) for c in link.get("when", [])
                                 for k, v in c.items())
                links.append(link["cause"] + (" (" + cell(when) + ")" if when else ""))
            print("| `%s` | %s | %s | %s | %s |" % (s["id"], s["role"], text, "; ".join(links) or "-",
                                                  cell(cite(s["source"]))))
    print()
    print("| cause | what | confirm | fix |")
    print("|---|---|---|---|")
    for cid in sorted(causes):
        c = causes[cid]
        print("| `%s` | %s | %s | %s |" % (cid, cell(c["title"]), cell(c["check"]), cell(c["fix"])))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--update":
        table = io.StringIO()
        with contextlib.redirect_stdout(table):
            main()
        text = open(sys.argv[2]).read()
        begin, end = "<!-- signatures: begin -->\n", "<!-- signatures: end -->"
        head, rest = text.split(begin, 1)
        open(sys.argv[2], "w").write(head + begin + table.getvalue() + end + rest.split(end, 1)[1])
    else:
        main()
