// Linked into every benchmark program (bench/CMakeLists.txt). `make test` compiles the
// benchmarks' own sources at -O0 (FABRICSCOPE_BENCH_COMPILE_OPTIONS): it only checks that they
// build, at half the compile time (issue 28 item 5). A program built that way must not print
// figures: its bare loops, the baselines the overheads are measured against, would be
// unoptimized while the library they are compared with is -O3. This refuses to run it, before
// main, with the command that builds it right.
#include <cstdio>
#include <cstdlib>

namespace {

[[maybe_unused]] const bool kRefusedUnoptimized = [] {
#ifndef __OPTIMIZE__
  std::fputs(
      "error: this benchmark was built without optimization (make test compiles the benchmarks "
      "at -O0 only to check that they build), so its figures would not be comparable.\n"
      "Build it optimized: `make bench`, or configure with "
      "-DFABRICSCOPE_BENCH_COMPILE_OPTIONS= (empty) and build its target again.\n",
      stderr);
  std::exit(2);
#endif
  return true;
}();

}  // namespace
