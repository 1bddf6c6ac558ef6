// Data files compiled into the binary (see cmake/embed_files.cmake).
#pragma once

#include <vector>

#include "fabricscope/embedded_file.h"

namespace fabricscope::detail {

// data/failures/*.json, in the order CMakeLists.txt lists them.
const std::vector<EmbeddedFile>& FailureDocuments();

}  // namespace fabricscope::detail
