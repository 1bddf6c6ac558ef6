#!/usr/bin/env python3
"""Checks every recipe under deploy/ without the cloud it is written for.

  recipes_test.py FABRICSCOPE DEPLOY_DIR

For each recipe (Slurm batch script, SkyPilot and dstack task files, Kubernetes JobSet and
MPIJob):
  1. its YAML parses (python3-yaml);
  2. its script runs with `fabricscope` replaced by a shim that adds --dry-run to run, check
     and locate (the real binary: every flag is parsed, the launch environment detected, the
     plan printed, exit 0 required) and records the other subcommands (report, a check of
     files) without running them; srun and mpirun are shims that start their command once;
     the launcher's variables (SKYPILOT_*, DSTACK_*, SLURM_*, JOB_COMPLETION_INDEX) are set
     as on the first node of two;
  3. the NCCL variables it sets pass `fabricscope doctor --check nccl_env` on a node tree
     that has the interfaces they name: no CRITICAL finding, no unknown variable. The one
     WARN allowed is "forces NCCL's choice" (NCCL_ALGO / NCCL_PROTO), which the GPUDirect-TCPX
     and -TCPXO platforms need (data/platforms/).
Exit 0 when every recipe passes; prints what failed and why.
"""
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import yaml

NCCL_ASSIGNMENT = re.compile(r"\b(NCCL_[A-Z0-9_]+)=([^\s\"'\\]+)")

SHIM = """#!/bin/bash
# fabricscope as the recipe test sees it: run, check and locate with --dry-run.
log={log}
echo "+ fabricscope $*" >>"$log"
case "$1" in
  run|check|locate)
    cmd=$1
    shift
    out=$({bin} "$cmd" --dry-run "$@" 2>&1)
    rc=$?
    printf '%s\\n' "$out" >>"$log"
    echo "rc=$rc" >>"$log"
    printf '%s\\n' "$out"
    exit $rc
    ;;
  *) echo "rc=skipped" >>"$log" ;;
esac
"""

# srun / mpirun: drop the launcher's own options, run the command once (as task 0).
LAUNCHER_SHIM = """#!/bin/bash
while [ $# -gt 0 ]; do
  case "$1" in
    fabricscope|*/fabricscope|sh|bash) break ;;
    -x|-np|-n|-N|--bind-to|--map-by|--mca) shift 2 ;;
    *) shift ;;
  esac
done
exec "$@"
"""

# As on the first node of two: what each launcher sets.
LAUNCH_ENV = {
    "skypilot": {
        "SKYPILOT_NODE_RANK": "0",
        "SKYPILOT_NUM_NODES": "2",
        "SKYPILOT_NODE_IPS": "10.0.0.1\n10.0.0.2",
        "SKYPILOT_NUM_GPUS_PER_NODE": "8",
    },
    "dstack": {
        "DSTACK_NODE_RANK": "0",
        "DSTACK_NODES_NUM": "2",
        "DSTACK_MASTER_NODE_IP": "10.0.0.1",
        "DSTACK_GPUS_PER_NODE": "8",
    },
    "kubernetes": {"JOB_COMPLETION_INDEX": "0"},
    "slurm": {"SLURM_JOB_ID": "1", "SLURM_JOB_NUM_NODES": "2"},
}


