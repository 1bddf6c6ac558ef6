// No silent fallback: a node with GPUs where none is visible to the process. The node is a
// fixture tree (device files and driver entries as empty files and directories, what the
// probe looks for), not a GPU: this machine has none.
#include "fabricscope/node_gpus.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/binary_test.h"
#include "fabricscope/error.h"

namespace fabricscope {
namespace {

namespace fs = std::filesystem;

// A fake node below `root`: each node path ("/dev/nvidia0") created, a directory when it ends
// in '/'.
void MakeNode(const fs::path& root, std::initializer_list<std::string_view> paths) {
  for (std::string_view p : paths) {
    const fs::path path = root / std::string(p.substr(1));
    if (p.ends_with('/')) {
      fs::create_directories(path);
    } else {
      fs::create_directories(path.parent_path());
      std::ofstream(path) << "";
    }
  }
}

class NodeGpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("fabricscope-node-gpus-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // The refusal's message, or "" when there is none.
  std::string Refusal(const Env& env) const {
    try {
      RefuseHostFallback(ProbeNodeGpus(root_), env, "libnccl.so.2: cannot open shared object");
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  }

  fs::path root_;
};

TEST_F(NodeGpusTest, AnNvidiaNodeIsSeenByItsDeviceFilesAndDriver) {
  MakeNode(root_, {"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm",
                   "/proc/driver/nvidia/", "/sys/module/nvidia/"});
  const NodeGpus node = ProbeNodeGpus(root_);
  EXPECT_TRUE(node.nvidia);
  EXPECT_FALSE(node.amd);
  EXPECT_EQ(node.device_files, (std::vector<std::string>{"/dev/nvidia0", "/dev/nvidia1"}));
  EXPECT_EQ(node.driver_files,
            (std::vector<std::string>{"/proc/driver/nvidia", "/sys/module/nvidia"}));
}

TEST_F(NodeGpusTest, AnAmdNodeIsSeenByKfdAndAmdgpu) {
  MakeNode(root_, {"/dev/kfd", "/sys/module/amdgpu/"});
  const NodeGpus node = ProbeNodeGpus(root_);
  EXPECT_TRUE(node.amd);
  EXPECT_FALSE(node.nvidia);
  EXPECT_EQ(node.device_files, (std::vector<std::string>{"/dev/kfd"}));
}

TEST_F(NodeGpusTest, ANodeWithoutGpusFallsBackAsBefore) {
  MakeNode(root_, {"/dev/null", "/dev/nvme0", "/sys/module/e1000/"});
  EXPECT_FALSE(ProbeNodeGpus(root_).Any());
  EXPECT_EQ(Refusal(Env(Env::Variables{{"CUDA_VISIBLE_DEVICES", ""}})), "");
}

TEST_F(NodeGpusTest, AnEmptyCudaVisibleDevicesIsNamedWithItsFix) {
  MakeNode(root_, {"/dev/nvidia0", "/proc/driver/nvidia/"});
  const std::string message = Refusal(Env(Env::Variables{{"CUDA_VISIBLE_DEVICES", ""}}));
  EXPECT_NE(message.find("this node has NVIDIA GPUs (/dev/nvidia0, /proc/driver/nvidia)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("CUDA_VISIBLE_DEVICES='' hides every GPU"), std::string::npos) << message;
  EXPECT_NE(message.find("unset it, or list the devices"), std::string::npos) << message;
  EXPECT_NE(message.find("Give --backend gloo to measure host memory on purpose"),
            std::string::npos)
      << message;
}

TEST_F(NodeGpusTest, ASlurmJobThatRequestedNoGpusIsToldToAskForThem) {
  MakeNode(root_, {"/dev/nvidia0", "/sys/module/nvidia/"});
  const std::string message = Refusal(Env(Env::Variables{{"SLURM_JOB_ID", "42"}}));
  EXPECT_NE(message.find("this Slurm job requested no GPUs"), std::string::npos) << message;
  EXPECT_NE(message.find("#SBATCH --gpus-per-node=8"), std::string::npos) << message;
  // A job that did request them is not blamed for it; the library is.
  const std::string granted =
      Refusal(Env(Env::Variables{{"SLURM_JOB_ID", "42"}, {"SLURM_JOB_GPUS", "0,1"}}));
  EXPECT_EQ(granted.find("requested no GPUs"), std::string::npos) << granted;
  EXPECT_NE(granted.find("libnccl.so.2: cannot open shared object"), std::string::npos) << granted;
}

TEST_F(NodeGpusTest, AContainerWithTheDriverButNoDeviceFilesIsTheContainer) {
  MakeNode(root_, {"/proc/driver/nvidia/", "/sys/module/nvidia/"});
  const std::string message = Refusal(Env());
  EXPECT_NE(message.find("a container started without the devices"), std::string::npos) << message;
  EXPECT_NE(message.find("nvidia.com/gpu"), std::string::npos) << message;
}

TEST_F(NodeGpusTest, AnAmdNodeHiddenByHipVisibleDevices) {
  MakeNode(root_, {"/dev/kfd", "/sys/module/amdgpu/"});
  const std::string message = Refusal(Env(Env::Variables{{"HIP_VISIBLE_DEVICES", "-1"}}));
  EXPECT_NE(message.find("this node has AMD GPUs"), std::string::npos) << message;
  EXPECT_NE(message.find("HIP_VISIBLE_DEVICES='-1'"), std::string::npos) << message;
}

TEST_F(NodeGpusTest, TheRootComesFromTheEnvironmentElseSlash) {
  EXPECT_EQ(NodeRoot(Env()), fs::path("/"));
  EXPECT_EQ(NodeRoot(Env(Env::Variables{{"FABRICSCOPE_NODE_ROOT", root_.string()}})), root_);
}

// The binary, on a fixture node with NVIDIA device files: no CUDA library on this machine, so
// the default backend would be Gloo. run and check exit 2 with the reason; --backend gloo runs.
class NoSilentFallbackCli : public test::BinaryTest {
 protected:
  std::string NodeEnv(const std::string& extra = "") {
    MakeNode(dir_ / "node", {"/dev/nvidia0", "/dev/nvidiactl", "/proc/driver/nvidia/"});
    return "FABRICSCOPE_NODE_ROOT=" + (dir_ / "node").string() + " " + extra;
  }
};

TEST_F(NoSilentFallbackCli, RunExitsTwoWithTheReason) {
  const test::Outcome o =
      RunProgram(FABRICSCOPE_BINARY, "run -t 2 -b 1K -e 1K", NodeEnv("CUDA_VISIBLE_DEVICES="));
  EXPECT_EQ(o.exit_code, 2) << o.out << o.err;
  EXPECT_NE(o.err.find("none is visible to this process"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("CUDA_VISIBLE_DEVICES='' hides every GPU"), std::string::npos) << o.err;
  EXPECT_EQ(o.out.find("all_reduce"), std::string::npos) << "nothing was measured: " << o.out;
}

TEST_F(NoSilentFallbackCli, ThePerfNameAndCheckRefuseToo) {
  const std::string env = NodeEnv("SLURM_JOB_ID=7");
  const test::Outcome perf = RunProgram(
      (fs::path(FABRICSCOPE_BINARY).parent_path() / "all_reduce_perf").string(), "-t 2", env);
  EXPECT_EQ(perf.exit_code, 2) << perf.err;
  EXPECT_NE(perf.err.find("this Slurm job requested no GPUs"), std::string::npos) << perf.err;
  const test::Outcome check = RunProgram(FABRICSCOPE_BINARY, "check -- -t 2 -b 1K -e 1K", env);
  EXPECT_EQ(check.exit_code, 2) << check.out << check.err;
  EXPECT_NE(check.err.find("none is visible to this process"), std::string::npos) << check.err;
}

TEST_F(NoSilentFallbackCli, BackendGlooRunsOnPurpose) {
  const test::Outcome o = RunProgram(FABRICSCOPE_BINARY, "run -t 2 -b 1K -e 1K --backend gloo",
                                     NodeEnv("CUDA_VISIBLE_DEVICES="));
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("Avg bus bandwidth"), std::string::npos) << o.out;
}

}  // namespace
}  // namespace fabricscope
