#include "launch/plan_agreement.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "fabricscope/collective.h"
#include "fabricscope/dtype.h"
#include "fabricscope/version.h"

namespace fabricscope {
namespace {

template <typename T, typename Name>
std::string JoinNames(const std::vector<T>& items, Name name) {
  std::string out;
  for (const T& item : items) {
    if (!out.empty()) out += ',';
    out += name(item);
  }
  return out;
}

// The environment a process runs with that the others must share: every NCCL_* variable
// and Gloo's, marked by whether a difference changes what the ranks exchange.
void AddEnvironment(const Env& env, std::vector<PlanSetting>& out) {
  for (std::string_view family : {"NCCL_*", "GLOO_*"}) {
    for (const auto& [name, value] : env.Family(family)) {
      out.push_back({name, value, VariableShapesRun(name)});
    }
  }
}

// Processes named for a message: at most four, then how many more.
std::string Holders(const std::vector<std::string>& who) {
  constexpr size_t kNamed = 4;
  std::string out;
  for (size_t i = 0; i < who.size() && i < kNamed; ++i) {
    out += (i == 0 ? "" : ", ") + who[i];
  }
  if (who.size() > kNamed) out += fmt::format(" and {} more", who.size() - kNamed);
  return out;
}

// "-e/--maxbytes is 1048576 on process 0 (rank 0 on a) but 4194304 on process 1 (...)":
// the most common value first, each with its holders.
std::string Difference(const std::string& name,
                       const std::map<std::string, std::vector<std::string>>& by_value) {
  std::vector<std::pair<std::string, const std::vector<std::string>*>> values;
  values.reserve(by_value.size());
  for (const auto& [value, who] : by_value) values.emplace_back(value, &who);
  std::stable_sort(values.begin(), values.end(), [](const auto& a, const auto& b) {
    return a.second->size() > b.second->size();
  });
  std::string out = name + " is ";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += i + 1 == values.size() ? " but " : ", ";
    out += fmt::format("{} on {}", values[i].first.empty() ? "(unset)" : values[i].first,
                       Holders(*values[i].second));
  }
  return out;
}

}  // namespace

std::vector<PlanSetting> DescribePlan(const RunOptions& o, const SweepPlan& plan,
                                      const Backend& backend, const Env& env) {
  std::vector<PlanSetting> out = {
      {"collectives (the binary or --collective)",
       JoinNames(o.collectives, [](Collective c) { return std::string(SpecOf(c).name); })},
      {"-d/--datatype", JoinNames(o.types, [](DataType t) { return std::string(NameOf(t)); })},
      {"-o/--op", JoinNames(o.ops, [](ReduceOp op) { return std::string(NameOf(op)); })},
      {"-b/--minbytes", std::to_string(o.min_bytes)},
      // With the cap nccl-tests applies for host memory, which differs between hosts.
      {"-e/--maxbytes",
       plan.max_bytes == o.max_bytes
           ? std::to_string(o.max_bytes)
           : fmt::format("{} (capped to {} by host memory)", o.max_bytes, plan.max_bytes)},
      {"-i/--stepbytes", std::to_string(o.step_bytes)},
      {"-f/--stepfactor", std::to_string(o.step_factor)},
      {"-n/--iters", std::to_string(o.iters)},
      {"-w/--warmup_iters", std::to_string(o.warmup_iters)},
      {"-m/--agg_iters", std::to_string(o.agg_iters)},
      {"-N/--run_cycles", std::to_string(o.run_cycles)},
      {"-c/--check", std::to_string(o.check)},
      {"-r/--root", std::to_string(o.root)},
      {"-z/--blocking", std::to_string(o.blocking)},
      {"-a/--average", std::to_string(static_cast<int>(o.average))},
      {"-t/--nthreads", std::to_string(o.nthreads)},
      {"-g/--ngpus", std::to_string(o.ngpus)},
      {"-G/--cudagraph", std::to_string(o.graph_launches)},
      {"-R/--local_register", std::to_string(o.registration)},
      {"-u/--unalign", std::to_string(o.unalign)},
      {"-I/--per_iter_timing", o.per_iter_timing ? "1" : "0"},
      {"-K/--per_iter_skip", std::to_string(o.per_iter_skip)},
      {"-C/--report_cputime", o.report_cputime ? "1" : "0"},
      {"--backend", std::string(backend.name())},
      {"the backend's library", backend.version()},
      {"fabricscope's version", std::string(kVersion)},
      {"-T/--timeout", fmt::format("{:g}", o.timeout_s), false},
  };
  AddEnvironment(env, out);
  return out;
}

