#!/usr/bin/env python3
"""Every Prometheus scrape configuration written in the docs passes Prometheus' own checker.

  scrape_configs_test.py REPO_DIR

Takes each fenced ```yaml block under docs/ and README.md that holds `scrape_configs:`,
writes it to a file and runs `promtool check config FILE` (Debian's prometheus package; the
real Prometheus 2.42 parser). Exit 0 when every block passes and at least one was found;
prints each block's file, line and promtool's answer. A refusal fails the test, so a
configuration a reader would paste into prometheus.yml cannot be one Prometheus refuses.
--self-test: a block with a glob in a directory segment (what docs/watch.md once had) must be
refused, so the test is known to catch it.
Exit 77 when promtool is not installed (scripts/install-deps.sh test installs it).
"""
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```ya?ml\s*$\n(.*?)^```\s*$", re.M | re.S)

BAD = """scrape_configs:
  - job_name: fabricscope
    file_sd_configs:
      - files: ['/shared/nccl-watch/*/*.prom.json']
"""


def blocks(repo):
    for path in sorted((repo / "docs").glob("*.md")) + [repo / "README.md"]:
        if not path.exists():
            continue
        text = path.read_text()
        for m in FENCE.finditer(text):
            body = m.group(1)
            if "scrape_configs:" in body:
                line = text.count("\n", 0, m.start()) + 2
                yield f"{path.relative_to(repo)}:{line}", body


def promtool(body, work):
    config = work / "prometheus.yml"
    config.write_text(body)
    done = subprocess.run(["promtool", "check", "config", str(config)], capture_output=True,
                          text=True, timeout=60)
    return done.returncode, (done.stdout + done.stderr).strip().replace(str(config), "CONFIG")


def main():
    args = sys.argv[1:]
    self_test = args[:1] == ["--self-test"]
    if self_test:
        args = args[1:]
    if len(args) != 1:
        print("usage: scrape_configs_test.py [--self-test] REPO_DIR", file=sys.stderr)
        return 2
    if shutil.which("promtool") is None:
        print("SKIP: promtool not installed (Debian's prometheus; scripts/install-deps.sh test)")
        return 77
    repo = pathlib.Path(args[0])
    with tempfile.TemporaryDirectory(prefix="fabricscope-promtool-") as tmp:
        work = pathlib.Path(tmp)
        if self_test:
            rc, out = promtool(BAD, work)
            if rc != 0 and "not valid for file discovery" in out:
                print(f"ok   a glob in a directory segment is refused: {out.splitlines()[-1]}")
                return 0
            print(f"FAIL promtool accepted a glob in a directory segment (exit {rc}): {out}")
            return 1
        found = list(blocks(repo))
        if not found:
            print(f"FAIL no scrape configuration found under {repo}/docs")
            return 1
        failures = 0
        for where, body in found:
            rc, out = promtool(body, work)
            if rc == 0:
                print(f"ok   {where}: promtool check config passes")
            else:
                failures += 1
                print(f"FAIL {where}: promtool check config exits {rc}:\n  {out}")
        print(f"{len(found)} scrape configurations, {failures} refused")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
