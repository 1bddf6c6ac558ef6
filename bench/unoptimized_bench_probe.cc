// TEST PROGRAM for optimized_build.cc (ctest bench_refuses_unoptimized_build): built at -O0, it
// must be stopped before main with exit 2 and the message; reaching main prints "ran".
#include <cstdio>

int main() {
  std::puts("ran");
  return 0;
}
