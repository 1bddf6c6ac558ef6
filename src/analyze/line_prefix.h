// What launchers put in front of a program's output lines, and taking it off.
#pragma once

#include <string_view>

namespace fabricscope::analyze {

// Removes every launcher prefix at the start of `line`, in any order and nesting:
//   mpirun --tag-output   "[1,0]<stdout>:"
//   SkyPilot / Ray        "(head, rank=0, pid=3808) ", "(worker1, rank=1, pid=2769, ip=...) "
//   srun -l / --label     "0: ", " 12: "
//   kubectl --timestamps  "2024-05-01T12:34:56.123456789Z "
//   other time stamps     "2024-05-01 12:34:56 ", "[2024-05-01 12:34:56] ", "May 01 12:34:56 "
//   kubectl --prefix      "[pod/nccl-test-0/nccl] "
//   docker compose        "worker-1  | "
//   pdsh / clush          "node01: " (only before nccl-tests output: '#' or a table row)
//   terminal colours      "\x1b[36m" around any of these
// Returns the rest, with its own leading blanks kept (columns line up with the header's).
std::string_view StripLaunchPrefixes(std::string_view line);

}  // namespace fabricscope::analyze
