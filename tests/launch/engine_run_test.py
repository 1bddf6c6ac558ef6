#!/usr/bin/env python3
"""Runs each dstack and SkyPilot recipe as its engine runs it, on two namespace hosts, in the
fresh Debian root of tests/launch/engine_root.sh, with Gloo standing in for the GPU.

  engine_run_test.py SOURCE_DIR BUILD_DIR [RECIPE...]     (default: every dstack and SkyPilot task)
  engine_run_test.py SOURCE_DIR BUILD_DIR --mutations     the old findings put back must fail
  engine_run_test.py SOURCE_DIR BUILD_DIR --mpijob        deploy/kubernetes/mpijob.yaml once
                                                          (run_mpijob says how)

For each recipe, on each of two hosts (network namespaces fs-e1 and fs-e2 on one bridge,
scripts/testbed/netns.sh, 10.77.0.1-2, removed at the end), in the root seen through an
overlay of its own (so each host has its own files, as each node has):
- the job's command is composed as the engine's code composes it:
  dstack (dstackai/dstack@511c318): [shell, "-i", "-c", " && ".join(commands)]
    (server/services/jobs/configurators/base.py `_commands` 258-282, `_shell` 247-256,
    `_join_shell_commands` 576-582, and `_dstack_image_commands` 284-314 when the task names
    no image), run in `working_dir` with the runner's environment: the task's `env`, then
    DSTACK_NODE_RANK, DSTACK_NODES_NUM, DSTACK_MASTER_NODE_IP, DSTACK_NODES_IPS,
    DSTACK_GPUS_PER_NODE, DSTACK_GPUS_NUM, DSTACK_MPI_HOSTFILE, DSTACK_REPO_DIR,
    DSTACK_WORKING_DIR... (runner/internal/runner/executor/executor.go `execJob` 472-517);
    the source at `repos[0].path` (repo.go 53);
  SkyPilot (skypilot-org/skypilot sky/skylet/log_lib.py `make_task_bash_script` and
    `run_bash_command_with_log`, the version the index stores, commit 5e6c56a there):
    `/bin/bash -i SCRIPT`, SCRIPT = "source ~/.bashrc", conda's profile, `cd ~/sky_workdir`,
    `export NAME=<shlex-quoted value>` for the task's envs and SKYPILOT_NODE_RANK,
    SKYPILOT_NODE_IPS (one address a line), SKYPILOT_NUM_NODES, SKYPILOT_NUM_GPUS_PER_NODE,
    then the task's setup (on every node), then its run (on every node); the workdir synced
    to ~/sky_workdir. Not read from SkyPilot's code (its tree, 539 MB, could not be fetched):
    where its backend fills those variables (their names and meaning are its documented ones)
    and how setup's differ from run's;
- the source is where the engine puts it (/fabricscope, ~/sky_workdir): a symlink there to
  the source seen at its own path in the root, so the build (`cmake -S . -B build`) finds the
  tree that engine_root.sh built once (engine_root.sh explains the overlay);
- the knobs a user would set on the command line (`dstack apply -e`, `sky launch --env`):
  FABRICSCOPE_BACKEND=gloo and FABRICSCOPE_GPUS=1 (Gloo stands in for the GPUs: host memory,
  one rank a node), a small FABRICSCOPE_SWEEP;
- TEST DOUBLES for what only the platform has: the platform images' scripts the recipes source
  (nccl-env-profile*.sh, set_nccl_env.sh, container_entry.sh: empty), the TCPX image's
  libnccl.so.2 the SkyPilot VM recipe waits for (empty) and its driver mounts (tmpfs, so
  `mount -o remount,exec` works), TCPXO's /dev/aperture_devices (an empty directory), and for
  dstack's default image (a task without `image`) its `sudo` (runs the command) and `uv` (makes
  an empty venv): none of these is a GPU, a NIC or NCCL, and nothing reads them but the shell.
Checks on each recipe: both hosts exit with the verdict's status (0 OK or WARN, 1 CRITICAL);
each host's install step found the build set installed and its build had nothing to do;
rank 0 wrote check.json with a verdict, run.json of 2 ranks on the 2 hosts with no value
out of bounds, and report.html. Exit 0 when every recipe passes.
Root only (namespaces, mounts, chroot); 77 when not root. The root must have been made by
`engine_root.sh setup` (ctest fixture engine_root).
"""
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile
import time

import yaml

