// Private: a node's files as seen under one root directory (/ for this machine, a fixture
// tree in tests). Every read fails soft and says why, like google/benchmark's sysinfo.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/strings.h"

namespace fabricscope::node {

// Reads the files of a node below `dir`; paths are the node's absolute paths ("/sys/...").
class Root {
 public:
  // Throws UsageError when `dir` is not a directory.
  explicit Root(const std::filesystem::path& dir);

  const std::filesystem::path& dir() const { return dir_; }
  // True for the running system (root "/"): its /proc/self is this process.
  bool live() const { return live_; }

  // Where the node's `path` is on this machine.
  std::filesystem::path Host(std::string_view path) const;
  // `path` as the report shows it: the node's path, prefixed by the root unless it is "/".
  std::string Show(std::string_view path) const;

  bool Exists(std::string_view path) const;
  bool IsDirectory(std::string_view path) const;

  // The whole file, or nullopt with `why` set ("absent", "unreadable: <errno text>").
  std::optional<std::string> Read(std::string_view path, std::string* why = nullptr) const;
  // The first line, trimmed of surrounding white space.
  std::optional<std::string> ReadLine(std::string_view path, std::string* why = nullptr) const;
  // The first line as a number (decimal, or hex with 0x); nullopt when absent or not a number.
  std::optional<int64_t> ReadInt(std::string_view path, std::string* why = nullptr) const;

  // The names in a directory, sorted; empty when it is absent or unreadable.
  std::vector<std::string> List(std::string_view dir) const;

  // The node's own path of `path` with every symbolic link resolved the way the node would
  // resolve it: absolute targets are taken relative to the root, and ".." never climbs
  // above it. Nullopt when a component is missing or the links loop.
  std::optional<std::string> Resolve(std::string_view path) const;

  // The last component of the link target at `path` ("nvidia" for a driver link).
  std::optional<std::string> LinkName(std::string_view path) const;

 private:
  std::filesystem::path dir_;
  bool live_ = false;
};

// Trim and Split: fabricscope/strings.h.

// Numbers: decimal or 0x-hex; nullopt for anything else.
std::optional<int64_t> ParseInt(std::string_view text);

}  // namespace fabricscope::node
