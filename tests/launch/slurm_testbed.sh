#!/usr/bin/env bash
# fabricscope under a real Slurm (scripts/testbed/slurm.sh: munged, slurmctld and three
# slurmd in network namespaces with their own host names), one scenario per ctest:
#
#   slurm_testbed.sh FABRICSCOPE srun      srun -N 2 -n 4 with gloo: the env bootstrap from
#                                          SLURM_* (no PMIx), local ranks, the stderr line
#   slurm_testbed.sh FABRICSCOPE pmix      srun --mpi=pmix with the mpi backend; the mpi
#                                          backend under plain srun is a usage error
#   slurm_testbed.sh FABRICSCOPE sbatch    sbatch of deploy/slurm/fabricscope.sbatch
#   slurm_testbed.sh FABRICSCOPE locate    locate, and doctor's drift report, under srun
#   slurm_testbed.sh FABRICSCOPE kill      a task killed -9 mid-run is named by task 0
#   slurm_testbed.sh FABRICSCOPE drain     doctor --drain drains the node its check blames
#                                          (sinfo -R), --resume returns it, and an operator's
#                                          drain is left alone
#
# Root only: exits 77 (ctest's SKIP_RETURN_CODE) with the reason when not root or when
# Slurm, munge or namespaces are missing.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
slurm="$root/scripts/testbed/slurm.sh"
bin=${1:?usage: $0 FABRICSCOPE srun|pmix|sbatch|locate|kill|drain}
scenario=${2:?usage: $0 FABRICSCOPE srun|pmix|sbatch|locate|kill|drain}
label="slurm-$scenario"
failures=0

log() { echo "$label: $*"; }
skip() {
  echo "$label: SKIP: $*"
  exit 77
}
check() {
  local what=$1
  shift
  if "$@"; then
    log "ok   $what"
  else
    log "FAIL $what"
    failures=$((failures + 1))
  fi
}
contains() { grep -qF -- "$2" "$1" || {
  echo "  '$2' not in $1" >&2
  return 1
}; }
equal() { [ "$1" = "$2" ] || {
  echo "  expected '$2', got '$1'" >&2
  return 1
}; }

[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, Slurm daemons)"
for tool in ip nsenter unshare munged slurmctld slurmd srun sbatch scontrol sinfo jq; do
  command -v "$tool" >/dev/null || skip "needs $tool (scripts/install-deps.sh: slurm-wlm munge jq)"
done
id munge >/dev/null 2>&1 || skip "needs the munge user (the munge package)"
# One prefix per scenario: the ctests may run side by side.
case "$scenario" in
  srun) prefix=fss-s ;;
  pmix) prefix=fss-p ;;
  sbatch) prefix=fss-b ;;
  locate) prefix=fss-l ;;
  kill) prefix=fss-k ;;
  drain) prefix=fss-d ;;
  *)
    echo "unknown scenario '$scenario'" >&2
    exit 2
    ;;
esac
ip netns del "$prefix-probe" 2>/dev/null || true
ip netns add "$prefix-probe" 2>/dev/null || skip "cannot create network namespaces here"
ip netns del "$prefix-probe"
bin=$(realpath "$bin")
tmp=$(mktemp -d "/tmp/fabricscope-$label.XXXXXX")
chmod 711 "$tmp"  # munged runs as munge and must reach its directory below

