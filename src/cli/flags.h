// The flags several commands share, declared once: nccl-tests' measurement flags (run, check
// after --, locate) and the CLI11 validators every command's numeric flags are checked with.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "fabricscope/options.h"

namespace fabricscope::cli {

// A CLI11 check: the value reads as a T and `ok` holds for it. Otherwise parsing stops with
// "--FLAG: VALUE is out of range: ADVICE" (CLI11 puts the flag's name first), exit 2.
template <typename T>
CLI::Validator Checked(std::function<bool(T)> ok, const std::string& advice) {
  return CLI::Validator(
      [ok = std::move(ok), advice](std::string& input) -> std::string {
        T value{};
        if (!CLI::detail::lexical_cast(input, value)) return input + " is not a number: " + advice;
        return ok(value) ? std::string() : input + " is out of range: " + advice;
      },
      "", "");
}

// The same for a closed range [lo, hi].
template <typename T>
CLI::Validator InRange(T lo, T hi, const std::string& advice) {
  return Checked<T>([lo, hi](T v) { return v >= lo && v <= hi; }, advice);
}

// The same for `lo` or more (for a double, infinity included, as a bare `v >= lo` reads it).
template <typename T>
CLI::Validator AtLeast(T lo, const std::string& advice) {
  return Checked<T>([lo](T v) { return v >= lo; }, advice);
}

// What each exit code means for one diagnosis (doctor, check, fabric, watch, locate), in its
// own words; the rule itself is one (fabricscope/finding.h, docs/output.md). An empty
// `inconclusive` says the command never exits 4.
struct DiagnosisExits {
  std::string_view clear;                                    // 0
  std::string_view failed;                                   // 1
  std::string_view inconclusive{};                           // 4
  std::string_view usage = "bad usage or unreadable input";  // 2
  std::string_view runtime = "a failure while running";      // 3
};

// A diagnosis's --help footer line: "Exit codes: 0 ...; 1 ...; 2 ...; 3 ...[; 4 ...]
// (docs/output.md)."
std::string ExitCodesHelp(const DiagnosisExits& exits);

// nccl-tests' measurement flags (-t -n -w -c -T), as run, check and locate take them.
struct MeasureFlags {
  int nthreads = 1;
  int iters = 20;
  int warmup_iters = 1;
  int check = 1;
  double timeout = 0;
  // Into a run's options; the ranges were checked when the flags were parsed.
  void ApplyTo(RunOptions& options) const;
};

// What the flags mean to a command, where it says it differently from run.
struct MeasureHelp {
  std::string nthreads = "ranks run as threads of this process";
  std::string iters = "timed iterations per size";
  std::string warmup_iters = "warm-up iterations";
  std::string check = "validation iterations; 0 = no check (#wrong N/A)";
  std::string timeout =
      "seconds a rank waits for its peers before failing (GPU backends then abort the "
      "communicator with ncclCommAbort); 0 = 300 s";
};

// Declares -t -n -w -c -T on `app`, each with its range.
void AddMeasureFlags(CLI::App& app, MeasureFlags& flags, const MeasureHelp& help = {});

}  // namespace fabricscope::cli
