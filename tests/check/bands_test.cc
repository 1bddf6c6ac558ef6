// Issue 26's acceptance: bands per NCCL algorithm, in-network reduction as a fact of the fabric,
// and a log that fits several platforms judged against the ones its numbers allow. The logs are
// written from nccl-tests' layout (check/fixtures.h) with NCCL's own INFO lines: no GPU here.
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

constexpr size_t kGiB = size_t{1} << 30;

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string Dump(const PlatformChoice& choice, const CheckReport& report) {
  std::string out;
  for (const std::string& e : choice.evidence) out += "from: " + e + "\n";
  for (const std::string& n : choice.notes) out += "note: " + n + "\n";
  out += "unavailable: " + choice.unavailable + "\n";
  for (const TestVerdict& t : report.tests) {
    out += std::string(SeverityName(t.status)) + " " + t.collective + "\n";
    for (const Finding& f : t.findings) {
      out += "  " + std::string(SeverityName(f.severity)) + " " + f.source + ": " + f.what + "\n";
    }
  }
  return out;
}

const Finding* FindingOf(const TestVerdict& test, const std::string& rule) {
  for (const Finding& f : test.findings) {
    if (f.source == rule) return &f;
  }
  return nullptr;
}

// Large-size rows at one busbw: 1, 2, 4 and 8 GiB.
std::vector<LogRow> FlatRows(const std::string& collective, int ranks, double busbw) {
  std::vector<LogRow> rows;
  const double factor = check_testing::BusFactor(collective, ranks);
  for (size_t size = kGiB; size <= 8 * kGiB; size *= 2) {
    const double time_us = static_cast<double>(size) / (busbw / factor * 1e3);
    rows.push_back({size, time_us, busbw, time_us, busbw});
  }
  return rows;
}

CheckReport JudgeOn(const std::string& platform, const LogSpec& spec,
                    const CheckOptions& options = {}) {
  PlatformChoice choice;
  choice.platform = BuiltinCatalog().Get(platform);
  choice.origin = "--platform";
  return Check(ParseResults(NcclTestsLog(spec), "job.log").runs, choice, options);
}

// One 8-GPU node, all_reduce at `busbw`, with NCCL's line for NCCL_ALGO when `algo` is given
// (NCCL prints "NCCL_ALGO set by environment to Ring": src/graph/tuning.cc).
LogSpec OneNode(const std::string& gpu, double busbw, const std::string& algo) {
  LogSpec spec;
  spec.nodes = 1;
  spec.gpu = gpu;
  if (!algo.empty()) spec.nccl_info = {"NCCL_ALGO set by environment to " + algo};
  spec.rows = FlatRows("all_reduce", 8, busbw);
  return spec;
}

std::vector<const Platform*> H100Platforms() {
  std::vector<const Platform*> out;
  for (const Platform& p : BuiltinCatalog().platforms()) {
    if (Has(p.gpu_model, "H100") && p.gpus_per_node == 8) out.push_back(&p);
  }
  return out;
}

// nccl-tests #212: ring collectives on 8 x H100 reach ~370 GB/s, all_reduce with NVLink SHARP
// ~480. A healthy node is healthy on every H100 platform, whichever of the two it ran.
TEST(Bands, H100RingAt360To370AndNvlsAt470To480PassOnEveryH100Platform) {
  ASSERT_GE(H100Platforms().size(), 8u);
  for (const Platform* p : H100Platforms()) {
    for (const auto& [busbw, algo] : std::vector<std::pair<double, std::string>>{
             {360, "Ring"}, {365, "Ring"}, {370, "Ring"}, {470, "NVLS"}, {480, "NVLS"}}) {
      SCOPED_TRACE(fmt::format("{} {} at {}", p->name, algo, busbw));
      const CheckReport report = JudgeOn(p->name, OneNode("NVIDIA H100 80GB HBM3", busbw, algo));
      ASSERT_EQ(report.tests.size(), 1u);
      const TestVerdict& t = report.tests[0];
      ASSERT_TRUE(t.expected) << Dump({}, report);
      EXPECT_EQ(t.expected->algorithm, algo) << Dump({}, report);
      const Finding* bw = FindingOf(t, "bandwidth");
      ASSERT_NE(bw, nullptr);
      EXPECT_EQ(bw->severity, Severity::kOk) << bw->what;
      EXPECT_TRUE(Has(bw->what, "NCCL_ALGO=" + algo + " in the run's environment")) << bw->what;
    }
  }
}

