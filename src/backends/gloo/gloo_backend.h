// The Gloo backend's factory; the implementation stays private to src/backends/gloo.
#pragma once

#include <memory>

#include "fabricscope/backend.h"

namespace fabricscope {

// Gloo over TCP on host memory: every collective, type and op of fabricscope.
std::unique_ptr<Backend> MakeGlooBackend();

}  // namespace fabricscope
