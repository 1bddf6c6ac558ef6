// The results store (docs/fleet.md): every run's rows, every verdict and finding, and the
// figures history follows per node set, node and link, kept in SQLite (a file, by default)
// or PostgreSQL (a fleet's many writers). One schema and one writer behind an interface; the
// two engines differ only in how a statement reaches them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/finding.h"

namespace fabricscope::db {

// The store could not be reached, read or written (a connection refused, a locked or
// read-only file, a schema from a newer fabricscope). The message says which store, what
// failed and what to do.
class StoreError : public SystemError {
 public:
  explicit StoreError(const std::string& message) : SystemError(message) {}
};

// Which engine a URL names, and how to reach it.
struct StoreUrl {
  enum class Engine { kSqlite, kPostgres };
  Engine engine = Engine::kSqlite;
  std::string target;  // the SQLite file's path; the PostgreSQL URL as libpq takes it
  std::string shown;   // the URL as said in messages (a password replaced by ***)
};

// Parses `--db URL` / FABRICSCOPE_DB: a file path or sqlite:///path (sqlite://relative is
// refused), postgresql://... or postgres://... (libpq's own URI form). Throws UsageError for
// an empty URL, another scheme, or sqlite: without a path.
StoreUrl ParseStoreUrl(std::string_view url);

// One figure of one element that history follows: busbw of a node set in a collective, of a
// node in locate's per-node round, of a link in locate's pair rounds.
struct Measure {
  std::string element_kind{};  // "nodes" (several hosts), "node", "link", "nic"
  std::string element{};       // "a,b,c" (sorted host names), "a", "a<->b"
  std::string collective{};    // "all_reduce", "sendrecv"
  std::string metric = "busbw";
  std::string unit = "GB/s";
  int ranks = 0;
  uint64_t size = 0;  // the message size the figure is of; 0: a range (check's judged sizes)
  double value = 0;
  // The platform's band where the verdict had one: below `healthy` WARN, below
  // `fail_below` CRITICAL.
  std::optional<double> healthy{};
  std::optional<double> fail_below{};
};

// One row of a run's table, as the JSON report has it.
struct Row {
  std::string collective{};
  uint64_t size = 0;
  uint64_t count = 0;
  std::string dtype{};
  std::string redop{};
  int root = -1;
  bool in_place = false;
  double time_us = 0;
  double algbw = 0;
  double busbw = 0;
  int64_t wrong = -1;  // -1: not checked
};

// Everything one command's run says, as it is written.
struct Record {
  std::string command{};                    // "run", "check", "locate", "doctor", "watch", "fabric"
  std::vector<std::string> command_line{};  // as typed
  std::string time{};                       // ISO 8601 UTC; empty: now, when written
  std::vector<std::string> hosts{};         // sorted, each once
  std::string platform{};                   // the catalog platform judged against; "" none
  std::string fabricscope_version{};
  std::string nccl_version{};  // "2.28.9"; "" no NCCL
  std::string outcome{};       // "OK", "WARN", "CRITICAL", "INCONCLUSIVE"; "" no verdict (run)
  std::vector<Row> rows{};
  std::vector<Finding> findings{};
  std::vector<Measure> measures{};
};

// A measure as read back, with the run it came from.
struct StoredMeasure {
  int64_t run_id = 0;
  std::string time{};
  std::string command{};
  std::string platform{};
  std::string outcome{};
  Measure measure{};
};

// What to read back; an empty field matches everything.
struct MeasureQuery {
  std::string element_kind{};
  std::string element{};  // exact, or one host of a node set ("a" matches "a,b")
  std::string collective{};
  std::string platform{};
  std::string since{};  // ISO 8601: this time and later
};

// A run as read back (history's list of verdicts).
struct StoredRun {
  int64_t id = 0;
  std::string time{};
  std::string command{};
  std::vector<std::string> hosts{};
  std::string platform{};
  std::string outcome{};
  size_t rows = 0;
  size_t findings = 0;
};

// The store. Each Write is one transaction: all of the record or none of it.
class ResultsStore {
 public:
  virtual ~ResultsStore() = default;
  // Writes `record`; returns its run id. Throws StoreError.
  virtual int64_t Write(const Record& record) = 0;
  // The measures matching `query`, oldest first. Throws StoreError.
  virtual std::vector<StoredMeasure> Measures(const MeasureQuery& query) = 0;
  // Every run, oldest first, with its counts. Throws StoreError.
  virtual std::vector<StoredRun> Runs(const std::string& since = "") = 0;
  // The findings of run `id`, in the order written. Throws StoreError.
  virtual std::vector<Finding> FindingsOf(int64_t id) = 0;
  // The schema version the store is at (kSchemaVersion once opened).
  virtual int SchemaVersion() = 0;
};

// The version of the schema this fabricscope writes (docs/fleet.md lists each version's
// migration). A store at a newer version is refused, an older one migrated on open.
inline constexpr int kSchemaVersion = 1;

// Opens the store `url` names, creating its schema on first use and migrating an older one.
// Many processes may open and write one store at once. Throws StoreError when it cannot be
// reached or its schema is newer than this fabricscope's.
std::unique_ptr<ResultsStore> OpenResultsStore(const StoreUrl& url);

// Now, as the store writes it: "2026-12-02T01:50:00.123456Z".
std::string UtcNow();

}  // namespace fabricscope::db
