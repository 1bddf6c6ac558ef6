// Tests of the commands in this process: the command line parsed and run as the binary does
// (cli::RunCommandLine: CLI11, the Commands() registry, the same error handling), with the
// command's out and err streams captured as strings instead of the process's stdout and
// stderr. For what needs a real process (stdin, signals, mpirun, the environment), the
// binary itself: BinaryTest.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "common/binary_test.h"

namespace fabricscope::test {

// `fabricscope ARGS...` run here.
inline Outcome RunInProcess(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"fabricscope"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::ostringstream out;
  std::ostringstream err;
  Outcome o;
  o.exit_code = cli::RunCommandLine(argv, out, err);
  o.out = out.str();
  o.err = err.str();
  return o;
}

// The words of `line` as sh splits a line of plain words and 'single' or "double" quoted
// ones; no variables, escapes or redirections (a test that needs them runs the binary
// through BinaryTest::Shell).
inline std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (const char c : line) {
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

// A fixture whose Here() runs `fabricscope [subcommand] ARGS` in this process, next to the
// binary's Run() for what needs a process.
class InProcessTest : public BinaryTest {
 protected:
  explicit InProcessTest(std::string subcommand = "") : BinaryTest(subcommand) {}

  Outcome Here(const std::string& args) {
    std::vector<std::string> words = Words(subcommand());
    for (std::string& word : Words(args)) words.push_back(std::move(word));
    return RunInProcess(words);
  }

  // A bad input, here: the given exit code and an error message that contains `needle`.
  void ExpectRefusedHere(const std::string& args, int code, const std::string& needle) {
    const Outcome o = Here(args);
    EXPECT_EQ(o.exit_code, code) << args << "\n" << o.err;
    EXPECT_NE(o.err.find(needle), std::string::npos) << args << "\nstderr: " << o.err;
    EXPECT_NE(o.err.find("error"), std::string::npos) << o.err;
  }
};

}  // namespace fabricscope::test
