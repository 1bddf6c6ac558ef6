// Every measurement of a locate run as JSON lines (one object per line, nlohmann-json), and
// the reader that replays them. Format: docs/locate.md, "Saved samples".
#include "locate/samples.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <tuple>
#include <utility>

#include "fabricscope/error.h"
#include "fabricscope/locate.h"
#include "fabricscope/statistics.h"

namespace fabricscope {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kFormat = "fabricscope-locate-samples";
constexpr int kFormatVersion = 1;

// Rounds are counted over the run: the per-node rounds first, then the pair rounds, then
// the rounds again.
std::string PhaseOf(const LocateRounds& rounds, int round) {
  if (round < rounds.per_node) return "per-node";
  if (round < rounds.per_node + rounds.pairs) return "pairs";
  return "again";
}

// The fastest timed call's time that gives `busbw` for `bytes` over `ranks` ranks: bus
// bandwidth is bytes / time x 2 (k - 1) / k for all_reduce (1 for two ranks), bytes /
// time for sendrecv (nccl-tests' PERFORMANCE.md). Null when the size is not known (a
// simulated cluster).
Json TimeUs(double busbw_gbs, size_t bytes, double factor) {
  if (bytes == 0 || !(busbw_gbs > 0) || !std::isfinite(busbw_gbs)) return nullptr;
  return static_cast<double>(bytes) * factor / (busbw_gbs * 1e3);
}

Json Line(const LocateReport& report, int round, std::string_view collective, double busbw,
          int64_t wrong, double factor) {
  Json j;
  j["round"] = round;
  j["phase"] = PhaseOf(report.rounds, round);
  j["collective"] = collective;
  j["bytes"] = report.bytes;
  j["iters"] = report.iters;
  j["time_us"] = TimeUs(busbw, report.bytes, factor);
  j["busbw_gbs"] = std::isfinite(busbw) ? Json(busbw) : Json(nullptr);
  j["wrong"] = wrong;
  return j;
}

}  // namespace

void WriteLocateSamples(const LocateReport& report, std::ostream& out) {
  const auto& names = report.layout.names;
  Json header;
  header["format"] = kFormat;
  header["version"] = kFormatVersion;
  header["backend"] = report.backend;
  header["nodes"] = names;
  header["rails"] = report.layout.rails;
  header["bytes"] = report.bytes;
  header["iters"] = report.iters;
  header["fastest_iteration"] = true;
  header["args"] = report.args;
  out << header.dump() << "\n";
  std::vector<const NodeSample*> nodes;
  for (const NodeSample& s : report.node_samples) nodes.push_back(&s);
  for (const NodeSample& s : report.node_retests) nodes.push_back(&s);
  for (const NodeSample* s : nodes) {
    const auto ranks =
        static_cast<double>(report.layout.ranks[static_cast<size_t>(s->node)].size());
    Json j = Line(report, s->round, "all_reduce", s->all_reduce_busbw, s->wrong,
                  2 * (ranks - 1) / ranks);
    j["node"] = names[static_cast<size_t>(s->node)];
    out << j.dump() << "\n";
  }
  for (const PairSample& s : report.samples) {
    for (const auto& [collective, busbw] :
         {std::pair<std::string_view, double>{"sendrecv", s.sendrecv_busbw},
          std::pair<std::string_view, double>{"all_reduce", s.all_reduce_busbw}}) {
      if (!(busbw > 0)) continue;  // on device memory a pair runs sendrecv only
      Json j = Line(report, s.round, collective, busbw, s.wrong, 1.0);
      j["a"] = names[static_cast<size_t>(s.pair.a)];
      j["b"] = names[static_cast<size_t>(s.pair.b)];
      j["rail"] = s.rail;
      out << j.dump() << "\n";
    }
  }
}

