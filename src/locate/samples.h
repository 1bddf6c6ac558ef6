// Private: locate's measurements as JSON lines (`--save-samples`), read back for replaying
// their noise in a simulated cluster (`--noise-from`). The format is in docs/locate.md
// ("Saved samples").
#pragma once

#include <istream>
#include <string>
#include <vector>

namespace fabricscope::locate {

// One line of a samples file: one collective of one pair (or one node alone) in one round.
struct Record {
  int round = 0;
  std::string phase;  // "per-node", "pairs" or "again"
  std::string a;      // the pair's first node, or the node measured alone
  std::string b;      // the pair's second node; empty for a node alone
  int rail = 0;
  std::string collective;  // "sendrecv" or "all_reduce"
  double busbw_gbs = 0;
  long long wrong = 0;
};

// The records of `in` (header line skipped); `where` names the file in errors. Throws
// UsageError naming the line for anything that is not a samples file.
std::vector<Record> Read(std::istream& in, const std::string& where);
std::vector<Record> ReadFile(const std::string& path);

}  // namespace fabricscope::locate

namespace fabricscope {

// Healthy runs' noise, taken apart (on log bandwidth, per collective, per file): each
// recorded pair's persistent offset from the file's median, each round's shared effect
// (the median of its measurements after their pairs' offsets), and what is left of each
// measurement, kept with its round. A simulated round replays one recorded round whole.
class RecordedNoise {
 public:
  struct Deviation {
    double sendrecv = 0;
    double all_reduce = 0;
  };
  struct RecordedRound {
    Deviation effect;                  // shared by every pair measured in the round
    std::vector<Deviation> residuals;  // one per measurement of the round
  };
  std::vector<RecordedRound> rounds;
  std::vector<Deviation> pair_offsets;  // one per recorded pair and rail

  // Adds one file's records; `where` names it in errors.
  void Add(const std::vector<locate::Record>& records, const std::string& where);
};

}  // namespace fabricscope
