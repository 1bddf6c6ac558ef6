// libFuzzer target: any bytes read as the outputs of infiniband-diags and opensm that
// `fabricscope fabric` parses (ibnetdiscover, iblinkinfo, ibqueryerrors, perfquery,
// dump_fts, sminfo, opensm.log), each parser on the same text, then the routes through the
// forwarding tables. ParseFabric never throws on bad input (bad lines are problems with file:line),
// so any exception, crash, hang or out-of-bounds access (ASan, UBSan compiled in) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fabricscope/error.h"
#include "fabricscope/fabric.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  namespace fabric = fabricscope::fabric;
  fabric::ToolOutputs outputs;
  for (const char* tool : {"ibnetdiscover", "iblinkinfo", "ibqueryerrors", "perfquery", "dump_fts",
                           "sminfo", "opensm.log"}) {
    outputs.text[tool] = text;
    outputs.origin[tool] = std::string(tool) + ".txt";
  }
  const fabric::Fabric parsed = fabric::ParseFabric(outputs);
  // The routes through the forwarding tables (dump_fts), between every host it found.
  (void)fabric::AnalyzeRouting(parsed, {});
  try {
    (void)fabric::ParseLinkRate(text.substr(0, 64));
  } catch (const fabricscope::Error&) {
  }
  return 0;
}
