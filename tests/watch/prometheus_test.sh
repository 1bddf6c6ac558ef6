#!/bin/bash
# A real Prometheus (Debian's server) scraping the profiler plugin's endpoints: a fake-NCCL job
# (TEST DOUBLE for the GPU side) of two processes, each with libnccl-profiler-fabricscope.so
# serving on 127.0.0.1, a port of the kernel's choosing, published as a file_sd target. The
# test asks Prometheus' HTTP API for the series and checks their labels. Everything binds
# port 0 and lives in its own temporary directory; the exit trap stops what it started.
#   prometheus_test.sh FABRICSCOPE PLUGIN FAKE_NCCL FAKE_CUDART MPIEXEC DASHBOARD
# (DASHBOARD: deploy/grafana's JSON, whose every query must evaluate on this Prometheus.)
# Exit 77 (skipped) without prometheus, curl or jq.
set -euo pipefail
fabricscope=$1 plugin=$2 fake_nccl=$3 fake_cudart=$4 mpiexec=$5 dashboard=$6

for tool in prometheus curl jq "$mpiexec"; do
  if ! command -v "$tool" >/dev/null; then
    echo "skipped: $tool not installed (apt-get install --no-install-recommends prometheus curl jq openmpi-bin)"
    exit 77
  fi
done

work=$(mktemp -d /tmp/fabricscope-prom-test.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  echo "--- prometheus log"; tail -20 "$work/prometheus.log" || true
  echo "--- job"; tail -20 "$work/run.log" || true
  exit 1
}

# The job: two processes under mpirun (which finds its own ports), each with the plugin; the
# fake NCCL makes rank 1 call every collective 20 ms late, so rank 0 waits for it. It runs
# until the test has seen what it checks (then the exit trap stops it): rates need two
# scrapes of each series while it still grows, whatever the load. Cycles of 20 (-N 0), not
# one sweep of 100000 iterations: NCCL 2.30 starts a collective's events at its enqueue
# (hostStreamPlanTask on the launching thread), so a host 100000 calls ahead of the GPU
# would hold every one of the plugin's 256 in-flight slots, and rank 0's series would stop
# growing once those had completed (seen once the fake did as NCCL does).
mkdir -p "$work/targets"
job=i17-prom-$$
common=(NCCL_PROFILER_PLUGIN="$plugin" FABRICSCOPE_PROFILER_PROM_LISTEN=127.0.0.1:0
  FABRICSCOPE_PROFILER_PROM_SD_DIR="$work/targets" FABRICSCOPE_PROFILER_DUMP_DIR="$work/jsonl"
  FABRICSCOPE_PROFILER_INTERVAL_MS=200
  FABRICSCOPE_JOB_ID="$job")

cat > "$work/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: fabricscope
    file_sd_configs:
      - files: ['$work/targets/*.prom.json']
        refresh_interval: 1s
YAML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
  --web.listen-address=127.0.0.1:0 >"$work/prometheus.log" 2>&1 &
pids+=($!)
address=
for _ in $(seq 1 300); do
  address=$(grep -o 'msg="Listening on" address=127.0.0.1:[0-9]*' "$work/prometheus.log" |
    grep -o '127.0.0.1:[0-9]*' || true)
  [ -n "$address" ] && curl -sf "http://$address/-/ready" >/dev/null && break
  address=
  sleep 0.1
done
[ -n "$address" ] || fail "prometheus did not come up"
echo "prometheus on $address"

# One host: Open MPI over shared memory only, ranks yielding (as tests/CMakeLists.txt's MPI tests).
exports=()
for v in "${common[@]}"; do exports+=(-x "$v"); done
OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none \
  OMPI_MCA_mpi_yield_when_idle=1 \
  "$mpiexec" --allow-run-as-root --oversubscribe -np 2 "${exports[@]}" \
  -x FAKE_NCCL_SLOW=1:20000 \
  "$fabricscope" run --backend nccl --nccl-lib "$fake_nccl" --gpu-runtime-lib "$fake_cudart" \
  -b 64K -e 64K -n 20 -N 0 >"$work/run.log" 2>&1 &
