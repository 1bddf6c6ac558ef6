// The failure knowledge base: the signatures NCCL, its net plugins, libibverbs, PyTorch and
// nccl-tests print when a run fails or is slow, each with the upstream line that prints it,
// the causes it points to (ranked, with the evidence that tells them apart) and the fix.
// Kept as data (data/failures/*.json, docs/failures.md), compiled in like the platform
// catalog, refused at load with the file and line of a bad entry.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fabricscope {

// Where a signature's text comes from: the upstream file and line that prints it, or the
// public thread that established a shape.
struct SignatureSource {
  std::string repo;  // "NVIDIA/nccl"
  std::string ref;   // "v2.30.7-1", a commit, or "" for a thread
  std::string file;  // "src/transport/shm.cc"
  int line = 0;
  std::string url;  // a thread or a documentation page
};

// What a matched signature says about the run.
enum class SignatureRole {
  kCause,    // names why the run failed by itself (a cause line): the verdict's reason
  kSymptom,  // says that the run failed, not why ("unhandled system error"): the reason only
             // when nothing better explains it
  kSlow,     // explains a slow run (a socket fallback where the platform has RDMA)
  kNote,     // harmless where it stands: shown, never the verdict's reason
};

// One test of the evidence, on the matched line, the whole log or the facts of the run.
struct Condition {
  enum class Kind {
    kLine,          // the matched line holds `value`
    kLog,           // some line of the log holds `value`
    kNotLog,        // no line of the log holds `value`
    kSignature,     // the signature `value` matched too
    kTransport,     // the platform's transport is `value` (IB, RoCE, EFA, TCPX, TCPXO, gIB)
    kNotTransport,  // ... is known and is not `value`
    kMultiNode,     // the run spans two nodes or more ("true") or one ("false")
  };
  Kind kind = Kind::kLine;
  std::string value;
};

// One cause a signature points to: taken when every condition holds (none: a default
// candidate), ranked by `weight`.
struct CauseLink {
  std::string cause;
  std::vector<Condition> when;
  int weight = 0;
};

// Which of a fixed set of texts a line holds, in one pass over the line. Every text is at
// least `stride_ + 1` bytes long, so each occurrence covers a byte pair that starts at a
// multiple of the stride within any window of stride_ of its positions: only those are probed
// (the scan of Wu and Manber's multi-pattern search, with no shift table), a bitmap of the
// pairs that begin a text at one of those offsets rules out almost all of them, and only a
// pair some text holds there is compared. (The set is small, a line is short, most lines hold
// none.)
class TextSet {
 public:
  TextSet() = default;
  explicit TextSet(std::vector<std::string> texts);
  // Calls found(i) for each place a text i occurs in `line` (a text that occurs twice is
  // found twice), in the order of the positions probed (not always of the places).
  template <typename F>
  void Find(std::string_view line, F found) const {
    if (line.size() < 2 || by_pair_.empty()) return;
    for (size_t at = 0; at + 1 < line.size(); at += stride_) {
      const unsigned pair = Pair(line[at], line[at + 1]);
      if ((pairs_[pair >> 6] >> (pair & 63) & 1) == 0) continue;
      const auto [first, last] =
          std::equal_range(by_pair_.begin(), by_pair_.end(), Entry{pair, 0, 0},
                           [](const Entry& a, const Entry& b) { return a.pair < b.pair; });
      for (auto it = first; it != last; ++it) {
        if (it->offset > at) continue;
        const std::string& text = texts_[it->text];
        if (line.substr(at - it->offset, text.size()) == text) found(it->text);
      }
    }
  }

 private:
  static unsigned Pair(char a, char b) {
    return static_cast<unsigned>(static_cast<unsigned char>(a)) << 8 |
           static_cast<unsigned char>(b);
  }
  std::vector<std::string> texts_;
  std::vector<uint64_t> pairs_ = std::vector<uint64_t>(1024, 0);  // 65536 bits
  struct Entry {
    unsigned pair;  // two bytes of a text
    size_t text;    // its index
    size_t offset;  // where in the text they are (a window of stride_ offsets a text)
  };
  std::vector<Entry> by_pair_;  // sorted by pair
  size_t stride_ = 1;
};

// One failure signature: the text a program prints, matched by the literal fragments of its
// format string in order (a printf conversion matches any text), or a shape the reader
// computes (a header with no rows, interleaved runs).
struct Signature {
  std::string id;  // "nccl-shm-extend"
  SignatureRole role = SignatureRole::kSymptom;
  int weight = 0;      // how specific: the heaviest matched cause or symptom is the reason
  std::string format;  // verbatim upstream text; "" for a shape
  std::string shape;   // the reader's shape ("no-rows", "ranks-alone", ...); "" for text
  std::vector<std::string> fragments;  // the literal parts of `format`, in order
  SignatureSource source;
  std::string versions;  // the versions that print it: "2.12+", "all"
  std::string summary;   // what the line says, for people
  std::vector<CauseLink> causes;
  std::vector<Condition> harmless_when;  // a cause or symptom is a note when all of these hold
  std::vector<std::string> examples;     // lines it must match (tests)
  std::vector<std::string> counterexamples;
  std::string origin;  // "data/failures/nccl-shm.json:12"
};

// One cause: what it is, how to confirm it and how to fix it.
struct FailureCause {
  std::string id;  // "shm_exhausted"
  std::string title;
  std::string explain;
  std::string check;  // the command or look that confirms it
  std::string fix;
  std::vector<std::string> sources;  // threads and documents that established it
  std::string origin;
};

// The knowledge base: every signature and cause, validated (every cause a signature names
// exists, every signature has a source and an example its fragments match).
class FailureBase {
 public:
  // The compiled-in data/failures/*.json.
  static const FailureBase& Builtin();

  // One document per file: {name, text}. Throws UsageError naming the file and line of a bad
  // entry and what to fix.
  struct Document {
    std::string name;  // "data/failures/nccl-shm.json"
    std::string text;
  };
  static FailureBase Parse(const std::vector<Document>& documents);

  const std::vector<Signature>& signatures() const { return signatures_; }
  const std::vector<FailureCause>& causes() const { return causes_; }
  const FailureCause* FindCause(std::string_view id) const;

  // Appends to `out` the index of every text signature `line` matches. An NCCL INFO line (most
  // of a big log) is matched only against the signatures an INFO line prints (those with an
  // example that holds "NCCL INFO"), each by its first fragment near the message's start.
  void Match(std::string_view line, std::vector<size_t>& out) const;
  // The same for the message of an NCCL INFO line (what follows "NCCL INFO "), for a reader
  // that has found the mark already.
  void MatchInfoMessage(std::string_view message, std::vector<size_t>& out) const;

 private:
  void Index();
  std::vector<Signature> signatures_;
  std::vector<FailureCause> causes_;
  // Per text signature, its most selective fragment: a line without it cannot match; the
  // anchors in one TextSet, found in one pass.
  std::vector<std::pair<std::string, size_t>> anchors_;
  TextSet anchor_set_;
  // The signatures an NCCL INFO line prints, for INFO lines.
  std::vector<size_t> info_;
};

// The literal parts of a printf format, in order: "failed to extend %s to %ld bytes" gives
// {"failed to extend ", " to ", " bytes"}; "%%" is a literal '%'; parts of white space and
// punctuation alone are dropped.
std::vector<std::string> FormatFragments(std::string_view format);

// The names a condition object may use as its one key ("line", "log", ...), for messages.
std::vector<std::string> ConditionNames();

// Whether `line` holds `fragments` in order.
bool MatchesFragments(std::string_view line, const std::vector<std::string>& fragments);

}  // namespace fabricscope
