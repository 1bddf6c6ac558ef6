#!/usr/bin/env bash
# Multi-host runs of the real binary on a testbed of three "hosts": network namespaces on
# one bridge, each with its own hostname and address (scripts/testbed/netns.sh).
#
#   multihost_test.sh FABRICSCOPE sweep [MPIRUN]   every collective across 3 hosts: the env
#       launcher, mpirun with the testbed's rsh agent (gloo with 2 threads a process, mpi),
#       each compared row by row with the same sweep in one process
#   multihost_test.sh FABRICSCOPE kill             the process of host 3 is killed -9 mid-run:
#       rank 0 exits with 3 within seconds, names itself and the phase, and the JSON holds
#       the completed rows
#
# Exits 77 (ctest's SKIP_RETURN_CODE) when not root or when namespaces cannot be created.
# Every step has a time limit (60 s; normally a few seconds), so the script ends, and
# removes its testbed, before ctest's TIMEOUT. The testbed is removed on every exit, also
# on SIGTERM or ^C; after a SIGKILL the next run removes it first (`netns.sh up` starts
# from nothing).
set -euo pipefail

[ $# -ge 2 ] || {
  echo "usage: $0 FABRICSCOPE sweep|kill [MPIRUN]" >&2
  exit 2
}
bin=$1
mode=$2
mpirun=${3:-mpirun}
case "$mode" in
  sweep) prefix=fs-t ;;  # not the default fs-h: a developer's own testbed is left alone
  kill) prefix=fs-k ;;
  *)
    echo "unknown mode '$mode'" >&2
    exit 2
    ;;
esac

# shellcheck source=SCRIPTDIR/testbed_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/testbed_lib.sh"
agent="$testbed_root/scripts/testbed/netns-rsh"
testbed_begin multihost "$prefix" "$bin"

"$netns" up 3 "$prefix" >/dev/null
hosts=("${prefix}1" "${prefix}2" "${prefix}3")

# The result rows of a report: size, count, type, redop, root (timings differ run to run).
rows() { grep -E '^ +[0-9]+ ' "$1" | awk '{print $1, $2, $3, $4, $5}'; }

# Checks rank 0's report: 9 collectives validated, NRANKS rank lines, rank r on the host
# of its process (r / THREADS), three distinct hostnames.
check_report() {
  local label=$1 file=$2 nranks=$3 threads=$4 r expected=""
  check "$label: 9 collectives report 'Out of bounds values : 0 OK'" \
    equal "$(grep -c '^# Out of bounds values : 0 OK' "$file" || true)" 9
  check "$label: nothing FAILED" equal "$(grep -c 'FAILED' "$file" || true)" 0
  for ((r = 0; r < nranks; r++)); do
    expected+="$r ${hosts[r / threads]}"$'\n'
  done
  check "$label: $nranks ranks, each on its process's host" equal \
    "$(grep -E '^#  Rank +[0-9]+ ' "$file" | awk '{print $3, $9}' | sort -un)"$'\n' "$expected"
  check "$label: rank lines name 3 different hostnames" equal \
    "$(grep -E '^#  Rank +[0-9]+ ' "$file" | awk '{print $9}' | sort -u | wc -l)" 3
}

compare_rows() {
  local label=$1 multi=$2 single=$3
  check "$label: $(rows "$single" | wc -l) rows, as in one process" \
    diff <(rows "$multi") <(rows "$single")
}

sweep=(--collective all -b 1K -e 64K -f 4 -n 2 -T 60)

# One process per host, RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT as torchrun sets them.
run_env() {
  local label=$1 threads=$2 r
  shift 2
  local pids=()
  for r in 0 1 2; do
    timeout -k 5 60 "$netns" exec "${hosts[r]}" env RANK="$r" WORLD_SIZE=3 LOCAL_RANK=0 \
      MASTER_ADDR=10.77.0.1 MASTER_PORT=29500 "$bin" run -t "$threads" "$@" \
      >"$tmp/$label.out.$r" 2>"$tmp/$label.err.$r" </dev/null &
    pids+=($!)
  done
  for r in 0 1 2; do
    local rc=0
    wait "${pids[r]}" || rc=$?
    check "$label: process $r on ${hosts[r]} exits 0" equal "$rc" 0
  done
}