HERE = pathlib.Path(__file__).resolve().parent
SUBNET = "10.77.0"
PREFIX = "fs-e"
SWEEP = "-b 1K -e 64K -f 4 -w 1 -n 5"
USER_ENV = {"FABRICSCOPE_BACKEND": "gloo", "FABRICSCOPE_GPUS": "1", "FABRICSCOPE_SWEEP": SWEEP}
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# The host's side: its own overlays of the root and of the source, /proc, its network
# namespace's /sys, a /dev of its own (a few nodes and a memory /dev/shm), the TEST DOUBLES,
# the engine's source path; then the engine's command in the chroot.
PROLOGUE = r"""
set -euo pipefail
name=$1 state=$2 src=$3 dir=$4 cwd=$5
shift 5
hostname "${HOSTNAME_AS:-$name}"
m=$dir/mnt
mkdir -p "$m" "$dir/up" "$dir/wk" "$dir/sup" "$dir/swk"
mount -t overlay overlay -o "lowerdir=$state/root,upperdir=$dir/up,workdir=$dir/wk" "$m"
mkdir -p "$m$src"
mount -t overlay overlay \
  -o "lowerdir=$state/src-up:$src,upperdir=$dir/sup,workdir=$dir/swk" "$m$src"
mount -t proc proc "$m/proc"
mount -t sysfs sysfs "$m/sys"
mount -t tmpfs -o mode=755 tmpfs "$m/dev"
for d in null zero random urandom tty full; do
  touch "$m/dev/$d"
  mount --bind "/dev/$d" "$m/dev/$d"
done
mkdir -p "$m/dev/shm" "$m/dev/pts"
mount -t tmpfs -o size=256m tmpfs "$m/dev/shm"
ln -sfn /proc/self/fd "$m/dev/fd"
# TEST DOUBLES (see engine_run_test.py): the platform's mounts and files.
mkdir -p "$m/dev/aperture_devices"
for d in /usr/local/tcpx/lib64 /usr/local/nvidia/lib64 /usr/local/nvidia/bin; do
  mkdir -p "$m$d"
  mount -t tmpfs tmpfs "$m$d"
done
for f in /usr/local/tcpx/lib64/libnccl.so.2 /var/lib/tcpxo/lib64/nccl-env-profile-ll128.sh \
  /var/lib/tcpxo/lib64/nccl-env-profile.sh /usr/local/nvidia/lib64/nccl-env-profile.sh \
  /usr/local/gib/scripts/set_nccl_env.sh /scripts/container_entry.sh; do
  mkdir -p "$(dirname "$m$f")"
  printf '#!/bin/sh\n# TEST DOUBLE of the platform image file %s\ntrue\n' "$f" >"$m$f"
  chmod 755 "$m$f"
done
if [ -n "${DOUBLES:-}" ]; then cp -a "$DOUBLES"/. "$m/usr/local/bin/"; fi
if [ -n "${DSTACK_HOSTFILE:-}" ]; then
  # dstack's runner writes these before it starts the job (executor.go: writeDstackProfile,
  # writeMpiHostfile).
  mkdir -p "$m/dstack/mpi"
  printf '%s' "$DSTACK_HOSTFILE" >"$m/dstack/mpi/hostfile"
  : >"$m/dstack/profile"
fi
for l in ${LINKS:-}; do
  mkdir -p "$(dirname "$m$l")"
  rm -rf "${m:?}$l"
  ln -sfn "$src" "$m$l"
done
for f in ${FILES:-}; do
  case "$f" in
    *:*) mkdir -p "$(dirname "$m${f#*:}")"; cp -a "${f%%:*}" "$m${f#*:}" ;;
    *) cp -a "$f" "$m/" ;;
  esac
done
if [ -n "${PHYSICAL:-}" ]; then
  # The engine's path is a symlink to the tree built once; a synced directory's own path is
  # its physical one, and so is this one's with `set -o physical` (read by ~/.bashrc, which
  # SkyPilot's script sources first), so cmake sees the tree it was configured in.
  printf '\n# engine_run_test.py: the workdir is a symlink to the built tree\nset -o physical\n' \
    >>"$m/root/.bashrc"
fi
exec chroot "$m" /usr/bin/env -i -C "$cwd" "$@"
"""

