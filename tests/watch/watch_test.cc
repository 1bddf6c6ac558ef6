// fabricscope watch: Inspector JSONL read in both of Inspector's layouts, windows judged on
// synthetic jobs (stragglers, drops, the platform's band, p99), the binary on bad input, and
// a whole job under the fake NCCL with the real profiler plugin and one rank slowed.
#include "fabricscope/watch.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "common/binary_test.h"
#include "fabricscope/finding.h"
#include "fabricscope/inspector.h"
#include "fabricscope/parse.h"
#include "fabricscope/platform.h"

namespace fabricscope {
namespace {

using test::BinaryTest;
using test::Outcome;
using test::Slurp;
namespace fs = std::filesystem;

// One line as the profiler writes it (Inspector's fields, self-contained).
std::string Line(int rank, uint64_t seq, int64_t start_us, double exec_us, double busbw,
                 uint64_t bytes = 1 << 20, const std::string& host = "node-a",
                 const std::string& coll = "AllReduce") {
  nlohmann::json j;
  j["header"] = {{"id", "0xc0ffee"}, {"rank", rank}, {"n_ranks", 4}, {"nnodes", 2}};
  j["metadata"] = {{"inspector_output_format_version", "v4.0"}, {"hostname", host}, {"pid", 10}};
  j["coll_perf"] = {
      {"coll", coll},
      {"coll_sn", seq},
      {"coll_msg_size_bytes", bytes},
      {"coll_exec_time_us", exec_us},
      {"coll_busbw_gbs", busbw},
      {"coll_algobw_gbs", busbw / 1.5},
      {"coll_algo", "RING"},
      {"coll_proto", "SIMPLE"},
      {"event_trace_ts",
       {{"coll_start_ts", start_us}, {"coll_stop_ts", start_us + static_cast<int64_t>(exec_us)}}}};
  return j.dump() + "\n";
}

// A job of 4 ranks: `steps` all-reduces 10 ms apart from t0; `late_rank` starts each one
// `late_us` after the others.
std::string Job(int steps, int64_t t0, double busbw, int late_rank = -1, int64_t late_us = 0) {
  std::string text;
  for (int s = 0; s < steps; ++s) {
    for (int r = 0; r < 4; ++r) {
      const int64_t start = t0 + s * 10000 + r * 3 + (r == late_rank ? late_us : 0);
      text += Line(r, static_cast<uint64_t>(s), start, 500 + r, busbw, 1 << 20,
                   r < 2 ? "node-a" : "node-b");
    }
  }
  return text;
}

TEST(InspectorReader, ReadsSelfContainedRecordsAndV43Markers) {
  const std::string v43 =
      R"({"header":{"id":"0x7f","rank":2,"n_ranks":8,"nnodes":1},"metadata":{"inspector_output_format_version":"v4.3","hostname":"h1","pid":5},"dump_stats":{"coll_records":2,"coll_dropped_since_last_dump":3,"p2p_records":1}})"
      "\n"
      R"({"coll_perf":{"coll":"AllReduce","coll_algo":"RING","coll_proto":"LL","coll_sn":1407,"coll_msg_size_bytes":17179869184,"coll_exec_time_us":61974,"coll_algobw_gbs":277.2,"coll_busbw_gbs":485.1}})"
      "\n"
      R"({"p2p_perf":{"p2p":"Send","p2p_sn":3,"p2p_peer":5,"p2p_msg_size_bytes":4096,"p2p_exec_time_us":12,"p2p_timing_source":"kernel_gpu","p2p_algobw_gbs":0.34,"p2p_busbw_gbs":0.34}})"
      "\n"
      R"({"coll_perf":{"coll":"ReduceScatter","coll_sn":1408,"coll_msg_size_bytes":2048,"coll_exec_time_us":41,"coll_busbw_gbs":0.5,"event_trace_ts":{"coll_start_ts":100,"coll_stop_ts":141}}})"
      "\n";
  ASSERT_TRUE(LooksLikeInspectorJsonl(v43));
  const InspectorRead read = ReadInspectorJsonl(v43, "f.jsonl");
  EXPECT_TRUE(read.diagnostics.empty()) << read.diagnostics[0].ToString();
  EXPECT_EQ(read.dropped, 3u);
  ASSERT_EQ(read.records.size(), 3u);
  EXPECT_EQ(read.records[0].hostname, "h1");
  EXPECT_EQ(read.records[0].rank, 2);
  EXPECT_EQ(read.records[0].comm, "0x7f");
  EXPECT_EQ(read.records[0].bytes, 17179869184u);
  EXPECT_DOUBLE_EQ(read.records[0].busbw_gbs, 485.1);
  EXPECT_FALSE(read.records[0].start_us.has_value());
  // Inspector 2.30's p2p record (inspector_json.cc, inspectorCompletedP2p).
  EXPECT_TRUE(read.records[1].p2p);
  EXPECT_EQ(read.records[1].collective, "Send");
  EXPECT_EQ(read.records[1].peer, 5);
  EXPECT_EQ(read.records[1].bytes, 4096u);
  EXPECT_EQ(read.records[1].timing_source, "kernel_gpu");
  EXPECT_EQ(read.records[2].collective, "ReduceScatter");
  EXPECT_EQ(read.records[2].start_us, 100);
  EXPECT_EQ(read.records[2].source, "f.jsonl:4");
  // One rank's part, as Inspector counts it; nccl-tests' size for the rows and buckets.
  EXPECT_EQ(read.records[2].msg_bytes, 2048u);
  EXPECT_EQ(read.records[2].bytes, 2048u * 8);

  // analyze's view: one run per communicator, a row per collective and size.
  const ParsedResults parsed = ParseResults(v43, "f.jsonl");
  EXPECT_EQ(parsed.format, "NCCL Inspector JSONL");
  ASSERT_EQ(parsed.runs.size(), 1u);
  EXPECT_EQ(parsed.runs[0].tool, "nccl-inspector");
  EXPECT_EQ(parsed.runs[0].nranks, 8);
  ASSERT_EQ(parsed.runs[0].rows.size(), 2u);
  EXPECT_EQ(parsed.runs[0].rows[0].collective, "all_reduce");
  EXPECT_EQ(parsed.runs[0].rows[0].size, 17179869184u);
  EXPECT_DOUBLE_EQ(parsed.runs[0].rows[0].out_of_place->busbw, 485.1);
  EXPECT_EQ(parsed.runs[0].rows[1].collective, "reduce_scatter");  // sends are no rows
  EXPECT_EQ(parsed.runs[0].rows[1].size, 2048u * 8);

  const InspectorRead own = ReadInspectorJsonl(Line(3, 9, 1000, 50, 2.5), "g.jsonl");
  ASSERT_EQ(own.records.size(), 1u);
  EXPECT_EQ(own.records[0].rank, 3);
  EXPECT_EQ(own.records[0].nnodes, 2);
  EXPECT_EQ(own.records[0].start_us, 1000);
}

// Records of exactly the form NCCL Inspector's README documents at NVIDIA/nccl v2.30.7-1
// (plugins/profiler/inspector/README.md:190-213 "Output Example", :227-275 "Output Example
// Verbose"): the keys and their nesting as there, our values. Default: no event trace, the
// time only in metadata.dump_timestamp_us.
nlohmann::json DocumentedRecord(int rank, uint64_t sn, int64_t dump_us, int64_t exec_us,
                                double busbw, bool verbose = false, int nranks = 4,
                                const std::string& id = "0x7f8c496ae9f661") {
  nlohmann::json j;
  j["header"] = {{"id", id}, {"rank", rank}, {"n_ranks", nranks}, {"nnodes", 1}};
  j["metadata"] = {{"inspector_output_format_version", "v4.0"},
                   {"git_rev", ""},
                   {"rec_mechanism", "profiler_plugin"},
                   {"dump_timestamp_us", dump_us},
                   {"hostname", "example-hostname"},
                   {"pid", 1639453 + rank}};
  j["coll_perf"] = {{"coll", "AllReduce"},
                    {"coll_sn", sn},
                    {"coll_msg_size_bytes", 17179869184ULL},
                    {"coll_exec_time_us", exec_us},
                    {"coll_algobw_gbs", busbw / 1.75},
                    {"coll_busbw_gbs", busbw}};
  if (verbose) {
    const int64_t start = dump_us - exec_us - 100;
    j["coll_perf"]["coll_timing_source"] = "kernel_gpu";
    j["coll_perf"]["event_trace_sn"] = {{"coll_start_sn", 1},
                                        {"coll_stop_sn", 2},
                                        {"kernel_events",
                                         {{{"channel_id", 0},
                                           {"kernel_start_sn", 3},
                                           {"kernel_stop_sn", 48},
                                           {"kernel_record_sn", 47}}}}};
    j["coll_perf"]["event_trace_ts"] = {{"coll_start_ts", start},
                                        {"coll_stop_ts", start + 5},
                                        {"kernel_events",
                                         {{{"channel_id", 0},
                                           {"kernel_start_ts", start + 120},
                                           {"kernel_stop_ts", start + exec_us},
                                           {"kernel_record_ts", start + exec_us}}}}};
  }
  return j;
}

// 120 s of 4 ranks, an all-reduce every 100 ms per rank, Inspector dumping every 500 ms (the
// README's example runs set the interval); from 60 s on each takes 1.7x as long, and its
// busbw, which Inspector derives from the time, is 1/1.7.
std::string DocumentedSlowedJob(bool verbose) {
  std::string text;
  for (uint64_t sn = 0; sn < 1200; ++sn) {
    const bool slow = sn >= 600;
    const int64_t done_us = 1'748'030'000'000'000 + static_cast<int64_t>(sn) * 100'000 + 60'000;
    const int64_t dump_us = (done_us / 500'000 + 1) * 500'000;
    for (int r = 0; r < 4; ++r) {
      text += DocumentedRecord(r, sn + 1, verbose ? done_us + 50 : dump_us + r,
                               slow ? 61974 * 17 / 10 : 61974, slow ? 485.1 / 1.7 : 485.1, verbose)
                  .dump() +
              "\n";
    }
  }
  return text;
}

TEST(InspectorReader, ReadsTheDocumentedDefaultAndVerboseRecords) {
  const std::string text =
      DocumentedRecord(2, 1407, 1748030377748202, 61974, 485.119099).dump() + "\n" +
      DocumentedRecord(4, 1231, 1752867229276385, 41057, 366.1, true).dump() + "\n";
  ASSERT_TRUE(LooksLikeInspectorJsonl(text));
  const InspectorRead read = ReadInspectorJsonl(text, "f.jsonl");
  EXPECT_TRUE(read.diagnostics.empty()) << read.diagnostics[0].ToString();
  ASSERT_EQ(read.records.size(), 2u);
  EXPECT_EQ(read.records[0].dump_us, 1748030377748202);
  EXPECT_FALSE(read.records[0].start_us.has_value());
  EXPECT_EQ(read.records[0].seq, 1407u);
  EXPECT_EQ(read.records[0].hostname, "example-hostname");
  EXPECT_DOUBLE_EQ(read.records[0].exec_us, 61974);
  EXPECT_EQ(read.records[1].dump_us, 1752867229276385);
  EXPECT_EQ(read.records[1].start_us, 1752867229276385 - 41057 - 100);
  EXPECT_EQ(read.records[1].timing_source, "kernel_gpu");
}

// Default records take their dump's time; within one rank's communicator a record is no later
// than any after it in coll_sn, whatever the file's order.
TEST(WatchJudge, DefaultRecordsAreTimedByTheirDumpInCollSnOrder) {
  std::string text;
  text += DocumentedRecord(0, 3, 30'000'000, 10, 40).dump() + "\n";
  text += DocumentedRecord(0, 1, 30'000'000, 10, 40).dump() + "\n";  // drained late
  text += DocumentedRecord(0, 2, 12'000'000, 10, 40).dump() + "\n";
  text += DocumentedRecord(1, 1, 31'000'000, 10, 40).dump() + "\n";  // another rank's own
  const InspectorRead read = ReadInspectorJsonl(text, "f.jsonl");
  ASSERT_EQ(read.records.size(), 4u);
  WatchOptions options;
  options.window_s = 10;
  WatchBaseline baseline;
  const auto windows = JudgeWindows(read.records, options, &baseline);
  ASSERT_EQ(windows.size(), 2u);
  EXPECT_EQ(windows[0].start_us, 12'000'000);
  EXPECT_EQ(windows[0].records, 2u);  // sn 1 and 2, at 12 s
  EXPECT_EQ(windows[1].start_us, 22'000'000);
  EXPECT_EQ(windows[1].records, 2u);  // rank 0's sn 3 at 30 s, rank 1's sn 1 at 31 s
}

TEST(WatchJudge, ADropHalfWayThroughInspectorsDefaultOutputIsAnAlert) {
  for (const bool verbose : {false, true}) {
    const InspectorRead read = ReadInspectorJsonl(DocumentedSlowedJob(verbose), "job");
    ASSERT_EQ(read.records.size(), 4800u);
    WatchOptions options;
    WatchBaseline baseline;
    const auto windows = JudgeWindows(read.records, options, &baseline);
    ASSERT_EQ(windows.size(), 12u) << verbose;  // 10 s windows over 120 s, not one at t=0
    EXPECT_TRUE(windows[5].findings.empty()) << FindingsText(windows[5].findings);
    ASSERT_FALSE(windows[6].findings.empty()) << verbose;
    EXPECT_EQ(windows[6].findings[0].source, "drop");
    EXPECT_NEAR(windows[6].findings[0].figures.at("drop_percent"), (1 - 1 / 1.7) * 100, 1e-6);
  }
}

// The README's two examples, byte for byte as NVIDIA prints them (several lines each; the
// plugin writes one a line): every key is read or named as ignored, and the values land.
TEST(InspectorReader, ReadsTheReadmesExamplesAsPrinted) {
  const std::string dir = WATCH_DATA_DIR;
  const std::string text = Slurp(dir + "/inspector_readme_default.json") + "\n" +
                           Slurp(dir + "/inspector_readme_verbose.json");
  ASSERT_TRUE(LooksLikeInspectorJsonl(text));
  const InspectorRead read = ReadInspectorJsonl(text, "readme");
  EXPECT_TRUE(read.diagnostics.empty()) << read.diagnostics[0].ToString();
  EXPECT_TRUE(read.unknown_keys.empty()) << read.unknown_keys[0].first;
  ASSERT_EQ(read.records.size(), 2u);
  const InspectorRecord& d = read.records[0];
  EXPECT_EQ(d.source, "readme:1");
  EXPECT_EQ(d.comm, "0x7f8c496ae9f661");
  EXPECT_EQ(d.rank, 2);
  EXPECT_EQ(d.nranks, 8);
  EXPECT_EQ(d.nnodes, 1);
  EXPECT_EQ(d.hostname, "example-hostname");
  EXPECT_EQ(d.pid, 1639453);
  EXPECT_EQ(d.dump_us, 1748030377748202);
  EXPECT_EQ(d.collective, "AllReduce");
  EXPECT_EQ(d.seq, 1407u);
  EXPECT_EQ(d.msg_bytes, 17179869184u);
  EXPECT_DOUBLE_EQ(d.exec_us, 61974);
  EXPECT_DOUBLE_EQ(d.algbw_gbs, 277.210914);
  EXPECT_DOUBLE_EQ(d.busbw_gbs, 485.119099);
  EXPECT_FALSE(d.start_us.has_value());
  const InspectorRecord& v = read.records[1];
  EXPECT_EQ(v.source, "readme:26");  // the second object starts on the file's line 26
  EXPECT_EQ(v.collective, "ReduceScatter");
  EXPECT_EQ(v.msg_bytes, 2147483648u);
  EXPECT_EQ(v.bytes, uint64_t{2147483648} * 8);  // nccl-tests' size: the whole buffer
  EXPECT_EQ(v.timing_source, "kernel_gpu");
  EXPECT_EQ(v.start_us, 1752867229235059);
  EXPECT_EQ(v.stop_us, 1752867229235064);
  EXPECT_EQ(v.dump_us, 1752867229276385);
  // The same records one a line, as the plugin writes them, read the same.
  const std::string lines =
      nlohmann::json::parse(Slurp(dir + "/inspector_readme_default.json")).dump() + "\n" +
      nlohmann::json::parse(Slurp(dir + "/inspector_readme_verbose.json")).dump() + "\n";
  const InspectorRead one_a_line = ReadInspectorJsonl(lines, "jsonl");
  ASSERT_EQ(one_a_line.records.size(), 2u);
  EXPECT_EQ(one_a_line.records[1].start_us, v.start_us);
  EXPECT_EQ(one_a_line.records[1].source, "jsonl:2");
}

// Every key inspector_json.cc writes at v2.30.7-1 (collective and p2p, verbose), and every
// key of the table, is either read or ignored with a reason; a key no writer of format v4.0
// has is named with where it was met, and the record is still read.
TEST(InspectorReader, EveryKeyIsReadOrNamedAndAnUnknownOneIsReported) {
  for (const InspectorKey& k : InspectorKeys()) {
    EXPECT_TRUE(k.use.rfind("read", 0) == 0 || k.use.rfind("ignored: ", 0) == 0) << k.path;
  }
  const std::string p2p =
      R"({"header":{"id":"0x1","comm_name":"unknown","rank":0,"n_ranks":2,"nnodes":1},)"
      R"("metadata":{"inspector_output_format_version":"v4.0","git_rev":"","rec_mechanism":)"
      R"("nccl_profiler_interface","dump_timestamp_us":1000,"hostname":"h","pid":1},)"
      R"("p2p_perf":{"p2p":"Send","p2p_sn":4,"p2p_peer":1,"p2p_msg_size_bytes":8192,)"
      R"("p2p_exec_time_us":12,"p2p_timing_source":"kernel_gpu","p2p_algobw_gbs":0.6,)"
      R"("p2p_busbw_gbs":0.6,"event_trace_sn":{"p2p_start_sn":1,"p2p_stop_sn":2,)"
      R"("kernel_events":[{"channel_id":0,"kernel_start_sn":3,"kernel_stop_sn":5,)"
      R"("kernel_record_sn":4}]},"event_trace_ts":{"p2p_start_ts":900,"p2p_stop_ts":901,)"
      R"("kernel_events":[{"channel_id":0,"kernel_start_ts":902,"kernel_stop_ts":914,)"
      R"("kernel_record_ts":914}]}}})";
  InspectorRead read = ReadInspectorJsonl(p2p + "\n", "p2p");
  EXPECT_TRUE(read.diagnostics.empty());
  EXPECT_TRUE(read.unknown_keys.empty()) << read.unknown_keys[0].first;
  ASSERT_EQ(read.records.size(), 1u);
  EXPECT_EQ(read.records[0].peer, 1);
  EXPECT_EQ(read.records[0].start_us, 900);

  nlohmann::json newer = nlohmann::json::parse(p2p);
  newer["metadata"]["inspector_output_format_version"] = "v5.0";
  newer["p2p_perf"]["p2p_wait_time_us"] = 3;
  newer["topology"] = {{"nic", "mlx5_0"}};
  read = ReadInspectorJsonl(newer.dump() + "\n" + newer.dump() + "\n", "new.jsonl");
  ASSERT_EQ(read.records.size(), 2u);
  ASSERT_EQ(read.unknown_keys.size(), 2u);
  EXPECT_EQ(read.unknown_keys[0],
            (std::pair<std::string, std::string>{"p2p_perf.p2p_wait_time_us", "new.jsonl:1"}));
  EXPECT_EQ(read.unknown_keys[1].first, "topology");
  const Diagnostic d = UnknownKeysDiagnostic(read.unknown_keys, "new.jsonl");
  EXPECT_EQ(d.severity, Diagnostic::Severity::kWarning);
  EXPECT_NE(d.ToString().find("p2p_perf.p2p_wait_time_us (first at new.jsonl:1), topology"),
            std::string::npos)
      << d.ToString();
}

// NCCL Inspector's Prometheus mode, the README's own lines: a bucket's two lines are one
// record, its size the bucket's lower bound (Inspector's units of 1024), its time the dump's.
TEST(InspectorProm, ReadsTheReadmesLinesAsOneRecordABucket) {
  const std::string text =
      Slurp(std::string(WATCH_DATA_DIR) + "/nccl_inspector_metrics_readme.prom");
  ASSERT_TRUE(LooksLikeInspectorProm(text));
  EXPECT_FALSE(LooksLikeInspectorJsonl(text));
  const InspectorRead read = ReadInspectorProm(text, "m.prom", 1'700'000'000'000'000);
  EXPECT_TRUE(read.diagnostics.empty()) << read.diagnostics[0].ToString();
  EXPECT_TRUE(read.unknown_keys.empty());
  ASSERT_EQ(read.records.size(), 2u);
  const InspectorRecord& c = read.records[0];
  EXPECT_FALSE(c.p2p);
  EXPECT_EQ(c.collective, "AllReduce");
  EXPECT_EQ(c.msg_bytes, uint64_t{4} << 30);
  EXPECT_DOUBLE_EQ(c.busbw_gbs, 678.263);
  EXPECT_DOUBLE_EQ(c.exec_us, 9498.47);
  EXPECT_EQ(c.hostname, "nvl72004-T01");
  EXPECT_EQ(c.comm_name, "DP Group 0");
  EXPECT_EQ(c.nranks, 4);
  EXPECT_EQ(c.nnodes, 1);
  EXPECT_EQ(c.rank, 0);  // GPU0
  EXPECT_EQ(c.algo, "Ring");
  EXPECT_EQ(c.proto, "ll");
  EXPECT_EQ(c.dump_us, 1'700'000'000'000'000);
  EXPECT_EQ(c.source, "m.prom:1");
  const InspectorRecord& p = read.records[1];
  EXPECT_TRUE(p.p2p);
  EXPECT_EQ(p.collective, "Send");
  EXPECT_EQ(p.msg_bytes, uint64_t{512} << 20);
  EXPECT_DOUBLE_EQ(p.busbw_gbs, 464.9);
  EXPECT_DOUBLE_EQ(p.exec_us, 1154.87);
}

TEST(InspectorProm, BadLinesAreNamedAndUnknownMetricsReported) {
  const std::string text =
      "# HELP nccl_bus_bandwidth_gbs ignored\n"
      "nccl_bus_bandwidth_gbs{collective=\"AllReduce\",message_size=\"1-2MB\"} 12.5\n"
      "nccl_bus_bandwidth_gbs{collective=\"AllReduce\",message_size=\"big\"} 1\n"
      "nccl_bus_bandwidth_gbs{collective=\"AllGather\",message_size=\"1-2MB\"} fast\n"
      "nccl_bus_bandwidth_gbs{collective=\"AllGather\",message_size=\"1-2MB\" 3\n"
      "nccl_queue_depth{gpu=\"GPU1\"} 4\n"
      // inspector_prom_fuzz: a bound beyond 2^64 bytes, and one not printed with %.0f
      "nccl_bus_bandwidth_gbs{collective=\"AllReduce\",message_size=\"99999999-1TB\"} 1\n"
      "nccl_bus_bandwidth_gbs{collective=\"AllReduce\",message_size=\"5E13-513MB\"} 1\n";
  const InspectorRead read = ReadInspectorProm(text, "m.prom", 0);
  ASSERT_EQ(read.records.size(), 1u);
  EXPECT_EQ(read.records[0].msg_bytes, uint64_t{1} << 20);
  ASSERT_EQ(read.diagnostics.size(), 5u);
  EXPECT_EQ(read.diagnostics[0].line, 3u);
  EXPECT_NE(read.diagnostics[0].message.find("message_size 'big' is not a bucket"),
            std::string::npos);
  EXPECT_NE(read.diagnostics[1].message.find("value 'fast' is not a number"), std::string::npos);
  EXPECT_NE(read.diagnostics[2].message.find("not a Prometheus sample"), std::string::npos);
  EXPECT_NE(read.diagnostics[3].message.find("message_size '99999999-1TB' is not a bucket"),
            std::string::npos);
  EXPECT_NE(read.diagnostics[4].message.find("message_size '5E13-513MB' is not a bucket"),
            std::string::npos);
  ASSERT_EQ(read.unknown_keys.size(), 1u);
  EXPECT_EQ(read.unknown_keys[0].first, "metric nccl_queue_depth");
}

// A directory of Inspector's Prometheus files, rewritten every 30 s as Inspector does (the
// file truncated and written again): each rewrite is read once, at its modification time,
// and watch alerts on the job's all_reduce getting 1.7x slower half-way, as on JSONL.
TEST(InspectorProm, EachRewriteIsASnapshotAndADropHalfWayIsAnAlert) {
  const fs::path dir =
      fs::temp_directory_path() / ("fabricscope-prom-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "other_exporter.prom") << "node_load1 0.5\n";  // not Inspector's: left alone
  WatchSource source({dir.string()});
  WatchOptions options;
  options.window_s = 30;
  WatchBaseline baseline;
  std::vector<WatchWindow> windows;
  const auto start = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (int dump = 0; dump < 12; ++dump) {
    const bool slow = dump >= 6;
    for (int gpu = 0; gpu < 4; ++gpu) {
      const fs::path file = dir / ("nccl_inspector_metrics_GPU-" + std::to_string(gpu) + ".prom");
      const std::string labels = "version=\"v5.1\",slurm_job_id=\"7\",node=\"n1\",gpu=\"GPU" +
                                 std::to_string(gpu) +
                                 "\",comm_name=\"DP Group 0\",n_nodes=\"1\",nranks=\"4\","
                                 "collective=\"AllReduce\",message_size=\"4-5GB\","
                                 "algo_proto=\"Ring_simple\"";
      std::ofstream(file, std::ios::trunc)
          << "nccl_bus_bandwidth_gbs{" << labels << "} " << (slow ? 485.1 / 1.7 : 485.1) << "\n"
          << "nccl_collective_exec_time_microseconds{" << labels << "} "
          << (slow ? 9498.0 * 1.7 : 9498.0) << "\n";
      fs::last_write_time(file, start + std::chrono::seconds(30 * dump + 15));
    }
    const InspectorRead read = source.Poll();
    EXPECT_TRUE(read.diagnostics.empty()) << read.diagnostics[0].ToString();
    ASSERT_EQ(read.records.size(), 4u) << dump;  // each file's one bucket, once
    EXPECT_TRUE(source.Poll().records.empty());  // unchanged since: nothing new
    for (auto& w : JudgeWindows(read.records, options, &baseline)) windows.push_back(std::move(w));
  }
  ASSERT_EQ(windows.size(), 12u);
  EXPECT_TRUE(windows[5].findings.empty()) << FindingsText(windows[5].findings);
  ASSERT_FALSE(windows[6].findings.empty());
  EXPECT_EQ(windows[6].findings[0].source, "drop");
  // The values carry six significant digits, as Inspector's %.6g writes them.
  EXPECT_NEAR(windows[6].findings[0].figures.at("drop_percent"), (1 - 1 / 1.7) * 100, 1e-3);
  fs::remove_all(dir);
}

// docs/watch.md's key table is the reader's: every path in it, with its use.
TEST(InspectorReader, DocsWatchMdListsEveryKeyWithItsUse) {
  const std::string docs = Slurp(std::string(WATCH_DATA_DIR) + "/../../../docs/watch.md");
  for (const InspectorKey& k : InspectorKeys()) {
    const std::string row = "| `" + std::string(k.path) + "` | " + std::string(k.use) + " |";
    EXPECT_NE(docs.find(row), std::string::npos) << row;
  }
}

// A printed object cut off, and a one-line record cut mid-line: each is one bad record named
// by its first line, and the records after a cut line are still read.
TEST(InspectorReader, ACutRecordIsOneBadRecordAndTheRestIsRead) {
  const std::string good =
      nlohmann::json::parse(Slurp(std::string(WATCH_DATA_DIR) + "/inspector_readme_default.json"))
          .dump();
  const std::string text = good.substr(0, 40) + "\n" + good + "\n{\n  \"header\": {\n";
  const InspectorRead read = ReadInspectorJsonl(text, "cut");
  ASSERT_EQ(read.records.size(), 1u);
  EXPECT_EQ(read.records[0].source, "cut:2");
  ASSERT_EQ(read.diagnostics.size(), 2u);
  EXPECT_EQ(read.diagnostics[0].line, 1u);
  EXPECT_EQ(read.diagnostics[1].line, 3u);
}

TEST(InspectorReader, EachBadLineIsNamedAndTheRestIsRead) {
  const std::string text =
      Line(0, 1, 10, 5, 1) + "{not json\n" +
      R"({"header":{"id":"0x1","rank":0},"coll_perf":{"coll":"AllReduce","coll_sn":1}})" + "\n" +
      R"({"coll_perf":{"coll":"AllReduce","coll_msg_size_bytes":8,"coll_exec_time_us":1}})" + "\n" +
      Line(1, 1, 12, 5, 1);
  const InspectorRead read = ReadInspectorJsonl(text, "bad.jsonl");
  EXPECT_EQ(read.records.size(), 2u);
  ASSERT_EQ(read.diagnostics.size(), 3u);
  EXPECT_EQ(read.diagnostics[0].line, 2u);
  EXPECT_NE(read.diagnostics[0].message.find("not an Inspector record"), std::string::npos);
  EXPECT_EQ(read.diagnostics[1].line, 3u);  // no size, no time
  EXPECT_NE(read.diagnostics[1].message.find("coll_msg_size_bytes"), std::string::npos)
      << read.diagnostics[1].message;
  // An orphan v4.3 payload must not borrow a context it does not have.
  EXPECT_EQ(read.diagnostics[2].line, 4u);
  EXPECT_NE(read.diagnostics[2].message.find("without header"), std::string::npos);
}

// A float where an integer goes (inspector_jsonl_fuzz: "rank": 2.8e28) is a bad line with its
// reason, not undefined behaviour in nlohmann's cast; a whole float in range still reads.
TEST(InspectorReader, AFloatBeyondAnIntegerFieldIsABadLine) {
  const std::string text =
      R"({"header":{"id":"0x1","rank":27777777777777777777777777777,"n_ranks":8},)"
      R"("coll_perf":{"coll":"AllReduce","coll_sn":1,"coll_msg_size_bytes":8,)"
      R"("coll_exec_time_us":1}})"
      "\n"
      R"({"header":{"id":"0x1","rank":3.0,"n_ranks":8},"coll_perf":{"coll":"AllReduce",)"
      R"("coll_sn":2,"coll_msg_size_bytes":1.5,"coll_exec_time_us":1}})"
      "\n"
      R"({"header":{"id":"0x1","rank":3.0,"n_ranks":8},"coll_perf":{"coll":"AllReduce",)"
      R"("coll_sn":3,"coll_msg_size_bytes":8,"coll_exec_time_us":1}})"
      "\n";
  const InspectorRead read = ReadInspectorJsonl(text, "f.jsonl");
  ASSERT_EQ(read.diagnostics.size(), 2u);
  EXPECT_EQ(read.diagnostics[0].line, 1u);
  EXPECT_NE(read.diagnostics[0].message.find("not a whole number in the range"), std::string::npos)
      << read.diagnostics[0].message;
  EXPECT_EQ(read.diagnostics[1].line, 2u);  // a size of 1.5 bytes
  ASSERT_EQ(read.records.size(), 1u);
  EXPECT_EQ(read.records[0].rank, 3);
  EXPECT_EQ(read.records[0].seq, 3u);
}

TEST(WatchJudge, TheRankEveryoneWaitsForIsNamedWithItsNode) {
  const InspectorRead read = ReadInspectorJsonl(Job(20, 1'000'000, 40, 2, 8000), "job");
  WatchBaseline baseline;
  const auto windows = JudgeWindows(read.records, WatchOptions{}, &baseline);
  ASSERT_EQ(windows.size(), 1u);
  const WatchWindow& w = windows[0];
  ASSERT_EQ(w.ranks.size(), 4u);
  EXPECT_EQ(w.ranks[0].rank, 2);
  EXPECT_EQ(w.ranks[0].node, "node-b");
  EXPECT_TRUE(w.ranks[0].straggler);
  EXPECT_EQ(w.ranks[0].last, 20u);
  EXPECT_NEAR(w.ranks[0].median_late_us, 8000, 10);
  for (size_t i = 1; i < 4; ++i) EXPECT_FALSE(w.ranks[i].straggler) << w.ranks[i].rank;
  ASSERT_EQ(w.findings.size(), 1u) << FindingsText(w.findings);
  const Finding& f = w.findings[0];
  EXPECT_EQ(f.severity, Severity::kCritical);
  EXPECT_TRUE(f.decided);
  EXPECT_EQ(f.source, "straggler");
  EXPECT_EQ(f.where, "rank 2 on node node-b");
  EXPECT_NE(f.what.find("starts its collectives 8.0 ms after the first rank"), std::string::npos)
      << f.what;
  EXPECT_NE(f.fix.find("fabricscope doctor"), std::string::npos) << f.fix;
  EXPECT_NEAR(f.figures.at("median_late_us"), 8000, 10);
  EXPECT_EQ(f.figures.at("rank"), 2);
  // p50 and p99 of 80 times 500..503 us.
  ASSERT_EQ(w.buckets.size(), 1u);
  EXPECT_EQ(w.buckets[0].collective, "all_reduce");
  EXPECT_EQ(w.buckets[0].size_bucket, "<=1MiB");
  EXPECT_EQ(w.buckets[0].samples, 80u);
  EXPECT_DOUBLE_EQ(w.buckets[0].p50_us, 501);
  EXPECT_DOUBLE_EQ(w.buckets[0].p99_us, 503);
}

// Rank 2 starts 1.5 ms after the first rank in each of 20 collectives, rank 1
// rank1_late_us after it; ranks 0 and 1 on node-a, 2 and 3 on node-b.
std::string SkewedJob(int64_t rank1_late_us) {
  std::string text;
  for (int s = 0; s < 20; ++s) {
    for (int r = 0; r < 4; ++r) {
      const int64_t late = r == 2 ? 1500 : r == 1 ? rank1_late_us : 0;
      text += Line(r, static_cast<uint64_t>(s), s * 10000 + r * 3 + late, 500, 40, 1 << 20,
                   r < 2 ? "node-a" : "node-b");
    }
  }
  return text;
}

// Rank 2 is the last to start every time, 1.5 ms late, but rank 1 is 1 ms late every time
// too: the skew is noise of about that size (a loaded host's), and rank 2 does not stand out
// of it by --straggler-us. Nobody is named; a note gives both figures and what would decide.
TEST(WatchJudge, ALateRankWithinTheOthersSkewIsInconclusiveNotNamed) {
  const InspectorRead read = ReadInspectorJsonl(SkewedJob(1000), "job");
  WatchBaseline baseline;
  const auto windows = JudgeWindows(read.records, WatchOptions{}, &baseline);
  ASSERT_EQ(windows.size(), 1u);
  const WatchWindow& w = windows[0];
  EXPECT_EQ(Worst(w.findings), Severity::kWarn) << FindingsText(w.findings);
  for (const WatchRank& r : w.ranks) EXPECT_FALSE(r.straggler) << r.rank;
  ASSERT_EQ(w.findings.size(), 1u);
  const Finding& f = w.findings[0];
  EXPECT_FALSE(f.decided);
  EXPECT_EQ(f.source, "straggler");
  EXPECT_EQ(f.where, "rank 2 on node node-b");
  EXPECT_NE(f.what.find("starts its collectives 1.5 ms after the first rank (median) and is the "
                        "last in 20 of 20, but rank 1 is 1.0 ms late too"),
            std::string::npos)
      << f.what;
  EXPECT_NEAR(f.figures.at("next_late_us"), 1000, 10);  // the noise, for programs
  EXPECT_NE(f.fix.find("fabricscope locate"), std::string::npos) << f.fix;
  EXPECT_EQ(OutcomeOf(w.findings, false), fabricscope::Outcome::kInconclusive);

  // The same job with rank 1 on time: rank 2 stands out by 1.5 ms and is named.
  const auto named =
      JudgeWindows(ReadInspectorJsonl(SkewedJob(0), "job").records, WatchOptions{}, &baseline);
  ASSERT_EQ(named.size(), 1u);
  ASSERT_EQ(named[0].findings.size(), 1u) << FindingsText(named[0].findings);
  EXPECT_EQ(named[0].findings[0].severity, Severity::kCritical);
  EXPECT_TRUE(named[0].findings[0].decided);
  EXPECT_EQ(named[0].findings[0].where, "rank 2 on node node-b");
  EXPECT_EQ(OutcomeOf(named[0].findings, false), fabricscope::Outcome::kFailed);
}

TEST(WatchJudge, AHealthyJobHasNoStragglerAndNoAlert) {
  const InspectorRead read = ReadInspectorJsonl(Job(20, 0, 40), "job");
  WatchBaseline baseline;
  const auto windows = JudgeWindows(read.records, WatchOptions{}, &baseline);
  ASSERT_EQ(windows.size(), 1u);
  EXPECT_TRUE(windows[0].findings.empty()) << FindingsText(windows[0].findings);
  for (const WatchRank& r : windows[0].ranks) EXPECT_FALSE(r.straggler);
}

// NCCL numbers collectives per function: AllGather #k and ReduceScatter #k of one
// communicator are two collectives, half a second apart here. Grouped by sequence number
// alone, every rank would look half a second late against its own AllGather.
TEST(WatchJudge, StartSkewIsMeasuredPerFunctionAndSequence) {
  std::string text;
  for (int s = 0; s < 10; ++s) {
    for (int r = 0; r < 4; ++r) {
      const int64_t t = s * 1'000'000 + r * 3;
      text += Line(r, static_cast<uint64_t>(s), t, 500, 40, 1 << 20, "node-a", "AllGather");
      text += Line(r, static_cast<uint64_t>(s), t + 500'000 + (r == 2 ? 7 : 0), 500, 40, 1 << 20,
                   "node-a", "ReduceScatter");
    }
  }
  const InspectorRead read = ReadInspectorJsonl(text, "job");
  WatchOptions options;
  options.window_s = 100;
  WatchBaseline baseline;
  const auto windows = JudgeWindows(read.records, options, &baseline);
  ASSERT_EQ(windows.size(), 1u);
  EXPECT_TRUE(windows[0].findings.empty()) << FindingsText(windows[0].findings);
  ASSERT_EQ(windows[0].ranks.size(), 4u);
  for (const WatchRank& r : windows[0].ranks) {
    EXPECT_LT(r.median_late_us, 20) << "rank " << r.rank;
    EXPECT_EQ(r.groups, 20u);  // 10 AllGather and 10 ReduceScatter
  }
}

TEST(WatchJudge, ADropAgainstTheJobsOwnBaselineIsAnAlert) {
  // Window 1 (t 0..1 s) at 40 GB/s is the baseline; window 2 at 38 is within 20%; window 3 at
  // 20 is half.
  const std::string text = Job(20, 0, 40) + Job(20, 1'000'000, 38) + Job(20, 2'000'000, 20);
  const InspectorRead read = ReadInspectorJsonl(text, "job");
  WatchOptions options;
  options.window_s = 1;
  WatchBaseline baseline;
  const auto windows = JudgeWindows(read.records, options, &baseline);
  ASSERT_EQ(windows.size(), 3u);
  EXPECT_FALSE(windows[0].buckets[0].baseline_gbs.has_value());
  EXPECT_TRUE(windows[1].findings.empty()) << FindingsText(windows[1].findings);
  EXPECT_NEAR(*windows[1].buckets[0].drop_percent, 5, 1e-9);
  ASSERT_EQ(windows[2].findings.size(), 1u);
  const Finding& f = windows[2].findings[0];
  EXPECT_EQ(f.severity, Severity::kCritical);
  EXPECT_EQ(f.source, "drop");
  EXPECT_EQ(f.where, "all_reduce <=1MiB");
  EXPECT_NE(f.what.find("busbw 20 GB/s, 50% below this job's baseline of 40 GB/s"),
            std::string::npos)
      << f.what;
  EXPECT_DOUBLE_EQ(f.figures.at("drop_percent"), 50);
  EXPECT_DOUBLE_EQ(f.figures.at("baseline_gbs"), 40);
}

TEST(WatchJudge, BusbwBelowThePlatformsBandAndASlowP99AreAlerts) {
  const Catalog catalog = Catalog::Builtin();
  std::string text;
  for (int s = 0; s < 4; ++s) {
    for (int r = 0; r < 4; ++r) {
      text += Line(r, static_cast<uint64_t>(s), s * 100000 + r, 30000, 100.0, 1ull << 30);
    }
  }
  const InspectorRead read = ReadInspectorJsonl(text, "job");
  WatchOptions options;
  options.platform = catalog.Find("dgx-h100");
  ASSERT_NE(options.platform, nullptr);
  options.p99_alert_us = 20000;
  WatchBaseline baseline;
  const auto windows = JudgeWindows(read.records, options, &baseline);
  ASSERT_EQ(windows.size(), 1u);
  const WatchBucket& b = windows[0].buckets[0];
  ASSERT_TRUE(b.expected_low_gbs.has_value());
  EXPECT_GT(*b.expected_low_gbs, 100.0);
  const std::vector<Finding>& found = windows[0].findings;
  ASSERT_EQ(found.size(), 2u) << FindingsText(found);
  EXPECT_EQ(found[0].source, "healthy-band");
  EXPECT_EQ(found[0].where, "all_reduce <=1GiB");
  EXPECT_NE(found[0].what.find("busbw 100.0 GB/s, below dgx-h100's healthy"), std::string::npos)
      << found[0].what;
  EXPECT_EQ(found[1].source, "p99");
  EXPECT_EQ(found[1].where, "all_reduce <=1GiB");
  EXPECT_NE(found[1].what.find("p99 30000.0 us over the limit of 20000.0 us"), std::string::npos)
      << found[1].what;
  EXPECT_EQ(Worst(found), Severity::kCritical);
}

// ---------------------------------------------------------------------------------------
// The binary.

// The JSON objects of a JSONL file, one a line.
std::vector<nlohmann::json> JsonLines(const fs::path& file) {
  std::vector<nlohmann::json> out;
  std::istringstream text(Slurp(file));
  for (std::string line; std::getline(text, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

class WatchCli : public BinaryTest {
 protected:
  WatchCli() : BinaryTest("watch") {}

  // A job of `procs` processes of `fabricscope run --backend nccl ARGS` on the fake NCCL
  // (a TEST DOUBLE) with the profiler plugin, each with ENV too; process 0's store binds a
  // port of its own and publishes it, the others read it. Their dumps go to profiles/.
  fs::path RunFakeJob(const std::string& env, const std::string& args, int procs = 3) {
    const fs::path out = dir_ / "profiles";
    const std::string store =
        " MASTER_ADDR=127.0.0.1 MASTER_PORT=0 FABRICSCOPE_PORT_FILE=" + (dir_ / "port").string();
    std::string script;
    for (int p = 0; p < procs; ++p) {
      const std::string ps = std::to_string(p);
      script += "(RANK=" + ps + " WORLD_SIZE=" + std::to_string(procs) + " LOCAL_RANK=" + ps +
                store + " " + env + " NCCL_PROFILER_PLUGIN=" + PROFILER_PLUGIN_PATH +
                " FABRICSCOPE_PROFILER_DUMP_DIR=" + out.string() + " " + FABRICSCOPE_BINARY +
                " run --backend nccl --nccl-lib " + FAKE_NCCL_PATH + " --gpu-runtime-lib " +
                FAKE_CUDART_PATH + " " + args + " >" + (dir_ / ("out" + ps)).string() +
                " 2>&1; echo $? >" + (dir_ / ("rc" + ps)).string() + ") & ";
    }
    EXPECT_EQ(std::system(("timeout 120 sh -c '" + script + "wait'").c_str()), 0);
    for (int p = 0; p < procs; ++p) {
      EXPECT_EQ(Slurp(dir_ / ("rc" + std::to_string(p))), "0\n")
          << Slurp(dir_ / ("out" + std::to_string(p)));
    }
    return out;
  }
};

TEST_F(WatchCli, BadInputIsRefusedWithWhatAndHow) {
  ExpectRefused((dir_ / "missing").string(), 2, "does not exist");
  ExpectRefused(Write("empty.jsonl", ""), 2, "no collective records");
  const std::string junk = Write("junk.jsonl", "{broken\n");
  const Outcome o = Run(junk);
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("junk.jsonl:1: error: not an Inspector record"), std::string::npos) << o.err;
  ExpectRefused(junk + " --duration 5", 2, "--interval and --duration need --follow");
  ExpectRefused(junk + " --platform nowhere-9", 2, "nowhere-9");
  ExpectRefused(junk + " --window 0", 2, "--window");
  ExpectRefused("", 2, "give JSONL files or directories, or --prometheus URL");
  ExpectRefused(junk + " --prometheus http://127.0.0.1:9090", 2, "one of the two");
  ExpectRefused(junk + " --job 17", 2, "--job needs --prometheus");
  // Nobody listens on port 1: the server cannot be reached (a failure while running: 3).
  ExpectRefused("--prometheus http://127.0.0.1:1", 3, "cannot query Prometheus at");
}

// The diagnoses' one exit rule (docs/output.md): a judgement that did not decide, and no
// alert, is 4, as locate's inconclusive; the same job with the straggler clear is 1.
TEST_F(WatchCli, AnInconclusiveJudgementExitsFour) {
  Outcome o = Run(Write("skewed.jsonl", SkewedJob(1000)));
  EXPECT_EQ(o.exit_code, 4) << o.err << o.out;
  EXPECT_TRUE(std::regex_search(o.out, std::regex("\nINCONCLUSIVE +straggler +rank 2 on node ")))
      << o.out;
  EXPECT_EQ(o.out.find("CRITICAL"), std::string::npos) << o.out;
  o = Run(Write("clear.jsonl", SkewedJob(0)));
  EXPECT_EQ(o.exit_code, 1) << o.err << o.out;
  o = Run(Write("healthy.jsonl", Job(20, 0, 40)));
  EXPECT_EQ(o.exit_code, 0) << o.err << o.out;
  o = Run("--help");  // and --help says so
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(
      o.out.find("Exit codes: 0 no CRITICAL finding and nothing undecided; 1 a CRITICAL finding"),
      std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("; 4 an INCONCLUSIVE finding"), std::string::npos) << o.out;
}

// The issue's case: NCCL Inspector's default output of a 120 s job of 4 ranks, all_reduce
// 1.7x slower half-way, exits 1 with the drop, as the plugin's own output does.
TEST_F(WatchCli, InspectorsDefaultOutputWithADropHalfWayExitsOne) {
  const Outcome o = Run(Write("inspector.jsonl", DocumentedSlowedJob(false)));
  EXPECT_EQ(o.exit_code, 1) << o.err << o.out;
  EXPECT_TRUE(std::regex_search(o.out, std::regex("\nCRITICAL +drop +all_reduce "))) << o.out;
  EXPECT_NE(o.out.find("41% below this job's baseline"), std::string::npos) << o.out;
}

TEST_F(WatchCli, ReadsADirectoryAndExitsOneOnAnAlert) {
  fs::create_directories(dir_ / "run");
  Write("run/a.jsonl", Job(10, 0, 40, 1, 5000));
  Write("run/ignored.txt", "not a record");
  Outcome o = Run((dir_ / "run").string());
  EXPECT_EQ(o.exit_code, 1) << o.err;
  EXPECT_TRUE(
      std::regex_search(o.out, std::regex("\nCRITICAL +straggler +rank 1 on node node-a: ")))
      << o.out;
  EXPECT_NE(o.out.find("all_reduce"), std::string::npos);

  Write("healthy.jsonl", Job(10, 0, 40));
  o = Run((dir_ / "healthy.jsonl").string() + " --format json");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  const auto json = nlohmann::json::parse(o.out);
  ASSERT_EQ(json.size(), 1u);
  EXPECT_EQ(json[0]["records"], 40);
  EXPECT_TRUE(json[0]["findings"].empty());
  EXPECT_EQ(json[0]["findings_version"], kFindingsVersion);
  EXPECT_FALSE(json[0].contains("alerts"));
  EXPECT_FALSE(json[0].contains("notes"));
}

// A window's text is its tables, then its findings as the one text writer lays them out
// (severity, source, "where: what", the fix below a problem), columns the same in every
// window; its JSON the one JSON form, every key present.
TEST(WatchFormat, FindingsAreWrittenInTheOneFormOfEveryDiagnosis) {
  WatchBaseline baseline;
  const auto windows =
      JudgeWindows(ReadInspectorJsonl(SkewedJob(1000), "job").records, WatchOptions{}, &baseline);
  ASSERT_EQ(windows.size(), 1u);
  const std::string text = WatchText(windows);
  const std::string line =
      "INCONCLUSIVE  straggler      rank 2 on node node-b: starts its collectives 1.5 ms after "
      "the first rank (median)";
  const size_t at = text.find("\n" + line);
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_LT(text.find("# ranks by lateness"), at) << text;  // the tables first
  EXPECT_NE(text.find("\n" + std::string(29, ' ') + "fix: watch a longer window"),
            std::string::npos)
      << text;

  const auto json = nlohmann::json::parse(WatchJson(windows));
  ASSERT_EQ(json.size(), 1u);
  EXPECT_EQ(json[0]["findings_version"], kFindingsVersion);
  ASSERT_EQ(json[0]["findings"].size(), 1u);
  const auto& f = json[0]["findings"][0];
  for (const char* key : {"severity", "source", "what", "where", "evidence", "fix", "figures",
                          "decided", "element", "nodes"}) {
    EXPECT_TRUE(f.contains(key)) << key << " in " << f.dump();
  }
  EXPECT_EQ(f["severity"], "WARN");
  EXPECT_EQ(f["source"], "straggler");
  EXPECT_EQ(f["where"], "rank 2 on node node-b");
  EXPECT_EQ(f["decided"], false);
  EXPECT_NEAR(f["figures"]["median_late_us"].get<double>(), 1500, 10);
}

TEST_F(WatchCli, FollowReadsWhatIsAppendedAndStopsAtTheFirstAlert) {
  const std::string file = Write("live.jsonl", Job(10, 0, 40));
  // The first read is the baseline; once watch has printed it, a writer appends a window at
  // a quarter of the busbw (waiting for the output, not for a time, so load cannot reorder).
  const std::string writer = "(for i in $(seq 1200); do grep -q \"# window\" " +
                             (dir_ / "stdout").string() + " && break; sleep 0.05; done; cat " +
                             Write("later", Job(10, 5'000'000, 10)) + " >> " + file + ") &";
  const Outcome o = Shell(writer + " timeout 60 " + std::string(FABRICSCOPE_BINARY) +
                          " watch --follow --interval 0.2 --duration 30 " + file);
  EXPECT_EQ(o.exit_code, 1) << o.err << o.out;
  EXPECT_TRUE(std::regex_search(
      o.out, std::regex("\nCRITICAL +drop +all_reduce <=1MiB: busbw 10 GB/s, 75% below")))
      << o.out;
}

// ---------------------------------------------------------------------------------------
// A job under the fake NCCL (TEST DOUBLE) with the real plugin.

// The fake NCCL finds the plugin by name as NCCL does and picks the newest interface it
// knows; `run` under it produces profiler records either way, and none when disabled.
TEST_F(WatchCli, TheFakeNcclLoadsThePluginAsNcclDoes) {
  const fs::path plugin_dir = fs::path(PROFILER_PLUGIN_PATH).parent_path();
  auto run = [&](const std::string& name, const std::string& env) {
    fs::remove(dir_ / "trace");
    return Shell("FAKE_GPU_TRACE=" + (dir_ / "trace").string() + " LD_LIBRARY_PATH=" +
                 plugin_dir.string() + " NCCL_PROFILER_PLUGIN=" + name + " " + env + " " +
                 FABRICSCOPE_BINARY + " run --backend nccl --nccl-lib " + FAKE_NCCL_PATH +
                 " --gpu-runtime-lib " + FAKE_CUDART_PATH + " -t 2 -b 1K -e 4K -f 4 -n 2");
  };
  const std::string v6_dir = (dir_ / "v6").string();
  Outcome o = run("fabricscope", "FABRICSCOPE_PROFILER_DUMP_DIR=" + v6_dir);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  std::string trace = Slurp(dir_ / "trace");
  // mask 4174: Coll, P2p, ProxyOp, KernelCh, CeColl.
  for (const char* expected :
       {"profiler could not open fabricscope", "profiler opened libnccl-profiler-fabricscope.so",
        "profiler interface v6", "profiler init rank=0 result=0 mask=4174",
        "profiler init rank=1 result=0 mask=4174", "profiler finalize result=0"}) {
    EXPECT_NE(trace.find(expected), std::string::npos) << expected << "\n" << trace;
  }
  InspectorRead read = WatchSource({v6_dir}).Poll();
  EXPECT_GT(read.records.size(), 8u);  // 2 ranks x 2 sizes x (warm-up + timed)
  for (const InspectorRecord& r : read.records) EXPECT_EQ(r.timing_source, "kernel_gpu");
  EXPECT_FALSE(read.links.empty());  // the ProxyOps of the ring, per peer

  const std::string v5_dir = (dir_ / "v5").string();
  o = run(PROFILER_PLUGIN_PATH,
          "FAKE_NCCL_PROFILER_MAX_VERSION=5 FABRICSCOPE_PROFILER_DUMP_DIR=" + v5_dir);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(Slurp(dir_ / "trace").find("profiler interface v5"), std::string::npos);
  read = WatchSource({v5_dir}).Poll();
  EXPECT_GT(read.records.size(), 8u);

  const std::string v4_dir = (dir_ / "v4").string();
  o = run(PROFILER_PLUGIN_PATH,
          "FAKE_NCCL_PROFILER_MAX_VERSION=4 FABRICSCOPE_PROFILER_DUMP_DIR=" + v4_dir);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  trace = Slurp(dir_ / "trace");
  EXPECT_NE(trace.find("profiler interface v4"), std::string::npos) << trace;
  read = WatchSource({v4_dir}).Poll();
  EXPECT_GT(read.records.size(), 8u);
  for (const InspectorRecord& r : read.records) EXPECT_EQ(r.nranks, 2);

  const std::string off_dir = (dir_ / "off").string();
  o = run(PROFILER_PLUGIN_PATH,
          "FABRICSCOPE_PROFILER_ENABLE=0 FABRICSCOPE_PROFILER_DUMP_DIR=" + off_dir);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(Slurp(dir_ / "trace").find("profiler init rank=0 result=0 mask=0"), std::string::npos);
  EXPECT_FALSE(fs::exists(off_dir));
}

// The position of the first match of `pattern` in `text` at or after `from` (npos if none),
// with its first group in `id`.
size_t After(const std::string& text, const std::string& pattern, size_t from,
             std::string* id = nullptr) {
  if (from == std::string::npos) return from;
  std::smatch m;
  const std::string rest = text.substr(from);
  if (!std::regex_search(rest, m, std::regex(pattern))) return std::string::npos;
  if (id != nullptr && m.size() > 1) *id = m[1];
  return from + static_cast<size_t>(m.position(0));
}

// The calls a plugin gets from the fake NCCL, in NCCL 2.30's order, with the descriptors'
// fields (fake_profiler.h cites where NCCL makes each): on the caller's thread the GroupApi
// with its GroupStartApiStop state and the CollApi, started and stopped, and the
// KernelLaunch around the launch; after the launch, on the same thread (hostStreamPlanTask
// called by ncclLaunchKernelAfter_NoCuda) the Group, the Coll under the CollApi (parentGroup: the
// Group) started and stopped back to back, the Group's stop; then on the proxy thread one KernelCh
// per channel under the Coll with the GPU timer, its KernelChStop state and stop; the GroupApi's
// end state and stop at the group's end; finalize per communicator.
TEST_F(WatchCli, TheFakeNcclPassesTheEventsNcclPasses) {
  const std::string log = (dir_ / "calls").string();
  const Outcome o =
      Shell("RECORDING_PLUGIN_LOG=" + log + " NCCL_PROFILER_PLUGIN=" + RECORDING_PLUGIN_PATH + " " +
            FABRICSCOPE_BINARY + " run --backend nccl --nccl-lib " + FAKE_NCCL_PATH +
            " --gpu-runtime-lib " + FAKE_CUDART_PATH + " -t 1 -b 4K -e 4K -n 1 -w 0 -c 0 -d float");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::string calls = Slurp(log);
  EXPECT_NE(calls.find("init comm="), std::string::npos) << calls;
  EXPECT_NE(calls.find(" nnodes=1 nranks=1 rank=0"), std::string::npos) << calls;
  // One float all-reduce of 4 KiB: find its Coll, then its parents and children in order.
  std::string coll;
  std::string api;
  std::string group;
  const size_t at = After(calls,
                          R"(start (\d+) coll parent=\d+ rank=0 seq=\d+ func=AllReduce count=1024 )"
                          R"(type=ncclFloat32 algo=RING proto=SIMPLE channels=2 parentGroup=\d+)",
                          0, &coll);
  ASSERT_NE(at, std::string::npos) << calls;
  std::smatch m;
  const std::string line = calls.substr(at, calls.find('\n', at) - at);
  ASSERT_TRUE(std::regex_search(line, m, std::regex(R"(parent=(\d+).*parentGroup=(\d+))")));
  api = m[1];
  group = m[2];
  std::string group_api;
  const size_t api_start =
      After(calls, "start " + api + " type=512 parent=(\\d+)\n", 0, &group_api);
  ASSERT_NE(api_start, std::string::npos) << "the CollApi is the Coll's parent\n" << calls;
  EXPECT_LT(After(calls, "start " + group_api + " type=256 parent=-1\n", 0), api_start) << calls;
  EXPECT_NE(After(calls, "state " + group_api + " 23 ", 0), std::string::npos) << calls;
  EXPECT_NE(After(calls, "stop " + api + "\n", api_start), std::string::npos) << calls;
  const size_t group_start = After(calls, "start " + group + " type=1 parent=-1\n", 0);
  ASSERT_LT(group_start, at) << calls;
  const size_t coll_stop = After(calls, "stop " + coll + "\n", at);
  const size_t group_stop = After(calls, "stop " + group + "\n", coll_stop);
  ASSERT_NE(group_stop, std::string::npos) << calls;
  for (const char* ch : {"0", "1"}) {
    std::string kernel;
    const size_t k =
        After(calls, "start (\\d+) kernel parent=" + coll + " channel=" + ch + " timer=1\n",
              group_stop, &kernel);
    ASSERT_NE(k, std::string::npos) << "KernelCh " << ch << " after the Coll's stop\n" << calls;
    const size_t state = After(calls, "state " + kernel + " 22 timer=1\n", k);
    EXPECT_NE(After(calls, "stop " + kernel + "\n", state), std::string::npos) << calls;
  }
  // The group's end (src/group.cc, ncclGroupEndInternal): GroupEndApiStart, then the launch,
  // the kernel's launch under the GroupApi before the plan's events, and the GroupApi's stop
  // after them.
  const size_t launch = After(calls, "start \\d+ type=2048 parent=" + group_api + "\n", 0);
  EXPECT_LT(launch, group_start) << calls;
  const size_t end_state = After(calls, "state " + group_api + " 24 ", 0);
  ASSERT_NE(end_state, std::string::npos) << calls;
  EXPECT_LT(end_state, launch) << calls;
  EXPECT_NE(After(calls, "stop " + group_api + "\n", group_stop), std::string::npos) << calls;
  EXPECT_NE(calls.find("finalize"), std::string::npos) << calls;
}

TEST_F(WatchCli, UnderTheFakeNcclWatchNamesTheSlowedRank) {
  const fs::path out = RunFakeJob("FAKE_NCCL_SLOW=1:4000", "-b 64K -e 256K -f 4 -n 10 -w 2");
  ASSERT_FALSE(HasFailure());
  size_t files = 0;
  for (const auto& f : fs::directory_iterator(out)) files += f.path().extension() == ".jsonl";
  EXPECT_EQ(files, 3u);  // one per process

  const Outcome o = Run(out.string() + " --window 600 --straggler-us 2000");
  EXPECT_EQ(o.exit_code, 1) << o.err << o.out;
  EXPECT_TRUE(std::regex_search(o.out, std::regex("\nCRITICAL +straggler +rank 1 on node ")))
      << o.out;
  EXPECT_FALSE(std::regex_search(o.out, std::regex("straggler +rank [02] on node "))) << o.out;

  // analyze reads the same files as results.
  const Outcome a =
      Shell(std::string(FABRICSCOPE_BINARY) + " analyze " + out.string() + "/*.jsonl");
  EXPECT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("all_reduce"), std::string::npos) << a.out;
}

// One link slowed: every link's network takes 20 ms after the kernel (FAKE_NCCL_LINK_US),
// rank 1's towards rank 2 ten times that (FAKE_NCCL_SLOW_PEER): watch names the pair, with
// the hosts, against the other links of the ring. Each call waits for the last (-z 2): NCCL
// 2.30 starts a ProxyOp when the host posts it, so with calls queued ahead a ProxyOp's time
// is mostly its wait in the queue, and without a network time it is mostly the ranks'
// arrival skew (both seen here: the other links spread 7.8x and 155x, and watch said
// "inconclusive", rightly).
TEST_F(WatchCli, UnderTheFakeNcclWatchNamesTheSlowLink) {
  const fs::path out = RunFakeJob("FAKE_NCCL_SLOW_PEER=1:2:10 FAKE_NCCL_LINK_US=20000",
                                  "-b 64K -e 64K -n 10 -w 2 -z 2");
  ASSERT_FALSE(HasFailure());
  const Outcome o = Run(out.string() + " --window 600");
  EXPECT_EQ(o.exit_code, 1) << o.err << o.out;
  EXPECT_TRUE(std::regex_search(
      o.out,
      std::regex(
          R"(\nCRITICAL +slow-link +rank 1 -> rank 2 \(\S+ -> \S+\): \d+\.\dx its ring neighbours)")))
      << o.out;
  EXPECT_FALSE(std::regex_search(o.out, std::regex("slow-link +rank [02] "))) << o.out;
}

// AlltoAll's send and receive of each rank to itself: NCCL 2.30 gives them a P2p event with
// nChannels but no proxy op, so no KernelCh ever follows (src/enqueue.cc, addP2pToPlan:
// nProxyOps = selfSend ? 0 : 2; the fake does the same). The plugin must complete them at
// their stop: waiting for KernelCh would never write them, and hold a pool slot each.
TEST_F(WatchCli, SendsToItselfCompleteWithoutKernelChEvents) {
  const fs::path out = RunFakeJob("", "--collective alltoall -b 3K -e 3K -n 10 -w 1");
  ASSERT_FALSE(HasFailure());
  size_t files = 0;
  for (const auto& f : fs::directory_iterator(out)) {
    if (f.path().extension() != ".jsonl") continue;
    ++files;
    int self_sends = 0;
    int next_sends = 0;
    int dropped = 0;
    for (const nlohmann::json& j : JsonLines(f.path())) {
      if (j.contains("dump_stats"))
        dropped += j["dump_stats"].value("coll_dropped_since_last_dump", 0);
      if (!j.contains("p2p_perf") || j["p2p_perf"]["p2p"] != "Send") continue;
      const int rank = j["header"]["rank"];
      const int peer = j["p2p_perf"]["p2p_peer"];
      if (peer == rank) {
        ++self_sends;
        EXPECT_EQ(j["p2p_perf"]["p2p_timing_source"], "collective_cpu") << j.dump();
      }
      if (peer == (rank + 1) % 3) ++next_sends;
    }
    EXPECT_GT(next_sends, 0) << f.path();
    EXPECT_EQ(self_sends, next_sends) << f.path();  // one of each per AlltoAll
    EXPECT_EQ(dropped, 0) << f.path();
  }
  EXPECT_EQ(files, 3u);
}

// NCCL 2.30 names ncclUint8 "Unknown" in the descriptor (src/collectives.cc,
// ncclDatatypeToString; the fake does the same), so its size is not known: as NCCL's
// Inspector (inspectorShouldTrackColl), the plugin keeps such a collective whatever
// FABRICSCOPE_PROFILER_MIN_BYTES says, and writes the datatype as NCCL gave it.
TEST_F(WatchCli, ACollectiveOfATypeNcclDoesNotNameIsKeptAndSaysSo) {
  const fs::path out = RunFakeJob("FABRICSCOPE_PROFILER_MIN_BYTES=1024",
                                  "-d uint8 -o max -b 64K -e 64K -n 5 -w 1", 2);
  ASSERT_FALSE(HasFailure());
  size_t unknown = 0;
  for (const auto& f : fs::directory_iterator(out)) {
    for (const nlohmann::json& j : JsonLines(f.path())) {
      if (!j.contains("coll_perf") || j["coll_perf"]["coll"] != "AllReduce") continue;
      if (j["fabricscope"]["datatype"] == "Unknown") ++unknown;
    }
  }
  EXPECT_GE(unknown, 2u * 6);  // each process: 5 + 1 timed and warm-up calls, at least
}

}  // namespace
}  // namespace fabricscope
