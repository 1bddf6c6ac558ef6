// `fabricscope analyze`, `compare` and `report`: results from any source, read, summarized,
// set side by side and drawn.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace fabricscope::cli {

// analyze FILE...: a summary per test (text, md, json, csv).
CommandAction SetupAnalyzeCommand(CLI::App& app);
// compare A B: busbw per size side by side, the ratio, and a significance test with repeats.
CommandAction SetupCompareCommand(CLI::App& app);
// report FILE...: SVG plots and one self-contained HTML file.
CommandAction SetupReportCommand(CLI::App& app);

}  // namespace fabricscope::cli