DOUBLES = {
    "sudo": "#!/bin/sh\n# TEST DOUBLE of the image's sudo (root here): runs its command\n"
            "exec \"$@\"\n",
    "uv": "#!/bin/sh\n# TEST DOUBLE of dstack's default image's uv: `uv venv ... DIR` makes DIR\n"
          "# with an empty bin/activate\nfor last; do :; done\nmkdir -p \"$last/bin\"\n"
          ": >\"$last/bin/activate\"\n",
}


def dstack_join(commands):
    """dstack@511c318 base.py `_join_shell_commands` (576-582)."""
    out = []
    for cmd in commands:
        cmd = cmd.strip()
        if cmd.endswith("&"):
            cmd = "{ %s }" % cmd
        out.append(cmd)
    return " && ".join(out)


def dstack_image_commands(doc):
    """dstack@511c318 base.py `_dstack_image_commands` (284-314), DSTACK_DIR=/dstack (72-73)."""
    if doc.get("docker") is True:
        return ["start-dockerd"]
    if doc.get("image") is not None or doc.get("entrypoint") is not None:
        return []
    profile = "/dstack/profile"
    python = "3.12"  # get_default_python_verison(): the server's Python; any version here
    return [
        f"eval $(echo 'export DSTACK_VENV_DIR=/dstack/venv' | sudo tee -a {profile})",
        "sudo rm -rf $DSTACK_VENV_DIR",
        "sudo mkdir $DSTACK_VENV_DIR",
        "sudo chown $(id -u):$(id -g) $DSTACK_VENV_DIR",
        f"uv venv -q --prompt dstack -p {python} --seed $DSTACK_VENV_DIR",
        f"eval $(echo '. $DSTACK_VENV_DIR/bin/activate' | sudo tee -a {profile})",
    ]


def dstack_shell(doc):
    """dstack@511c318 base.py `_shell` (247-256)."""
    shell = doc.get("shell")
    if shell is not None:
        return shell if shell.startswith("/") else "/bin/" + shell
    return "/bin/bash" if doc.get("image") is None else "/bin/sh"


def dstack_jobs(doc, nodes):
    """(argv, env, cwd, links) per node, as dstack's server and runner make them."""
    if doc.get("entrypoint") is not None:
        argv0 = shlex.split(doc["entrypoint"])
        commands = list(doc.get("commands") or [])
    else:
        argv0 = [dstack_shell(doc), "-i", "-c"]
        commands = [dstack_join(dstack_image_commands(doc) + list(doc["commands"]))]
    repo_path = (doc.get("repos") or [{}])[0].get("path", ".")
    cwd = doc.get("working_dir") or "/"
    repo_dir = repo_path if repo_path.startswith("/") else os.path.join(cwd, repo_path)
    env = {}
    for item in doc.get("env") or []:
        name, _, value = str(item).partition("=")
        env[name] = value
    env.update(USER_ENV)
    gpus = int(str(doc["resources"]["gpu"]).split(":")[-1])
    ips = [f"{SUBNET}.{i + 1}" for i in range(nodes)]
    jobs = []
    for rank in range(nodes):
        job_env = {"PATH": IMAGE_PATH, **env,
                   "DSTACK_RUN_ID": "run-1", "DSTACK_JOB_ID": f"job-{rank}",
                   "DSTACK_RUN_NAME": doc.get("name", ""), "DSTACK_REPO_ID": "fabricscope",
                   "DSTACK_REPO_DIR": repo_dir, "DSTACK_WORKING_DIR": cwd,
                   "DSTACK_NODES_IPS": "\n".join(ips), "DSTACK_MASTER_NODE_IP": ips[0],
                   "DSTACK_NODE_RANK": str(rank), "DSTACK_NODES_NUM": str(nodes),
                   "DSTACK_GPUS_PER_NODE": str(gpus), "DSTACK_GPUS_NUM": str(gpus * nodes),
                   "DSTACK_MPI_HOSTFILE": "/dstack/mpi/hostfile", "HOME": "/root"}
        jobs.append([(argv0 + commands, job_env, cwd)])
    doubles = ["sudo", "uv"] if doc.get("image") is None else []
    # Without `repos` no source reaches the container (cli run.py 458-505: no repo, none
    # uploaded): nothing is linked then, as nothing would be there.
    links = [repo_dir] if doc.get("repos") and repo_dir not in ("/", "") else []
    return jobs, links, doubles


