// libFuzzer target: any bytes, read as a log (and as whatever they look like), summarized and
// rendered, and compared across nodes as NCCL's own log. The readers must neither crash, hang, nor
// read out of bounds on any input; ASan and UBSan, compiled in, turn any such slip into a failure.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "fabricscope/analyze.h"
#include "fabricscope/nccl_nodes.h"
#include "fabricscope/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const fabricscope::InputFormat format :
       {fabricscope::InputFormat::kText, fabricscope::InputFormat::kAuto}) {
    fabricscope::ParseOptions options;
    options.format = format;
    const fabricscope::ParsedResults parsed = fabricscope::ParseResults(text, "fuzz", options);
    std::vector<fabricscope::TestAnalysis> tests;
    for (const fabricscope::RunResult& run : parsed.runs) {
      for (fabricscope::TestAnalysis& test : fabricscope::Analyze(run)) tests.push_back(test);
    }
    for (const fabricscope::AnalysisFormat& render : fabricscope::AnalysisFormats()) {
      (void)render.render(tests, parsed.diagnostics);
    }
  }
  // NCCL's INFO lines compared across nodes (analyze --nccl-nodes, doctor --nccl-log).
  (void)fabricscope::RenderNcclNodes(fabricscope::CompareNcclNodes(text, "fuzz"));
  return 0;
}
