// Slurm through scontrol, and the dry run that prints what it would run.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <regex>
#include <sstream>

#include "fabricscope/strings.h"
#include "service/services.h"

namespace fabricscope::service {
namespace {

// The node states in which Slurm schedules nothing on a node (scontrol's State=, split at '+').
bool Unschedulable(const std::string& state) {
  for (const std::string& part : Split(state, '+')) {
    const std::string p = Lower(part);
    if (p == "drain" || p == "drained" || p == "draining" || p == "down" || p == "fail" ||
        p == "failing") {
      return true;
    }
  }
  return false;
}

// The value of KEY= in an `scontrol show node -o` line: up to the next " Word=" field.
std::string Field(const std::string& line, const std::string& key) {
  const std::regex start("(^|\\s)" + key + "=");
  std::smatch m;
  if (!std::regex_search(line, m, start)) return "";
  const std::string rest = m.suffix().str();
  std::smatch next;
  if (std::regex_search(rest, next, std::regex("\\s[A-Z][A-Za-z]*="))) {
    return rest.substr(0, static_cast<size_t>(next.position(0)));
  }
  return std::string(Trim(rest));
}

class SlurmService : public NodeService {
 public:
  explicit SlurmService(const NodeServiceOptions& options) : options_(options) {}

  NodeState State(const std::string& node) override {
    const std::vector<std::string> argv = {"scontrol", "show", "node", "-o", node};
    const ToolRun run = RunTool(argv, options_.timeout_seconds);
    NodeState state;
    const std::string error = FailureOf(run, argv, options_.timeout_seconds);
    if (error.empty()) state = ParseSlurmNode(run.out);
    state.command = CommandLineOf(argv);
    state.error = error;
    if (error.empty() && state.state.empty()) {
      state.error = "'" + state.command + "' printed no State= for node " + node;
    }
    return state;
  }

  ServiceCall Drain(const std::string& node, const std::string& /*source*/,
                    const std::string& reason) override {
    return Run(DrainArgv(node, reason));
  }

  ServiceCall Resume(const std::string& node) override { return Run(ResumeArgv(node)); }

  static std::vector<std::string> DrainArgv(const std::string& node, const std::string& reason) {
    return {"scontrol", "update", "NodeName=" + node, "State=DRAIN", "Reason=" + reason};
  }
  static std::vector<std::string> ResumeArgv(const std::string& node) {
    return {"scontrol", "update", "NodeName=" + node, "State=RESUME"};
  }

 private:
  ServiceCall Run(const std::vector<std::string>& argv) const {
    const ToolRun run = RunTool(argv, options_.timeout_seconds);
    return {.command = CommandLineOf(argv),
            .ran = true,
            .error = FailureOf(run, argv, options_.timeout_seconds)};
  }

  NodeServiceOptions options_;
};

class DryRunService : public NodeService {
 public:
  explicit DryRunService(const NodeServiceOptions& options) : slurm_(options) {}

  // What scontrol says when it can; otherwise (no scontrol, not a Slurm node) not drained.
  NodeState State(const std::string& node) override {
    NodeState state = slurm_.State(node);
    if (!state.error.empty()) return {};
    return state;
  }

  ServiceCall Drain(const std::string& node, const std::string& /*source*/,
                    const std::string& reason) override {
    return {
        .command = CommandLineOf(SlurmService::DrainArgv(node, reason)), .ran = false, .error = ""};
  }

  ServiceCall Resume(const std::string& node) override {
    return {.command = CommandLineOf(SlurmService::ResumeArgv(node)), .ran = false, .error = ""};
  }

 private:
  SlurmService slurm_;
};

}  // namespace

std::string FailureOf(const ToolRun& run, const std::vector<std::string>& argv,
                      double timeout_seconds) {
  const std::string command = CommandLineOf(argv);
  if (!run.started) {
    return fmt::format("'{}' could not be started: {} is not on PATH", command, argv.front());
  }
  if (run.timed_out) {
    return fmt::format("'{}' did not finish within {} s (killed)", command, timeout_seconds);
  }
  if (run.exit_code == 0) return "";
  std::vector<std::string> lines;
  std::istringstream in(run.err.empty() ? run.out : run.err);
  for (std::string line; std::getline(in, line);) {
    if (!Trim(line).empty()) lines.emplace_back(Trim(line));
  }
  if (lines.size() > 3) lines.erase(lines.begin(), lines.end() - 3);
  return fmt::format(
      "'{}' exited with {}: {}", command, run.exit_code,
      lines.empty() ? std::string("(no output)") : fmt::format("{}", fmt::join(lines, " / ")));
}

NodeState ParseSlurmNode(const std::string& line) {
  NodeState state;
  state.state = Field(line, "State");
  state.drained = Unschedulable(state.state);
  std::string reason = Field(line, "Reason");
  // "Reason=not responding [slurm@2026-12-02T01:02:03]": who and when, not the reason.
  std::smatch m;
  if (std::regex_search(reason, m, std::regex("\\s*\\[[^\\]\\s]*@[^\\]\\s]*\\]\\s*$"))) {
    reason = reason.substr(0, static_cast<size_t>(m.position(0)));
  }
  state.reason = reason == "(null)" || reason == "none" ? "" : std::string(Trim(reason));
  return state;
}

std::unique_ptr<NodeService> MakeSlurmService(const NodeServiceOptions& options) {
  return std::make_unique<SlurmService>(options);
}

std::unique_ptr<NodeService> MakeDryRunService(const NodeServiceOptions& options) {
  return std::make_unique<DryRunService>(options);
}

}  // namespace fabricscope::service
