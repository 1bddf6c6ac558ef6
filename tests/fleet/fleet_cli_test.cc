// The store through the binary, as a user (or cron) runs it: checks recorded with
// FABRICSCOPE_DB, history --regressions naming the node that slowed down, on SQLite and on
// a real PostgreSQL server; a store that is down costs no printed result.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "common/binary_test.h"
#include "fleet/postgres_server.h"

namespace fabricscope::test {
namespace {

// check's generic platform for one node of 2 ranks: healthy from 85 GB/s (0.85 of the 100
// GB/s intra-node figure), judged from 1 MB.
constexpr const char* kPlatform =
    "--gpus-per-node 2 --intra-node-busbw 100 --nics 1 --nic-rate 100 --transport TCP "
    "--judge-from 1M";

class FleetCli : public BinaryTest {
 protected:
  void SetUp() override {
    BinaryTest::SetUp();
    // A real run's JSON, measured once: its figures are then set to what each test needs.
    const Outcome o =
        Run("run -t 2 -b 1M -e 2M -f 2 --backend gloo -n 2 -J " + (dir_ / "base.json").string());
    ASSERT_EQ(o.exit_code, 0) << o.err;
    base_ = nlohmann::json::parse(Slurp(dir_ / "base.json"));
    for (auto& device : base_["config"]["devices"]) device["hostname"] = "gpu-node-7";
  }

  // A copy of the run with every row's busbw (and algbw) at `busbw`.
  std::string RunAt(double busbw, const std::string& name) {
    nlohmann::json j = base_;
    for (auto& row : j["results"]) {
      for (const char* placement : {"out_of_place", "in_place"}) {
        row[placement]["bus_bw"] = busbw;
        row[placement]["alg_bw"] = busbw;
      }
    }
    return Write(name, j.dump());
  }

  // Five healthy checks and one 8% slower, recorded in `store`, then history --regressions.
  void ExpectTheSlowRunNamed(const std::string& store) {
    const std::string env = "FABRICSCOPE_DB='" + store + "'";
    int i = 0;
    for (const double busbw : {100.0, 101.0, 99.0, 100.5, 99.5, 92.0}) {
      const std::string file = RunAt(busbw, "check" + std::to_string(++i) + ".json");
      const Outcome c =
          RunProgram(FABRICSCOPE_BINARY, std::string("check ") + kPlatform + " " + file, env);
      ASSERT_EQ(c.exit_code, 0) << c.out << c.err;  // 92 is inside the band: OK, not WARN
      EXPECT_NE(c.err.find("fabricscope: recorded as run " + std::to_string(i)), std::string::npos)
          << c.err;
    }
    ExpectHistoryNamesTheNode(env);
  }

  void ExpectHistoryNamesTheNode(const std::string& env) {
    const Outcome h = RunProgram(FABRICSCOPE_BINARY, "history --regressions", env);
    EXPECT_EQ(h.exit_code, 1) << h.out << h.err;
    EXPECT_NE(h.out.find("WARN          regression  gpu-node-7: busbw of all_reduce"),
              std::string::npos)
        << h.out;
    EXPECT_NE(h.out.find("fell 8.0% below its own baseline: 92.0 GB/s in run 6"), std::string::npos)
        << h.out;
    EXPECT_NE(h.out.find("against 100.0 GB/s (mean of 5 runs"), std::string::npos) << h.out;
    EXPECT_NE(h.out.find("still inside the band"), std::string::npos) << h.out;

    const Outcome json = RunProgram(FABRICSCOPE_BINARY, "history --regressions --format json", env);
    EXPECT_EQ(json.exit_code, 1);
    const auto j = nlohmann::json::parse(json.out);
    ASSERT_EQ(j["findings"].size(), 1u);
    EXPECT_EQ(j["findings"][0]["nodes"], nlohmann::json::array({"gpu-node-7"}));
    EXPECT_NEAR(j["findings"][0]["figures"]["drop_percent"].get<double>(), 8.0, 1e-6);
    EXPECT_EQ(j["series"][0]["points"].size(), 6u);
    ExpectHistoryListsThePoints(env);
  }

  void ExpectHistoryListsThePoints(const std::string& env) {
    // report --db plots the same history.
    const std::string html = (dir_ / "history.html").string();
    const Outcome report = RunProgram(FABRICSCOPE_BINARY, "report -o " + html, env);
    EXPECT_EQ(report.exit_code, 2) << report.err;  // report reads --db only, not the variable
    const std::string store = env.substr(env.find('\'') + 1, env.rfind('\'') - env.find('\'') - 1);
    const Outcome plotted = Run("report --db '" + store + "' -o " + html);
    EXPECT_EQ(plotted.exit_code, 0) << plotted.err;
    const std::string page = Slurp(html);
    EXPECT_NE(page.find("<h2>History</h2>"), std::string::npos);
    EXPECT_NE(page.find("node gpu-node-7: all_reduce busbw (GB/s)"), std::string::npos);
    EXPECT_NE(page.find("healthy minimum"), std::string::npos);
    EXPECT_NE(page.find("<svg"), std::string::npos);

    // Without --regressions history lists the points and exits 0; --element picks the node.
    const Outcome before =
        RunProgram(FABRICSCOPE_BINARY, "history --element gpu-node-7 --format csv", env);
    EXPECT_EQ(before.exit_code, 0) << before.err;
    EXPECT_NE(before.out.find(",node,gpu-node-7,all_reduce,2,0,busbw,92,GB/s,85,"),
              std::string::npos)
        << before.out;
  }

