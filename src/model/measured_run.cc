// Measured runs as --calibrate and --compare read them: one scale, the rows the model covers,
// the node count and the placements to read.
#include <fmt/format.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/joined.h"
#include "fabricscope/model_run.h"
#include "fabricscope/parse.h"

namespace fabricscope {
namespace {

const CollectiveSpec* SpecNamed(const std::string& name) {
  for (const auto& spec : Collectives()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

template <typename T>
void AddOnce(std::vector<T>& items, const T& item) {
  if (std::find(items.begin(), items.end(), item) == items.end()) items.push_back(item);
}

// The file's runs as one: they must share a scale.
RunResult MergedRuns(ParsedResults& parsed, const std::string& where) {
  RunResult merged;
  bool first = true;
  for (RunResult& run : parsed.runs) {
    if (run.rows.empty()) continue;
    if (first) {
      merged = std::move(run);
      first = false;
      continue;
    }
    if (run.nranks != merged.nranks || NodesOf(run) != NodesOf(merged)) {
      throw UsageError(where + ": its runs have " + std::to_string(merged.nranks) + " and " +
                       std::to_string(run.nranks) +
                       " ranks: the model is set against one scale at a time, so give one "
                       "file per scale");
    }
    merged.rows.insert(merged.rows.end(), run.rows.begin(), run.rows.end());
  }
  return merged;
}

// Keeps the rows of collectives the model covers (and, when `only` is not empty, of those);
// the others are left out, and said so.
void KeepCoveredRows(MeasuredRun& m, const std::vector<Collective>& only,
                     const ModelRequest& request, std::ostream& warnings) {
  const std::string where = m.flag + " " + m.path;
  std::vector<std::string> uncovered;
  std::vector<std::string> unwanted;
  std::vector<ResultRow> kept;
  for (ResultRow& row : m.run.rows) {
    const CollectiveSpec* spec = SpecNamed(row.collective);
    if (spec == nullptr) {
      AddOnce(uncovered, row.collective);
      continue;
    }
    if (!only.empty() && std::find(only.begin(), only.end(), spec->id) == only.end()) {
      AddOnce(unwanted, row.collective);
      continue;
    }
    AddOnce(m.collectives, spec->id);
    kept.push_back(std::move(row));
  }
  if (kept.empty() && !uncovered.empty() && unwanted.empty()) {
    std::vector<std::string> names;
    for (const auto& spec : Collectives()) names.emplace_back(spec.name);
    throw UsageError(where + ": its rows are of " + Joined(uncovered) +
                     ", which the model does not cover (it models " + Joined(names) + ")");
  }
  if (kept.empty()) {
    throw UsageError(where + ": it has no rows of --collective " + request.collective +
                     " (it has " + Joined(unwanted) +
                     (uncovered.empty() ? "" : ", " + Joined(uncovered)) + ")");
  }
  if (!uncovered.empty()) {
    warnings << m.path << ": warning: the rows of " << Joined(uncovered)
             << " are left out: the model does not cover them\n";
  }
  m.run.rows = std::move(kept);
}

}  // namespace

std::string_view PlacementName(Placement placement) {
  return placement == Placement::kOutOfPlace ? "out-of-place" : "in-place";
}

std::vector<Placement> WantedPlacements(const std::string& placement) {
  if (placement == "both") return {Placement::kOutOfPlace, Placement::kInPlace};
  if (placement == "out") return {Placement::kOutOfPlace};
  if (placement == "in") return {Placement::kInPlace};
  throw UsageError("--placement '" + placement + "': choose both, out or in");
}

// A rank count alone is not taken for a node count: ranks / GPUs per node assumes full
// nodes, which a log without host names cannot confirm (4 nodes of 4 GPUs would pass for 2
// of 8 and be fitted at the wrong scale), so the error suggests it and the user confirms.
int NodeCountOf(const MeasuredRun& m, int measured_nodes, const Platform& platform) {
  const std::string where = m.flag + " " + m.path;
  if (measured_nodes < 0) throw UsageError("--measured-nodes must be at least 1");
  const int named = NodesOf(m.run);
  if (named > 0 && measured_nodes > 0 && named != measured_nodes) {
    throw UsageError(where + ": the run names " + std::to_string(named) +
                     " hosts, but --measured-nodes says " + std::to_string(measured_nodes) +
                     ": drop --measured-nodes");
  }
  const int nodes = named > 0 ? named : measured_nodes;
  const int gpus = platform.gpus_per_node;
  if (nodes == 0) {
    std::string hint;
    if (m.run.nranks > 0 && gpus > 0 && m.run.nranks % gpus == 0) {
      hint = fmt::format(" (its {} ranks on full nodes of {} GPUs: --measured-nodes {})",
                         m.run.nranks, gpus, m.run.nranks / gpus);
    }
    throw UsageError(where +
                     ": the run does not say how many nodes it ran on (no '#  Rank N ... on "
                     "HOST' device lines): give --measured-nodes N" +
                     hint);
  }
  if (m.run.nranks > 0 && m.run.nranks != nodes * gpus) {
    throw UsageError(where + ": the run has " + std::to_string(m.run.nranks) + " ranks, but " +
                     std::to_string(nodes) + " nodes of " + platform.name + " (" +
                     std::to_string(gpus) + " GPUs each) make " + std::to_string(nodes * gpus) +
                     ": check --platform (or --gpus-per-node) and --measured-nodes");
  }
  return nodes;
}

MeasuredRun ReadMeasured(const std::string& flag, const std::string& path,
                         const ModelRequest& request, const Platform& platform,
                         std::ostream& warnings) {
  // One --collective also names the collective of a log that does not say it, as the
  // reader's warning advises.
  ParseOptions parse;
  if (request.collective_given) {
    const std::vector<Collective> named = ParseCollectives(request.collective);
    if (named.size() == 1) parse.collective = std::string(SpecOf(named.front()).name);
  }
  ParsedResults parsed = ReadResultsFile(path, parse);
  for (const Diagnostic& d : parsed.diagnostics) warnings << d.ToString() << "\n";
  MeasuredRun m;
  m.flag = flag;
  m.path = path;
  const std::string where = flag + " " + path;
  if (parsed.RowCount() == 0) {
    throw UsageError(where +
                     ": no result rows could be read (see above); expected an nccl-tests or "
                     "rccl-tests log, nccl-tests JSON (-J), rccl-tests JSON or CSV (-Z), or "
                     "fabricscope's JSON or CSV");
  }
  m.run = MergedRuns(parsed, where);
  std::vector<Collective> only;
  if (request.collective_given && flag == "--compare") only = ParseCollectives(request.collective);
  KeepCoveredRows(m, only, request, warnings);
  m.nodes = NodeCountOf(m, request.measured_nodes, platform);
  return m;
}

std::vector<Placement> PlacementsOf(const ModelRequest& request, const MeasuredRun& m,
                                    size_t min_size) {
  std::vector<Placement> out;
  for (Placement placement : WantedPlacements(request.placement)) {
    for (const ResultRow& row : m.run.rows) {
      const auto& half = placement == Placement::kOutOfPlace ? row.out_of_place : row.in_place;
      if (half && half->time_us > 0 && row.size > 0 && row.size >= min_size) {
        out.push_back(placement);
        break;
      }
    }
  }
  if (out.empty()) {
    throw UsageError(
        m.flag + " " + m.path + ": no " +
        (request.placement == "both" ? std::string("row")
                                     : "--placement " + request.placement + " row") +
        " with a time" +
        (min_size > 0 ? " at or above --min-size " + request.min_size : std::string()) +
        " to read");
  }
  return out;
}

}  // namespace fabricscope
