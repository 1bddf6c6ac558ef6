#!/usr/bin/env bash
# Faults that real networks make, on a testbed of four "hosts" (network namespaces on one
# bridge, scripts/testbed/netns.sh): the env launcher, Gloo, the default -T 0 (no timeout,
# as in nccl-tests), so only the heartbeat (src/launch/liveness.h) can end a job whose host
# went silent.
#
#   faults_testbed.sh FABRICSCOPE [CASE...]   cases: blackhole rendezvous kill flap loss (all)
#
#   blackhole   host 4's bridge port set down mid-sweep (no FIN, no RST): the other three
#               processes exit 3 within 30 s, naming fsf274, rank 3 and "sweep"; the
#               JSON file parses and holds the rows measured before the fault
#   rendezvous  the same while the job meets: host 4's process started and beating, its
#               port set down before hosts 2 and 3 start: exit 3 within 30 s naming it
#   kill        host 4's process killed -9 mid-sweep (its sockets close): processes 0-2 exit 3
#               within 30 s, rank 0 naming the lost peer and then rank 3's silence
#   flap        host 4's port down for 2 s mid-sweep, then up: every process exits 0, every
#               size validated
#   loss        5% of the packets into host 4 dropped (iptables statistic): every process
#               exits 0, every size validated, within the step's bound
#
# Exits 77 (ctest's SKIP_RETURN_CODE) when not root, without iptables or jq, or when
# namespaces cannot be created. The testbed is removed on every exit (the trap).
set -euo pipefail

[ $# -ge 1 ] || {
  echo "usage: $0 FABRICSCOPE [blackhole|rendezvous|kill|flap|loss]..." >&2
  exit 2
}
bin=$1
shift
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(blackhole rendezvous kill flap loss)
prefix=fsf27

# shellcheck source=SCRIPTDIR/testbed_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/testbed_lib.sh"
testbed_begin faults "$prefix" "$bin" iptables jq

"$netns" up 4 "$prefix" >/dev/null
hosts=("${prefix}1" "${prefix}2" "${prefix}3" "${prefix}4")
bridge="$prefix-br"
port=29600

# start LABEL R FLAGS...: process R of 4 on its host, in the background; its exit code goes
# to $tmp/LABEL.rc.R, its pid (fabricscope's own: sh execs it) to $tmp/LABEL.pid.R.
start() {
  local label=$1 r=$2
  shift 2
  # shellcheck disable=SC2016  # $0 and $@ are the inner shell's
  (
    rc=0
    timeout -k 5 90 "$netns" exec "${hosts[r]}" sh -c 'echo $$ >"$0" && exec "$@"' \
      "$tmp/$label.pid.$r" env RANK="$r" WORLD_SIZE=4 LOCAL_RANK=0 MASTER_ADDR=10.77.0.1 \
      MASTER_PORT="$port" "$bin" run --backend gloo "$@" \
      >"$tmp/$label.out.$r" 2>"$tmp/$label.err.$r" </dev/null || rc=$?
    echo "$rc" >"$tmp/$label.rc.$r"
  ) &
  started_pids+=($!)
}

# await LABEL BOUND_MS R...: waits until the processes R... have exited or BOUND_MS passed;
# prints how long it took.
await() {
  local label=$1 bound=$2 t0 r left
  shift 2
  t0=$(now_ms)
  while [ "$(now_ms)" -lt $((t0 + bound)) ]; do
    left=0
    for r in "$@"; do [ -e "$tmp/$label.rc.$r" ] || left=1; done
    [ "$left" -eq 1 ] || break
    sleep 0.1
  done
  echo $(($(now_ms) - t0))
}

rc_of() { cat "$tmp/$1.rc.$2" 2>/dev/null || echo none; }
rows_in() { jq '.results | length' "$1" 2>/dev/null || echo 0; }
cut_off() { ip -n "$bridge" link set p4 "$1"; }  # host 4's bridge port: down = silence

# Waits until rank 0's JSON holds N rows (or 60 s).
await_rows() {
  local json=$1 n=$2 deadline=$(($(now_ms) + 60000))
  while [ "$(rows_in "$json")" -lt "$n" ] && [ "$(now_ms)" -lt "$deadline" ]; do sleep 0.1; done
  rows_in "$json"
}

# The three survivors end with 3 within 30 s, naming host 4, rank 3 and PHASE.
check_named_ending() {
  local label=$1 elapsed=$2 phase=$3 r
  log "$label: survivors ended $elapsed ms after the fault"
  check "$label: processes 0-2 end within 30 s of the fault" at_most "$elapsed" 30000
  for r in 0 1 2; do
    check "$label: process $r exits 3" equal "$(rc_of "$label" "$r")" 3
    check "$label: process $r names rank 3 on ${hosts[3]} and the phase" matches \
      "$tmp/$label.err.$r" "process 3 \\(rank 3 on ${hosts[3]}\\) went silent during $phase"
  done
  log "$label: rank 0's error: $(grep "error:" "$tmp/$label.err.0" | head -c 400)"
}

