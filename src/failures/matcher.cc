// Matching a log line against the signatures: a format string's literal parts, in order.
#include <algorithm>
#include <array>
#include <cctype>
#include <tuple>

#include "fabricscope/failures.h"

namespace fabricscope {
namespace {

// NCCL's INFO lines: "host:pid:tid [dev] NCCL INFO message".
constexpr std::string_view kInfoMark = "NCCL INFO ";
// How far into an INFO message a format's first literal part may start (after "%s" of a
// subsystem name such as NET, GIN or RMA).
constexpr size_t kInfoLead = 8;

// The length of the printf conversion that starts at format[at] ('%'), 0 when it is not
// one ("%%" is a literal and handled by the caller).
size_t ConversionLength(std::string_view format, size_t at) {
  size_t i = at + 1;
  const auto in = [&](std::string_view set) {
    return i < format.size() && set.find(format[i]) != std::string_view::npos;
  };
  while (in("-+ #0'")) ++i;
  while (in("0123456789*")) ++i;
  if (in(".")) {
    ++i;
    while (in("0123456789*")) ++i;
  }
  while (in("hlLqjzt")) ++i;
  if (in("diouxXeEfFgGaAcspn")) return i + 1 - at;
  return 0;
}

bool HasWord(std::string_view text) {
  return std::any_of(text.begin(), text.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; });
}

std::string_view TrimBlank(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  return s;
}

}  // namespace

std::vector<std::string> FormatFragments(std::string_view format) {
  std::vector<std::string> out;
  std::string current;
  const auto flush = [&] {
    // White space at either end is not matched: a conversion that printed nothing leaves
    // its neighbours' spaces side by side, and launchers re-flow lines.
    const std::string_view part = TrimBlank(current);
    if (HasWord(part)) out.emplace_back(part);
    current.clear();
  };
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] == '%' && i + 1 < format.size() && format[i + 1] == '%') {
      current += '%';
      ++i;
      continue;
    }
    if (format[i] == '%') {
      if (const size_t n = ConversionLength(format, i); n > 0) {
        flush();
        i += n - 1;
        continue;
      }
    }
    if (format[i] == '\n') {
      flush();
      continue;
    }
    current += format[i];
  }
  flush();
  return out;
}

bool MatchesFragments(std::string_view line, const std::vector<std::string>& fragments) {
  if (fragments.empty()) return false;
  size_t at = 0;
  for (const std::string& fragment : fragments) {
    const size_t found = line.find(fragment, at);
    if (found == std::string_view::npos) return false;
    at = found + fragment.size();
  }
  return true;
}

TextSet::TextSet(std::vector<std::string> texts) : texts_(std::move(texts)) {
  // (the loader's fragments hold a word: a text of one byte is never looked for)
  size_t shortest = 0;
  for (const std::string& text : texts_) {
    if (text.size() >= 2 && (shortest == 0 || text.size() < shortest)) shortest = text.size();
  }
  if (shortest == 0) return;
  stride_ = shortest - 1;
  // Any stride_ consecutive pairs of a text serve; those a text shares with the lines every big
  // log is made of (NCCL's INFO mark, its variables' prefix) would stop the scan on every NCCL
  // line, so each text is indexed by the window of its pairs fewest of those hold.
  constexpr std::string_view kCommon = " NCCL INFO NCCL_ Channel 00/0 : 0[0] -> via ";
  auto common = [&](std::string_view window) {
    size_t n = 0;
    for (size_t at = 0; at + 1 < window.size(); ++at) {
      n += kCommon.find(window.substr(at, 2)) != std::string_view::npos ? 1 : 0;
    }
    return n;
  };
  for (size_t i = 0; i < texts_.size(); ++i) {
    const std::string& text = texts_[i];
    if (text.size() < 2) continue;
    size_t best = 0;
    for (size_t start = 1; start + stride_ < text.size(); ++start) {
      if (common(std::string_view(text).substr(start, stride_ + 1)) <
          common(std::string_view(text).substr(best, stride_ + 1))) {
        best = start;
      }
    }
    for (size_t offset = best; offset < best + stride_; ++offset) {
      const unsigned pair = Pair(text[offset], text[offset + 1]);
      pairs_[pair >> 6] |= uint64_t{1} << (pair & 63);
      by_pair_.push_back({pair, i, offset});
    }
  }
  std::sort(by_pair_.begin(), by_pair_.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.pair, a.text, a.offset) < std::tie(b.pair, b.text, b.offset);
  });
}

void FailureBase::Index() {
  anchors_.clear();
  info_.clear();
  for (size_t i = 0; i < signatures_.size(); ++i) {
    const Signature& s = signatures_[i];
    if (s.fragments.empty()) continue;
    // The longest part is the least likely to occur by chance.
    const auto longest = std::max_element(
        s.fragments.begin(), s.fragments.end(),
        [](const std::string& a, const std::string& b) { return a.size() < b.size(); });
    anchors_.emplace_back(*longest, i);
    if (std::any_of(s.examples.begin(), s.examples.end(),
                    [](const std::string& e) { return e.find(kInfoMark) != std::string::npos; })) {
      info_.push_back(i);
    }
  }
  std::vector<std::string> texts;
  texts.reserve(anchors_.size());
  for (const auto& [anchor, index] : anchors_) texts.push_back(anchor);
  anchor_set_ = TextSet(std::move(texts));
}

void FailureBase::Match(std::string_view line, std::vector<size_t>& out) const {
  if (const size_t info = line.find(kInfoMark); info != std::string_view::npos) {
    return MatchInfoMessage(line.substr(info + kInfoMark.size()), out);
  }
  const size_t before = out.size();
  anchor_set_.Find(line, [&](size_t i) {
    const size_t index = anchors_[i].second;
    if (MatchesFragments(line, signatures_[index].fragments)) out.push_back(index);
  });
  std::sort(out.begin() + static_cast<long>(before), out.end());
  out.erase(std::unique(out.begin() + static_cast<long>(before), out.end()), out.end());
}

void FailureBase::MatchInfoMessage(std::string_view message, std::vector<size_t>& out) const {
  {
    // A first fragment starts within the message's first kInfoLead + 1 bytes: a signature whose
    // first byte is none of those cannot match, and most are ruled out so, unread.
    std::array<bool, 256> lead{};
    for (size_t i = 0; i <= kInfoLead && i < message.size(); ++i) {
      lead[static_cast<unsigned char>(message[i])] = true;
    }
    for (size_t index : info_) {
      const std::vector<std::string>& fragments = signatures_[index].fragments;
      if (!lead[static_cast<unsigned char>(fragments.front().front())]) continue;
      // A format may start with a short conversion ("%s/Plugin: ..."): its first literal
      // part starts within the message's first few bytes.
      const size_t window = fragments.front().size() + kInfoLead;
      if (message.substr(0, window).find(fragments.front()) == std::string_view::npos) continue;
      if (MatchesFragments(message, fragments)) out.push_back(index);
    }
  }
}

}  // namespace fabricscope
