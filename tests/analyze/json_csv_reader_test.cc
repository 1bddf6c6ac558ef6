// The JSON and CSV readers: nccl-tests -J as nccl-tests writes it, fabricscope's own JSON and
// CSV through its own reporters, rccl-tests -Z json and csv, and broken files.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>

#include "fabricscope/parse.h"
#include "fabricscope/report.h"

namespace fabricscope {
namespace {

std::string Dump(const ParsedResults& parsed) {
  std::string text;
  for (const Diagnostic& d : parsed.diagnostics) text += d.ToString() + "\n";
  return text;
}

// As nccl-tests 2.19 writes it: "%lf" numbers, booleans as strings, root as "%6i" text,
// nwrong a double, NaN as "nan", and -C's "cpu_time".
const char* kNcclTestsJson = R"({"version":3,"start_time":"2025-01-02 03:04:05",
"args":["./build/all_reduce_perf","-b","8","-e","16","-f","2","-g","2"],
"env":["HOME=/root","NCCL_IB_HCA=mlx5_0","PATH=/bin"],"nccl_version":22809,
"config":{"nthreads":1,"ngpus":2,"minimum_bytes":8,"maximum_bytes":16,"step_factor":2,
"warmup_iters":1,"iterations":20,"aggregated_iterations":1,"validation":1,"graph":0,
"blocking_collectives":"false","per_iter_timing":"false","parallel_init":"true",
"devices":[{"rank":0,"group":0,"pid":7774,"hostname":"h0","device":0,"device_hex":"0000:8f:00","device_info":"NVIDIA H200"},
{"rank":1,"group":0,"pid":7774,"hostname":"h0","device":1,"device_hex":"0000:90:00","device_info":"NVIDIA H200"}]},
"results":[
{"size":8,"count":2,"type":"float","redop":"sum","root":"    -1",
 "out_of_place":{"time":12.340000,"alg_bw":0.000648,"bus_bw":0.000648,"nwrong":0.000000},
 "in_place":{"cpu_time":11.500000,"alg_bw":0.000696,"bus_bw":"nan","nwrong":null},
 "actual_iterations":20,"experiment_name":""},
{"size":16,"count":4,"type":"float","redop":"sum","root":"    -1",
 "out_of_place":null,
 "in_place":{"time":13.000000,"alg_bw":0.001231,"bus_bw":0.001231,"nwrong":2.000000},
 "in_place_per_iter":{"skipped_iterations":1,"min_us":12.0,"max_us":15.0,"avg_us":13.0,
  "p50_us":12.5,"p95_us":14.5,"p99_us":14.5,"stdev_us":0.42,"cv_pct":3.25,
  "times_us":[20.0,12.0,12.5,15.0],"per_process_max_times_us":[[20.0,12.0,12.5,15.0],[19.0,11.0,12.0,14.0]]},
 "actual_iterations":20,"experiment_name":""}],
"out_of_bounds":{"count":1,"okay":"false"},
"average_bus_bandwidth":{"bandwidth":0.000859,"okay":"unchecked"},
"errors":[""],"end_time":"2025-01-02 03:04:06"}
)";

TEST(JsonReader, NcclTestsJsonAsNcclTestsWritesIt) {
  const ParsedResults parsed = ParseResults(kNcclTestsJson, "nccl.json");
  ASSERT_FALSE(parsed.HasErrors()) << Dump(parsed);
  EXPECT_EQ(parsed.format, "nccl-tests JSON");
  ASSERT_EQ(parsed.runs.size(), 1u);
  const RunResult& run = parsed.runs[0];
  EXPECT_EQ(run.tool, "nccl-tests");
  EXPECT_EQ(run.backend_version, "2.28.9");
  EXPECT_EQ(run.nranks, 2);
  EXPECT_EQ(run.config.ngpus, 2);
  EXPECT_EQ(run.config.parallel_init, 1);
  EXPECT_EQ(run.env, std::vector<std::string>{"NCCL_IB_HCA=mlx5_0"});
  ASSERT_EQ(run.rows.size(), 2u);
  EXPECT_EQ(run.rows[0].collective, "all_reduce");
  EXPECT_EQ(run.rows[0].root, -1);
  EXPECT_EQ(run.rows[0].out_of_place->time_us, 12.34);
  EXPECT_EQ(*run.rows[0].out_of_place->wrong, 0);
  EXPECT_EQ(run.rows[0].in_place->time_us, 11.5);
  EXPECT_TRUE(std::isnan(run.rows[0].in_place->busbw));
  EXPECT_FALSE(run.rows[0].in_place->wrong.has_value());
  EXPECT_FALSE(run.rows[1].out_of_place.has_value());
  EXPECT_EQ(*run.rows[1].in_place->wrong, 2);
  ASSERT_TRUE(run.rows[1].in_place->iterations.has_value());
  EXPECT_EQ(run.rows[1].in_place->iterations->cv_percent, 3.25);
  EXPECT_EQ(run.rows[1].in_place->iterations->skipped_iterations, 1);
  EXPECT_EQ(run.rows[1].in_place->iterations->p50_us, 12.5);
  EXPECT_EQ(run.rows[1].in_place->iterations->times_us.size(), 4u);
  ASSERT_EQ(run.rows[1].in_place->iterations->per_process_max_times_us.size(), 2u);
  EXPECT_EQ(run.rows[1].in_place->iterations->per_process_max_times_us[1][0], 19.0);
  ASSERT_EQ(run.printed.size(), 1u);
  EXPECT_EQ(run.printed[0].avg_busbw, 0.000859);
  EXPECT_EQ(run.printed[0].out_of_bounds, 1);
  EXPECT_EQ(run.printed[0].collective, "all_reduce");
  EXPECT_TRUE(run.errors.empty());
  EXPECT_EQ(run.ranks[1].device_bus_id, "0000:90:00");
}

