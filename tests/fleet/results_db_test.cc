// The results store's contract, run alike on both engines: SQLite in a temporary file and a
// real PostgreSQL server (tests/fleet/postgres_server.h) in a temporary cluster.
#include "fabricscope/results_db.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "fleet/postgres_server.h"
#include "fleet/sql.h"

namespace fabricscope::db {
namespace {

namespace fs = std::filesystem;

class StoreContract : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "postgresql") {
      server_ = std::make_unique<testing::PostgresServer>();
      if (!server_->skip_reason().empty()) GTEST_SKIP() << server_->skip_reason();
      url_ = ParseStoreUrl(server_->NewDatabase());
    } else {
      dir_ = fs::temp_directory_path() /
             ("fabricscope-store-" + std::to_string(getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name());
      fs::remove_all(dir_);
      fs::create_directories(dir_);
      url_ = ParseStoreUrl("sqlite://" + (dir_ / "results.db").string());
    }
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::unique_ptr<SqlConnection> Raw() const {
    return url_.engine == StoreUrl::Engine::kPostgres ? OpenPostgres(url_.target, url_.shown)
                                                      : OpenSqlite(url_.target, url_.shown);
  }

  std::unique_ptr<testing::PostgresServer> server_;
  fs::path dir_;
  StoreUrl url_;
};

Record Sample(const std::string& host, double busbw) {
  Record r;
  r.command = "check";
  r.command_line = {"fabricscope", "check", "--db", "x", "run.json"};
  r.hosts = {host};
  r.platform = "dgx-h100";
  r.fabricscope_version = "0.1.0";
  r.nccl_version = "2.28.9";
  r.outcome = "WARN";
  for (uint64_t size = 1 << 20; size <= (1u << 24); size *= 2) {
    r.rows.push_back({.collective = "all_reduce",
                      .size = size,
                      .count = size / 4,
                      .dtype = "float",
                      .redop = "sum",
                      .time_us = 12.5,
                      .algbw = busbw / 2,
                      .busbw = busbw,
                      .wrong = 0});
  }
  r.findings.push_back({.severity = Severity::kWarn,
                        .source = "bandwidth",
                        .what = "busbw 92.0 GB/s, below the healthy 93.5 GB/s \"quoted\"",
                        .where = "",
                        .evidence = {"run.json:1: # Avg bus bandwidth : 92.0"},
                        .fix = "run doctor",
                        .figures = {{"busbw", busbw}},
                        .decided = true,
                        .element = "node",
                        .nodes = {host}});
  r.measures.push_back({.element_kind = "node",
                        .element = host,
                        .collective = "all_reduce",
                        .ranks = 8,
                        .value = busbw,
                        .healthy = 93.5,
                        .fail_below = 74.8});
  return r;
}

TEST_P(StoreContract, WritesEveryPartOfARecordAndReadsItBack) {
  auto store = OpenResultsStore(url_);
  EXPECT_EQ(store->SchemaVersion(), kSchemaVersion);
  const Record written = Sample("gpu-1", 92.0);
  const int64_t id = store->Write(written);
  EXPECT_GT(id, 0);

  const std::vector<StoredRun> runs = store->Runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].id, id);
  EXPECT_EQ(runs[0].command, "check");
  EXPECT_EQ(runs[0].hosts, written.hosts);
  EXPECT_EQ(runs[0].platform, "dgx-h100");
  EXPECT_EQ(runs[0].outcome, "WARN");
  EXPECT_EQ(runs[0].rows, written.rows.size());
  EXPECT_EQ(runs[0].findings, 1u);
  EXPECT_TRUE(runs[0].time.ends_with("Z")) << runs[0].time;

  const std::vector<Finding> findings = store->FindingsOf(id);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(FindingJson(findings[0]), FindingJson(written.findings[0]));

  const std::vector<StoredMeasure> measures = store->Measures({});
  ASSERT_EQ(measures.size(), 1u);
  EXPECT_EQ(measures[0].run_id, id);
  EXPECT_EQ(measures[0].measure.element, "gpu-1");
  EXPECT_DOUBLE_EQ(measures[0].measure.value, 92.0);
  ASSERT_TRUE(measures[0].measure.healthy.has_value());
  EXPECT_DOUBLE_EQ(*measures[0].measure.healthy, 93.5);
  EXPECT_DOUBLE_EQ(*measures[0].measure.fail_below, 74.8);

  // The rows, through the engine itself.
  const auto rows = Raw()->Query("SELECT size, busbw, wrong FROM results ORDER BY ordinal", {});
  ASSERT_EQ(rows.size(), written.rows.size());
  EXPECT_EQ(*rows[0][0], "1048576");
  EXPECT_DOUBLE_EQ(std::stod(*rows[0][1]), 92.0);
  EXPECT_EQ(*rows[0][2], "0");
}