def skypilot_script(codegen, env):
    """skypilot sky/skylet/log_lib.py `make_task_bash_script` (DEACTIVATE_SKY_REMOTE_PYTHON_ENV:
    there is no SkyPilot runtime in this root, so it is a no-op)."""
    lines = ["#!/bin/bash", "source ~/.bashrc", "set -a",
             ". $(conda info --base 2> /dev/null)/etc/profile.d/conda.sh > /dev/null 2>&1 || true",
             "set +a", "true  # DEACTIVATE_SKY_REMOTE_PYTHON_ENV: no SkyPilot runtime here",
             "export PYTHONUNBUFFERED=1", "cd ~/sky_workdir"]
    lines += [f"export {k}={shlex.quote(str(v))}" for k, v in env.items()]
    return "\n".join(lines + [codegen, ""])


def skypilot_jobs(doc, nodes, work):
    env = {k: str(v) for k, v in (doc.get("envs") or {}).items()}
    env.update(USER_ENV)
    gpus = str(doc["resources"].get("accelerators", "x:8")).split(":")[-1]
    ips = [f"{SUBNET}.{i + 1}" for i in range(nodes)]
    jobs = []
    for rank in range(nodes):
        sky_env = {**env, "SKYPILOT_NODE_RANK": str(rank), "SKYPILOT_NODE_IPS": "\n".join(ips),
                   "SKYPILOT_NUM_NODES": str(nodes), "SKYPILOT_NUM_GPUS_PER_NODE": gpus}
        phases = []
        for phase in ("setup", "run"):
            if not doc.get(phase):
                continue
            script = work / f"sky_{phase}_{rank}.sh"
            script.write_text(skypilot_script(doc[phase], sky_env))
            phases.append((["/bin/bash", "-i", f"/{script.name}"],
                           {"PATH": IMAGE_PATH, "HOME": "/root"}, "/root", script))
        jobs.append(phases)
    # SkyPilot's VMs and pods give the task's user sudo (its Kubernetes pods define a sudo
    # function for root): the VM recipes' `sudo mount -o remount,exec ...` needs one.
    return jobs, ["/root/sky_workdir"], ["sudo"]


