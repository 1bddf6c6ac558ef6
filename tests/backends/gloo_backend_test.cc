// The Gloo backend against real Gloo: ranks are threads meeting over an InMemoryStore, and
// every result is checked against an expectation computed here, independently of dtype.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "collective_expectations.h"
#include "fabricscope/backend.h"
#include "fabricscope/collective.h"
#include "fabricscope/dtype.h"
#include "fabricscope/error.h"
#include "fabricscope/options.h"
#include "fabricscope/tcp_store.h"

namespace fabricscope {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using expect::Case;
using expect::CheckRank;
using expect::Describe;
using expect::IsReduction;
using expect::IsRooted;
using expect::kCollectives;
using expect::MakeBuffers;
using expect::RankBuffers;

// ---------------------------------------------------------------------------------------
// Ranks as threads.

// Runs fn(rank) on n threads and rethrows the first failure once all have finished.
void OnRanks(int n, const std::function<void(int)>& fn) {
  std::mutex mutex;
  std::exception_ptr first;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!first) first = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

// n connected ranks of one communicator.
struct World {
  World() = default;
  World(const World&) = delete;
  World& operator=(const World&) = delete;
  // In parallel: Gloo closes each pair on a tick of its event loop (up to 10 ms), which one
  // rank after another would add up to half a second for 8 ranks.
  ~World() {
    OnRanks(static_cast<int>(comms.size()),
            [this](int r) { comms[static_cast<size_t>(r)].reset(); });
  }

  InMemoryStore store;
  std::vector<std::unique_ptr<Communicator>> comms;
};

std::unique_ptr<World> Connect(Backend& backend, int n, milliseconds timeout) {
  auto world = std::make_unique<World>();
  world->comms.resize(static_cast<size_t>(n));
  OnRanks(n, [&](int r) {
    ConnectOptions options;
    options.rank = r;
    options.size = n;
    options.store = &world->store;
    options.prefix = "test" + std::to_string(n);
    options.timeout = timeout;
    world->comms[static_cast<size_t>(r)] = backend.Connect(options);
  });
  return world;
}

// ---------------------------------------------------------------------------------------
// Cases (their inputs and expectations are in collective_expectations.h).

constexpr int kRankCounts[] = {1, 2, 3, 4, 8};

// Every type x op x placement of one collective and rank count.
std::vector<Case> CasesFor(Collective coll, int n) {
  const DataType types[] = {DataType::kInt8,  DataType::kInt32,    DataType::kFloat,
                            DataType::kHalf,  DataType::kBfloat16, DataType::kDouble,
                            DataType::kUint64};
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax, ReduceOp::kMin,
                          ReduceOp::kAvg};
  // Each call costs a few Gloo round trips (milliseconds with 8 ranks on 2 cores), so every
  // case makes one call, and the count and root rotate across the cases: 1 (most ranks get
  // empty segments), 13 (uneven chunks), 1000 (several segments per chunk), each with root 0
  // and with the last rank.
  constexpr size_t kCounts[] = {13, 1, 1000};
  std::vector<Case> cases;
  size_t k = 0;
  for (DataType type : types) {
    for (ReduceOp op : ops) {
      if (!IsReduction(coll) && op != ReduceOp::kSum) continue;  // the op is not used
      for (bool in_place : {false, true}) {
        const int root = IsRooted(coll) && (k / 3) % 2 == 0 ? n - 1 : 0;
        cases.push_back({coll, type, op, in_place, n, kCounts[k % 3], root});
        ++k;
      }
    }
  }
  return cases;
}

// Runs one case on every rank of `world`; returns a description of the first wrong elements.
std::string RunAndCheck(World& world, const Case& c) {
  std::vector<RankBuffers> buffers;
  for (int r = 0; r < c.nranks; ++r) buffers.push_back(MakeBuffers(c, c.count, r));
  OnRanks(c.nranks, [&](int r) {
    const RankBuffers& b = buffers[static_cast<size_t>(r)];
    CollectiveCall call;
    call.collective = c.collective;
    call.send = b.send;
    call.recv = b.recv;
    call.count = c.count;
    call.type = c.type;
    call.op = c.op;
    call.root = c.root;
    world.comms[static_cast<size_t>(r)]->Run(call);
  });
  std::ostringstream errors;
  int wrong = 0;
  for (int r = 0; r < c.nranks; ++r) {
    wrong += CheckRank(c, r, buffers[static_cast<size_t>(r)].recv, errors, std::max(0, 5 - wrong));
  }
  if (wrong > 0) errors << wrong << " wrong elements";
  return errors.str();
}

