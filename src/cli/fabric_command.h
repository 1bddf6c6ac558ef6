// `fabricscope fabric`: flags -> fabric::RunOptions -> the report in one format.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace fabricscope::cli {

// Declares fabric's flags on `app` and returns its action.
CommandAction SetupFabricCommand(CLI::App& app);

}  // namespace fabricscope::cli
