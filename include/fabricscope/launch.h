// Launchers: start the ranks of a run (threads in one process, for now) and collect the record.
#pragma once

#include "fabricscope/backend.h"
#include "fabricscope/options.h"
#include "fabricscope/report.h"
#include "fabricscope/result.h"

namespace fabricscope {

// Runs options.nthreads ranks as threads of this process over an in-memory store.
// Returns rank 0's record. Throws the first rank's error when any rank fails.
RunResult RunThreads(const RunOptions& options, Backend& backend, Reporter* sink);

// Fills the header part of the record (version, backend, config, start time, env).
RunResult MakeHeader(const RunOptions& options, const Backend& backend);

}  // namespace fabricscope
