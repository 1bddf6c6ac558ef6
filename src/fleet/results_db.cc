// The store's logic, the same on both engines: the URL, the versioned schema, one
// transaction a record, the reads history makes.
#include "fabricscope/results_db.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "fabricscope/strings.h"
#include "fleet/sql.h"

namespace fabricscope::db {
namespace {

using json = nlohmann::json;

// One schema change: the statements that take a store from version - 1 to version, run as
// one script in the transaction that records the version. {id} is the engine's auto-numbered
// key column. Appended to, never edited: a store written by an older fabricscope is brought
// up by the migrations after its version.
struct Migration {
  int version;
  std::string_view script;
};

constexpr Migration kMigrations[] = {
    {1, R"sql(
CREATE TABLE runs (id {id}, recorded_at TEXT NOT NULL, command TEXT NOT NULL,
  command_line TEXT NOT NULL, hosts TEXT NOT NULL, platform TEXT NOT NULL,
  fabricscope_version TEXT NOT NULL, nccl_version TEXT NOT NULL, outcome TEXT NOT NULL);
CREATE TABLE results (run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL, collective TEXT NOT NULL, size BIGINT NOT NULL,
  count BIGINT NOT NULL, dtype TEXT NOT NULL, redop TEXT NOT NULL, root INTEGER NOT NULL,
  in_place INTEGER NOT NULL, time_us DOUBLE PRECISION, algbw DOUBLE PRECISION,
  busbw DOUBLE PRECISION, wrong BIGINT NOT NULL);
CREATE TABLE findings (run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL, severity TEXT NOT NULL, source TEXT NOT NULL, what TEXT NOT NULL,
  location TEXT NOT NULL, element TEXT NOT NULL, nodes TEXT NOT NULL, evidence TEXT NOT NULL,
  fix TEXT NOT NULL, figures TEXT NOT NULL, decided INTEGER NOT NULL);
CREATE TABLE measures (run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  element_kind TEXT NOT NULL, element TEXT NOT NULL, collective TEXT NOT NULL,
  metric TEXT NOT NULL, unit TEXT NOT NULL, ranks INTEGER NOT NULL, size BIGINT NOT NULL,
  value DOUBLE PRECISION NOT NULL, healthy DOUBLE PRECISION, fail_below DOUBLE PRECISION);
CREATE INDEX results_by_run ON results (run_id);
CREATE INDEX findings_by_run ON findings (run_id);
CREATE INDEX measures_by_element ON measures (element_kind, element);
CREATE INDEX runs_by_time ON runs (recorded_at);
)sql"},
};

std::string Text(double v) { return fmt::format("{}", v); }
SqlValue Number(double v) { return std::isfinite(v) ? SqlValue(Text(v)) : std::nullopt; }
SqlValue Optional(const std::optional<double>& v) { return v ? Number(*v) : std::nullopt; }
std::string Int(int64_t v) { return std::to_string(v); }

const std::string& Need(const SqlValue& v) {
  static const std::string empty;
  return v ? *v : empty;
}
double ToDouble(const SqlValue& v) { return v ? std::stod(*v) : std::nan(""); }
std::optional<double> ToOptional(const SqlValue& v) {
  if (!v) return std::nullopt;
  return std::stod(*v);
}
int64_t ToInt(const SqlValue& v) { return v ? std::stoll(*v) : 0; }

// Rolls back a transaction that did not commit.
class Transaction {
 public:
  explicit Transaction(SqlConnection& sql) : sql_(sql) { sql_.BeginWrite(); }
  ~Transaction() {
    if (open_) {
      try {
        sql_.Exec("ROLLBACK");
      } catch (const StoreError&) {  // the connection is gone: the server rolled it back
      }
    }
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void Commit() {
    sql_.Exec("COMMIT");
    open_ = false;
  }

 private:
  SqlConnection& sql_;
  bool open_ = true;
};

// The version a store is at: 0 when it has no schema yet.
int VersionOf(SqlConnection& sql) {
  const auto rows = sql.Query("SELECT MAX(version) FROM fabricscope_schema", {});
  return rows.empty() || !rows.front().front() ? 0 : static_cast<int>(ToInt(rows.front().front()));
}

void Migrate(SqlConnection& sql) {
  Transaction t(sql);
  sql.LockSchema();
  sql.Exec("CREATE TABLE IF NOT EXISTS fabricscope_schema (version INTEGER NOT NULL)");
  const int at = VersionOf(sql);
  if (at > kSchemaVersion) {
    throw StoreError(fmt::format(
        "results store {}: its schema is version {}, newer than this fabricscope's ({}): use "
        "the fabricscope that wrote it, or a newer one",
        sql.Name(), at, kSchemaVersion));
  }
  for (const Migration& m : kMigrations) {
    if (m.version <= at) continue;
    std::string script(m.script);
    for (size_t id = script.find("{id}"); id != std::string::npos; id = script.find("{id}")) {
      script.replace(id, 4, sql.IdColumn());
    }
    sql.Exec(script);
    sql.Query("INSERT INTO fabricscope_schema (version) VALUES (?)", {Int(m.version)});
  }
  t.Commit();
}

class SqlResultsStore final : public ResultsStore {
 public:
  explicit SqlResultsStore(std::unique_ptr<SqlConnection> sql) : sql_(std::move(sql)) {
    // The common case, a store at this version, costs one read and no write lock.
    int at = -1;
    try {
      at = VersionOf(*sql_);
    } catch (const StoreError&) {
      // no schema table yet
    }
    if (at != kSchemaVersion) Migrate(*sql_);
  }

