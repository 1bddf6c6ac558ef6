#!/usr/bin/env bash
# A testbed of N "hosts" on one machine: network namespaces on one bridge.
#
#   netns.sh up N [PREFIX]      hosts PREFIX1..PREFIXN (default prefix fs-h), 10.77.0.1..N/24
#   netns.sh down [PREFIX]      removes everything `up` created; safe to repeat
#   netns.sh exec HOST CMD...   runs CMD on HOST: its namespace, its own hostname
#   netns.sh slow HOST RATE     limits HOST's link to RATE both ways (tbf; e.g. 100mbit, 1gbit)
#   netns.sh slow HOST off      removes the limit
#   netns.sh slowlink HOST PEER RATE  limits the traffic between two hosts to RATE, both ways
#                               (htb on each one's eth0, a u32 filter on the other's address)
#   netns.sh slowlink HOST PEER off   removes that limit
#   netns.sh list [PREFIX]      prints "host address" for each host
#
# Layout: the bridge lives in its own namespace (PREFIX-br), so the root namespace is not
# touched: no interface, route or address is added to it. Each host namespace has lo and
# eth0 (a veth whose peer, p<i>, is a port of the bridge), MTU 1500.
# A host's hostname is its namespace name (`exec` gives each command a UTS namespace),
# and every host resolves every other host's name: `up` writes /etc/netns/HOST/hosts,
# which `ip netns exec` mounts over /etc/hosts inside that namespace only (the machine's
# /etc/hosts is not edited). `down` removes those files too.
#
# HOST is a namespace name (fs-h2) or a testbed address (10.77.0.2).
# Needs root and iproute2 (scripts/install-deps.sh installs it).
set -euo pipefail

readonly SUBNET=10.77.0
readonly DEFAULT_PREFIX=fs-h
readonly STATE_DIR=/run/fabricscope-testbed

die() {
  echo "netns.sh: $*" >&2
  exit 1
}

