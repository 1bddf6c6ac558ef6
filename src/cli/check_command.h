// `fabricscope check`: results read from files or measured by running the benchmark, judged
// against a platform of the catalog, a platform described by flags, or the detected one.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace fabricscope::cli {

// check [--platform NAME | generic flags] [RESULTS... | -- RUN FLAGS]: OK, WARN or CRITICAL
// per test with the reason; exit 0 OK (WARN too, unless --strict), 1 CRITICAL, 2 usage.
CommandAction SetupCheckCommand(CLI::App& app);

}  // namespace fabricscope::cli