cleanup() {
  local rc=$?
  "$slurm" down "$tmp/bed" >/dev/null 2>&1 || true
  if [ "$failures" -ne 0 ] || [ "$rc" -ne 0 ]; then
    for f in "$tmp"/*.out "$tmp"/*.err "$tmp"/*.out.* "$tmp"/*.err.* "$tmp"/out/* \
      "$tmp"/bed/log/*; do
      [ -f "$f" ] || continue
      echo "===== ${f#"$tmp"/}"
      tail -n 30 "$f"
    done
  fi
  rm -rf "$tmp"
  if ip netns list | grep -qE "^$prefix-"; then
    echo "$label: FAIL: namespaces left behind" >&2
    rc=1
  fi
  exit "$rc"
}
trap cleanup EXIT

"$slurm" up "$tmp/bed" 3 "$prefix" >"$tmp/up.out" 2>&1 || {
  log "FAIL the Slurm test bed did not come up"
  exit 1
}
on_ctl() { "$slurm" run "$tmp/bed" "$@"; }
node1="$prefix-n1"
mkdir -p "$tmp/out"

test_srun() {
  local rc=0
  on_ctl srun -N 2 -n 4 "$bin" run -b 1K -e 64K -f 4 -J "$tmp/out/srun.json" \
    >"$tmp/srun.out" 2>"$tmp/srun.err" || rc=$?
  check "srun -N 2 -n 4 exits 0" equal "$rc" 0
  check "stderr says: env bootstrap from srun without PMIx" contains "$tmp/srun.err" \
    "launcher: env (srun without PMIx"
  check "the store is on the step's first node" contains "$tmp/srun.err" "store on $node1:"
  check "stderr says it once (task 0)" equal "$(grep -c 'launcher:' "$tmp/srun.err")" 1
  # "#  Rank  2 Group  0 Pid  1234 on  HOST device  0 [host] ...": hosts and device indexes.
  check "4 ranks on 2 hosts" equal \
    "$(awk '/^#  Rank/ {print $9}' "$tmp/srun.out" | sort | uniq -c | awk '{print $2 "=" $1}' |
      tr '\n' ' ')" "$prefix-n1=2 $prefix-n2=2 "
  # Each node's second task is local rank 1: its device index (nccl-tests' choice) is 1.
  check "local ranks from SLURM_LOCALID" equal \
    "$(awk '/^#  Rank/ {printf "%s ", $11}' "$tmp/srun.out")" "0 1 0 1 "
  check "every row validated" equal "$(jq '[.tests[] | select(.okay != true)] | length' \
    "$tmp/out/srun.json")" 0
  check "the rows are there" equal "$(jq '.results | length' "$tmp/out/srun.json")" 4
}

test_pmix() {
  local rc=0
  on_ctl srun -N 2 -n 2 --mpi=pmix "$bin" run --backend mpi -b 1K -e 64K -f 4 \
    -J "$tmp/out/pmix.json" >"$tmp/pmix.out" 2>"$tmp/pmix.err" || rc=$?
  check "srun --mpi=pmix with the mpi backend exits 0" equal "$rc" 0
  check "stderr says: MPI through PMIx" contains "$tmp/pmix.err" "launcher: mpi (PMIx"
  check "the mpi backend ran" equal "$(jq -r '.backend' "$tmp/out/pmix.json")" mpi
  check "2 ranks on 2 hosts" equal \
    "$(awk '/^#  Rank/ {printf "%s ", $9}' "$tmp/pmix.out")" "$prefix-n1 $prefix-n2 "
  rc=0
  on_ctl srun -N 2 -n 2 "$bin" run --backend mpi -b 1K -e 4K >"$tmp/nopmix.out" \
    2>"$tmp/nopmix.err" || rc=$?
  check "the mpi backend under plain srun exits 2" equal "$rc" 2
  check "and says to use srun --mpi=pmix" contains "$tmp/nopmix.err" "srun --mpi=pmix"
}

test_sbatch() {
  local job state
  # The shipped script, small: two nodes of two tasks, a short sweep, a generic platform.
  # No GPU on the test bed: the script's --gpus-per-node=8 overridden with 0.
  job=$(on_ctl sbatch --parsable --nodes=2 --ntasks-per-node=2 --gpus-per-node=0 --exclusive=user \
    --output="$tmp/sbatch.out" \
    --export=ALL,FABRICSCOPE="$bin",FABRICSCOPE_OUT="$tmp/out",FABRICSCOPE_SWEEP="-b 1K -e 256K -f 4",FABRICSCOPE_CHECK="--gpus-per-node 2 --intra-node-busbw 0.001 --nics 1 --nic-rate 0.001 --transport TCP" \
    --chdir="$tmp" "$root/deploy/slurm/fabricscope.sbatch")
  log "job $job"
  for _ in $(seq 1 600); do
    state=$(on_ctl squeue -h -j "$job" -o %T 2>/dev/null || true)
    [ -z "$state" ] && break
    sleep 0.25
  done
  check "the job left the queue" equal "$state" ""
  check "the script ran to its end" contains "$tmp/sbatch.out" "fabricscope: results in $tmp/out"
  check "it printed a verdict" grep -qE '^(OK|WARN|CRITICAL)' "$tmp/sbatch.out"
  local c
  for c in all_reduce all_gather; do
    check "check-$c.json has a verdict" equal \
      "$(jq -r '.verdict | test("^(OK|WARN|CRITICAL)$")' "$tmp/out/check-$c.json")" true
    check "run-$c.json holds 4 ranks" equal "$(jq '.nranks' "$tmp/out/run-$c.json")" 4
    check "run-$c.log shows 2 hosts" equal \
      "$(awk '/^#  Rank/ {print $9}' "$tmp/out/run-$c.log" | sort -u | wc -l)" 2
  done
  check "the HTML report was written" grep -q "<html" "$tmp/out/report.html"
  check "locate ran on the allocation's 4 tasks" equal \
    "$(jq '.ranks | length' "$tmp/out/locate.json" 2>/dev/null)" 4
}

test_locate() {
  local rc=0
  # Locate tells a slow node from a slow link with 4 nodes or more: the 4 tasks of 2 hosts
  # are its nodes here (--group-by process).
  on_ctl srun -N 2 -n 4 "$bin" locate --group-by process -b 256K -n 2 -T 60 \
    --json "$tmp/out/locate.json" >"$tmp/locate.out" 2>"$tmp/locate.err" || rc=$?
  # No fault: nobody is named. Four processes on two shared cores may be too noisy to clear
  # every pair, and then locate says so (exit 4, inconclusive) rather than guess.
  check "locate under srun names nobody (exit 0 cleared or 4 inconclusive)" \
    test "$rc" -eq 0 -o "$rc" -eq 4
  check "locate measured 4 processes" equal "$(jq '.nodes | length' "$tmp/out/locate.json")" 4
  check "locate's verdict names nobody" equal "$(jq '.found' "$tmp/out/locate.json")" false
  check "and its status agrees with its exit code" equal \
    "$(jq -r '.status' "$tmp/out/locate.json")" "$([ "$rc" -eq 0 ] && echo clear || echo inconclusive)"
  # The exit code comes from the findings (docs/locate.md, Output): none CRITICAL, and an
  # undecided one exactly when it is 4.
  check "locate's findings name nobody, and are undecided exactly when it exits 4" equal \
    "$(jq -r '"\([.findings[] | select(.severity == "CRITICAL")] | length) \([.findings[] | select(.decided == false)] | length > 0)"' "$tmp/out/locate.json")" \
    "0 $([ "$rc" -eq 4 ] && echo true || echo false)"
  # Doctor's drift: only the third node sets NCCL_ALGO.
  rc=0
  # shellcheck disable=SC2016  # expanded by each task's shell
  on_ctl srun -N 3 -n 3 sh -c '[ "$SLURM_NODEID" = 2 ] && export NCCL_ALGO=Tree; exec "$0" "$@"' \
    "$bin" doctor --format json --timeout 60 >"$tmp/doctor.out" 2>"$tmp/doctor.err" || rc=$?
  check "doctor under srun gathered 3 nodes" equal "$(jq '.nodes | length' "$tmp/doctor.out")" 3
  check "the drift names the third node" equal \
    "$(jq -r '.drift[] | select(.where == "env.NCCL_ALGO") | .outliers[0].host' "$tmp/doctor.out")" \
    "$prefix-n3"
  check "drift makes doctor exit 1" equal "$rc" 1
}

test_kill() {
  local rc=0 pid rows
  # Every task writes its pid; the run loops (-N 0) until task 3 is killed.
  # shellcheck disable=SC2016  # expanded by each task's shell
  (on_ctl srun -N 2 -n 4 --output="$tmp/kill.out.%t" --error="$tmp/kill.err.%t" \
    sh -c 'echo $$ >"$0/pid.$SLURM_PROCID"; exec "$@"' "$tmp" \
    "$bin" run -b 1K -e 16K -f 2 -n 5 -N 0 -T 5 || echo $? >"$tmp/srun.rc") &
  for _ in $(seq 1 400); do
    rows=$(grep -c 'float     sum' "$tmp/kill.out.0" 2>/dev/null || true)
    [ "${rows:-0}" -ge 6 ] && [ -s "$tmp/pid.3" ] && break
    sleep 0.1
  done
  check "rows completed before the kill" test "${rows:-0}" -ge 6
  pid=$(cat "$tmp/pid.3")
  check "task 3 is fabricscope" equal "$(cat "/proc/$pid/comm" 2>/dev/null)" fabricscope
  kill -9 "$pid"
  wait || true
  check "srun exits non-zero" test -s "$tmp/srun.rc"
  check "task 0 names its rank and host" contains "$tmp/kill.err.0" "rank 0 on $node1:"
  # Two ways to end, as in tests/multihost (multihost_kill): Gloo reports the lost peer, and
  # task 0, which serves the store, names the task that never said it was done; or, when
  # Gloo's own waits do not end the call within -T, the watchdog ends task 0 naming the
  # call that did not complete.
  if grep -q 'did not complete within' "$tmp/kill.err.0"; then
    log "ended by the -T watchdog"
    # Any call of a sweep, as src/launch/watchdog.cc names it: a timed all_reduce or the wait
    # for its completion, the barrier before each size, or the all_gather of each rank's time
    # after it (src/launch/engine.cc); as tests/multihost/faults_testbed.sh pins them.
    check "task 0 names the stuck call" grep -qE \
      "rank 0 on $node1: (completion of the enqueued )?(all_reduce of [0-9]+ float elements|all_gather of 1 double elements|barrier) did not complete" \
      "$tmp/kill.err.0"
  else
    check "task 0 names the killed task's process and host" contains "$tmp/kill.err.0" \
      "never finished: process 3 (ranks 3-3 on $prefix-n2)"
  fi
  log "task 0's error: $(grep 'error:' "$tmp/kill.err.0" | head -c 400)"
}

# The node's state and drain reason as sinfo says them: "drained|fabricscope doctor: ...".
node_state() { on_ctl sinfo -h -N -n "$1" -o '%T|%E' | head -n 1; }
starts() { case "$1" in "$2"*) return 0 ;; esac; echo "  '$1' does not start with '$2'" >&2; return 1; }

test_drain() {
  local rc=0 node2="$prefix-n2" node3="$prefix-n3"
  # Node 2's doctor is CRITICAL on node 2 alone: NCCL_P2P_DISABLE=1 in its task's environment
  # (nccl_env; drift names it too). Task 0 (node 1) gathers the reports and drains.
  # shellcheck disable=SC2016  # expanded by each task's shell
  on_ctl srun -N 3 -n 3 sh -c '[ "$SLURM_NODEID" = 1 ] && export NCCL_P2P_DISABLE=1; exec "$0" "$@"' \
    "$bin" doctor --check nccl_env --timeout 60 --drain >"$tmp/drain.out" 2>"$tmp/drain.err" || rc=$?
  check "doctor --drain exits 1 (node 2's CRITICAL finding)" equal "$rc" 1
  check "the report names node 2's finding" contains "$tmp/drain.out" "NCCL_P2P_DISABLE=1"
  check "it says it drained node 2" contains "$tmp/drain.err" \
    "fabricscope: drained node $node2: fabricscope doctor: nccl_env: "
  check "and drained nothing else" equal "$(grep -c 'drained node' "$tmp/drain.err")" 1
  check "sinfo: node 2 drained with doctor's reason" starts "$(node_state "$node2")" \
    "drain"
  check "sinfo -R: the reason starts 'fabricscope doctor: nccl_env:'" starts \
    "$(on_ctl sinfo -R -h -n "$node2" -o '%E')" "fabricscope doctor: nccl_env:"
  # (idle, or mixed while the job completes: not drained.)
  check "nodes 1 and 3 stay in service" equal \
    "$(node_state "$prefix-n1" | grep -c drain) $(node_state "$node3" | grep -c drain)" "0 0"
  # An operator drains node 3.
  on_ctl scontrol update NodeName="$node3" State=DRAIN Reason="operator: bad fan"
  # Node 2 fixed. A drained node takes no job: doctor runs on it (and on node 3) directly.
  rc=0
  "$slurm" on "$tmp/bed" "$node2" "$bin" doctor --check nccl_env --resume \
    >"$tmp/resume2.out" 2>"$tmp/resume2.err" || rc=$?
  check "doctor --resume on node 2 exits 0" equal "$rc" 0
  check "it says it resumed node 2" contains "$tmp/resume2.err" "fabricscope: resumed node $node2"
  # Right after State=RESUME sinfo may say idle* (not responding) until slurmctld hears
  # from the node again.
  local state2
  for _ in $(seq 1 40); do
    state2=$(node_state "$node2" | cut -d'|' -f1)
    [ "$state2" = idle ] && break
    sleep 0.25
  done
  check "sinfo: node 2 idle again" equal "$state2" idle
  rc=0
  "$slurm" on "$tmp/bed" "$node3" "$bin" doctor --check nccl_env --resume \
    >"$tmp/resume3.out" 2>"$tmp/resume3.err" || rc=$?
  check "doctor --resume on node 3 exits 0" equal "$rc" 0
  check "it leaves the operator's drain alone" contains "$tmp/resume3.err" \
    "fabricscope: left alone node $node3: drained by someone else: operator: bad fan"
  check "sinfo: node 3 still drained with the operator's reason" equal \
    "$(node_state "$node3")" "drained|operator: bad fan"
}

"test_$scenario"
log "$failures failure(s)"
[ "$failures" -eq 0 ]
