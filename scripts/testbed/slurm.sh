#!/usr/bin/env bash
# A real Slurm cluster on one machine: Debian's slurm-wlm (22.05) and munge, the controller
# and N compute nodes each in a network namespace of its own, with its own address and host
# name. The root network namespace is not touched (the bridge lives in the controller's).
#
#   slurm.sh up DIR [N] [PREFIX]   munged, slurmctld and N slurmd (default 2, prefix fs-sl);
#                                  hosts PREFIX-ctl (10.78.0.1) and PREFIX-n1..N (10.78.0.11..)
#   slurm.sh run DIR CMD...        runs CMD on the controller host with SLURM_CONF set
#                                  (srun, sbatch, squeue, ...); its exit status is CMD's
#   slurm.sh on DIR HOST CMD...    runs CMD on HOST (PREFIX-ctl, PREFIX-n1, ...)
#   slurm.sh down DIR              stops the daemons it started (by PID), removes the
#                                  namespaces; safe to repeat
#
# DIR holds everything: slurm.conf, munge's key and socket, spool, state, logs, per-node
# TmpFS. The cluster's name is PREFIX, so two test beds with two prefixes do not meet.
# Needs root, iproute2, util-linux (nsenter, unshare), slurm-wlm and munge
# (scripts/install-deps.sh installs them).
#
# Traps this avoids (docs/launch.md): `ip netns exec` remounts /sys, and slurmd 22.05 then
# dies ("No filesystem mounted on /sys/fs/cgroup"), so hosts are entered with nsenter plus a
# private mount and UTS namespace; two slurmd on one file system collide in pmix's
# /tmp/spmix_appdir_*, so each node has its own TmpFS; munged wants its socket directory
# mode 0711 and a key only it can read.
set -euo pipefail

readonly SUBNET=10.78.0

die() {
  echo "slurm.sh: $*" >&2
  exit 1
}

