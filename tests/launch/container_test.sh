#!/usr/bin/env bash
# The shipped Containerfile, built with podman on a Debian 12 base made by debootstrap from
# the Debian mirror apt uses; inside the image: `fabricscope run -t 2` and a 2-process
# mpirun with the mpi backend; the NCCL profiler plugin is in the image with every library it
# links (ldd finds them all).
#
#   container_test.sh FABRICSCOPE CACHE_DIR PLUGIN
#
# CACHE_DIR (the build directory) keeps the base's tarball and podman's storage between runs:
# debootstrap takes ~30 s once. Root only; exits 77 (ctest's skip) with the reason when
# podman, debootstrap or runc is missing or podman cannot run containers here.
# podman on this kind of machine (docs/deploy.md): runc instead of crun (hybrid cgroups),
# default ulimits (no CAP_SYS_RESOURCE), no network namespace for containers, and each
# `podman run` ends ~20 s after its command (conmon): one run holds both checks.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${1:?usage: $0 FABRICSCOPE CACHE_DIR}
cache=${2:?usage: $0 FABRICSCOPE CACHE_DIR PLUGIN}
plugin=${3:?usage: $0 FABRICSCOPE CACHE_DIR PLUGIN}
label=container_image
skip() {
  echo "$label: SKIP: $*"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root (rootful podman, debootstrap)"
for tool in podman debootstrap runc; do
  command -v "$tool" >/dev/null || skip "needs $tool (scripts/install-deps.sh)"
done
mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
  2>/dev/null || true)
