// `fabricscope doctor`: flags -> DoctorOptions -> checks, gathered under a launcher.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace fabricscope::cli {

// Declares doctor's flags on `app` and returns its action.
CommandAction SetupDoctorCommand(CLI::App& app);

}  // namespace fabricscope::cli
