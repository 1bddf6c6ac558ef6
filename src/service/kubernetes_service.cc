// Kubernetes through kubectl: a NoSchedule taint keeps new pods off the node, a node condition
// says why. Written from kubectl's documented commands and tested with a fake kubectl that
// logs its argv (tests/service/fake-kubectl); NOT tested against a real API server.
#include <fmt/format.h>

#include <cctype>
#include <nlohmann/json.hpp>

#include "service/services.h"

namespace fabricscope::service {
namespace {

constexpr std::string_view kTaint = "fabricscope.io/fault";
constexpr std::string_view kCondition = "FabricscopeFault";

// A taint value is a label value: letters, digits, '-', '_', '.', at most 63, alphanumeric at
// both ends.
std::string TaintValue(const std::string& source) {
  std::string v;
  for (const char c : source) {
    v += std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.' ? c
                                                                                              : '-';
  }
  if (v.size() > 63) v.resize(63);
  while (!v.empty() && std::isalnum(static_cast<unsigned char>(v.back())) == 0) v.pop_back();
  while (!v.empty() && std::isalnum(static_cast<unsigned char>(v.front())) == 0) v.erase(0, 1);
  return v.empty() ? "fault" : v;
}

// A condition's reason is CamelCase: "ib_ports" -> "IbPorts".
std::string CamelCase(const std::string& source) {
  std::string out;
  bool up = true;
  for (const char c : source) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0) {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return out.empty() ? "Fault" : out;
}

// kubectl's jsonpath line split at tabs, empty fields kept: "\tTrue\tmessage\n".
std::vector<std::string> Fields(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    const size_t tab = text.find('\t', start);
    fields.push_back(
        text.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return fields;
    start = tab + 1;
  }
}

std::string ConditionPatch(bool status, const std::string& reason, const std::string& message) {
  nlohmann::ordered_json condition = {{"type", kCondition},
                                      {"status", status ? "True" : "False"},
                                      {"reason", reason},
                                      {"message", message}};
  nlohmann::ordered_json patch = {{"status", {{"conditions", {condition}}}}};
  return patch.dump();
}

class KubernetesService : public NodeService {
 public:
  explicit KubernetesService(const NodeServiceOptions& options) : options_(options) {}

  // spec.unschedulable (a cordon) and our condition's status and message, tab-separated.
  NodeState State(const std::string& node) override {
    const std::vector<std::string> argv = {
        "kubectl",
        "get",
        "node",
        node,
        "-o",
        "jsonpath={.spec.unschedulable}{\"\\t\"}{range .status.conditions[?(@.type==\"" +
            std::string(kCondition) + "\")]}{.status}{\"\\t\"}{.message}{end}"};
    const ToolRun run = RunTool(argv, options_.timeout_seconds);
    NodeState state;
    state.command = CommandLineOf(argv);
    state.error = FailureOf(run, argv, options_.timeout_seconds);
    if (!state.error.empty()) return state;
    const std::vector<std::string> fields = Fields(run.out);
    const bool cordoned = !fields.empty() && fields[0] == "true";
    const bool ours = fields.size() > 1 && fields[1] == "True";
    state.drained = cordoned || ours;
    state.state = ours ? std::string(kCondition) : cordoned ? "cordoned" : "schedulable";
    if (ours) {
      state.reason = fields.size() > 2 ? fields[2] : "";
    } else if (cordoned) {
      state.reason = "cordoned (spec.unschedulable)";
    }
    return state;
  }

  ServiceCall Drain(const std::string& node, const std::string& source,
                    const std::string& reason) override {
    return RunBoth({"kubectl", "taint", "nodes", node,
                    fmt::format("{}={}:NoSchedule", kTaint, TaintValue(source)), "--overwrite"},
                   {"kubectl", "patch", "node", node, "--subresource=status", "--type=strategic",
                    "-p", ConditionPatch(true, CamelCase(source), reason)},
                   false);
  }

  ServiceCall Resume(const std::string& node) override {
    return RunBoth(
        {"kubectl", "taint", "nodes", node, std::string(kTaint) + "-"},
        {"kubectl", "patch", "node", node, "--subresource=status", "--type=strategic", "-p",
         ConditionPatch(false, "Passed", "fabricscope: the check passed on this node")},
        true);
  }

 private:
  // Both commands, the second only when the first succeeded. `taint_may_be_gone`: removing a
  // taint someone already removed is no failure.
  ServiceCall RunBoth(const std::vector<std::string>& first, const std::vector<std::string>& second,
                      bool taint_may_be_gone) const {
    ServiceCall call{
        .command = CommandLineOf(first) + " && " + CommandLineOf(second), .ran = true, .error = ""};
    const ToolRun a = RunTool(first, options_.timeout_seconds);
    const bool gone =
        taint_may_be_gone && a.started && a.err.find("not found") != std::string::npos;
    call.error = gone ? "" : FailureOf(a, first, options_.timeout_seconds);
    if (!call.error.empty()) return call;
    const ToolRun b = RunTool(second, options_.timeout_seconds);
    call.error = FailureOf(b, second, options_.timeout_seconds);
    return call;
  }

  NodeServiceOptions options_;
};

}  // namespace

std::unique_ptr<NodeService> MakeKubernetesService(const NodeServiceOptions& options) {
  return std::make_unique<KubernetesService>(options);
}

}  // namespace fabricscope::service
