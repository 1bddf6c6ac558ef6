// A data file compiled into the binary (cmake/embed_files.cmake): the platform catalog, the
// failure knowledge base and NCCL's variable table carry their data wherever the binary goes.
#pragma once

#include <string_view>

namespace fabricscope::detail {

// One embedded file: its name in data/ and its whole text.
struct EmbeddedFile {
  std::string_view name;
  std::string_view text;
};

}  // namespace fabricscope::detail
