// The heartbeat over a real store and real processes: a process stopped with SIGSTOP keeps
// its sockets open and says nothing, as a host that lost power or was black-holed does.
#include "launch/liveness.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/store.h"
#include "fabricscope/tcp_store.h"

namespace fabricscope {
namespace {

using std::chrono::milliseconds;

// What a Liveness reported, waited for with a hang bound.
class Reported {
 public:
  void Set(const std::string& message) {
    const std::lock_guard lock(mutex_);
    message_ = message;
    changed_.notify_all();
  }
  std::string Await(std::chrono::seconds bound) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, bound, [this] { return !message_.empty(); });
    return message_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::string message_;
};

LivenessOptions Options(int process, const std::string& host, const std::string& phase) {
  return LivenessOptions{
      .process = process,
      .processes = 2,
      .host = host,
      .store_address = "127.0.0.1",
      .interval = milliseconds(100),
      .silence = milliseconds(1000),
      .phase = [phase] { return phase; },
      .ranks = [](int p) { return "rank " + std::to_string(p); },
      .since_answered = {},  // the "host still answers" case: MultiProcessTest's SIGSTOP
  };
}

TEST(LivenessTest, ProcessZeroNamesAStoppedProcessItsHostAndPhase) {
  int port_pipe[2];
  ASSERT_EQ(::pipe(port_pipe), 0);
  // Forked before this process starts any thread: the child beats as process 1 of 2.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    uint16_t port = 0;
    if (::read(port_pipe[0], &port, sizeof port) != sizeof port) ::_exit(2);
    {
      Liveness beat(Options(1, "hostB", "sweep (all_reduce of 256 float elements, 1024 bytes)"),
                    std::make_unique<TcpStoreClient>("127.0.0.1", port, milliseconds(5000)),
                    nullptr);
      std::this_thread::sleep_for(std::chrono::seconds(60));  // stopped or killed before this
    }
    ::_exit(0);
  }
  TcpStoreServer server(0);
  const uint16_t port = server.port();
  ASSERT_EQ(::write(port_pipe[1], &port, sizeof port), static_cast<ssize_t>(sizeof port));
  Reported reported;
  {
    Liveness watch(Options(0, "hostA", "sweep"),
                   std::make_unique<TcpStoreClient>("127.0.0.1", port, milliseconds(5000)),
                   [&](const std::string& m) { reported.Set(m); });
    TcpStoreClient look("127.0.0.1", port, milliseconds(5000));
    look.Get("live/1", milliseconds(10000));  // the child beats
    std::this_thread::sleep_for(milliseconds(300));
    EXPECT_TRUE(reported.Await(std::chrono::seconds(0)).empty()) << "a beating process is alive";
    ::kill(child, SIGSTOP);
    const std::string message = reported.Await(std::chrono::seconds(20));
    EXPECT_NE(message.find("process 1 (rank 1 on hostB) went silent during sweep (all_reduce of "
                           "256 float elements, 1024 bytes)"),
              std::string::npos)
        << message;
    // Every other process reads the abort on its next beat.
    const auto abort = look.Get("live/abort", milliseconds(1000));
    EXPECT_EQ(std::string(abort.begin(), abort.end()), message);
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::close(port_pipe[0]);
  ::close(port_pipe[1]);
}

// A process whose own rank failed asks for the abort once before it ends: a survivor that read
// it and left closed its connections, so the rank's error names that survivor; the abort
// names the process that went silent. Asked before process 0 said anything: nothing, and the
// job goes on; asked after: the message, acknowledged so process 0 need not wait for a beat;
// asked with the store gone: nothing, and no throw (the rank's own error stands).
TEST(LivenessTest, APublishedAbortIsReadWhenAskedAndAcknowledged) {
  auto server = std::make_unique<TcpStoreServer>(0);
  const uint16_t port = server->port();
  LivenessOptions options = Options(1, "hostB", "sweep");
  options.interval = std::chrono::minutes(10);  // no beat of its own reads the abort first
  options.silence = std::chrono::minutes(10);
  Liveness beat(options, std::make_unique<TcpStoreClient>("127.0.0.1", port, milliseconds(5000)),
                nullptr);
  EXPECT_EQ(beat.PublishedAbort(), "");
  TcpStoreClient zero("127.0.0.1", port, milliseconds(5000));
  const std::string silent =
      "process 3 (rank 3 on fsf274) went silent during sweep (all_reduce of 512 float elements, "
      "2048 bytes): no heartbeat for 10 s";
  zero.Set("live/abort", std::vector<char>(silent.begin(), silent.end()));
  EXPECT_EQ(beat.PublishedAbort(), silent);
  EXPECT_EQ(zero.Get("live/ack/1", milliseconds(1000)), std::vector<char>{'K'});
  server.reset();
  EXPECT_EQ(beat.PublishedAbort(), "");
}

// Process 0 ends as soon as every ack is in the store, so a process's ack may land while the
// store's reply to it is lost with process 0. That process has read the abort already: it
// reports the abort, not "process 0 ended or closed the store" (seen on the fault bed).
class StoreGoneAfterTheAck : public Store {
 public:
  explicit StoreGoneAfterTheAck(std::string abort) : abort_(std::move(abort)) {}
  void Set(const std::string& key, const std::vector<char>& value) override {
    memory_.Set(key, value);
    if (key.rfind("live/ack/", 0) == 0)
      throw SystemError("rendezvous: lost the store (receive of '" + key + "')");
  }
  std::vector<char> Get(const std::string& key, std::chrono::milliseconds timeout) override {
    if (key == "live/abort") return {abort_.begin(), abort_.end()};
    return memory_.Get(key, timeout);
  }

