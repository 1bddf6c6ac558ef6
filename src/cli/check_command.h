// `fabricscope check`: results read from files or measured by running the benchmark, judged
// against a platform of the catalog, a platform described by flags, or the detected one.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace fabricscope::cli {

// check [--platform NAME | generic flags] [RESULTS... | -- RUN FLAGS]: PASS, WARN or FAIL
// per test with the reason; exit 0 pass (WARN too, unless --strict), 1 fail, 2 usage.
CommandAction SetupCheckCommand(CLI::App& app);

}  // namespace fabricscope::cli
