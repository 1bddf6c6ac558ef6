// Configuration drift: the facts on which some nodes of a job differ from the others.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "fabricscope/doctor.h"
#include "fabricscope/env.h"

namespace fabricscope::doctor {

std::vector<Drift> FindDrift(const std::vector<NodeReport>& nodes) {
  std::vector<Drift> out;
  if (nodes.size() < 2) return out;
  std::set<std::string> keys;
  for (const NodeReport& n : nodes) {
    for (const auto& [key, value] : n.facts) keys.insert(key);
  }
  const std::string absent = "(absent)";
  for (const std::string& key : keys) {
    std::map<std::string, int> counts;
    std::vector<std::string> values;
    for (const NodeReport& n : nodes) {
      const auto it = n.facts.find(key);
      values.push_back(it == n.facts.end() ? absent : it->second);
      ++counts[values.back()];
    }
    if (counts.size() == 1) continue;
    Drift d;
    d.key = key;
    d.node_count = static_cast<int>(nodes.size());
    // NCCL expects the same tuning on every rank: ranks that disagree on algorithms,
    // protocols or channels can pick different schedules and hang. What only logs or names a
    // host's own interface may differ (run's rendezvous judges the same way).
    const bool env = key.starts_with("env.");
    d.severity = env && VariableShapesRun(std::string_view(key).substr(4)) ? Severity::kCritical
                                                                           : Severity::kWarn;
    int best = 0, ties = 0;
    for (const auto& [value, count] : counts) {
      if (count > best) {
        best = count;
        ties = 1;
        d.majority = value;
      } else if (count == best) {
        ++ties;
      }
    }
    // A majority is one value held by more nodes than any other, and by at least two.
    if (ties > 1 || best < 2) {
      d.majority.clear();
      best = 0;
    }
    d.majority_count = best;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (!d.majority.empty() && values[i] == d.majority) continue;
      d.outliers.push_back({nodes[i].rank, nodes[i].host, values[i]});
    }
    out.push_back(std::move(d));
  }
  // The most serious first, then by key.
  std::stable_sort(out.begin(), out.end(),
                   [](const Drift& a, const Drift& b) { return a.severity > b.severity; });
  return out;
}

Finding DriftFinding(const Drift& drift) {
  Finding f;
  f.severity = drift.severity;
  f.source = "drift";
  f.where = drift.key;
  const size_t outliers = drift.outliers.size();
  f.what =
      drift.majority.empty()
          ? fmt::format("no value is held by a majority of the {} nodes", drift.node_count)
          : fmt::format("{} of {} node(s) differ from the majority: {} on {} of {}", outliers,
                        drift.node_count, drift.majority, drift.majority_count, drift.node_count);
  f.element = drift.majority.empty() ? "nodes" : "node";  // no majority: nobody stands out
  for (const NodeValue& v : drift.outliers) {
    f.evidence.push_back(fmt::format("rank {} ({}): {}", v.rank, v.host, v.value));
    if (std::find(f.nodes.begin(), f.nodes.end(), v.host) == f.nodes.end()) {
      f.nodes.push_back(v.host);
    }
  }
  // The same NCCL tuning on every rank is NCCL's requirement; other facts may differ on
  // purpose (a node of another batch), so the fix says to look rather than what to set.
  f.fix = drift.key.starts_with("env.")
              ? "give every rank the same NCCL variables (the launcher's environment and "
                "/etc/nccl.conf)"
              : "bring the differing node(s) in line with the others, unless the difference is "
                "deliberate";
  f.figures = {{"majority_count", drift.majority_count}, {"node_count", drift.node_count}};
  return f;
}

}  // namespace fabricscope::doctor
