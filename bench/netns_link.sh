#!/usr/bin/env bash
# fabricscope's sendrecv bus bandwidth between two hosts against the link's limit as
# iperf3 measures it, side by side in one run. The hosts are network namespaces on one
# bridge (scripts/testbed/netns.sh), so the "link" is a veth pair through a bridge, or
# whatever --rate makes of it.
#
#   bench/netns_link.sh [--rate RATE] [--size SIZE] [--iters N] [--repeat K] [FABRICSCOPE]
#
#   --rate RATE   limit both hosts' links to RATE each way (tbf: 1gbit, 500mbit); default none
#   --size SIZE   message size (-b and -e); default 64M
#   --iters N     timed iterations per size (-n); default 10, after 2 warm-up iterations
#   --repeat K    rounds (below); the medians are reported; default 3
#   FABRICSCOPE   the binary; default build/fabricscope
#
# K rounds of: iperf3 -t 5 from host 1 to host 2 (one TCP stream, one way); then
# `fabricscope run --collective sendrecv` over 2 processes with 1 rank each, Gloo launched
# the torchrun way (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), then MPI by mpirun with
# the testbed's rsh agent. A backend's busbw is its run's "Avg bus bandwidth" (out-of-place
# and in-place); the table has the medians, and ratio = busbw / iperf3's GB/s.
# Needs root, iperf3, jq and mpirun.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
netns="$root/scripts/testbed/netns.sh"
agent="$root/scripts/testbed/netns-rsh"
prefix=fs-b

rate=""
size=64M
iters=10
repeat=3
bin="$root/build/fabricscope"
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) rate=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "netns_link.sh: unknown option $1" >&2; exit 2 ;;
    *) bin=$1; shift ;;
  esac
done

die() { echo "netns_link.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces)"
command -v iperf3 >/dev/null || die "needs iperf3 (scripts/install-deps.sh installs it)"
command -v mpirun >/dev/null || die "needs mpirun (openmpi-bin)"
command -v jq >/dev/null || die "needs jq"
[ -x "$bin" ] || die "no fabricscope at $bin: build first, or pass the binary"
bin=$(realpath "$bin")
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || die "--repeat needs a positive number"

tmp=$(mktemp -d /tmp/fabricscope-netns-link.XXXXXX)
cleanup() {
  local rc=$?
  "$netns" down "$prefix" >/dev/null 2>&1 || true
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT

# From nothing: a testbed left from before could carry another rate.
"$netns" down "$prefix" >/dev/null
"$netns" up 2 "$prefix" >/dev/null
if [ -n "$rate" ]; then
  "$netns" slow "${prefix}1" "$rate" >/dev/null
  "$netns" slow "${prefix}2" "$rate" >/dev/null
fi

# iperf3 from host 1 to host 2 for 5 s; prints the bit/s received.
iperf() {
  local out="$tmp/iperf.json" tries=0
  # A one-test server, bounded in time so that a client that never comes cannot hang us.
  timeout 60 "$netns" exec "${prefix}2" iperf3 -s -1 -B 10.77.0.2 >"$tmp/iperf-server.log" 2>&1 &
  local server=$!
  until "$netns" exec "${prefix}2" ss -Hltn 'sport = :5201' | grep -q .; do
    tries=$((tries + 1))
    [ "$tries" -lt 100 ] || die "the iperf3 server did not start: $(cat "$tmp/iperf-server.log")"
    sleep 0.1
  done
  # iperf3 -J exits 0 even when it could not connect: the JSON's "error" says.
  timeout 30 "$netns" exec "${prefix}1" iperf3 -c 10.77.0.2 -t 5 -J >"$out" 2>&1 || true
  wait "$server" || true
  jq -e 'has("error") | not' "$out" >/dev/null || die "iperf3 failed: $(jq -r '.error // .' "$out")"
  jq -r '.end.sum_received.bits_per_second' "$out"
}

# Avg bus bandwidth of one run, in GB/s.
busbw_of() {
  grep -q '^# Out of bounds values : 0 OK' "$1" || { cat "$1" >&2; die "the run did not validate"; }
  awk -F: '/^# Avg bus bandwidth/ {print $2 + 0}' "$1"
}

flags=(run --collective sendrecv -b "$size" -e "$size" -n "$iters" -w 2 -T 300)

run_gloo() {
  local out=$1 r pids=()
  for r in 0 1; do
    "$netns" exec "$prefix$((r + 1))" env RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 \
      MASTER_ADDR=10.77.0.1 MASTER_PORT=29500 "$bin" "${flags[@]}" --backend gloo \
      >"$out.$r" 2>&1 </dev/null &
    pids+=($!)
  done
  for r in 0 1; do wait "${pids[r]}" || die "gloo process $r failed: $(cat "$out.$r")"; done
  busbw_of "$out.0"
}

run_mpi() {
  local out=$1
  "$netns" exec "${prefix}1" mpirun --allow-run-as-root --mca plm_rsh_agent "$agent" \
    -H "${prefix}1,${prefix}2" -np 2 --bind-to none --mca btl self,tcp \
    --mca oob_tcp_if_include 10.77.0.0/24 --mca btl_tcp_if_include 10.77.0.0/24 \
    "$bin" "${flags[@]}" --backend mpi >"$out" 2>&1 </dev/null || die "mpirun failed: $(cat "$out")"
  busbw_of "$out"
}

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "netns_link: 2 hosts (network namespaces, veth + bridge), link ${rate:-unlimited}, sendrecv $size, -n $iters -w 2, medians of $repeat rounds"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# Each round measures the link, then each backend, so that a change in the machine's load
# during the run shows in all three alike.
link_runs=()
gloo_runs=()
mpi_runs=()
for ((k = 1; k <= repeat; k++)); do
  link_runs+=("$(iperf)")
  gloo_runs+=("$(run_gloo "$tmp/gloo.$k")")
  mpi_runs+=("$(run_mpi "$tmp/mpi.$k")")
done
link=$(printf '%s\n' "${link_runs[@]}" | median)
gloo=$(printf '%s\n' "${gloo_runs[@]}" | median)
mpi=$(printf '%s\n' "${mpi_runs[@]}" | median)

awk -v link="$link" -v gloo="$gloo" -v mpi="$mpi" -v link_runs="${link_runs[*]}" \
  -v gloo_runs="${gloo_runs[*]}" -v mpi_runs="${mpi_runs[*]}" 'BEGIN {
  gb = link / 8e9
  printf "%-8s %-8s %11s %15s %13s %7s\n", "backend", "launch", "busbw GB/s", "iperf3 Gbit/s", "iperf3 GB/s", "ratio"
  printf "%-8s %-8s %11.3f %15.2f %13.3f %7.2f\n", "gloo", "env", gloo, link / 1e9, gb, gloo / gb
  printf "%-8s %-8s %11.3f %15.2f %13.3f %7.2f\n", "mpi", "mpirun", mpi, link / 1e9, gb, mpi / gb
  n = split(link_runs, l, " "); split(gloo_runs, g, " "); split(mpi_runs, m, " ")
  printf "\nrounds: iperf3 Gbit/s, gloo GB/s, mpi GB/s\n"
  for (i = 1; i <= n; i++) printf "  %6.2f  %6.3f  %6.3f\n", l[i] / 1e9, g[i], m[i]
}'
# Other work on the machine shows in the figures: say how busy it was.
echo "load average before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg)"
