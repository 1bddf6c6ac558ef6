#include "analyze/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace fabricscope::analyze {
namespace {

std::vector<size_t> Widths(const TableRows& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  return widths;
}

}  // namespace

std::string AlignedTable(const TableRows& rows, const std::vector<bool>& right) {
  const std::vector<size_t> widths = Widths(rows);
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      const size_t pad = widths[i] - row[i].size();
      if (i > 0) line += "  ";
      const bool align_right = i < right.size() && right[i];
      if (align_right) line.append(pad, ' ');
      line += row[i];
      if (!align_right && i + 1 < row.size()) line.append(pad, ' ');
    }
    out += line + "\n";
  }
  return out;
}

std::string MarkdownTable(const TableRows& rows) {
  const std::vector<size_t> widths = Widths(rows);
  std::string out;
  for (size_t r = 0; r < rows.size(); ++r) {
    std::string line = "|";
    for (size_t i = 0; i < rows[r].size(); ++i) {
      std::string cell = rows[r][i];
      // A '|' inside a cell would split it.
      for (size_t at = cell.find('|'); at != std::string::npos; at = cell.find('|', at + 2)) {
        cell.replace(at, 1, "\\|");
      }
      line += " " + cell + std::string(widths[i] > cell.size() ? widths[i] - cell.size() : 0, ' ') +
              " |";
    }
    out += line + "\n";
    if (r == 0) {
      std::string rule = "|";
      for (size_t width : widths) rule += std::string(width + 2, '-') + "|";
      out += rule + "\n";
    }
  }
  return out;
}

std::string Trimmed(double value, int decimals) {
  if (!std::isfinite(value)) return fmt::format("{}", value);
  std::string text = fmt::format("{:.{}f}", value, decimals);
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  if (text == "-0") text = "0";
  return text;
}

}  // namespace fabricscope::analyze
