#!/usr/bin/env python3
"""Checks every recipe under deploy/ without the cloud it is written for.

  recipes_test.py FABRICSCOPE DEPLOY_DIR
  recipes_test.py --mutations FABRICSCOPE DEPLOY_DIR

For each recipe (Slurm batch script, SkyPilot and dstack task files, dstack fleets and server
configurations, Kubernetes JobSet, MPIJob and GKE manifests):
  0. it has the settings of its row in recipe_table.py, written from the seeds and the
     upstream files they link, each with its file and line: a setting missing or with another
     value fails, and so does a recipe without a row;
  1. its YAML parses (python3-yaml);
  2. its script runs with `fabricscope` replaced by a shim that adds --dry-run to run, check
     and locate (the real binary: every flag is parsed, the launch environment detected, the
     plan printed, exit 0 required) and records the other subcommands (report, a check of
     files) without running them; srun and mpirun are shims that start their command once;
     the launcher's variables (SKYPILOT_*, DSTACK_*, SLURM_*, JOB_COMPLETION_INDEX) are set
     as on the first node of two;
  3. the NCCL variables it sets pass `fabricscope doctor --check nccl_env` on a node tree
     with the interfaces its seed names (recipe_table.py), not the ones the recipe names: no
     CRITICAL finding, no unknown variable. The platform's own scripts the recipe sources
     (set_nccl_env.sh, nccl-env-profile*.sh, container_entry.sh) are TEST DOUBLES in the dry
     run: empty scripts at a temporary path, since this machine has no platform image. The one
     WARN allowed is "forces NCCL's choice" (NCCL_ALGO / NCCL_PROTO), which the GPUDirect-TCPX
     and -TCPXO platforms need (data/platforms/).
Exit 0 when every recipe passes; prints what failed and why.
--mutations: the negative test. Copies of recipes with one required setting removed or
changed must each fail, naming the setting and its source.
"""
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import jsonschema
import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from recipe_table import TABLE  # noqa: E402

SCHEMAS = pathlib.Path(__file__).resolve().parent / "schemas"  # with their sources: SOURCES.md


def closed(schema):
    """A CRD's structural schema with every object closed to unknown fields, as kubectl apply's
    default strict field validation refuses them (a structural schema alone prunes them)."""
    if isinstance(schema, dict):
        out = {k: closed(v) for k, v in schema.items()}
        if ("properties" in schema and "additionalProperties" not in schema
                and not schema.get("x-kubernetes-preserve-unknown-fields")):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [closed(v) for v in schema]
    return schema


def load_schema(name):
    schema = json.loads((SCHEMAS / name).read_text())
    return closed(schema) if name.startswith(("mpijob", "jobset")) else schema


# The engine's schema for a recipe's YAML document: (schema file, what selects it).
def schema_for(name, doc):
    if name.startswith("skypilot/"):
        return "skypilot-task.json"
    if name.startswith("dstack/") and doc.get("type") == "task":
        return "dstack-task.json"
    if name.startswith("dstack/") and doc.get("type") == "fleet":
        return "dstack-fleet.json"
    if name.startswith("dstack/") and name.endswith(".server.yml"):
        return "dstack-server.json"
    if doc.get("kind") == "MPIJob":
        return "mpijob-v2beta1.json"
    if doc.get("kind") == "JobSet":
        return "jobset-v1alpha2.json"
    return None


def schema_problems(path, name):
    """Each YAML document validated against its engine's own schema (schemas/SOURCES.md)."""
    if path.suffix == ".sbatch":
        return []
    problems = []
    for doc in (d for d in yaml.safe_load_all(path.read_text()) if d):
        schema_name = schema_for(name, doc)
        if schema_name is None:
            continue
        validator = jsonschema.Draft7Validator(load_schema(schema_name))
        for error in sorted(validator.iter_errors(doc), key=lambda e: list(e.path)):
            where = ".".join(str(p) for p in error.path) or "(top)"
            problems.append(f"schema {schema_name} (schemas/SOURCES.md): {where}: "
                            f"{error.message[:300]}")
    return problems