def k8s_containers(doc):
    """Every container spec in a JobSet or MPIJob, wherever the pod templates sit."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("containers"), list):
                found.extend(node["containers"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(doc)
    return found


def recipe_parts(path):
    """(kind, environment, script) of a recipe; the script is what runs fabricscope."""
    if path.suffix == ".sbatch":
        return "slurm", {}, path.read_text()
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    if not docs:
        raise ValueError("no YAML document")
    doc = docs[0]
    if "resources" in doc and "run" in doc:  # SkyPilot
        env = {k: str(v) for k, v in (doc.get("envs") or {}).items()}
        return "skypilot", env, doc["run"]
    if doc.get("type") == "task":  # dstack
        env = {}
        for item in doc.get("env") or []:
            name, _, value = str(item).partition("=")
            env[name] = value
        commands = [c for c in doc["commands"] if "fabricscope" in c and "cmake" not in c]
        return "dstack", env, "\n".join(commands)
    if "apiVersion" in doc:  # Kubernetes
        env, scripts = {}, []
        for c in k8s_containers(doc):
            for e in c.get("env") or []:
                if "value" in e:
                    env[e["name"]] = str(e["value"])
            args = (c.get("command") or []) + (c.get("args") or [])
            scripts += [a for a in args if "fabricscope" in a]
        return "kubernetes", env, "\n".join(scripts)
    raise ValueError("neither SkyPilot, dstack nor Kubernetes")


def nccl_variables(env, script):
    out = {k: v for k, v in env.items() if k.startswith("NCCL_")}
    for name, value in NCCL_ASSIGNMENT.findall(script):
        out.setdefault(name, value)
    return out


def node_tree(root, variables):
    """A node with every interface the variables name (eth0..), for the lint."""
    names = {"eth0"}
    for name, value in variables.items():
        if name.endswith("IFNAME") or name.endswith("CTRL_DEV"):
            for item in value.lstrip("^=").split(","):
                names.add(item.split(":")[0])
    for n in names:
        (root / "sys/class/net" / n).mkdir(parents=True, exist_ok=True)


def lint(binary, variables, work):
    root = work / "node"
    node_tree(root, variables)
    env = {"PATH": "/usr/bin:/bin", **variables}
    done = subprocess.run(
        [binary, "doctor", "--check", "nccl_env", "--root", str(root), "--format", "json"],
        env=env, capture_output=True, text=True, timeout=60)
    report = json.loads(done.stdout)
    problems = []
    for check in report["nodes"][0]["checks"]:
        for f in check.get("findings", []):
            allowed = f["status"] == "WARN" and "forces NCCL's choice" in f["message"]
            if f["status"] in ("CRITICAL", "WARN") and not allowed:
                problems.append(f"{f['status']}: {f['message']}")
    return problems


def dry_run(binary, kind, env, script, work):
    shims = work / "bin"
    shims.mkdir()
    log = work / "fabricscope.log"
    (shims / "fabricscope").write_text(SHIM.format(log=log, bin=binary))
    for name in ("srun", "mpirun"):
        (shims / name).write_text(LAUNCHER_SHIM)
    for shim in shims.iterdir():
        shim.chmod(0o755)
    results = work / "results"
    results.mkdir()
    script = script.replace("/results", str(results))
    run_env = {"PATH": f"{shims}:/usr/bin:/bin", "HOME": str(work), **env, **LAUNCH_ENV[kind]}
    if kind == "slurm":
        run_env["FABRICSCOPE_OUT"] = str(results)
    done = subprocess.run(["bash", "-c", script], env=run_env, cwd=work, capture_output=True,
                          text=True, timeout=120)
    text = log.read_text() if log.exists() else ""
    problems = []
    calls = re.findall(r"^\+ fabricscope (\S+)", text, re.M)
    if not any(c in ("run", "check", "locate") for c in calls):
        problems.append("no fabricscope run, check or locate in the script")
    if "# fabricscope run: dry run" not in text:
        problems.append("no sweep planned (check -- RUN FLAGS or run)")
    for rc in re.findall(r"^rc=(\S+)", text, re.M):
        if rc not in ("0", "skipped"):
            problems.append(f"a fabricscope command exited {rc}")
    if done.returncode != 0:
        problems.append(f"the script exited {done.returncode}: {done.stderr[-600:]}")
    return problems, text


def main():
    binary, deploy = os.path.realpath(sys.argv[1]), pathlib.Path(sys.argv[2])
    recipes = sorted(deploy.glob("*/*.yaml")) + sorted(deploy.glob("*/*.yml")) + sorted(
        deploy.glob("slurm/*.sbatch"))
    if len(recipes) < 13:
        print(f"FAIL: only {len(recipes)} recipes under {deploy}")
        return 1
    failures = 0
    for path in recipes:
        with tempfile.TemporaryDirectory(prefix="fabricscope-recipe-") as tmp:
            work = pathlib.Path(tmp)
            try:
                kind, env, script = recipe_parts(path)
            except (yaml.YAMLError, ValueError, KeyError) as e:
                print(f"FAIL {path}: does not parse: {e}")
                failures += 1
                continue
            variables = nccl_variables(env, script)
            problems = lint(binary, variables, work) if variables else []
            planned, log = dry_run(binary, kind, env, script, work)
            problems += planned
            name = path.relative_to(deploy)
            if problems:
                failures += 1
                print(f"FAIL {name} ({kind}):")
                for p in problems:
                    print(f"  {p}")
                print("  fabricscope calls:\n    " + log.replace("\n", "\n    "))
            else:
                calls = len(re.findall(r"^\+ fabricscope", log, re.M))
                print(f"ok   {name} ({kind}): parses, {calls} fabricscope calls planned, "
                      f"{len(variables)} NCCL variables lint clean")
    print(f"{len(recipes)} recipes, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
