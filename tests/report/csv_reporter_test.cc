// The CSV reporter: header, one line per (size, placement), streamed.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "fabricscope/report.h"
#include "fabricscope/result.h"
#include "test_run.h"

namespace fabricscope {
namespace {

using testing::Drive;
using testing::Half;
using testing::Lines;
using testing::MakeRow;
using testing::MakeRun;

constexpr char kHeader[] =
    "collective,size,count,type,redop,root,placement,time_us,algbw_gbps,busbw_gbps,wrong,"
    "time_min_us,time_max_us,slowest_rank,timestamp";

TEST(CsvReporter, HeaderAndOneLinePerPlacement) {
  std::ostringstream out;
  auto reporter = MakeReporter("csv", out);
  Drive(*reporter, MakeRun());
  const std::vector<std::string> expected = {
      kHeader,
      "all_reduce,1024,256,float,sum,-1,out_of_place,28.391,0.0361,1.5,0,27.5,29.25,0,",
      "all_reduce,1024,256,float,sum,-1,in_place,116.2,0.00881,2.25,0,,,,",
      "all_reduce,2048,512,float,sum,-1,out_of_place,12416.4,0.166,3,2,,,,",
      "all_reduce,2048,512,float,sum,-1,in_place,1234567.8,1000.56,4.5,0,,,,",
  };
  EXPECT_EQ(Lines(out.str()), expected);
}

TEST(CsvReporter, EveryLineHasEveryColumn) {
  std::ostringstream out;
  auto reporter = MakeReporter("csv", out);
  Drive(*reporter, MakeRun());
  for (const std::string& line : Lines(out.str())) {
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), 14) << line;
  }
}

TEST(CsvReporter, StreamsRowsAsTheyCome) {
  std::ostringstream out;
  auto reporter = MakeReporter("csv", out);
  RunResult run = MakeRun();
  RunResult live = run;
  live.rows.clear();
  reporter->Begin(live);
  EXPECT_EQ(Lines(out.str()).size(), 1u);
  reporter->BeginTest(live, "all_reduce");
  live.rows.push_back(run.rows[0]);
  reporter->Row(live, live.rows.back());
  EXPECT_EQ(Lines(out.str()).size(), 3u);  // no waiting for the end of the run
}

TEST(CsvReporter, UncheckedMissingHalfTimestampAndQuoting) {
  RunResult run;
  ResultRow row =
      MakeRow(8, 2, std::nullopt, Half(1.25, 0.0064, 0.0064, std::nullopt), "send,recv");
  row.type = "say \"hi\"";
  row.root = 3;
  row.timestamp = "2025-01-02 03:04:05";
  run.rows.push_back(row);
  std::ostringstream out;
  auto reporter = MakeReporter("csv", out);
  Drive(*reporter, run);
  const std::vector<std::string> expected = {
      kHeader,
      "\"send,recv\",8,2,\"say \"\"hi\"\"\",sum,3,in_place,1.25,0.0064,0.0064,,,,,"
      "2025-01-02 03:04:05",
  };
  EXPECT_EQ(Lines(out.str()), expected);
}

TEST(CsvReporter, FullPrecision) {
  RunResult run;
  run.rows.push_back(MakeRow(8, 2, Half(1.0 / 3.0, 1e-9, 123456789.125, 0), std::nullopt));
  std::ostringstream out;
  auto reporter = MakeReporter("csv", out);
  Drive(*reporter, run);
  EXPECT_EQ(
      Lines(out.str())[1],
      "all_reduce,8,2,float,sum,-1,out_of_place,0.3333333333333333,1e-09,123456789.125,0,,,,");
}

}  // namespace
}  // namespace fabricscope
