#include "cli/records.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "fabricscope/version.h"

namespace fabricscope::cli {
namespace {

db::Record Base(std::string command, const std::vector<std::string>& command_line) {
  db::Record r;
  r.command = std::move(command);
  r.command_line = command_line;
  r.fabricscope_version = kVersion;
  return r;
}

// "2.28.9" of NCCL_VERSION_CODE 22809; "" for none.
std::string NcclVersion(int code) {
  if (code <= 0) return "";
  return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
}

std::vector<std::string> Sorted(std::set<std::string> hosts) {
  hosts.erase("");
  return {hosts.begin(), hosts.end()};
}

std::vector<std::string> HostsOf(const std::vector<RankInfo>& ranks) {
  std::set<std::string> hosts;
  for (const RankInfo& r : ranks) hosts.insert(r.hostname);
  return Sorted(std::move(hosts));
}

// A node set's element: "node" and the host for one, "nodes" and "a,b,c" for several.
void SetElement(db::Measure& m, const std::vector<std::string>& hosts) {
  m.element_kind = hosts.size() == 1 ? "node" : "nodes";
  m.element = fmt::format("{}", fmt::join(hosts, ","));
}

void AddRows(const RunResult& run, db::Record& r) {
  for (const ResultRow& row : run.rows) {
    for (const auto* placement : {&row.out_of_place, &row.in_place}) {
      if (!*placement) continue;
      r.rows.push_back({.collective = row.collective,
                        .size = row.size,
                        .count = row.count,
                        .dtype = row.type,
                        .redop = row.redop,
                        .root = row.root,
                        .in_place = placement == &row.in_place,
                        .time_us = (*placement)->time_us,
                        .algbw = (*placement)->algbw,
                        .busbw = (*placement)->busbw,
                        .wrong = (*placement)->wrong.value_or(-1)});
    }
  }
}

std::string Outcome(Severity worst, bool undecided) {
  return undecided && worst < Severity::kCritical ? "INCONCLUSIVE"
                                                  : std::string(SeverityName(worst));
}

void AddFindings(const std::vector<Finding>& findings, db::Record& r) {
  r.findings.insert(r.findings.end(), findings.begin(), findings.end());
}

}  // namespace

db::Record RecordOfRun(const RunResult& run, const std::vector<std::string>& command_line) {
  db::Record r = Base("run", command_line);
  r.hosts = HostsOf(run.ranks);
  r.nccl_version = NcclVersion(run.nccl_version);
  AddRows(run, r);
  // Per collective, the largest size's busbw (out of place, as nccl-tests' first columns).
  std::map<std::string, const ResultRow*> largest;
  for (const ResultRow& row : run.rows) {
    const ResultRow*& best = largest[row.collective];
    if (best == nullptr || row.size >= best->size) best = &row;
  }
  for (const auto& [collective, row] : largest) {
    const auto& placement = row->out_of_place ? row->out_of_place : row->in_place;
    if (!placement || r.hosts.empty()) continue;
    db::Measure m{.collective = collective,
                  .ranks = run.nranks,
                  .size = row->size,
                  .value = placement->busbw};
    SetElement(m, r.hosts);
    r.measures.push_back(std::move(m));
  }
  return r;
}

db::Record RecordOfCheck(const CheckReport& report, const std::vector<RunResult>& runs,
                         const std::vector<std::string>& command_line) {
  db::Record r = Base("check", command_line);
  if (report.platform.platform) r.platform = report.platform.platform->name;
  r.outcome = std::string(SeverityName(report.status));
  std::set<std::string> hosts;
  int nccl = 0;
  for (const RunResult& run : runs) {
    for (const RankInfo& rank : run.ranks) hosts.insert(rank.hostname);
    nccl = std::max(nccl, run.nccl_version);
    AddRows(run, r);
  }
  r.hosts = Sorted(std::move(hosts));
  r.nccl_version = NcclVersion(nccl);
  for (const TestVerdict& t : report.tests) {
    AddFindings(t.findings, r);
    if (!t.measured_busbw || t.hosts.empty()) continue;
    db::Measure m{.collective = t.collective, .ranks = t.ranks, .value = *t.measured_busbw};
    SetElement(m, t.hosts);
    if (t.expected) {
      m.healthy = t.expected->healthy;
      m.fail_below = t.expected->fail_below;
    }
    r.measures.push_back(std::move(m));
  }
  for (const PasteDiagnosis& d : report.diagnoses) AddFindings(d.findings, r);
  return r;
}

db::Record RecordOfLocate(const LocateReport& report,
                          const std::vector<std::string>& command_line) {
  db::Record r = Base("locate", command_line);
  r.hosts = HostsOf(report.ranks);
  r.outcome = Outcome(Worst(report.findings), AnyUndecided(report.findings));
  AddFindings(report.findings, r);
  for (const PairJudgement& j : report.judgements) {
    const std::string a = report.HostOfNode(j.pair.a);
    const std::string b = report.HostOfNode(j.pair.b);
    if (a.empty() || b.empty() || !(j.sendrecv > 0)) continue;
    const auto [lo, hi] = std::minmax(a, b);
    std::string link = lo;
    link += "<->";
    link += hi;
    if (report.layout.rails > 1) link += fmt::format(" rail {}", j.rail);
    r.measures.push_back({.element_kind = "link",
                          .element = std::move(link),
                          .collective = "sendrecv",
                          .ranks = 2,
                          .size = report.bytes,
                          .value = j.sendrecv});
  }
  return r;
}

db::Record RecordOfDoctor(const doctor::ClusterReport& report,
                          const std::vector<std::string>& command_line) {
  db::Record r = Base("doctor", command_line);
  std::set<std::string> hosts;
  for (const doctor::NodeReport& node : report.nodes) {
    hosts.insert(node.host);
    for (const doctor::CheckResult& check : node.checks) AddFindings(check.findings, r);
  }
  for (const doctor::Drift& d : report.drift) r.findings.push_back(doctor::DriftFinding(d));
  r.hosts = Sorted(std::move(hosts));
  r.outcome = std::string(SeverityName(report.severity()));
  return r;
}

db::Record RecordOfWatch(const std::vector<WatchWindow>& windows,
                         const std::vector<std::string>& command_line) {
  db::Record r = Base("watch", command_line);
  std::vector<Finding> all;
  for (const WatchWindow& w : windows) {
    std::set<std::string> nodes;
    for (const WatchRank& rank : w.ranks) nodes.insert(rank.node);
    const std::vector<std::string> hosts = Sorted(std::move(nodes));
    for (const std::string& h : hosts) r.hosts.push_back(h);
    AddFindings(w.findings, r);
    all.insert(all.end(), w.findings.begin(), w.findings.end());
    for (const WatchBucket& b : w.buckets) {
      if (hosts.empty() || !(b.busbw_gbs > 0)) continue;
      db::Measure m{.collective = b.collective + " " + b.size_bucket,
                    .ranks = static_cast<int>(w.ranks.size()),
                    .size = b.max_bytes,
                    .value = b.busbw_gbs,
                    .healthy = b.expected_low_gbs};
      SetElement(m, hosts);
      r.measures.push_back(std::move(m));
    }
  }
  std::sort(r.hosts.begin(), r.hosts.end());
  r.hosts.erase(std::unique(r.hosts.begin(), r.hosts.end()), r.hosts.end());
  r.outcome = Outcome(Worst(all), AnyUndecided(all));
  return r;
}

db::Record RecordOfFabric(const fabric::FabricReport& report,
                          const std::vector<std::string>& command_line) {
  db::Record r = Base("fabric", command_line);
  AddFindings(report.findings, r);
  r.outcome = Outcome(report.worst(), AnyUndecided(report.findings));
  return r;
}

}  // namespace fabricscope::cli
