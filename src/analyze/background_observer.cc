// BackgroundObserver: a bounded queue of line batches between the reader's thread and one
// worker that replays them, in order, to the inner observer.
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "fabricscope/parse.h"

namespace fabricscope {

namespace {

// What a batch holds: the bytes of its lines back to back, and where each starts. A batch
// that starts an input carries its name and no lines.
struct Batch {
  struct Entry {
    size_t offset = 0;
    size_t size = 0;
    size_t line_no = 0;
    size_t info_at = 0;
  };
  bool begins = false;
  std::string source;
  std::string bytes;
  std::vector<Entry> lines;

  void Clear() {
    begins = false;
    source.clear();
    bytes.clear();
    lines.clear();
  }
};

constexpr size_t kBatchBytes = size_t{256} << 10;
constexpr size_t kBatchLines = 4096;
constexpr size_t kMaxQueued = 4;

}  // namespace

struct BackgroundObserver::Pipe {
  explicit Pipe(LineObserver& inner_observer) : inner(inner_observer) {
    worker = std::thread([this] { Work(); });
  }

  // The reader's side: hands the batch being filled on and takes an empty one.
  void Push() {
    std::unique_lock lock(mutex);
    space.wait(lock, [this] { return queued.size() < kMaxQueued || failed; });
    if (failed) {
      filling.Clear();
      return;
    }
    queued.push_back(std::move(filling));
    filling = TakeSpare();
    ready.notify_one();
  }

  Batch TakeSpare() {
    if (spare.empty()) return Batch();
    Batch b = std::move(spare.back());
    spare.pop_back();
    b.Clear();
    return b;
  }

  void Close() {
    if (closed) return;
    if (!filling.lines.empty()) Push();
    {
      std::lock_guard lock(mutex);
      closed = true;
    }
    ready.notify_one();
    worker.join();
  }

  // The worker: replays each batch to the inner observer until the reader closes the pipe.
  void Work() {
    for (;;) {
      Batch b;
      {
        std::unique_lock lock(mutex);
        ready.wait(lock, [this] { return !queued.empty() || closed; });
        if (queued.empty()) return;
        b = std::move(queued.front());
        queued.pop_front();
      }
      space.notify_one();
      if (!Replay(b)) return;
      std::lock_guard lock(mutex);
      if (spare.size() < kMaxQueued) spare.push_back(std::move(b));
    }
  }

  // False once the inner observer threw: the error is kept, the reader stops waiting.
  bool Replay(const Batch& b) {
    try {
      if (b.begins) inner.Begin(b.source);
      for (const Batch::Entry& e : b.lines) {
        inner.Line(std::string_view(b.bytes).substr(e.offset, e.size), e.line_no, e.info_at);
      }
      return true;
    } catch (...) {
      std::lock_guard lock(mutex);
      error = std::current_exception();
      failed = true;
      queued.clear();
      space.notify_all();
      return false;
    }
  }

  LineObserver& inner;
  Batch filling;  // the reader's own, unlocked
  bool closed = false;
  std::mutex mutex;
  std::condition_variable ready;  // a batch is queued, or the pipe closed
  std::condition_variable space;  // a batch left the queue, or the worker failed
  std::deque<Batch> queued;
  std::vector<Batch> spare;
  bool failed = false;
  std::exception_ptr error;
  std::thread worker;
};

BackgroundObserver::BackgroundObserver(LineObserver& inner)
    : pipe_(std::make_unique<Pipe>(inner)) {}

BackgroundObserver::~BackgroundObserver() { pipe_->Close(); }

void BackgroundObserver::Begin(const std::string& source) {
  if (!pipe_->filling.lines.empty()) pipe_->Push();
  pipe_->filling.begins = true;
  pipe_->filling.source = source;
  pipe_->Push();
}

void BackgroundObserver::Line(std::string_view line, size_t line_no, size_t info_at) {
  Batch& b = pipe_->filling;
  b.lines.push_back({b.bytes.size(), line.size(), line_no, info_at});
  b.bytes.append(line);
  if (b.bytes.size() >= kBatchBytes || b.lines.size() >= kBatchLines) pipe_->Push();
}

void BackgroundObserver::Finish() {
  pipe_->Close();
  std::exception_ptr error;
  {
    std::lock_guard lock(pipe_->mutex);
    error = std::exchange(pipe_->error, nullptr);
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace fabricscope
