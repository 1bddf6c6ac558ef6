// NCCL's INFO log of a many-rank job compared across nodes: the nodes that differ from the
// majority (GDR off, sockets, another plugin), with their lines; and the same comparison in
// the doctor's --nccl-log check. The log is written here in the form NCCL prints.
#include "fabricscope/nccl_nodes.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "doctor/nccl_log.h"
#include "fabricscope/doctor.h"

namespace fabricscope {
namespace {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// What differs on one node of the job.
struct Oddity {
  int node = -1;
  bool no_gdr = false;
  bool socket = false;
  std::string plugin = "NCCL RDMA Plugin v8";
};

// `nodes` x 8 ranks, each rank printing the lines NCCL_DEBUG=INFO prints at init: version,
// plugin, network, HCAs, NVLS, its channel connections; rank 0 the TUNING lines. Lines of
// different ranks interleave, as in a real log.
std::string JobLog(int nodes, const std::vector<Oddity>& odd) {
  std::string out;
  for (int step = 0; step < 6; ++step) {
    for (int node = 0; node < nodes; ++node) {
      Oddity o;
      for (const Oddity& x : odd) {
        if (x.node == node) o = x;
      }
      for (int local = 0; local < 8; ++local) {
        const int rank = node * 8 + local;
        const std::string who = fmt::format("[1,{}]<stdout>:gpu-{:03}:{}:{} [{}] NCCL INFO ", rank,
                                            node, 5000 + local, 5100 + local, local);
        switch (step) {
          case 0:
            if (local == 0) out += who + "NCCL version 2.21.5+cuda12.4\n";
            break;
          case 1:
            out += who + "NET/Plugin: Loaded net plugin " + o.plugin + " (v8)\n";
            break;
          case 2:
            out += who + (o.socket ? "NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
                                   : "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB "
                                     "[3]mlx5_3:1/IB ; OOB eth0:10.0.0.1<0>\n");
            out += who + (o.socket ? "Using network Socket\n" : "Using network IB\n");
            break;
          case 3:
            out += who + fmt::format("NVLS multicast support is available on dev {}\n", local);
            break;
          case 4:
            out += who + fmt::format("Channel 00/0 : {}[{}] -> {}[{}] via P2P/CUMEM/read\n", rank,
                                     local, rank + 1, local + 1);
            if (local == 7) {
              const std::string net =
                  o.socket ? "NET/Socket/0" : (o.no_gdr ? "NET/IB/0" : "NET/IB/0/GDRDMA");
              out += who + fmt::format("Channel 00/0 : {}[7] -> {}[0] [send] via {}\n", rank,
                                       (rank + 1) % (nodes * 8), net);
            }
            break;
          default:
            if (rank == 0) {
              out += who + "AllReduce: 1048576 Bytes -> Algo 1 proto 2 time 33.904999\n";
              out += who + "AllReduce: 8 Bytes -> Algo 1 proto 0 time 12.100000\n";
            }
            break;
        }
      }
    }
  }
  return out;
}

TEST(NcclNodes, AHealthyJobAgrees) {
  const NcclNodeComparison c = CompareNcclNodes(JobLog(16, {}), "job.log");
  EXPECT_EQ(c.nodes.size(), 16u);
  EXPECT_TRUE(c.differences.empty()) << RenderNcclNodes(c);
  EXPECT_EQ(c.majority.at("transport"), "NET/IB/GDRDMA; P2P/CUMEM/read");
  EXPECT_EQ(c.majority.at("hca"), "NET/IB mlx5_0:1/IB mlx5_1:1/IB mlx5_2:1/IB mlx5_3:1/IB");
  EXPECT_EQ(c.majority.at("version"), "2.21.5+cuda12.4");
  EXPECT_EQ(c.majority.at("nvls"), "NVLS available");
  // Only rank 0 prints TUNING: one node has it, and nobody is compared on it.
  EXPECT_EQ(c.majority.at("tuning"),
            "AllReduce: 1048576 Bytes -> Algo 1 proto 2; AllReduce: 8 Bytes -> Algo 1 proto 0");
  EXPECT_TRUE(Has(RenderNcclNodes(c), "every node agrees with the majority"));
}

TEST(NcclNodes, NamesTheNodesThatDifferWithTheirLines) {
  const std::string log = JobLog(16, {{3, true, false, "NCCL RDMA Plugin v8"},
                                      {7, false, true, "NCCL RDMA Plugin v8"},
                                      {11, false, false, "NCCL RDMA Plugin v7"}});
  const NcclNodeComparison c = CompareNcclNodes(log, "job.log");
  const std::string text = RenderNcclNodes(c);
  // GDR off on gpu-003.
  bool gdr = false, socket = false, plugin = false;
  for (const NcclNodeDifference& d : c.differences) {
    if (d.host == "gpu-003" && d.aspect == "transport") {
      gdr = true;
      EXPECT_EQ(d.value, "NET/IB; P2P/CUMEM/read");
      EXPECT_EQ(d.majority_nodes, 14u);  // gpu-007 uses sockets, gpu-003 no GDR
      ASSERT_EQ(d.lines.size(), 1u);
      EXPECT_TRUE(Has(d.lines[0],
                      "gpu-003:5007:5107 [7] NCCL INFO Channel 00/0 : 31[7] -> 32[0] "
                      "[send] via NET/IB/0"))
          << d.lines[0];
      EXPECT_TRUE(d.lines[0].starts_with("job.log:")) << d.lines[0];
    }
    if (d.host == "gpu-007" && d.aspect == "hca") {
      socket = true;
      EXPECT_EQ(d.value, "NET/Socket eth0:10.0.0.1<0>");
    }
    if (d.host == "gpu-011" && d.aspect == "plugin") {
      plugin = true;
      EXPECT_TRUE(Has(d.value, "NCCL RDMA Plugin v7")) << d.value;
    }
    EXPECT_TRUE(d.host == "gpu-003" || d.host == "gpu-007" || d.host == "gpu-011") << text;
  }
  EXPECT_TRUE(gdr && socket && plugin) << text;
  EXPECT_TRUE(Has(text,
                  "DIFFERS  gpu-003  transport: NET/IB; P2P/CUMEM/read (most nodes, 14 of "
                  "16: NET/IB/GDRDMA; P2P/CUMEM/read)"))
      << text;
}

TEST(NcclNodes, TheDoctorsLogCheckCarriesTheComparison) {
  std::istringstream in(JobLog(4, {{2, true, false, "NCCL RDMA Plugin v8"}}));
  const doctor::NcclLog log = doctor::ParseNcclLog(in, "job.log");
  ASSERT_EQ(log.node_comparison.nodes.size(), 4u);
  ASSERT_EQ(log.node_comparison.differences.size(), 1u);
  EXPECT_EQ(log.node_comparison.differences[0].host, "gpu-002");
  EXPECT_EQ(log.node_comparison.differences[0].aspect, "transport");
}

TEST(NcclNodes, DoctorNamesTheNodeInAWarnWithItsLines) {
  using doctor::DoctorOptions;
  using doctor::NodeReport;
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("fabricscope-i14-nccl-nodes-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir / "root");
  const std::filesystem::path path = dir / "job.log";
  std::ofstream(path) << JobLog(4, {{2, true, false, "NCCL RDMA Plugin v8"}});
  DoctorOptions options;
  options.root = (dir / "root").string();
  options.checks = {"nccl_log"};
  options.nccl_log = path.string();
  const NodeReport report = RunDoctor(options);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(report.checks.size(), 1u);
  const Finding* differs = nullptr;
  for (const Finding& f : report.checks[0].findings) {
    if (Has(f.what, "node gpu-002 differs")) differs = &f;
  }
  ASSERT_NE(differs, nullptr);
  EXPECT_EQ(differs->severity, Severity::kWarn);
  EXPECT_EQ(differs->source, "nccl_log");
  EXPECT_EQ(differs->what,
            "node gpu-002 differs from most nodes (3 of 4) in transport: NET/IB; P2P/CUMEM/read "
            "(most: NET/IB/GDRDMA; P2P/CUMEM/read)");
  ASSERT_EQ(differs->evidence.size(), 1u);
  EXPECT_TRUE(Has(differs->evidence[0],
                  "gpu-002:5007:5107 [7] NCCL INFO Channel 00/0 : 23[7] -> "
                  "24[0] [send] via NET/IB/0"))
      << differs->evidence[0];
}

TEST(NcclNodes, LinesWithoutAHostAreNotNodes) {
  const NcclNodeComparison c =
      CompareNcclNodes("NCCL INFO Using network IB\nsomething else\n", "x.log");
  EXPECT_TRUE(c.nodes.empty());
  EXPECT_TRUE(c.differences.empty());
}

}  // namespace
}  // namespace fabricscope
