// Tests of the real `fabricscope` binary: a scratch directory per test, and the binary run
// through sh with its output captured, as a user (or a CI job) runs it.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

namespace fabricscope::test {

namespace fs = std::filesystem;

// How a process ended and what it wrote.
struct Outcome {
  int exit_code = -1;  // 128 + signal when a signal ended it
  std::string out;
  std::string err;
};

inline std::string Slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fixture that runs `fabricscope <subcommand> ...` in a directory of its own.
class BinaryTest : public ::testing::Test {
 protected:
  // `subcommand` goes before every Run's arguments ("model"); empty: none.
  explicit BinaryTest(std::string subcommand = "") : subcommand_(std::move(subcommand)) {}

  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("fabricscope-" + std::string(info->test_suite_name()) +
                                        "-" + std::to_string(getpid()) + "-" + info->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `command_line` through sh: stdout and stderr to files of the test's directory,
  // stdin from `stdin_path`.
  Outcome Shell(const std::string& command_line, const std::string& stdin_path = "/dev/null") {
    const fs::path out = dir_ / "stdout";
    const fs::path err = dir_ / "stderr";
    const std::string cmd =
        command_line + " >" + out.string() + " 2>" + err.string() + " <" + stdin_path;
    const int status = std::system(cmd.c_str());
    Outcome o;
    o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    o.out = Slurp(out);
    o.err = Slurp(err);
    return o;
  }

  // `program` (the binary, or one of its *_perf links) with `args`; `env` ("A=1 B=2")
  // prefixes the command.
  Outcome RunProgram(const std::string& program, const std::string& args,
                     const std::string& env = "", const std::string& stdin_path = "/dev/null") {
    std::string line = env.empty() ? program : env + " " + program;
    if (!subcommand_.empty()) line += " " + subcommand_;
    return Shell(line + " " + args, stdin_path);
  }

  Outcome Run(const std::string& args, const std::string& stdin_path = "/dev/null") {
    return RunProgram(FABRICSCOPE_BINARY, args, "", stdin_path);
  }

  // Writes `text` to a file of the test's directory and returns its path.
  std::string Write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
  }

  // A bad input: the given exit code and an error message that contains `needle`.
  void ExpectRefused(const std::string& args, int code, const std::string& needle) {
    const Outcome o = Run(args);
    EXPECT_EQ(o.exit_code, code) << args << "\n" << o.err;
    EXPECT_NE(o.err.find(needle), std::string::npos) << args << "\nstderr: " << o.err;
    EXPECT_NE(o.err.find("error"), std::string::npos) << o.err;
  }

  const std::string& subcommand() const { return subcommand_; }

  fs::path dir_;

 private:
  std::string subcommand_;
};

}  // namespace fabricscope::test
