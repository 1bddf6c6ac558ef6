# What the test-bed scripts share (sourced, not run): the root and tool checks that skip
# with 77 (ctest's SKIP_RETURN_CODE), the namespace probe, a scratch directory, the exit
# trap that stops what is still running and removes the test bed, and the check helpers.
#
#   source testbed_lib.sh
#   testbed_begin LABEL PREFIX FABRICSCOPE [TOOL...]
#
# sets bin (the binary's absolute path), tmp, failures and started_pids (processes to
# kill -9 on exit), and installs the trap; on exit the trap prints every output file's
# tail when a check failed, removes the namespaces PREFIX* and fails if any are left.
# shellcheck shell=bash

readonly SKIP=77
testbed_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
testbed_root=$(cd "$testbed_here/../.." && pwd)
netns="$testbed_root/scripts/testbed/netns.sh"
failures=0
started_pids=()

now_ms() { echo $(($(date +%s%N) / 1000000)); }
log() { echo "$testbed_label: $*"; }
skip() {
  echo "$testbed_label: SKIP: $*"
  exit "$SKIP"
}

testbed_begin() {
  testbed_label=$1
  testbed_prefix=$2
  bin=$3
  shift 3
  local tool
  [ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces)"
  for tool in ip unshare "$@"; do
    command -v "$tool" >/dev/null || skip "needs $tool"
  done
  [ -x "$bin" ] || {
    echo "$testbed_label: no binary at $bin" >&2
    exit 1
  }
  bin=$(realpath "$bin")
  ip netns del "$testbed_prefix-probe" 2>/dev/null || true  # left by a run killed -9
  if ! ip netns add "$testbed_prefix-probe" 2>/dev/null; then
    skip "cannot create network namespaces here"
  fi
  ip netns del "$testbed_prefix-probe"
  tmp=$(mktemp -d "/tmp/fabricscope-$testbed_label.XXXXXX")
  trap testbed_cleanup EXIT
}

testbed_cleanup() {
  local rc=$? pid jobs_left
  for pid in "${started_pids[@]}"; do
    kill -9 "$pid" 2>/dev/null || true
  done
  # Interrupted (ctest's timeout, ^C): what is still running goes too (timeout(1) passes
  # the signal on to the command it runs).
  mapfile -t jobs_left < <(jobs -p)
  for pid in "${jobs_left[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  "$netns" down "$testbed_prefix" >/dev/null 2>&1 || true
  if [ "$failures" -ne 0 ] || [ "$rc" -ne 0 ]; then
    echo "$testbed_label: outputs:"
    for f in "$tmp"/*; do
      [ -f "$f" ] || continue
      echo "===== ${f##*/}"
      tail -n 40 "$f"
    done
  fi
  rm -rf "$tmp"
  if ip netns list | grep -qE "^$testbed_prefix"; then
    echo "$testbed_label: FAIL: namespaces left behind:" \
      "$(ip netns list | grep -E "^$testbed_prefix" | tr '\n' ' ')" >&2
    rc=1
  fi
  exit "$rc"
}

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
at_least() { [ "$1" -ge "$2" ] || {
  echo "  expected at least $2, got $1" >&2
  return 1
}; }
at_most() { [ "$1" -le "$2" ] || {
  echo "  expected at most $2, got $1" >&2
  return 1
}; }
parses() { jq -e . "$1" >/dev/null; }
matches() { grep -qE -- "$2" "$1" || {
  echo "  no line of $1 matches '$2'" >&2
  return 1
}; }
contains() { grep -qF -- "$2" "$1" || {
  echo "  '$2' not in $1" >&2
  return 1
}; }