// Without NCCL_ALGO the log does not say which ran: NVLS at 475 meets NCCL's default band; a
// ring figure of 365 is below it but healthy for the Ring band, which is a WARN that names both,
// never the false CRITICAL of a NVLS-only band.
TEST(Bands, H100WithoutTheAlgorithmNamesTheBandsItCouldBe) {
  for (const Platform* p : H100Platforms()) {
    SCOPED_TRACE(p->name);
    const CheckReport nvls = JudgeOn(p->name, OneNode("NVIDIA H100 80GB HBM3", 475, ""));
    ASSERT_TRUE(nvls.tests.at(0).expected) << Dump({}, nvls);
    EXPECT_EQ(nvls.tests[0].expected->algorithm, "NVLS") << Dump({}, nvls);
    EXPECT_EQ(nvls.tests[0].status, Severity::kOk) << Dump({}, nvls);

    const CheckReport ring = JudgeOn(p->name, OneNode("NVIDIA H100 80GB HBM3", 365, ""));
    const Finding* bw = FindingOf(ring.tests.at(0), "bandwidth");
    ASSERT_NE(bw, nullptr) << Dump({}, ring);
    EXPECT_EQ(bw->severity, Severity::kWarn) << bw->what;
    EXPECT_TRUE(Has(bw->what, "healthy for the Ring band")) << bw->what;
    EXPECT_TRUE(Has(bw->what, "bands possible: NVLS")) << bw->what;
  }
}

// NCCL_NVLS_ENABLE=0 (NCCL prints integer parameters with a period) leaves only the ring.
TEST(Bands, NvlsTurnedOffLeavesTheRingBand) {
  LogSpec spec = OneNode("NVIDIA H100 80GB HBM3", 366, "");
  spec.nccl_info = {"NCCL_NVLS_ENABLE set by environment to 0."};
  const CheckReport report = JudgeOn("azure-nd-h100-v5", spec);
  const TestVerdict& t = report.tests.at(0);
  ASSERT_TRUE(t.expected) << Dump({}, report);
  EXPECT_EQ(t.expected->algorithm, "Ring");
  EXPECT_EQ(t.status, Severity::kOk) << Dump({}, report);
  EXPECT_TRUE(Has(FindingOf(t, "bandwidth")->what, "NCCL_NVLS_ENABLE=0")) << Dump({}, report);
}

// Four GB200 NVL72 racks: 72 trays, 288 ranks, all_reduce at 190 GB/s with NCCL_ALGO=Ring.
LogSpec FourGb200Racks(double busbw, const std::string& algo) {
  LogSpec spec;
  spec.nodes = 72;
  spec.gpus_per_node = 4;
  spec.gpu = "NVIDIA GB200";
  if (!algo.empty()) spec.nccl_info = {"NCCL_ALGO set by environment to " + algo};
  spec.rows = FlatRows("all_reduce", 288, busbw);
  return spec;
}

