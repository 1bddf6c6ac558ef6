#include <gtest/gtest.h>

#include <map>
#include <string>

#include "fabricscope/error.h"
#include "fabricscope/launch.h"

namespace fabricscope {
namespace {

TEST(LaunchDetectTest, NothingSetIsOneProcess) {
  const LaunchInfo info = DetectLaunch(Env());
  EXPECT_EQ(info.kind, LaunchKind::kSingle);
  EXPECT_EQ(info.process_count, 1);
}

TEST(LaunchDetectTest, OpenMpiMpichAndSrunAreMpi) {
  LaunchInfo info = DetectLaunch(Env(Env::Variables{{"OMPI_COMM_WORLD_RANK", "3"},
                                                    {"OMPI_COMM_WORLD_SIZE", "8"},
                                                    {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}));
  EXPECT_EQ(info.kind, LaunchKind::kMpi);
  EXPECT_EQ(info.process_rank, 3);
  EXPECT_EQ(info.process_count, 8);
  EXPECT_EQ(info.local_rank, 1);
  info = DetectLaunch(Env(Env::Variables{{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}}));
  EXPECT_EQ(info.kind, LaunchKind::kMpi);
  // srun --mpi=pmix: a PMIx server is there, so MPI can start.
  info = DetectLaunch(Env(Env::Variables{{"PMIX_RANK", "5"},
                                         {"PMIX_NAMESPACE", "slurm.pmix.12.0"},
                                         {"SLURM_PROCID", "5"},
                                         {"SLURM_NTASKS", "16"},
                                         {"SLURM_LOCALID", "1"},
                                         {"SLURM_STEP_ID", "0"}}));
  EXPECT_EQ(info.kind, LaunchKind::kMpi);
  EXPECT_EQ(info.process_rank, 5);
  EXPECT_EQ(info.process_count, 16);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_NE(DescribeLaunch(info).find("PMIx"), std::string::npos) << DescribeLaunch(info);
  // One task in an allocation is one process, not an MPI job.
  info = DetectLaunch(
      Env(Env::Variables{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_STEP_ID", "0"}}));
  EXPECT_EQ(info.kind, LaunchKind::kSingle);
  EXPECT_EQ(DescribeLaunch(info), "");
  // A batch script sees SLURM_PROCID and SLURM_NTASKS but is no task of a step.
  info = DetectLaunch(
      Env(Env::Variables{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_JOB_ID", "7"}}));
  EXPECT_EQ(info.kind, LaunchKind::kSingle);
}

// The srun variables of task `rank` of `ntasks` in step 3 of job 12345 on node[1-2].
std::map<std::string, std::string> Srun(int rank, int ntasks, int localid, int nodeid) {
  return {{"SLURM_PROCID", std::to_string(rank)},
          {"SLURM_NTASKS", std::to_string(ntasks)},
          {"SLURM_LOCALID", std::to_string(localid)},
          {"SLURM_NODEID", std::to_string(nodeid)},
          {"SLURM_STEP_NODELIST", "node[1-2]"},
          {"SLURM_JOB_NODELIST", "node[1-3]"},
          {"SLURM_JOB_ID", "12345"},
          {"SLURM_STEP_ID", "3"}};
}

TEST(LaunchDetectTest, PlainSrunBootstrapsFromSlurmVariables) {
  const LaunchInfo info = DetectLaunch(Env(Srun(3, 4, 1, 1)));
  EXPECT_EQ(info.kind, LaunchKind::kEnv);
  EXPECT_EQ(info.process_rank, 3);
  EXPECT_EQ(info.process_count, 4);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.master_addr, "node1");
  EXPECT_EQ(info.master_port, SlurmStorePort(12345, 3));
  const std::string line = DescribeLaunch(info);
  EXPECT_NE(line.find("srun without PMIx"), std::string::npos) << line;
  EXPECT_NE(line.find("node1:" + std::to_string(info.master_port)), std::string::npos) << line;
  // Another step of the same job gets another port; the port stays below the ephemeral range.
  EXPECT_NE(SlurmStorePort(12345, 3), SlurmStorePort(12345, 4));
  for (uint64_t job : {0ULL, 1ULL, 999999ULL, 18446744073709551615ULL}) {
    EXPECT_GE(SlurmStorePort(job, 0), 20000);
    EXPECT_LT(SlurmStorePort(job, 0), 32000);
  }
  // --launcher env under srun takes the same path.
  EXPECT_EQ(DetectLaunch(Env(Srun(0, 4, 0, 0)), "env").master_addr, "node1");
}

TEST(LaunchDetectTest, PlainSrunStoreAddressCanBeOverridden) {
  auto vars = Srun(0, 4, 0, 0);
  vars["MASTER_ADDR"] = "10.1.2.3";
  vars["MASTER_PORT"] = "40123";
  const LaunchInfo info = DetectLaunch(Env(vars));
  EXPECT_EQ(info.kind, LaunchKind::kEnv);
  EXPECT_EQ(info.master_addr, "10.1.2.3");
  EXPECT_EQ(info.master_port, 40123);
  EXPECT_NE(DescribeLaunch(info).find("MASTER_PORT"), std::string::npos);
}

TEST(LaunchDetectTest, PlainSrunErrorsSayHowToFix) {
  auto vars = Srun(0, 4, 0, 0);
  vars.erase("SLURM_STEP_NODELIST");
  vars.erase("SLURM_JOB_NODELIST");
  try {
    DetectLaunch(Env(vars));
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("SLURM_STEP_NODELIST"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--mpi=pmix"), std::string::npos) << e.what();
  }
  // Task 0 away from the first node: the others would look for the store elsewhere.
  try {
    DetectLaunch(Env(Srun(0, 4, 0, 1)));
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("MASTER_ADDR"), std::string::npos) << e.what();
  }
  vars = Srun(1, 4, 0, 1);
  vars["SLURM_JOB_ID"] = "twelve";
  EXPECT_THROW(DetectLaunch(Env(vars)), UsageError);
  vars = Srun(1, 4, 0, 1);
  vars["SLURM_STEP_NODELIST"] = "node[1-2";
  EXPECT_THROW(DetectLaunch(Env(vars)), UsageError);
}

TEST(LaunchDetectTest, TorchrunUnderSrunKeepsItsOwnNumbering) {
  auto vars = Srun(1, 2, 0, 1);
  vars["RANK"] = "9";
  vars["WORLD_SIZE"] = "16";
  vars["LOCAL_RANK"] = "1";
  vars["MASTER_ADDR"] = "node1";
  vars["MASTER_PORT"] = "29500";
  const LaunchInfo info = DetectLaunch(Env(vars));
  EXPECT_EQ(info.kind, LaunchKind::kEnv);
  EXPECT_EQ(info.process_rank, 9);
  EXPECT_EQ(info.process_count, 16);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.master_port, 29500);
}

TEST(LaunchDetectTest, SrunWithPmi2OnlyIsNotMpi) {
  // srun --mpi=pmi2 sets PMI_RANK/PMI_SIZE, which Debian's Open MPI cannot use.
  auto vars = Srun(1, 4, 1, 0);
  vars["PMI_RANK"] = "1";
  vars["PMI_SIZE"] = "4";
  vars["PMI_FD"] = "5";
  const LaunchInfo info = DetectLaunch(Env(vars));
  EXPECT_EQ(info.kind, LaunchKind::kEnv);
  EXPECT_NE(DescribeLaunch(info).find("PMI-2"), std::string::npos) << DescribeLaunch(info);
}

TEST(LaunchDetectTest, HydraAndPmixVariables) {
  LaunchInfo info = DetectLaunch(
      Env(Env::Variables{{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "1"}}));
  EXPECT_EQ(info.kind, LaunchKind::kMpi);
  EXPECT_EQ(info.process_rank, 2);
  EXPECT_EQ(info.process_count, 4);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_NE(DescribeLaunch(info).find("Hydra"), std::string::npos);
  // prterun: PMIx without a size variable; MPI_Comm_size tells it later.
  info = DetectLaunch(Env(Env::Variables{{"PMIX_RANK", "1"}}));
  EXPECT_EQ(info.kind, LaunchKind::kMpi);
  EXPECT_EQ(info.process_rank, 1);
}

TEST(LaunchDetectTest, LocalRankFallsBackToTheLaunchersOwn) {
  std::map<std::string, std::string> vars = {
      {"RANK", "3"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1234"}};
  EXPECT_EQ(DetectLaunch(Env(vars)).local_rank, 0);
  vars["OMPI_COMM_WORLD_LOCAL_RANK"] = "2";
  EXPECT_EQ(DetectLaunch(Env(vars), "env").local_rank, 2);
  vars["SLURM_LOCALID"] = "1";
  EXPECT_EQ(DetectLaunch(Env(vars), "env").local_rank, 1);
  vars["LOCAL_RANK"] = "3";
  EXPECT_EQ(DetectLaunch(Env(vars), "env").local_rank, 3);
}

TEST(FirstSlurmHostTest, ExpandsTheFirstEntry) {
  EXPECT_EQ(FirstSlurmHost("node1"), "node1");
  EXPECT_EQ(FirstSlurmHost("node1,node2"), "node1");
  EXPECT_EQ(FirstSlurmHost("gpu[07-09,12],login1"), "gpu07");
  EXPECT_EQ(FirstSlurmHost("a1,b[2-3]"), "a1");
  EXPECT_EQ(FirstSlurmHost("rack[3]-gpu"), "rack3-gpu");
  EXPECT_EQ(FirstSlurmHost("n[001-128]"), "n001");
  EXPECT_THROW(FirstSlurmHost(""), UsageError);
  EXPECT_THROW(FirstSlurmHost("n[x-3]"), UsageError);
  EXPECT_THROW(FirstSlurmHost("n[1-3"), UsageError);
}

TEST(LaunchDetectTest, TorchrunConventionIsEnv) {
  const LaunchInfo info = DetectLaunch(Env(Env::Variables{{"RANK", "2"},
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

TEST(LaunchDetectTest, PortZeroMeansProcessZeroPublishesItsPortInTheFile) {
  std::map<std::string, std::string> vars = {{"RANK", "1"},
                                             {"WORLD_SIZE", "2"},
                                             {"MASTER_ADDR", "127.0.0.1"},
                                             {"MASTER_PORT", "0"},
                                             {"FABRICSCOPE_PORT_FILE", "/tmp/job/port"}};
  const LaunchInfo info = DetectLaunch(Env(vars));
  EXPECT_EQ(info.kind, LaunchKind::kEnv);
  EXPECT_EQ(info.master_port, 0);
  EXPECT_EQ(info.port_file, "/tmp/job/port");
  EXPECT_NE(DescribeLaunch(info).find("publishes in /tmp/job/port"), std::string::npos)
      << DescribeLaunch(info);
  // A real port ignores the file: the store is where MASTER_PORT says.
  vars["MASTER_PORT"] = "29500";
  EXPECT_EQ(DetectLaunch(Env(vars)).master_port, 29500);
  EXPECT_EQ(DetectLaunch(Env(vars)).port_file, "");
  // Without the file the others could never learn the port.
  vars["MASTER_PORT"] = "0";
  vars.erase("FABRICSCOPE_PORT_FILE");
  try {
    DetectLaunch(Env(vars));
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("MASTER_PORT=0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("set FABRICSCOPE_PORT_FILE"), std::string::npos)
        << e.what();
  }
}

TEST(LaunchDetectTest, IncompleteEnvironmentsNameWhatIsMissing) {
  try {
    DetectLaunch(Env(Env::Variables{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1234"}}));
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("MASTER_ADDR"), std::string::npos) << e.what();
  }
  EXPECT_THROW(DetectLaunch(Env(Env::Variables{{"RANK", "4"}, {"WORLD_SIZE", "4"}})), UsageError);
  EXPECT_THROW(DetectLaunch(Env(Env::Variables{{"RANK", "x"}, {"WORLD_SIZE", "4"}})), UsageError);
  EXPECT_THROW(
      DetectLaunch(Env(
          {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}})),
      UsageError);
  EXPECT_THROW(DetectLaunch(Env(), "env"), UsageError);
  EXPECT_THROW(DetectLaunch(Env(), "slurm"), UsageError);
}

TEST(LaunchDetectTest, ForcedLaunchers) {
  EXPECT_EQ(DetectLaunch(
                Env(Env::Variables{{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
                "single")
                .kind,
            LaunchKind::kSingle);
  EXPECT_EQ(DetectLaunch(Env(), "mpi").kind, LaunchKind::kMpi);
}

TEST(SplitColorTest, NcclTestsSplitExpressions) {
  EXPECT_EQ(SplitColor(Env(), 13), 0);
  EXPECT_EQ(SplitColor(Env(Env::Variables{{"NCCL_TESTS_SPLIT_MASK", "0x7"}}), 13), 5);
  EXPECT_EQ(SplitColor(Env(Env::Variables{{"NCCL_TESTS_SPLIT", "AND 0x7"}}), 13), 5);
  EXPECT_EQ(SplitColor(Env(Env::Variables{{"NCCL_TESTS_SPLIT", "&0x7"}}), 13), 5);
  EXPECT_EQ(SplitColor(Env(Env::Variables{{"NCCL_TESTS_SPLIT", "MOD 8"}}), 13), 5);
  EXPECT_EQ(SplitColor(Env(Env::Variables{{"NCCL_TESTS_SPLIT", "%8"}}), 13), 5);
  EXPECT_EQ(SplitColor(Env(Env::Variables{{"NCCL_TESTS_SPLIT", "DIV 8"}}), 13), 1);
  EXPECT_EQ(SplitColor(Env(Env::Variables{{"NCCL_TESTS_SPLIT", "/8"}}), 13), 1);
  EXPECT_EQ(SplitColor(Env(Env::Variables{{"NCCL_TESTS_SPLIT", "OR 1"}}), 12), 13);
  EXPECT_THROW(SplitColor(Env(Env::Variables{{"NCCL_TESTS_SPLIT", "XOR 1"}}), 1), UsageError);
  EXPECT_THROW(SplitColor(Env(Env::Variables{{"NCCL_TESTS_SPLIT", "MOD 0"}}), 1), UsageError);
  EXPECT_THROW(SplitColor(Env(Env::Variables{{"NCCL_TESTS_SPLIT_MASK", "seven"}}), 1), UsageError);
  // nccl-tests reads the mask in hex (strtoul base 16) and before NCCL_TESTS_SPLIT.
  EXPECT_EQ(SplitColor(Env(Env::Variables{{"NCCL_TESTS_SPLIT_MASK", "f"}}), 13), 13);
  EXPECT_EQ(SplitColor(Env(Env::Variables{{"NCCL_TESTS_SPLIT_MASK", "10"}}), 17), 16);
  EXPECT_EQ(
      SplitColor(
          Env(Env::Variables{{"NCCL_TESTS_SPLIT_MASK", "0x1"}, {"NCCL_TESTS_SPLIT", "DIV 8"}}), 12),
      0);
}

}  // namespace
}  // namespace fabricscope
