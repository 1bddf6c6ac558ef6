// One `fabricscope fabric` run: collect or read, optionally twice, then analyze.
#include <chrono>
#include <filesystem>
#include <thread>

#include "core/joined.h"
#include "fabricscope/error.h"
#include "fabricscope/fabric.h"

namespace fabricscope::fabric {

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
  return Analyze(ParseFabric(outputs), analyze);
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
  for (const auto& r : FabricReporters()) {
    if (name == r.name) return r;
  }
  throw UsageError("--format '" + name + "' is not known; use one of " +
                   NamesOf(FabricReporters()));
}

}  // namespace fabricscope::fabric
