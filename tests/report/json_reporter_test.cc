// The JSON document: nccl-tests -J version 3 keys and types, fabricscope's additions, and
// the file reporter's rewrite-after-every-row contract.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/report.h"
#include "fabricscope/result.h"
#include "test_run.h"

namespace fabricscope {
namespace {

using nlohmann::json;
using testing::Drive;
using testing::Half;
using testing::MakeRow;
using testing::MakeRun;

json Parse(const std::string& text) { return json::parse(text); }

std::vector<std::string> KeysOf(const nlohmann::ordered_json& object) {
  std::vector<std::string> keys;
  for (const auto& item : object.items()) keys.push_back(item.key());
  return keys;
}

void ExpectQuotedBool(const json& value, const std::string& where) {
  ASSERT_TRUE(value.is_string()) << where << " is " << value.dump();
  EXPECT_TRUE(value == "true" || value == "false") << where << " is " << value.dump();
}

void ExpectPlacement(const json& half, const std::string& where) {
  ASSERT_TRUE(half.is_object()) << where;
  EXPECT_TRUE(half.at("time").is_number()) << where;
  EXPECT_TRUE(half.at("alg_bw").is_number()) << where;
  EXPECT_TRUE(half.at("bus_bw").is_number()) << where;
  EXPECT_TRUE(half.at("nwrong").is_number() || half.at("nwrong").is_null()) << where;
  const json& ranks = half.at("rank_times");
  for (const char* key : {"min_us", "avg_us", "max_us"}) {
    EXPECT_TRUE(ranks.at(key).is_number()) << where << "." << key;
  }
  EXPECT_TRUE(ranks.at("min_rank").is_number_integer()) << where;
  EXPECT_TRUE(ranks.at("max_rank").is_number_integer()) << where;
  EXPECT_TRUE(ranks.at("per_rank_us").is_array()) << where;
}

TEST(JsonReporter, NcclTestsSchema) {
  RunResult run = MakeRun();
  run.end_time = "2025-01-02T03:05:00Z";
  const json doc = Parse(ToJson(run));

  EXPECT_EQ(doc.at("version"), 3);
  EXPECT_EQ(doc.at("start_time"), "2025-01-02T03:04:05Z");
  EXPECT_EQ(doc.at("end_time"), "2025-01-02T03:05:00Z");
  ASSERT_TRUE(doc.at("args").is_array());
  EXPECT_EQ(doc.at("args")[0], "all_reduce_perf");
  ASSERT_TRUE(doc.at("env").is_array());
  EXPECT_EQ(doc.at("env")[0], "NCCL_TESTS_MIN_BW=");
  EXPECT_TRUE(doc.at("nccl_version").is_null());
  ASSERT_TRUE(doc.at("errors").is_array());
  EXPECT_TRUE(doc.at("errors").empty());

  const json& config = doc.at("config");
  for (const char* key :
       {"nthreads", "ngpus", "minimum_bytes", "maximum_bytes", "step_factor", "warmup_iters",
        "iterations", "aggregated_iterations", "validation", "graph", "per_iter_skip"}) {
    EXPECT_TRUE(config.at(key).is_number_integer()) << key;
  }
  EXPECT_FALSE(config.contains("step_bytes"));  // one or the other, as nccl-tests
  EXPECT_EQ(config.at("nthreads"), 2);
  EXPECT_EQ(config.at("minimum_bytes"), 1024);
  EXPECT_EQ(config.at("step_factor"), 2);
  for (const char* key : {"blocking_collectives", "per_iter_timing", "parallel_init"}) {
    ExpectQuotedBool(config.at(key), key);
  }
  EXPECT_EQ(config.at("blocking_collectives"), "false");

  const json& devices = config.at("devices");
  ASSERT_EQ(devices.size(), 2u);
  for (const json& device : devices) {
    for (const char* key : {"rank", "group", "pid", "device"}) {
      EXPECT_TRUE(device.at(key).is_number_integer()) << key;
    }
    for (const char* key : {"hostname", "device_hex", "device_info"}) {
      EXPECT_TRUE(device.at(key).is_string()) << key;
    }
  }
  EXPECT_EQ(devices[1].at("rank"), 1);
  EXPECT_EQ(devices[1].at("hostname"), "node1");
  EXPECT_EQ(devices[1].at("device_hex"), "host");
  EXPECT_EQ(devices[1].at("device_info"), "host memory (Xeon)");

  const json& results = doc.at("results");
  ASSERT_EQ(results.size(), 2u);
  for (const json& row : results) {
    EXPECT_TRUE(row.at("size").is_number_integer());
    EXPECT_TRUE(row.at("count").is_number_integer());
    EXPECT_TRUE(row.at("type").is_string());
    EXPECT_TRUE(row.at("redop").is_string());
    EXPECT_TRUE(row.at("root").is_string());
    EXPECT_TRUE(row.at("actual_iterations").is_number_integer());
    EXPECT_TRUE(row.at("experiment_name").is_string());
    EXPECT_TRUE(row.at("collective").is_string());
    ExpectPlacement(row.at("out_of_place"), "out_of_place");
    ExpectPlacement(row.at("in_place"), "in_place");
  }
  const json& first = results[0];
  EXPECT_EQ(first.at("size"), 1024);
  EXPECT_EQ(first.at("count"), 256);
  EXPECT_EQ(first.at("type"), "float");
  EXPECT_EQ(first.at("redop"), "sum");
  EXPECT_EQ(first.at("root"), "    -1");  // nccl-tests' "%6i" text
  EXPECT_EQ(first.at("actual_iterations"), 20);
  EXPECT_EQ(first.at("collective"), "all_reduce");
  EXPECT_DOUBLE_EQ(first.at("out_of_place").at("time").get<double>(), 28.391);
  EXPECT_DOUBLE_EQ(first.at("out_of_place").at("bus_bw").get<double>(), 1.5);
  EXPECT_EQ(first.at("out_of_place").at("nwrong"), 0);
  EXPECT_EQ(results[1].at("out_of_place").at("nwrong"), 2);
  const json& rank_times = first.at("out_of_place").at("rank_times");
  EXPECT_EQ(rank_times.at("min_rank"), 1);
  EXPECT_EQ(rank_times.at("max_rank"), 0);
  EXPECT_EQ(rank_times.at("per_rank_us"), json::array({29.25, 27.5}));
  EXPECT_FALSE(first.contains("out_of_place_per_iter"));
  EXPECT_FALSE(first.at("out_of_place").contains("cpu_time"));
  EXPECT_FALSE(first.contains("timestamp"));

  const json& bounds = doc.at("out_of_bounds");
  EXPECT_EQ(bounds.at("count"), 1);
  EXPECT_EQ(bounds.at("okay"), "false");
  const json& average = doc.at("average_bus_bandwidth");
  EXPECT_DOUBLE_EQ(average.at("bandwidth").get<double>(), 2.8125);
  EXPECT_EQ(average.at("okay"), "unchecked");  // no NCCL_TESTS_MIN_BW
}

TEST(JsonReporter, FabricscopeFields) {
  const json doc = Parse(ToJson(MakeRun()));
  EXPECT_EQ(doc.at("tool"), "fabricscope");
  EXPECT_EQ(doc.at("fabricscope_version"), "0.1.0");
  EXPECT_EQ(doc.at("backend"), "gloo");
  EXPECT_EQ(doc.at("backend_version"), "0.5.0");
  EXPECT_EQ(doc.at("nranks"), 2);
  EXPECT_TRUE(doc.at("notes").is_array());
  const json& tests = doc.at("tests");
  ASSERT_EQ(tests.size(), 1u);
  EXPECT_EQ(tests[0].at("collective"), "all_reduce");
  EXPECT_EQ(tests[0].at("rows"), 2);
  EXPECT_EQ(tests[0].at("out_of_bounds").at("count"), 1);
  EXPECT_EQ(tests[0].at("out_of_bounds").at("okay"), "false");
  EXPECT_DOUBLE_EQ(tests[0].at("average_bus_bandwidth").at("bandwidth").get<double>(), 2.8125);
  EXPECT_EQ(tests[0].at("okay"), false);  // fabricscope's own verdict is a real boolean
}

TEST(JsonReporter, KeysKeepNcclTestsOrder) {
  const nlohmann::ordered_json doc = nlohmann::ordered_json::parse(ToJson(MakeRun()));
  const std::vector<std::string> nccl_order = {"version", "start_time",    "args",
                                               "env",     "nccl_version",  "config",
                                               "results", "out_of_bounds", "average_bus_bandwidth",
                                               "errors",  "end_time"};
  std::vector<std::string> seen;
  for (const std::string& key : KeysOf(doc)) {
    if (std::find(nccl_order.begin(), nccl_order.end(), key) != nccl_order.end()) {
      seen.push_back(key);
    }
  }
  EXPECT_EQ(seen, nccl_order);
  EXPECT_EQ(
      KeysOf(doc.at("results")[0]),
      (std::vector<std::string>{"size", "count", "type", "redop", "root", "out_of_place",
                                "in_place", "actual_iterations", "experiment_name", "collective"}));
  EXPECT_EQ(KeysOf(doc.at("results")[0].at("out_of_place")),
            (std::vector<std::string>{"time", "alg_bw", "bus_bw", "nwrong", "rank_times"}));
}

TEST(JsonReporter, UncheckedIsNullAndMissingHalfIsNull) {
  RunResult run = MakeRun();
  run.config.check = 0;
  run.rows[0].out_of_place->wrong.reset();
  run.rows[1].in_place.reset();
  const json doc = Parse(ToJson(run));
  EXPECT_TRUE(doc.at("results")[0].at("out_of_place").at("nwrong").is_null());
  EXPECT_TRUE(doc.at("results")[1].at("in_place").is_null());
}

TEST(JsonReporter, OptionalFields) {
  RunResult run = MakeRun();
  run.config.step_factor = 1;
  run.config.per_iter_timing = 1;
  run.config.min_bw = 2.0;
  run.rows[0].timestamp = "2025-01-02 03:04:05";
  IterationStats stats{1.0, 2.0, 1.9, 5.5};
  stats.skipped_iterations = 1;
  stats.avg_us = 1.5;
  stats.p50_us = 1.4;
  stats.p95_us = 1.8;
  stats.stdev_us = 0.25;
  stats.times_us = {3.0, 1.0, 2.0};
  stats.per_process_max_times_us = {{3.0, 1.0, 1.5}, {2.5, 0.5, 2.0}};
  run.rows[0].in_place->iterations = stats;
  run.config.report_cputime = 1;
  run.start_time.clear();
  const json doc = Parse(ToJson(run));
  EXPECT_EQ(doc.at("config").at("step_bytes"), 1048576);
  EXPECT_FALSE(doc.at("config").contains("step_factor"));
  EXPECT_EQ(doc.at("config").at("per_iter_timing"), "true");
  EXPECT_TRUE(doc.at("start_time").is_null());
  EXPECT_TRUE(doc.at("end_time").is_null());  // the run is not over: it has passed nothing yet
  EXPECT_EQ(doc.at("complete"), false);
  EXPECT_EQ(doc.at("average_bus_bandwidth").at("okay"), "false");
  run.end_time = "2025-01-02T03:05:00Z";
  const json ended = Parse(ToJson(run));
  EXPECT_EQ(ended.at("complete"), true);
  EXPECT_FALSE(ended.contains("incomplete"));
  EXPECT_EQ(ended.at("average_bus_bandwidth").at("okay"), "true");  // 2.8125 >= 1.8
  const json& row = doc.at("results")[0];
  EXPECT_EQ(row.at("timestamp"), "2025-01-02 03:04:05");
  // -I's object sits beside its placement, with nccl-tests' keys in its order
  // (writePerIterReport, src/util.cu:570-601 at 2.19.6); -C names the time "cpu_time".
  EXPECT_TRUE(row.at("in_place").contains("cpu_time"));
  EXPECT_FALSE(row.at("in_place").contains("time"));
  EXPECT_FALSE(row.contains("out_of_place_per_iter"));
  const json& per_iter = row.at("in_place_per_iter");
  const nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(ToJson(run));
  const nlohmann::ordered_json& ordered_row = ordered.at("results")[0];
  EXPECT_EQ(KeysOf(ordered_row.at("in_place_per_iter")),
            (std::vector<std::string>{"skipped_iterations", "min_us", "max_us", "avg_us", "p50_us",
                                      "p95_us", "p99_us", "stdev_us", "cv_pct", "times_us",
                                      "per_process_max_times_us"}));
  EXPECT_EQ(per_iter.at("skipped_iterations"), 1);
  EXPECT_EQ(per_iter.at("p95_us"), 1.8);
  EXPECT_EQ(per_iter.at("cv_pct"), 5.5);
  EXPECT_EQ(per_iter.at("times_us"), json::array({3.0, 1.0, 2.0}));
  EXPECT_EQ(per_iter.at("per_process_max_times_us")[1], json::array({2.5, 0.5, 2.0}));
  const std::vector<std::string> row_keys = KeysOf(ordered_row);
  const auto in_place = std::find(row_keys.begin(), row_keys.end(), "in_place");
  ASSERT_NE(in_place, row_keys.end());
  ASSERT_NE(in_place + 1, row_keys.end());
  EXPECT_EQ(*(in_place + 1), "in_place_per_iter");
}

TEST(JsonReporter, SeveralCollectives) {
  RunResult run = MakeRun();
  run.rows.push_back(
      MakeRow(1024, 128, Half(10, 0.1, 7.0, 0), Half(10, 0.1, 9.0, 0), "all_gather"));
  run.errors = {"rank 1: connection reset"};
  const json doc = Parse(ToJson(run));
  // Top level: every row of the run.
  EXPECT_EQ(doc.at("results").size(), 3u);
  EXPECT_DOUBLE_EQ(doc.at("average_bus_bandwidth").at("bandwidth").get<double>(),
                   (1.5 + 2.25 + 3 + 4.5 + 7 + 9) / 6);
  EXPECT_EQ(doc.at("out_of_bounds").at("count"), 1);
  // tests[]: each collective's own trailer.
  const json& tests = doc.at("tests");
  ASSERT_EQ(tests.size(), 2u);
  EXPECT_EQ(tests[1].at("collective"), "all_gather");
  EXPECT_DOUBLE_EQ(tests[1].at("average_bus_bandwidth").at("bandwidth").get<double>(), 8.0);
  // The run ended with an error: no test of it passed, whatever its rows say.
  EXPECT_EQ(tests[1].at("out_of_bounds").at("okay"), "false");
  EXPECT_EQ(tests[1].at("okay"), false);
  EXPECT_EQ(doc.at("errors"), json::array({"rank 1: connection reset"}));
  EXPECT_EQ(doc.at("complete"), false);
  EXPECT_EQ(doc.at("incomplete"), "the run ended early: rank 1: connection reset");
}

TEST(JsonReporter, InvalidUtf8DoesNotLoseTheDocument) {
  RunResult run = MakeRun();
  run.ranks[0].hostname =
      "bad\xff"
      "host";
  EXPECT_NO_THROW(Parse(ToJson(run)));
}

TEST(JsonReporter, StreamWritesOnceAtEnd) {
  std::ostringstream out;
  auto reporter = MakeReporter("json", out);
  RunResult run = MakeRun();
  reporter->Begin(run);
  reporter->Row(run, run.rows[0]);
  EXPECT_EQ(out.str(), "");
  reporter->End(run);
  const json doc = Parse(out.str());
  EXPECT_EQ(doc.at("results").size(), 2u);
}

// A fresh directory per test under the system temp directory.
class JsonFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("fabricscope-json-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "results.json").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static json ReadFile(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return json::parse(text.str());
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(JsonFileTest, RewrittenAfterEveryRow) {
  auto reporter = MakeJsonFileReporter(path_);
  RunResult full = MakeRun();
  RunResult live = full;
  live.rows.clear();
  reporter->Begin(live);
  EXPECT_EQ(ReadFile(path_).at("results").size(), 0u);
  reporter->BeginTest(live, "all_reduce");
  for (size_t i = 0; i < full.rows.size(); ++i) {
    live.rows.push_back(full.rows[i]);
    reporter->Row(live, live.rows.back());
    const json doc = ReadFile(path_);
    EXPECT_EQ(doc.at("results").size(), i + 1);
    EXPECT_TRUE(doc.at("end_time").is_null());  // still running
  }
  reporter->EndTest(live, SummarizeCollective(live, "all_reduce"));
  live.end_time = "2025-01-02T03:05:00Z";
  reporter->End(live);
  const json doc = ReadFile(path_);
  EXPECT_EQ(doc.at("end_time"), "2025-01-02T03:05:00Z");
  EXPECT_EQ(doc.at("results").size(), 2u);
  EXPECT_FALSE(std::filesystem::exists(path_ + ".tmp"));
}

TEST_F(JsonFileTest, ReplacesAnExistingFile) {
  { std::ofstream(path_) << "old contents"; }
  auto reporter = MakeJsonFileReporter(path_);
  Drive(*reporter, MakeRun());
  EXPECT_EQ(ReadFile(path_).at("version"), 3);
}

TEST_F(JsonFileTest, NothingWrittenBeforeBegin) {
  auto reporter = MakeJsonFileReporter(path_);
  EXPECT_FALSE(std::filesystem::exists(path_));
  EXPECT_FALSE(std::filesystem::exists(path_ + ".tmp"));
}

TEST_F(JsonFileTest, DirectoryPathIsRefused) {
  EXPECT_THROW(MakeJsonFileReporter(dir_.string()), SystemError);
}

TEST(JsonFileReporter, UnwritablePathThrowsAClearSystemError) {
  try {
    MakeJsonFileReporter("/nonexistent-dir/x.json");
    FAIL() << "no exception";
  } catch (const SystemError& error) {
    EXPECT_STREQ(error.what(),
                 "cannot write JSON results to '/nonexistent-dir/x.json': No such file or "
                 "directory; check the directory exists and is writable");
    EXPECT_EQ(error.code(), ErrorCode::kSystem);
  }
}

}  // namespace
}  // namespace fabricscope
