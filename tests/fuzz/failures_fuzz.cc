// libFuzzer target: any bytes as a failure knowledge base document (data/failures/*.json), and
// the same bytes as a pasted log read by check's PasteReader (through the text reader's
// observer, as check reads it) and diagnosed against no platform and against an IB one. A
// refusal is a UsageError; any other exception, crash, hang or out-of-bounds access (ASan,
// UBSan compiled in) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/failures.h"
#include "fabricscope/parse.h"
#include "fabricscope/paste.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)fabricscope::FailureBase::Parse({{"fuzz.json", text}});
  } catch (const fabricscope::Error&) {
  }
  fabricscope::PasteReader reader;
  fabricscope::ParseOptions options;
  options.observer = &reader;
  options.format = fabricscope::InputFormat::kText;
  fabricscope::ParsedResults parsed = fabricscope::ParseResults(text, "fuzz.log", options);
  fabricscope::PlatformChoice none;
  fabricscope::PlatformChoice ib;
  ib.platform = fabricscope::Platform{};
  ib.platform->transport = "IB";
  ib.platform->nics = 8;
  for (const fabricscope::PasteEvidence& paste : reader.Take()) {
    (void)fabricscope::DiagnosePaste(paste, parsed.runs, none);
    (void)fabricscope::DiagnosePaste(paste, parsed.runs, ib);
  }
  return 0;
}