TEST(JsonReader, CutOffDocumentKeepsTheCompleteResults) {
  std::string text = kNcclTestsJson;
  text = text.substr(0, text.find("\"in_place\":{\"time\":13.0"));
  const ParsedResults parsed = ParseResults(text, "cut.json");
  ASSERT_FALSE(parsed.HasErrors()) << Dump(parsed);
  ASSERT_EQ(parsed.runs.size(), 1u);
  EXPECT_EQ(parsed.runs[0].rows.size(), 1u);
  ASSERT_EQ(parsed.diagnostics.size(), 1u);
  EXPECT_NE(parsed.diagnostics[0].message.find("ends early"), std::string::npos);
  EXPECT_EQ(parsed.diagnostics[0].line, 16u);
}

TEST(JsonReader, SyntaxErrorNamesItsLine) {
  std::string text = kNcclTestsJson;
  text.replace(text.find("\"count\":4,"), 10, "\"count\":4,,");
  const ParsedResults parsed = ParseResults(text, "broken.json");
  ASSERT_TRUE(parsed.HasErrors());
  EXPECT_EQ(parsed.diagnostics[0].line, 14u);
  EXPECT_NE(parsed.diagnostics[0].message.find("not valid JSON"), std::string::npos);
}

// A number beyond a double: an error diagnostic, not an exception out of the reader.
TEST(JsonReader, ANumberBeyondADoubleIsAnError) {
  std::string text = kNcclTestsJson;
  text.replace(text.find("\"count\":4,"), 10, "\"count\":4e999,");
  const ParsedResults parsed = ParseResults(text, "huge.json");
  ASSERT_TRUE(parsed.HasErrors());
  EXPECT_NE(parsed.diagnostics[0].message.find("not valid JSON"), std::string::npos);
  EXPECT_NE(parsed.diagnostics[0].message.find("number overflow"), std::string::npos);
}

TEST(JsonReader, BadResultNamesItsLineAndTheOthersAreRead) {
  std::string text = kNcclTestsJson;
  text.replace(text.find("{\"size\":16,"), 11, "{\"size\":\"big\",");
  const ParsedResults parsed = ParseResults(text, "bad.json");
  ASSERT_TRUE(parsed.HasErrors());
  ASSERT_EQ(parsed.runs.size(), 1u);
  EXPECT_EQ(parsed.runs[0].rows.size(), 1u);
  EXPECT_EQ(parsed.diagnostics[0].line, 14u);
  EXPECT_NE(parsed.diagnostics[0].message.find("results[1]"), std::string::npos);
}

TEST(JsonReader, NotAResultsDocument) {
  const ParsedResults parsed = ParseResults("{\"hello\": 1}", "other.json");
  ASSERT_TRUE(parsed.HasErrors());
  EXPECT_NE(parsed.diagnostics[0].message.find("not a results document"), std::string::npos);
}

RunResult OurRun() {
  RunResult run;
  run.tool = "fabricscope";
  run.version = "0.1.0";
  run.backend = "gloo";
  run.nranks = 2;
  run.config.iters = 20;
  for (int r = 0; r < 2; ++r) {
    RankInfo rank;
    rank.rank = r;
    rank.hostname = "h";
    rank.device = r;
    rank.device_name = "host memory";
    run.ranks.push_back(rank);
  }
  for (const char* collective : {"all_reduce", "all_gather"}) {
    for (size_t size : {1024u, 4096u}) {
      ResultRow row;
      row.collective = collective;
      row.size = size;
      row.count = size / 4 / (collective[4] == 'g' ? 2 : 1);
      row.type = "float";
      row.redop = collective[4] == 'g' ? "none" : "sum";
      row.iterations = 20;
      PlacementResult half;
      half.time_us = 10.125 + static_cast<double>(size) / 1000;
      half.algbw = 0.1 * static_cast<double>(size) / 1024;
      half.busbw = half.algbw * 1.25;
      half.wrong = 0;
      half.ranks = {9.5, 10.125, 11.0, 1, 0, {11.0, 9.5}};
      row.out_of_place = half;
      half.time_us += 1;
      row.in_place = half;
      run.rows.push_back(row);
    }
  }
  run.end_time = "2025-01-02T03:04:05Z";
  return run;
}