namespace locate {
namespace {

[[noreturn]] void Bad(const std::string& where, int line, const std::string& what) {
  throw UsageError(fmt::format(
      "{} line {}: {}; a samples file is what `fabricscope locate --save-samples FILE` writes "
      "(docs/locate.md, \"Saved samples\")",
      where, line, what));
}

// An integer field within [0, max]: nlohmann converts a float to int without a range check
// (1.2e104 as "round" is undefined behaviour; samples_fuzz).
template <typename T>
T Count(const Json& j, const char* key, T fallback, T max, const std::string& where, int line) {
  if (!j.contains(key)) return fallback;
  const Json& v = j.at(key);
  if (!v.is_number_integer() || v.get<long long>() < 0 ||
      v.get<long long>() > static_cast<long long>(max)) {
    Bad(where, line, fmt::format("\"{}\" is not a count from 0 to {}: {}", key, max, v.dump()));
  }
  return static_cast<T>(v.get<long long>());
}

Record ParseRecord(const Json& j, const std::string& where, int line) {
  Record r;
  if (!j.is_object()) Bad(where, line, "not a JSON object");
  if (!j.contains("round")) Bad(where, line, "a measurement without its \"round\"");
  r.round = Count(j, "round", 0, std::numeric_limits<int>::max(), where, line);
  r.wrong = Count(j, "wrong", 0LL, std::numeric_limits<long long>::max(), where, line);
  r.rail = Count(j, "rail", 0, 1 << 20, where, line);
  try {
    r.phase = j.at("phase").get<std::string>();
    r.collective = j.at("collective").get<std::string>();
    r.busbw_gbs = j.at("busbw_gbs").is_null() ? 0.0 : j.at("busbw_gbs").get<double>();
    if (j.contains("node")) {
      r.a = j.at("node").get<std::string>();
    } else {
      r.a = j.at("a").get<std::string>();
      r.b = j.at("b").get<std::string>();
    }
  } catch (const Json::exception& e) {
    Bad(where, line, std::string("a measurement without its fields: ") + e.what());
  }
  return r;
}

}  // namespace

std::vector<Record> Read(std::istream& in, const std::string& where) {
  std::vector<Record> records;
  std::string text;
  int line = 0;
  bool header = false;
  while (std::getline(in, text)) {
    ++line;
    if (text.empty()) continue;
    Json j;
    try {
      j = Json::parse(text);
    } catch (const Json::exception& e) {
      // parse_error, and out_of_range for a number beyond a double (1e999): both bad input.
      Bad(where, line, std::string("not JSON: ") + e.what());
    }
    if (!header) {
      if (!j.is_object() || !j.contains("format") || j.at("format") != kFormat) {
        Bad(where, line,
            fmt::format("the first line is not the header {{\"format\": \"{}\"}}", kFormat));
      }
      const int version = Count(j, "version", 0, 1 << 20, where, line);
      if (version != kFormatVersion) {
        Bad(where, line, fmt::format("version {} (this build reads {})", version, kFormatVersion));
      }
      header = true;
      continue;
    }
    records.push_back(ParseRecord(j, where, line));
  }
  if (!header) Bad(where, line, "empty: no header line");
  return records;
}

std::vector<Record> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw UsageError("cannot read the samples file " + path +
                     ": give a file written by `fabricscope locate --save-samples FILE`");
  }
  return Read(in, path);
}

}  // namespace locate