usage() {
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

require_tools() {
  [ "$(id -u)" -eq 0 ] || die "must run as root (namespaces, daemons): sudo $0 $*"
  local tool
  for tool in ip nsenter unshare munged slurmctld slurmd srun; do
    command -v "$tool" >/dev/null ||
      die "'$tool' not found: install iproute2, util-linux, slurm-wlm and munge (scripts/install-deps.sh)"
  done
}

# in_host NS HOST CMD...: CMD in namespace NS with host name HOST and DIR's hosts file on
# /etc/hosts, in private mount and UTS namespaces. Every layer execs, so the PID of a
# backgrounded call is CMD's.
in_host() {
  local ns=$1 host=$2
  shift 2
  exec nsenter --net="/run/netns/$ns" unshare --mount --uts sh -c \
    'mount --bind "$0" /etc/hosts && hostname "$1" && shift 2 && exec "$@"' \
    "$dir/hosts" "$host" -- "$@"
}

load_state() {
  [ -f "$dir/testbed.env" ] || die "no test bed in $dir (run: $0 up $dir)"
  # shellcheck source=/dev/null
  source "$dir/testbed.env"
  export SLURM_CONF="$dir/etc/slurm.conf"
}

node_line() {
  local i=$1 cpus
  cpus=$(nproc)
  echo "NodeName=$prefix-n$i NodeAddr=$SUBNET.$((10 + i)) CPUs=$cpus Boards=1" \
    "SocketsPerBoard=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN"
}

write_conf() {
  local i
  {
    echo "ClusterName=${prefix//-/}"
    echo "SlurmctldHost=$prefix-ctl($SUBNET.1)"
    cat <<EOF
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket.2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
TmpFS=$dir/tmp/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
KillWait=5
SlurmdTimeout=30
InactiveLimit=0
EOF
    for i in $(seq 1 "$nodes"); do node_line "$i"; done
    echo "PartitionName=debug Nodes=$prefix-n[1-$nodes] Default=YES MaxTime=INFINITE State=UP"
  } >"$dir/etc/slurm.conf"
}

make_network() {
  local i hosts
  ip netns add "$prefix-ctl"
  ip -n "$prefix-ctl" link set lo up
  ip -n "$prefix-ctl" link add br0 type bridge
  ip -n "$prefix-ctl" addr add "$SUBNET.1/24" dev br0
  ip -n "$prefix-ctl" link set br0 up
  hosts="127.0.0.1 localhost\n$SUBNET.1 $prefix-ctl\n"
  for i in $(seq 1 "$nodes"); do
    hosts+="$SUBNET.$((10 + i)) $prefix-n$i\n"
    ip netns add "$prefix-n$i"
    ip -n "$prefix-n$i" link set lo up
    ip -n "$prefix-ctl" link add "v$i" type veth peer name eth0 netns "$prefix-n$i"
    ip -n "$prefix-ctl" link set "v$i" master br0 up
    ip -n "$prefix-n$i" addr add "$SUBNET.$((10 + i))/24" dev eth0
    ip -n "$prefix-n$i" link set eth0 up
  done
  printf "$hosts" >"$dir/hosts"
}

start_munge() {
  # munged runs as munge and must reach its files: DIR is traversable, munge/ its own.
  chmod 711 "$dir"
  runuser -u munge -- test -x "$dir" ||
    die "the munge user cannot reach $dir: make its parent directories traversable (chmod o+x)"
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chown -R munge:munge "$dir/munge"
  chmod 700 "$dir/munge"
  chmod 400 "$dir/munge/munge.key"
  chmod 711 "$dir/munge"
  runuser -u munge -- munged --socket="$dir/munge/munge.socket.2" \
    --key-file="$dir/munge/munge.key" --pid-file="$dir/munge/munged.pid" \
    --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" ||
    die "munged did not start: $(tail -n 3 "$dir/munge/munged.log" 2>/dev/null)"
}

# DAEMON-NAME NS HOST CMD...: a daemon in the foreground, backgrounded; its PID recorded.
start_daemon() {
  local name=$1
  shift
  (in_host "$@") >"$dir/log/$name.out" 2>&1 &
  echo $! >"$dir/run/$name.bgpid"
}

wait_idle() {
  local t state
  for t in $(seq 1 120); do
    state=$(run_on_ctl sinfo -h -o %T 2>/dev/null | sort -u | tr '\n' ' ')
    [ "$state" = "idle " ] && return 0
    sleep 0.25
  done
  die "the nodes did not become idle within 30 s (sinfo: '$state'); logs in $dir/log"
}

run_on_ctl() { (in_host "$prefix-ctl" "$prefix-ctl" "$@"); }

up() {
  local i
  nodes=${1:-2}
  prefix=${2:-fs-sl}
  [[ "$nodes" =~ ^[1-9]$ ]] || die "N must be 1 to 9 (got '$nodes')"
  [[ "$prefix" =~ ^[a-z][a-z0-9-]{0,7}$ ]] ||
    die "bad prefix '$prefix': a letter, then up to 7 of [a-z0-9-] (it names namespaces, hosts and the cluster)"
  [ ! -f "$dir/testbed.env" ] || die "$dir already holds a test bed: $0 down $dir first"
  ! ip netns list | awk '{print $1}' | grep -qx -- "$prefix-ctl" ||
    die "namespace $prefix-ctl exists: another test bed uses prefix $prefix"
  mkdir -p "$dir"/{etc,log,run,munge,state}
  for i in $(seq 1 "$nodes"); do mkdir -p "$dir/spool/$prefix-n$i" "$dir/tmp/$prefix-n$i"; done
  printf 'prefix=%s\nnodes=%s\n' "$prefix" "$nodes" >"$dir/testbed.env"
  export SLURM_CONF="$dir/etc/slurm.conf"
  make_network
  write_conf
  start_munge
  start_daemon slurmctld "$prefix-ctl" "$prefix-ctl" slurmctld -D -i
  for i in $(seq 1 "$nodes"); do
    start_daemon "slurmd-$prefix-n$i" "$prefix-n$i" "$prefix-n$i" slurmd -D -N "$prefix-n$i"
  done
  wait_idle
}

down() {
  local f i
  [ -f "$dir/testbed.env" ] || return 0
  load_state
  for f in "$dir"/run/slurmd-*.bgpid "$dir/run/slurmctld.bgpid"; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  for _ in $(seq 1 40); do
    local alive=0
    for f in "$dir"/run/*.bgpid; do
      [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && alive=1
    done
    [ "$alive" -eq 0 ] && break
    sleep 0.25
  done
  for f in "$dir"/run/*.bgpid; do
    [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true
    rm -f "$f"
  done
  [ -f "$dir/munge/munged.pid" ] && kill "$(cat "$dir/munge/munged.pid")" 2>/dev/null || true
  for i in $(seq 1 "$nodes"); do ip netns del "$prefix-n$i" 2>/dev/null || true; done
  ip netns del "$prefix-ctl" 2>/dev/null || true
  rm -f "$dir/testbed.env"
}

cmd=${1:-}
[ $# -ge 2 ] || usage
dir=$(realpath -m "$2")
shift 2
case "$cmd" in
  up)
    require_tools
    up "$@"
    ;;
  run)
    [ $# -ge 1 ] || usage
    load_state
    run_on_ctl "$@"
    ;;
  on)
    [ $# -ge 2 ] || usage
    load_state
    host=$1
    shift
    (in_host "$host" "$host" "$@")
    ;;
  down) down ;;
  *) usage ;;
esac