TEST(JsonReader, FabricscopeJsonRoundTrips) {
  const RunResult run = OurRun();
  const ParsedResults parsed = ParseResults(ToJson(run), "ours.json");
  ASSERT_FALSE(parsed.HasErrors()) << Dump(parsed);
  EXPECT_EQ(parsed.format, "fabricscope JSON");
  ASSERT_EQ(parsed.runs.size(), 1u);
  const RunResult& back = parsed.runs[0];
  EXPECT_EQ(back.backend, "gloo");
  ASSERT_EQ(back.rows.size(), run.rows.size());
  for (size_t i = 0; i < run.rows.size(); ++i) {
    EXPECT_EQ(back.rows[i].collective, run.rows[i].collective);
    EXPECT_EQ(back.rows[i].count, run.rows[i].count);
    EXPECT_EQ(back.rows[i].out_of_place->time_us, run.rows[i].out_of_place->time_us);
    EXPECT_EQ(back.rows[i].in_place->busbw, run.rows[i].in_place->busbw);
    EXPECT_EQ(back.rows[i].in_place->ranks.per_rank_us, run.rows[i].in_place->ranks.per_rank_us);
    EXPECT_EQ(back.rows[i].in_place->ranks.max_rank, 0);
  }
  ASSERT_EQ(back.printed.size(), 2u);
  EXPECT_EQ(back.printed[1].collective, "all_gather");
  EXPECT_DOUBLE_EQ(back.printed[1].avg_busbw, SummarizeCollective(run, "all_gather").avg_busbw);
}

TEST(JsonReader, UnfinishedFabricscopeRunIsAWarning) {
  RunResult run = OurRun();
  run.end_time.clear();
  const ParsedResults parsed = ParseResults(ToJson(run), "partial.json");
  ASSERT_EQ(parsed.diagnostics.size(), 1u);
  EXPECT_EQ(parsed.diagnostics[0].severity, Diagnostic::Severity::kWarning);
  EXPECT_NE(parsed.diagnostics[0].message.find("end_time is null"), std::string::npos);
}

TEST(CsvReader, FabricscopeCsvRoundTrips) {
  const RunResult run = OurRun();
  std::ostringstream out;
  auto reporter = MakeReporter("csv", out);
  reporter->Begin(run);
  for (const ResultRow& row : run.rows) reporter->Row(run, row);
  reporter->End(run);
  const ParsedResults parsed = ParseResults(out.str(), "ours.csv");
  ASSERT_FALSE(parsed.HasErrors()) << Dump(parsed);
  EXPECT_EQ(parsed.format, "fabricscope CSV");
  ASSERT_EQ(parsed.runs.size(), 1u);
  ASSERT_EQ(parsed.runs[0].rows.size(), run.rows.size());
  for (size_t i = 0; i < run.rows.size(); ++i) {
    const ResultRow& back = parsed.runs[0].rows[i];
    EXPECT_EQ(back.collective, run.rows[i].collective);
    EXPECT_EQ(back.count, run.rows[i].count);
    EXPECT_EQ(back.out_of_place->algbw, run.rows[i].out_of_place->algbw);
    EXPECT_EQ(back.in_place->time_us, run.rows[i].in_place->time_us);
    EXPECT_EQ(back.in_place->ranks.max_us, 11.0);
    EXPECT_EQ(*back.in_place->wrong, 0);
  }
}

