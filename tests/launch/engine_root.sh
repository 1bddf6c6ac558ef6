#!/usr/bin/env bash
# The fresh Debian root the recipes run in as their engines run them (tests/launch/
# engine_run_test.py), made once per suite run and shared by every recipe (ctest fixture
# engine_root: FIXTURES_SETUP engine_root_setup, FIXTURES_CLEANUP engine_root_cleanup).
#
#   engine_root.sh setup SOURCE_DIR BUILD_DIR     prints the state directory
#   engine_root.sh cleanup BUILD_DIR
#   engine_root.sh state BUILD_DIR                prints the state directory (nothing made)
#
# setup: Debian 12 minbase from the container test's debootstrap tarball (BUILD_DIR/
# container-test/bookworm-minbase.tar, made here by `debootstrap --variant=minbase bookworm`
# from apt's mirror when absent, ~30 s once), then in it, once: install-deps.sh's build set
# (the recipes' own first step; apt's downloads kept in BUILD_DIR/engine-root-apt so a second
# suite run fetches nothing) and the recipes' build (`cmake -S . -B build ... --target
# fabricscope`, the recipes' own flags) on the source tree seen at its own path in the root
# through an overlay: the suite's build/ tree (built with the same Debian 12 packages) is the
# lower layer, so the build finds it built and writes only to the overlay (the suite's tree
# is not touched). The state (root, overlay layers) is a 3 GB tmpfs mounted at
# /var/tmp/fabricscope-engines-* until cleanup, outside the source tree (an overlay's upper
# layer may not lie inside its lower one).
# Root only, with debootstrap, unshare and chroot; 77 (ctest's skip) otherwise.
set -euo pipefail

die() {
  echo "engine_root: $*" >&2
  exit 1
}
skip() {
  echo "engine_root: SKIP: $*"
  exit 77
}

state_of() {
  local build
  build=$(realpath -m "$1")
  echo "/var/tmp/fabricscope-engines-$(printf '%s' "$build" | md5sum | cut -c1-10)"
}

# Runs CMD in ROOT with /proc, /dev and the source overlay mounted, in a private mount
# namespace (nothing stays mounted after it).
in_root() {
  local state=$1 src=$2
  shift 2
  # shellcheck disable=SC2016  # the inner shell expands them
  unshare --mount --propagation private -- bash -c '
    set -e
    state=$1 src=$2
    shift 2
    root=$state/root
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    if [ -n "${APT_CACHE:-}" ]; then mount --bind "$APT_CACHE" "$root/var/cache/apt/archives"; fi
    mkdir -p "$root$src"
    mount -t overlay overlay \
      -o "lowerdir=$src,upperdir=$state/src-up,workdir=$state/src-work" "$root$src"
    exec chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root LANG=C.UTF-8 "$@"' engine_root "$state" "$src" "$@"
}

