// What recording a result costs (docs/performance.md, "Recording results"): a check's record
// of a full sweep (two collectives, 8 B to 8 GB by factors of 2, both placements: 124 rows,
// its findings and figures), opened and written as a command does (OpenResultsStore, Write),
// into SQLite on this machine's disk and into a PostgreSQL server started for the bench on a
// local socket (tests/fleet/postgres_server.cc); side by side, in the same run, the same
// record written as the JSON file -J writes (a peer every run already pays for), and both as
// a share of a one-minute sweep.
//
//   store_write [--rounds 50] [--no-postgres]
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_stats.h"
#include "fabricscope/results_db.h"
#include "fleet/postgres_server.h"

namespace {

using fabricscope::Finding;
using fabricscope::Severity;
namespace db = fabricscope::db;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

db::Record SweepRecord() {
  db::Record r;
  r.command = "check";
  r.command_line = {"fabricscope", "check", "--platform", "dgx-h100", "run.json"};
  r.hosts = {"gpu-1", "gpu-2"};
  r.platform = "dgx-h100";
  r.fabricscope_version = "0.1.0";
  r.nccl_version = "2.28.9";
  r.outcome = "OK";
  for (const char* collective : {"all_reduce", "all_gather"}) {
    for (uint64_t size = 8; size <= (8ull << 30); size *= 2) {
      for (const bool in_place : {false, true}) {
        r.rows.push_back({.collective = collective,
                          .size = size,
                          .count = size / 4,
                          .dtype = "float",
                          .redop = "sum",
                          .in_place = in_place,
                          .time_us = 12.5 + static_cast<double>(size) / 4e5,
                          .algbw = 200.5,
                          .busbw = 375.9,
                          .wrong = 0});
      }
    }
    r.measures.push_back({.element_kind = "nodes",
                          .element = "gpu-1,gpu-2",
                          .collective = collective,
                          .ranks = 16,
                          .value = 375.9,
                          .healthy = 340,
                          .fail_below = 272});
  }
  for (const char* source : {"correctness", "bandwidth", "latency", "transport", "fabric"}) {
    r.findings.push_back({.severity = Severity::kOk,
                          .source = source,
                          .what = "busbw 375.9 GB/s from 1 GB up, inside the healthy 340-410 GB/s",
                          .evidence = {"run.json:1: #  Avg bus bandwidth    : 375.9"},
                          .figures = {{"busbw", 375.9}},
                          .element = "nodes",
                          .nodes = {"gpu-1", "gpu-2"}});
  }
  return r;
}

// The record as a JSON file, written as -J writes its file: to FILE.partial, renamed.
void WriteJson(const db::Record& r, const fs::path& path) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const db::Row& row : r.rows) {
    rows.push_back({{"collective", row.collective},
                    {"size", row.size},
                    {"count", row.count},
                    {"type", row.dtype},
                    {"redop", row.redop},
                    {"in_place", row.in_place},
                    {"time", row.time_us},
                    {"alg_bw", row.algbw},
                    {"bus_bw", row.busbw},
                    {"nwrong", row.wrong}});
  }
  nlohmann::ordered_json doc = {{"command_line", r.command_line},
                                {"results", rows},
                                {"findings", fabricscope::FindingsJson(r.findings)}};
  const fs::path partial = path.string() + ".partial";
  std::ofstream(partial) << doc.dump(2);
  fs::rename(partial, path);
}

template <typename F>
std::vector<double> TimeRounds(int rounds, F write) {
  std::vector<double> ms;
  for (int i = 0; i < rounds; ++i) {
    const auto start = Clock::now();
    write(i);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  return ms;
}

void Print(const std::string& what, const std::vector<double>& ms, double json_median) {
  const double median = fabricscope::bench::Median(ms);
  fmt::print(
      "{:<40} median {:7.2f} ms  p90 {:7.2f} ms  {:6.1f}x the JSON file  {:.3f}% of a 60 s sweep\n",
      what, median, fabricscope::bench::Quantile(ms, 0.9), median / json_median,
      100 * median / 60'000);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"what recording a check's record in the results store costs"};
  int rounds = 50;
  bool no_postgres = false;
  app.add_option("--rounds", rounds, "records written per engine")->capture_default_str();
  app.add_flag("--no-postgres", no_postgres, "SQLite only");
  CLI11_PARSE(app, argc, argv);

  const db::Record record = SweepRecord();
  const fs::path dir =
      fs::temp_directory_path() / fmt::format("fabricscope-store-write-{}", getpid());
  fs::create_directories(dir);
  fmt::print("# one check's record: {} rows, {} findings, {} figures; {} rounds each\n",
             record.rows.size(), record.findings.size(), record.measures.size(), rounds);

  const auto json =
      TimeRounds(rounds, [&](int i) { WriteJson(record, dir / fmt::format("run-{}.json", i)); });
  const double json_median = fabricscope::bench::Median(json);
  Print("JSON file (-J's way: .partial, rename)", json, json_median);

  const db::StoreUrl sqlite = db::ParseStoreUrl((dir / "results.db").string());
  db::OpenResultsStore(sqlite);  // the schema, as an existing store has it
  Print("SQLite: open + write (a command's cost)",
        TimeRounds(rounds, [&](int) { db::OpenResultsStore(sqlite)->Write(record); }), json_median);
  auto kept = db::OpenResultsStore(sqlite);
  Print("SQLite: write on an open store", TimeRounds(rounds, [&](int) { kept->Write(record); }),
        json_median);

  if (!no_postgres) {
    fabricscope::testing::PostgresServer server;
    if (!server.skip_reason().empty()) {
      fmt::print("PostgreSQL: not measured: {}\n", server.skip_reason());
    } else {
      const db::StoreUrl pg = db::ParseStoreUrl(server.NewDatabase());
      db::OpenResultsStore(pg);
      Print("PostgreSQL: open + write (a command's cost)",
            TimeRounds(rounds, [&](int) { db::OpenResultsStore(pg)->Write(record); }), json_median);
    }
  }
  fs::remove_all(dir);
  return 0;
}
