// Tables for people (aligned columns), Markdown and CSV: shared by the summary and the
// comparison renderers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fabricscope::analyze {

using TableRows = std::vector<std::vector<std::string>>;

// Columns padded to their widest cell, two spaces apart; `right[i]` right-aligns column i
// (numbers). rows[0] is the header.
std::string AlignedTable(const TableRows& rows, const std::vector<bool>& right);

// A GitHub Markdown table; rows[0] is the header. Cells are padded like the published
// tables, so the source reads well too.
std::string MarkdownTable(const TableRows& rows);

// RFC 4180: a field is quoted only when it holds a comma, a quote or a line break.
std::string CsvField(std::string_view text);
std::string CsvLine(const std::vector<std::string>& fields);

// "4.8", "0.01", "0": at most `decimals` decimals, trailing zeros dropped.
std::string Trimmed(double value, int decimals);

}  // namespace fabricscope::analyze
