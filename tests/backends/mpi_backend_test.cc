// The MPI backend against real Open MPI: every rank is a process (one singleton process, or
// mpirun -np N), and each process checks its own receive buffer against the expectations of
// collective_expectations.h. main initializes MPI once per process, after recording what
// the backend does before MPI_Init; the exit code is the worst over all ranks, so a failure
// on any rank fails the run.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "collective_expectations.h"
#include "fabricscope/backend.h"
#include "fabricscope/collective.h"
#include "fabricscope/dtype.h"
#include "fabricscope/error.h"
#include "fabricscope/options.h"

namespace fabricscope {
namespace {

using expect::Case;
using expect::CheckRank;
using expect::Describe;
using expect::IsReduction;
using expect::IsRooted;
using expect::kCollectives;
using expect::MakeBuffers;
using expect::RankBuffers;

// ---------------------------------------------------------------------------------------
// The process's place in the job.

int WorldRank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int WorldSize() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

ConnectOptions WorldOptions() {
  ConnectOptions options;
  options.rank = WorldRank();
  options.size = WorldSize();
  options.world_rank = WorldRank();
  return options;
}

// Every process must call this at the same point: MPI_Comm_split is collective.
std::unique_ptr<Communicator> ConnectWorld(Backend& backend) {
  return backend.Connect(WorldOptions());
}

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

// What the backend did before MPI_Init, recorded by main (MPI initializes once per process,
// so no test can see that state itself).
struct BeforeInit {
  std::string connect_error;
  std::string version;
};

BeforeInit& ObservedBeforeInit() {
  static BeforeInit observed;
  return observed;
}

void ObserveBeforeInit() {
  auto backend = MakeBackend("mpi");
  ObservedBeforeInit().version = backend->version();
  ObservedBeforeInit().connect_error = MessageOf<UsageError>([&] {
    ConnectOptions options;
    backend->Connect(options);
  });
}

// ---------------------------------------------------------------------------------------
// Every collective x type x op x placement x count x root, on this job's ranks.

// MPI calls cost microseconds, so unlike the Gloo test every case runs every count: 1 (most
// ranks get empty segments inside MPI), 13 (uneven chunks), 1000, 70001 (beyond Open MPI's
// eager limit and its segment sizes), each with root 0 and with the last rank.
std::vector<Case> CasesFor(Collective coll, int n) {
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax, ReduceOp::kMin,
                          ReduceOp::kAvg};
  const size_t counts[] = {1, 13, 1000, 70001};
  std::vector<int> roots = {0};
  if (IsRooted(coll) && n > 1) roots.push_back(n - 1);
  std::vector<Case> cases;
  for (DataType type : AllCapabilities().types) {  // FP8 is NCCL's alone
    for (ReduceOp op : ops) {
      if (!IsReduction(coll) && op != ReduceOp::kSum) continue;  // the op is not used
      for (bool in_place : {false, true}) {
        for (size_t count : counts) {
          for (int root : roots) cases.push_back({coll, type, op, in_place, n, count, root});
        }
      }
    }
  }
  return cases;
}

// Runs one case on this rank; returns a description of its wrong elements, or "".
std::string RunAndCheck(Communicator& comm, const Case& c) {
  RankBuffers b = MakeBuffers(c, c.count, comm.rank());
  CollectiveCall call;
  call.collective = c.collective;
  call.send = b.send;
  call.recv = b.recv;
  call.count = c.count;
  call.type = c.type;
  call.op = c.op;
  call.root = c.root;
  comm.Run(call);
  std::ostringstream errors;
  const int wrong = CheckRank(c, comm.rank(), b.recv, errors, 5);
  if (wrong > 0) errors << wrong << " wrong elements";
  return errors.str();
}

class MpiCollectiveTest : public ::testing::TestWithParam<Collective> {};

TEST_P(MpiCollectiveTest, EveryTypeOpPlacementCountAndRoot) {
  auto backend = MakeBackend("mpi");
  auto comm = ConnectWorld(*backend);
  for (const Case& c : CasesFor(GetParam(), comm->size())) {
    try {
      EXPECT_EQ(RunAndCheck(*comm, c), "") << Describe(c);
    } catch (const std::exception& e) {
      // Carry on: the other ranks are already in the next call, and stopping here would
      // leave them waiting for this one.
      ADD_FAILURE() << Describe(c) << ": " << e.what();
    }
  }
}

std::string CollectiveName(const ::testing::TestParamInfo<Collective>& param_info) {
  return std::string(SpecOf(param_info.param).name);
}

INSTANTIATE_TEST_SUITE_P(Mpi, MpiCollectiveTest, ::testing::ValuesIn(kCollectives), CollectiveName);

// ---------------------------------------------------------------------------------------
// The remaining paths.

TEST(MpiBackendTest, LargeCallsThroughUserOpsAndInPlaceAlltoall) {
  auto backend = MakeBackend("mpi");
  auto comm = ConnectWorld(*backend);
  const int n = comm->size();
  const size_t count = 300001;  // megabytes: Open MPI's pipelined and segmented algorithms
  const Case cases[] = {
      {Collective::kAllReduce, DataType::kFloat, ReduceOp::kSum, false, n, count, 0},
      {Collective::kAllReduce, DataType::kHalf, ReduceOp::kSum, true, n, count, 0},
      {Collective::kAllReduce, DataType::kBfloat16, ReduceOp::kAvg, false, n, count, 0},
      {Collective::kReduce, DataType::kHalf, ReduceOp::kMax, true, n, count, n - 1},
      {Collective::kReduceScatter, DataType::kBfloat16, ReduceOp::kSum, true, n, count, 0},
      {Collective::kAlltoAll, DataType::kInt32, ReduceOp::kSum, true, n, count, 0},
      {Collective::kBroadcast, DataType::kDouble, ReduceOp::kSum, false, n, count, n - 1},
      {Collective::kSendRecv, DataType::kUint8, ReduceOp::kSum, true, n, count, 0},
  };
  for (const Case& c : cases) {
    try {
      EXPECT_EQ(RunAndCheck(*comm, c), "") << Describe(c);
    } catch (const std::exception& e) {
      ADD_FAILURE() << Describe(c) << ": " << e.what();
    }
  }
}

TEST(MpiBackendTest, ColoursSplitTheJobIntoSubCommunicators) {
  auto backend = MakeBackend("mpi");
  const int world_rank = WorldRank();
  const int world_size = WorldSize();
  ConnectOptions options = WorldOptions();
  options.color = world_rank % 2;  // evens and odds, as NCCL_TESTS_SPLIT_MASK=1 would
  options.rank = world_rank / 2;
  options.size = (world_size + 1 - options.color) / 2;
  auto comm = backend->Connect(options);
  EXPECT_EQ(comm->rank(), options.rank);
  EXPECT_EQ(comm->size(), options.size);
  const int32_t mine = world_rank + 1;
  int32_t sum = 0;
  CollectiveCall call;
  call.send = &mine;
  call.recv = &sum;
  call.count = 1;
  call.type = DataType::kInt32;
  comm->Run(call);
  int32_t want = 0;
  for (int r = options.color; r < world_size; r += 2) want += r + 1;
  EXPECT_EQ(sum, want);
}

TEST(MpiBackendTest, CountZeroIsANoOp) {
  auto backend = MakeBackend("mpi");
  auto comm = ConnectWorld(*backend);
  for (Collective coll : kCollectives) {
    float send = 1;
    float recv = 7;
    CollectiveCall call;
    call.collective = coll;
    call.send = &send;
    call.recv = &recv;
    call.count = 0;
    comm->Run(call);
    EXPECT_EQ(recv, 7) << SpecOf(coll).name;
  }
}

// Point-to-point on the job's communicator (locate's pairs): ranks 2k and 2k+1 exchange,
// out of place and then in place; with an odd number of ranks the last sits out.
TEST(MpiBackendTest, PairsExchangeOnTheJobsCommunicator) {
  auto backend = MakeBackend("mpi");
  ASSERT_TRUE(backend->capabilities().point_to_point);
  auto comm = ConnectWorld(*backend);
  const int r = comm->rank();
  const int peer = r ^ 1;
  if (peer < comm->size()) {
    std::vector<int32_t> send(1000, 100 * r);
    std::vector<int32_t> recv(1000, -1);
    PeerExchange x;
    x.send = send.data();
    x.recv = recv.data();
    x.count = send.size();
    x.type = DataType::kInt32;
    x.peer = peer;
    comm->Exchange(x);
    EXPECT_EQ(recv.front(), 100 * peer);
    EXPECT_EQ(recv.back(), 100 * peer);
    x.recv = send.data();  // in place
    comm->Exchange(x);
    EXPECT_EQ(send.front(), 100 * peer);
    EXPECT_EQ(send.back(), 100 * peer);
  }
  PeerExchange self;
  self.peer = r;
  EXPECT_THROW(comm->Exchange(self), UsageError);
  comm->Barrier();
}

TEST(MpiBackendTest, BarrierAndManyCallsInARow) {
  auto backend = MakeBackend("mpi");
  auto comm = ConnectWorld(*backend);
  EXPECT_EQ(comm->rank(), WorldRank());
  EXPECT_EQ(comm->size(), WorldSize());
  int32_t value = 0;
  for (int i = 0; i < 100; ++i) {
    comm->Barrier();
    const int32_t one = 1;
    CollectiveCall call;
    call.send = &one;
    call.recv = &value;
    call.count = 1;
    call.type = DataType::kInt32;
    comm->Run(call);
  }
  EXPECT_EQ(value, WorldSize());
}

TEST(MpiBackendTest, DescribesItself) {
  auto backend = MakeBackend("mpi");
  EXPECT_EQ(backend->name(), "mpi");
  // The same before and after MPI_Init, and only the first part of the library's banner.
  EXPECT_EQ(backend->version(), ObservedBeforeInit().version);
#ifdef OPEN_MPI
  EXPECT_EQ(backend->version().rfind("Open MPI v", 0), 0u) << backend->version();
#endif
  EXPECT_EQ(backend->version().find_first_of(",\n"), std::string::npos) << backend->version();
  EXPECT_EQ(backend->capabilities().collectives.size(), 9u);
  EXPECT_EQ(backend->capabilities().types.size(), 10u);
  EXPECT_EQ(backend->capabilities().ops.size(), 5u);
  const auto entry = std::find_if(Backends().begin(), Backends().end(),
                                  [](const BackendEntry& e) { return e.name == "mpi"; });
  ASSERT_NE(entry, Backends().end());
  EXPECT_EQ(entry->description, "MPI (OpenMPI) collectives, host memory, one rank per process");
}

TEST(MpiBackendTest, SupportsEveryCollectiveTypeAndOp) {
  auto backend = MakeBackend("mpi");
  RunOptions options;
  options.backend = "mpi";
  options.collectives.assign(std::begin(kCollectives), std::end(kCollectives));
  options.types = AllCapabilities().types;
  options.ops = AllCapabilities().ops;
  EXPECT_NO_THROW(CheckSupported(*backend, options));
  EXPECT_EQ(SupportedOf(*backend, AllReduceOps()), AllCapabilities().ops);
}

// ---------------------------------------------------------------------------------------
// Errors. Each is raised on every rank alike (or, for the truncated message, lets the
// others complete), so no rank is left waiting in a collective.

TEST(MpiBackendErrorTest, ConnectBeforeMpiInitIsAUsageError) {
  EXPECT_EQ(ObservedBeforeInit().connect_error,
            "mpi connect (rank 0 of 1): the mpi backend needs MPI to be initialized by the "
            "launcher; start the ranks with mpirun (or srun) and the MPI launcher");
}

TEST(MpiBackendErrorTest, BadConnectOptionsAreUsageErrors) {
  auto backend = MakeBackend("mpi");
  ConnectOptions options = WorldOptions();
  options.rank = options.size;
  EXPECT_EQ(MessageOf<UsageError>([&] { backend->Connect(options); }),
            "mpi connect (rank " + std::to_string(options.size) + " of " +
                std::to_string(options.size) + "): rank must be in [0, size)");
  options = WorldOptions();
  options.color = -1;
  EXPECT_EQ(MessageOf<UsageError>([&] { backend->Connect(options); }),
            "mpi connect (rank " + std::to_string(options.rank) + " of " +
                std::to_string(options.size) + "): colour -1 is negative");
  // Thread ranks sharing one MPI process would claim world ranks that are not theirs.
  options = WorldOptions();
  options.world_rank = WorldRank() + 1;
  EXPECT_EQ(MessageOf<UsageError>([&] { backend->Connect(options); }),
            "mpi connect (rank " + std::to_string(options.rank) + " of " +
                std::to_string(options.size) + "): world rank " + std::to_string(WorldRank() + 1) +
                " is not this process's MPI rank " + std::to_string(WorldRank()) +
                ": the mpi backend runs one rank per process");
}

TEST(MpiBackendErrorTest, ASplitThatDisagreesWithTheLauncherIsABackendError) {
  auto backend = MakeBackend("mpi");
  ConnectOptions options = WorldOptions();
  options.size = WorldSize() + 1;  // every rank: the split is collective
  const std::string r = std::to_string(WorldRank());
  const std::string n = std::to_string(WorldSize());
  const std::string expected = std::to_string(WorldSize() + 1);
  EXPECT_EQ(MessageOf<BackendError>([&] { backend->Connect(options); }),
            "mpi connect (rank " + r + " of " + expected + "): MPI_Comm_split (colour 0, world " +
                "rank " + r + ") gave rank " + r + " of " + n + ", but the launcher expects rank " +
                r + " of " + expected);
}

TEST(MpiBackendErrorTest, RootOutOfRangeIsAUsageError) {
  auto backend = MakeBackend("mpi");
  auto comm = ConnectWorld(*backend);
  const std::string where =
      "(rank " + std::to_string(comm->rank()) + " of " + std::to_string(comm->size()) + ", ";
  float x = 1;
  CollectiveCall call;
  call.collective = Collective::kBroadcast;
  call.send = &x;
  call.recv = &x;
  call.count = 1;
  call.root = comm->size();
  EXPECT_EQ(MessageOf<UsageError>([&] { comm->Run(call); }),
            "mpi broadcast " + where + "1 elements): root " + std::to_string(comm->size()) +
                " is not a rank of " + std::to_string(comm->size()));
  call.collective = Collective::kGather;
  call.root = -1;
  EXPECT_EQ(MessageOf<UsageError>([&] { comm->Run(call); }),
            "mpi gather " + where + "1 elements): root -1 is not a rank of " +
                std::to_string(comm->size()));
}

TEST(MpiBackendErrorTest, CountsBeyondAnIntAreUnsupported) {
  auto backend = MakeBackend("mpi");
  auto comm = ConnectWorld(*backend);
  float x = 1;
  CollectiveCall call;
  call.send = &x;  // never touched: the count is refused first
  call.recv = &x;
  call.count = size_t{INT_MAX} + 1;
  EXPECT_EQ(MessageOf<UnsupportedError>([&] { comm->Run(call); }),
            "mpi all_reduce (rank " + std::to_string(comm->rank()) + " of " +
                std::to_string(comm->size()) +
                ", 2147483648 elements): MPI takes at most 2147483647 elements per call (an int "
                "count); use a smaller size");
}

TEST(MpiBackendErrorTest, OverlappingBuffersOutsideTheInPlaceLayoutAreRefused) {
  auto backend = MakeBackend("mpi");
  auto comm = ConnectWorld(*backend);
  std::vector<float> buffer(16, 1.0f);
  CollectiveCall call;
  call.send = buffer.data() + 1;
  call.recv = buffer.data();
  call.count = 8;
  EXPECT_EQ(MessageOf<UsageError>([&] { comm->Run(call); }),
            "mpi all_reduce (rank " + std::to_string(comm->rank()) + " of " +
                std::to_string(comm->size()) +
                ", 8 elements): the send and receive buffers overlap but are not the in-place "
                "layout");
}

// Ranks that disagree on the count: rank 0 sends 8 elements to rank 1, which expects 4. MPI
// reports the truncation to rank 1 through the communicator's MPI_ERRORS_RETURN.
TEST(MpiBackendErrorTest, AnMpiErrorBecomesABackendErrorNamingTheCall) {
  if (WorldSize() < 2) GTEST_SKIP() << "needs two ranks (run under mpirun -np 3)";
  auto backend = MakeBackend("mpi");
  auto comm = ConnectWorld(*backend);
  std::vector<int32_t> send(8, 1);
  std::vector<int32_t> recv(8, 0);
  CollectiveCall call;
  call.collective = Collective::kSendRecv;
  call.send = send.data();
  call.recv = recv.data();
  call.count = comm->rank() == 0 ? 8 : 4;
  call.type = DataType::kInt32;
  if (comm->rank() == 1) {
    const std::string message = MessageOf<BackendError>([&] { comm->Run(call); });
    EXPECT_EQ(message.rfind("mpi sendrecv (rank 1 of " + std::to_string(comm->size()) +
                                ", 4 elements): MPI_ERR_TRUNCATE",
                            0),
              0u)
        << message;
  } else {
    EXPECT_NO_THROW(comm->Run(call));
  }
  // The communicator is still usable afterwards.
  EXPECT_NO_THROW(comm->Barrier());
}

// ---------------------------------------------------------------------------------------
// Output: rank 0 prints the usual gtest report; the other ranks print only their failures,
// each line tagged with the rank, so a failure on rank 2 of 4 is visible and attributed.

class FailuresOnly : public ::testing::EmptyTestEventListener {
 public:
  explicit FailuresOnly(int rank) : rank_(rank) {}

  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n", rank_,
                 result.file_name() != nullptr ? result.file_name() : "?", result.line_number());
    std::istringstream message(result.message());
    for (std::string line; std::getline(message, line);) {
      std::fprintf(stderr, "[rank %d] %s\n", rank_, line.c_str());
    }
  }

  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed()) {
      std::fprintf(stderr, "[rank %d] [  FAILED  ] %s.%s\n", rank_, info.test_suite_name(),
                   info.name());
    }
  }

 private:
  const int rank_;
};

}  // namespace
}  // namespace fabricscope

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  fabricscope::ObserveBeforeInit();

  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "mpi_backend_test: MPI_Init_thread failed\n");
    return 1;
  }
  const int rank = fabricscope::WorldRank();
  if (rank != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new fabricscope::FailuresOnly(rank));
  }

  const int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;

  // A communicator still alive at MPI_Finalize must be destroyable afterwards (the
  // launcher's error paths can unwind past MPI_Finalize).
  auto backend = fabricscope::MakeBackend("mpi");
  auto late = fabricscope::ConnectWorld(*backend);

  int failed_anywhere = failed;
  MPI_Allreduce(&failed, &failed_anywhere, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && failed_anywhere != 0 && failed == 0) {
    std::fprintf(stderr, "mpi_backend_test: tests failed on another rank (its [rank N] lines)\n");
  }
  MPI_Finalize();
  late.reset();
  return failed_anywhere;
}
