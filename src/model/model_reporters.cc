// The registry of `fabricscope model` output formats.
#include "model/model_reporters.h"

#include <string>

#include "fabricscope/error.h"
#include "fabricscope/find_format.h"
#include "fabricscope/model_run.h"

namespace fabricscope {

const std::vector<ModelReporter>& ModelReporters() {
  static const std::vector<ModelReporter> reporters = {
      {"text", "nccl-tests-like tables with '#' header lines, for people", model::RenderModelText},
      {"json", "the same as one JSON document, for programs", model::RenderModelJson},
  };
  return reporters;
}

const ModelReporter& FindModelReporter(std::string_view name) {
  return FindFormat(ModelReporters(), name);
}

}  // namespace fabricscope
