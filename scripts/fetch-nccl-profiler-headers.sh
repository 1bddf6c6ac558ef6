#!/usr/bin/env bash
# Fetches NVIDIA's NCCL profiler-plugin headers (plugins/profiler/example/nccl/*.h of
# NVIDIA/nccl at v2.30.7-1, commit 73cf112295c33aee2b895f329f592f2a9b4b0f97) into DIR/nccl,
# for the profiler ABI harness (tests/profiler/abi_harness.cc). They are NVIDIA's code under
# its license and are not committed here. Then configure with
#   -DFABRICSCOPE_NCCL_PROFILER_HEADERS=DIR
# Usage: scripts/fetch-nccl-profiler-headers.sh DIR
set -euo pipefail
dir=${1:?usage: $0 DIR}
commit=73cf112295c33aee2b895f329f592f2a9b4b0f97
base=https://raw.githubusercontent.com/NVIDIA/nccl/$commit/plugins/profiler/example/nccl
mkdir -p "$dir/nccl"
for f in common.h err.h types.h profiler.h profiler_net.h net_ib_v1.h net_socket_v1.h \
         profiler_v1.h profiler_v2.h profiler_v3.h profiler_v4.h profiler_v5.h profiler_v6.h; do
  curl -fsSL --retry 3 -o "$dir/nccl/$f" "$base/$f" || {
    echo "cannot fetch $base/$f: check the network, or copy that directory of an NVIDIA/nccl" \
         "checkout at v2.30.7-1 to $dir/nccl" >&2
    exit 1
  }
done
echo "NCCL profiler headers of NVIDIA/nccl $commit in $dir/nccl"
