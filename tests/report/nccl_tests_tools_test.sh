#!/bin/bash
# nccl-tests' own analysis tool reads fabricscope's -I 1 -J file: a two-process mpirun of
# `fabricscope run`, then nccl-tests' tools/analyze_perf_json.py (v2.19.6, copied under
# tests/third_party/nccl-tests/) on its JSON. Usage: nccl_tests_tools_test.sh FABRICSCOPE
set -euo pipefail
fabricscope=$1
tool="$(dirname "$0")/../third_party/nccl-tests/analyze_perf_json.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() {  # expect FILE TEXT: FILE has a line containing TEXT
  grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "no line with '$2' in $1"; }
}

mpirun --allow-run-as-root --oversubscribe -np 2 \
  "$fabricscope" run -b 1K -e 16K -f 4 -n 6 -w 1 -I 1 -K 1 -J "$work/run.json" \
  >"$work/table.txt" 2>"$work/stderr.txt" || { cat "$work/stderr.txt" >&2; fail "mpirun failed"; }
# nccl-tests' first line with -J (src/util.cu:349), once: only rank 0 writes.
expect "$work/table.txt" "# Writing JSON output to $work/run.json"
[ "$(grep -c '^# Writing JSON output' "$work/table.txt")" = 1 ] || fail "the -J line is printed more than once"

python3 "$tool" "$work/run.json" --all >"$work/analysis.txt" 2>&1 ||
  { cat "$work/analysis.txt" >&2; fail "analyze_perf_json.py failed"; }
expect "$work/analysis.txt" "Iterations: 6  (agg: 1)"
expect "$work/analysis.txt" "Summary skip: 1 leading iterations"
# Two processes, one row each: the tool finds per_process_max_times_us and checks that
# times_us is the maximum over the rows, iteration by iteration.
expect "$work/analysis.txt" "Process rows: 2"
expect "$work/analysis.txt" "Consistency (times_us == max over process rows, OOP): PASS"
expect "$work/analysis.txt" "PER-PROCESS STRAGGLER ANALYSIS (OOP)"
grep -qE "fastest=process +[01] .*slowest=process +[01] " "$work/analysis.txt" ||
  { cat "$work/analysis.txt" >&2; fail "no fastest/slowest process of the two"; }
expect "$work/analysis.txt" "PER-NODE ANALYSIS (1 nodes, process-max rows, OOP)"
# One stats row per size, 1 KB to 16 KB by 4.
for size in 1024 4096 16384; do
  grep -qE "^ +$size +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+% " "$work/analysis.txt" ||
    { cat "$work/analysis.txt" >&2; fail "no stats row for size $size"; }
done

python3 "$tool" "$work/run.json" --in-place >"$work/in_place.txt" 2>&1 ||
  { cat "$work/in_place.txt" >&2; fail "analyze_perf_json.py --in-place failed"; }
expect "$work/in_place.txt" "Consistency (times_us == max over process rows, IP): PASS"
echo "PASS: nccl-tests' analyze_perf_json.py reads fabricscope's -I 1 -J output"
