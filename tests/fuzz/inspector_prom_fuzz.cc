// libFuzzer target: any bytes read as NCCL Inspector's Prometheus textfile
// (NCCL_INSPECTOR_PROM_DUMP=1), as watch reads a nccl_inspector_metrics_*.prom snapshot. A bad
// line is a diagnostic; any exception, crash, hang or out-of-bounds access (ASan, UBSan
// compiled in) is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fabricscope/inspector.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)fabricscope::LooksLikeInspectorProm(text);
  const fabricscope::InspectorRead read =
      fabricscope::ReadInspectorProm(text, "fuzz.prom", 1'700'000'000'000'000);
  for (const fabricscope::InspectorRecord& r : read.records) {
    if (r.source.empty() || !r.dump_us.has_value()) __builtin_trap();  // every record is placed
  }
  if (!read.unknown_keys.empty()) {
    (void)fabricscope::UnknownKeysDiagnostic(read.unknown_keys, "fuzz.prom").ToString();
  }
  return 0;
}
