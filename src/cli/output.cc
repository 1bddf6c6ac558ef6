#include "cli/output.h"

#include "fabricscope/error.h"

namespace fabricscope::cli {
namespace {

SystemError CannotWrite(const std::string& what, const std::string& path) {
  return SystemError("cannot write " + what + " to '" + path +
                     "': check that the directory exists and is writable");
}

}  // namespace

Output::Output(std::ostream& fallback, const std::string& path, std::string_view what)
    : fallback_(fallback), path_(path), what_(what) {
  if (path.empty() || path == "-") return;
  file_.open(path, std::ios::binary);
  if (!file_) throw CannotWrite(what_, path_);
}

void Output::Close() {
  if (!file_.is_open()) {
    fallback_.flush();
    return;
  }
  file_.close();
  if (!file_) throw CannotWrite(what_, path_);
}

void WriteOutput(std::ostream& fallback, const std::string& path, std::string_view text,
                 std::string_view what) {
  Output output(fallback, path, what);
  output.stream() << text;
  output.Close();
}

}  // namespace fabricscope::cli