def run_host(rank, state, src, hostdir, argv, env, cwd, links, doubles, files, prefix=PREFIX,
             hostname=""):
    ns = f"{prefix}{rank + 1}"
    cmd = ["ip", "netns", "exec", ns, "unshare", "--uts", "--", "bash", "-c", PROLOGUE,
           "prologue", ns, str(state), str(src), str(hostdir), cwd]
    cmd += [f"{k}={v}" for k, v in env.items()] + argv
    penv = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LINKS": " ".join(links),
            "DOUBLES": str(doubles) if doubles else "", "FILES": " ".join(map(str, files)),
            "PHYSICAL": "1" if "/root/sky_workdir" in links else "", "HOSTNAME_AS": hostname,
            "DSTACK_HOSTFILE": "".join(  # writeMpiHostfile (executor.go 779-818)
                f"{ip} slots={env['DSTACK_GPUS_PER_NODE']}\n"
                for ip in env.get("DSTACK_NODES_IPS", "").split("\n") if ip)}
    return subprocess.Popen(cmd, env=penv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def check_results(name, outputs, codes, hostdirs):
    problems = []
    results = hostdirs[0] / "up/root/fabricscope-results"
    for rank, out in enumerate(outputs):
        if "install-deps: all" not in out or "build set present" not in out:
            problems.append(f"host {rank}: no install step found the build set installed (it "
                            "did not run, or had to install)")
        if "ninja: no work to do" not in out:
            problems.append(f"host {rank}: no build found the tree built once ('ninja: no work "
                            "to do' missing: it did not run, or had work to do)")
    try:
        check = json.loads((results / "check.json").read_text())
        verdict = check["verdict"]
        want = 1 if verdict == "CRITICAL" else 0
        for rank, rc in enumerate(codes):
            if rc != want:
                problems.append(f"host {rank} exited {rc}, the verdict {verdict} means {want}")
    except (OSError, ValueError, KeyError) as e:
        verdict = None
        problems.append(f"no verdict in {results}/check.json: {e}")
    try:
        run = json.loads((results / "run.json").read_text())
        hosts = sorted({d["hostname"] for d in run["config"]["devices"]})
        if run["nranks"] != 2 or hosts != [f"{PREFIX}1", f"{PREFIX}2"]:
            problems.append(f"run.json: {run['nranks']} ranks on {hosts}, not 2 on both hosts")
        if run["backend"] != "gloo" or run["out_of_bounds"]["count"] != 0:
            problems.append(f"run.json: backend {run['backend']}, out of bounds "
                            f"{run['out_of_bounds']}")
    except (OSError, ValueError, KeyError) as e:
        problems.append(f"no run.json of the sweep: {e}")
    if not (results / "report.html").is_file():
        problems.append("no report.html")
    return problems, verdict


def run_recipe(path, name, state, src, work):
    doc = yaml.safe_load(path.read_text())
    nodes = 2
    if name.startswith("dstack/"):
        jobs, links, doubles_needed = dstack_jobs(doc, nodes)
    else:
        jobs, links, doubles_needed = skypilot_jobs(doc, nodes, work)
    doubles = None
    if doubles_needed:
        doubles = work / "doubles"
        doubles.mkdir(exist_ok=True)
        for tool in doubles_needed:
            (doubles / tool).write_text(DOUBLES[tool])
            (doubles / tool).chmod(0o755)
    hostdirs = [work / f"h{rank}" for rank in range(nodes)]
    outputs, codes = [""] * nodes, [0] * nodes
    for phase in range(len(jobs[0])):  # SkyPilot: setup on every node, then run on every node
        procs = []
        for rank in range(nodes):
            argv, env, cwd, *script = jobs[rank][phase]
            (hostdirs[rank]).mkdir(exist_ok=True)
            procs.append(run_host(rank, state, src, hostdirs[rank], argv, env, cwd, links,
                                  doubles, script))
        for rank, proc in enumerate(procs):
            try:
                out, _ = proc.communicate(timeout=180)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
                out += "\n(timed out after 180 s)"
            outputs[rank] += out
            codes[rank] = proc.returncode
        if any(codes) and phase + 1 < len(jobs[0]):
            break  # a failed setup: SkyPilot does not start the run
    problems, verdict = check_results(name, outputs, codes, hostdirs)
    return problems, verdict, outputs


MPI_PREFIX = "fs-m"


def run_mpijob(src, state, work, manifest=None):
    """The MPIJob once: its workers' sshd and its launcher's command as kubeflow/mpi-operator@
    caa3c47 builds them (pkg/controller/mpi_job_controller.go: the hostfile of newConfigMap,
    1334-1378, "NAME.JOB.NAMESPACE.svc slots=N"; the launcher's environment, ompiEnvVars
    181-195 and newLauncherPodTemplate 1585-1609; the SSH keys at /root/.ssh, setupSSHOnPod,
    SSHAuthMountPath's default, v2beta1/default.go 65-66), on three namespace hosts (the
    launcher pod and two worker pods), in the fresh root with the image's additions
    (Containerfile: ssh, fabricscope in /usr/local/bin). Returns (problems, exit code)."""
    manifest = manifest or src / "deploy/kubernetes/mpijob.yaml"
    docs = [d for d in yaml.safe_load_all(manifest.read_text()) if d]
    job = docs[0]
    name, namespace = job["metadata"]["name"], "default"
    spec = job["spec"]
    slots = spec["slotsPerWorker"]
    launcher_c = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    worker_c = spec["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    workers = spec["mpiReplicaSpecs"]["Worker"]["replicas"]
    fqdn = [f"{name}-worker-{i}.{name}.{namespace}.svc" for i in range(workers)]
    (work / "hostfile").write_text("".join(f"{h} slots={slots}\n" for h in fqdn))
    hosts = "127.0.0.1 localhost\n" + f"{SUBNET}.1 {name}-launcher.{name}.{namespace}.svc " \
        f"{name}-launcher\n" + "".join(f"{SUBNET}.{i + 2} {h} {name}-worker-{i}\n"
                                      for i, h in enumerate(fqdn))
    (work / "hosts").write_text(hosts)
    key = work / "id_rsa"
    subprocess.run(["ssh-keygen", "-q", "-t", "ecdsa", "-N", "", "-f", str(key)], check=True)
    (work / "authorized_keys").write_text((work / "id_rsa.pub").read_text())
    (work / "results").mkdir()
    files = [f"{work}/hosts:/etc/hosts", f"{key}:/root/.ssh/id_rsa",
             f"{work}/authorized_keys:/root/.ssh/authorized_keys",
             f"{src}/build/fabricscope:/usr/local/bin/fabricscope"]
    base_env = {"PATH": IMAGE_PATH, "HOME": "/root"}
    up = netns("up", str(workers + 1), MPI_PREFIX)
    if up.returncode != 0:
        return [f"netns.sh up: {up.stderr}"], None, ""
    procs = []
    try:
        for i in range(workers):
            env = {**base_env, **{e["name"]: str(e["value"]) for e in worker_c.get("env") or []},
                   "K_MPI_JOB_ROLE": "worker"}
            argv = worker_c["command"] + (worker_c.get("args") or [])
            hostdir = work / f"w{i}"
            hostdir.mkdir()
            procs.append(run_host(i + 1, state, src, hostdir, argv, env, "/", [], None, files,
                                  MPI_PREFIX, f"{name}-worker-{i}"))
        time.sleep(1)  # launcherCreationPolicy: WaitForWorkersReady
        env = {**base_env, **{e["name"]: str(e["value"]) for e in launcher_c.get("env") or []},
               "K_MPI_JOB_ROLE": "launcher",
               "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
               "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
               "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10",
               "OMPI_MCA_orte_set_default_slots": str(slots),
               "NVIDIA_VISIBLE_DEVICES": "", "NVIDIA_DRIVER_CAPABILITIES": "",
               # the test's one change to the manifest: Gloo for the GPUs, a small sweep
               "FABRICSCOPE_BACKEND": "gloo", "FABRICSCOPE_SWEEP": "-b 1K -e 16K -f 4 -w 1 -n 2"}
        argv = launcher_c["command"] + launcher_c["args"]
        hostdir = work / "launcher"
        hostdir.mkdir()
        launcher = run_host(0, state, src, hostdir, argv, env, "/", [], None,
                            files + [f"{work}/hostfile:/etc/mpi/hostfile",
                                     f"{work}/results:/results"],
                            MPI_PREFIX, f"{name}-launcher")
        try:
            out, _ = launcher.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            launcher.kill()
            out, _ = launcher.communicate()
            out += "\n(timed out after 240 s)"
        rc = launcher.returncode
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        netns("down", MPI_PREFIX)
    problems = []
    results = work / "launcher/up/results"
    try:
        verdict = json.loads((results / "check.json").read_text())["verdict"]
        if rc != (1 if verdict == "CRITICAL" else 0):
            problems.append(f"the launcher exited {rc}, its verdict is {verdict}")
    except (OSError, ValueError, KeyError) as e:
        verdict = None
        problems.append(f"no verdict in the launcher's /results/check.json: {e}")
    log = (results / "run.log").read_text() if (results / "run.log").exists() else ""
    ranks = sorted(set(re.findall(r"^#\s+Rank\s+(\d+) .* on\s+(\S+)", log, re.M)))
    on = {h for _, h in ranks}
    if len(ranks) != workers * slots or not all(f"{name}-worker-{i}" in on for i in range(workers)):
        problems.append(f"run.log: {len(ranks)} ranks on {sorted(on)}, not {workers * slots} on "
                        "the workers")
    if not (results / "report.html").is_file():
        problems.append("no report.html in the launcher's /results")
    return problems, (rc, verdict), out + log[-2000:]


# The negative test: the findings of issue 38, put back, must fail when run as the engine runs
# them: (recipe, text, replacement).
MUTATIONS = [
    # dstack runs `bash -c CMD1 CMD2 ...`: only the install step runs.
    ("dstack/a3-megagpu-8g.dstack.yml", "shell: bash\n", 'entrypoint: "bash -c"\n'),
    # no repos: nothing to build in the container.
    ("dstack/a3-highgpu-8g.dstack.yml", "repos:\n  - local_path: ../..\n    path: /fabricscope\n",
     ""),
]


# The MPIJob's: mpirun's ssh without the workers' port reaches no sshd (after the operator's
# ten connection attempts), so no verdict is written.
MPIJOB_MUTATIONS = [("kubernetes/mpijob.yaml", '"-p 2222 -o ConnectionAttempts=10',
                     '"-o ConnectionAttempts=10')]


def mutate(src, name, old, new, copy_name, state, run):
    """Runs recipe `name` with `old` replaced by `new`; returns 1 when that still passes."""
    text = (src / "deploy" / name).read_text()
    if old not in text:
        print(f"FAIL {name}: the mutation's text {old!r} is not in the recipe")
        return 1
    with tempfile.TemporaryDirectory(prefix="engine-", dir=state) as tmp:
        work = pathlib.Path(tmp)
        copy = work / copy_name
        copy.write_text(text.replace(old, new, 1))
        problems = run(copy, work)
    if problems:
        print(f"ok   {name} with {old.strip()!r} -> {new.strip()!r} fails: {problems[0]}")
        return 0
    print(f"FAIL {name} with {old.strip()!r} -> {new.strip()!r}: ran as if nothing changed")
    return 1


def run_mutations(src, state):
    failures = 0
    for name, old, new in MPIJOB_MUTATIONS:
        failures += mutate(src, name, old, new, "mpijob.yaml", state,
                           lambda copy, work: run_mpijob(src, state, work, copy)[0])
    for name, old, new in MUTATIONS:
        failures += mutate(src, name, old, new, "recipe.yml", state,
                           lambda copy, work, name=name: run_recipe(copy, name, state, src,
                                                                    work)[0])
    return failures


def netns(*args):
    return subprocess.run(["bash", str(HERE.parent.parent / "scripts/testbed/netns.sh"), *args],
                          capture_output=True, text=True)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    src = pathlib.Path(sys.argv[1]).resolve()
    build = pathlib.Path(sys.argv[2]).resolve()
    if os.geteuid() != 0:
        print("SKIP: needs root (network namespaces, mounts, chroot)")
        return 77
    deploy = src / "deploy"
    mutations = sys.argv[3:] == ["--mutations"]
    tasks = sorted(deploy.glob("dstack/*.dstack.yml")) + sorted(deploy.glob("skypilot/*.yaml"))
    names = [] if mutations or sys.argv[3:] == ["--mpijob"] else (
        sys.argv[3:] or [str(p.relative_to(deploy)) for p in tasks])
    unknown = [n for n in names if not (deploy / n).is_file()
               or not n.startswith(("dstack/", "skypilot/")) or "/fleets/" in n]
    if unknown:
        print(f"engine_run_test: not a dstack or SkyPilot task under {deploy}: "
              f"{', '.join(unknown)}", file=sys.stderr)
        return 2
    state = pathlib.Path(subprocess.run(
        ["bash", str(HERE / "engine_root.sh"), "state", str(build)],
        capture_output=True, text=True, check=True).stdout.strip())
    if not (state / "root/usr/bin/cmake").exists():
        print(f"FAIL: no prepared root in {state}: run `engine_root.sh setup` first (ctest "
              "fixture engine_root_setup)")
        return 1
    up = netns("up", "2", PREFIX)
    if up.returncode != 0:
        print(f"FAIL: netns.sh up: {up.stderr}")
        return 1
    failures = 0
    try:
        if sys.argv[3:] == ["--mpijob"]:
            with tempfile.TemporaryDirectory(prefix="engine-", dir=state) as tmp:
                problems, result, out = run_mpijob(src, state, pathlib.Path(tmp))
            if problems:
                print("FAIL kubernetes/mpijob.yaml:\n  " + "\n  ".join(problems))
                print("  --- the launcher, last lines:\n    " +
                      "\n    ".join(out.strip().splitlines()[-30:]))
                return 1
            print(f"ok   kubernetes/mpijob.yaml: ran once, {result[1]}, the launcher's exit "
                  f"status {result[0]} kept")
            return 0
        if mutations:
            failures = run_mutations(src, state)
            print(f"{len(MUTATIONS) + len(MPIJOB_MUTATIONS)} mutations, {failures} not caught")
            return 1 if failures else 0
        for name in names:
            t0 = time.monotonic()
            with tempfile.TemporaryDirectory(prefix="engine-", dir=state) as tmp:
                problems, verdict, outputs = run_recipe(deploy / name, name, state, src,
                                                        pathlib.Path(tmp))
            took = time.monotonic() - t0
            if problems:
                failures += 1
                print(f"FAIL {name} ({took:.0f} s):")
                for p in problems:
                    print(f"  {p}")
                for rank, out in enumerate(outputs):
                    print(f"  --- host {rank}, last lines:\n    " +
                          "\n    ".join(out.strip().splitlines()[-25:]))
            else:
                print(f"ok   {name}: installed, built (nothing to do), swept on "
                      f"{PREFIX}1 and {PREFIX}2, verdict {verdict} ({took:.0f} s)")
    finally:
        netns("down", PREFIX)
    print(f"{len(names)} recipes run as their engines run them, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
