#include "cli/flags.h"

#include <fmt/format.h>

namespace fabricscope::cli {

std::string ExitCodesHelp(const DiagnosisExits& exits) {
  std::string help = fmt::format("Exit codes: 0 {}; 1 {}; 2 {}; 3 {}", exits.clear, exits.failed,
                                 exits.usage, exits.runtime);
  if (!exits.inconclusive.empty()) help += fmt::format("; 4 {}", exits.inconclusive);
  return help + " (docs/output.md).";
}

void MeasureFlags::ApplyTo(RunOptions& options) const {
  options.nthreads = nthreads;
  options.iters = iters;
  options.warmup_iters = warmup_iters;
  options.check = check;
  options.timeout_s = timeout;
}

void AddMeasureFlags(CLI::App& app, MeasureFlags& f, const MeasureHelp& help) {
  app.add_option("-t,--nthreads", f.nthreads, help.nthreads)
      ->check(InRange(1, 1024, "give 1 to 1024 threads"))
      ->capture_default_str();
  app.add_option("-n,--iters", f.iters, help.iters)
      ->check(AtLeast(1, "give at least 1 timed iteration"))
      ->capture_default_str();
  app.add_option("-w,--warmup_iters", f.warmup_iters, help.warmup_iters)
      ->check(AtLeast(0, "give 0 or more"))
      ->capture_default_str();
  app.add_option("-c,--check", f.check, help.check)
      ->check(AtLeast(0, "give 0 (no check) or more"))
      ->capture_default_str();
  app.add_option("-T,--timeout", f.timeout, help.timeout)
      ->check(AtLeast(0.0, "give 0 (the default, 300 s) or a number of seconds"))
      ->capture_default_str();
}

}  // namespace fabricscope::cli