# NAME=value, NAME="value" or NAME='value', in a script or a dstack env item.
ASSIGNMENT = re.compile(r"""\b([A-Z][A-Z0-9_]*)=(?:"([^"]*)"|'([^']*)'|([^\s"'\\;]+))""")

# The platform's files the recipes source or run (TEST DOUBLES in the dry run, see above).
PLATFORM_PATHS = ["/var/lib/tcpxo/lib64", "/usr/local/gib", "/usr/local/nvidia/lib64",
                  "/scripts/container_entry.sh", "/dev/aperture_devices"]
PLATFORM_STUBS = ["var/lib/tcpxo/lib64/nccl-env-profile-ll128.sh",
                  "var/lib/tcpxo/lib64/nccl-env-profile.sh",
                  "usr/local/nvidia/lib64/nccl-env-profile.sh",
                  "usr/local/gib/scripts/set_nccl_env.sh", "scripts/container_entry.sh"]

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
    if any("apiVersion" in d for d in docs):  # Kubernetes: every document of the file
        env, scripts = {}, []
        for c in (c for d in docs for c in k8s_containers(d)):
            for e in c.get("env") or []:
                if "value" in e:
                    env[e["name"]] = str(e["value"])
            args = (c.get("command") or []) + (c.get("args") or [])
            scripts += [a for a in args if "fabricscope" in a]
        return "kubernetes", env, "\n".join(scripts)
    raise ValueError("neither SkyPilot, dstack nor Kubernetes")


def assignments(script):
    """Every NAME=value the script sets, the first one of each name."""
    out = {}
    for name, dq, sq, bare in ASSIGNMENT.findall(script):
        out.setdefault(name, dq or sq or bare)
    return out


def all_variables(env, script):
    """The variables a recipe sets: its environment list, then its script's assignments."""
    out = dict(env)
    for name, value in assignments(script).items():
        out.setdefault(name, value)
    return out


# What reaches NCCL from a script: `export NAME=...` and mpirun's `-x NAME=...` (a shell
# variable such as NCCL_LIB_DIR="..." without export does not).
EXPORTED = re.compile(r"(?:\bexport\s+|(?<!\S)-x\s+)(?=NCCL_)")


def nccl_variables(env, script):
    exported = "\n".join(script[m.end():].split("\n", 1)[0] for m in EXPORTED.finditer(script))
    out = {k: v for k, v in env.items() if k.startswith("NCCL_")}
    for name, value in assignments(exported).items():
        if name.startswith("NCCL_"):
            out.setdefault(name, value)
    return out


def node_tree(root, interfaces, hcas=()):
    """A node with the interfaces (and RDMA devices: an active RoCE v2 port, GID 3) the
    recipe's seed names (recipe_table.py), for the lint."""
    for n in interfaces:
        (root / "sys/class/net" / n).mkdir(parents=True, exist_ok=True)
    for h in hcas:
        port = root / "sys/class/infiniband" / h / "ports/1"
        for sub in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
            (port / sub).mkdir(parents=True, exist_ok=True)
        (port / "state").write_text("4: ACTIVE\n")
        (port / "phys_state").write_text("5: LinkUp\n")
        (port / "link_layer").write_text("Ethernet\n")
        (port / "rate").write_text("400 Gb/sec (4X NDR)\n")
        (port / "gids/3").write_text("0000:0000:0000:0000:0000:ffff:0a00:0001\n")
        (port / "gid_attrs/types/3").write_text("RoCE v2\n")


def without_comments(text):
    """The recipe's text without its comments (#SBATCH lines are settings, not comments)."""
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#") and not stripped.startswith("#SBATCH"):
            continue
        cut = re.search(r"\s#(\s|$)", line)
        lines.append(line[:cut.start()] if cut else line)
    return "\n".join(lines)


def yaml_at(doc, path):
    node = doc
    for part in path.split("."):
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return None
    return node