pids+=($!)

# Poll the HTTP API until both ranks' series are stored (first samples take a few seconds).
query() { curl -sf -G "http://$address/api/v1/query" --data-urlencode "query=$1"; }
selector="fabricscope_nccl_collective_duration_seconds_count{job_id=\"$job\",collective=\"AllReduce\"}"
ranks=0
for _ in $(seq 1 600); do
  ranks=$(query "count(count by (rank) ($selector))" | jq -r '.data.result[0].value[1] // 0')
  [ "$ranks" = 2 ] && break
  sleep 0.2
done
[ "$ranks" = 2 ] || fail "Prometheus has series of $ranks rank(s), not 2"

series=$(query "$selector")
host=$(hostname)
for check in \
  '.data.result | length > 0' \
  "[.data.result[].metric.job] | unique == [\"fabricscope\"]" \
  "[.data.result[].metric.node] | unique == [\"$host\"]" \
  "[.data.result[].metric.rank] | unique == [\"0\",\"1\"]" \
  "[.data.result[].metric.nranks] | unique == [\"2\"]" \
  '[.data.result[].metric.size_bucket] | any(. == "<=64KiB")' \
  '[.data.result[].metric.comm] | unique | length == 1' \
  '[.data.result[].value[1] | tonumber] | min > 0'; do
  echo "$series" | jq -e "$check" >/dev/null || fail "series check '$check' on: $series"
done
busbw=$(query "count(fabricscope_nccl_collective_busbw_bytes_per_second_bucket{job_id=\"$job\"})" |
  jq -r '.data.result[0].value[1] // 0')
[ "$busbw" -gt 0 ] || fail "no busbw histogram buckets"
bytes=$(query "count(fabricscope_nccl_collective_bytes_total{job_id=\"$job\"})" |
  jq -r '.data.result[0].value[1] // 0')
[ "$bytes" -gt 0 ] || fail "no bytes counter"

# The Grafana dashboard's queries, with its variables filled in, evaluate without error.
n=0
while IFS= read -r expr; do
  expr=${expr//\$job/$job}
  expr=${expr//\$__rate_interval/30s}
  status=$(query "$expr" | jq -r .status || true)
  [ "$status" = success ] || fail "dashboard query does not evaluate: $expr"
  n=$((n + 1))
done < <(jq -r '.panels[].targets[].expr' "$dashboard")
[ "$n" -gt 0 ] || fail "no queries in $dashboard"
# watch over the HTTP API, until both ranks' rates are there and it names the straggler
# (exit 2 while Prometheus has no rate yet, 0 while it has one rank's only).
rc=2
for _ in $(seq 1 400); do
  rc=0
  "$fabricscope" watch --prometheus "http://$address" --job "$job" --window 120 \
    >"$work/watch.out" 2>"$work/watch.err" || rc=$?
  [ "$rc" = 1 ] && break
  [ "$rc" = 0 ] || [ "$rc" = 2 ] || break
  sleep 0.3
done
[ "$rc" = 1 ] || fail "watch --prometheus exit $rc: $(cat "$work/watch.out" "$work/watch.err")"
grep -q '^all_reduce  *<=64KiB ' "$work/watch.out" || fail "no all_reduce row: $(cat "$work/watch.out")"
# An alert is a CRITICAL finding, one line in the findings' one text form (docs/watch.md).
grep -Eq '^CRITICAL +straggler +rank 1 on node ' "$work/watch.out" ||
  fail "watch did not name rank 1: $(cat "$work/watch.out")"
if grep -Eq '^CRITICAL +straggler +rank 0 ' "$work/watch.out"; then fail "rank 0 named"; fi

echo "PASS: $(echo "$series" | jq '.data.result | length') duration series of 2 ranks, labels checked; $n dashboard queries evaluate; watch --prometheus names rank 1"
