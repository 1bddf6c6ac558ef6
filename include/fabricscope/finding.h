// One finding model for every diagnosis (doctor, check, fabric, watch, locate): one severity
// scale, one record, one text writer, one JSON writer and one exit rule (docs/output.md,
// "Findings").
#pragma once

#include <array>
#include <map>
// The declarations only: most of the 60-odd files that include this header never touch JSON,
// and json.hpp cost each of them about 2 s of compile and 4 s of clang-tidy (2026-11-29).
// A file that builds or reads the JSON includes <nlohmann/json.hpp> itself.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace fabricscope {

// How bad a finding is, ordered so that the worst of several is the largest. CRITICAL is
// what check has called FAIL: a result or a setting that is wrong, exit 1.
enum class Severity { kOk = 0, kInfo = 1, kWarn = 2, kCritical = 3 };

// Every severity, best first: for tallies that list each one.
inline constexpr std::array<Severity, 4> kSeverities = {Severity::kOk, Severity::kInfo,
                                                        Severity::kWarn, Severity::kCritical};

// "OK", "INFO", "WARN", "CRITICAL".
std::string_view SeverityName(Severity severity);

// One thing a diagnosis found: what, where, what it rests on and what to do.
struct Finding {
  Severity severity = Severity::kOk;
  std::string source;                   // the check or rule that found it: "ib-ports", "bandwidth"
  std::string what;                     // one sentence, with the figures it compares
  std::string where{};                  // the node, rank, link, switch or test; "" none
  std::vector<std::string> evidence{};  // what it rests on: "file:line: text", "path: value"
  std::string fix{};                    // what to do; "" nothing
  std::map<std::string, double> figures{};  // the numbers behind `what`, for programs
  // false: the evidence did not decide (an inconclusive straggler, an undecided pair). The
  // finding then says the noise figure and what would decide, and the diagnosis exits 4.
  bool decided = true;
  // What kind of thing `where` is, for a store and for acting on the finding: "node" (a
  // host), "nic" (a host's port or HCA), "link" (between two hosts or ports), "switch",
  // "rail", "nodes" (a set of hosts, as a multi-node run is), "fabric"; "" not said.
  std::string element{};
  // The hosts it blames, as their host names: the node (one) for a node's or a NIC's
  // finding, both ends of a link, every host of a node set; empty: none. --drain takes the
  // hosts of CRITICAL "node" and "nic" findings out of service (docs/slurm.md).
  std::vector<std::string> nodes{};
};

// The worst severity of `findings`; `floor` when there are none.
Severity Worst(const std::vector<Finding>& findings, Severity floor = Severity::kOk);

// True when some finding did not decide.
bool AnyUndecided(const std::vector<Finding>& findings);

// How a diagnosis ended, by the one rule every diagnosis follows (docs/output.md): failed on a
// CRITICAL (or a WARN under --strict), otherwise inconclusive when something did not decide,
// otherwise clear. The command line maps these to exit codes 1, 4 and 0.
enum class Outcome { kClear, kFailed, kInconclusive };
Outcome OutcomeOf(Severity worst, bool undecided, bool strict);
Outcome OutcomeOf(const std::vector<Finding>& findings, bool strict);

// How the text writer lays findings out.
struct FindingTextStyle {
  std::string indent{};        // before every line
  bool details = true;         // evidence and fix under the findings that are problems
  bool ok_details = false;     // ... and under OK and INFO findings too (--verbose)
  bool problems_only = false;  // leave out OK and INFO findings
  size_t source_width = 0;     // the source column's width; 0: the widest source
};

// The one text form of findings, one line each, the details indented below it:
//   WARN      ib-ports      mlx5_0 port 1: runs at 4x HDR, the others at 4x NDR
//                           evidence: /sys/class/infiniband/mlx5_0/ports/1/rate: 200 Gb/sec
//                           fix: reseat or replace the cable
// "where: " leads the sentence when `where` is set; an undecided finding's severity reads
// "INCONCLUSIVE" in place of its own. Empty when nothing is shown.
std::string FindingsText(const std::vector<Finding>& findings, const FindingTextStyle& style = {});

// The one JSON form of a finding and of a list: {"severity": "WARN", "source": ...,
// "what": ..., "where": ..., "evidence": [...], "fix": ..., "figures": {...}, "decided": true,
// "element": ..., "nodes": [...]}.
// Every key is always present ("" and [] when empty), so programs need no existence checks.
nlohmann::ordered_json FindingJson(const Finding& finding);
nlohmann::ordered_json FindingsJson(const std::vector<Finding>& findings);

// The inverse of FindingJson, for findings another process sent (doctor's nodes to rank 0).
// Throws nlohmann's json::exception for a missing key or a wrong type, UsageError for an
// unknown severity.
Finding FindingFromJson(const nlohmann::ordered_json& j);

// The version of the finding object above, written as "findings_version" beside every
// document's "findings" (docs/output.md lists its changes).
inline constexpr int kFindingsVersion = 2;

}  // namespace fabricscope
