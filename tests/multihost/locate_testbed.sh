#!/usr/bin/env bash
# `fabricscope locate` on a test bed of six "hosts" (network namespaces on one bridge,
# scripts/testbed/netns.sh), one process per host, launched the torchrun way.
#
#   locate_testbed.sh FABRICSCOPE [SCENARIO...]
#
# Environment (defaults in brackets): LOCATE_TESTBED_HOSTS [6], LOCATE_TESTBED_BASE [200mbit;
# empty: no limit, the shared CPU sets the pace and healthy pairs vary several-fold],
# LOCATE_TESTBED_SLOW [100mbit], LOCATE_TESTBED_RUNS [1: each scenario that many times],
# LOCATE_TESTBED_PREFIX [fsloc], LOCATE_TESTBED_ARGS [none: more locate flags; a
# --max-sweeps there replaces the scenarios' own, 6 and 12 for rails (see scenario_rails)],
# LOCATE_TESTBED_HOG [0: that many `yes >/dev/null` loops, a CPU hog, run beside locate],
# LOCATE_TESTBED_KEEP [none: a directory each run's report and JSON are copied to],
# LOCATE_TESTBED_SAMPLES [none: a directory each run's --save-samples file goes to, as
# LABEL.runN.jsonl: the traces under tests/locate/data were recorded so],
# LOCATE_TESTBED_SIZE [1M] and LOCATE_TESTBED_ITERS [2]: -b and -n of every run (locate's
# own defaults, what a user runs, are 4M and 5), LOCATE_TESTBED_TIMEOUT [120: seconds each
# process may run].
# docs/locate.md has the 10-run acceptance command (4 hosts, a host at 300 Mbit/s).
#
# Scenarios (all by default):
#   none   no fault: nobody is named, exit 0 (or 4, inconclusive: never a name)
#   node   host 4's link at the slow rate (tbf): exactly "node fsloc4" is named, exit 1 (or
#          4, inconclusive: never a wrong name)
#   link   the traffic between hosts 2 and 4 at the slow rate (htb class + u32 filter on the
#          peer's address, both ways): exactly "link fsloc2-fsloc4" is named, exit 1 (or 4)
#   lossy  5% of the packets between hosts 2 and 4 dropped, both ways (iptables statistic on
#          each one's INPUT from the other's address; issue 27's "5% loss on one link"):
#          exactly "link fsloc2-fsloc4" is named, exit 1 (or 4, inconclusive: never a wrong
#          name); not in the default set (run it by name)
#   rails  six nodes of two rails each: node i's rail 0 is namespace i, its rail 1
#          namespace i+6, both with the hostname fsnode<i>, so each rail has a link of its
#          own, as in a rail-optimized cluster; node 3's rail-1 link at half speed:
#          exactly "nic fsnode3 rail 1" is named (and node 3's interior: see below)
#
# Every namespace's link is first limited to 200 Mbit/s, so the network, not the shared
# CPU, sets each pair's pace; the faults then take a link or a pair to 100 Mbit/s.
# Exits 77 (ctest's SKIP_RETURN_CODE) when not root or when namespaces cannot be created.
# The test bed is removed on every exit: success, failure, SIGTERM or ^C (after a SIGKILL,
# the next run removes it first: `netns.sh up` starts from nothing).
set -euo pipefail

readonly HOSTS=${LOCATE_TESTBED_HOSTS:-6}
readonly NAMESPACES=$((2 * HOSTS))  # the rails scenario's second rail
readonly PREFIX=${LOCATE_TESTBED_PREFIX:-fsloc}  # not the other tests': they may share the machine
readonly BASE_RATE=${LOCATE_TESTBED_BASE-200mbit}
readonly SLOW_RATE=${LOCATE_TESTBED_SLOW:-100mbit}
readonly RUNS=${LOCATE_TESTBED_RUNS:-1}
read -r -a EXTRA_ARGS <<<"${LOCATE_TESTBED_ARGS:-}"
sweeps=6  # run_locate's passes (`sweeps=N run_locate ...` for one run), unless LOCATE_TESTBED_ARGS gives --max-sweeps
readonly HOG=${LOCATE_TESTBED_HOG:-0}
readonly KEEP=${LOCATE_TESTBED_KEEP:-}
readonly SAMPLES=${LOCATE_TESTBED_SAMPLES:-}
readonly SIZE=${LOCATE_TESTBED_SIZE:-1M}
readonly ITERS=${LOCATE_TESTBED_ITERS:-2}
readonly RUN_TIMEOUT=${LOCATE_TESTBED_TIMEOUT:-120}
[ "$HOSTS" -ge 4 ] || {
  echo "LOCATE_TESTBED_HOSTS must be 4 or more (the link scenario slows hosts 2 and 4)" >&2
  exit 2
}
[ $# -ge 1 ] || {
  echo "usage: $0 FABRICSCOPE [none|node|link|rails ...]" >&2
  exit 2
}
bin=$1
shift
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(none node link rails)
# shellcheck source=SCRIPTDIR/testbed_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/testbed_lib.sh"
testbed_begin locate-testbed "$PREFIX" "$bin" tc jq

