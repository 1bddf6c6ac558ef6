#!/usr/bin/env bash
# helgrind (valgrind's thread checker) on the NCCL profiler plugin as NCCL drives it: one
# process, two rank threads, each creating its communicator and so calling the plugin's init
# with the address of the process's one activation mask, then reading that mask as NCCL's
# enqueue does (NVIDIA/nccl v2.30.7-1 src/plugin/profiler.cc:250-257, :280; src/enqueue.cc:2795)
# while the plugin's drain thread writes the dump.
#
# The driver is the fake NCCL and CUDA runtime (TEST DOUBLES, tests/backends/fake_gpu): no GPU
# here. helgrind does not understand C++ atomics or the guard of a function-local static, so
# the doubles' own shared_ptr counts and stream queues draw reports of their own; those are
# counted and printed, not judged. The test fails on any report with a frame in the plugin's
# library, in the racing access or in the one it conflicts with.
#
# usage: helgrind_test.sh FABRICSCOPE PLUGIN FAKE_NCCL FAKE_CUDART
set -euo pipefail
binary=$1 plugin=$2 fake_nccl=$3 fake_cudart=$4
command -v valgrind >/dev/null || {
  echo "helgrind_test: valgrind is not installed (scripts/install-deps.sh --test installs it)" >&2
  exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

status=0
# The drain thread every 1 ms, so that it drains while the rank and proxy threads record.
NCCL_PROFILER_PLUGIN=$plugin FABRICSCOPE_PROFILER_DUMP_DIR=$tmp/dump FAKE_GPU_TRACE=$tmp/trace \
  FABRICSCOPE_PROFILER_INTERVAL_MS=1 \
  timeout 600 valgrind --tool=helgrind --log-file="$tmp/helgrind" \
  "$binary" run --backend nccl --nccl-lib "$fake_nccl" --gpu-runtime-lib "$fake_cudart" \
  -t 2 -b 1K -e 4K -f 2 -n 3 >"$tmp/out" 2>"$tmp/err" || status=$?
if [[ $status -ne 0 ]]; then
  echo "helgrind_test: the run under helgrind failed ($status)" >&2
  cat "$tmp/err" "$tmp/helgrind" >&2
  exit 1
fi
# The plugin was loaded, enabled on both communicators, and recorded the sweep.
grep -q "profiler init rank=0 result=0 mask=[1-9]" "$tmp/trace" || {
  echo "helgrind_test: the plugin was not initialised with a non-zero mask:" >&2
  cat "$tmp/trace" >&2
  exit 1
}
grep -q "profiler init rank=1 result=0 mask=[1-9]" "$tmp/trace"
records=$(cat "$tmp"/dump/*.jsonl | grep -c '"coll"' || true)
[[ $records -ge 12 ]] || {
  echo "helgrind_test: $records collective records in the dump, expected 12 or more" >&2
  exit 1
}

# A report's own stacks: the access helgrind reports and the one it conflicts with (or the
# call of a misuse report). "Thread #N was created" and "Lock at X was first observed" are
# context (the plugin's drain thread and lock appear there in reports about the doubles).
python3 - "$tmp/helgrind" "$(basename "$plugin")" <<'PY'
import re, sys
log, plugin = sys.argv[1], sys.argv[2]
lines = [re.sub(r"^==\d+== ?", "", l) for l in open(log).read().splitlines()]
if not any("ERROR SUMMARY" in l for l in lines):
    sys.exit("helgrind_test: helgrind did not finish:\n" + "\n".join(lines[-60:]))
starts = ("Possible data race", "This conflicts with", "Thread #")
reports, gaps, stack, title, mine = 0, 0, None, "", []
for line in lines + [""]:
    if stack is not None and re.match(r"\s+(at|by) 0x", line):
        stack.append(line.strip())
        continue
    if stack is not None and not line.startswith("Locks held"):
        # valgrind 3.19 does not intercept glibc 2.34's pthread_cond_clockwait, which
        # std::condition_variable::wait_for calls: the condvar's own inner signal then reads
        # as one without its lock. A gap of the tool, counted apart.
        if any("pthread_cond_clockwait" in f for f in stack):
            gaps += 1
        elif any(plugin in f for f in stack):
            mine.append(title + "\n  " + "\n  ".join(stack))
        stack = None
    if line.startswith(starts) and "was created" not in line:
        if not line.startswith("This conflicts"):
            reports += 1
        title, stack = line, []
print(f"helgrind: {reports} reports, {len(mine)} stacks of them in {plugin}, {gaps} from "
      f"pthread_cond_clockwait (not intercepted by valgrind); the others are in the test "
      f"doubles (not judged)")
for m in mine:
    print(m)
sys.exit(1 if mine else 0)
PY
