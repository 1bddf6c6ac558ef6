// Slurm's host lists, expanded as `scontrol show hostnames` does, and bounded. The rules
// follow Slurm's src/common/hostlist.c (slurm-22-05-8-1: _parse_single_range, the width of
// a range is strlen of its low number; _push_range_list_with_suffix, several brackets in one
// name are every combination). Checked against scontrol 22.05.8 by
// tests/core/host_list_scontrol_test.sh. Where Slurm is lenient (a leading '+' or blank
// before a number, "a[1-]", a lone '['), this parser refuses instead of guessing.
#include "fabricscope/host_list.h"

#include <charconv>
#include <cstdint>
#include <string>
#include <vector>

#include "fabricscope/error.h"

namespace fabricscope {
namespace {

constexpr std::string_view kExample = "expected e.g. 'node1', 'gpu[07-09,12]' or 'a1,b[2-3]'";

class HostListError {
 public:
  explicit HostListError(std::string_view list) : list_(list) {}
  [[noreturn]] void Throw(const std::string& why) const {
    throw UsageError("Slurm host list '" + std::string(list_) + "': " + why + "; " +
                     std::string(kExample));
  }
  [[noreturn]] void TooMany(size_t max_names) const {
    Throw("expands to more than " + std::to_string(max_names) +
          " names, which is refused (Slurm's own ranges stop at 65536 hosts)");
  }

 private:
  std::string_view list_;
};

struct Range {
  uint64_t lo = 0;
  uint64_t hi = 0;
  size_t width = 0;  // digits of the low number as written: the zero padding
};

// One bracket's ranges and how many numbers they hold (at most `max_names`).
struct Bracket {
  std::vector<Range> ranges;
  size_t count = 0;
};

// An item: literal parts around its brackets (parts.size() == brackets.size() + 1).
struct Item {
  std::vector<std::string_view> parts;
  std::vector<Bracket> brackets;
};

uint64_t ParseNumber(std::string_view digits, const HostListError& error) {
  if (digits.empty()) error.Throw("empty number in a range");
  for (const char c : digits) {
    if (c < '0' || c > '9') error.Throw("'" + std::string(digits) + "' is not a number");
  }
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size()) {
    error.Throw("'" + std::string(digits) + "' is too large a number");
  }
  return value;
}

Bracket ParseBracket(std::string_view inside, size_t max_names, const HostListError& error) {
  Bracket bracket;
  size_t start = 0;
  while (true) {
    const size_t comma = std::min(inside.find(',', start), inside.size());
    const std::string_view part = inside.substr(start, comma - start);
    if (part.empty()) error.Throw("empty range in '[" + std::string(inside) + "]'");
    const size_t dash = part.find('-');
    Range range;
    const std::string_view first = part.substr(0, dash);
    range.lo = ParseNumber(first, error);
    range.hi =
        dash == std::string_view::npos ? range.lo : ParseNumber(part.substr(dash + 1), error);
    range.width = first.size();
    if (range.hi < range.lo) error.Throw("range " + std::string(part) + " runs down");
    // hi - lo cannot overflow (hi >= lo); compared before the + 1, which could.
    if (range.hi - range.lo >= max_names || bracket.count + (range.hi - range.lo) >= max_names) {
      error.TooMany(max_names);
    }
    bracket.count += static_cast<size_t>(range.hi - range.lo) + 1;
    bracket.ranges.push_back(range);
    if (comma == inside.size()) break;
    start = comma + 1;
  }
  return bracket;
}

Item ParseItem(std::string_view item, size_t max_names, const HostListError& error) {
  Item out;
  size_t at = 0;
  while (true) {
    const size_t open = item.find('[', at);
    const size_t stray = item.find(']', at);
    if (stray < open) error.Throw("']' without '['");
    out.parts.push_back(item.substr(at, open == std::string_view::npos ? open : open - at));
    if (open == std::string_view::npos) break;
    const size_t close = item.find(']', open);
    if (close == std::string_view::npos) error.Throw("'[' without ']'");
    const std::string_view inside = item.substr(open + 1, close - open - 1);
    if (inside.find('[') != std::string_view::npos) error.Throw("'[' inside brackets");
    out.brackets.push_back(ParseBracket(inside, max_names, error));
    at = close + 1;
  }
  return out;
}

// How many names `item` gives, refused past `room`.
size_t CountNames(const Item& item, size_t room, const HostListError& error, size_t max_names) {
  size_t total = 1;
  for (const Bracket& bracket : item.brackets) {
    if (bracket.count > room / total) error.TooMany(max_names);
    total *= bracket.count;
  }
  if (total > room) error.TooMany(max_names);
  return total;
}

void AppendNumber(std::string& name, uint64_t value, size_t width) {
  const std::string digits = std::to_string(value);
  if (digits.size() < width) name.append(width - digits.size(), '0');
  name += digits;
}

// Every combination of the item's brackets' numbers, the first bracket outermost.
void ExpandItem(const Item& item, std::vector<std::string>& out) {
  const size_t n = item.brackets.size();
  // Per bracket: which range, and the number within it.
  std::vector<size_t> range(n, 0);
  std::vector<uint64_t> value(n);
  for (size_t b = 0; b < n; ++b) value[b] = item.brackets[b].ranges[0].lo;
  while (true) {
    std::string name(item.parts[0]);
    for (size_t b = 0; b < n; ++b) {
      AppendNumber(name, value[b], item.brackets[b].ranges[range[b]].width);
      name += item.parts[b + 1];
    }
    out.push_back(std::move(name));
    // Advance the last bracket; carry into the one before it.
    size_t b = n;
    while (b > 0) {
      --b;
      const std::vector<Range>& ranges = item.brackets[b].ranges;
      if (value[b] < ranges[range[b]].hi) {
        ++value[b];
        break;
      }
      if (range[b] + 1 < ranges.size()) {
        value[b] = ranges[++range[b]].lo;
        break;
      }
      range[b] = 0;
      value[b] = ranges[0].lo;
      if (b == 0) return;
    }
    if (n == 0) return;
  }
}

bool IsSeparator(char c) { return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

std::vector<std::string> ExpandHostList(std::string_view list, size_t max_names) {
  const HostListError error(list);
  std::vector<Item> items;
  size_t total = 0;
  size_t i = 0;
  while (i < list.size()) {
    // One item: up to the next separator outside brackets.
    size_t end = i;
    bool inside = false;
    for (; end < list.size() && (inside || !IsSeparator(list[end])); ++end) {
      if (list[end] == '[') inside = true;
      if (list[end] == ']') inside = false;
    }
    if (end > i) {
      items.push_back(ParseItem(list.substr(i, end - i), max_names, error));
      total += CountNames(items.back(), max_names - total, error, max_names);
    }
    i = end + 1;
  }
  std::vector<std::string> out;
  out.reserve(total);
  for (const Item& item : items) ExpandItem(item, out);
  return out;
}

}  // namespace fabricscope
