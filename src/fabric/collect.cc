// Getting the tools' outputs: run live (no shell, a timeout each) or read from a directory.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fabricscope/error.h"
#include "fabricscope/fabric.h"
#include "fabricscope/tool_run.h"

namespace fabricscope::fabric {
namespace {

namespace fs = std::filesystem;

// The last `count` non-empty lines of `text`, joined by " / ".
std::string LastLines(const std::string& text, size_t count) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  if (lines.size() > count) lines.erase(lines.begin(), lines.end() - static_cast<long>(count));
  return fmt::format("{}", fmt::join(lines, " / "));
}

// A tool, the exit codes that still mean "this is its answer", and whether `fabric` needs it.
struct LiveTool {
  const char* name;
  std::vector<std::string> argv;
  int max_ok_exit;  // ibqueryerrors exits 1 when it found errors
  bool essential;
};

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Why a run gives no usable answer; "" when it does.
std::string WhyFailed(const ToolRun& run, const std::vector<std::string>& argv, int max_ok_exit) {
  const std::string command = fmt::format("{}", fmt::join(argv, " "));
  if (!run.started) {
    return "'" + command + "' could not be started: is infiniband-diags installed and on PATH?";
  }
  if (run.timed_out) {
    return "'" + command + "' did not finish within the tool timeout (raise --tool-timeout, or " +
           "check that the HCA port is up)";
  }
  if (run.exit_code > max_ok_exit) {
    return "'" + command + "' exited with " + std::to_string(run.exit_code) + ": " +
           LastLines(run.err, 2);
  }
  return "";
}

// Without dump_fts: `ibroute LID` for each switch found so far, whose output has the same
// format.
void TablesByIbroute(const CollectOptions& options, ToolOutputs& outputs) {
  const Fabric found = ParseFabric(outputs);
  std::string tables;
  for (const auto& node : found.nodes) {
    if (node.kind != NodeKind::kSwitch || node.lid == 0) continue;
    const std::vector<std::string> argv = {"ibroute", std::to_string(node.lid)};
    const ToolRun run = RunTool(argv, options.timeout_seconds);
    const std::string why = WhyFailed(run, argv, 0);
    if (!why.empty()) {
      outputs.failures.emplace("ibroute", why);
      continue;
    }
    tables += run.out;
  }
  if (tables.empty()) return;
  outputs.failures["dump_fts"] += "; the tables were read with ibroute, switch by switch";
  outputs.text["dump_fts"] = tables;
  outputs.origin["dump_fts"] = "ibroute";
}

}  // namespace

ToolOutputs CollectLive(const CollectOptions& options) {
  const std::vector<LiveTool> tools = {
      {"ibnetdiscover", {"ibnetdiscover"}, 0, true},
      {"iblinkinfo", {"iblinkinfo"}, 0, true},
      {"ibqueryerrors", {"ibqueryerrors"}, 1, false},
      {"dump_fts", {"dump_fts"}, 0, false},
      {"sminfo", {"sminfo"}, 0, false},
  };
  ToolOutputs outputs;
  std::vector<std::string> essential_failures;
  for (const auto& tool : tools) {
    const ToolRun run = RunTool(tool.argv, options.timeout_seconds);
    const std::string why = WhyFailed(run, tool.argv, tool.max_ok_exit);
    if (!why.empty()) {
      outputs.failures[tool.name] = why;
      if (tool.essential) essential_failures.push_back(why);
      if (run.out.empty()) continue;
    }
    outputs.text[tool.name] = run.out;
    outputs.origin[tool.name] = tool.name;
  }
  if (!outputs.text.contains("dump_fts")) TablesByIbroute(options, outputs);
  if (!options.sm_log.empty()) {
    std::ifstream probe(options.sm_log);
    if (probe) {
      outputs.text["opensm.log"] = ReadFile(options.sm_log);
      outputs.origin["opensm.log"] = options.sm_log;
    } else {
      outputs.failures["opensm.log"] = "cannot read '" + options.sm_log + "'";
    }
  }
  if (!outputs.text.contains("ibnetdiscover") && !outputs.text.contains("iblinkinfo")) {
    throw SystemError("cannot discover the fabric: " +
                      fmt::format("{}", fmt::join(essential_failures, "; ")));
  }
  return outputs;
}

std::string RunIbtracert(int src_lid, int dst_lid, double timeout_seconds, std::string* why) {
  const std::vector<std::string> argv = {"ibtracert", std::to_string(src_lid),
                                         std::to_string(dst_lid)};
  const ToolRun run = RunTool(argv, timeout_seconds);
  *why = WhyFailed(run, argv, 0);
  return why->empty() ? run.out : "";
}

ToolOutputs ReadSaved(const std::string& dir) {
  if (!fs::is_directory(dir)) {
    throw UsageError("the fabric directory '" + dir +
                     "' is not a directory: give the directory holding the saved outputs "
                     "(iblinkinfo.txt, ibnetdiscover.txt, ...)");
  }
  ToolOutputs outputs;
  for (const auto& tool : ToolNames()) {
    for (const std::string& name : {tool + ".txt", tool + ".out", tool}) {
      const fs::path path = fs::path(dir) / name;
      if (fs::is_regular_file(path)) {
        outputs.text[tool] = ReadFile(path);
        outputs.origin[tool] = path.string();
        break;
      }
    }
  }
  if (!outputs.text.contains("ibnetdiscover") && !outputs.text.contains("iblinkinfo")) {
    throw UsageError("the fabric directory '" + dir +
                     "' holds neither iblinkinfo.txt nor ibnetdiscover.txt: save them with "
                     "'iblinkinfo > " +
                     dir + "/iblinkinfo.txt' (or fabricscope fabric --save " + dir + ")");
  }
  return outputs;
}

void SaveOutputs(const ToolOutputs& outputs, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  for (const auto& [tool, text] : outputs.text) {
    const std::string name = tool.find('.') == std::string::npos ? tool + ".txt" : tool;
    std::ofstream out(fs::path(dir) / name, std::ios::binary);
    out << text;
    if (!out) {
      throw SystemError("cannot write '" + (fs::path(dir) / name).string() +
                        "': check that the directory is writable");
    }
  }
}

}  // namespace fabricscope::fabric