"$netns" up "$NAMESPACES" "$PREFIX" >/dev/null
# The base rate on every link (none when empty); `restore` puts a host back to it.
restore() { if [ -n "$BASE_RATE" ]; then "$netns" slow "$1" "$BASE_RATE" >/dev/null; else "$netns" slow "$1" off >/dev/null; fi; }
if [ -n "$BASE_RATE" ]; then
  for ((i = 1; i <= NAMESPACES; i++)); do "$netns" slow "$PREFIX$i" "$BASE_RATE" >/dev/null; done
fi

# The CPU hog: busy loops on the machine (not in a namespace), stopped by the exit trap.
for ((i = 0; i < HOG; i++)); do
  yes >/dev/null &
  started_pids+=($!)
done
[ -z "$KEEP" ] || mkdir -p "$KEEP"
[ -z "$SAMPLES" ] || mkdir -p "$SAMPLES"

port=29700
# Runs locate with one process per SPEC ("namespace=hostname"; process r is rank r), the
# environment launcher, SIZE per measurement; rank 0 writes LABEL.out, LABEL.json and
# LABEL.svg. Checks every process's exit code: one of EXPECTED ("0|4": 0 nobody named, 1 a
# culprit, 4 inconclusive) for rank 0, 0 for the others.
run_locate() {
  local label=$1 expected=$2 size=$3 r rc ns name
  shift 3
  local specs=("$@") pids=() passes=(--max-sweeps "$sweeps") save=()
  [ -z "$SAMPLES" ] || save=(--save-samples "$SAMPLES/$label.run$run.jsonl")
  [[ " ${EXTRA_ARGS[*]} " != *" --max-sweeps "* ]] || passes=()
  port=$((port + 1))  # a fresh port: the previous run's may still be in TIME_WAIT
  # Nothing of the previous run's: a run that fails to start must not report its verdict.
  rm -f "$tmp/$label".*
  for ((r = 0; r < ${#specs[@]}; r++)); do
    ns=${specs[r]%%=*}
    name=${specs[r]#*=}
    # As `netns.sh exec`, with the hostname given (two namespaces can be one node).
    # shellcheck disable=SC2016  # $0 and $@ are the inner shell's
    timeout -k 5 "$RUN_TIMEOUT" ip netns exec "$ns" unshare --uts -- sh -c 'hostname "$0" && exec "$@"' \
      "$name" env RANK="$r" WORLD_SIZE="${#specs[@]}" LOCAL_RANK=0 MASTER_ADDR=10.77.0.1 \
      MASTER_PORT="$port" "$bin" locate -b "$size" -n "$ITERS" -T 60 "${passes[@]}" "${EXTRA_ARGS[@]}" --json "$tmp/$label.json" "${save[@]}" \
      --svg "$tmp/$label.svg" >"$tmp/$label.out.$r" 2>"$tmp/$label.err.$r" </dev/null &
    pids+=($!)
  done
  for ((r = 0; r < ${#specs[@]}; r++)); do
    rc=0
    wait "${pids[r]}" || rc=$?
    if [ "$r" -eq 0 ]; then
      check "$label: process 0 exits $expected (got $rc)" one_of "$rc" "$expected"
    else
      check "$label: process $r exits 0" equal "$rc" 0
    fi
  done
}

# One process per host, hostname = namespace.
hosts() { for ((i = 1; i <= HOSTS; i++)); do printf '%s ' "$PREFIX$i=$PREFIX$i"; done; }

# The named suspects as "kind nodes[,nodes]" lines.
named() { jq -r '.suspects[] | "\(.kind) \(.nodes | join(","))"' "$1"; }

check_common() {
  local label=$1 threads=$2 node_prefix=${3:-$PREFIX}
  local json="$tmp/$label.json"
  check "$label: the JSON parses" jq -e . "$json" >/dev/null
  check "$label: $HOSTS nodes, $threads rail(s)" equal \
    "$(jq -r '"\(.nodes | length) \(.config.rails)"' "$json")" "$HOSTS $threads"
  check "$label: nodes are the hosts" equal "$(jq -r '[.nodes[].name] | join(" ")' "$json")" \
    "$(for ((i = 1; i <= HOSTS; i++)); do printf '%s%d ' "$node_prefix" "$i"; done | sed 's/ $//')"
  check "$label: every pair measured in $((HOSTS - 1)) rounds, then again" equal \
    "$(jq -r '"\(.rounds.pairs) \(.pairs | length) \((.measurements | length) > (.pairs | length))"' "$json")" \
    "$((HOSTS - 1)) $((HOSTS * (HOSTS - 1) * threads / 2)) true"
  check "$label: the noise measured from repeats" equal \
    "$(jq -r '[.baselines[].noise_df > 0] | all' "$json")" true
  check "$label: no wrong data" equal "$(jq '[.measurements[].wrong] | add' "$json")" 0
  check "$label: the heatmap is an SVG" contains "$tmp/$label.svg" "</svg>"
  check "$label: only rank 0 reports" equal "$(cat "$tmp/$label".out.[1-9]*)" ""
  # The verdict as findings (docs/locate.md, Output): a CRITICAL finding per named suspect.
  check "$label: findings_version 2, a CRITICAL finding per named suspect" equal \
    "$(jq -r '(.suspects | length) as $n | "\(.findings_version) \([.findings[] | select(.severity == "CRITICAL")] | length == $n)"' "$json")" \
    "2 true"
  log "$label: $(grep '^# verdict' "$tmp/$label.out.0")"
  verdicts+=("$label: $(jq -r .status "$json") $(named "$json" | tr '\n' ' ')(noise \
$(jq -r '[.baselines[].sigma * 100 | round / 100] | map(tostring) | join(",")' "$json"), \
$(jq -r .sweeps "$json") sweeps)")
  if [ -n "$KEEP" ]; then
    cp "$json" "$KEEP/$label.run$run.json"
    cp "$tmp/$label.out.0" "$KEEP/$label.run$run.txt"
  fi
}

# "rc is one of a|b|c".
one_of() { case "|$2|" in *"|$1|"*) return 0 ;; esac; return 1; }

# Never a wrong name: the named are exactly EXPECTED, or nobody with an inconclusive status.
right_or_inconclusive() {
  local json=$1 expected=$2 status
  status=$(jq -r .status "$json")
  [ "$(named "$json")" = "$expected" ] || { [ "$(named "$json")" = "" ] && [ "$status" = inconclusive ]; }
}

scenario_none() {
  # shellcheck disable=SC2046  # one word per host
  run_locate none "0|4" "$SIZE" $(hosts)
  check_common none 1
  check "none: nobody named" equal "$(named "$tmp/none.json")" ""
  check "none: the verdict says so" grep -Eq "# verdict: (nobody named|inconclusive, nobody named)" \
    "$tmp/none.out.0"
  check "none: an undecided finding exactly when inconclusive" equal \
    "$(jq -r '([.findings[] | select(.decided == false)] | length > 0) == (.status == "inconclusive")' "$tmp/none.json")" \
    true
}

scenario_node() {
  "$netns" slow "${PREFIX}4" "$SLOW_RATE" >/dev/null
  # shellcheck disable=SC2046
  run_locate node "1|4" "$SIZE" $(hosts)
  restore "${PREFIX}4"
  check_common node 1
  check "node: node ${PREFIX}4 named, or inconclusive (never a wrong name)" \
    right_or_inconclusive "$tmp/node.json" "node ${PREFIX}4"
  if [ "$(named "$tmp/node.json")" = "node ${PREFIX}4" ]; then
    check "node: every pair of it slow, significantly" equal \
      "$(jq -r '.suspects[0] | "\(.confirmed) \(.evidence | test("significantly slow with all"))"' \
        "$tmp/node.json")" "true true"
    check "node: the verdict says so" contains "$tmp/node.out.0" \
      "confidence: node ${PREFIX}4"
    check "node: outlined in the heatmap" contains "$tmp/node.svg" 'stroke="black"'
  fi
}

scenario_link() {
  "$netns" slowlink "${PREFIX}2" "${PREFIX}4" "$SLOW_RATE" >/dev/null
  # shellcheck disable=SC2046
  run_locate link "1|4" "$SIZE" $(hosts)
  "$netns" slowlink "${PREFIX}2" "${PREFIX}4" off >/dev/null
  check "link: 'slowlink off' leaves no class or filter toward the peer" equal \
    "$(tc -n "${PREFIX}2" class show dev eth0 | grep -c '1:104' || true)" 0
  check_common link 1
  check "link: link ${PREFIX}2-${PREFIX}4 named, or inconclusive (never a wrong name)" \
    right_or_inconclusive "$tmp/link.json" "link ${PREFIX}2,${PREFIX}4"
}

# Each of A and B drops 5% of what arrives from the other (TCP retransmits: the link slows,
# the results stay correct).
lossy_rules() {
  local action=$1 a=$2 b=$3 from
  for pair in "$a $b" "$b $a"; do
    read -r a b <<<"$pair"
    from=$(awk -v h="$b" '$1 == h {print $2}' <("$netns" list "$PREFIX"))
    ip netns exec "$a" iptables "$action" INPUT -s "$from" -m statistic --mode random \
      --probability 0.05 -j DROP
  done
}

scenario_lossy() {
  lossy_rules -A "${PREFIX}2" "${PREFIX}4"
  # shellcheck disable=SC2046
  run_locate lossy "1|4" "$SIZE" $(hosts)
  lossy_rules -D "${PREFIX}2" "${PREFIX}4"
  check_common lossy 1
  check "lossy: link ${PREFIX}2-${PREFIX}4 named, or inconclusive (never a wrong name)" \
    right_or_inconclusive "$tmp/lossy.json" "link ${PREFIX}2,${PREFIX}4"
}

scenario_rails() {
  local specs=() rail i
  for rail in 0 1; do
    for ((i = 1; i <= HOSTS; i++)); do specs+=("$PREFIX$((i + rail * HOSTS))=fsnode$i"); done
  done
  "$netns" slow "$PREFIX$((3 + HOSTS))" "$SLOW_RATE" >/dev/null  # node 3, rail 1
  # Twelve passes, not six: the per-node test judges node 3's interior (0.5x) against the
  # five others', whose own levels differ by 5-25% on this test bed. At a per-node noise of
  # 0.07-0.09 (a busy machine) six rounds reach z 7.4-8.4 against the 6.3 that Student's t
  # needs there (11 df, 36 tests), and one run stayed below it, undecided. Twelve let the
  # noise's degrees of freedom grow (t 5.6 at nine rounds, 5.1 at twelve); the passes stop
  # as soon as everything is decided.
  sweeps=12 run_locate rails 1 "$SIZE" "${specs[@]}"
  restore "$PREFIX$((3 + HOSTS))"
  check_common rails 2 fsnode
  check "rails: each node's rails are its two namespaces' ranks" equal \
    "$(jq -c '.nodes[2].ranks' "$tmp/rails.json")" "[2,$((2 + HOSTS))]"
  # The per-node test names the same culprit: on this test bed a node's two ranks are two
  # namespaces, so its "interior" is the slow link too (on a GPU node it is NVLink).
  check "rails: exactly nic fsnode3 rail 1 named (and node 3's interior, which crosses it)" \
    equal "$(jq -r '.suspects[] | "\(.kind) \(.nodes | join(",")) \(.rails)"' "$tmp/rails.json")" \
    "nic fsnode3 [1]"$'\n'"intra-node fsnode3 []"
  check "rails: the per-node test ran on every node" equal \
    "$(jq '[.per_node[] | select(.phase == "per-node")] | length' "$tmp/rails.json")" "$HOSTS"
  check "rails: a heatmap per rail" test -s "$tmp/rails.rail1.svg"
}

start=$(now_ms)
verdicts=()
for ((run = 1; run <= RUNS; run++)); do
  for s in "${scenarios[@]}"; do
    t0=$(now_ms)
    case "$s" in
      none | node | link | lossy | rails) "scenario_$s" ;;
      *)
        echo "unknown scenario '$s'" >&2
        exit 2
        ;;
    esac
    log "run $run, $s: $(($(now_ms) - t0)) ms"
  done
done
log "verdicts, one line per run and scenario:"
printf '  %s\n' "${verdicts[@]}"
log "$(($(now_ms) - start)) ms, $failures failure(s)"
[ "$failures" -eq 0 ]
