// libFuzzer target: any bytes as a platform document (--platform FILE.json, the catalog's
// data/platforms/*.json). A refusal is a UsageError with the reason; any other exception
// (a JSON type error escaping, say), crash, hang or out-of-bounds access (ASan, UBSan
// compiled in) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fabricscope/error.h"
#include "fabricscope/platform.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)fabricscope::Catalog::ParsePlatform(text, "fuzz.json");
  } catch (const fabricscope::Error&) {
  }
  return 0;
}
