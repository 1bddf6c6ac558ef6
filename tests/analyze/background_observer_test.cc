// BackgroundObserver hands every line on, in order, from another thread; an inner observer's
// exception comes back from Finish and never leaves the reader waiting.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fabricscope/parse.h"

namespace fabricscope {
namespace {

// Records what it sees as text, and the thread it saw it on.
class Recorder : public LineObserver {
 public:
  void Begin(const std::string& source) override { seen.push_back("begin " + source); }
  void Line(std::string_view line, size_t line_no, size_t info_at) override {
    seen.push_back(std::to_string(line_no) + ":" + std::to_string(info_at) + ":" +
                   std::string(line));
    thread = std::this_thread::get_id();
  }
  std::vector<std::string> seen;
  std::thread::id thread;
};

// Sends the same inputs to `observer`: two sources, lines long and short, past several
// batches (of 256 KiB or 4096 lines), some with an INFO mark.
void Feed(LineObserver& observer) {
  for (const std::string source : {"a.log", "b.log"}) {
    observer.Begin(source);
    for (size_t i = 1; i <= 40000; ++i) {
      const std::string line =
          source + " line " + std::to_string(i) + std::string(i % 1000 == 0 ? 70000 : i % 7, 'x');
      observer.Line(line, i, i % 3 == 0 ? 5 : std::string_view::npos);
    }
  }
  observer.Begin("empty.log");
}

TEST(BackgroundObserver, TheInnerObserverSeesWhatADirectOneSeesInOrderOnAnotherThread) {
  Recorder direct;
  Feed(direct);
  Recorder inner;
  BackgroundObserver background(inner);
  Feed(background);
  background.Finish();
  ASSERT_EQ(inner.seen.size(), direct.seen.size());
  EXPECT_EQ(inner.seen, direct.seen);
  EXPECT_NE(inner.thread, std::this_thread::get_id());
  background.Finish();  // idempotent
  EXPECT_EQ(inner.seen.size(), direct.seen.size());
}

TEST(BackgroundObserver, NothingFedIsNothingSeen) {
  Recorder inner;
  { BackgroundObserver background(inner); }
  EXPECT_TRUE(inner.seen.empty());
}

// Throws at its 20000th line.
class Thrower : public LineObserver {
 public:
  void Begin(const std::string&) override {}
  void Line(std::string_view, size_t, size_t) override {
    if (++lines == 20000) throw std::runtime_error("observer failed at line 20000");
  }
  size_t lines = 0;
};

TEST(BackgroundObserver, AnInnerExceptionComesBackFromFinishAndTheReaderNeverWaitsOnIt) {
  Thrower inner;
  BackgroundObserver background(inner);
  Feed(background);  // many batches after the failure: dropped, not waited on
  try {
    background.Finish();
    FAIL() << "Finish did not rethrow";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "observer failed at line 20000");
  }
  EXPECT_EQ(inner.lines, 20000u);
  background.Finish();  // the error is given once
}

}  // namespace
}  // namespace fabricscope
