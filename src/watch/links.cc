#include "watch/links.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "fabricscope/statistics.h"
#include "watch/judge.h"

namespace fabricscope::watch {
namespace {

struct Link {
  int rank = 0;
  int peer = 0;
  std::string host;
  std::vector<double> medians_us;  // one per drain
  uint64_t ops = 0;
};

// Per communicator: its send links, and the host of each rank seen.
struct CommLinks {
  std::map<std::pair<int, int>, Link> links;
  std::map<int, std::string> hosts;
};

std::map<std::string, CommLinks> Collect(const std::vector<InspectorLink>& links) {
  std::map<std::string, CommLinks> comms;
  for (const InspectorLink& l : links) {
    CommLinks& c = comms[l.comm];
    c.hosts[l.rank] = l.hostname;
    if (!l.send || l.ops == 0) continue;
    Link& link = c.links[{l.rank, l.peer}];
    link.rank = l.rank;
    link.peer = l.peer;
    link.host = l.hostname;
    link.medians_us.push_back(l.median_us);
    link.ops += l.ops;
  }
  return comms;
}

std::string HostOf(const CommLinks& c, int rank) {
  const auto it = c.hosts.find(rank);
  return it == c.hosts.end() || it->second.empty() ? "?" : it->second;
}

void JudgeComm(const std::string& comm, const CommLinks& c, const WatchOptions& options,
               std::vector<Finding>* findings) {
  if (c.links.size() < options.min_links) return;
  std::vector<std::pair<double, const Link*>> times;
  for (const auto& [key, link] : c.links) times.emplace_back(Median(link.medians_us), &link);
  std::sort(times.begin(), times.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  const auto& [slowest_us, slowest] = times.front();
  std::vector<double> others;
  for (size_t i = 1; i < times.size(); ++i) others.push_back(times[i].first);
  const double typical = Median(others);
  if (typical <= 0) return;
  const double ratio = slowest_us / typical;
  if (ratio < options.slow_link_ratio) return;
  // The others' own spread is the noise: a link within it is not shown to be slow.
  const double spread = others.front() / std::max(others.back(), 1e-9);
  const std::string pair =
      fmt::format("rank {} -> rank {} ({} -> {})", slowest->rank, slowest->peer,
                  HostOf(c, slowest->rank), HostOf(c, slowest->peer));
  std::vector<std::string> ends;
  for (const int r : {slowest->rank, slowest->peer}) {
    const std::string host = HostOf(c, r);
    if (!host.empty() && host != "?" && std::find(ends.begin(), ends.end(), host) == ends.end()) {
      ends.push_back(host);
    }
  }
  const std::map<std::string, double> figures = {
      {"rank", static_cast<double>(slowest->rank)},
      {"peer", static_cast<double>(slowest->peer)},
      {"ratio", ratio},
      {"median_us", slowest_us},
      {"others_median_us", typical},
      {"other_links", static_cast<double>(others.size())},
      {"others_spread", spread},
      {"ops", static_cast<double>(slowest->ops)}};
  if (ratio >= spread * options.slow_link_ratio) {
    findings->push_back(Alert(
        {.source = "slow-link",
         .what = fmt::format(
             "{:.1f}x its ring neighbours (send ProxyOp median {:.1f} us against {:.1f} us over "
             "{} other links of communicator {}; {} ops)",
             ratio, slowest_us, typical, others.size(), comm, slowest->ops),
         .where = pair,
         .fix = "test that pair with `fabricscope locate` and look at both NICs (`fabricscope "
                "doctor`, `fabricscope fabric`)",
         .figures = figures,
         .element = "link",
         .nodes = ends}));
  } else {
    findings->push_back(Inconclusive(
        {.source = "slow-link",
         .what = fmt::format(
             "{:.1f}x the median of the other links of communicator {}, but they spread "
             "{:.1f}x among themselves",
             ratio, comm, spread),
         .where = pair,
         .fix = "run `fabricscope locate` on those nodes to decide",
         .figures = figures,
         .element = "link",
         .nodes = ends}));
  }
}

}  // namespace

void JudgeLinks(const std::vector<InspectorLink>& links, const WatchOptions& options,
                std::vector<Finding>* findings) {
  for (const auto& [comm, c] : Collect(links)) JudgeComm(comm, c, options, findings);
}

}  // namespace fabricscope::watch