def k8s_env(path):
    env = {}
    for doc in yaml.safe_load_all(path.read_text()):
        for c in k8s_containers(doc or {}):
            for e in c.get("env") or []:
                if "value" in e:
                    env[e["name"]] = str(e["value"])
    return env


def table_problems(path, name, row):
    """The settings of the recipe's row that it lacks or gives another value."""
    text = path.read_text()
    plain = without_comments(text)
    docs = [] if path.suffix == ".sbatch" else [d for d in yaml.safe_load_all(text) if d]
    doc = docs[0] if docs else {}
    variables = {}
    if row.get("runs"):
        kind, env, script = recipe_parts(path)
        if kind == "kubernetes":
            env = {**k8s_env(path), **env}
        variables = all_variables(env, script)
    problems = []
    for setting in row["settings"]:
        what, source = setting[0], setting[-1]
        if what == "var":
            _, key, want, _ = setting
            got = variables.get(key)
            if got != want:
                problems.append(f"{key}={want} required ({source}); the recipe has "
                                f"{'none' if got is None else key + '=' + got}")
        elif what == "yaml":
            _, key, want, _ = setting
            got = yaml_at(doc, key)
            if got != want:
                problems.append(f"{key}: {want!r} required ({source}); the recipe has {got!r}")
        elif what == "has":
            if setting[1] not in plain:
                problems.append(f"'{setting[1]}' required ({source}); not in the recipe")
        elif what == "lacks":
            if setting[1] in plain:
                problems.append(f"'{setting[1]}' must not be in the recipe ({source})")
    return problems


def lint(binary, variables, interfaces, work, hcas=()):
    root = work / "node"
    node_tree(root, interfaces, hcas)
    env = {"PATH": "/usr/bin:/bin", **variables}
    done = subprocess.run(
        [binary, "doctor", "--check", "nccl_env", "--root", str(root), "--format", "json"],
        env=env, capture_output=True, text=True, timeout=60)
    report = json.loads(done.stdout)
    problems = []
    for check in report["nodes"][0]["checks"]:
        for f in check.get("findings", []):
            allowed = f["severity"] == "WARN" and "forces NCCL's choice" in f["what"]
            if f["severity"] in ("CRITICAL", "WARN") and not allowed:
                problems.append(f"{f['severity']}: {f['what']}")
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
    platform = work / "platform"
    for stub in PLATFORM_STUBS:
        (platform / stub).parent.mkdir(parents=True, exist_ok=True)
        (platform / stub).write_text("# TEST DOUBLE of the platform image's script\ntrue\n")
        (platform / stub).chmod(0o755)
    (platform / "dev/aperture_devices").mkdir(parents=True, exist_ok=True)

    def on_this_machine(text):
        text = text.replace("/results", str(results))
        for prefix in PLATFORM_PATHS:
            text = text.replace(prefix, str(platform) + prefix)
        return text

    script = on_this_machine(script)
    env = {k: on_this_machine(v) for k, v in env.items()}
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


def recipe_files(deploy):
    return (sorted(deploy.glob("*/*.yaml")) + sorted(deploy.glob("*/*.yml")) +
            sorted(deploy.glob("*/fleets/*.yml")) + sorted(deploy.glob("slurm/*.sbatch")))


def check_recipe(binary, deploy, path):
    """(problems, log, summary) of one recipe."""
    name = str(path.relative_to(deploy))
    row = TABLE.get(name)
    if row is None:
        return [f"no row in tests/launch/recipe_table.py for {name}: write its seed's settings "
                "there"], "", ""
    try:
        problems = table_problems(path, name, row) + schema_problems(path, name)
    except (yaml.YAMLError, ValueError, KeyError) as e:
        return [f"does not parse: {e}"], "", ""
    if not row.get("runs"):
        return problems, "", f"{len(row['settings'])} settings as its seed"
    with tempfile.TemporaryDirectory(prefix="fabricscope-recipe-") as tmp:
        work = pathlib.Path(tmp)
        kind, env, script = recipe_parts(path)
        variables = nccl_variables(env, script)
        interfaces = row["interfaces"][0]
        hcas = row.get("rdma", ([], ""))[0]
        problems += lint(binary, variables, interfaces, work, hcas) if variables else []
        planned, log = dry_run(binary, kind, env, script, work)
        problems += planned
    calls = len(re.findall(r"^\+ fabricscope", log, re.M))
    return problems, log, (f"{len(row['settings'])} settings as its seed, {calls} fabricscope "
                           f"calls planned, {len(variables)} NCCL variables lint clean on "
                           f"{','.join(interfaces)}")


