// Private: the first process's reporter as two threads use it under -T. Its rank thread
// reports the run; the watchdog's thread, when a call outlives the timeout, ends the report
// with the error just before the process ends. Events pass one at a time, and the watchdog
// ends the report with the guard's own copy of the record (the header and every row so far),
// never with the record the rank thread is still writing.
#pragma once

#include <mutex>
#include <string>

#include "fabricscope/report.h"

namespace fabricscope {

class GuardedReporter : public Reporter {
 public:
  explicit GuardedReporter(Reporter& inner) : inner_(inner) {}

  void Begin(const RunResult& result) override {
    const std::lock_guard lock(mutex_);
    copy_ = result;
    if (!ended_) inner_.Begin(result);
  }
  void BeginTest(const RunResult& result, const std::string& collective) override {
    const std::lock_guard lock(mutex_);
    if (!ended_) inner_.BeginTest(result, collective);
  }
  void Row(const RunResult& result, const ResultRow& row) override {
    const std::lock_guard lock(mutex_);
    copy_.rows.push_back(row);
    if (!ended_) inner_.Row(result, row);
  }
  void EndTest(const RunResult& result, const TestSummary& summary) override {
    const std::lock_guard lock(mutex_);
    if (!ended_) inner_.EndTest(result, summary);
  }
  void End(const RunResult& result) override {
    const std::lock_guard lock(mutex_);
    if (ended_) return;
    ended_ = true;
    inner_.End(result);
  }

  // From another thread: ends the report now, the rows so far followed by `error`; later
  // events are dropped (the process is about to end).
  void Abort(const std::string& error, const std::string& end_time) {
    const std::lock_guard lock(mutex_);
    if (ended_) return;
    ended_ = true;
    copy_.errors.push_back(error);
    copy_.end_time = end_time;
    inner_.End(copy_);
  }

 private:
  Reporter& inner_;
  std::mutex mutex_;
  RunResult copy_;
  bool ended_ = false;
};

}  // namespace fabricscope
