#!/usr/bin/env bash
# Installs everything fabricscope needs to build and test, from Debian's archive.
# Idempotent: packages already present are skipped, so a second run costs seconds.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libcli11-dev nlohmann-json3-dev libfmt-dev
  libhwloc-dev libgloo-dev libopenmpi-dev openmpi-bin
  libgtest-dev libgmock-dev
  libpugixml-dev
  clang-format iproute2 iperf3 jq
  # analyze's tests: the libFuzzer target (clang, its runtime), and the HTML report rendered
  # by headless Chromium (about 10 s to install) with the screenshot decoded by zlib.
  clang libclang-rt-14-dev zlib1g-dev chromium
  # launch's tests: a real Slurm (slurmctld, slurmd, munge; pmix comes with the plugins),
  # the deploy/ recipes' YAML, and the container image (podman on a debootstrap'ed base).
  slurm-wlm munge python3 python3-yaml podman buildah debootstrap runc
  # the NCCL profiler plugin's Prometheus endpoint (prometheus-cpp pull), and watch's tests:
  # Debian's Prometheus server scraping it, curl fetching /metrics; watch --prometheus (libcurl)
  prometheus-cpp-dev prometheus curl libcurl4-openssl-dev
  # locate's classifier: Student's t quantiles (Boost.Math, header-only).
  libboost-math-dev
  # fabric's test bed: a simulated InfiniBand fabric (ibsim, libumad2sim) routed by the real
  # opensm and read by the real infiniband-diags (docs/fabric.md).
  ibsim-utils libumad2sim0 opensm infiniband-diags
  # make tidy: clang-tidy and its run-clang-tidy (ThreadSanitizer's runtime, libtsan2, comes
  # with GCC).
  clang-tidy
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run as root (or: sudo $0) to install them" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
