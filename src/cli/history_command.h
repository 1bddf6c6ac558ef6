// `fabricscope history`: what a results store remembers, per node set, node and link, and
// with --regressions the elements below their own baseline (docs/fleet.md).
#pragma once

#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace fabricscope::cli {

// Declares history's flags on `app` and returns its action.
CommandAction SetupHistoryCommand(CLI::App& app);

}  // namespace fabricscope::cli