test_blackhole() {
  local json="$tmp/blackhole.json" r before elapsed
  for r in 0 1 2 3; do start blackhole "$r" -b 1K -e 512M -f 2 -n 20 -J "$json"; done
  before=$(await_rows "$json" 4)
  check "blackhole: rows measured before the fault" at_least "$before" 4
  cut_off down
  elapsed=$(await blackhole 40000 0 1 2)
  # The last phase rank 3 published, any call of a sweep (src/launch/engine.cc) as the
  # watchdog names it (src/launch/watchdog.cc): a timed all_reduce or the wait for its
  # completion, the untimed barrier that lines the ranks up before each size ("One untimed op
  # and a barrier"), or the all_gather of each rank's time after it (one double per rank).
  check_named_ending blackhole "$elapsed" \
    "sweep \\((completion of the enqueued )?(all_reduce of |all_gather of 1 double|barrier, )"
  check "blackhole: the JSON file parses" parses "$json"
  check "blackhole: the JSON file holds the $before rows measured before the fault" at_least \
    "$(rows_in "$json")" "$before"
  check "blackhole: the JSON file records the error naming ${hosts[3]}" equal \
    "$(jq -r '.errors[0] // "" | contains("rank 3 on '"${hosts[3]}"') went silent")' "$json")" true
  await blackhole 20000 3 >/dev/null  # the cut-off process loses the store and ends too
  log "blackhole: the cut-off process: exit $(rc_of blackhole 3), $(head -c 300 "$tmp/blackhole.err.3")"
  cut_off up
}

test_rendezvous() {
  local elapsed
  start rendezvous 0 -b 1K -e 64K -f 2 -n 2
  start rendezvous 3 -b 1K -e 64K -f 2 -n 2
  sleep 3  # process 3 has connected to the store and beats
  cut_off down
  start rendezvous 1 -b 1K -e 64K -f 2 -n 2
  start rendezvous 2 -b 1K -e 64K -f 2 -n 2
  elapsed=$(await rendezvous 40000 0 1 2)
  check_named_ending rendezvous "$elapsed" "rendezvous \\("
  await rendezvous 20000 3 >/dev/null
  cut_off up
}

test_kill() {
  local json="$tmp/kill.json" r before elapsed
  for r in 0 1 2 3; do start kill "$r" -b 1K -e 512M -f 2 -n 20 -J "$json"; done
  before=$(await_rows "$json" 4)
  check "kill: the process on ${hosts[3]} is fabricscope" equal \
    "$(cat "/proc/$(cat "$tmp/kill.pid.3")/comm" 2>/dev/null || true)" fabricscope
  kill -9 "$(cat "$tmp/kill.pid.3")"
  elapsed=$(await kill 40000 0 1 2)
  log "kill: survivors ended $elapsed ms after the kill"
  check "kill: processes 0-2 end within 30 s of the kill (-T 0)" at_most "$elapsed" 30000
  for r in 0 1 2; do check "kill: process $r exits 3" equal "$(rc_of kill "$r")" 3; done
  check "kill: rank 0 names rank 3 on ${hosts[3]}" contains "$tmp/kill.err.0" \
    "process 3 (rank 3 on ${hosts[3]}) went silent during sweep"
  check "kill: the JSON file holds the $before rows measured before the kill" at_least \
    "$(rows_in "$json")" "$before"
  log "kill: rank 0's error: $(grep "error:" "$tmp/kill.err.0" | head -c 400)"
}

# Every size of the sweep validated in rank 0's table, every process exiting 0.
check_clean() {
  local label=$1 elapsed=$2 sizes=$3 r
  log "$label: $elapsed ms"
  for r in 0 1 2 3; do check "$label: process $r exits 0" equal "$(rc_of "$label" "$r")" 0; done
  check "$label: $sizes sizes, none wrong" equal \
    "$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum .* 0$' "$tmp/$label.out.0" || true)" "$sizes"
  check "$label: validated" contains "$tmp/$label.out.0" "# Out of bounds values : 0 OK"
}

test_flap() {
  local json="$tmp/flap.json" r elapsed before
  for r in 0 1 2 3; do start flap "$r" -b 1K -e 4M -f 2 -n 20 -J "$json"; done
  before=$(await_rows "$json" 3)
  cut_off down
  check "flap: the link went down mid-sweep ($before of 13 rows)" at_most "$before" 12
  sleep 2
  cut_off up
  elapsed=$(await flap 60000 0 1 2 3)
  check_clean flap "$elapsed" 13
}

test_loss() {
  local r elapsed
  ip netns exec "${hosts[3]}" iptables -A INPUT -m statistic --mode random --probability 0.05 -j DROP
  for r in 0 1 2 3; do start loss "$r" -b 1K -e 1M -f 4 -n 5; done
  elapsed=$(await loss 60000 0 1 2 3)
  check_clean loss "$elapsed" 6
  check "loss: packets were dropped" at_least \
    "$(ip netns exec "${hosts[3]}" iptables -L INPUT -v -x -n | awk '/statistic/ {print $1}')" 1
  ip netns exec "${hosts[3]}" iptables -F INPUT
}

begin=$(now_ms)
for c in "${cases[@]}"; do
  t0=$(now_ms)
  "test_$c"
  port=$((port + 1))  # each case its own store port: the previous one may linger in TIME_WAIT
  log "$c: $(($(now_ms) - t0)) ms"
done
log "$(($(now_ms) - begin)) ms, $failures failure(s)"
[ "$failures" -eq 0 ]
