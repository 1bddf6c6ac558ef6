// Errors keep their type across layers: a layer that adds where a failure happened rethrows
// the same class, not an Error sliced from it.
#include "fabricscope/error.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fabricscope/backend.h"
#include "fabricscope/engine.h"
#include "fabricscope/tcp_store.h"

namespace fabricscope {
namespace {

// Throws ThrowWithMessage(error) and catches it as E alone.
template <typename E>
void ExpectKept(const E& error) {
  try {
    ThrowWithMessage(error, std::string("where: ") + error.what());
  } catch (const E& e) {
    EXPECT_EQ(std::string(e.what()), std::string("where: ") + error.what());
    EXPECT_EQ(e.code(), error.code());
    return;
  } catch (const Error& e) {
    FAIL() << "sliced to Error: " << e.what();
  }
  FAIL() << "nothing thrown";
}

TEST(ThrowWithMessage, KeepsEveryErrorClass) {
  ExpectKept(UsageError("bad -b"));
  ExpectKept(UnsupportedError("no graphs"));
  ExpectKept(SystemError("disk full"));
  ExpectKept(BackendError("connection reset"));
  ExpectKept(TimeoutError("peer silent"));
}

TEST(ThrowWithMessage, AnErrorOfAKnownCodeBecomesItsClass) {
  EXPECT_THROW(ThrowWithMessage(Error(ErrorCode::kTimeout, "x"), "y"), TimeoutError);
  EXPECT_THROW(ThrowWithMessage(Error(ErrorCode::kUsage, "x"), "y"), UsageError);
}

// The engine: a peer that is connected but never calls. Rank 0's collective times out in the
// real Gloo backend; the engine adds where the sweep was, and the error is still a
// TimeoutError (Error(kTimeout) before: catch (const TimeoutError&) missed it).
TEST(EngineErrors, APeersTimeoutComesOutAsTimeoutErrorWithWhereItHappened) {
  auto backend = MakeBackend("gloo");
  InMemoryStore store;
  std::vector<std::unique_ptr<Communicator>> comms(2);
  {
    std::vector<std::thread> connecting;
    for (int r = 0; r < 2; ++r) {
      connecting.emplace_back([&, r] {
        ConnectOptions options;
        options.rank = r;
        options.size = 2;
        options.store = &store;
        options.prefix = "e18";
        options.timeout = std::chrono::milliseconds(500);
        comms[static_cast<size_t>(r)] = backend->Connect(options);
      });
    }
    for (std::thread& t : connecting) t.join();
  }
  ASSERT_TRUE(comms[0] && comms[1]);
  RunOptions o;
  o.collectives = {Collective::kReduceScatter};  // Gloo's own ring: a silent peer times out
  o.min_bytes = o.max_bytes = 4096;
  o.warmup_iters = 1;
  o.iters = 1;
  const SweepPlan plan = PlanSweep(o, 1);
  RunResult result;
  try {
    RunBenchmark(o, plan, *comms[0], result, nullptr);  // rank 1 never joins
    FAIL() << "the sweep completed without its peer";
  } catch (const TimeoutError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("reduce_scatter"), std::string::npos) << what;
    EXPECT_NE(what.find("(warm-up): gloo reduce_scatter (rank 0 of 2"), std::string::npos) << what;
  }
  std::thread close([&] { comms[1].reset(); });
  comms[0].reset();
  close.join();
}

}  // namespace
}  // namespace fabricscope
