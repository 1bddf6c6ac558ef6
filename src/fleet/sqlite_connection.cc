// The SQLite engine: one file, written by many processes at once through SQLite's own
// locking (WAL journal, a busy timeout, BEGIN IMMEDIATE for writes).
#include <sqlite3.h>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "fabricscope/results_db.h"
#include "fleet/sql.h"

namespace fabricscope::db {
namespace {

// How long a writer waits for another's transaction before it gives up: 64 writers of a
// few milliseconds each wait far less; a store held longer than this is stuck.
constexpr int kBusyTimeoutMs = 60'000;

struct StatementCloser {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Statement = std::unique_ptr<sqlite3_stmt, StatementCloser>;

class SqliteConnection final : public SqlConnection {
 public:
  SqliteConnection(sqlite3* db, std::string shown) : db_(db), shown_(std::move(shown)) {}
  ~SqliteConnection() override { sqlite3_close_v2(db_); }
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  std::vector<SqlRow> Query(std::string_view sql, const std::vector<SqlValue>& params) override {
    sqlite3_stmt* raw = nullptr;
    Check(sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &raw, nullptr), sql);
    const Statement statement(raw);
    for (size_t i = 0; i < params.size(); ++i) {
      const int index = static_cast<int>(i) + 1;
      const int rc = params[i]
                         ? sqlite3_bind_text(raw, index, params[i]->data(),
                                             static_cast<int>(params[i]->size()), SQLITE_TRANSIENT)
                         : sqlite3_bind_null(raw, index);
      Check(rc, sql);
    }
    std::vector<SqlRow> rows;
    const int columns = sqlite3_column_count(raw);
    for (;;) {
      const int rc = sqlite3_step(raw);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) Check(rc, sql);
      SqlRow row;
      row.reserve(static_cast<size_t>(columns));
      for (int c = 0; c < columns; ++c) {
        if (sqlite3_column_type(raw, c) == SQLITE_NULL) {
          row.emplace_back(std::nullopt);
        } else {
          const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(raw, c));
          row.emplace_back(std::string(text, static_cast<size_t>(sqlite3_column_bytes(raw, c))));
        }
      }
      rows.push_back(std::move(row));
    }
    return rows;
  }

  void Exec(std::string_view sql) override {
    const std::string text(sql);
    char* message = nullptr;
    const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message);
    const std::string said = message ? message : "";
    sqlite3_free(message);
    if (rc != SQLITE_OK) Fail(rc, said, sql);
  }

  void BeginWrite() override { Exec("BEGIN IMMEDIATE"); }
  void LockSchema() override {}  // BEGIN IMMEDIATE holds the file's write lock already
  std::string_view IdColumn() const override { return "INTEGER PRIMARY KEY"; }
  const std::string& Name() const override { return shown_; }

 private:
  void Check(int rc, std::string_view sql) {
    if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
      Fail(rc, sqlite3_errmsg(db_), sql);
  }
  [[noreturn]] void Fail(int rc, const std::string& message, std::string_view sql) {
    std::string advice;
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
      advice = ": another process held the store for more than 60 s; is one stuck?";
    } else if (rc == SQLITE_READONLY || rc == SQLITE_CANTOPEN || rc == SQLITE_PERM) {
      advice = ": the file or its directory cannot be written; give --db a writable path";
    } else if (rc == SQLITE_FULL) {
      advice = ": the filesystem is full";
    }
    throw StoreError("results store " + shown_ + ": " + message + advice +
                     " (in: " + std::string(sql.substr(0, 60)) + ")");
  }

  sqlite3* db_;
  std::string shown_;
};

}  // namespace

std::unique_ptr<SqlConnection> OpenSqlite(const std::string& path, const std::string& shown) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
    throw StoreError("results store " + shown + ": the directory " + parent.string() +
                     " does not exist; create it or give --db another path");
  }
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    const std::string message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    throw StoreError("results store " + shown + ": cannot open it: " + message +
                     " (give --db a writable file path)");
  }
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  auto connection = std::make_unique<SqliteConnection>(db, shown);
  // WAL: readers never wait for the writer, and a write costs one append and an fsync of
  // the log (synchronous NORMAL is durable across a process crash, WAL's usual setting).
  connection->Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON");
  return connection;
}

}  // namespace fabricscope::db
