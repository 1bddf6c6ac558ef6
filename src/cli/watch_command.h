// `fabricscope watch`: a running job judged from its profiler records (docs/watch.md).
#pragma once

#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace fabricscope::cli {

CommandAction SetupWatchCommand(CLI::App& app);

}  // namespace fabricscope::cli
