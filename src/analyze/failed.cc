// What counts as failed (docs/output.md): the rule analyze, run and check's benchmark share.
#include <algorithm>
#include <vector>

#include "fabricscope/analyze.h"

namespace fabricscope {

bool Failed(const TestAnalysis& test) {
  return test.failed() || test.out_of_bounds > 0 || (test.wrong.has_value() && *test.wrong > 0);
}

bool AnyFailed(const std::vector<TestAnalysis>& tests) {
  return std::any_of(tests.begin(), tests.end(), Failed);
}

bool RunFailed(const RunResult& run) {
  const std::vector<TestSummary> summaries = Summarize(run);
  return std::any_of(summaries.begin(), summaries.end(),
                     [](const TestSummary& s) { return !s.okay; });
}

}  // namespace fabricscope