namespace {

using PairKey = std::tuple<std::string, std::string, int>;

// A replayed pair's persistent offset at most (log): x0.82 to x1.22, the spread of the
// pairs' levels in the healthy runs recorded at locate's defaults (tests/locate/data).
constexpr double kMaxPersistentOffset = 0.2;

// One pair measurement of a file: its round, pair and both collectives' log bandwidth.
struct Measured {
  int round = 0;
  PairKey pair;
  RecordedNoise::Deviation log;
};

std::vector<Measured> PairMeasurements(const std::vector<locate::Record>& records) {
  std::map<std::tuple<int, std::string, std::string, int>, Measured> by;
  for (const locate::Record& r : records) {
    if (r.b.empty() || !(r.busbw_gbs > 0) || r.wrong != 0) continue;
    Measured& m = by[{r.round, r.a, r.b, r.rail}];
    m.round = r.round;
    m.pair = {r.a, r.b, r.rail};
    const double log = std::log(r.busbw_gbs);
    if (r.collective == "sendrecv") {
      m.log.sendrecv = log;
    } else {
      m.log.all_reduce = log;
    }
  }
  std::vector<Measured> out;
  for (auto& [key, m] : by) {
    // A pair that ran sendrecv only (device memory): its all_reduce moves with it.
    if (m.log.all_reduce == 0) m.log.all_reduce = m.log.sendrecv;
    if (m.log.sendrecv == 0) m.log.sendrecv = m.log.all_reduce;
    out.push_back(m);
  }
  return out;
}

RecordedNoise::Deviation MedianOf(const std::vector<RecordedNoise::Deviation>& v) {
  std::vector<double> sr;
  std::vector<double> ar;
  for (const auto& d : v) {
    sr.push_back(d.sendrecv);
    ar.push_back(d.all_reduce);
  }
  if (v.empty()) return {0, 0};
  return {Median(std::move(sr)), Median(std::move(ar))};
}

RecordedNoise::Deviation Minus(RecordedNoise::Deviation x, RecordedNoise::Deviation y) {
  return {x.sendrecv - y.sendrecv, x.all_reduce - y.all_reduce};
}

// How much of the recorded pairs' offsets persists, per collective (0..1). A pair's offset
// is the median of a few bimodal samples (a token bucket's bursts: ~8 per pair in a
// 16-sweep run), so much of its spread across pairs is the medians' own sampling error,
// not a difference that stays: drawn whole and kept for a simulated run, that error would
// make healthy links persistently slow (two replayed runs named a slow node's pair as a
// link that way, issue 29). The persistent variance is the covariance, across pairs, of
// the medians of each pair's odd and even samples (their noise is independent, their
// persistent part the same); kept is that share of the offsets' mean square, as a factor
// on each offset; the rest goes to the residuals.
RecordedNoise::Deviation PersistentShare(
    const std::map<PairKey, std::vector<RecordedNoise::Deviation>>& of_pair,
    const std::map<PairKey, RecordedNoise::Deviation>& offset) {
  auto share = [&](double RecordedNoise::Deviation::*part) {
    std::vector<double> odd;
    std::vector<double> even;
    double spread = 0;
    for (const auto& [pair, logs] : of_pair) {
      spread += offset.at(pair).*part * (offset.at(pair).*part);
      if (logs.size() < 4) continue;
      std::vector<double> halves[2];
      for (size_t i = 0; i < logs.size(); ++i) halves[i % 2].push_back(logs[i].*part);
      odd.push_back(Median(std::move(halves[1])));
      even.push_back(Median(std::move(halves[0])));
    }
    if (odd.size() < 3 || !(spread > 0)) return 0.0;
    spread /= static_cast<double>(of_pair.size());
    const double mo = Mean(odd);
    const double me = Mean(even);
    double persistent = 0;
    for (size_t i = 0; i < odd.size(); ++i) persistent += (odd[i] - mo) * (even[i] - me);
    persistent /= static_cast<double>(odd.size() - 1);
    return std::sqrt(std::clamp(persistent / spread, 0.0, 1.0));
  };
  return {share(&RecordedNoise::Deviation::sendrecv), share(&RecordedNoise::Deviation::all_reduce)};
}

}  // namespace

void RecordedNoise::Add(const std::vector<locate::Record>& records, const std::string& where) {
  const std::vector<Measured> measured = PairMeasurements(records);
  std::vector<Deviation> all;
  std::map<PairKey, std::vector<Deviation>> of_pair;
  std::map<int, std::vector<size_t>> of_round;
  for (size_t i = 0; i < measured.size(); ++i) {
    all.push_back(measured[i].log);
    of_pair[measured[i].pair].push_back(measured[i].log);
    of_round[measured[i].round].push_back(i);
  }
  if (of_round.size() < 2) {
    throw UsageError(fmt::format(
        "{}: {} round(s) of pair measurements; replaying noise needs a run's rounds (record "
        "one with `fabricscope locate --save-samples FILE` on a healthy cluster)",
        where, of_round.size()));
  }
  const Deviation level = MedianOf(all);
  std::map<PairKey, Deviation> offset;
  for (const auto& [pair, logs] : of_pair) offset[pair] = Minus(MedianOf(logs), level);
  const Deviation keep = PersistentShare(of_pair, offset);
  // The recorded runs were healthy (every host's link at the same tc rate), so no pair is
  // slow for good: an offset is kept up to kMaxPersistentOffset either way, beyond which
  // it is the run's mode persistence (a token bucket) and a replayed cluster would have a
  // slow link its recording did not.
  auto kept = [](double raw, double share) {
    return std::clamp(raw * share, -kMaxPersistentOffset, kMaxPersistentOffset);
  };
  for (auto& [pair, d] : offset) {
    d = {kept(d.sendrecv, keep.sendrecv), kept(d.all_reduce, keep.all_reduce)};
    pair_offsets.push_back(d);
  }
  for (const auto& [round, indices] : of_round) {
    RecordedRound rr;
    std::vector<Deviation> left;
    for (size_t i : indices) {
      left.push_back(Minus(Minus(measured[i].log, level), offset[measured[i].pair]));
    }
    rr.effect = MedianOf(left);
    for (const Deviation& d : left) rr.residuals.push_back(Minus(d, rr.effect));
    rounds.push_back(std::move(rr));
  }
}

std::shared_ptr<const RecordedNoise> LoadRecordedNoise(const std::vector<std::string>& paths) {
  auto noise = std::make_shared<RecordedNoise>();
  for (const std::string& path : paths) noise->Add(locate::ReadFile(path), path);
  return noise;
}

}  // namespace fabricscope
