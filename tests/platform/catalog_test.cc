#include <gtest/gtest.h>

#include <set>

#include "fabricscope/error.h"
#include "fabricscope/platform.h"

namespace fabricscope {
namespace {

constexpr size_t kGiB = size_t{1} << 30;

TEST(CatalogTest, ShipsEveryPlatformTheIssueNames) {
  const Catalog catalog = Catalog::Builtin();
  for (const char* name : {"a3-highgpu-8g", "a3-edgegpu-8g", "a3-megagpu-8g", "a3-ultragpu-8g",
                           "a4-highgpu-8g", "p4d", "p5", "p5en", "p6-b200", "ND A100 v4",
                           "ND H100 v5", "ND H200 v5", "DGX H100", "DGX H200", "DGX B200"}) {
    EXPECT_NE(catalog.Find(name), nullptr) << name;
  }
  EXPECT_EQ(catalog.platforms().size(), 15u);
}

TEST(CatalogTest, EveryFigureHasASourceAndSaneUnits) {
  const Catalog catalog = Catalog::Builtin();
  for (const Platform& p : catalog.platforms()) {
    SCOPED_TRACE(p.name);
    EXPECT_FALSE(p.intra_node_source.empty());
    EXPECT_GT(p.NicTotalGBs(), 0);
    EXPECT_EQ(p.gpus_per_node, 8);
    if (p.latency_floor_us) {
      EXPECT_FALSE(p.latency_source.empty());
    }
    std::set<std::string> collectives;
    for (const Expectation& e : p.expected) {
      EXPECT_FALSE(e.source.empty());
      EXPECT_GT(e.low_busbw, 0);
      EXPECT_LE(e.low_busbw, e.typical_busbw);
      // A healthy 2+-node ring cannot beat the node's NIC total; only Tree/NVLS figures can.
      if (e.nodes_min >= 2 && e.algorithm == "Ring") {
        EXPECT_LE(e.typical_busbw, p.NicTotalGBs() * 1.001) << e.collective;
      }
      collectives.insert(e.collective);
    }
    EXPECT_TRUE(collectives.count("all_reduce")) << "every platform judges all_reduce";
    for (const PublishedPoint& point : p.published) EXPECT_FALSE(point.source.empty());
  }
}

TEST(CatalogTest, LineRatesMatchThePlatformsReference) {
  const Catalog catalog = Catalog::Builtin();
  EXPECT_DOUBLE_EQ(catalog.Get("a3-highgpu-8g").NicTotalGBs(), 100);   // 4 x 200 Gb/s
  EXPECT_DOUBLE_EQ(catalog.Get("a3-megagpu-8g").NicTotalGBs(), 200);   // 8 x 200 Gb/s
  EXPECT_DOUBLE_EQ(catalog.Get("a3-ultragpu-8g").NicTotalGBs(), 400);  // 8 x 400 Gb/s
  EXPECT_DOUBLE_EQ(catalog.Get("p4d").NicTotalGBs(), 50);              // 4 x 100 Gb/s
  EXPECT_DOUBLE_EQ(catalog.Get("p5").NicTotalGBs(), 400);              // 32 x 100 Gb/s
  EXPECT_EQ(catalog.Get("a3-highgpu-8g").transport, "TCPX");
  EXPECT_EQ(catalog.Get("a3-megagpu-8g").transport, "TCPXO");
  EXPECT_EQ(catalog.Get("dgx-h100").transport, "IB");
}

TEST(CatalogTest, PublishedFigureWinsOverDerivedAndBandsFollowNodesAndSize) {
  const Catalog catalog = Catalog::Builtin();
  const Platform& ultra = catalog.Get("a3-ultragpu-8g");
  const auto ag = ultra.ExpectationFor("all_gather", 2, 8 * kGiB);
  ASSERT_TRUE(ag);
  EXPECT_EQ(ag->basis, "published");
  EXPECT_DOUBLE_EQ(ag->typical_busbw, 325.7);
  const auto one_node = ultra.ExpectationFor("all_gather", 1, 8 * kGiB);
  ASSERT_TRUE(one_node);
  EXPECT_EQ(one_node->nodes_min, 1);
  EXPECT_FALSE(ultra.ExpectationFor("all_gather", 2, 1 << 20)) << "no band for small sizes";
  EXPECT_FALSE(ultra.ExpectationFor("alltoall", 2, 8 * kGiB));
}

TEST(CatalogTest, UnknownNameListsTheKnownOnes) {
  try {
    Catalog::Builtin().Get("a9-imaginary");
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("unknown platform 'a9-imaginary'"), std::string::npos);
    EXPECT_NE(what.find("gcp-a3-ultragpu-8g"), std::string::npos);
    EXPECT_NE(what.find("dgx-b200"), std::string::npos);
  }
}

TEST(CatalogTest, BadDocumentsNameTheFileAndField) {
  auto error_of = [](const std::string& text) {
    try {
      Catalog::ParsePlatform(text, "x.json");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("{").find("x.json: not valid JSON"), std::string::npos);
  EXPECT_NE(error_of("{}").find("field 'name' is missing"), std::string::npos);
  const std::string base =
      R"({"name":"n","gpu":{"model":"g","per_node":8,"intra_node_ring_busbw":100,)"
      R"("intra_node_source":"s"},"network":{"nics":2,"nic_rate_gbps":100,"transport":)";
  EXPECT_EQ(error_of(base + R"("IB"}})"), "no error");
  EXPECT_NE(error_of(base + R"("Carrier pigeon"}})").find("network.transport"), std::string::npos);
  EXPECT_NE(
      error_of(base + R"("IB"},"expected":[{"collective":"all_reduce","nodes_min":2,)"
                      R"("typical_busbw":"fast","low_busbw":1,"basis":"derived","source":"s"}]})")
          .find("expected[0].typical_busbw' has the wrong type"),
      std::string::npos);
  EXPECT_NE(error_of(base + R"("IB"},"expected":[{"collective":"all_reduce","nodes_min":2,)"
                            R"("typical_busbw":10,"low_busbw":1,"basis":"derived","source":""}]})")
                .find("every figure needs its source"),
            std::string::npos);
}

TEST(CatalogTest, DuplicateNamesAreRefused) {
  Catalog catalog = Catalog::Builtin();
  Platform copy = catalog.Get("p5");
  copy.name = "another";
  EXPECT_THROW(catalog.Add(copy), UsageError);  // its alias p5.48xlarge is taken
}

TEST(CatalogTest, GenericPlatformFromFigures) {
  GenericPlatformOptions o;
  o.gpus_per_node = 8;
  o.intra_node_busbw = 370;
  o.nics = 8;
  o.nic_rate_gbps = 400;
  const Platform p = GenericPlatform(o);
  EXPECT_DOUBLE_EQ(p.NicTotalGBs(), 400);
  const auto two = p.ExpectationFor("all_reduce", 2, 4 * kGiB);
  ASSERT_TRUE(two);
  EXPECT_DOUBLE_EQ(two->typical_busbw, 360);  // min(370, 400 x 0.9)
  o.nics = 2;
  o.nic_rate_gbps = 100;
  EXPECT_DOUBLE_EQ(GenericPlatform(o).ExpectationFor("all_gather", 4, kGiB)->typical_busbw,
                   22.5);  // NIC-bound: 25 GB/s x 0.9
  o.nics = 0;
  EXPECT_THROW(GenericPlatform(o), UsageError);
  o.nics = 8;
  o.ring_efficiency = 1.5;
  EXPECT_THROW(GenericPlatform(o), UsageError);
}

}  // namespace
}  // namespace fabricscope