# mpirun on host 1, its daemons started on hosts 2 and 3 by the rsh agent; every
# connection (daemons' call back, MPI's tcp transport) on the testbed's subnet.
run_mpirun() {
  local label=$1 rc=0
  shift
  timeout -k 5 60 "$netns" exec "${hosts[0]}" "$mpirun" --allow-run-as-root \
    --mca plm_rsh_agent "$agent" -H "${hosts[0]},${hosts[1]},${hosts[2]}" -np 3 \
    --mca oob_tcp_if_include 10.77.0.0/24 --mca btl_tcp_if_include 10.77.0.0/24 \
    --mca btl self,tcp --bind-to none \
    "$bin" run "$@" >"$tmp/$label.out" 2>"$tmp/$label.err" </dev/null &
  wait $! || rc=$?
  check "$label: mpirun exits 0" equal "$rc" 0
}

run_single() {
  local label=$1 rc=0
  shift
  timeout -k 5 60 "$bin" run "$@" >"$tmp/$label.out" 2>"$tmp/$label.err" </dev/null &
  wait $! || rc=$?
  check "$label: exits 0" equal "$rc" 0
}

test_sweep() {
  local t0
  t0=$(now_ms)
  run_env env 2 "${sweep[@]}"
  check_report "env launcher, 3 hosts x 2 threads" "$tmp/env.out.0" 6 2
  check "env launcher: only rank 0 reports" equal "$(cat "$tmp/env.out.1" "$tmp/env.out.2")" ""
  log "env launcher: $(($(now_ms) - t0)) ms"

  t0=$(now_ms)
  run_mpirun mpirun-gloo --backend gloo -t 2 "${sweep[@]}"
  check_report "mpirun gloo, 3 hosts x 2 threads" "$tmp/mpirun-gloo.out" 6 2
  check "mpirun gloo: backend=gloo" contains "$tmp/mpirun-gloo.out" "backend=gloo"
  log "mpirun gloo: $(($(now_ms) - t0)) ms"

  t0=$(now_ms)
  run_mpirun mpirun-mpi --backend mpi "${sweep[@]}"
  check_report "mpirun mpi, 3 hosts" "$tmp/mpirun-mpi.out" 3 1
  check "mpirun mpi: backend=mpi" contains "$tmp/mpirun-mpi.out" "backend=mpi"
  log "mpirun mpi: $(($(now_ms) - t0)) ms"

  # The same sweeps in one process: the table's structure must not depend on where the
  # ranks are.
  t0=$(now_ms)
  run_single single6 -t 6 "${sweep[@]}"
  run_single single3 -t 3 "${sweep[@]}"
  check "one process: 9 x 4 rows, all validated" equal \
    "$(rows "$tmp/single6.out" | wc -l) $(grep -c '^# Out of bounds values : 0 OK' "$tmp/single6.out" || true)" "36 9"
  compare_rows "env launcher vs one process (-t 6)" "$tmp/env.out.0" "$tmp/single6.out"
  compare_rows "mpirun gloo vs one process (-t 6)" "$tmp/mpirun-gloo.out" "$tmp/single6.out"
  compare_rows "mpirun mpi vs one process (-t 3)" "$tmp/mpirun-mpi.out" "$tmp/single3.out"
  log "one process: $(($(now_ms) - t0)) ms"
}

