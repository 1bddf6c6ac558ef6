// The whole locate report as one JSON document: what ran, every measurement, the matrix,
// the suspects with their evidence, stragglers, the verdict, and the verdict as findings.
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "fabricscope/finding.h"
#include "fabricscope/locate.h"
#include "locate/matrix.h"

namespace fabricscope {
namespace {

using Json = nlohmann::ordered_json;

// Above this many nodes the dense matrix (nodes^2 numbers per metric) is left out; the
// measurements list holds the same numbers.
constexpr int kMaxJsonMatrixNodes = 512;

Json Number(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

Json SuspectJson(const LocateReport& report, const Suspect& s) {
  Json j;
  j["kind"] = std::string(NameOf(s.kind));
  Json names = Json::array();
  for (int n : s.nodes) names.push_back(report.layout.names[static_cast<size_t>(n)]);
  j["nodes"] = std::move(names);
  j["node_indices"] = s.nodes;
  j["rails"] = s.rails;
  if (!s.element.empty()) j["element"] = s.element;
  j["ratio"] = Number(s.ratio);
  j["confidence"] = Number(s.confidence);
  j["agreeing"] = s.agreeing;
  j["measurements"] = s.measurements;
  j["confirmed"] = s.confirmed;
  j["evidence"] = s.evidence;
  return j;
}

Json SampleJson(const PairSample& s) {
  Json j;
  j["a"] = s.pair.a;
  j["b"] = s.pair.b;
  j["rail"] = s.rail;
  j["sendrecv_busbw"] = Number(s.sendrecv_busbw);
  j["all_reduce_busbw"] = Number(s.all_reduce_busbw);
  j["wrong"] = s.wrong;
  return j;
}

Json Dense(const locate::PairGrid& grid, const std::vector<double>& values) {
  Json rows = Json::array();
  for (int r = 0; r < grid.cells; ++r) {
    Json row = Json::array();
    for (int c = 0; c < grid.cells; ++c) row.push_back(Number(grid.At(values, r, c)));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

std::string LocateJson(const LocateReport& report) {
  Json j;
  j["tool"] = "fabricscope";
  j["command"] = "locate";
  j["version"] = report.version;
  j["backend"] = report.backend;
  j["backend_version"] = report.backend_version;
  j["start_time"] = report.start_time;
  j["end_time"] = report.end_time;
  j["args"] = report.args;
  const LocateOptions& o = report.options;
  j["config"] = {{"mode", o.mode == LocateMode::kFull ? "full" : "quick"},
                 {"coverage", o.coverage},
                 {"seed", o.seed},
                 {"threshold", o.threshold},
                 {"confidence", o.confidence},
                 {"budget_s", o.budget_s},
                 {"max_sweeps", o.max_sweeps},
                 {"expect_gbs", o.expect_gbs},
                 {"expect_source", o.expect_source},
                 {"topology", o.topology.source},
                 {"min_robust_z", o.min_robust_z},
                 {"bytes", report.bytes},
                 {"iters", report.iters},
                 {"rails", report.layout.rails}};
  Json nodes = Json::array();
  for (size_t n = 0; n < report.layout.names.size(); ++n) {
    nodes.push_back(
        {{"index", n}, {"name", report.layout.names[n]}, {"ranks", report.layout.ranks[n]}});
  }
  j["nodes"] = std::move(nodes);
  Json ranks = Json::array();
  for (const RankInfo& r : report.ranks) {
    ranks.push_back(
        {{"rank", r.rank}, {"hostname", r.hostname}, {"pid", r.pid}, {"device", r.device}});
  }
  j["ranks"] = std::move(ranks);
  const LocateRounds& rounds = report.rounds;
  j["rounds"] = {{"per_node", rounds.per_node},
                 {"pairs", rounds.pairs},
                 {"again", rounds.again},
                 {"world", rounds.world},
                 {"total", rounds.Total()}};
  Json baselines = Json::array();
  for (const RailBaseline& b : report.baselines) {
    baselines.push_back({{"rail", b.rail},
                         {"sendrecv_busbw", Number(b.sendrecv_typical)},
                         {"all_reduce_busbw", Number(b.all_reduce_typical)},
                         {"sigma", Number(b.sigma)},
                         {"noise_df", Number(b.noise_df)}});
  }
  j["baselines"] = std::move(baselines);
  Json matrices = Json::array();
  if (static_cast<int>(report.layout.names.size()) <= kMaxJsonMatrixNodes) {
    for (int rail = 0; rail < report.layout.rails; ++rail) {
      const locate::PairGrid grid = locate::BuildGrid(report, rail, kMaxJsonMatrixNodes);
      matrices.push_back({{"rail", rail},
                          {"sendrecv_busbw", Dense(grid, grid.sendrecv)},
                          {"all_reduce_busbw", Dense(grid, grid.all_reduce)},
                          {"ratio", Dense(grid, grid.ratio)}});
    }
  }
  j["matrix"] = std::move(matrices);
  Json measurements = Json::array();
  for (const PairSample& s : report.samples) measurements.push_back(SampleJson(s));
  j["measurements"] = std::move(measurements);
  j["sweeps"] = report.sweeps;
  Json pairs = Json::array();
  for (const PairJudgement& p : report.judgements) {
    pairs.push_back({{"a", p.pair.a},
                     {"b", p.pair.b},
                     {"rail", p.rail},
                     {"samples", p.samples},
                     {"sendrecv_busbw", Number(p.sendrecv)},
                     {"all_reduce_busbw", Number(p.all_reduce)},
                     {"ratio", Number(p.ratio)},
                     {"ratio_low", Number(p.low)},
                     {"ratio_high", Number(p.high)},
                     {"call", std::string(NameOf(p.call))}});
  }
  j["pairs"] = std::move(pairs);
  Json per_node = Json::array();
  for (const auto* list : {&report.node_samples, &report.node_retests}) {
    for (const NodeSample& s : *list) {
      per_node.push_back({{"phase", list == &report.node_samples ? "per-node" : "again"},
                          {"node", s.node},
                          {"all_reduce_busbw", Number(s.all_reduce_busbw)},
                          {"wrong", s.wrong}});
    }
  }
  j["per_node"] = std::move(per_node);
  Json suspects = Json::array();
  for (const Suspect& s : report.suspects) suspects.push_back(SuspectJson(report, s));
  j["suspects"] = std::move(suspects);
  Json undecided = Json::array();
  for (const Suspect& s : report.undecided) undecided.push_back(SuspectJson(report, s));
  j["undecided"] = std::move(undecided);
  if (report.world_times) {
    const RankTimes& t = *report.world_times;
    Json per_rank = Json::array();
    for (double us : t.per_rank_us) per_rank.push_back(Number(us));
    j["world_times"] = {{"min_us", Number(t.min_us)}, {"avg_us", Number(t.avg_us)},
                        {"max_us", Number(t.max_us)}, {"min_rank", t.min_rank},
                        {"max_rank", t.max_rank},     {"per_rank_us", std::move(per_rank)}};
  } else {
    j["world_times"] = nullptr;
  }
  Json stragglers = Json::array();
  for (const Straggler& s : report.stragglers) {
    stragglers.push_back(
        {{"rank", s.rank},
         {"node",
          s.node >= 0 ? Json(report.layout.names[static_cast<size_t>(s.node)]) : Json(nullptr)},
         {"time_us", Number(s.time_us)},
         {"ratio", Number(s.ratio)},
         {"late", s.late}});
  }
  j["stragglers"] = std::move(stragglers);
  j["notes"] = report.notes;
  j["found"] = report.Found();
  j["status"] = std::string(NameOf(report.status));
  j["verdict"] = locate::Verdict(report);
  j["unknown"] = report.unknown;
  j["next_step"] = report.next_step;
  j["findings"] = FindingsJson(report.findings);
  j["findings_version"] = kFindingsVersion;
  return j.dump(2) + "\n";
}

}  // namespace fabricscope
