#!/usr/bin/env bash
# `fabricscope locate` on a test bed of six "hosts" (network namespaces on one bridge,
# scripts/testbed/netns.sh), one process per host, launched the torchrun way.
#
#   locate_testbed.sh FABRICSCOPE [SCENARIO...]
#
# Scenarios (all by default):
#   none   no fault: nobody is named, exit 0
#   node   host 4's link at half speed (tbf): exactly "node fsloc4" is named, exit 1
#   link   the traffic between hosts 2 and 5 at half speed (htb class + u32 filter on the
#          peer's address, both ways): exactly "link fsloc2-fsloc5" is named, exit 1
#   rails  two ranks per host (two rails, and the per-node test), host 3 at half speed:
#          exactly "node fsloc3" is named, on every rail
#
# Every host's link is first limited to 200 Mbit/s, so the network, not the shared CPU,
# sets each pair's pace; the faults then take a host or a pair to 100 Mbit/s.
# Exits 77 (ctest's SKIP_RETURN_CODE) when not root or when namespaces cannot be created.
# The test bed is removed on every exit: success, failure, SIGTERM or ^C (after a SIGKILL,
# the next run removes it first: `netns.sh up` starts from nothing).
set -euo pipefail

readonly SKIP=77
readonly HOSTS=6
readonly PREFIX=fsloc  # not the other tests' prefixes: they may share the machine
readonly BASE_RATE=200mbit
readonly SLOW_RATE=100mbit
[ $# -ge 1 ] || {
  echo "usage: $0 FABRICSCOPE [none|node|link|rails ...]" >&2
  exit 2
}
bin=$1
shift
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(none node link rails)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
netns="$root/scripts/testbed/netns.sh"

skip() {
  echo "locate-testbed: SKIP: $*"
  exit "$SKIP"
}
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces)"
command -v ip >/dev/null || skip "needs ip (iproute2)"
command -v tc >/dev/null || skip "needs tc (iproute2)"
command -v unshare >/dev/null || skip "needs unshare (util-linux)"
command -v jq >/dev/null || skip "needs jq"
[ -x "$bin" ] || {
  echo "locate-testbed: no binary at $bin" >&2
  exit 1
}
bin=$(realpath "$bin")
ip netns del "$PREFIX-probe" 2>/dev/null || true  # left by a run that was killed -9
if ! ip netns add "$PREFIX-probe" 2>/dev/null; then
  skip "cannot create network namespaces here"
fi
ip netns del "$PREFIX-probe"

tmp=$(mktemp -d /tmp/fabricscope-locate.XXXXXX)
failures=0

cleanup() {
  local rc=$? pid jobs_left
  mapfile -t jobs_left < <(jobs -p)
  for pid in "${jobs_left[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  "$netns" down "$PREFIX" >/dev/null 2>&1 || true
  if [ "$failures" -ne 0 ] || [ "$rc" -ne 0 ]; then
    echo "locate-testbed: outputs:"
    for f in "$tmp"/*; do
      [ -f "$f" ] || continue
      echo "===== ${f##*/}"
      tail -n 40 "$f"
    done
  fi
  rm -rf "$tmp"
  if ip netns list | grep -qE "^$PREFIX"; then
    echo "locate-testbed: FAIL: namespaces left behind: $(ip netns list | grep -E "^$PREFIX" | tr '\n' ' ')" >&2
    rc=1
  fi
  exit "$rc"
}
trap cleanup EXIT

now_ms() { echo $(($(date +%s%N) / 1000000)); }
log() { echo "locate-testbed: $*"; }
check() { # check DESCRIPTION COMMAND...: records a failure, goes on
  local what=$1
  shift
  if "$@"; then
    log "ok   $what"
  else
    log "FAIL $what"
    failures=$((failures + 1))
  fi
}
equal() { [ "$1" = "$2" ] || {
  echo "  expected '$2', got '$1'" >&2
  return 1
}; }
contains() { grep -qF -- "$2" "$1" || {
  echo "  '$2' not in $1" >&2
  return 1
}; }

"$netns" up "$HOSTS" "$PREFIX" >/dev/null
for ((i = 1; i <= HOSTS; i++)); do "$netns" slow "$PREFIX$i" "$BASE_RATE" >/dev/null; done

port=29700
# Runs locate on every host, one process each (THREADS ranks, SIZE per measurement), env
# launcher; rank 0 writes LABEL.out, LABEL.json and LABEL.svg. Checks every process's exit
# code: EXPECTED for rank 0 (0 nobody named, 1 a culprit), 0 for the others.
run_locate() {
  local label=$1 expected=$2 threads=$3 size=$4 r rc
  local pids=()
  port=$((port + 1))  # a fresh port: the previous run's may still be in TIME_WAIT
  for ((r = 0; r < HOSTS; r++)); do
    timeout -k 5 120 "$netns" exec "$PREFIX$((r + 1))" env RANK="$r" WORLD_SIZE="$HOSTS" \
      LOCAL_RANK=0 MASTER_ADDR=10.77.0.1 MASTER_PORT="$port" \
      "$bin" locate -t "$threads" -b "$size" -n 2 -T 60 --json "$tmp/$label.json" \
      --svg "$tmp/$label.svg" >"$tmp/$label.out.$r" 2>"$tmp/$label.err.$r" </dev/null &
    pids+=($!)
  done
  for ((r = 0; r < HOSTS; r++)); do
    rc=0
    wait "${pids[r]}" || rc=$?
    check "$label: process $r exits $([ "$r" -eq 0 ] && echo "$expected" || echo 0)" \
      equal "$rc" "$([ "$r" -eq 0 ] && echo "$expected" || echo 0)"
  done
}

