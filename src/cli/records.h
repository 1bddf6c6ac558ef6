// Each command's report as the record the results store keeps (docs/fleet.md, "What is
// recorded"): its rows, findings and the figures history follows.
#pragma once

#include <string>
#include <vector>

#include "fabricscope/check.h"
#include "fabricscope/doctor.h"
#include "fabricscope/fabric.h"
#include "fabricscope/locate.h"
#include "fabricscope/result.h"
#include "fabricscope/results_db.h"
#include "fabricscope/watch.h"

namespace fabricscope::cli {

// A run: its rows, and per collective the busbw of its largest size for its node set.
db::Record RecordOfRun(const RunResult& run, const std::vector<std::string>& command_line);

// A check: the rows judged, every finding (the tests', then the paste diagnoses'), and per test
// with a measured busbw that figure with the platform's band, for the test's node set.
db::Record RecordOfCheck(const CheckReport& report, const std::vector<RunResult>& runs,
                         const std::vector<std::string>& command_line);

// locate: its findings, and per pair measured (and rail, with several) the median sendrecv
// busbw as a link's figure.
db::Record RecordOfLocate(const LocateReport& report, const std::vector<std::string>& command_line);

// doctor: every node's findings and the drift's, its nodes as hosts; no figures.
db::Record RecordOfDoctor(const doctor::ClusterReport& report,
                          const std::vector<std::string>& command_line);

// watch: every window's findings, and per bucket its busbw for the ranks' nodes.
db::Record RecordOfWatch(const std::vector<WatchWindow>& windows,
                         const std::vector<std::string>& command_line);

// fabric: its findings (links, switches).
db::Record RecordOfFabric(const fabric::FabricReport& report,
                          const std::vector<std::string>& command_line);

}  // namespace fabricscope::cli
