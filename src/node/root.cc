#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "fabricscope/error.h"
#include "fabricscope/node_root.h"

namespace fabricscope::node {
namespace fs = std::filesystem;

namespace {

// Symbolic links followed before Resolve gives up: sysfs chains are a few links deep.
constexpr int kMaxLinks = 40;

std::vector<std::string> Components(std::string_view path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t slash = path.find('/', start);
    const size_t end = slash == std::string_view::npos ? path.size() : slash;
    if (end > start) out.emplace_back(path.substr(start, end - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += "/" + p;
  return out.empty() ? "/" : out;
}

}  // namespace

std::optional<int64_t> ParseInt(std::string_view text) {
  const std::string t(Trim(text));
  if (t.empty()) return std::nullopt;
  const bool hex = t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X');
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(t.c_str(), &end, hex ? 16 : 10);
  if (errno != 0 || end == t.c_str() || *end != '\0') return std::nullopt;
  return static_cast<int64_t>(v);
}

Root::Root(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw UsageError("--root '" + dir.string() +
                     "' is not a directory: give / for this machine or the top of a copied "
                     "node tree (with sys/ and proc/ below it)");
  }
  dir_ = fs::absolute(dir, ec).lexically_normal();
  std::string text = dir_.string();
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  dir_ = text;
  live_ = fs::equivalent(dir_, "/", ec);
}

fs::path Root::Host(std::string_view path) const {
  std::string p(path);
  while (!p.empty() && p.front() == '/') p.erase(p.begin());
  return dir_ / p;
}

std::string Root::Show(std::string_view path) const {
  if (live_) return std::string(path);
  return (dir_.string() + std::string(path));
}

bool Root::Exists(std::string_view path) const {
  std::error_code ec;
  return fs::exists(Host(path), ec);
}

bool Root::IsDirectory(std::string_view path) const {
  std::error_code ec;
  return fs::is_directory(Host(path), ec);
}

std::optional<std::string> Root::Read(std::string_view path, std::string* why) const {
  // POSIX reads rather than a stream: sysfs reports the attributes it cannot produce (a GID
  // slot without an address, a counter the driver lacks) as a failed read(), with errno.
  const fs::path file = Host(path);
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (why != nullptr) {
      *why = errno == ENOENT ? "absent" : "unreadable (" + std::string(std::strerror(errno)) + ")";
    }
    return std::nullopt;
  }
  std::string out;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      out.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      if (why != nullptr) *why = "unreadable (" + std::string(std::strerror(errno)) + ")";
      ::close(fd);
      return std::nullopt;
    }
    break;
  }
  ::close(fd);
  return out;
}

std::optional<std::string> Root::ReadLine(std::string_view path, std::string* why) const {
  auto text = Read(path, why);
  if (!text) return std::nullopt;
  const size_t newline = text->find('\n');
  return std::string(Trim(std::string_view(*text).substr(0, newline)));
}

std::optional<int64_t> Root::ReadInt(std::string_view path, std::string* why) const {
  auto line = ReadLine(path, why);
  if (!line) return std::nullopt;
  auto value = ParseInt(*line);
  if (!value && why != nullptr) *why = "not a number: '" + *line + "'";
  return value;
}

std::vector<std::string> Root::List(std::string_view dir) const {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(Host(dir), ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(it->path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::string> Root::Resolve(std::string_view path) const {
  std::vector<std::string> pending = Components(path);
  std::reverse(pending.begin(), pending.end());  // a stack: next component at the back
  std::vector<std::string> done;
  int links = 0;
  while (!pending.empty()) {
    std::string part = std::move(pending.back());
    pending.pop_back();
    if (part == ".") continue;
    if (part == "..") {
      if (!done.empty()) done.pop_back();
      continue;
    }
    done.push_back(part);
    const fs::path host = Host(Join(done));
    std::error_code ec;
    const fs::file_status status = fs::symlink_status(host, ec);
    if (ec || !fs::exists(status)) return std::nullopt;
    if (!fs::is_symlink(status)) continue;
    if (++links > kMaxLinks) return std::nullopt;
    const fs::path target = fs::read_symlink(host, ec);
    if (ec) return std::nullopt;
    done.pop_back();
    const std::string t = target.string();
    if (!t.empty() && t.front() == '/') done.clear();
    std::vector<std::string> more = Components(t);
    for (auto it = more.rbegin(); it != more.rend(); ++it) pending.push_back(*it);
  }
  return Join(done);
}

std::optional<std::string> Root::LinkName(std::string_view path) const {
  std::error_code ec;
  const fs::path target = fs::read_symlink(Host(path), ec);
  if (ec) return std::nullopt;
  return target.filename().string();
}

}  // namespace fabricscope::node