[ -n "$mirror" ] || mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/*.sources \
  2>/dev/null || true)
[ -n "$mirror" ] || skip "no Debian mirror in apt's sources for debootstrap"

cache=$(realpath -m "$cache/container-test")
mkdir -p "$cache"
tmp=$(mktemp -d /tmp/fabricscope-container.XXXXXX)
image=localhost/fabricscope-test:$$
cat >"$cache/containers.conf" <<'EOT'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]
netns = "none"
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
EOT
cat >"$cache/storage.conf" <<EOT
[storage]
driver = "overlay"
graphroot = "$cache/storage"
runroot = "$cache/runroot"
EOT
export CONTAINERS_CONF=$cache/containers.conf CONTAINERS_STORAGE_CONF=$cache/storage.conf

cleanup() {
  local rc=$?
  podman rmi -f "$image" >/dev/null 2>&1 || true
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT

# The base: Debian 12 minbase from the archive, made once.
base=localhost/fabricscope-bookworm:minbase
if ! podman image exists "$base"; then
  if [ ! -s "$cache/bookworm-minbase.tar" ]; then
    echo "$label: debootstrap bookworm from $mirror"
    debootstrap --variant=minbase bookworm "$tmp/rootfs" "$mirror" >"$tmp/debootstrap.log" 2>&1 || {
      tail -n 20 "$tmp/debootstrap.log"
      echo "$label: FAIL: debootstrap"
      exit 1
    }
    tar -C "$tmp/rootfs" -cf "$cache/bookworm-minbase.tar.part" .
    mv "$cache/bookworm-minbase.tar.part" "$cache/bookworm-minbase.tar"
    rm -rf "$tmp/rootfs"
  fi
  podman import "$cache/bookworm-minbase.tar" "$base" >/dev/null
fi

# The shipped Containerfile, with the binary in a context of its own (as `make image` does).
mkdir -p "$tmp/context"
cp "$root/Containerfile" "$tmp/context/"
cp "$(realpath "$bin")" "$tmp/context/fabricscope"
cp "$(realpath "$plugin")" "$tmp/context/libnccl-profiler-fabricscope.so"
podman build --network host --build-arg BASE="$base" --build-arg FABRICSCOPE_BIN=fabricscope \
  --build-arg FABRICSCOPE_PLUGIN=libnccl-profiler-fabricscope.so \
  -t "$image" -f "$tmp/context/Containerfile" "$tmp/context" >"$tmp/build.log" 2>&1 || {
  tail -n 30 "$tmp/build.log"
  echo "$label: FAIL: podman build"
  exit 1
}

failures=0
# .containerignore on a context shaped as a clone: the history and the build trees stay out,
# the binary and the plugin Containerfile copies from build/ come in (checked by a RUN step,
# so no extra container run).
ctx=$tmp/clone
mkdir -p "$ctx/.git/objects" "$ctx/build/CMakeFiles" "$ctx/build-asan" "$ctx/src" "$ctx/.ci"
echo x >"$ctx/.git/objects/pack"
echo x >"$ctx/build/CMakeCache.txt"
echo x >"$ctx/build/CMakeFiles/a.o"
echo x >"$ctx/build-asan/fabricscope"
echo x >"$ctx/build/fabricscope"
echo x >"$ctx/build/libnccl-profiler-fabricscope.so"
echo x >"$ctx/src/main.cc"
cp "$root/.containerignore" "$ctx/"
printf 'FROM %s\nCOPY . /ctx\nRUN %s\n' "$base" \
  'test ! -e /ctx/.git && test ! -e /ctx/.ci && test ! -e /ctx/build/CMakeCache.txt && test ! -e /ctx/build/CMakeFiles && test ! -e /ctx/build-asan/fabricscope && test -f /ctx/build/fabricscope && test -f /ctx/build/libnccl-profiler-fabricscope.so && test -f /ctx/src/main.cc && echo containerignore-ok' \
  >"$tmp/Containerfile.ignore"
ignore_rc=0
podman build --network host -t "$image-ignore" -f "$tmp/Containerfile.ignore" "$ctx" \
  >"$tmp/ignore.log" 2>&1 || ignore_rc=$?
podman rmi -f "$image-ignore" >/dev/null 2>&1 || true

rc=0
podman run --rm --entrypoint sh "$image" -c '
  echo "== plugin" && ldd /usr/local/lib/libnccl-profiler-fabricscope.so &&
  fabricscope run -t 2 -b 1K -e 64K -f 4 && echo "== mpirun" &&
  mpirun --allow-run-as-root --oversubscribe -np 2 \
    fabricscope run --backend mpi -b 1K -e 64K -f 4' >"$tmp/run.out" 2>&1 || rc=$?
check() {
  if grep -qE -- "$2" "$tmp/run.out"; then echo "$label: ok   $1"; else
    echo "$label: FAIL $1"
    failures=$((failures + 1))
  fi
}
if [ "$ignore_rc" -eq 0 ] && grep -q containerignore-ok "$tmp/ignore.log"; then
  echo "$label: ok   .containerignore keeps .git and the build trees out, build/fabricscope in"
else
  echo "$label: FAIL .containerignore on a clone-shaped context (podman build exit $ignore_rc):"
  tail -n 15 "$tmp/ignore.log"
  failures=$((failures + 1))
fi
[ "$rc" -eq 0 ] && echo "$label: ok   the container exits 0" || {
  echo "$label: FAIL the container exits $rc"
  failures=$((failures + 1))
}
check "fabricscope run -t 2 ran 2 thread ranks" "nThread 2 nGpus 1"
check "the gloo run validated" "^# Out of bounds values : 0 OK"
check "mpirun ran the mpi backend" "backend=mpi"
check "2 MPI processes" "^#  Rank  1 Group  0 Pid"
check "the profiler plugin links prometheus-cpp's pull library" "libprometheus-cpp-pull.so.1.0 => /"
if grep -q "not found" "$tmp/run.out"; then
  echo "$label: FAIL the profiler plugin's libraries: $(grep 'not found' "$tmp/run.out" | head -3)"
  failures=$((failures + 1))
else
  echo "$label: ok   every library the plugin links is in the image"
fi
[ "$(grep -c '^# Out of bounds values : 0 OK' "$tmp/run.out")" -eq 2 ] &&
  echo "$label: ok   both runs validated" || {
  echo "$label: FAIL both runs validated"
  failures=$((failures + 1))
}
[ "$failures" -eq 0 ] || cat "$tmp/run.out"
[ "$failures" -eq 0 ]
