// How a statement reaches an engine: the one seam between the store's logic (schema,
// writes, reads: src/fleet/results_db.cc) and SQLite or PostgreSQL.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fabricscope::db {

// A parameter or a column, as text; nullopt is SQL NULL. Numbers go both ways as their
// shortest round-trip text, which both engines convert to the column's type.
using SqlValue = std::optional<std::string>;
using SqlRow = std::vector<SqlValue>;

// One open connection. Statements use `?` for parameters (the PostgreSQL connection turns
// them into $1, $2, ...). Every call throws StoreError with the engine's message.
class SqlConnection {
 public:
  virtual ~SqlConnection() = default;
  // Runs `sql` (one statement) with `params`; returns its rows.
  virtual std::vector<SqlRow> Query(std::string_view sql, const std::vector<SqlValue>& params) = 0;
  // Statements without parameters or rows, several separated by ';' allowed.
  virtual void Exec(std::string_view sql) = 0;
  // Begins a transaction that writes: SQLite's BEGIN IMMEDIATE (it takes the write lock at
  // once, so two writers wait for each other instead of failing), PostgreSQL's BEGIN.
  virtual void BeginWrite() = 0;
  // Serializes schema changes between processes inside a write transaction (PostgreSQL: an
  // advisory transaction lock; SQLite's write lock already does it).
  virtual void LockSchema() = 0;
  // The auto-numbered primary key's column type: "INTEGER PRIMARY KEY" (SQLite's rowid),
  // "BIGSERIAL PRIMARY KEY".
  virtual std::string_view IdColumn() const = 0;
  // Where it is, for messages: the URL as shown.
  virtual const std::string& Name() const = 0;
};

std::unique_ptr<SqlConnection> OpenSqlite(const std::string& path, const std::string& shown);
std::unique_ptr<SqlConnection> OpenPostgres(const std::string& url, const std::string& shown);

}  // namespace fabricscope::db