TEST(Bands, Gb200FourRackRingPassesWithoutSharp) {
  for (const std::optional<bool> sharp : {std::optional<bool>(false), std::optional<bool>()}) {
    SCOPED_TRACE(sharp ? "--sharp no" : "SHARP not stated");
    CheckOptions options;
    options.sharp = sharp;
    const CheckReport report = JudgeOn("gb200-nvl72", FourGb200Racks(190, "Ring"), options);
    const TestVerdict& t = report.tests.at(0);
    EXPECT_EQ(t.nodes, 72);
    ASSERT_TRUE(t.expected) << Dump({}, report);
    EXPECT_EQ(t.expected->algorithm, "Ring");
    EXPECT_DOUBLE_EQ(t.expected->typical, 192.0);
    const Finding* bw = FindingOf(t, "bandwidth");
    ASSERT_NE(bw, nullptr);
    EXPECT_EQ(bw->severity, Severity::kOk) << bw->what;
    EXPECT_FALSE(Has(bw->what, "missing in-network reduction")) << bw->what;
    if (!sharp) {
      EXPECT_TRUE(Has(bw->what, "give --sharp yes")) << bw->what;
    }
  }
}

TEST(Bands, Gb200FourRackRingWithSharpStatedWarnsOfTheMissingInNetworkReduction) {
  CheckOptions options;
  options.sharp = true;
  for (const std::string algo : {"Ring", ""}) {
    SCOPED_TRACE(algo.empty() ? "algorithm not in the log" : "NCCL_ALGO=" + algo);
    const CheckReport report = JudgeOn("gb200-nvl72", FourGb200Racks(190, algo), options);
    const TestVerdict& t = report.tests.at(0);
    const Finding* bw = FindingOf(t, "bandwidth");
    ASSERT_NE(bw, nullptr) << Dump({}, report);
    EXPECT_EQ(bw->severity, Severity::kWarn) << bw->what;
    EXPECT_EQ(t.status, Severity::kWarn) << Dump({}, report);
    EXPECT_TRUE(Has(bw->what, "missing in-network reduction")) << bw->what;
    EXPECT_TRUE(Has(bw->what, "--sharp yes")) << bw->what;
    EXPECT_TRUE(Has(bw->what, "CollNet 405.7 GB/s")) << bw->what;
  }
}

// The run's own environment says SHARP when NCCL read NCCL_COLLNET_ENABLE=1 (src/init.cc).
TEST(Bands, CollNetEnabledInTheLogStatesSharp) {
  LogSpec spec = FourGb200Racks(190, "Ring");
  spec.nccl_info.push_back("NCCL_COLLNET_ENABLE set by environment to 1.");
  const CheckReport report = JudgeOn("gb200-nvl72", spec);
  const Finding* bw = FindingOf(report.tests.at(0), "bandwidth");
  ASSERT_NE(bw, nullptr);
  EXPECT_EQ(bw->severity, Severity::kWarn) << bw->what;
  EXPECT_TRUE(Has(bw->what, "NCCL_COLLNET_ENABLE=1 in the run")) << bw->what;
}