  int64_t Write(const Record& record) override {
    Transaction t(*sql_);
    const auto id_rows = sql_->Query(
        "INSERT INTO runs (recorded_at, command, command_line, hosts, platform, "
        "fabricscope_version, nccl_version, outcome) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        {record.time.empty() ? UtcNow() : record.time, record.command,
         json(record.command_line).dump(), json(record.hosts).dump(), record.platform,
         record.fabricscope_version, record.nccl_version, record.outcome});
    const std::string id = Need(id_rows.at(0).at(0));
    for (size_t i = 0; i < record.rows.size(); ++i) WriteRow(id, i, record.rows[i]);
    for (size_t i = 0; i < record.findings.size(); ++i) WriteFinding(id, i, record.findings[i]);
    for (const Measure& m : record.measures) WriteMeasure(id, m);
    t.Commit();
    return std::stoll(id);
  }

  std::vector<StoredMeasure> Measures(const MeasureQuery& q) override {
    const auto rows = sql_->Query(
        "SELECT r.id, r.recorded_at, r.command, r.platform, r.outcome, m.element_kind, "
        "m.element, m.collective, m.metric, m.unit, m.ranks, m.size, m.value, m.healthy, "
        "m.fail_below FROM measures m JOIN runs r ON r.id = m.run_id "
        "WHERE (CAST(? AS TEXT) = '' OR m.element_kind = ?) "
        "AND (CAST(? AS TEXT) = '' OR m.collective = ?) "
        "AND (CAST(? AS TEXT) = '' OR r.platform = ?) AND r.recorded_at >= ? "
        "ORDER BY r.recorded_at, r.id",
        {q.element_kind, q.element_kind, q.collective, q.collective, q.platform, q.platform,
         q.since});
    std::vector<StoredMeasure> out;
    for (const SqlRow& row : rows) {
      StoredMeasure s{.run_id = ToInt(row[0]),
                      .time = Need(row[1]),
                      .command = Need(row[2]),
                      .platform = Need(row[3]),
                      .outcome = Need(row[4]),
                      .measure = {.element_kind = Need(row[5]),
                                  .element = Need(row[6]),
                                  .collective = Need(row[7]),
                                  .metric = Need(row[8]),
                                  .unit = Need(row[9]),
                                  .ranks = static_cast<int>(ToInt(row[10])),
                                  .size = static_cast<uint64_t>(ToInt(row[11])),
                                  .value = ToDouble(row[12]),
                                  .healthy = ToOptional(row[13]),
                                  .fail_below = ToOptional(row[14])}};
      if (!q.element.empty() && !Matches(s.measure.element, q.element)) continue;
      out.push_back(std::move(s));
    }
    return out;
  }

  std::vector<StoredRun> Runs(const std::string& since) override {
    const auto rows = sql_->Query(
        "SELECT r.id, r.recorded_at, r.command, r.hosts, r.platform, r.outcome, "
        "(SELECT COUNT(*) FROM results x WHERE x.run_id = r.id), "
        "(SELECT COUNT(*) FROM findings f WHERE f.run_id = r.id) "
        "FROM runs r WHERE r.recorded_at >= ? ORDER BY r.recorded_at, r.id",
        {since});
    std::vector<StoredRun> out;
    out.reserve(rows.size());
    for (const SqlRow& row : rows) {
      out.push_back({.id = ToInt(row[0]),
                     .time = Need(row[1]),
                     .command = Need(row[2]),
                     .hosts = json::parse(Need(row[3])).get<std::vector<std::string>>(),
                     .platform = Need(row[4]),
                     .outcome = Need(row[5]),
                     .rows = static_cast<size_t>(ToInt(row[6])),
                     .findings = static_cast<size_t>(ToInt(row[7]))});
    }
    return out;
  }

  std::vector<Finding> FindingsOf(int64_t id) override {
    const auto rows = sql_->Query(
        "SELECT severity, source, what, location, element, nodes, evidence, fix, figures, "
        "decided FROM findings WHERE run_id = ? ORDER BY ordinal",
        {Int(id)});
    std::vector<Finding> out;
    for (const SqlRow& row : rows) {
      json j = {{"severity", Need(row[0])},
                {"source", Need(row[1])},
                {"what", Need(row[2])},
                {"where", Need(row[3])},
                {"element", Need(row[4])},
                {"nodes", json::parse(Need(row[5]))},
                {"evidence", json::parse(Need(row[6]))},
                {"fix", Need(row[7])},
                {"figures", json::parse(Need(row[8]))},
                {"decided", ToInt(row[9]) != 0}};
      out.push_back(FindingFromJson(nlohmann::ordered_json(j)));
    }
    return out;
  }