std::vector<char> EncodePlan(const std::string& who, const std::vector<PlanSetting>& settings) {
  std::string text = who + "\n";
  for (const PlanSetting& s : settings) {
    // A value with a newline (an odd environment) is kept on its line: the newline escaped.
    std::string value;
    for (char c : s.value) value += c == '\n' ? std::string("\\n") : std::string(1, c);
    text += fmt::format("{}\t{}\t{}\n", s.shapes_run ? 'S' : 'w', s.name, value);
  }
  return {text.begin(), text.end()};
}

ProcessPlan DecodePlan(const std::vector<char>& data) {
  ProcessPlan plan;
  const std::string text(data.begin(), data.end());
  size_t start = 0;
  bool first = true;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (first) {
      plan.who = line;
      first = false;
      continue;
    }
    const size_t a = line.find('\t');
    const size_t b = a == std::string::npos ? std::string::npos : line.find('\t', a + 1);
    if (b == std::string::npos || a != 1) {
      plan.settings.push_back({line, "(unreadable)"});
      continue;
    }
    plan.settings.push_back({line.substr(2, b - 2), line.substr(b + 1), line[0] == 'S'});
  }
  return plan;
}

PlanVerdict ComparePlans(const std::vector<ProcessPlan>& plans) {
  // Setting -> value -> the processes holding it; a setting a process lacks is "(unset)".
  std::vector<std::string> order;
  std::map<std::string, bool> shapes;
  for (const ProcessPlan& p : plans) {
    for (const PlanSetting& s : p.settings) {
      if (shapes.emplace(s.name, s.shapes_run).second) order.push_back(s.name);
      shapes[s.name] = shapes[s.name] && s.shapes_run;
    }
  }
  // Each plan's settings by name, looked up once per setting: a job of 16k processes has
  // 16k plans of some 40 settings each.
  std::vector<std::map<std::string_view, std::string_view>> values(plans.size());
  for (size_t i = 0; i < plans.size(); ++i) {
    for (const PlanSetting& s : plans[i].settings) values[i][s.name] = s.value;
  }
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
  for (const std::string& name : order) {
    std::map<std::string, std::vector<std::string>> by_value;
    for (size_t i = 0; i < plans.size(); ++i) {
      const auto found = values[i].find(name);
      by_value[found == values[i].end() ? std::string() : std::string(found->second)].push_back(
          plans[i].who);
    }
    if (by_value.size() < 2) continue;
    (shapes[name] ? errors : warnings).push_back(Difference(name, by_value));
  }
  PlanVerdict verdict;
  if (!errors.empty()) {
    verdict.error =
        "the processes of this job were started with different settings, so their "
        "ranks would run different collectives and fail or hang inside the library: ";
    for (size_t i = 0; i < errors.size(); ++i) verdict.error += (i == 0 ? "" : "; ") + errors[i];
    verdict.error +=
        ". Start every process with the same flags, fabricscope build and NCCL_* environment "
        "(one node's script, image or environment differs)";
  }
  if (!warnings.empty()) {
    verdict.warning =
        "the processes of this job differ in settings that do not change what "
        "they exchange: ";
    for (size_t i = 0; i < warnings.size(); ++i) {
      verdict.warning += (i == 0 ? "" : "; ") + warnings[i];
    }
  }
  return verdict;
}

}  // namespace fabricscope
