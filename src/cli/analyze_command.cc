#include "cli/analyze_command.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/output.h"
#include "fabricscope/analyze.h"
#include "fabricscope/compare.h"
#include "fabricscope/error.h"
#include "fabricscope/fabric.h"
#include "fabricscope/history.h"
#include "fabricscope/nccl_nodes.h"
#include "fabricscope/parse.h"
#include "fabricscope/plot.h"
#include "fabricscope/sizes.h"

namespace fabricscope::cli {
namespace {

namespace fs = std::filesystem;

// Flags every reading command shares.
struct ReadFlags {
  std::string collective;
  std::string input_format = "auto";
};

void AddReadFlags(CLI::App& app, ReadFlags& flags) {
  app.add_option("--collective", flags.collective,
                 "the collective of tests whose log does not name it (no 'Collective test "
                 "starting' line or binary name); otherwise inferred from the columns");
  app.add_option("--input-format", flags.input_format,
                 "auto (look at the content), text, json or csv")
      ->capture_default_str();
}

ParseOptions ToParseOptions(const ReadFlags& flags) {
  ParseOptions options;
  options.collective = flags.collective;
  if (flags.input_format == "auto") {
    options.format = InputFormat::kAuto;
  } else if (flags.input_format == "text") {
    options.format = InputFormat::kText;
  } else if (flags.input_format == "json") {
    options.format = InputFormat::kJson;
  } else if (flags.input_format == "csv") {
    options.format = InputFormat::kCsv;
  } else {
    throw UsageError("--input-format '" + flags.input_format + "': choose auto, text, json or csv");
  }
  return options;
}

// A compare side: one file, a directory (every regular file in it, each a repeat), or a
// comma-separated list of files.
std::vector<std::string> ExpandSide(const std::string& spec) {
  std::vector<std::string> paths;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = spec.find(',', start);
    const std::string item =
        spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? spec.size() + 1 : comma + 1;
    if (item.empty()) continue;
    std::error_code error;
    if (item != "-" && fs::is_directory(item, error)) {
      std::vector<std::string> files;
      for (const auto& entry : fs::directory_iterator(item, error)) {
        const std::string name = entry.path().filename().string();
        if (!name.empty() && name[0] != '.' && entry.is_regular_file(error)) {
          files.push_back(entry.path().string());
        }
      }
      if (files.empty()) {
        throw UsageError("'" + item + "' is a directory with no result files in it");
      }
      std::sort(files.begin(), files.end());
      paths.insert(paths.end(), files.begin(), files.end());
    } else {
      paths.push_back(item);
    }
  }
  if (paths.empty()) throw UsageError("an empty input: give a file, a directory or a list a,b");
  return paths;
}

std::string LabelOf(const std::string& spec) {
  if (spec.find(',') != std::string::npos) return spec;
  std::string trimmed = spec;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  const std::string name = fs::path(trimmed).filename().string();
  return name.empty() ? spec : name;
}

// ---- analyze ----

// What analyze hands its format: the summary of every test, and what the readers said.
struct Summary {
  const std::vector<TestAnalysis>& tests;
  const std::vector<Diagnostic>& diagnostics;
};

const OutputFormats<Summary>& SummaryFormats() {
  static const OutputFormats<Summary> formats = FormatsFrom<Summary>(
      AnalysisFormats(), [](const AnalysisFormat& format, const Summary& s, std::ostream& out) {
        out << format.render(s.tests, s.diagnostics);
      });
  return formats;
}

const OutputFormats<Comparison>& CompareFormats() {
  static const OutputFormats<Comparison> formats = FormatsFrom<Comparison>(
      ComparisonFormats(), [](const ComparisonFormat& format, const Comparison& c,
                              std::ostream& out) { out << format.render(c); });
  return formats;
}

// NCCL's INFO lines of each file compared across nodes (--nccl-nodes). Files are read again:
// the comparison is asked for, not paid for by every summary.
std::string NcclNodesOf(const std::vector<std::string>& files) {
  std::string out;
  for (const std::string& path : files) {
    if (path == "-") {
      throw UsageError("--nccl-nodes reads the files again: give the log as a file, not stdin");
    }
    out += "\n" + RenderNcclNodes(CompareNcclNodesInFile(path));
  }
  return out;
}

struct AnalyzeFlags {
  std::vector<std::string> files;
  std::string format = "text";
  std::string output;
  bool nccl_nodes = false;
  ReadFlags read;
};

int ExecuteAnalyze(const AnalyzeFlags& flags, const CommandContext& ctx) {
  const OutputFormat<Summary>& format = FindFormat(SummaryFormats(), flags.format);
  if (flags.nccl_nodes && flags.format != "text" && flags.format != "md") {
    throw UsageError(
        "--nccl-nodes prints text: give --format text or md (or use fabricscope "
        "doctor --nccl-log, whose JSON carries the same comparison)");
  }
  const ParseOptions options = ToParseOptions(flags.read);
  std::vector<std::string> files = flags.files;
  if (files.empty()) {
    // Waiting for a log to be typed in is never what was meant.
    if (ctx.terminals.in) {
      throw UsageError(
          "no input: give result files, or pipe a log in (fabricscope analyze < job.log)");
    }
    files.push_back("-");
  }
  const ResultsFiles read = ReadResultsFiles(files, options, ctx.err);
  std::vector<TestAnalysis> tests;
  std::vector<Diagnostic> diagnostics;
  for (const ParsedResults& input : read.inputs) {
    for (const RunResult& run : input.runs) {
      for (TestAnalysis& test : Analyze(run)) tests.push_back(std::move(test));
      for (const std::string& error : run.errors) {
        ctx.err << run.source << ": the run reported: " << error << "\n";
      }
    }
    diagnostics.insert(diagnostics.end(), input.diagnostics.begin(), input.diagnostics.end());
  }
  std::ostringstream rendered;
  format.render(Summary{tests, diagnostics}, rendered);
  if (flags.nccl_nodes) rendered << NcclNodesOf(files);
  WriteOutput(ctx.out, flags.output, rendered.str());
  if (read.errors) return kExitUsage;
  return AnyFailed(tests) ? kExitFailed : kExitOk;
}

// ---- compare ----

struct CompareFlags {
  std::string a;
  std::string b;
  std::string label_a;
  std::string label_b;
  std::string format = "text";
  std::string output;
  std::string placement = "both";
  std::string min_size = "0";
  double threshold = 0.05;
  double alpha = 0.05;
  ReadFlags read;
};

int ExecuteCompare(const CompareFlags& flags, const CommandContext& ctx) {
  const OutputFormat<Comparison>& format = FindFormat(CompareFormats(), flags.format);
  CompareOptions options;
  if (flags.placement == "both") {
    options.placement = PlacementChoice::kBoth;
  } else if (flags.placement == "out") {
    options.placement = PlacementChoice::kOutOfPlace;
  } else if (flags.placement == "in") {
    options.placement = PlacementChoice::kInPlace;
  } else {
    throw UsageError("--placement '" + flags.placement + "': choose both, out or in");
  }
  options.threshold = flags.threshold;
  options.alpha = flags.alpha;
  options.min_size = ParseSize(flags.min_size, "--min-size");
  const ParseOptions parse = ToParseOptions(flags.read);
  bool errors = false;
  std::vector<RunResult> runs[2];
  const std::string* specs[2] = {&flags.a, &flags.b};
  for (int side = 0; side < 2; ++side) {
    ResultsFiles read = ReadResultsFiles(ExpandSide(*specs[side]), parse, ctx.err);
    errors = errors || read.errors;
    runs[side] = read.TakeRuns();
  }
  const std::string label_a = flags.label_a.empty() ? LabelOf(flags.a) : flags.label_a;
  const std::string label_b = flags.label_b.empty() ? LabelOf(flags.b) : flags.label_b;
  for (int side = 0; side < 2; ++side) {
    if (runs[side].empty()) {
      throw UsageError("no results could be read from " + *specs[side] +
                       " (see the errors above): nothing to compare");
    }
  }
  const Comparison comparison = Compare(runs[0], runs[1], label_a, label_b, options);
  Output output(ctx.out, flags.output);
  format.render(comparison, output.stream());
  output.Close();
  if (errors) return kExitUsage;
  return comparison.Regressed() ? kExitFailed : kExitOk;
}

// ---- report ----

struct ReportFlags {
  std::vector<std::string> files;
  std::string output = "fabricscope-report.html";
  std::string svg_dir;
  std::string title = "fabricscope report";
  std::string fabric;  // a directory of saved infiniband-diags outputs, as `fabric --from`
  std::string db;      // a results store: its history plotted
  std::string element;
  ReadFlags read;
};

// The store's history as plots (docs/fleet.md); "" without --db. Only --db: a report does not
// plot FABRICSCOPE_DB's history unasked.
std::string HistorySection(const ReportFlags& flags) {
  if (flags.db.empty()) return "";
  const db::StoreUrl url = db::ParseStoreUrl(flags.db);
  if (url.engine == db::StoreUrl::Engine::kSqlite && !fs::exists(url.target)) {
    throw UsageError("--db: no results store at " + url.shown +
                     ": give the file the commands recorded in");
  }
  const std::vector<db::Series> series =
      db::SeriesOf(db::OpenResultsStore(url)->Measures({.element = flags.element}));
  return db::HistoryHtmlSection(series, url.shown);
}

// The fabric's section of the report, read and judged as `fabricscope fabric --from DIR`
// does; "" without --fabric. Throws UsageError when DIR holds no tool outputs.
std::string FabricSection(const std::string& dir) {
  if (dir.empty()) return "";
  fabric::RunOptions options;
  options.from = dir;
  return fabric::FormatHtmlSection(fabric::RunFabric(options));
}

int ExecuteReport(const ReportFlags& flags, const CommandContext& ctx) {
  const ParseOptions options = ToParseOptions(flags.read);
  // Read before the results so that a bad directory is refused before anything is written.
  if (flags.files.empty() && flags.db.empty()) {
    throw UsageError(
        "report needs result files (report run.json job.log), or --db URL for a results "
        "store's history");
  }
  const std::string sections = FabricSection(flags.fabric) + HistorySection(flags);
  // With --db alone, the report is the store's history; files given are read as always.
  const ResultsFiles read = flags.files.empty() && !flags.db.empty()
                                ? ResultsFiles{}
                                : ReadResultsFiles(flags.files, options, ctx.err);
  if (read.RunCount() == 0 && flags.db.empty()) {
    throw UsageError("no results could be read from the inputs: nothing to report");
  }
  WriteOutput(ctx.out, flags.output, RenderHtmlReport(read.inputs, flags.title, sections));
  if (!flags.svg_dir.empty()) {
    std::error_code error;
    fs::create_directories(flags.svg_dir, error);
    if (error) {
      throw SystemError("cannot create '" + flags.svg_dir + "': " + error.message());
    }
    for (const TestPlots& plot : PlotResults(read.inputs)) {
      const fs::path dir(flags.svg_dir);
      WriteOutput(ctx.out, (dir / (plot.collective + "_busbw.svg")).string(), plot.busbw_svg,
                  "the plot");
      WriteOutput(ctx.out, (dir / (plot.collective + "_time.svg")).string(), plot.time_svg,
                  "the plot");
    }
  }
  if (flags.output != "-") ctx.err << "fabricscope: wrote " << flags.output << "\n";
  return read.errors ? kExitUsage : kExitOk;
}

}  // namespace