  int SchemaVersion() override { return VersionOf(*sql_); }

 private:
  // Whether a measure's element is `wanted`, or a node set holding that host.
  static bool Matches(const std::string& element, const std::string& wanted) {
    if (element == wanted) return true;
    const std::vector<std::string> hosts = Split(element, ',');
    return std::find(hosts.begin(), hosts.end(), wanted) != hosts.end();
  }

  void WriteRow(const std::string& id, size_t ordinal, const Row& r) {
    sql_->Query(
        "INSERT INTO results (run_id, ordinal, collective, size, count, dtype, redop, root, "
        "in_place, time_us, algbw, busbw, wrong) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        {id, Int(static_cast<int64_t>(ordinal)), r.collective, Int(static_cast<int64_t>(r.size)),
         Int(static_cast<int64_t>(r.count)), r.dtype, r.redop, Int(r.root), Int(r.in_place ? 1 : 0),
         Number(r.time_us), Number(r.algbw), Number(r.busbw), Int(r.wrong)});
  }

  void WriteFinding(const std::string& id, size_t ordinal, const Finding& f) {
    const nlohmann::ordered_json j = FindingJson(f);
    sql_->Query(
        "INSERT INTO findings (run_id, ordinal, severity, source, what, location, element, "
        "nodes, evidence, fix, figures, decided) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        {id, Int(static_cast<int64_t>(ordinal)), std::string(SeverityName(f.severity)), f.source,
         f.what, f.where, f.element, j["nodes"].dump(), j["evidence"].dump(), f.fix,
         j["figures"].dump(), Int(f.decided ? 1 : 0)});
  }

  void WriteMeasure(const std::string& id, const Measure& m) {
    if (!std::isfinite(m.value)) return;  // nothing measured: no point of a history
    sql_->Query(
        "INSERT INTO measures (run_id, element_kind, element, collective, metric, unit, ranks, "
        "size, value, healthy, fail_below) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        {id, m.element_kind, m.element, m.collective, m.metric, m.unit, Int(m.ranks),
         Int(static_cast<int64_t>(m.size)), Text(m.value), Optional(m.healthy),
         Optional(m.fail_below)});
  }

  std::unique_ptr<SqlConnection> sql_;
};

// `url` with the password of user:password@ replaced by ***.
std::string Shown(std::string_view url) {
  std::string shown(url);
  const size_t scheme = shown.find("://");
  const size_t at = shown.find('@');
  if (scheme == std::string::npos || at == std::string::npos) return shown;
  const size_t colon = shown.find(':', scheme + 3);
  if (colon != std::string::npos && colon < at) shown.replace(colon + 1, at - colon - 1, "***");
  return shown;
}

}  // namespace

StoreUrl ParseStoreUrl(std::string_view url) {
  if (url.empty()) {
    throw UsageError(
        "--db is empty: give a file (results.db, sqlite:///var/lib/fabricscope.db) or a "
        "PostgreSQL URL (postgresql://user@host/db)");
  }
  if (url.starts_with("postgresql://") || url.starts_with("postgres://")) {
    return {StoreUrl::Engine::kPostgres, std::string(url), Shown(url)};
  }
  if (url.starts_with("sqlite:")) {
    // sqlite:///abs/path (three slashes: an absolute path), sqlite:relative/path.
    std::string_view path = url.substr(7);
    if (path.starts_with("//")) {
      path.remove_prefix(2);
      if (!path.starts_with("/")) {
        throw UsageError("--db " + std::string(url) +
                         ": sqlite:// takes an absolute path after it (sqlite:///var/lib/x.db, "
                         "three slashes), or give the file path alone");
      }
    }
    if (path.empty()) {
      throw UsageError("--db " + std::string(url) + ": sqlite: needs a file path after it");
    }
    return {StoreUrl::Engine::kSqlite, std::string(path), std::string(url)};
  }
  const size_t scheme = url.find("://");
  if (scheme != std::string_view::npos) {
    throw UsageError("--db " + std::string(url) + ": the scheme '" +
                     std::string(url.substr(0, scheme)) +
                     "' is not one fabricscope stores in: give sqlite:///PATH, a file path, or "
                     "postgresql://...");
  }
  return {StoreUrl::Engine::kSqlite, std::string(url), std::string(url)};
}

std::unique_ptr<ResultsStore> OpenResultsStore(const StoreUrl& url) {
  std::unique_ptr<SqlConnection> sql = url.engine == StoreUrl::Engine::kPostgres
                                           ? OpenPostgres(url.target, url.shown)
                                           : OpenSqlite(url.target, url.shown);
  return std::make_unique<SqlResultsStore>(std::move(sql));
}

std::string UtcNow() {
  const auto now = std::chrono::system_clock::now();
  const auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(us / 1'000'000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", utc.tm_year + 1900,
                     utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                     us % 1'000'000);
}

}  // namespace fabricscope::db
