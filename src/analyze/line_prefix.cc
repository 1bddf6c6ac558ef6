// Launcher prefixes, recognized by hand-written matchers: this runs on every line of logs
// that reach hundreds of MB, and each matcher gives up on its first character.
#include "analyze/line_prefix.h"

#include <array>
#include <cstddef>

#include "analyze/text_fields.h"

namespace fabricscope::analyze {
namespace {

// Each matcher returns the length of the prefix at the start of `s`, or 0.

// Takes one blank after a prefix that the launcher separates with one.
size_t WithBlank(std::string_view s, size_t n) {
  return n < s.size() && (s[n] == ' ' || s[n] == '\t') ? n + 1 : n;
}

// ESC [ parameters final-byte: colour codes SkyPilot and kubectl wrappers put around prefixes.
size_t AnsiEscape(std::string_view s) {
  if (s.size() < 3 || s[0] != '\x1b' || s[1] != '[') return 0;
  for (size_t i = 2; i < s.size() && i < 32; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x40 || c > 0x7e) continue;
    // A reset that closes a coloured prefix takes the blank separating it from the line.
    const bool reset = c == 'm' && (i == 2 || (i == 3 && s[2] == '0'));
    return reset ? WithBlank(s, i + 1) : i + 1;
  }
  return 0;
}

size_t Digits(std::string_view s, size_t i) {
  size_t n = 0;
  while (i + n < s.size() && IsDigit(s[i + n])) ++n;
  return n;
}

// Open MPI --tag-output: "[1,0]<stdout>:" (no blank follows it).
size_t MpirunTag(std::string_view s) {
  if (s.empty() || s[0] != '[') return 0;
  size_t i = 1;
  size_t d = Digits(s, i);
  if (d == 0 || i + d >= s.size() || s[i + d] != ',') return 0;
  i += d + 1;
  d = Digits(s, i);
  if (d == 0 || i + d >= s.size() || s[i + d] != ']') return 0;
  i += d + 1;
  const std::string_view rest = s.substr(i);
  if (StartsWith(rest, "<stdout>:") || StartsWith(rest, "<stderr>:")) return i + 9;
  return 0;
}

// SkyPilot and Ray: "(head, rank=0, pid=3808) ", "(pid=123, ip=10.0.0.2) ".
size_t ParenTag(std::string_view s) {
  if (s.empty() || s[0] != '(') return 0;
  const size_t close = s.find(')', 1);
  if (close == std::string_view::npos || close > 200) return 0;
  const std::string_view inside = s.substr(1, close - 1);
  if (inside.find('(') != std::string_view::npos) return 0;
  if (!Contains(inside, "rank=") && !Contains(inside, "pid=")) return 0;
  return WithBlank(s, close + 1);
}

// "2024-05-01T12:34:56.123456789Z", "2024-05-01 12:34:56,123", "2024-05-01T12:34:56+02:00".
// Returns the length of the stamp itself.
size_t IsoStamp(std::string_view s) {
  if (s.size() < 19 || !IsDate(s.substr(0, 10)) || (s[10] != 'T' && s[10] != ' ') ||
      !IsClock(s.substr(11, 8))) {
    return 0;
  }
  size_t i = 19;
  if (i < s.size() && (s[i] == '.' || s[i] == ',')) {
    const size_t d = Digits(s, i + 1);
    if (d == 0) return 0;
    i += 1 + d;
  }
  if (i < s.size() && s[i] == 'Z') {
    ++i;
  } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    const size_t d = Digits(s, i + 1);
    if (d == 2 && i + 3 < s.size() && s[i + 3] == ':' && Digits(s, i + 4) == 2) {
      i += 6;
    } else if (d == 4) {
      i += 5;
    } else {
      return 0;
    }
  }
  return i;
}

// "May 01 12:34:56" and "May  1 12:34:56", as `ts` and syslog write them.
size_t MonthStamp(std::string_view s) {
  if (s.size() < 15 || !IsAlpha(s[0]) || !IsAlpha(s[1]) || !IsAlpha(s[2]) || s[3] != ' ') return 0;
  size_t i = 4;
  if (s[i] == ' ') ++i;
  const size_t d = Digits(s, i);
  if (d == 0 || d > 2 || i + d >= s.size() || s[i + d] != ' ') return 0;
  i += d + 1;
  if (!IsClock(s.substr(i))) return 0;
  return i + 8;
}

