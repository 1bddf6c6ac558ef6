// One `fabricscope fabric` run: collect or read, optionally twice, then analyze.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "fabricscope/error.h"
#include "fabricscope/fabric.h"
#include "fabricscope/find_format.h"
#include "fabricscope/joined.h"

namespace fabricscope::fabric {

namespace {

// --path A,B: the tables' route, and ibtracert's (run live, or FROM/ibtracert.txt).
PairPath PathOf(const Fabric& fabric, const RunOptions& options) {
  if (options.path.size() != 2) {
    throw UsageError("--path takes two hosts, e.g. --path node01,node17");
  }
  std::string text;
  std::string origin = "ibtracert";
  if (!options.from.empty()) {
    const auto saved = std::filesystem::path(options.from) / "ibtracert.txt";
    std::ifstream in(saved);
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
    origin = saved.string();
  } else {
    const Node* a = fabric.FindByName(options.path[0]);
    const Node* b = fabric.FindByName(options.path[1]);
    std::string why;
    if (a != nullptr && b != nullptr) {
      text = RunIbtracert(a->lid, b->lid, options.collect.timeout_seconds, &why);
    }
    if (!why.empty()) origin = why;
    if (!options.save.empty() && !text.empty()) {
      std::ofstream(std::filesystem::path(options.save) / "ibtracert.txt") << text;
    }
  }
  PairPath path = TracePair(fabric, options.path[0], options.path[1], text, origin);
  if (text.empty() && origin != "ibtracert") path.evidence.push_back(origin);
  return path;
}

}  // namespace

FabricReport RunFabric(const RunOptions& options) {
  if (options.interval_seconds < 0) {
    throw UsageError("--interval must be a positive number of seconds");
  }
  if (!options.from.empty() && options.interval_seconds > 0) {
    throw UsageError(
        "--interval reads the live fabric twice; with --from, save the first read as "
        "FROM/earlier (fabricscope fabric --interval S --save FROM does)");
  }
  AnalyzeOptions analyze = options.analyze;
  analyze.findings.interval_seconds = options.interval_seconds;
  Fabric baseline;
  if (!options.baseline.empty()) {
    baseline = ParseFabric(ReadSaved(options.baseline));
    analyze.findings.baseline = &baseline;
  }
  Fabric earlier;
  ToolOutputs outputs;
  if (!options.from.empty()) {
    const auto earlier_dir = std::filesystem::path(options.from) / "earlier";
    if (std::filesystem::is_directory(earlier_dir)) {
      earlier = ParseFabric(ReadSaved(earlier_dir.string()));
      analyze.findings.earlier = &earlier;
    }
    outputs = ReadSaved(options.from);
  } else {
    if (options.interval_seconds > 0) {
      const ToolOutputs first = CollectLive(options.collect);
      if (!options.save.empty()) {
        SaveOutputs(first, (std::filesystem::path(options.save) / "earlier").string());
      }
      earlier = ParseFabric(first);
      analyze.findings.earlier = &earlier;
      std::this_thread::sleep_for(
          std::chrono::milliseconds(static_cast<int64_t>(options.interval_seconds * 1000)));
    }
    outputs = CollectLive(options.collect);
    if (!options.save.empty()) SaveOutputs(outputs, options.save);
  }
  FabricReport report = Analyze(ParseFabric(outputs), analyze);
  if (!options.path.empty()) report.path = PathOf(report.fabric, options);
  return report;
}

namespace {

std::string WriteText(const FabricReport& r, bool verbose) { return FormatText(r, verbose); }
std::string WriteJson(const FabricReport& r, bool) { return FormatJson(r); }
std::string WriteSvg(const FabricReport& r, bool) { return FormatSvg(r); }

}  // namespace

const std::vector<FabricReporter>& FabricReporters() {
  static const std::vector<FabricReporter> reporters = {
      {"text", "the findings with their evidence and fix, and a summary", WriteText},
      {"json", "the whole record: nodes, ports, counters, routes, loads, findings", WriteJson},
      {"svg", "a picture: switches in tiers, links coloured by state and load", WriteSvg},
  };
  return reporters;
}

const FabricReporter& FindFabricReporter(const std::string& name) {
  return FindFormat(FabricReporters(), name);
}

}  // namespace fabricscope::fabric