test_kill() {
  local json="$tmp/kill.json" r
  local flags=(-b 1K -e 64K -f 2 -n 5 -N 0 -T 5 -J "$json")
  for r in 0 1 2; do
    # The pid file holds the pid of fabricscope itself: sh writes its own, then execs it.
    # shellcheck disable=SC2016  # $0 and $@ are the inner shell's
    (
      rc=0
      "$netns" exec "${hosts[r]}" sh -c 'echo $$ >"$0" && exec "$@"' "$tmp/pid.$r" \
        env RANK="$r" WORLD_SIZE=3 LOCAL_RANK=0 MASTER_ADDR=10.77.0.1 MASTER_PORT=29500 \
        "$bin" run "${flags[@]}" >"$tmp/kill.out.$r" 2>"$tmp/kill.err.$r" </dev/null || rc=$?
      echo "$rc" >"$tmp/rc.$r"
    ) 2>"$tmp/launch.err.$r" &
  done
  local deadline=$(($(now_ms) + 20000))
  for r in 0 1 2; do
    while [ ! -s "$tmp/pid.$r" ] && [ "$(now_ms)" -lt "$deadline" ]; do sleep 0.05; done
    [ -s "$tmp/pid.$r" ] || { log "FAIL process $r did not start"; exit 1; }
    started_pids+=("$(cat "$tmp/pid.$r")")
  done
  # A few sizes complete everywhere, then host 3's process dies without a word.
  local done_rows=0
  deadline=$(($(now_ms) + 60000))
  while [ "$(now_ms)" -lt "$deadline" ]; do
    done_rows=$(grep -c 'float     sum' "$tmp/kill.out.0" || true)
    [ "$done_rows" -lt 8 ] || break
    [ ! -e "$tmp/rc.0" ] || break
    sleep 0.1
  done
  check "rows completed before the kill" at_least "$done_rows" 8
  check "the process on ${hosts[2]} is fabricscope" equal \
    "$(cat "/proc/${started_pids[2]}/comm" 2>/dev/null || true)" fabricscope
  kill -9 "${started_pids[2]}"
  local killed_at elapsed
  killed_at=$(now_ms)
  deadline=$((killed_at + 30000))
  while [ ! -e "$tmp/rc.0" ] && [ "$(now_ms)" -lt "$deadline" ]; do sleep 0.1; done
  elapsed=$(($(now_ms) - killed_at))
  while { [ ! -e "$tmp/rc.1" ] || [ ! -e "$tmp/rc.2" ]; } && [ "$(now_ms)" -lt "$deadline" ]; do
    sleep 0.1
  done
  log "rank 0 exited $elapsed ms after the kill"
  check "rank 0 exits within 20 s of the kill" at_most "$elapsed" 20000
  check "rank 0 exits with 3 (a failure while running)" equal "$(cat "$tmp/rc.0" 2>/dev/null)" 3
  check "process 1 on ${hosts[1]} exits with 3" equal "$(cat "$tmp/rc.1" 2>/dev/null)" 3
  check "the killed process died of SIGKILL" equal "$(cat "$tmp/rc.2" 2>/dev/null)" 137
  check "stderr names rank 0 and its host" contains "$tmp/kill.err.0" \
    "fabricscope: error: rank 0 on ${hosts[0]}:"
  # Two ways to end, both exit 3 and name rank, host and call: Gloo reports the lost peer
  # ("during all_reduce float sum size 2048 in-place (timing): ...Connection reset..."), or,
  # when Gloo's own waits do not end the call within -T, the -T watchdog ends the process
  # ("all_reduce of 512 float elements did not complete within 7.5 s ...", or "barrier did
  # not complete ..." when it was between two calls).
  local by_watchdog=0
  grep -q 'did not complete within' "$tmp/kill.err.0" && by_watchdog=1
  if [ "$by_watchdog" -eq 1 ]; then
    check "stderr names the call (watchdog)" grep -qE "rank 0 on ${hosts[0]}: (all_reduce of [0-9]+ float elements|barrier) did not complete" "$tmp/kill.err.0"
  else
    check "stderr names the phase" contains "$tmp/kill.err.0" "during all_reduce float sum size"
  fi
  # Which peer rank 0 hears about first is a race (host 3's connection resets, or host 2's
  # process gives up first), so the peer is shown, not checked.
  log "rank 0's error: $(head -c 400 "$tmp/kill.err.0")"
  check "the JSON file parses" parses "$json"
  check "the JSON file holds the $done_rows rows completed before the kill" at_least \
    "$(jq '.results | length' "$json" 2>/dev/null || echo 0)" "$done_rows"
  if [ "$by_watchdog" -eq 0 ]; then
    check "the JSON file records the error" equal \
      "$(jq -r '.errors[0] // "" | startswith("rank 0 on '"${hosts[0]}"': during all_reduce")' "$json" 2>/dev/null)" true
  else
    # The watchdog records its message in the report before it ends the process.
    check "the JSON file records the watchdog's error" equal \
      "$(jq -r '(.errors[0] // "" | contains("did not complete within")) and .end_time != null' "$json" 2>/dev/null)" true
  fi
}

start=$(now_ms)
"test_$mode"
log "$mode: $(($(now_ms) - start)) ms, $failures failure(s)"
[ "$failures" -eq 0 ]
