// Private: the renderers behind the CheckFormats() registry.
#pragma once

#include <string>

#include "fabricscope/check.h"

namespace fabricscope::check {

std::string RenderCheckText(const CheckReport& report);
std::string RenderCheckJson(const CheckReport& report);

}  // namespace fabricscope::check
