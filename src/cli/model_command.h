// `fabricscope model`: predicted collective performance for a platform and scale, calibrated
// on and compared with measured runs, or (with --simulate) a flow-level simulation of the
// fabric. The flags fill a ModelRequest (fabricscope/model_run.h); the library does the rest.
#pragma once

#include <CLI/CLI.hpp>
#include <ostream>

#include "cli/command.h"
#include "fabricscope/model_run.h"

namespace fabricscope::cli {

// Declares the flags and returns the action.
CommandAction SetupModelCommand(CLI::App& app);

// Runs the request and renders its record on `out` in the requested format; warnings and
// the readers' diagnostics go to `err`. Returns the exit code (1 when a simulated collective
// cannot complete). Throws UsageError for bad flags.
int ExecuteModel(const ModelRequest& request, std::ostream& out, std::ostream& err);

}  // namespace fabricscope::cli