// A 2-node A100 run at 190 GB/s with no NIC line: 4 x 100 Gb/s (aws-p4d, 50 GB/s a node, at
// most 100 with Tree on two nodes) cannot carry it; 8 x 200 and 16 x 100 Gb/s can.
TEST(Bands, A100TwoNodesAt190NameTheCandidatesItFitsAndNotFourHundredGigabit) {
  LogSpec spec;
  spec.gpu = "NVIDIA A100-SXM4-40GB";
  spec.rows = FlatRows("all_reduce", 16, 190);
  const ParsedResults parsed = ParseResults(NcclTestsLog(spec), "a100.log");
  const PlatformChoice choice = InferPlatform(BuiltinCatalog(), parsed.runs);
  const CheckReport report = Check(parsed.runs, choice);
  const std::string dump = Dump(choice, report);
  ASSERT_TRUE(choice.platform) << dump;
  EXPECT_NE(choice.platform->name, "aws-p4d") << dump;
  std::vector<std::string> names = {choice.platform->name};
  for (const Platform& p : choice.candidates) names.push_back(p.name);
  EXPECT_EQ(std::count(names.begin(), names.end(), "aws-p4d"), 0) << dump;
  EXPECT_EQ(std::count(names.begin(), names.end(), "azure-nd-a100-v4"), 1) << dump;
  EXPECT_EQ(std::count(names.begin(), names.end(), "oci-bm-gpu4-8"), 1) << dump;
  std::string fits;
  for (const std::string& n : choice.notes) {
    if (Has(n, "the log fits")) fits = n;
  }
  EXPECT_TRUE(Has(fits, "16 x 100 Gb/s")) << dump;
  EXPECT_TRUE(Has(fits, "8 x 200 Gb/s")) << dump;
  EXPECT_FALSE(Has(dump, "4 x 100 Gb/s")) << dump;
  // The ruled-out platform is named with why, and no finding rests on it.
  EXPECT_TRUE(Has(dump, "ruled out aws-p4d")) << dump;
  const TestVerdict& t = report.tests.at(0);
  for (const Finding& f : t.findings) {
    EXPECT_FALSE(Has(f.what, "aws-p4d")) << f.source << ": " << f.what;
  }
  EXPECT_EQ(FindingOf(t, "algorithm"), nullptr) << dump;
  EXPECT_EQ(t.status, Severity::kOk) << dump;
  const Finding* both = FindingOf(t, "platforms");
  ASSERT_NE(both, nullptr) << dump;
  EXPECT_TRUE(Has(both->what, "the same verdict on every platform the log fits")) << dump;
}

// Where the platforms the log fits disagree, the verdict says so and asks for --platform.
TEST(Bands, CandidatesThatDisagreeAreNamedAndPlatformIsAskedFor) {
  LogSpec spec;
  spec.gpu = "NVIDIA A100-SXM4-40GB";
  // Healthy on 16 x 100 Gb/s RoCE (180 GB/s, from 153), a WARN on 8 x 200 Gb/s IB (192, from
  // 163.2).
  spec.rows = FlatRows("all_reduce", 16, 158);
  const ParsedResults parsed = ParseResults(NcclTestsLog(spec), "a100.log");
  const PlatformChoice choice = InferPlatform(BuiltinCatalog(), parsed.runs);
  const CheckReport report = Check(parsed.runs, choice);
  const std::string dump = Dump(choice, report);
  const Finding* both = FindingOf(report.tests.at(0), "platforms");
  ASSERT_NE(both, nullptr) << dump;
  EXPECT_EQ(both->severity, Severity::kWarn) << dump;
  EXPECT_TRUE(Has(both->what, "disagree")) << dump;
  EXPECT_TRUE(Has(both->what, "give --platform NAME")) << dump;
}

// NCCL's gIB plugin (A3 Ultra, A4) names its transport NET/gIB.
TEST(Bands, GibLogsAreReadAsTheGoogleRdmaTransport) {
  LogSpec spec;
  spec.gpu = "NVIDIA H200";
  spec.nccl_info = {
      "NET/gIB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [2]mlx5_2:1/RoCE "
      "[3]mlx5_3:1/RoCE [4]mlx5_4:1/RoCE [5]mlx5_5:1/RoCE [6]mlx5_6:1/RoCE "
      "[7]mlx5_7:1/RoCE ; OOB eth0:10.0.0.1<0>"};
  spec.rows = FlatRows("all_gather", 16, 320);
  spec.collective = "all_gather";
  const PlatformChoice choice =
      InferPlatform(BuiltinCatalog(), ParseResults(NcclTestsLog(spec), "gib.log").runs);
  ASSERT_TRUE(choice.platform) << choice.unavailable;
  EXPECT_EQ(choice.platform->name, "gcp-a3-ultragpu-8g");
  EXPECT_EQ(choice.platform->transport, "gIB");
  bool said = false;
  for (const std::string& e : choice.evidence) said = said || Has(e, "transport gIB");
  EXPECT_TRUE(said);
}

}  // namespace
}  // namespace fabricscope