// ---------------------------------------------------------------------------------------
// Every collective x rank count is one test (ctest runs each test in its own process, and a
// connection costs more than a call); inside, every type x op x placement.

struct Suite {
  Collective collective;
  int nranks;
};

void PrintTo(const Suite& suite, std::ostream* os) {
  *os << SpecOf(suite.collective).name << " on " << suite.nranks << " ranks";
}

class GlooCollectiveTest : public ::testing::TestWithParam<Suite> {};

TEST_P(GlooCollectiveTest, EveryTypeOpAndPlacement) {
  const Suite& suite = GetParam();
  auto backend = MakeBackend("gloo");
  // Long enough never to fire on a slow machine, short enough that a bug fails the run.
  auto world = Connect(*backend, suite.nranks, milliseconds(20000));
  for (const Case& c : CasesFor(suite.collective, suite.nranks)) {
    try {
      EXPECT_EQ(RunAndCheck(*world, c), "") << Describe(c);
    } catch (const std::exception& e) {
      // A failed call leaves the communicator unusable: report it and stop here.
      FAIL() << Describe(c) << ": " << e.what();
    }
  }
}

std::vector<Suite> AllSuites() {
  std::vector<Suite> suites;
  for (Collective coll : kCollectives) {
    for (int n : kRankCounts) suites.push_back({coll, n});
  }
  return suites;
}

std::string SuiteName(const ::testing::TestParamInfo<Suite>& info) {
  return std::string(SpecOf(info.param.collective).name) + "_" + std::to_string(info.param.nranks) +
         "ranks";
}

INSTANTIATE_TEST_SUITE_P(Gloo, GlooCollectiveTest, ::testing::ValuesIn(AllSuites()), SuiteName);

// ---------------------------------------------------------------------------------------
// Beyond one Gloo segment (1 MiB) per chunk, and the remaining paths of Run.

TEST(GlooBackendTest, LargeReductionsSpanSeveralSegments) {
  auto backend = MakeBackend("gloo");
  auto world = Connect(*backend, 3, milliseconds(20000));
  const size_t count = 300001;  // 3.6 MB of floats in all: several segments, uneven chunks
  for (Collective coll :
       {Collective::kAllReduce, Collective::kReduce, Collective::kReduceScatter}) {
    for (bool in_place : {false, true}) {
      const size_t per_call = coll == Collective::kReduceScatter ? count : 3 * count;
      const Case c{coll, DataType::kFloat, ReduceOp::kSum, in_place, 3, per_call, 1};
      EXPECT_EQ(RunAndCheck(*world, c), "") << Describe(c);
    }
  }
}

TEST(GlooBackendTest, ListensOnANamedInterface) {
  auto backend = MakeBackend("gloo");
  InMemoryStore store;
  std::vector<int64_t> results(2);
  OnRanks(2, [&](int r) {
    ConnectOptions options;
    options.rank = r;
    options.size = 2;
    options.store = &store;
    options.network_interface = "lo";
    options.timeout = milliseconds(5000);
    auto comm = backend->Connect(options);
    const int64_t mine = r + 1;
    CollectiveCall call;
    call.send = &mine;
    call.recv = &results[static_cast<size_t>(r)];
    call.count = 1;
    call.type = DataType::kInt64;
    comm->Run(call);
  });
  EXPECT_EQ(results, (std::vector<int64_t>{3, 3}));
}