CommandAction SetupAnalyzeCommand(CLI::App& app) {
  auto flags = std::make_shared<AnalyzeFlags>();
  app.add_option("files", flags->files,
                 "nccl-tests / rccl-tests logs (any launcher's prefixes), nccl-tests -J JSON, "
                 "rccl-tests -Z json/csv, fabricscope JSON/CSV; none or '-' reads stdin");
  AddFormatOption(app, flags->format, SummaryFormats());
  app.add_option("--output", flags->output, "write to FILE instead of stdout");
  AddReadFlags(app, flags->read);
  app.add_flag("--nccl-nodes", flags->nccl_nodes,
               "also compare NCCL's INFO lines across nodes (transport per channel, HCAs, plugin "
               "and NCCL versions, TUNING, NVLS, CollNet) and name the nodes that differ from "
               "the majority, with their lines (text and md)");
  app.footer(
      "Exit status: 0 read and summarized; 1 a test failed (wrong elements, a failure line, a run "
      "cut off before its first row); 2 an input could not "
      "be read in full (its problems are on stderr as file:line; what could be read is still "
      "summarized) or bad usage.");
  return [flags](const CommandContext& ctx) { return ExecuteAnalyze(*flags, ctx); };
}

CommandAction SetupCompareCommand(CLI::App& app) {
  auto flags = std::make_shared<CompareFlags>();
  app.add_option("A", flags->a,
                 "baseline: a result file, a directory of them (each a repeat), or a,b,c")
      ->required();
  app.add_option("B", flags->b, "candidate, the same way")->required();
  AddFormatOption(app, flags->format, CompareFormats());
  app.add_option("--output", flags->output, "write to FILE instead of stdout");
  app.add_option("--placement", flags->placement,
                 "which busbw stands for a size: both (their mean), out, in")
      ->capture_default_str();
  app.add_option("--threshold", flags->threshold,
                 "a size is slower when B/A < 1 - this, faster when > 1 + this (0.05 = 5%)")
      ->capture_default_str();
  app.add_option("--alpha", flags->alpha,
                 "significance level with repeats on both sides (Welch t-test per size, "
                 "Holm-corrected over the sizes)")
      ->capture_default_str();
  app.add_option(
         "--min-size", flags->min_size,
         "judge only sizes from this one up (K/M/G suffixes): small sizes are latency noise")
      ->capture_default_str();
  app.add_option("--label-a", flags->label_a, "name of A in the table (default: its file name)");
  app.add_option("--label-b", flags->label_b, "name of B in the table");
  AddReadFlags(app, flags->read);
  app.footer(
      "Exit status: 0 no size slower; 1 a size slower than the threshold (and significant when "
      "both sides have repeats): a CI job can gate on it; 2 an input could not be read, or bad "
      "usage.");
  return [flags](const CommandContext& ctx) { return ExecuteCompare(*flags, ctx); };
}

