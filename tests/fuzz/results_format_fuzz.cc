// libFuzzer target: any bytes read by one results reader, chosen at build time
// (FABRICSCOPE_FUZZ_READER: 1 JSON, nccl-tests -J / fabricscope -J / rccl-tests -Z json;
// 2 CSV, fabricscope / rccl-tests -Z csv; 3 NCCL Inspector JSONL), then analyzed and rendered.
// A reader may refuse input with a UsageError (the typed error bad input gets); any other
// exception, crash, hang or out-of-bounds access (ASan, UBSan compiled in) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/readers.h"
#include "fabricscope/analyze.h"
#include "fabricscope/error.h"
#include "fabricscope/inspector.h"
#include "fabricscope/parse.h"

#ifndef FABRICSCOPE_FUZZ_READER
#error "define FABRICSCOPE_FUZZ_READER: 1 JSON, 2 CSV, 3 Inspector JSONL"
#endif

namespace {

fabricscope::ParsedResults Read(std::string_view text) {
  const fabricscope::ParseOptions options;
#if FABRICSCOPE_FUZZ_READER == 1
  return fabricscope::analyze::ParseJsonResults(text, "fuzz.json", options);
#elif FABRICSCOPE_FUZZ_READER == 2
  return fabricscope::analyze::ParseCsvResults(text, "fuzz.csv", options);
#else
  (void)fabricscope::LooksLikeInspectorJsonl(text);
  return fabricscope::analyze::ParseInspectorResults(text, "fuzz.jsonl", options);
#endif
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const fabricscope::ParsedResults parsed = Read(text);
    std::vector<fabricscope::TestAnalysis> tests;
    for (const fabricscope::RunResult& run : parsed.runs) {
      for (fabricscope::TestAnalysis& test : fabricscope::Analyze(run)) tests.push_back(test);
    }
    for (const fabricscope::AnalysisFormat& render : fabricscope::AnalysisFormats()) {
      (void)render.render(tests, parsed.diagnostics);
    }
  } catch (const fabricscope::Error&) {
    // Refused with a reason: what bad input gets.
  }
  return 0;
}
