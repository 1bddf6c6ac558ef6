// The services behind fabricscope/drain.h's registry, and what they share: a command's failure
// as one message.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fabricscope/drain.h"
#include "fabricscope/tool_run.h"

namespace fabricscope::service {

// scontrol: drains with State=DRAIN Reason="...", resumes with State=RESUME, reads
// `scontrol show node -o NODE`.
std::unique_ptr<NodeService> MakeSlurmService(const NodeServiceOptions& options);

// Prints what slurm would run and runs nothing; reads the state with scontrol when it can,
// else takes every node as not drained.
std::unique_ptr<NodeService> MakeDryRunService(const NodeServiceOptions& options);

// kubectl: a NoSchedule taint fabricscope.io/fault=SOURCE and a FabricscopeFault node
// condition; resume removes the taint and sets the condition False. Not tested against a real
// API server (tests/service: a fake kubectl).
std::unique_ptr<NodeService> MakeKubernetesService(const NodeServiceOptions& options);

// Why `run` of `argv` failed, naming the command: not found, timed out, or its exit code and
// the last lines of its stderr; "" when it exited 0.
std::string FailureOf(const ToolRun& run, const std::vector<std::string>& argv,
                      double timeout_seconds);

// Slurm's `scontrol show node -o` line as a state: State=, and Reason= without the
// " [user@time]" Slurm appends.
NodeState ParseSlurmNode(const std::string& line);

}  // namespace fabricscope::service
