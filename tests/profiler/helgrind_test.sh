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
NCCL_PROFILER_PLUGIN=$plugin FABRICSCOPE_PROFILER_DUMP_DIR=$tmp/dump FAKE_GPU_TRACE=$tmp/trace \
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

# One report per block between helgrind's separator lines.
python3 - "$tmp/helgrind" "$(basename "$plugin")" <<'PY'
import re, sys
log, plugin = sys.argv[1], sys.argv[2]
text = open(log).read()
if "ERROR SUMMARY" not in text:
    sys.exit("helgrind_test: helgrind did not finish:\n" + text[-4000:])
blocks = re.split(r"^==\d+== -{20,}$", text, flags=re.M)
reports = [b for b in blocks if re.search(r"Possible data race|dubious|lock order|Thread #\d+: ", b)]
mine = [b for b in reports if plugin in b]
print(f"helgrind: {len(reports)} reports, {len(mine)} with a frame in {plugin}; "
      f"the other {len(reports) - len(mine)} are in the test doubles (not judged)")
for b in mine:
    print(re.sub(r"^==\d+== ?", "", b, flags=re.M))
sys.exit(1 if mine else 0)
PY
