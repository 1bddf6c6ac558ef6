// The platform read from the log itself: device lines and NCCL's network lines matched to the
// catalog, a generic platform when nothing fits, each fact named with its line; and logs from
// other machines judged without --platform by the real binary.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "check/fixtures.h"
#include "common/binary_test.h"
#include "fabricscope/check.h"
#include "fabricscope/parse.h"
#include "model/published_runs.h"

namespace fabricscope {
namespace {

using check_testing::LogRow;
using check_testing::LogSpec;
using check_testing::NcclTestsLog;
using testing::BuiltinCatalog;

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string Evidence(const PlatformChoice& choice) {
  std::string out;
  for (const std::string& e : choice.evidence) out += "from: " + e + "\n";
  for (const std::string& n : choice.notes) out += "note: " + n + "\n";
  return out + "unavailable: " + choice.unavailable + "\n";
}

PlatformChoice Infer(const LogSpec& spec) {
  const ParsedResults parsed = ParseResults(NcclTestsLog(spec), "job.log");
  return InferPlatform(BuiltinCatalog(), parsed.runs);
}

LogSpec TwoH100Nodes() {
  LogSpec spec;
  spec.rows = {{size_t{1} << 30, 6000, 340, 6000, 340}, {size_t{2} << 30, 12000, 345, 12000, 345}};
  return spec;
}

// NCCL 2.19+ prints each HCA with its speed; "Using" lists the ones it chose.
std::vector<std::string> IbLines(int hcas, int speed_mbps, const std::string& layer = "IB") {
  std::string using_line = "NET/IB : Using";
  for (int i = 0; i < hcas; ++i)
    using_line += " [" + std::to_string(i) + "]mlx5_" + std::to_string(i) + ":1/" + layer;
  using_line += " ; OOB eth0:10.0.0.1<0>";
  return {"NET/IB : [0] mlx5_0:uverbs0:1/" + layer + " provider=Mlx5 speed=" +
              std::to_string(speed_mbps) + " context=0x55d0 pciPath=/sys/devices/pci0000:17 ar=0",
          using_line, "Using network IB"};
}

TEST(LogPlatform, H100DeviceLinesAloneChooseTheLeastNetworkOfTheCandidates) {
  const PlatformChoice choice = Infer(TwoH100Nodes());
  ASSERT_TRUE(choice.platform) << Evidence(choice);
  EXPECT_EQ(choice.origin, "the log");
  EXPECT_TRUE(Has(choice.platform->gpu_model, "H100"));
  // The evidence names the device lines of job.log (header lines 1-5, 16 device lines).
  EXPECT_TRUE(Has(Evidence(choice),
                  "GPU 'NVIDIA H100 80GB HBM3' on 16 of 16 device lines "
                  "(job.log:6-21)"))
      << Evidence(choice);
  EXPECT_TRUE(Has(Evidence(choice), "16 ranks on 2 hosts, 8 GPUs per node")) << Evidence(choice);
  // Several H100 platforms fit: those whose NICs cannot carry 345 GB/s on two nodes (TCPX's
  // 4 x 200 Gb/s: 100 GB/s, twice that at most with Tree or NVLS) are ruled out and named; of
  // the rest the one with the least network bandwidth is the yardstick.
  EXPECT_TRUE(Has(Evidence(choice), "judged against " + choice.platform->name +
                                        ", the one with "
                                        "the least network bandwidth"))
      << Evidence(choice);
  EXPECT_TRUE(Has(Evidence(choice), "ruled out gcp-a3-highgpu-8g")) << Evidence(choice);
  for (const Platform& p : BuiltinCatalog().platforms()) {
    if (Has(p.gpu_model, "H100") && p.gpus_per_node == 8 && 2 * p.NicTotalGBs() >= 345) {
      EXPECT_LE(choice.platform->NicTotalGBs(), p.NicTotalGBs()) << p.name;
    }
  }
}

TEST(LogPlatform, TheRankCountIsCheckedAgainstBusbwOverAlgbw) {
  EXPECT_TRUE(Has(Evidence(Infer(TwoH100Nodes())),
                  "busbw / algbw = 1.8750, all_reduce's factor on 16 ranks (job.log:1)"))
      << Evidence(Infer(TwoH100Nodes()));
  // The table of 16 ranks under a device list that lost its last 12 lines.
  std::string log = NcclTestsLog(TwoH100Nodes());
  for (int rank = 4; rank < 16; ++rank) {
    const size_t at = log.find(fmt::format("#  Rank {:2} ", rank));
    ASSERT_NE(at, std::string::npos);
    log.erase(at, log.find('\n', at) + 1 - at);
  }
  const PlatformChoice choice = InferPlatform(BuiltinCatalog(), ParseResults(log, "job.log").runs);
  EXPECT_TRUE(Has(Evidence(choice),
                  "busbw / algbw = 1.8750 in the rows, but all_reduce on 4 ranks has a factor of "
                  "1.5000: the device lines and the table disagree on the rank count"))
      << Evidence(choice);
}

TEST(LogPlatform, NcclNetworkLinesNarrowItToTheMatchingPlatforms) {
  LogSpec spec = TwoH100Nodes();
  spec.nccl_info = IbLines(8, 400000);
  const PlatformChoice choice = Infer(spec);
  ASSERT_TRUE(choice.platform) << Evidence(choice);
  EXPECT_EQ(choice.platform->transport, "IB");
  EXPECT_EQ(choice.platform->nics, 8);
  EXPECT_EQ(choice.platform->nic_rate_gbps, 400);
  EXPECT_TRUE(Has(Evidence(choice), "8 NICs: NET/IB : Using [0]mlx5_0:1/IB")) << Evidence(choice);
  EXPECT_TRUE(Has(Evidence(choice), "NIC rate 400 Gb/s: NET/IB : [0] mlx5_0:uverbs0:1/IB"))
      << Evidence(choice);
  // "job.log:N" of the NCCL lines: they follow the 21 header and device lines.
  EXPECT_TRUE(Has(Evidence(choice), "(job.log:22)")) << Evidence(choice);
}

TEST(LogPlatform, EfaThroughTheOfiPluginIsAwsP5) {
  LogSpec spec = TwoH100Nodes();
  spec.nccl_info = {"NET/OFI Selected Provider is efa, fabric is efa-direct (found 32 nics)",
                    "Using network AWS Libfabric"};
  const PlatformChoice choice = Infer(spec);
  ASSERT_TRUE(choice.platform) << Evidence(choice);
  EXPECT_EQ(choice.platform->name, "aws-p5");
  EXPECT_TRUE(choice.notes.empty()) << Evidence(choice);
}

TEST(LogPlatform, NothingInTheCatalogFitsSoTheLogBuildsAGenericPlatform) {
  LogSpec spec = TwoH100Nodes();
  spec.nccl_info = IbLines(4, 200000);  // 4 x HDR: no H100 platform of the catalog has that
  spec.rows = {{size_t{1} << 30, 23000, 88, 23000, 88}, {size_t{2} << 30, 46000, 88, 46000, 88}};
  const PlatformChoice choice = Infer(spec);
  ASSERT_TRUE(choice.platform) << Evidence(choice);
  const Platform& p = *choice.platform;
  EXPECT_EQ(p.name, "from-log");
  EXPECT_EQ(p.nics, 4);
  EXPECT_EQ(p.nic_rate_gbps, 200);
  EXPECT_EQ(p.gpu_model, "NVIDIA H100 80GB HBM3");
  // Two nodes: min(intra-node, 4 x 200 / 8 = 100 GB/s x 0.9) = 90 GB/s.
  const auto band = p.ExpectationFor("all_reduce", 2, size_t{1} << 30);
  ASSERT_TRUE(band);
  EXPECT_DOUBLE_EQ(band->typical_busbw, 90.0);
  EXPECT_TRUE(Has(band->source, "the log's NICs")) << band->source;
  // Judged against it, the run passes or fails on those NICs, with the reason.
  const CheckReport report = Check(ParseResults(NcclTestsLog(spec), "job.log").runs, choice);
  ASSERT_EQ(report.tests.size(), 1u);
  EXPECT_EQ(report.tests[0].status, Severity::kOk);
}

TEST(LogPlatform, WithoutNicLinesAndNoCatalogFitItSaysWhatIsMissing) {
  LogSpec spec = TwoH100Nodes();
  spec.gpu = "NVIDIA GH200 480GB";
  spec.gpus_per_node = 1;
  const PlatformChoice choice = Infer(spec);
  EXPECT_FALSE(choice.platform);
  EXPECT_TRUE(Has(choice.unavailable, "the log names NVIDIA GH200 480GB but fits no catalog"))
      << choice.unavailable;
  EXPECT_TRUE(Has(choice.unavailable, "no NCCL line names the NICs")) << choice.unavailable;
}

TEST(LogPlatform, HostMemoryRunsNameNoGpu) {
  const std::string log =
      "# fabricscope version 0.1.0 backend=gloo gloo-library=0.5.0\n"
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 1 iters: 1 agg "
      "iters: 1 validation: 1 graph: 0\n#\n# Using devices\n"
      "#  Rank  0 Group  0 Pid   1000 on     node-a device  0 [-] host memory (x86_64)\n";
  const PlatformChoice choice = InferPlatform(BuiltinCatalog(), ParseResults(log, "gloo.log").runs);
  EXPECT_EQ(choice.origin, "none");
  EXPECT_FALSE(choice.platform);
}

class LogPlatformCli : public test::BinaryTest {
 protected:
  LogPlatformCli() : BinaryTest("check") {}
};

TEST_F(LogPlatformCli, ALogFromAnotherMachineIsJudgedWithoutFlags) {
  LogSpec spec = TwoH100Nodes();
  spec.nccl_info = IbLines(8, 400000);
  const std::string path = Write("h100.log", NcclTestsLog(spec));
  const test::Outcome o = Run(path);
  EXPECT_FALSE(Has(o.out, "this node has no GPU")) << o.out;
  EXPECT_TRUE(Has(o.out, "(the log): 8 x NVIDIA H100")) << o.out;
  EXPECT_TRUE(Has(o.out, "  from: GPU 'NVIDIA H100 80GB HBM3' on 16 of 16 device lines")) << o.out;
  EXPECT_TRUE(Has(o.out, "  from: 8 NICs: NET/IB : Using [0]mlx5_0:1/IB")) << o.out;
  // 345 GB/s on 2 nodes of 8 x 400 Gb/s is healthy.
  EXPECT_TRUE(Has(o.out, "\n  OK            bandwidth ")) << o.out;
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
}

TEST_F(LogPlatformCli, ACrashedRunIsAFailNotAUsageError) {
  std::string log = NcclTestsLog(TwoH100Nodes());
  log = log.substr(0, log.find("NCCL version"));
  log += "gpu-a01: NCCL failure all_reduce.cu:95 'unhandled cuda error'\n";
  const test::Outcome o = Run(Write("crash.log", log));
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_FALSE(Has(o.err, "no benchmark results")) << o.err;
  EXPECT_TRUE(Has(o.out, "\nCRITICAL  all_reduce: 16 ranks on 2 nodes")) << o.out;
  EXPECT_TRUE(
      Has(o.out, "\n  CRITICAL      correctness     the run reported: " + dir_.string() +
                     "/crash.log:22: gpu-a01: NCCL failure all_reduce.cu:95 'unhandled cuda "
                     "error'"))
      << o.out;
}

TEST_F(LogPlatformCli, AnalyzeShowsTheFailureInItsStatusColumn) {
  std::string log = NcclTestsLog(TwoH100Nodes());
  log = log.substr(0, log.find("NCCL version"));
  const std::string path = Write("cut.log", log);
  const test::Outcome o = Shell(std::string(FABRICSCOPE_BINARY) + " analyze --format csv " + path);
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_TRUE(Has(o.out, ",FAILED,")) << o.out;
  EXPECT_TRUE(Has(o.out, "the run was cut off before its first row")) << o.out;
}

// A digit string too long for a number (a corrupt or hostile log) is no figure: read past,
// not wrapped into a negative or arbitrary rate (it overflowed a signed long before).
TEST(LogPlatform, LongDigitStringsAreNoFigure) {
  LogSpec spec = TwoH100Nodes();
  spec.nccl_info = {
      "NET/IB : [0] mlx5_0:uverbs0:1/IB provider=Mlx5 speed=99999999999999999999999999999999 "
      "context=0x55d0",
      "NET/OFI Selected Provider is efa, fabric is efa (found 184467440737095516170 nics)",
      "MNNVL 1 cliqueSize 99999999999999999999999999", "Using network IB"};
  const PlatformChoice choice = Infer(spec);
  EXPECT_FALSE(Has(Evidence(choice), "NIC rate")) << Evidence(choice);
  EXPECT_FALSE(Has(Evidence(choice), " NICs: ")) << Evidence(choice);
  if (choice.platform) {
    EXPECT_GE(choice.platform->nic_rate_gbps, 0);
    EXPECT_GE(choice.platform->nics, 0);
  }
}

}  // namespace
}  // namespace fabricscope
