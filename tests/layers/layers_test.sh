#!/bin/bash
# The layer rule holds the build (cmake/Layers.cmake, cmake/check_layers.cmake): a copy of
# tests/layers/fixture (two layers, base below top) builds as declared, and each forbidden
# include added to it breaks the build with the file, the line and what the layer may use.
# Then the same for the project itself: a forbidden include in a copy of one real layer's file
# list fails that layer's check, as the project's build runs it.
# Usage: layers_test.sh SOURCE_DIR BUILD_DIR
set -u
source_dir=$1
build_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

fresh() {  # $1: name: a fresh copy of the fixture in $work/$1
  rm -rf "${work:?}/$1"
  cp -r "$source_dir/tests/layers/fixture" "$work/$1"
}

build() {  # $1: name: configure and build $work/$1, output in $work/$1.log
  cmake -S "$work/$1" -B "$work/$1/build" -DFABRICSCOPE_SOURCE_DIR="$source_dir" \
    >"$work/$1.log" 2>&1 && cmake --build "$work/$1/build" >>"$work/$1.log" 2>&1
}

expect_broken() {  # $1: name, $2: text the failure must show
  if build "$1"; then
    fail "$1: the build passed; a forbidden include must break it"
  elif ! grep -qF -- "$2" "$work/$1.log"; then
    fail "$1: the build failed without saying '$2':"
    cat "$work/$1.log"
  else
    echo "ok: $1 broke the build: $(grep -F -- "$2" "$work/$1.log" | head -1 | sed 's/^ *//')"
  fi
}

# The fixture as declared builds.
fresh allowed
if build allowed; then echo "ok: the declared layers build"; else
  fail "the fixture's declared layers did not build:"; cat "$work/allowed.log"; fi

# base includes the public header of the layer above it.
fresh upward
sed -i '1a #include "fabricscope/top.h"' "$work/upward/src/base/base.cc"
expect_broken upward "src/base/base.cc:2: includes fabricscope/top.h of layer top, which layer base may not use"

# top includes a private header of the layer below it.
fresh private
sed -i '1a #include "base/detail.h"' "$work/private/src/top/top.cc"
expect_broken private "src/top/top.cc:2: includes base/detail.h, a private header of layer base"

# A public header includes a header no layer declares.
fresh undeclared
echo 'int Stray();' >"$work/undeclared/include/fabricscope/stray.h"
sed -i '1a #include "fabricscope/stray.h"' "$work/undeclared/src/top/top.cc"
expect_broken undeclared "includes fabricscope/stray.h, a header no layer declares"

# A layer whose dependency is declared after it (a cycle could follow): refused at configure.
fresh order
sed -i 's/^fabricscope_layer(base MODULE_DIRS base/fabricscope_layer(base DEPS top MODULE_DIRS base/' \
  "$work/order/CMakeLists.txt"
expect_broken order "its dependency 'top' is not a layer declared before it"

# The project's own check, as its build runs it: fabric's file list plus a file that includes
# check's header (a layer above fabric) and one of analyze's private headers.
command=$(grep -o "cmake -DLAYER=fabric [^&]*check_layers.cmake" "$build_dir/build.ninja" | head -1)
if [ -z "$command" ]; then
  fail "no layer check of fabric in $build_dir/build.ninja"
else
  mkdir -p "$work/project/src/fabric"
  printf '#include "fabricscope/fabric.h"\n#include "fabricscope/check.h"\n#include "analyze/table.h"\n' \
    >"$work/project/src/fabric/forbidden.cc"
  cp "$build_dir/layers/fabric.files" "$work/project/fabric.files"
  echo "$work/project/src/fabric/forbidden.cc" >>"$work/project/fabric.files"
  # The same command with the file list and stamp swapped for the copies.
  command=${command//"$build_dir/layers/fabric.files"/"$work/project/fabric.files"}
  command=${command//"$build_dir/layers/fabric.ok"/"$work/project/fabric.ok"}
  if eval "$command" >"$work/project.log" 2>&1; then
    fail "the project's fabric check passed a file that includes fabricscope/check.h"
  elif ! grep -q "includes fabricscope/check.h of layer check" "$work/project.log" ||
    ! grep -q "includes analyze/table.h, a private header of layer analyze" "$work/project.log"; then
    fail "the project's fabric check failed without naming both includes:"
    cat "$work/project.log"
  else
    echo "ok: the project's fabric check refuses check.h and analyze/table.h"
  fi
fi

# docs/development.md's layer table says what CMakeLists.txt declares, layer by layer, in order.
declared=$(grep -E '^fabricscope_layer\(' "$source_dir/CMakeLists.txt" |
  sed -E 's/^fabricscope_layer\(([a-z]+)( DEPS ([a-z ]+))? MODULE_DIRS.*/\1:\3/; s/ /, /g')
documented=$(sed -n '/^## Layers/,/^## /p' "$source_dir/docs/development.md" |
  grep -E '^\| `[a-z]+` \|' | sed -E 's/^\| `([a-z]+)` \| ?([a-z, ]*) \|.*/\1:\2/; s/ +$//')
if [ -z "$declared" ] || [ "$declared" != "$documented" ]; then
  fail "docs/development.md's layer table differs from CMakeLists.txt's layers:"
  diff <(echo "$declared") <(echo "$documented")
else
  echo "ok: docs/development.md's layer table is CMakeLists.txt's ($(echo "$declared" | wc -l) layers)"
fi

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all layer checks behaved"
