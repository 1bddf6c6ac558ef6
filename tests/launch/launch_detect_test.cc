#include <gtest/gtest.h>

#include <map>
#include <string>

#include "fabricscope/error.h"
#include "fabricscope/launch.h"

namespace fabricscope {
namespace {

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    const auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(LaunchDetectTest, NothingSetIsOneProcess) {
  const LaunchInfo info = DetectLaunch(Env({}));
  EXPECT_EQ(info.kind, LaunchKind::kSingle);
  EXPECT_EQ(info.process_count, 1);
}

TEST(LaunchDetectTest, OpenMpiMpichAndSrunAreMpi) {
  LaunchInfo info = DetectLaunch(Env({{"OMPI_COMM_WORLD_RANK", "3"},
                                      {"OMPI_COMM_WORLD_SIZE", "8"},
                                      {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}));
  EXPECT_EQ(info.kind, LaunchKind::kMpi);
  EXPECT_EQ(info.process_rank, 3);
  EXPECT_EQ(info.process_count, 8);
  EXPECT_EQ(info.local_rank, 1);
  info = DetectLaunch(Env({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}}));
  EXPECT_EQ(info.kind, LaunchKind::kMpi);
  info = DetectLaunch(Env({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "5"}}));
  EXPECT_EQ(info.kind, LaunchKind::kMpi);
  EXPECT_EQ(info.local_rank, 5);
  // One task in an allocation is one process, not an MPI job.
  info = DetectLaunch(Env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}));
  EXPECT_EQ(info.kind, LaunchKind::kSingle);
}

TEST(LaunchDetectTest, TorchrunConventionIsEnv) {
  const LaunchInfo info = DetectLaunch(Env({{"RANK", "2"},
                                            {"WORLD_SIZE", "4"},
                                            {"LOCAL_RANK", "0"},
                                            {"MASTER_ADDR", "10.0.0.1"},
                                            {"MASTER_PORT", "29500"}}));
  EXPECT_EQ(info.kind, LaunchKind::kEnv);
  EXPECT_EQ(info.process_rank, 2);
  EXPECT_EQ(info.process_count, 4);
  EXPECT_EQ(info.master_addr, "10.0.0.1");
  EXPECT_EQ(info.master_port, 29500);
}

TEST(LaunchDetectTest, IncompleteEnvironmentsNameWhatIsMissing) {
  try {
    DetectLaunch(Env({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1234"}}));
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("MASTER_ADDR"), std::string::npos) << e.what();
  }
  EXPECT_THROW(DetectLaunch(Env({{"RANK", "4"}, {"WORLD_SIZE", "4"}})), UsageError);
  EXPECT_THROW(DetectLaunch(Env({{"RANK", "x"}, {"WORLD_SIZE", "4"}})), UsageError);
  EXPECT_THROW(
      DetectLaunch(Env(
          {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}})),
      UsageError);
  EXPECT_THROW(DetectLaunch(Env({}), "env"), UsageError);
  EXPECT_THROW(DetectLaunch(Env({}), "slurm"), UsageError);
}

TEST(LaunchDetectTest, ForcedLaunchers) {
  EXPECT_EQ(
      DetectLaunch(Env({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}}), "single")
          .kind,
      LaunchKind::kSingle);
  EXPECT_EQ(DetectLaunch(Env({}), "mpi").kind, LaunchKind::kMpi);
}

TEST(SplitColorTest, NcclTestsSplitExpressions) {
  EXPECT_EQ(SplitColor(Env({}), 13), 0);
  EXPECT_EQ(SplitColor(Env({{"NCCL_TESTS_SPLIT_MASK", "0x7"}}), 13), 5);
  EXPECT_EQ(SplitColor(Env({{"NCCL_TESTS_SPLIT", "AND 0x7"}}), 13), 5);
  EXPECT_EQ(SplitColor(Env({{"NCCL_TESTS_SPLIT", "&0x7"}}), 13), 5);
  EXPECT_EQ(SplitColor(Env({{"NCCL_TESTS_SPLIT", "MOD 8"}}), 13), 5);
  EXPECT_EQ(SplitColor(Env({{"NCCL_TESTS_SPLIT", "%8"}}), 13), 5);
  EXPECT_EQ(SplitColor(Env({{"NCCL_TESTS_SPLIT", "DIV 8"}}), 13), 1);
  EXPECT_EQ(SplitColor(Env({{"NCCL_TESTS_SPLIT", "/8"}}), 13), 1);
  EXPECT_EQ(SplitColor(Env({{"NCCL_TESTS_SPLIT", "OR 1"}}), 12), 13);
  EXPECT_THROW(SplitColor(Env({{"NCCL_TESTS_SPLIT", "XOR 1"}}), 1), UsageError);
  EXPECT_THROW(SplitColor(Env({{"NCCL_TESTS_SPLIT", "MOD 0"}}), 1), UsageError);
  EXPECT_THROW(SplitColor(Env({{"NCCL_TESTS_SPLIT_MASK", "seven"}}), 1), UsageError);
}

}  // namespace
}  // namespace fabricscope
