// Tables for people (aligned columns), Markdown and CSV: shared by the summary and the
// comparison renderers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/strings.h"

namespace fabricscope::analyze {

using TableRows = std::vector<std::vector<std::string>>;

// Columns padded to their widest cell, two spaces apart; `right[i]` right-aligns column i
// (numbers). rows[0] is the header.
std::string AlignedTable(const TableRows& rows, const std::vector<bool>& right);

// A GitHub Markdown table; rows[0] is the header. Cells are padded like the published
// tables, so the source reads well too.
std::string MarkdownTable(const TableRows& rows);

// CSV lines: fabricscope::CsvLine (fabricscope/strings.h).
using fabricscope::CsvLine;

// "4.8", "0.01", "0": at most `decimals` decimals, trailing zeros dropped.
std::string Trimmed(double value, int decimals);

}  // namespace fabricscope::analyze