  nlohmann::json base_;
};

TEST_F(FleetCli, SqliteFiveHealthyChecksAndOneEightPercentSlowerMakeHistoryExit1NamingTheNode) {
  ExpectTheSlowRunNamed((dir_ / "results.db").string());
}

TEST_F(FleetCli, PostgresqlFiveHealthyChecksAndOneEightPercentSlowerMakeHistoryExit1) {
  testing::PostgresServer server;
  if (!server.skip_reason().empty()) GTEST_SKIP() << server.skip_reason();
  ExpectTheSlowRunNamed(server.NewDatabase());
}

TEST_F(FleetCli, AStoreThatIsDownCostsNoPrintedResult) {
  const std::string file = RunAt(100, "run.json");
  const std::string down = (dir_ / "missing-dir" / "results.db").string();
  const Outcome c = Run(std::string("check ") + kPlatform + " --db " + down + " " + file);
  EXPECT_EQ(c.exit_code, 3) << c.err;  // the verdict was OK: the store's failure is the news
  EXPECT_NE(c.out.find("OK: 1 test, 1 OK"), std::string::npos) << c.out;
  EXPECT_NE(c.err.find("error: the results were not recorded: results store " + down),
            std::string::npos)
      << c.err;
  EXPECT_NE(c.err.find("the report above is complete"), std::string::npos) << c.err;

  // A CRITICAL verdict keeps its exit 1.
  const std::string slow = RunAt(10, "slow.json");
  const Outcome bad = Run(std::string("check ") + kPlatform + " --db " + down + " " + slow);
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  EXPECT_NE(bad.out.find("CRITICAL"), std::string::npos) << bad.out;

  // The benchmark's own table and JSON too.
  const std::string json = (dir_ / "measured.json").string();
  const Outcome r = Run("run -t 2 -b 1K -e 4K --backend gloo -n 1 -J " + json + " --db " + down);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.out.find("# Avg bus bandwidth"), std::string::npos) << r.out;
  EXPECT_EQ(nlohmann::json::parse(Slurp(json))["complete"], true);
}

TEST_F(FleetCli, PostgresqlDownIsTheSameClearError) {
  testing::PostgresServer server;
  if (!server.skip_reason().empty()) GTEST_SKIP() << server.skip_reason();
  const std::string url = server.NewDatabase();
  server.Stop();
  const Outcome c =
      Run(std::string("check ") + kPlatform + " --db '" + url + "' " + RunAt(100, "run.json"));
  EXPECT_EQ(c.exit_code, 3) << c.err;
  EXPECT_NE(c.out.find("OK: 1 test"), std::string::npos) << c.out;
  EXPECT_NE(c.err.find("cannot connect"), std::string::npos) << c.err;
}

TEST_F(FleetCli, BadStoreUrlsAreRefusedBeforeAnyWork) {
  ExpectRefused("run -t 2 -b 1K -e 1K --db mysql://h/db", 2, "is not one fabricscope stores in");
  ExpectRefused("history", 2, "give --db URL or set FABRICSCOPE_DB");
  ExpectRefused("history --db " + (dir_ / "typo.db").string(), 2, "no results store at");
  EXPECT_FALSE(fs::exists(dir_ / "typo.db"));
  const Outcome o = RunProgram(FABRICSCOPE_BINARY, "doctor", "FABRICSCOPE_DB=sqlite:");
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_NE(o.err.find("FABRICSCOPE_DB: --db sqlite:"), std::string::npos) << o.err;
}

TEST_F(FleetCli, DoctorLocateAndFabricRecordTheirFindings) {
  const std::string db = (dir_ / "results.db").string();
  // doctor of this machine, locate on a simulated cluster, fabric from saved outputs.
  EXPECT_NE(Run("doctor --db " + db).exit_code, 3);
  EXPECT_NE(Run("locate --simulate 4 --inject node:2 --seed 1 --db " + db).exit_code, 3);
  const Outcome fabric = Run("fabric --from " + std::string(FABRICSCOPE_SOURCE_DIR) +
                             "/tests/fabric/data/faults --db " + db);
  EXPECT_NE(fabric.exit_code, 3) << fabric.err;
  const Outcome sql = Shell("sqlite3 " + db +
                            " 'SELECT command, COUNT(*) > 0 FROM runs JOIN "
                            "findings ON findings.run_id = runs.id GROUP BY command ORDER BY "
                            "command'");
  EXPECT_EQ(sql.out, "doctor|1\nfabric|1\nlocate|1\n") << sql.err;
}

}  // namespace
}  // namespace fabricscope::test
