// The nccl-tests 2.19 text layout, byte for byte where nccl-tests defines it, so that the
// scripts and parsers written for nccl-tests read fabricscope's output unchanged.
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <ostream>
#include <string>

#include "fabricscope/report.h"
#include "fabricscope/result.h"
#include "report/reporters.h"

namespace fabricscope::report {
namespace {

// The layout is specified as C format strings; using them verbatim is the surest way to
// reproduce it (%g, %-20s and %*s padding included).
__attribute__((format(printf, 1, 2))) std::string Printf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int length = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string text;
  if (length > 0) {
    text.resize(static_cast<size_t>(length) + 1);
    std::vsnprintf(text.data(), text.size(), format, args);
    text.resize(static_cast<size_t>(length));
  }
  va_end(args);
  return text;
}

// Width of one half's columns "  %7s  %6s  %6s  %6g": used to blank a missing half.
constexpr size_t kHalfWidth = 2 + 7 + 2 + 6 + 2 + 6 + 2 + 6;
// Width of the -I columns "  %7s  %7s  %7s  %7s".
constexpr size_t kPerIterWidth = size_t{4} * (2 + 7);

class TextReporter final : public Reporter {
 public:
  explicit TextReporter(std::ostream& out) : out_(out) {}

  void Begin(const RunResult& result) override {
    // Replaces "# nccl-tests version ... nccl-headers=... nccl-library=..."; same shape, so
    // a parser keyed on "version" still finds one.
    const std::string library = result.backend_version.empty() ? "unknown" : result.backend_version;
    out_ << "# " << result.tool << " version " << result.version << " backend=" << result.backend
         << ' ' << result.backend << "-library=" << library << '\n';
    out_.flush();
  }

  void BeginTest(const RunResult& result, const std::string& collective) override {
    const RunConfig& config = result.config;
    std::string text;
    text += Printf("# Collective test starting: %s_perf\n", collective.c_str());
    const bool factor = config.step_factor > 1;
    text += Printf(
        "# nThread %d nGpus %d minBytes %ld maxBytes %ld step: %ld(%s) warmup iters: %d iters: %d "
        "agg iters: %d validation: %d graph: %d unalign: %d\n",
        config.nthreads, config.ngpus, static_cast<long>(config.min_bytes),
        static_cast<long>(config.max_bytes),
        factor ? static_cast<long>(config.step_factor) : static_cast<long>(config.step_bytes),
        factor ? "factor" : "bytes", config.warmup_iters, config.iters, config.agg_iters,
        config.check, config.graph, config.unalign);
    // These follow from the config, as in nccl-tests; the engine need not add them as notes.
    // (The trailing spaces are nccl-tests'.)
    if (config.blocking == 1) {
      text += "# Blocking Enabled: wait and barrier after each inner iteration (-m) \n";
    } else if (config.blocking == 2) {
      text += "# Blocking Enabled: wait after each inner iteration (-m), no barrier \n";
    } else if (config.blocking == 3) {
      text +=
          "# Blocking Enabled: wait and barrier after each outer iteration (-n); "
          "time excludes barrier \n";
    }
    if (config.per_iter_timing) {
      // nccl-tests says "CUDA event timing" here; host backends time with the host clock.
      text += config.event_timing ? "# Per-Iteration Report: CUDA event timing"
                                  : "# Per-Iteration Report: host clock timing";
      if (config.per_iter_skip) {
        text += Printf("; summary skips first %d iterations", config.per_iter_skip);
      }
      text += " \n";
    }
    if (config.parallel_init) {
      text += "# Parallel Init Enabled: threads create their communicators concurrently \n";
    }
    text += "#\n# Using devices\n";
    for (const RankInfo& rank : result.ranks) {
      // nccl-tests prints the PCI address "[%04x:%02x:%02x]"; host memory has none, and a
      // made-up address would be worse than a word. Its JSON parser reads "[%[^]]]", so any
      // bracketed text keeps the line parseable.
      const std::string bus = rank.device_bus_id.empty() ? "host" : rank.device_bus_id;
      text += Printf("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s\n", rank.rank,
                     rank.group, rank.pid, rank.hostname.c_str(), rank.device, bus.c_str(),
                     rank.device_name.c_str());
    }
    // nccl-tests prints "#\n# Reducing maxBytes to ..." right after the device lines.
    if (!result.notes.empty()) {
      text += "#\n";
      for (const std::string& note : result.notes) text += "# " + note + "\n";
    }
    text += TableHeader(config);
    out_ << text;
    out_.flush();
  }

  void Row(const RunResult& result, const ResultRow& row) override {
    const bool per_iter = result.config.per_iter_timing != 0;
    std::string text =
        Printf("%12li  %12li  %8s  %6s  %6i", static_cast<long>(row.size),
               static_cast<long>(row.count), row.type.c_str(), row.redop.c_str(), row.root);
    for (const auto* half : {&row.out_of_place, &row.in_place}) {
      if (!half->has_value()) {
        // A half that was not run (rccl-tests -O) is left blank, as nccl-tests does for an
        // out-of-place half it skips, so the other half stays under its own header.
        text.append(kHalfWidth + (per_iter ? kPerIterWidth : 0), ' ');
        continue;
      }
      text += HalfColumns(**half, per_iter);
    }
    if (!row.timestamp.empty()) text += Printf("%21s", row.timestamp.c_str());
    text += '\n';
    out_ << text;
    out_.flush();  // Someone is usually watching a long sweep.
  }