# The named suspects as "kind nodes[,nodes]" lines.
named() { jq -r '.suspects[] | "\(.kind) \(.nodes | join(","))"' "$1"; }

check_common() {
  local label=$1 threads=$2
  local json="$tmp/$label.json"
  check "$label: the JSON parses" jq -e . "$json" >/dev/null
  check "$label: $HOSTS nodes, $threads rail(s)" equal \
    "$(jq -r '"\(.nodes | length) \(.config.rails)"' "$json")" "$HOSTS $threads"
  check "$label: nodes are the hosts" equal "$(jq -r '[.nodes[].name] | join(" ")' "$json")" \
    "$(for ((i = 1; i <= HOSTS; i++)); do printf '%s%d ' "$PREFIX" "$i"; done | sed 's/ $//')"
  check "$label: every pair measured in $((HOSTS - 1)) rounds" equal \
    "$(jq -r '"\(.rounds.pairs) \([.measurements[] | select(.phase == "pairs")] | length)"' "$json")" \
    "$((HOSTS - 1)) $((HOSTS * (HOSTS - 1) / 2 * threads))"
  check "$label: no wrong data" equal "$(jq '[.measurements[].wrong] | add' "$json")" 0
  check "$label: the heatmap is an SVG" contains "$tmp/$label.svg" "</svg>"
  check "$label: only rank 0 reports" equal "$(cat "$tmp/$label".out.[1-9])" ""
  log "$label: $(grep '^# verdict' "$tmp/$label.out.0")"
}

scenario_none() {
  run_locate none 0 1 1M
  check_common none 1
  check "none: nobody named" equal "$(named "$tmp/none.json")" ""
  check "none: the verdict says so" contains "$tmp/none.out.0" "# verdict: nobody named"
}

scenario_node() {
  "$netns" slow "${PREFIX}4" "$SLOW_RATE" >/dev/null
  run_locate node 1 1 1M
  "$netns" slow "${PREFIX}4" "$BASE_RATE" >/dev/null
  check_common node 1
  check "node: exactly node ${PREFIX}4 named" equal "$(named "$tmp/node.json")" "node ${PREFIX}4"
  check "node: confirmed against known-good nodes" equal \
    "$(jq -r '.suspects[0] | "\(.confirmed) \(.evidence | test("3 of 3 slow"))"' "$tmp/node.json")" \
    "true true"
  check "node: the verdict says so" contains "$tmp/node.out.0" \
    "# verdict: 1 culprit named: node ${PREFIX}4"
  check "node: outlined in the heatmap" contains "$tmp/node.svg" 'stroke="black"'
}

scenario_link() {
  "$netns" slowlink "${PREFIX}2" "${PREFIX}5" "$SLOW_RATE" >/dev/null
  run_locate link 1 1 1M
  "$netns" slowlink "${PREFIX}2" "${PREFIX}5" off >/dev/null
  check "link: 'slowlink off' leaves no class or filter toward the peer" equal \
    "$(tc -n "${PREFIX}2" class show dev eth0 | grep -c '1:105' || true)" 0
  check_common link 1
  check "link: exactly link ${PREFIX}2-${PREFIX}5 named" equal "$(named "$tmp/link.json")" \
    "link ${PREFIX}2,${PREFIX}5"
  check "link: both ends fine with their other peers" equal \
    "$(jq -r '.suspects[0].evidence | test("8 of their 8 other pairs fine")' "$tmp/link.json")" true
}

scenario_rails() {
  "$netns" slow "${PREFIX}3" "$SLOW_RATE" >/dev/null
  # Two ranks share each host's link: half the size keeps the time per round.
  run_locate rails 1 2 512K
  "$netns" slow "${PREFIX}3" "$BASE_RATE" >/dev/null
  check_common rails 2
  check "rails: exactly node ${PREFIX}3 named" equal "$(named "$tmp/rails.json")" "node ${PREFIX}3"
  check "rails: on both rails" equal "$(jq -c '.suspects[0].rails' "$tmp/rails.json")" "[0,1]"
  check "rails: the per-node test ran on every host" equal \
    "$(jq '[.per_node[] | select(.phase == "per-node")] | length' "$tmp/rails.json")" "$HOSTS"
  check "rails: a heatmap per rail" test -s "$tmp/rails.rail1.svg"
}

start=$(now_ms)
for s in "${scenarios[@]}"; do
  t0=$(now_ms)
  case "$s" in
    none | node | link | rails) "scenario_$s" ;;
    *)
      echo "unknown scenario '$s'" >&2
      exit 2
      ;;
  esac
  log "$s: $(($(now_ms) - t0)) ms"
done
log "$(($(now_ms) - start)) ms, $failures failure(s)"
[ "$failures" -eq 0 ]