CommandAction SetupReportCommand(CLI::App& app) {
  auto flags = std::make_shared<ReportFlags>();
  app.add_option("files", flags->files,
                 "result files, as analyze reads them ('-' = stdin); required unless --db");
  app.add_option("-o,--output", flags->output, "the HTML file to write ('-' = stdout)")
      ->capture_default_str();
  app.add_option("--svg-dir", flags->svg_dir,
                 "also write each plot as DIR/<collective>_busbw.svg and _time.svg");
  app.add_option("--title", flags->title, "the report's title")->capture_default_str();
  app.add_option("--fabric", flags->fabric,
                 "also the InfiniBand fabric: its findings and its SVG picture, from a directory "
                 "of saved infiniband-diags outputs (as `fabricscope fabric --from DIR` reads it, "
                 "e.g. one written by `fabric --save DIR`)");
  app.add_option("--db", flags->db,
                 "also the history a results store holds (docs/fleet.md): a plot of each series' "
                 "figure over its runs, with the platform's healthy minimum; alone, the report is "
                 "that history")
      ->type_name("URL");
  app.add_option("--element", flags->element,
                 "with --db: only this host (and the node sets holding it), node set or link");
  AddReadFlags(app, flags->read);
  app.footer(
      "Exit status: 0 written; 2 an input could not be read in full (the report is still "
      "written from what could be read) or bad usage.");
  return [flags](const CommandContext& ctx) { return ExecuteReport(*flags, ctx); };
}

}  // namespace fabricscope::cli
