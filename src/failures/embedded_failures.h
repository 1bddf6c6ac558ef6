// Data files compiled into the binary (see cmake/embed_files.cmake).
#pragma once

#include <string_view>
#include <vector>

namespace fabricscope::detail {

// One embedded file: its name in data/ and its whole text.
struct EmbeddedFile {
  std::string_view name;
  std::string_view text;
};

// data/failures/*.json, in the order CMakeLists.txt lists them.
const std::vector<EmbeddedFile>& FailureDocuments();

}  // namespace fabricscope::detail