TEST(GlooBackendTest, CountZeroIsANoOp) {
  auto backend = MakeBackend("gloo");
  auto world = Connect(*backend, 2, milliseconds(5000));
  float send = 1;
  float recv = 7;
  OnRanks(2, [&](int r) {
    float local_recv = 7;
    CollectiveCall call;
    call.send = &send;
    call.recv = &local_recv;
    call.count = 0;
    world->comms[static_cast<size_t>(r)]->Run(call);
    if (r == 0) recv = local_recv;
  });
  EXPECT_EQ(recv, 7);
}

TEST(GlooBackendTest, BarrierAndManyCallsInARow) {
  auto backend = MakeBackend("gloo");
  auto world = Connect(*backend, 4, milliseconds(5000));
  std::vector<int32_t> results(4);
  OnRanks(4, [&](int r) {
    Communicator& comm = *world->comms[static_cast<size_t>(r)];
    EXPECT_EQ(comm.rank(), r);
    EXPECT_EQ(comm.size(), 4);
    int32_t value = 0;
    for (int i = 0; i < 10; ++i) {
      comm.Barrier();
      int32_t one = 1;
      CollectiveCall call;
      call.send = &one;
      call.recv = &value;
      call.count = 1;
      call.type = DataType::kInt32;
      comm.Run(call);
    }
    results[static_cast<size_t>(r)] = value;
  });
  for (int32_t v : results) EXPECT_EQ(v, 4);
}

// Point-to-point on the job's context (locate's pairs): disjoint pairs exchange at the
// same time, twice with other partners, in place the second time; nobody else takes part.
TEST(GlooBackendTest, DisjointPairsExchangeOnOneCommunicator) {
  auto backend = MakeBackend("gloo");
  ASSERT_TRUE(backend->capabilities().point_to_point);
  auto world = Connect(*backend, 4, milliseconds(5000));
  std::vector<std::vector<int32_t>> got(4);
  OnRanks(4, [&](int r) {
    Communicator& comm = *world->comms[static_cast<size_t>(r)];
    for (const int partner_bit : {1, 2}) {
      std::vector<int32_t> send(1000, 100 * r);
      std::vector<int32_t> recv(1000, -1);
      PeerExchange x;
      x.send = send.data();
      x.recv = partner_bit == 1 ? recv.data() : send.data();  // in place the second time
      x.count = send.size();
      x.type = DataType::kInt32;
      x.peer = r ^ partner_bit;
      comm.Exchange(x);
      const auto& out = partner_bit == 1 ? recv : send;
      got[static_cast<size_t>(r)].push_back(out.front());
      EXPECT_EQ(out.front(), out.back());
    }
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(got[static_cast<size_t>(r)], (std::vector<int32_t>{100 * (r ^ 1), 100 * (r ^ 2)}));
  }
}

TEST(GlooBackendErrorTest, ExchangeWithItselfOrNobodyIsAUsageError) {
  auto backend = MakeBackend("gloo");
  auto world = Connect(*backend, 2, milliseconds(5000));
  int32_t a = 0, b = 0;
  PeerExchange x;
  x.send = &a;
  x.recv = &b;
  x.count = 1;
  x.type = DataType::kInt32;
  for (const int peer : {0, 2, -1}) {
    x.peer = peer;
    try {
      world->comms[0]->Exchange(x);
      FAIL() << "peer " << peer << " accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("is not another rank of 2"), std::string::npos)
          << e.what();
    }
  }
}

TEST(GlooBackendTest, DescribesItself) {
  auto backend = MakeBackend("gloo");
  EXPECT_EQ(backend->name(), "gloo");
  EXPECT_EQ(backend->version(), "0.5.0");
  EXPECT_EQ(backend->capabilities().collectives.size(), 9u);
  EXPECT_EQ(backend->capabilities().types.size(), 10u);
  EXPECT_EQ(backend->capabilities().ops.size(), 5u);
  ASSERT_EQ(Backends().size(), 4u);  // gloo, mpi, nccl, rccl
  EXPECT_EQ(Backends()[0].name, "gloo");
  EXPECT_EQ(Backends()[0].description, "Gloo over TCP, host memory");
}

// ---------------------------------------------------------------------------------------
// Errors.

template <typename E, typename F>
std::string MessageOf(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong exception: ") + e.what();
  }
  return "no exception";
}

