// libFuzzer target: any bytes read as NCCL's INFO log (NCCL_DEBUG=INFO): doctor --nccl-log's
// reader, the per-node comparison of analyze --nccl-nodes, and the connection lines the nccl
// backend summarizes (one per line). UsageError is a refusal with a reason; any other
// exception, crash, hang or out-of-bounds access (ASan, UBSan compiled in) is a finding.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "backends/nccl/nccl_debug_log.h"
#include "doctor/nccl_log.h"
#include "fabricscope/error.h"
#include "fabricscope/nccl_nodes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    std::istringstream in(text);
    (void)fabricscope::doctor::ParseNcclLog(in, "fuzz.log");
  } catch (const fabricscope::Error&) {
  }
  (void)fabricscope::RenderNcclNodes(fabricscope::CompareNcclNodes(text, "fuzz.log"));
  std::vector<fabricscope::gpu::ConnectionLine> lines;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    if (auto line = fabricscope::gpu::ParseConnectionLine(
            std::string_view(text).substr(start, end - start))) {
      lines.push_back(*line);
    }
    start = end + 1;
  }
  if (!lines.empty()) {
    (void)fabricscope::gpu::SummarizeTransports(lines, lines.front().rank, lines.front().device);
  }
  return 0;
}