  void EndTest(const RunResult& result, const TestSummary& summary) override {
    std::string text;
    text +=
        Printf("# %-20s : %d %s\n", "Out of bounds values", static_cast<int>(summary.out_of_bounds),
               OutOfBoundsOkay(summary) ? "OK" : "FAILED");
    const char* verdict = "";
    if (result.config.min_bw > 0) verdict = BandwidthOkay(summary, result.config) ? "OK" : "FAILED";
    text += Printf("# %-20s : %g %s\n", "Avg bus bandwidth", summary.avg_busbw, verdict);
    text += "#\n";
    text += Printf("# Collective test concluded: %s_perf\n", summary.collective.c_str());
    // nccl-tests closes the block with one more "#" (its finalizeFooter).
    text += "#\n";
    out_ << text;
    out_.flush();
  }

  void End(const RunResult& result) override {
    // nccl-tests ends with its error line, or with an empty line when there is none.
    if (result.errors.empty()) {
      out_ << '\n';
    } else {
      for (const std::string& error : result.errors) out_ << "# error: " << error << '\n';
    }
    out_.flush();
  }

 private:
  static std::string TableHeader(const RunConfig& config) {
    const bool stamps = config.report_timestamps != 0;
    // The final "%*s" is the optional timestamp column; at width 0 it leaves a trailing space.
    const int ts_width = stamps ? 19 : 0;
    const char* ts_label = stamps ? "timestamp" : "";
    const char* ts_units = stamps ? "%Y-%m-%d %H:%M:%S" : "";
    // -C: nccl-tests heads the time columns "cputime" (src/util.cu:743 at 2.19.6).
    const char* time = config.report_cputime != 0 ? "cputime" : "time";
    // The title over the two halves; the run of spaces is nccl-tests' own.
    std::string text = "#\n" + Printf("# %10s  %12s  %8s  %6s  %6s", "", "", "", "", "");
    if (config.per_iter_timing) {
      text += std::string(14, ' ') + "out-of-place (+ per-iteration)" + std::string(32, ' ') +
              "in-place (+ per-iteration)\n";
      text += Printf(
          "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  "
          "%6s  %7s  %7s  %7s  %7s %*s\n",
          "size", "count", "type", "redop", "root", time, "algbw", "busbw", "#wrong", "i_min",
          "i_max", "i_p99", "i_cv%", time, "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99",
          "i_cv%", ts_width, ts_label);
      text += Printf(
          "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  "
          "%6s  %7s  %7s  %7s  %7s %*s\n",
          "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)",
          "(%)", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)", ts_width, ts_units);
    } else {
      text += std::string(11, ' ') + "out-of-place" + std::string(23, ' ') + "in-place" +
              std::string(10, ' ') + "\n";
      text += Printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n",
                     "size", "count", "type", "redop", "root", time, "algbw", "busbw", "#wrong",
                     time, "algbw", "busbw", "#wrong", ts_width, ts_label);
      text += Printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n",
                     "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)",
                     "(GB/s)", "(GB/s)", "", ts_width, ts_units);
    }
    return text;
  }

  static std::string HalfColumns(const PlacementResult& half, bool per_iter) {
    const std::string time = FormatNumber(half.time_us, 7);
    const std::string algbw = FormatNumber(half.algbw, 6);
    const std::string busbw = FormatNumber(half.busbw, 6);
    std::string text;
    if (half.wrong.has_value()) {
      text = Printf("  %7s  %6s  %6s  %6g", time.c_str(), algbw.c_str(), busbw.c_str(),
                    static_cast<double>(*half.wrong));
    } else {
      text = Printf("  %7s  %6s  %6s    N/A", time.c_str(), algbw.c_str(), busbw.c_str());
    }
    if (per_iter) {
      if (half.iterations.has_value()) {
        // nccl-tests formats all four at width 7, i_cv% included.
        const IterationStats& stats = *half.iterations;
        text += Printf("  %7s  %7s  %7s  %7s", FormatNumber(stats.min_us, 7).c_str(),
                       FormatNumber(stats.max_us, 7).c_str(), FormatNumber(stats.p99_us, 7).c_str(),
                       FormatNumber(stats.cv_percent, 7).c_str());
      } else {
        text += Printf("  %7s  %7s  %7s  %7s", "N/A", "N/A", "N/A", "N/A");
      }
    }
    return text;
  }

  std::ostream& out_;
};

}  // namespace

std::unique_ptr<Reporter> MakeTextReporter(std::ostream& out) {
  return std::make_unique<TextReporter>(out);
}

}  // namespace fabricscope::report
