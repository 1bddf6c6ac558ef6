#!/usr/bin/env bash
# Installs what fabricscope needs, from the distribution's archive (apt-get).
#
#   install-deps.sh build   what `make run` needs: compiler, CMake, Ninja and the libraries the
#                           binary links (a GPU node's image needs no more)
#   install-deps.sh image   the build set and prometheus-cpp, which the NCCL profiler plugin links:
#                           what `make image` needs to put the plugin into the image
#   install-deps.sh test    the build set and what `make test` needs: GoogleTest, clang-format,
#                           clang-tidy, and the test beds (Slurm, Prometheus, podman, ibsim...)
#   install-deps.sh list build|test   print the package names for this distribution, install nothing
#
# Knows Debian 12 (bookworm) and Ubuntu 22.04 (jammy) / 24.04 (noble), read from
# /etc/os-release (FABRICSCOPE_OS_RELEASE names another file, for a test). Idempotent: packages
# already present are skipped, so a second run costs seconds. As root it runs apt-get itself;
# otherwise through sudo when sudo is there, else it says what to install and exits 1.
set -euo pipefail

usage() {
  echo "usage: $0 build|image|test | $0 list build|image|test" >&2
  exit 2
}

list_only=no
if [ "${1:-}" = list ]; then
  list_only=yes
  shift
fi
set_name=${1:-test}
case "$set_name" in
  build | image | test) ;;
  *) usage ;;
esac

os_release=${FABRICSCOPE_OS_RELEASE:-/etc/os-release}
if [ ! -r "$os_release" ]; then
  echo "install-deps: cannot read $os_release: which distribution is this?" >&2
  exit 1
fi
# shellcheck disable=SC1090
distro=$(. "$os_release" && echo "${ID:-unknown}-${VERSION_ID:-unknown}")

# Names that differ between the distributions. The LLVM version is the one each release
# ships as its default clang (Debian 12: 14, Ubuntu 22.04: 14, Ubuntu 24.04: 18).
case "$distro" in
  debian-12)
    clang_rt=libclang-rt-14-dev
    browser=chromium
    ;;
  ubuntu-22.04)
    clang_rt=libclang-common-14-dev # jammy ships the compiler-rt libraries in this package
    browser=""                      # jammy's chromium-browser is a snap wrapper: not installed
    ;;
  ubuntu-24.04)
    clang_rt=libclang-rt-18-dev
    browser=""                      # noble's chromium-browser is a snap wrapper: not installed
    ;;
  *)
    echo "install-deps: $distro is not one this script knows (Debian 12, Ubuntu 22.04, 24.04)." >&2
    echo "install-deps: install the packages of docs/development.md by hand, then run cmake." >&2
    exit 1
    ;;
esac

# The build set: the binary and its libraries (CMakeLists.txt's find_package calls).
build_packages=(
  build-essential cmake ninja-build pkg-config git
  libcli11-dev nlohmann-json3-dev libfmt-dev
  libhwloc-dev libgloo-dev libopenmpi-dev openmpi-bin
  libpugixml-dev libcurl4-openssl-dev
  # locate's classifier: Student's t quantiles (Boost.Math, header-only).
  libboost-math-dev
  # the results store (docs/fleet.md): embedded SQLite, PostgreSQL's client library
  libsqlite3-dev libpq-dev
)

# The test set, on top of the build set.
test_packages=(
  libgtest-dev libgmock-dev
  clang-format iproute2 iperf3 jq
  # the fault test bed (tests/multihost/faults_testbed.sh): black holes and packet loss
  iptables
  # analyze's tests: the libFuzzer target (clang, its runtime), and the HTML report rendered
  # by headless Chromium (about 10 s to install; left out where only a snap exists) with the
  # screenshot decoded by zlib.
  clang "$clang_rt" zlib1g-dev $browser
  # launch's tests: a real Slurm (slurmctld, slurmd, munge; pmix comes with the plugins),
  # the deploy/ recipes' YAML, and the container image (podman on a debootstrap'ed base).
  slurm-wlm munge python3 python3-yaml podman buildah debootstrap runc
  # the recipes checked against their engines' own schemas (tests/launch/schemas/)
  python3-jsonschema
  # the NCCL profiler plugin's Prometheus endpoint (prometheus-cpp pull; the tests load the
  # plugin), and watch's tests: Prometheus scraping it, curl fetching /metrics.
  prometheus-cpp-dev prometheus curl
  # fabric's test bed: a simulated InfiniBand fabric (ibsim, libumad2sim) routed by the real
  # opensm and read by the real infiniband-diags (docs/fabric.md).
  ibsim-utils libumad2sim0 opensm infiniband-diags
  # the results store's tests: a real PostgreSQL server started in a temporary directory
  # (tests/fleet), and sqlite3 to look into a store by hand
  postgresql sqlite3
  # make tidy: clang-tidy and its run-clang-tidy (ThreadSanitizer's runtime comes with GCC).
  clang-tidy
  # helgrind on the NCCL profiler plugin (tests/profiler/helgrind_test.sh)
  valgrind
)

# The image set: the plugin's library too (`make image` builds and ships the plugin).
image_packages=(prometheus-cpp-dev)

packages=("${build_packages[@]}")
if [ "$set_name" = image ]; then
  packages+=("${image_packages[@]}")
fi
if [ "$set_name" = test ]; then
  packages+=("${test_packages[@]}")
fi

if [ "$list_only" = yes ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages of the $set_name set present ($distro)"
  exit 0
fi

# Root runs apt-get itself (a container, dstack's default image: no sudo there); anyone else
# through sudo.
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-deps: missing packages ($distro, $set_name set): ${missing[*]}" >&2
    echo "install-deps: not root and no sudo: run this script as root to install them" >&2
    exit 1
  fi
  as_root=(sudo)
fi

echo "install-deps: installing the $set_name set's missing packages ($distro): ${missing[*]}"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
