// Private: the renderers behind the ModelReporters() registry.
#pragma once

#include <ostream>

#include "fabricscope/model_run.h"

namespace fabricscope::model {

void RenderModelText(const ModelRecord& record, std::ostream& out);
void RenderModelJson(const ModelRecord& record, std::ostream& out);

}  // namespace fabricscope::model
