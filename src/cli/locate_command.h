// `fabricscope locate`: find the slow node and the slow link of a job, or of a simulated
// cluster.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace fabricscope::cli {

CommandAction SetupLocateCommand(CLI::App& app);

}  // namespace fabricscope::cli
