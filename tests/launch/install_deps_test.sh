#!/usr/bin/env bash
# scripts/install-deps.sh's package sets per distribution, read from os-release files as each
# distribution writes them (FABRICSCOPE_OS_RELEASE), in its `list` mode (installs nothing):
# the build set is a part of the test set and holds none of the test tools; each known
# distribution gets its own names; an unknown one and an unknown set are refused with a reason.
set -euo pipefail
script=${1:?usage: install_deps_test.sh scripts/install-deps.sh}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() { # description, condition...
  local what=$1
  shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}

printf 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n' >"$work/debian-12"
printf 'NAME="Ubuntu"\nVERSION_ID="22.04"\nID=ubuntu\nID_LIKE=debian\n' >"$work/ubuntu-22.04"
printf 'NAME="Ubuntu"\nVERSION_ID="24.04"\nID=ubuntu\nID_LIKE=debian\n' >"$work/ubuntu-24.04"
printf 'NAME="Fedora Linux"\nVERSION_ID=40\nID=fedora\n' >"$work/fedora-40"

for distro in debian-12 ubuntu-22.04 ubuntu-24.04; do
  export FABRICSCOPE_OS_RELEASE=$work/$distro
  bash "$script" list build >"$work/$distro.build"
  bash "$script" list test >"$work/$distro.test"
  check "$distro: build set lists the compiler and the libraries" \
    grep -qx libgloo-dev "$work/$distro.build"
  check "$distro: build set has no test tool" \
    bash -c "! grep -qxE 'libgtest-dev|slurm-wlm|prometheus|podman|opensm|clang-tidy|chromium|prometheus-cpp-dev' '$work/$distro.build'"
  check "$distro: build set is part of the test set" \
    bash -c "[ -z \"\$(comm -23 <(sort '$work/$distro.build') <(sort '$work/$distro.test'))\" ]"
  check "$distro: test set has the test tools" grep -qx slurm-wlm "$work/$distro.test"
  bash "$script" list image >"$work/$distro.image"
  check "$distro: image set is the build set and prometheus-cpp-dev (the plugin's library)" \
    bash -c "[ \"\$(sort '$work/$distro.image')\" = \"\$( (cat '$work/$distro.build'; echo prometheus-cpp-dev) | sort)\" ]"
done
check "debian-12: compiler-rt is libclang-rt-14-dev" grep -qx libclang-rt-14-dev "$work/debian-12.test"
check "ubuntu-22.04: compiler-rt is in libclang-common-14-dev" \
  grep -qx libclang-common-14-dev "$work/ubuntu-22.04.test"
check "ubuntu-24.04: compiler-rt is libclang-rt-18-dev" grep -qx libclang-rt-18-dev "$work/ubuntu-24.04.test"
check "ubuntu: no chromium (a snap there)" bash -c "! grep -q chromium '$work/ubuntu-24.04.test'"

export FABRICSCOPE_OS_RELEASE=$work/fedora-40
if out=$(bash "$script" list build 2>&1); then rc=0; else rc=$?; fi
check "fedora-40 refused (exit $rc)" test "$rc" -eq 1
check "fedora-40: the message names the distribution and the known ones" \
  bash -c "grep -q 'fedora-40' <<<'$out' && grep -q 'Ubuntu 22.04' <<<'$out'"
export FABRICSCOPE_OS_RELEASE=$work/debian-12
if bash "$script" everything >/dev/null 2>&1; then rc=0; else rc=$?; fi
check "an unknown set is a usage error (exit $rc)" test "$rc" -eq 2

if [ "$fail" -ne 0 ]; then echo "install_deps_test: FAILED"; exit 1; fi
echo "install_deps_test: all passed"