 private:
  std::string abort_;
  InMemoryStore memory_;
};

TEST(LivenessTest, AnAbortReadIsReportedWhenTheStoreEndsWithTheAck) {
  const std::string silent =
      "process 3 (rank 3 on fsf274) went silent during rendezvous (joining the gloo communicator "
      "of 4 ranks): no heartbeat for 10 s";
  Reported reported;
  Liveness beat(Options(2, "fsf273", "rendezvous"), std::make_unique<StoreGoneAfterTheAck>(silent),
                [&](const std::string& m) { reported.Set(m); });
  EXPECT_EQ(reported.Await(std::chrono::seconds(20)), silent);
}

TEST(LivenessTest, AProcessThatSaysItIsDoneIsNotSilent) {
  TcpStoreServer server(0);
  Reported reported;
  Liveness watch(Options(0, "hostA", "sweep"),
                 std::make_unique<TcpStoreClient>("127.0.0.1", server.port(), milliseconds(5000)),
                 [&](const std::string& m) { reported.Set(m); });
  {
    Liveness done(Options(1, "hostB", "sweep"),
                  std::make_unique<TcpStoreClient>("127.0.0.1", server.port(), milliseconds(5000)),
                  nullptr);
    std::this_thread::sleep_for(milliseconds(300));
  }
  EXPECT_TRUE(reported.Await(std::chrono::seconds(2)).empty());  // past the 1 s silence
}

TEST(LivenessTest, LosingTheStoreNamesProcessZeroAndTheStore) {
  int port_pipe[2];
  ASSERT_EQ(::pipe(port_pipe), 0);
  const pid_t child = ::fork();  // the store's process, stopped mid-job
  ASSERT_GE(child, 0);
  if (child == 0) {
    TcpStoreServer server(0);
    const uint16_t port = server.port();
    if (::write(port_pipe[1], &port, sizeof port) != sizeof port) ::_exit(2);
    std::this_thread::sleep_for(std::chrono::seconds(60));
    ::_exit(0);
  }
  uint16_t port = 0;
  ASSERT_EQ(::read(port_pipe[0], &port, sizeof port), static_cast<ssize_t>(sizeof port));
  Reported reported;
  {
    LivenessOptions options = Options(1, "hostB", "rendezvous");
    options.store_address = "127.0.0.1:" + std::to_string(port);
    Liveness beat(
        options,
        std::make_unique<TcpStoreClient>("127.0.0.1", port, milliseconds(5000), milliseconds(1000)),
        [&](const std::string& m) { reported.Set(m); });
    std::this_thread::sleep_for(milliseconds(300));
    ::kill(child, SIGSTOP);
    const std::string message = reported.Await(std::chrono::seconds(20));
    EXPECT_NE(message.find("process 0 (rank 0, the store at 127.0.0.1:" + std::to_string(port) +
                           ") went silent while process 1 on hostB was in rendezvous"),
              std::string::npos)
        << message;
    ::kill(child, SIGKILL);
  }
  ::waitpid(child, nullptr, 0);
  ::close(port_pipe[0]);
  ::close(port_pipe[1]);
}

}  // namespace
}  // namespace fabricscope
