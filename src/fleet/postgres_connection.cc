// The PostgreSQL engine, through libpq: a fleet's store, written by every node of a job at
// once (the server orders their transactions).
#include <libpq-fe.h>

#include <memory>
#include <string>
#include <utility>

#include "fabricscope/results_db.h"
#include "fabricscope/strings.h"
#include "fleet/sql.h"

namespace fabricscope::db {
namespace {

// Any constant: the key of the advisory lock schema changes take (pg_advisory_xact_lock).
constexpr const char* kSchemaLockKey = "7346117114";

struct ResultCloser {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultCloser>;

// `sql` with each `?` as $1, $2, ... (the store's statements hold no `?` in a literal).
std::string Numbered(std::string_view sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  int n = 0;
  for (const char c : sql) {
    if (c == '?') {
      out += '$' + std::to_string(++n);
    } else {
      out += c;
    }
  }
  return out;
}

class PostgresConnection final : public SqlConnection {
 public:
  PostgresConnection(PGconn* conn, std::string shown) : conn_(conn), shown_(std::move(shown)) {}
  ~PostgresConnection() override { PQfinish(conn_); }
  PostgresConnection(const PostgresConnection&) = delete;
  PostgresConnection& operator=(const PostgresConnection&) = delete;

  std::vector<SqlRow> Query(std::string_view sql, const std::vector<SqlValue>& params) override {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const SqlValue& p : params) values.push_back(p ? p->c_str() : nullptr);
    const std::string text = Numbered(sql);
    const Result result(PQexecParams(conn_, text.c_str(), static_cast<int>(values.size()), nullptr,
                                     values.data(), nullptr, nullptr, 0));
    Check(result.get(), sql);
    std::vector<SqlRow> rows;
    const int count = PQntuples(result.get());
    const int columns = PQnfields(result.get());
    rows.reserve(static_cast<size_t>(count));
    for (int r = 0; r < count; ++r) {
      SqlRow row;
      row.reserve(static_cast<size_t>(columns));
      for (int c = 0; c < columns; ++c) {
        if (PQgetisnull(result.get(), r, c)) {
          row.emplace_back(std::nullopt);
        } else {
          row.emplace_back(std::string(PQgetvalue(result.get(), r, c),
                                       static_cast<size_t>(PQgetlength(result.get(), r, c))));
        }
      }
      rows.push_back(std::move(row));
    }
    return rows;
  }

  void Exec(std::string_view sql) override {
    const std::string text(sql);
    const Result result(PQexec(conn_, text.c_str()));
    Check(result.get(), sql);
  }

  void BeginWrite() override { Exec("BEGIN"); }
  void LockSchema() override {
    Exec(std::string("SELECT pg_advisory_xact_lock(") + kSchemaLockKey + ")");
  }
  std::string_view IdColumn() const override { return "BIGSERIAL PRIMARY KEY"; }
  const std::string& Name() const override { return shown_; }

 private:
  void Check(const PGresult* result, std::string_view sql) {
    const ExecStatusType status = result ? PQresultStatus(result) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return;
    std::string message(Trim(result ? PQresultErrorMessage(result) : PQerrorMessage(conn_)));
    if (PQstatus(conn_) == CONNECTION_BAD) message += " (the connection to the server was lost)";
    throw StoreError("results store " + shown_ + ": " + message +
                     " (in: " + std::string(sql.substr(0, 60)) + ")");
  }

  PGconn* conn_;
  std::string shown_;
};

}  // namespace

std::unique_ptr<SqlConnection> OpenPostgres(const std::string& url, const std::string& shown) {
  // A server that does not answer costs 10 s, not libpq's default of waiting forever.
  const char* keys[] = {"dbname", "connect_timeout", "application_name", nullptr};
  const char* values[] = {url.c_str(), "10", "fabricscope", nullptr};
  PGconn* conn = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (conn == nullptr) throw StoreError("results store " + shown + ": out of memory connecting");
  if (PQstatus(conn) != CONNECTION_OK) {
    const std::string message(Trim(PQerrorMessage(conn)));
    PQfinish(conn);
    throw StoreError("results store " + shown + ": cannot connect: " + message +
                     " (is the server up, and the URL's host, port, user and database right?)");
  }
  auto connection = std::make_unique<PostgresConnection>(conn, shown);
  // Quiet: CREATE TABLE IF NOT EXISTS would print a NOTICE on stderr for each table there.
  connection->Exec("SET client_min_messages = warning");
  return connection;
}

}  // namespace fabricscope::db