def run_all(binary, deploy):
    recipes = recipe_files(deploy)
    if len(recipes) < 20:
        print(f"FAIL: only {len(recipes)} recipes under {deploy}")
        return 1
    failures = 0
    for path in recipes:
        name = path.relative_to(deploy)
        problems, log, summary = check_recipe(binary, deploy, path)
        if problems:
            failures += 1
            print(f"FAIL {name}:")
            for p in problems:
                print(f"  {p}")
            if log:
                print("  fabricscope calls:\n    " + log.replace("\n", "\n    "))
        else:
            print(f"ok   {name}: {summary}")
    missing = sorted(set(TABLE) - {str(p.relative_to(deploy)) for p in recipes})
    for name in missing:
        failures += 1
        print(f"FAIL {name}: in recipe_table.py but not under {deploy}")
    print(f"{len(recipes)} recipes, {failures} failed")
    return 1 if failures else 0


# The negative test: (recipe, text to replace, replacement, what the failure must name).
MUTATIONS = [
    ("skypilot/a3-highgpu-8g.yaml", "  NCCL_GPUDIRECTTCPX_TX_BINDINGS:", "  X_TX_BINDINGS:",
     "NCCL_GPUDIRECTTCPX_TX_BINDINGS"),
    ("skypilot/a3-highgpu-8g.yaml", "enable_gpu_direct: true", "enable_gpu_direct: false",
     "config.gcp.enable_gpu_direct"),
    ("dstack/a3-megagpu-8g.dstack.yml", "NCCL_SOCKET_IFNAME=enp0s12", "NCCL_SOCKET_IFNAME=eth0",
     "NCCL_SOCKET_IFNAME=enp0s12"),
    # The lint on the seed's interfaces: eth0 does not exist on the A3 Mega VM, so NCCL's
    # bootstrap would fail (the recipe's old eth0).
    ("dstack/a3-megagpu-8g.dstack.yml", "NCCL_SOCKET_IFNAME=enp0s12", "NCCL_SOCKET_IFNAME=eth0",
     "CRITICAL"),
    ("dstack/a3-megagpu-8g.dstack.yml", "    source ${NCCL_LIB_DIR}/nccl-env-profile-ll128.sh",
     "    true", "nccl-env-profile-ll128.sh"),
    ("dstack/a4-highgpu-8g.dstack.yml", "  - bash scripts/install-deps.sh build",
     "  - sudo bash scripts/install-deps.sh build", "'sudo' must not be"),
    ("dstack/fleets/a4-highgpu-8g.fleet.dstack.yml", "spot_policy: spot", "spot_policy: auto",
     "spot_policy"),
    ("dstack/fleets/gcp-a4.server.yml", "roce_vpcs: [dstack-mrdma]", "roce_vpcs: []",
     "roce_vpcs"),
    ("skypilot/a4-highgpu-8g.yaml", "  NCCL_NET: gIB", "  NCCL_NET: Socket", "NCCL_NET=gIB"),
    ("kubernetes/mpijob.yaml", '"-p", "2222"', '"-p", "22"', "2222"),
    # Issue 38: how the engines run them.
    ("dstack/a3-megagpu-8g.dstack.yml", "shell: bash\n", 'entrypoint: "bash -c"\n', "entrypoint:"),
    ("dstack/a4-highgpu-8g.dstack.yml", "    path: /fabricscope\n", "", "repos.0.path"),
    ("kubernetes/mpijob.yaml", "    backoffLimit: 0\n", "", "spec.runPolicy.backoffLimit"),
    ("kubernetes/mpijob.yaml", "      restartPolicy: Never\n", "",
     "spec.mpiReplicaSpecs.Launcher.restartPolicy"),
    ("skypilot/a3-megagpu-8g.yaml", "H100-MEGA-80GB:8", "H100-MEGA:8", "H100-MEGA-80GB"),
    # A renamed key, refused by the engine's own schema (schemas/SOURCES.md).
    ("skypilot/a4-highgpu-8g.yaml", "num_nodes: 2", "nodes: 2", "schema skypilot-task.json"),
    ("skypilot/a4-highgpu-8g.yaml", "  network_tier: best", "  network: best",
     "schema skypilot-task.json"),
    ("skypilot/a3-megagpu-8g.yaml", "  network_tier: best", "  network_tier: high",
     "schema skypilot-task.json"),
    ("dstack/a3-highgpu-8g.dstack.yml", "spot_policy: auto", "spot: auto",
     "schema dstack-task.json"),
    ("dstack/a4-highgpu-8g.dstack.yml", "  - local_path: ../..", "  - localpath: ../..",
     "schema dstack-task.json"),
    ("kubernetes/mpijob.yaml", "slotsPerWorker: 8", "slotsPerNode: 8",
     "schema mpijob-v2beta1.json"),
    ("kubernetes/mpijob.yaml", "    cleanPodPolicy: Running", "    cleanupPolicy: Running",
     "schema mpijob-v2beta1.json"),
    ("kubernetes/jobset.yaml", "replicatedJobs:", "replicatedJob:", "schema jobset-v1alpha2.json"),
    ("dstack/fleets/a3-megagpu-8g.fleet.dstack.yml", "placement: cluster", "placements: cluster",
     "schema dstack-fleet.json"),
    ("dstack/fleets/gcp-a4.server.yml", "roce_vpcs: [dstack-mrdma]", "rdma_vpcs: [dstack-mrdma]",
     "schema dstack-server.json"),
    ("kubernetes/gke-gib.yaml", "nvidia.com/gpu: 8",
     "nvidia.com/gpu: 8\n              rdma/rdma_shared_device_a: 1", "rdma_shared_device_a"),
    ("slurm/fabricscope.sbatch", "#SBATCH --gpus-per-node=8\n", "", "--gpus-per-node"),
]


