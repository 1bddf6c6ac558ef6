// locate over the nccl backend on the fake GPU libraries (tests/backends/fake_gpu: a TEST
// DOUBLE, NCCL's API over host memory, for there is no GPU here), counting the
// communicators a run creates: the fake appends one line per ncclCommInitRank to
// FAKE_NCCL_INIT_LOG ("<communicator id> <rank> <nranks>").
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fabricscope/backend.h"
#include "fabricscope/launch.h"
#include "fabricscope/locate.h"

namespace fabricscope {
namespace {

namespace fs = std::filesystem;

Env NoEnvironment() { return Env(); }

// The communicators (distinct ids) and ranks initialized (lines) in the fake's log.
struct Inits {
  size_t lines = 0;
  std::set<std::string> communicators;
};

Inits ReadInits(const fs::path& log) {
  Inits inits;
  std::ifstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id;
    fields >> id;
    inits.communicators.insert(id);
    ++inits.lines;
  }
  return inits;
}

class LocateOverFakeNccl : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fabricscope-locate-nccl-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    log_ = dir_ / "inits";
    // The fake reads its variables at each call: one device per thread rank.
    ::setenv("FAKE_NCCL_INIT_LOG", log_.c_str(), 1);
    ::setenv("FAKE_CUDA_DEVICES", "64", 1);
  }
  void TearDown() override {
    ::unsetenv("FAKE_NCCL_INIT_LOG");
    ::unsetenv("FAKE_CUDA_DEVICES");
    fs::remove_all(dir_);
  }

  // A full locate of `ranks` thread ranks, each its own node, over the fake NCCL.
  LocateReport Run(int ranks, bool point_to_point) {
    auto backend = MakeBackend("nccl", {FAKE_NCCL_PATH, FAKE_CUDART_PATH, Env()});
    LocateJobOptions job;
    job.grouping = NodeGrouping::kRank;
    job.point_to_point = point_to_point;
    job.measure.backend = "nccl";
    job.measure.nthreads = ranks;
    job.measure.min_bytes = job.measure.max_bytes = 4096;
    job.measure.iters = 1;
    job.measure.warmup_iters = 0;
    job.measure.timeout_s = 300;
    job.locate.max_sweeps = 2;  // the pairs once, then the noise sample and the undecided
    return RunLocateJob(job, *backend, LaunchInfo{}, NoEnvironment());
  }

  fs::path dir_;
  fs::path log_;
};

// Issue 13's cost at scale: 64 ranks, 63 pair rounds and the rounds again, and the only
// communicator is the job's: every pair exchanges by grouped ncclSend/ncclRecv on it.
TEST_F(LocateOverFakeNccl, SixtyFourRanksFullLocateInitializesOneCommunicator) {
  const LocateReport r = Run(64, true);
  ASSERT_EQ(r.layout.names.size(), 64u);
  EXPECT_EQ(r.rounds.pairs, 63);
  EXPECT_EQ(r.rounds.per_node, 0);  // one rank per node: no per-node group
  EXPECT_EQ(r.rounds.world, 1);
  EXPECT_GE(r.samples.size(), 64u * 63u / 2u);  // every pair, then some again
  for (const PairSample& s : r.samples) {
    EXPECT_GT(s.sendrecv_busbw, 0) << s.pair.a << "-" << s.pair.b;
    // Device memory: a pair runs sendrecv only (all_reduce would need a reduction kernel
    // or a communicator of its own).
    EXPECT_TRUE(std::isnan(s.all_reduce_busbw)) << s.all_reduce_busbw;
    EXPECT_EQ(s.wrong, 0);
  }
  ASSERT_TRUE(r.world_times.has_value());
  const Inits inits = ReadInits(log_);
  EXPECT_EQ(inits.communicators.size(), 1u);
  EXPECT_EQ(inits.lines, 64u);  // one ncclCommInitRank per rank, of the one communicator
  std::printf("point-to-point: %zu communicators, %zu ncclCommInitRank, %zu pairs\n",
              inits.communicators.size(), inits.lines, r.samples.size());
}

// The fallback, as every round ran before point-to-point: one communicator per pair
// measured (two ncclCommInitRank each), besides the job's.
TEST_F(LocateOverFakeNccl, WithoutPointToPointEveryPairMeasuredIsACommunicator) {
  const LocateReport r = Run(64, false);
  EXPECT_EQ(r.rounds.pairs, 63);
  for (const PairSample& s : r.samples) {
    EXPECT_GT(s.sendrecv_busbw, 0);
    EXPECT_GT(s.all_reduce_busbw, 0);
    EXPECT_EQ(s.wrong, 0);
  }
  const Inits inits = ReadInits(log_);
  EXPECT_EQ(inits.communicators.size(), 1u + r.samples.size());
  EXPECT_EQ(inits.lines, 64u + 2u * r.samples.size());
  std::printf("per-pair communicators: %zu communicators, %zu ncclCommInitRank, %zu pairs\n",
              inits.communicators.size(), inits.lines, r.samples.size());
}

}  // namespace
}  // namespace fabricscope
