// libFuzzer target: any bytes as a `locate --save-samples` file, read back as
// `locate --simulate N --noise-from FILE` reads it (locate::Read, then RecordedNoise::Add,
// which takes its pair measurements apart into offsets, round effects and residuals). A
// refusal is a UsageError naming the file and line; any other exception, crash, hang or
// out-of-bounds access (ASan, UBSan compiled in) is a finding.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "fabricscope/error.h"
#include "locate/samples.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    const auto records = fabricscope::locate::Read(in, "samples.jsonl");
    fabricscope::RecordedNoise noise;
    noise.Add(records, "samples.jsonl");
  } catch (const fabricscope::Error&) {
  }
  return 0;
}