TEST(CsvReader, RcclTestsCsvOldAndNew) {
  const std::string current =
      "numCycle,collective,nodes,ranks,ranksPerNode,gpusPerRank,size,type,redop,inplace,time,algbw,"
      "busbw,#wrong\n"
      "0,AllGather,1,8,8,1,1048576,float,none,0,20.5,51.15,44.76,0\n"
      "0,AllGather,1,8,8,1,1048576,float,none,1,19.5,53.77,47.05,N/A\n";
  ParsedResults parsed = ParseResults(current, "rccl.csv");
  ASSERT_FALSE(parsed.HasErrors()) << Dump(parsed);
  EXPECT_EQ(parsed.format, "rccl-tests CSV");
  ASSERT_EQ(parsed.runs.size(), 1u);
  ASSERT_EQ(parsed.runs[0].rows.size(), 1u);
  const ResultRow& row = parsed.runs[0].rows[0];
  EXPECT_EQ(row.collective, "all_gather");
  EXPECT_EQ(row.count, 1048576u / 4 / 8);
  EXPECT_EQ(row.out_of_place->busbw, 44.76);
  EXPECT_EQ(row.in_place->busbw, 47.05);
  EXPECT_FALSE(row.in_place->wrong.has_value());
  EXPECT_EQ(parsed.runs[0].nranks, 8);

  const std::string old =
      "collective, gpus, size, type, redop, inplace, time, algbw, busbw, #wrong\n"
      "AllReduce, 8, 1024, float, sum, 0, 20.000000, 0.051200, 0.089600, 0\n"
      "AllReduce, 8, 1024, float, sum, 1, 21.000000, 0.048762, 0.085333, 0\n";
  parsed = ParseResults(old, "old.csv");
  ASSERT_FALSE(parsed.HasErrors()) << Dump(parsed);
  ASSERT_EQ(parsed.runs[0].rows.size(), 1u);
  EXPECT_EQ(parsed.runs[0].rows[0].collective, "all_reduce");
  EXPECT_EQ(parsed.runs[0].rows[0].count, 256u);
}

TEST(CsvReader, BadLineNamesItsLine) {
  const std::string text =
      "collective,size,count,type,redop,root,placement,time_us,algbw_gbps,busbw_gbps,wrong\n"
      "all_reduce,1024,256,float,sum,-1,out_of_place,1.5,1,1.5,0\n"
      "all_reduce,2048,512,float,sum,-1,sideways,1.5,1,1.5,0\n"
      "all_reduce,4096,1024,float,sum,-1,in_place,x,1,1.5,0\n";
  const ParsedResults parsed = ParseResults(text, "bad.csv");
  ASSERT_EQ(parsed.diagnostics.size(), 2u) << Dump(parsed);
  EXPECT_EQ(parsed.diagnostics[0].line, 3u);
  EXPECT_NE(parsed.diagnostics[0].message.find("sideways"), std::string::npos);
  EXPECT_EQ(parsed.diagnostics[1].line, 4u);
  EXPECT_EQ(parsed.runs[0].rows.size(), 1u);
  EXPECT_TRUE(ParseResults("a,b,busbw\n1,2,3\n", "x.csv").HasErrors());
}

TEST(JsonReader, RcclTestsJsonListAndOldRecordLines) {
  const std::string list = R"([
{"numCycle":0, "name":"AllReduce", "nodes":1, "ranks":2, "ranksPerNode":2, "gpusPerRank":1, "size":4096, "type":"float", "redop":"sum", "inPlace":0, "time":10.000000, "algBw":0.409600, "busBw":0.409600, "wrong":"0"},
{"numCycle":0, "name":"AllReduce", "nodes":1, "ranks":2, "ranksPerNode":2, "gpusPerRank":1, "size":4096, "type":"float", "redop":"sum", "inPlace":1, "time":11.000000, "algBw":0.372364, "busBw":0.372364, "wrong":"0"}
]
)";
  ParsedResults parsed = ParseResults(list, "rccl.json");
  ASSERT_FALSE(parsed.HasErrors()) << Dump(parsed);
  EXPECT_EQ(parsed.format, "rccl-tests JSON");
  ASSERT_EQ(parsed.runs[0].rows.size(), 1u);
  EXPECT_EQ(parsed.runs[0].rows[0].count, 1024u);
  EXPECT_EQ(parsed.runs[0].rows[0].in_place->time_us, 11.0);

  const std::string lines =
      "{\"name\":AllGather, \"gpus\":4, \"size\":4096, \"type\":float, \"redop\":none, "
      "\"inPlace\":0, "
      "\"time\":10.0, \"algBw\":0.4096, \"busBw\":0.3072, \"wrong\":0}\n"
      "{\"name\":AllGather, \"gpus\":4, \"size\":4096, \"type\":float, \"redop\":none, "
      "\"inPlace\":1, "
      "\"time\":10.5, \"algBw\":0.39, \"busBw\":0.2926, \"wrong\":0}\n";
  parsed = ParseResults(lines, "old.json");
  ASSERT_FALSE(parsed.HasErrors()) << Dump(parsed);
  ASSERT_EQ(parsed.runs.size(), 1u);
  ASSERT_EQ(parsed.runs[0].rows.size(), 1u);
  EXPECT_EQ(parsed.runs[0].rows[0].collective, "all_gather");
  EXPECT_EQ(parsed.runs[0].rows[0].count, 256u);
}

}  // namespace
}  // namespace fabricscope
