// The per-test summary: nccl-tests' average recomputed and checked against the printed one,
// the peak and where it is reached, the latency floor, and the size that reaches half of peak.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "fabricscope/analyze.h"
#include "fabricscope/collective.h"
#include "fabricscope/result.h"

namespace fabricscope {
namespace {

// Half of the last printed digit of a busbw cell, by nccl-tests' rule for 6-wide columns:
// two decimals below 1000, one below 10000, none above. The printed average is the mean of
// unrounded values, so the mean of the printed ones may differ from it by this much.
double HalfUnitOfColumn(double value) {
  const double magnitude = std::fabs(value);
  if (magnitude < 999.995) return 0.005;
  if (magnitude < 9999.95) return 0.05;
  return 0.5;
}

// Half of the last digit "%g" prints (six significant digits).
double HalfUnitOfG(double value) {
  const double magnitude = std::fabs(value);
  if (!(magnitude > 0) || !std::isfinite(magnitude)) return 0;
  return 0.5 * std::pow(10.0, std::floor(std::log10(magnitude)) - 5);
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

void AddOnce(std::vector<std::string>& list, const std::string& item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

void AddFailures(const RunResult& run, TestAnalysis& test);

// What the rows of one collective add up to.
struct RowScan {
  std::vector<std::string> types;
  std::vector<std::string> ops;
  double tolerance_sum = 0;  // of the printed busbw cells' rounding
  size_t values = 0;         // busbw cells
  bool checked = false;      // any cell counted wrong elements
  int64_t wrong = 0;
  double floor = std::numeric_limits<double>::infinity();
};

RowScan ScanRows(const RunResult& run, const std::string& collective, TestAnalysis& test) {
  RowScan scan;
  for (const ResultRow& row : run.rows) {
    if (row.collective != collective) continue;
    ++test.rows;
    AddOnce(scan.types, row.type);
    AddOnce(scan.ops, row.redop);
    for (const auto* half : {&row.out_of_place, &row.in_place}) {
      if (!half->has_value()) continue;
      const PlacementResult& placement = **half;
      ++scan.values;
      scan.tolerance_sum += HalfUnitOfColumn(placement.busbw);
      if (placement.busbw > test.peak_busbw) {
        test.peak_busbw = placement.busbw;
        test.peak_size = row.size;
      }
      if (row.size > 0 && placement.time_us < scan.floor) scan.floor = placement.time_us;
      if (placement.wrong.has_value()) {
        scan.checked = true;
        // Saturating: a corrupt log can claim more wrong elements than an int64 holds.
        const int64_t add = std::max<int64_t>(*placement.wrong, 0);
        scan.wrong = scan.wrong > std::numeric_limits<int64_t>::max() - add
                         ? std::numeric_limits<int64_t>::max()
                         : scan.wrong + add;
        if (*placement.wrong > 0) ++test.out_of_bounds;
      }
    }
  }
  return scan;
}

// The rank count the rows' busbw / algbw says, when it contradicts `ranks` (a device list cut
// after its first lines: "Rank 0..3" of a 24-rank job): nccl-tests' factor of the collective
// (2(n-1)/n for all_reduce) solved for n over rows whose algbw has two digits or more, taken
// only when one n fits within 0.1% and `ranks` is off by more than 1%. 0 otherwise.
int RanksFromRows(const RunResult& run, const std::string& collective, int ranks) {
  const CollectiveSpec* spec = nullptr;
  for (const CollectiveSpec& c : Collectives()) {
    if (c.name == collective) spec = &c;
  }
  if (spec == nullptr || ranks < 1 || spec->bus_factor(2) == spec->bus_factor(3)) return 0;
  std::vector<double> factors;
  for (const ResultRow& row : run.rows) {
    if (row.collective != collective) continue;
    for (const auto* half : {&row.out_of_place, &row.in_place}) {
      if (half->has_value() && (*half)->algbw >= 10)
        factors.push_back((*half)->busbw / (*half)->algbw);
    }
  }
  if (factors.size() < 3) return 0;
  std::nth_element(factors.begin(), factors.begin() + static_cast<long>(factors.size() / 2),
                   factors.end());
  const double seen = factors[factors.size() / 2];
  if (std::fabs(spec->bus_factor(ranks) - seen) <= 0.01 * seen) return 0;
  int best = 0;
  double best_error = 1;
  for (int n = 2; n <= 65536; ++n) {
    const double error = std::fabs(spec->bus_factor(n) - seen) / seen;
    if (error < best_error) {
      best_error = error;
      best = n;
    }
  }
  return best_error <= 0.001 && best > ranks ? best : 0;
}

// Nodes from the device lines' host names; from ranks / GPUs per node when the list was cut
// (a 1440-rank log that kept only "Rank 1439 ... device 3"); unknown when the list kept only
// its first lines (rank 0 and after), which say nothing of the GPUs a node.
void CountNodes(const RunResult& run, TestAnalysis& test) {
  if (run.ranks.empty()) return;
  std::set<std::string> hosts;
  int highest_device = 0;
  for (const RankInfo& rank : run.ranks) {
    hosts.insert(rank.hostname);
    highest_device = std::max(highest_device, rank.device);
  }
  if (test.ranks <= static_cast<int>(run.ranks.size())) {
    test.nodes = static_cast<int>(hosts.size());
    test.nodes_from = "host names";
    return;
  }
  const bool head = std::any_of(run.ranks.begin(), run.ranks.end(),
                                [](const RankInfo& r) { return r.rank == 0; });
  if (head) {
    test.notes.push_back(fmt::format(
        "the device list shows its first {} of {} ranks: the node count is not in the log",
        run.ranks.size(), test.ranks));
    return;
  }
  const int per_node = highest_device + 1;
  test.nodes = (test.ranks + per_node - 1) / per_node;
  test.nodes_from = "ranks / GPUs per node";
  test.notes.push_back(fmt::format(
      "the device list shows {} of {} ranks: {} nodes is {} ranks / {} GPUs per node (the highest "
      "device index + 1)",
      run.ranks.size(), test.ranks, test.nodes, test.ranks, per_node));
}

TestAnalysis AnalyzeTest(const RunResult& run, const std::string& collective,
                         std::vector<bool>& printed_used) {
  TestAnalysis test;
  test.source = run.source;
  test.tool = run.tool;
  test.collective = collective;
  test.ranks = run.nranks > 0 ? run.nranks : static_cast<int>(run.ranks.size());
  if (const int from_rows = RanksFromRows(run, collective, test.ranks); from_rows > 0) {
    test.notes.push_back(fmt::format(
        "busbw / algbw in the rows is {}'s factor on {} ranks, not on the {} the device lines "
        "show: the list was cut, {} ranks",
        collective, from_rows, test.ranks, from_rows));
    test.ranks = from_rows;
  }
  CountNodes(run, test);
  test.transports = run.transports;

  const RowScan scan = ScanRows(run, collective, test);
  const double tolerance_sum = scan.tolerance_sum;
  const size_t values = scan.values;
  const bool checked = scan.checked;
  const std::vector<std::string>& types = scan.types;
  const std::vector<std::string>& ops = scan.ops;
  const int64_t wrong = scan.wrong;
  const double floor = scan.floor;
  test.type = Join(types);
  test.op = Join(ops);
  if (std::isfinite(floor)) test.latency_floor_us = floor;
  if (checked) test.wrong = wrong;
  // nccl-tests' rule, from the same code as fabricscope's own trailer.
  test.avg_busbw = SummarizeCollective(run, collective).avg_busbw;

  if (test.peak_busbw > 0) {
    for (const ResultRow& row : run.rows) {
      if (row.collective != collective) continue;
      for (const auto* half : {&row.out_of_place, &row.in_place}) {
        if (half->has_value() && (*half)->busbw >= test.peak_busbw / 2 &&
            (!test.half_peak_size.has_value() || row.size < *test.half_peak_size)) {
          test.half_peak_size = row.size;
        }
      }
    }
  }

  for (size_t i = 0; i < run.printed.size(); ++i) {
    const TestSummary& printed = run.printed[i];
    if (printed_used[i] || (!printed.collective.empty() && printed.collective != collective))
      continue;
    printed_used[i] = true;
    test.avg_busbw_printed = printed.avg_busbw;
    const double tolerance = (values > 0 ? tolerance_sum / static_cast<double>(values) : 0) +
                             HalfUnitOfG(printed.avg_busbw) + 1e-9;
    test.avg_busbw_consistent = std::fabs(printed.avg_busbw - test.avg_busbw) <= tolerance;
    if (!test.avg_busbw_consistent) {
      test.notes.push_back(
          fmt::format("the printed Avg bus bandwidth ({:g}) is not the mean of the {} busbw values "
                      "read ({:g}): rows are missing or were edited",
                      printed.avg_busbw, values, test.avg_busbw));
    }
    if (!checked && printed.out_of_bounds > 0) test.out_of_bounds = printed.out_of_bounds;
    break;
  }
  if (!checked) {
    test.notes.push_back(
        "no row counts wrong elements (-c 0, or a layout before nccl-tests 2.13 whose 'error' "
        "column is a deviation): #wrong is unknown");
  }
  if (test.ranks == 0) test.notes.push_back("the rank count is unknown (no device lines)");
  AddFailures(run, test);
  return test;
}

// The run's own failure lines, then what its rows say.
void AddFailures(const RunResult& run, TestAnalysis& test) {
  test.failures = run.errors;
  if (test.wrong.has_value() && *test.wrong > 0) {
    test.failures.push_back(fmt::format("{} wrong elements in {} results (size x placement)",
                                        *test.wrong, test.out_of_bounds));
  } else if (!test.wrong.has_value() && test.out_of_bounds > 0 && test.failures.empty()) {
    test.failures.push_back(
        fmt::format("the trailer counts {} out-of-bounds values", test.out_of_bounds));
  }
}

// The collective a failure line names by its source file or binary ("NCCL failure
// all_reduce.cu:95", "all_gather_perf: ..."); empty when none does.
std::string CollectiveOfFailure(const RunResult& run) {
  for (const std::string& error : run.errors) {
    for (const CollectiveSpec& spec : Collectives()) {
      std::string name(spec.name);
      if (error.find(name + ".cu") != std::string::npos ||
          error.find(std::string(spec.perf_binary)) != std::string::npos) {
        return name;
      }
    }
  }
  return {};
}

// A run that died before its first row: one test, with nothing but its failure.
TestAnalysis FailedBeforeRows(const RunResult& run) {
  TestAnalysis test;
  test.source = run.source;
  test.tool = run.tool;
  test.collective = run.announced_collective;
  if (test.collective.empty()) test.collective = CollectiveOfFailure(run);
  if (test.collective.empty()) test.collective = "unknown";
  test.ranks = run.nranks > 0 ? run.nranks : static_cast<int>(run.ranks.size());
  CountNodes(run, test);
  test.transports = run.transports;
  test.notes.push_back("no result rows: the run failed before its first size");
  AddFailures(run, test);
  return test;
}

}  // namespace

std::vector<TestAnalysis> Analyze(const RunResult& run) {
  std::vector<std::string> order;
  for (const ResultRow& row : run.rows) AddOnce(order, row.collective);
  std::vector<bool> printed_used(run.printed.size(), false);
  std::vector<TestAnalysis> tests;
  if (order.empty() && !run.errors.empty()) tests.push_back(FailedBeforeRows(run));
  tests.reserve(order.size());
  for (const std::string& collective : order)
    tests.push_back(AnalyzeTest(run, collective, printed_used));
  return tests;
}

std::string FormatBytes(size_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  if (value == std::floor(value)) {
    std::snprintf(text, sizeof(text), "%.0f %s", value, kUnits[unit]);
  } else {
    std::snprintf(text, sizeof(text), "%.3g %s", value, kUnits[unit]);
  }
  return text;
}

}  // namespace fabricscope