cmd_setup() {
  local src build state cache mirror tmp
  src=$(realpath "$1")
  build=$(realpath -m "$2")
  [ "$(id -u)" -eq 0 ] || skip "needs root (chroot, mounts, network namespaces)"
  for tool in debootstrap unshare chroot ip; do
    command -v "$tool" >/dev/null || skip "needs $tool (scripts/install-deps.sh test)"
  done
  state=$(state_of "$build")
  cmd_cleanup "$build" >/dev/null
  # In memory: the root and the hosts' layers are written once and thrown away, and removing
  # half a gigabyte of files took a minute here under load; unmounting takes none.
  mkdir -p "$state"
  mount -t tmpfs -o size=3g,mode=700 fabricscope-engines "$state"
  mkdir -p "$state"/{root,src-up,src-work}

  cache=$build/container-test
  mkdir -p "$cache" "$build/engine-root-apt/partial"
  if [ ! -s "$cache/bookworm-minbase.tar" ]; then
    mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
      2>/dev/null || true)
    [ -n "$mirror" ] || mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/*.sources \
      2>/dev/null || true)
    [ -n "$mirror" ] || skip "no Debian mirror in apt's sources for debootstrap"
    tmp=$(mktemp -d /var/tmp/fabricscope-debootstrap.XXXXXX)
    echo "engine_root: debootstrap bookworm from $mirror"
    if ! debootstrap --variant=minbase bookworm "$tmp/rootfs" "$mirror" >"$tmp/log" 2>&1; then
      tail -n 20 "$tmp/log"
      rm -rf "$tmp"
      die "debootstrap failed"
    fi
    tar -C "$tmp/rootfs" -cf "$cache/bookworm-minbase.tar.part.$$" .
    mv "$cache/bookworm-minbase.tar.part.$$" "$cache/bookworm-minbase.tar"
    rm -rf "$tmp"
  fi
  tar -C "$state/root" -xf "$cache/bookworm-minbase.tar"
  cp /etc/resolv.conf "$state/root/etc/resolv.conf"
  # dpkg without fsync, as Debian's container images install (a test root outlives no crash).
  echo force-unsafe-io >"$state/root/etc/dpkg/dpkg.cfg.d/fabricscope-test"
  # apt's downloads outlive the suite run (BUILD_DIR/engine-root-apt): the root itself is new.
  mkdir -p "$state/root/var/cache/apt/archives"
  echo "engine_root: install-deps.sh build in the fresh root"
  local t0=$SECONDS
  if ! APT_CACHE=$build/engine-root-apt in_root "$state" "$src" \
      bash "$src/scripts/install-deps.sh" build >"$state/install.log" 2>&1; then
    tail -n 30 "$state/install.log"
    die "install-deps.sh build failed in the fresh root"
  fi
  # What the MPIJob's image adds to the build set (Containerfile): ssh for mpirun across pods.
  if ! APT_CACHE=$build/engine-root-apt in_root "$state" "$src" bash -c \
      'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
       openssh-client openssh-server && mkdir -p /run/sshd' >>"$state/install.log" 2>&1; then
    tail -n 30 "$state/install.log"
    die "the image's ssh packages failed to install in the fresh root"
  fi
  echo "engine_root: packages in $((SECONDS - t0)) s"
  t0=$SECONDS
  # The recipes' own configure and build, once (the first build).
  if ! in_root "$state" "$src" bash -c "cd '$src' && cmake -S . -B build -G Ninja \
      -DCMAKE_BUILD_TYPE=Release -DFABRICSCOPE_BUILD_TESTS=OFF -DFABRICSCOPE_BUILD_BENCH=OFF \
      && cmake --build build --target fabricscope" >"$state/build.log" 2>&1; then
    tail -n 30 "$state/build.log"
    die "the first build failed in the fresh root"
  fi
  echo "engine_root: first build in $((SECONDS - t0)) s ($(grep -c '^\[' "$state/build.log" || true) build steps)"
  echo "$state"
}

cmd_cleanup() {
  local state
  state=$(state_of "$1")
  [ -d "$state" ] || return 0
  # The state is a tmpfs of its own (setup); every other mount was made in a private mount
  # namespace and went with it.
  if mountpoint -q "$state"; then umount "$state" || umount -l "$state"; fi
  rm -rf --one-file-system "$state"
  echo "engine_root: removed $state"
}

case "${1:-}" in
  setup) [ $# -eq 3 ] || die "usage: $0 setup SOURCE_DIR BUILD_DIR"; cmd_setup "$2" "$3" ;;
  cleanup) [ $# -eq 2 ] || die "usage: $0 cleanup BUILD_DIR"; cmd_cleanup "$2" ;;
  state) [ $# -eq 2 ] || die "usage: $0 state BUILD_DIR"; state_of "$2" ;;
  *) die "usage: $0 setup SOURCE_DIR BUILD_DIR | cleanup BUILD_DIR | state BUILD_DIR" ;;
esac