size_t TimeStamp(std::string_view s) {
  if (s.empty()) return 0;
  if (s[0] == '[') {
    const size_t n = IsoStamp(s.substr(1));
    if (n == 0 || n + 1 >= s.size() || s[n + 1] != ']') return 0;
    return WithBlank(s, n + 2);
  }
  size_t n = IsDigit(s[0]) ? IsoStamp(s) : MonthStamp(s);
  if (n == 0) return 0;
  // A stamp is only a prefix when something separates it from the line.
  if (n < s.size() && s[n] != ' ' && s[n] != '\t') return 0;
  return WithBlank(s, n);
}

// kubectl logs --prefix: "[pod/name/container] ".
size_t KubectlPrefix(std::string_view s) {
  if (!StartsWith(s, "[pod/")) return 0;
  const size_t close = s.find(']');
  if (close == std::string_view::npos || close > 300) return 0;
  return WithBlank(s, close + 1);
}

// srun -l: "0: ", " 12: " (right-aligned task ids).
size_t SrunLabel(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  const size_t d = Digits(s, i);
  if (d == 0 || d > 6) return 0;
  i += d;
  if (i + 1 >= s.size() || s[i] != ':' || s[i + 1] != ' ') return 0;
  return i + 2;
}

// Letters, digits, '_', '-', '.': a table, because every line of a log that starts with a host
// name is scanned through it.
constexpr auto kNameChars = [] {
  std::array<bool, 256> table{};
  for (int c = 0; c < 256; ++c) {
    table[static_cast<size_t>(c)] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                    (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
  }
  return table;
}();

bool IsNameChar(char c) { return kNameChars[static_cast<unsigned char>(c)]; }

// How many name characters `s` starts with: the scan docker compose's and pdsh's prefixes share.
size_t NameLength(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && IsNameChar(s[i])) ++i;
  return i;
}

// docker compose: "worker-1  | ". `name` is NameLength(s).
size_t ComposePrefix(std::string_view s, size_t name) {
  size_t i = name;
  if (i == 0 || i >= s.size() || s[i] != ' ') return 0;
  while (i < s.size() && s[i] == ' ') ++i;
  if (i + 1 >= s.size() || s[i] != '|' || s[i + 1] != ' ') return 0;
  return i + 2;
}

// What nccl-tests output starts with, '#' lost or not (dstack drops it).
bool IsTestsOutput(std::string_view rest) {
  if (rest.empty()) return false;
  if (rest[0] == '#' || IsDigit(rest[0])) return true;
  for (std::string_view word :
       {"nThread", "Rank ", "Using devices", "size ", "out-of-place", "in-place", "(B)",
        "Out of bounds", "Avg bus", "Collective test", "nccl-tests ", "NCCL version"}) {
    if (StartsWith(rest, word)) return true;
  }
  return false;
}

// pdsh and clush: "node01: " -- but only when nccl-tests output follows, because
// "rccl-tests: Version ..." and many log lines have the same shape.
// `name` is NameLength(s).
size_t HostPrefix(std::string_view s, size_t name) {
  if (s.empty() || !(IsAlpha(s[0]) || IsDigit(s[0]))) return 0;
  const size_t i = name;
  if (i + 1 >= s.size() || s[i] != ':' || s[i + 1] != ' ') return 0;
  if (!IsTestsOutput(TrimLeft(s.substr(i + 2)))) return 0;
  return i + 2;
}

}  // namespace

std::string_view StripLaunchPrefixes(std::string_view line) {
  // Prefixes nest (SkyPilot wraps mpirun's, kubectl adds a time stamp to both); a bound on
  // the rounds keeps a pathological line linear.
  for (int round = 0; round < 16; ++round) {
    if (line.empty() || line[0] == '#') return line;
    size_t n = AnsiEscape(line);
    if (n == 0) n = MpirunTag(line);
    if (n == 0) n = ParenTag(line);
    if (n == 0) n = TimeStamp(line);
    if (n == 0) n = KubectlPrefix(line);
    if (n == 0) n = SrunLabel(line);
    if (n == 0) {
      const size_t name = NameLength(line);
      n = ComposePrefix(line, name);
      if (n == 0) n = HostPrefix(line, name);
    }
    if (n == 0) return line;
    line.remove_prefix(n);
  }
  return line;
}

}  // namespace fabricscope::analyze
