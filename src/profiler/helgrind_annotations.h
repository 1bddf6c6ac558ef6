// Tells helgrind (valgrind's thread checker) what the plugin's lock-free paths synchronise
// on. helgrind follows locks, condition variables and thread creation, not C++ atomics:
// without these, every record handed from an NCCL thread to the drain thread through an
// acquire/release pair is reported as a race (tests/profiler/helgrind_test.sh).
//
// FABRICSCOPE_HAPPENS_BEFORE(p) goes right before the release (store or RMW) on `p`, and
// FABRICSCOPE_HAPPENS_AFTER(p) right after the acquire that reads it. helgrind also takes
// two threads' accesses to one atomic for a race: FABRICSCOPE_ATOMIC(x) names `x` an atomic,
// whose accesses it then leaves unchecked (the orders they give stay with the two above). Outside
// valgrind each is valgrind's client-request sequence, a few register moves that do nothing;
// without valgrind's headers (it is a test package: scripts/install-deps.sh) they are empty.
#pragma once

#if defined(__has_include)
#if __has_include(<valgrind/helgrind.h>)
#include <valgrind/helgrind.h>
#define FABRICSCOPE_HAPPENS_BEFORE(p) ANNOTATE_HAPPENS_BEFORE(p)
#define FABRICSCOPE_HAPPENS_AFTER(p) ANNOTATE_HAPPENS_AFTER(p)
#define FABRICSCOPE_ATOMIC(x) ANNOTATE_BENIGN_RACE_SIZED(&(x), sizeof(x), "a std::atomic")
#endif
#endif

#ifndef FABRICSCOPE_HAPPENS_BEFORE
#define FABRICSCOPE_HAPPENS_BEFORE(p) static_cast<void>(p)
#define FABRICSCOPE_HAPPENS_AFTER(p) static_cast<void>(p)
#define FABRICSCOPE_ATOMIC(x) static_cast<void>(&(x))
#endif

namespace fabricscope::profiler {

// FABRICSCOPE_ATOMIC on each of `atomics`, as a call (the macro's expansion is a loop).
template <typename... Atomics>
inline void MarkAtomics(Atomics&... atomics) {
  ([](auto& atomic) { FABRICSCOPE_ATOMIC(atomic); }(atomics), ...);
}

}  // namespace fabricscope::profiler