def run_mutations(binary, deploy):
    failures = 0
    for name, old, new, named in MUTATIONS:
        with tempfile.TemporaryDirectory(prefix="fabricscope-mutant-") as tmp:
            copy = pathlib.Path(tmp) / "deploy"
            path = copy / name
            path.parent.mkdir(parents=True)
            text = (deploy / name).read_text()
            if old not in text:
                print(f"FAIL {name}: the mutation's text '{old}' is not in the recipe")
                failures += 1
                continue
            path.write_text(text.replace(old, new, 1))
            problems, _, _ = check_recipe(binary, copy, path)
            if any(named in p for p in problems):
                print(f"ok   {name} with '{old.strip()}' -> '{new.strip()}' fails: "
                      f"{next(p for p in problems if named in p)}")
            else:
                print(f"FAIL {name} with '{old.strip()}' -> '{new.strip()}': not caught "
                      f"({problems or 'no problem found'})")
                failures += 1
    print(f"{len(MUTATIONS)} mutations, {failures} not caught")
    return 1 if failures else 0


def main():
    args = sys.argv[1:]
    mutations = args[:1] == ["--mutations"]
    if mutations:
        args = args[1:]
    binary, deploy = os.path.realpath(args[0]), pathlib.Path(args[1])
    return run_mutations(binary, deploy) if mutations else run_all(binary, deploy)


if __name__ == "__main__":
    sys.exit(main())