TEST(GlooBackendErrorTest, UnknownBackendListsTheAvailableOnes) {
  EXPECT_EQ(MessageOf<UsageError>([] { MakeBackend("nccl2"); }),
            "unknown backend 'nccl2': available backends are gloo, mpi, nccl, rccl");
}

// A backend that can do little, to reach every branch of CheckSupported.
class LimitedBackend : public Backend {
 public:
  std::string_view name() const override { return "tiny"; }
  std::string version() const override { return "0"; }
  const BackendCapabilities& capabilities() const override { return caps_; }
  std::unique_ptr<Communicator> Connect(const ConnectOptions&) override { return nullptr; }

 private:
  BackendCapabilities caps_{{Collective::kAllReduce, Collective::kAllGather},
                            {DataType::kFloat, DataType::kInt32},
                            {ReduceOp::kSum, ReduceOp::kMax}};
};

TEST(GlooBackendErrorTest, CheckSupportedNamesWhatIsMissing) {
  LimitedBackend tiny;
  RunOptions options;
  options.collectives = {Collective::kAllReduce};
  options.types = {DataType::kFloat};
  options.ops = {ReduceOp::kSum, ReduceOp::kAvg};
  EXPECT_EQ(MessageOf<UnsupportedError>([&] { CheckSupported(tiny, options); }),
            "backend tiny does not support op 'avg'; it supports sum, max");

  options.ops = {ReduceOp::kMax};
  options.types = {DataType::kHalf};
  EXPECT_EQ(MessageOf<UnsupportedError>([&] { CheckSupported(tiny, options); }),
            "backend tiny does not support type 'half'; it supports float, int32");

  options.types = {DataType::kInt32};
  options.collectives = {Collective::kAllReduce, Collective::kGather};
  EXPECT_EQ(MessageOf<UnsupportedError>([&] { CheckSupported(tiny, options); }),
            "backend tiny does not support collective 'gather'; it supports all_reduce, "
            "all_gather");

  // -o does not apply to collectives that do not reduce, so it cannot be unsupported there.
  options.collectives = {Collective::kAllGather};
  options.ops = {ReduceOp::kAvg};
  EXPECT_NO_THROW(CheckSupported(tiny, options));
}

TEST(GlooBackendErrorTest, GlooSupportsEverythingButNcclsOwnTypesAndOps) {
  auto gloo = MakeBackend("gloo");
  RunOptions options;
  options.collectives = {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                         Collective::kBroadcast, Collective::kReduce,    Collective::kAlltoAll,
                         Collective::kSendRecv,  Collective::kGather,    Collective::kScatter};
  options.types = AllCapabilities().types;
  options.ops = AllCapabilities().ops;
  EXPECT_NO_THROW(CheckSupported(*gloo, options));
  // "-d all" and "-o all" are what gloo has: FP8 and mulsum are NCCL's alone.
  EXPECT_EQ(SupportedOf(*gloo, AllDataTypes()), AllCapabilities().types);
  EXPECT_EQ(SupportedOf(*gloo, AllReduceOps()).size(), 5u);
  options.types = {DataType::kFloat8e4m3};
  EXPECT_THROW(CheckSupported(*gloo, options), UnsupportedError);
  options.types = {DataType::kFloat};
  options.ops = {ReduceOp::kMulSum};
  EXPECT_THROW(CheckSupported(*gloo, options), UnsupportedError);
}

TEST(InMemoryStoreTest, GetWaitsForALaterSet) {
  InMemoryStore store;
  std::thread setter([&] {
    std::this_thread::sleep_for(milliseconds(50));
    store.Set("other", {'x'});
    store.Set("key", {'a', 'b'});
  });
  EXPECT_EQ(store.Get("key", milliseconds(5000)), (std::vector<char>{'a', 'b'}));
  setter.join();
  EXPECT_EQ(store.Get("other", milliseconds(0)), std::vector<char>{'x'});
}

