// --dry-run of run, check and locate, through the real binary: the plan on stdout and exit
// 0, without loading a backend's library; a bad command line exits 2 as the real run would;
// the launch environment (plain srun, PMIx) shows in the plan and in the stderr line.
#include <gtest/gtest.h>

#include <string>

#include "common/binary_test.h"

namespace {

using fabricscope::test::Outcome;

class DryRunTest : public fabricscope::test::BinaryTest {};

// What srun sets for task 0 of 4 in step 2 of job 77 on node[1-2], without PMIx.
constexpr const char* kSrun =
    "env SLURM_PROCID=0 SLURM_NTASKS=4 SLURM_LOCALID=0 SLURM_NODEID=0 SLURM_JOB_ID=77 "
    "SLURM_STEP_ID=2 SLURM_STEP_NODELIST=node[1-2]";

TEST_F(DryRunTest, RunPrintsThePlanWithoutRunning) {
  const Outcome o =
      Run("run --dry-run --backend nccl --collective all_reduce,all_gather -b 1K -e 1M -f 2 -g 8 "
          "-J out.json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("# fabricscope run: dry run, nothing is measured"), std::string::npos);
  EXPECT_NE(o.out.find("launcher: single (one process)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("ranks: 1 processes x 1 threads x 8 GPUs = 8"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("backend: nccl"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("collectives: all_reduce, all_gather"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("sizes: 11 (1024 to 1048576 bytes)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("JSON to out.json"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("Avg bus bandwidth"), std::string::npos) << "nothing may run";
}

TEST_F(DryRunTest, BadCommandLinesExitTwoAsTheRunWould) {
  Outcome o = Run("run --dry-run --backend nope");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("unknown --backend 'nope'"), std::string::npos) << o.err;
  o = Run("run --dry-run -b 1M -e 1K");
  EXPECT_EQ(o.exit_code, 2) << o.err;
  o = Run("run --dry-run --format yaml");
  EXPECT_EQ(o.exit_code, 2) << o.err;
  o = Run("check --dry-run --platform no-such-platform -- -b 1K");
  EXPECT_EQ(o.exit_code, 2) << o.err;
  o = Run("check --dry-run --platform a3-megagpu-8g -- --bogus");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--bogus"), std::string::npos) << o.err;
  o = Run("locate --dry-run --backend nope");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("unknown --backend 'nope'"), std::string::npos) << o.err;
}

TEST_F(DryRunTest, CheckNamesThePlatformAndPlansTheRun) {
  const Outcome o = Run("check --dry-run --platform a3-megagpu-8g -- -b 1M -e 64M -f 2");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("platform: gcp-a3-megagpu-8g (--platform)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("# fabricscope run: dry run"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("sizes: 7 (1048576 to 67108864 bytes)"), std::string::npos) << o.out;
  // check's run prints its table on stderr: stdout carries the verdicts.
  EXPECT_NE(o.out.find("report: text on stderr"), std::string::npos) << o.out;
}

TEST_F(DryRunTest, LocatePlansWithTheBackendNotLoaded) {
  const Outcome o = Run("locate --dry-run --backend nccl --group-by process -b 1M");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("backend: nccl; mode: full; size: 1M"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("grouped by process"), std::string::npos) << o.out;
}

TEST_F(DryRunTest, PlainSrunShowsInThePlanAndOnStderr) {
  const Outcome o = RunProgram(FABRICSCOPE_BINARY, "run --dry-run -b 1K -e 1K", kSrun);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("ranks: 4 processes x 1 threads x 1 GPUs = 4"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("launcher: env (srun without PMIx"), std::string::npos) << o.out;
  EXPECT_NE(o.err.find("# fabricscope: launcher: env (srun without PMIx"), std::string::npos)
      << o.err;
  EXPECT_NE(o.err.find("store on node1:"), std::string::npos) << o.err;
  // Task 1 says nothing: the job says it once.
  const Outcome other =
      RunProgram(FABRICSCOPE_BINARY, "run --dry-run -b 1K -e 1K",
                 std::string(kSrun) + " SLURM_PROCID=1 SLURM_NODEID=0 SLURM_LOCALID=1");
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_EQ(other.err.find("launcher:"), std::string::npos) << other.err;
  EXPECT_TRUE(other.out.empty()) << other.out;
}

TEST_F(DryRunTest, PlainSrunWithoutANodeListIsAClearError) {
  const Outcome o = RunProgram(FABRICSCOPE_BINARY, "run --dry-run",
                               "env SLURM_PROCID=1 SLURM_NTASKS=4 SLURM_STEP_ID=0 SLURM_JOB_ID=3");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("SLURM_STEP_NODELIST"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("srun --mpi=pmix"), std::string::npos) << o.err;
}

}  // namespace