TEST_P(StoreContract, QueriesByElementKindCollectiveAndTime) {
  auto store = OpenResultsStore(url_);
  Record set = Sample("gpu-1", 300);
  set.measures[0].element_kind = "nodes";
  set.measures[0].element = "gpu-1,gpu-2";
  store->Write(set);
  Record later = Sample("gpu-3", 310);
  later.time = "2030-01-01T00:00:00.000000Z";
  store->Write(later);
  // A host matches the node sets holding it.
  EXPECT_EQ(store->Measures({.element = "gpu-2"}).size(), 1u);
  EXPECT_EQ(store->Measures({.element_kind = "node"}).size(), 1u);
  EXPECT_EQ(store->Measures({.collective = "sendrecv"}).size(), 0u);
  EXPECT_EQ(store->Measures({.since = "2029-12-31"}).size(), 1u);
  EXPECT_EQ(store->Runs("2029-12-31").size(), 1u);
}

TEST_P(StoreContract, OpensAnExistingStoreWithoutChangingItAndRefusesANewerSchema) {
  OpenResultsStore(url_)->Write(Sample("gpu-1", 100));
  EXPECT_EQ(OpenResultsStore(url_)->Runs().size(), 1u);  // schema created once, data kept
  auto raw = Raw();
  raw->Exec("INSERT INTO fabricscope_schema (version) VALUES (99)");
  try {
    OpenResultsStore(url_);
    FAIL() << "a newer schema was opened";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("newer than this fabricscope's"), std::string::npos)
        << e.what();
  }
}

// 64 processes write at once, each its own record of 16 rows: every run and every row is
// there afterwards.
TEST_P(StoreContract, SixtyFourConcurrentWritersLoseNoRow) {
  OpenResultsStore(url_);  // the schema first, as a fleet's store has it
  constexpr int kWriters = 64;
  std::vector<pid_t> children;
  for (int i = 0; i < kWriters; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 0;
      try {
        OpenResultsStore(url_)->Write(Sample("gpu-" + std::to_string(i), 100 + i));
      } catch (const std::exception& e) {
        fprintf(stderr, "writer %d: %s\n", i, e.what());
        code = 1;
      }
      _exit(code);
    }
    children.push_back(pid);
  }
  int failed = 0;
  for (const pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  EXPECT_EQ(failed, 0);
  auto store = OpenResultsStore(url_);
  const std::vector<StoredRun> runs = store->Runs();
  EXPECT_EQ(runs.size(), static_cast<size_t>(kWriters));
  size_t rows = 0;
  for (const StoredRun& r : runs) rows += r.rows;
  EXPECT_EQ(rows, kWriters * Sample("x", 1).rows.size());
  EXPECT_EQ(store->Measures({}).size(), static_cast<size_t>(kWriters));
}

TEST_P(StoreContract, AStoreThatIsDownIsAStoreErrorThatSaysWhich) {
  StoreUrl down = url_;
  if (server_) {
    OpenResultsStore(url_);
    server_->Stop();
  } else {
    down = ParseStoreUrl((dir_ / "no-such-dir" / "results.db").string());
  }
  try {
    OpenResultsStore(down)->Write(Sample("gpu-1", 1));
    FAIL() << "wrote to a store that is down";
  } catch (const StoreError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(down.shown), std::string::npos) << what;
    EXPECT_NE(what.find(server_ ? "cannot connect" : "does not exist"), std::string::npos) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, StoreContract, ::testing::Values("sqlite", "postgresql"),
                         [](const auto& engine) { return engine.param; });

TEST(StoreUrl, NamesTheEngineAndRefusesWhatItCannotStoreIn) {
  EXPECT_EQ(ParseStoreUrl("results.db").engine, StoreUrl::Engine::kSqlite);
  EXPECT_EQ(ParseStoreUrl("results.db").target, "results.db");
  EXPECT_EQ(ParseStoreUrl("sqlite:///var/lib/f.db").target, "/var/lib/f.db");
  EXPECT_EQ(ParseStoreUrl("sqlite:rel/f.db").target, "rel/f.db");
  EXPECT_EQ(ParseStoreUrl("postgres://u@h/db").engine, StoreUrl::Engine::kPostgres);
  EXPECT_EQ(ParseStoreUrl("postgresql://u:secret@h/db").shown, "postgresql://u:***@h/db");
  EXPECT_THROW(ParseStoreUrl(""), UsageError);
  EXPECT_THROW(ParseStoreUrl("sqlite://relative.db"), UsageError);
  EXPECT_THROW(ParseStoreUrl("sqlite:"), UsageError);
  try {
    ParseStoreUrl("mysql://h/db");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'mysql'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fabricscope::db