usage() {
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

require_tools() {
  [ "$(id -u)" -eq 0 ] || die "must run as root (network namespaces need CAP_SYS_ADMIN): sudo $0 $*"
  command -v ip >/dev/null || die "'ip' not found: install iproute2 (scripts/install-deps.sh)"
  command -v unshare >/dev/null || die "'unshare' not found: install util-linux"
}

check_prefix() {
  [[ "$1" =~ ^[a-z][a-z0-9-]{0,9}$ ]] ||
    die "bad prefix '$1': a letter, then up to 9 of [a-z0-9-] (it names namespaces and hosts)"
}

bridge_ns() { echo "$1-br"; }

# The host namespaces of PREFIX that exist, in order.
existing_hosts() {
  local prefix=$1
  ip netns list | awk '{print $1}' | grep -E "^${prefix}[0-9]+\$" | sort -V || true
}

ns_exists() { ip netns list | awk '{print $1}' | grep -qx -- "$1"; }

cmd_down() {
  local prefix=${1:-$DEFAULT_PREFIX}
  check_prefix "$prefix"
  local ns removed=0
  # Host namespaces first (their veths die with them), then the bridge namespace.
  for ns in $(existing_hosts "$prefix") "$(bridge_ns "$prefix")"; do
    if ns_exists "$ns"; then
      ip netns del "$ns"
      removed=$((removed + 1))
    fi
    rm -rf "/etc/netns/$ns"
  done
  # Host files of hosts whose namespace is already gone (e.g. after a manual `ip netns del`).
  if [ -d /etc/netns ]; then
    find /etc/netns -mindepth 1 -maxdepth 1 -type d -regextype posix-extended \
      -regex "/etc/netns/${prefix}[0-9]+" -exec rm -rf {} +
    rmdir /etc/netns 2>/dev/null || true
  fi
  rm -f "$STATE_DIR/$prefix.hosts"
  rmdir "$STATE_DIR" 2>/dev/null || true
  echo "netns.sh: down $prefix ($removed namespaces removed)"
}

# True when PREFIX's testbed is up with exactly N hosts, all addressed.
is_up() {
  local n=$1 prefix=$2 i
  [ -f "$STATE_DIR/$prefix.hosts" ] || return 1
  ns_exists "$(bridge_ns "$prefix")" || return 1
  [ "$(existing_hosts "$prefix" | wc -l)" -eq "$n" ] || return 1
  for ((i = 1; i <= n; i++)); do
    ip -n "$prefix$i" -4 -o addr show dev eth0 2>/dev/null | grep -q " $SUBNET.$i/24 " || return 1
  done
}

cmd_up() {
  [ $# -ge 1 ] || usage
  local n=$1 prefix=${2:-$DEFAULT_PREFIX}
  if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt 250 ]; then
    die "N must be 1..250 (got '$n')"
  fi
  check_prefix "$prefix"
  if is_up "$n" "$prefix"; then
    echo "netns.sh: $prefix already up with $n hosts"
    return 0
  fi
  # Anything partial or of another size goes first, so `up` always ends in the same state.
  cmd_down "$prefix" >/dev/null
  # A failure half way leaves nothing behind.
  trap 'cmd_down "$prefix" >/dev/null 2>&1 || true' ERR

  local br i ns
  br=$(bridge_ns "$prefix")
  ip netns add "$br"
  ip -n "$br" link set lo up
  ip -n "$br" link add br0 type bridge
  ip -n "$br" link set br0 up

  mkdir -p "$STATE_DIR"
  local state="$STATE_DIR/$prefix.hosts.tmp" hosts_file
  : >"$state"
  hosts_file=$(mktemp)
  printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$hosts_file"
  for ((i = 1; i <= n; i++)); do
    printf '%s.%d\t%s%d\n' "$SUBNET" "$i" "$prefix" "$i" >>"$hosts_file"
  done

  for ((i = 1; i <= n; i++)); do
    ns="$prefix$i"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    # Both ends are created where they belong: the root namespace never sees them.
    ip -n "$br" link add "p$i" type veth peer name eth0 netns "$ns"
    ip -n "$br" link set "p$i" master br0
    ip -n "$br" link set "p$i" up
    ip -n "$ns" addr add "$SUBNET.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    mkdir -p "/etc/netns/$ns"
    cp "$hosts_file" "/etc/netns/$ns/hosts"
    printf '%s %s.%d\n' "$ns" "$SUBNET" "$i" >>"$state"
  done
  rm -f "$hosts_file"
  mv "$state" "$STATE_DIR/$prefix.hosts"
  trap - ERR
  echo "netns.sh: up $prefix: $n hosts ${prefix}1..$prefix$n at $SUBNET.1..$n/24, bridge in namespace $br"
}

# The namespace of HOST (a namespace name or a testbed address).
host_ns() {
  local host=$1 file
  if [[ "$host" =~ ^[a-z][a-z0-9-]*[0-9]+$ ]] && ns_exists "$host" &&
    [ -n "$(cat "$STATE_DIR"/*.hosts 2>/dev/null | awk -v h="$host" '$1 == h')" ]; then
    echo "$host"
    return 0
  fi
  local matches
  matches=$(cat "$STATE_DIR"/*.hosts 2>/dev/null | awk -v h="$host" '$2 == h {print $1}' || true)
  case "$(printf '%s' "$matches" | grep -c . || true)" in
    1) echo "$matches" ;;
    0)
      file=$(find "$STATE_DIR" -name '*.hosts' 2>/dev/null | head -1 || true)
      [ -n "$file" ] || die "no testbed is up: run '$0 up N' first"
      die "unknown host '$host': not a testbed host (see '$0 list')"
      ;;
    *) die "address '$host' is on several testbeds ($(echo "$matches" | tr '\n' ' ')): name the namespace" ;;
  esac
}

cmd_exec() {
  [ $# -ge 2 ] || usage
  local ns
  ns=$(host_ns "$1")
  shift
  # ip netns exec: network namespace + /etc/netns/NS/hosts as /etc/hosts; unshare --uts:
  # a hostname of its own, set before the command starts.
  # shellcheck disable=SC2016  # $0 and $@ are the inner shell's
  exec ip netns exec "$ns" unshare --uts -- sh -c 'hostname "$0" && exec "$@"' "$ns" "$@"
}

# RATE in bit/s, from tc's notation (bit, kbit, mbit, gbit; bps, kbps, mbps, gbps are bytes).
rate_bits() {
  local rate=$1 num unit
  [[ "$rate" =~ ^([0-9]+)([a-z]*)$ ]] || die "bad rate '$rate': write e.g. 100mbit or 1gbit"
  num=${BASH_REMATCH[1]}
  unit=${BASH_REMATCH[2]}
  case "$unit" in
    bit | "") echo "$num" ;;
    kbit) echo $((num * 1000)) ;;
    mbit) echo $((num * 1000000)) ;;
    gbit) echo $((num * 1000000000)) ;;
    bps) echo $((num * 8)) ;;
    kbps) echo $((num * 8000)) ;;
    mbps) echo $((num * 8000000)) ;;
    gbps) echo $((num * 8000000000)) ;;
    *) die "bad rate unit '$unit': use bit, kbit, mbit, gbit (or bps, kbps, mbps, gbps for bytes)" ;;
  esac
}

cmd_slow() {
  [ $# -eq 2 ] || usage
  local ns rate=$2 prefix i br
  ns=$(host_ns "$1")
  [[ "$ns" =~ ^(.*[^0-9])([0-9]+)$ ]] || die "cannot parse host '$ns'"
  prefix=${BASH_REMATCH[1]}
  i=${BASH_REMATCH[2]}
  br=$(bridge_ns "$prefix")
  if [ "$rate" = off ]; then
    ip -n "$ns" link show eth0 >/dev/null
    tc -n "$ns" qdisc del dev eth0 root 2>/dev/null || true
    tc -n "$br" qdisc del dev "p$i" root 2>/dev/null || true
    echo "netns.sh: $ns unlimited"
    return 0
  fi
  command -v tc >/dev/null || die "'tc' not found: install iproute2"
  local bits burst
  bits=$(rate_bits "$rate")
  [ "$bits" -gt 0 ] || die "rate must be above 0"
  # 10 ms of traffic per burst, at least a few full frames.
  burst=$((bits / 8 / 100))
  [ "$burst" -ge 16384 ] || burst=16384
  # Host -> bridge on the host's eth0, bridge -> host on the bridge port: both directions.
  tc -n "$ns" qdisc replace dev eth0 root tbf rate "$rate" burst "$burst" latency 100ms
  tc -n "$br" qdisc replace dev "p$i" root tbf rate "$rate" burst "$burst" latency 100ms
  echo "netns.sh: $ns limited to $rate each way"
}

# The testbed address of namespace NS.
host_addr() {
  cat "$STATE_DIR"/*.hosts 2>/dev/null | awk -v h="$1" '$1 == h {print $2; exit}'
}

# On FROM's eth0, traffic to TO's address at RATE; everything else at FROM's own limit (the
# tbf rate `slow` set, kept as htb's default class) or unlimited. Idempotent per pair.
limit_toward() {
  local from=$1 to=$2 rate=$3 burst=$4 to_addr index base
  to_addr=$(host_addr "$to")
  [ -n "$to_addr" ] || die "no address for $to"
  [[ "$to" =~ ([0-9]+)$ ]] || die "cannot parse host '$to'"
  index=${BASH_REMATCH[1]}
  if ! tc -n "$from" qdisc show dev eth0 | grep -q '^qdisc htb 1: root'; then
    base=$(tc -n "$from" qdisc show dev eth0 | sed -n 's/^qdisc tbf .* rate \([^ ]*\) .*/\1/p')
    tc -n "$from" qdisc replace dev eth0 root handle 1: htb default 10
    # quantum: htb's default (rate / 10) is far above an MTU at these rates, and says so.
    tc -n "$from" class replace dev eth0 parent 1: classid 1:10 htb rate "${base:-10gbit}" \
      quantum 60000
  fi
  tc -n "$from" class replace dev eth0 parent 1: classid "1:$((100 + index))" htb rate "$rate" \
    burst "$burst" quantum 60000
  tc -n "$from" filter del dev eth0 parent 1: prio "$((100 + index))" 2>/dev/null || true
  tc -n "$from" filter add dev eth0 parent 1: protocol ip prio "$((100 + index))" u32 \
    match ip dst "$to_addr/32" flowid "1:$((100 + index))"
}

cmd_slowlink() {
  [ $# -eq 3 ] || usage
  local ns peer rate=$3
  ns=$(host_ns "$1")
  peer=$(host_ns "$2")
  [ "$ns" != "$peer" ] || die "a link joins two different hosts (got $ns twice)"
  command -v tc >/dev/null || die "'tc' not found: install iproute2"
  if [ "$rate" = off ]; then
    # Each side's filter and class toward the other; the htb (and its default class) stays.
    local from to index
    for from in "$ns" "$peer"; do
      to=$([ "$from" = "$ns" ] && echo "$peer" || echo "$ns")
      [[ "$to" =~ ([0-9]+)$ ]] || die "cannot parse host '$to'"
      index=${BASH_REMATCH[1]}
      tc -n "$from" filter del dev eth0 parent 1: prio "$((100 + index))" 2>/dev/null || true
      tc -n "$from" class del dev eth0 classid "1:$((100 + index))" 2>/dev/null || true
    done
    echo "netns.sh: $ns-$peer unlimited"
    return 0
  fi
  local bits burst
  bits=$(rate_bits "$rate")
  [ "$bits" -gt 0 ] || die "rate must be above 0"
  burst=$((bits / 8 / 100))
  [ "$burst" -ge 16384 ] || burst=16384
  limit_toward "$ns" "$peer" "$rate" "$burst"
  limit_toward "$peer" "$ns" "$rate" "$burst"
  echo "netns.sh: $ns-$peer limited to $rate each way"
}

cmd_list() {
  local prefix=${1:-$DEFAULT_PREFIX}
  check_prefix "$prefix"
  [ -f "$STATE_DIR/$prefix.hosts" ] || die "testbed $prefix is not up"
  cat "$STATE_DIR/$prefix.hosts"
}

main() {
  [ $# -ge 1 ] || usage
  local cmd=$1
  shift
  case "$cmd" in
    -h | --help | help) usage ;;
    up | down | exec | slow | slowlink | list) ;;
    *)
      echo "netns.sh: unknown command '$cmd'" >&2
      usage
      ;;
  esac
  require_tools "$cmd" "$@"
  "cmd_$cmd" "$@"
}

main "$@"
