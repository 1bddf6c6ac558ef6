#include "cli/output.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "fabricscope/error.h"

namespace fabricscope::cli {
namespace {

SystemError CannotWrite(const std::string& what, const std::string& path) {
  return SystemError("cannot write " + what + " to '" + path +
                     "': check that the directory exists and is writable");
}

std::string Partial(const std::string& path) { return path + ".partial"; }

}  // namespace

Output::Output(std::ostream& fallback, const std::string& path, std::string_view what)
    : fallback_(fallback), path_(path), what_(what) {
  if (path.empty() || path == "-") return;
  // A device or a pipe (/dev/stdout, /dev/null, a FIFO) is written as it is: renaming over
  // it would replace it.
  struct stat info {};
  direct_ = ::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode);
  file_.open(direct_ ? path : Partial(path), std::ios::binary | std::ios::trunc);
  if (!file_) throw CannotWrite(what_, path_);
}

Output::~Output() { (void)TryClose(); }

std::string Output::TryClose() noexcept {
  try {
    Close();
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

void Output::Close() {
  if (!file_.is_open() && !closed_) {
    fallback_.flush();
    return;
  }
  if (!closed_) {
    closed_ = true;
    file_.close();
    if (!file_) {
      error_ = CannotWrite(what_, path_).what();
    } else if (!direct_ && std::rename(Partial(path_).c_str(), path_.c_str()) != 0) {
      error_ = "cannot write " + what_ + " to '" + path_ + "': renaming '" + Partial(path_) +
               "' to it failed: " + std::strerror(errno);
    }
  }
  if (!error_.empty()) throw SystemError(error_);
}

void WriteOutput(std::ostream& fallback, const std::string& path, std::string_view text,
                 std::string_view what) {
  Output output(fallback, path, what);
  output.stream() << text;
  output.Close();
}

}  // namespace fabricscope::cli
