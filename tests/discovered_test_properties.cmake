# Properties of single GoogleTest cases. gtest_discover_tests lists them only when their binary
# is built, so ctest reads this file after the lists (tests/CMakeLists.txt appends it to
# TEST_INCLUDE_FILES last).
#
# Five single-threaded MPI processes that spin (with sched_yield) while they wait for a peer:
# on 2 cores beside another test they took 107 s (57 s of it in the kernel, yielding), alone
# 18.5 s (2026-11-29). Both cores, then: nothing runs beside it.
set_tests_properties(LocateCliTest.MpiBackendUnderMpirun PROPERTIES PROCESSORS 2)