TEST(InMemoryStoreTest, GetTimesOutNamingTheKey) {
  InMemoryStore store;
  const auto start = Clock::now();
  EXPECT_EQ(MessageOf<TimeoutError>([&] { store.Get("rank_3", milliseconds(100)); }),
            "rendezvous: key 'rank_3' did not appear within 100 ms; a rank did not start or "
            "died");
  EXPECT_GE(Clock::now() - start, milliseconds(100));
}

TEST(GlooBackendErrorTest, PeerThatNeverConnectsTimesOut) {
  auto backend = MakeBackend("gloo");
  InMemoryStore store;
  ConnectOptions options;
  options.rank = 0;
  options.size = 2;
  options.store = &store;
  options.timeout = milliseconds(500);
  const auto start = Clock::now();
  try {
    backend->Connect(options);
    FAIL() << "Connect returned without its peer";
  } catch (const Error& e) {
    // Gloo waits for the peer's address in our store, whose timeout is a TimeoutError that
    // keeps its type through the backend.
    EXPECT_EQ(e.code(), ErrorCode::kTimeout) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("gloo connect (rank 0 of 2): rendezvous: key ", 0), 0u)
        << e.what();
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

// A peer that is gone is a broken connection, not a timeout: its sockets are closed before
// the call starts, and Gloo reports the closure. The timeout is far longer than noticing a
// closed socket takes, so that the two do not race (with 500 ms they could on a loaded
// machine, and the test used to accept either).
TEST(GlooBackendErrorTest, PeerThatLeavesFailsTheCollective) {
  auto backend = MakeBackend("gloo");
  auto world = Connect(*backend, 2, milliseconds(10000));
  world->comms[1].reset();  // rank 1 goes away
  std::vector<float> send(1000, 1.0f);
  std::vector<float> recv(1000);
  CollectiveCall call;
  call.send = send.data();
  call.recv = recv.data();
  call.count = send.size();
  try {
    world->comms[0]->Run(call);
    FAIL() << "all_reduce completed without its peer";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBackend) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("gloo all_reduce (rank 0 of 2, 1000 elements): ", 0), 0u)
        << e.what();
  }
}

TEST(GlooBackendErrorTest, PeerThatNeverCallsTimesOut) {
  auto backend = MakeBackend("gloo");
  auto world = Connect(*backend, 2, milliseconds(500));
  std::vector<float> send(1000, 1.0f);
  std::vector<float> recv(1000);
  CollectiveCall call;
  call.collective = Collective::kReduceScatter;  // our own ring, over unbound buffers
  call.send = send.data();
  call.recv = recv.data();
  call.count = 500;
  const auto start = Clock::now();
  try {
    world->comms[0]->Run(call);  // rank 1 is connected but never joins
    FAIL() << "reduce_scatter completed without its peer";
  } catch (const TimeoutError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("gloo reduce_scatter (rank 0 of 2, 500 elements): ", 0),
              0u)
        << e.what();
  }
  EXPECT_GE(Clock::now() - start, milliseconds(450));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

TEST(GlooBackendErrorTest, BadConnectOptionsAreUsageErrors) {
  auto backend = MakeBackend("gloo");
  InMemoryStore store;
  ConnectOptions options;
  options.store = &store;
  options.rank = 2;
  options.size = 2;
  EXPECT_THROW(backend->Connect(options), UsageError);
  options.rank = 0;
  options.store = nullptr;
  EXPECT_THROW(backend->Connect(options), UsageError);
}

TEST(GlooBackendErrorTest, RootOutOfRangeIsAUsageError) {
  auto backend = MakeBackend("gloo");
  auto world = Connect(*backend, 1, milliseconds(1000));
  float x = 1;
  CollectiveCall call;
  call.collective = Collective::kBroadcast;
  call.send = &x;
  call.recv = &x;
  call.count = 1;
  call.root = 3;
  EXPECT_EQ(MessageOf<UsageError>([&] { world->comms[0]->Run(call); }),
            "gloo broadcast (rank 0 of 1, 1 elements): root 3 is not a rank of 1");
}

}  // namespace
}  // namespace fabricscope
