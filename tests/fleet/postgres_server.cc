#include "fleet/postgres_server.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fabricscope::testing {
namespace fs = std::filesystem;
namespace {

// The newest installed server's bin directory (/usr/lib/postgresql/15/bin); "" none.
std::string ServerBin() {
  std::string best;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const fs::path bin = entry.path() / "bin";
    if (fs::exists(bin / "initdb") && fs::exists(bin / "pg_ctl") && bin.string() > best) {
      best = bin.string();
    }
  }
  return best;
}

int Run(const std::string& command) { return std::system(command.c_str()); }

std::string Tail(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  return text.size() > 600 ? text.substr(text.size() - 600) : text;
}

}  // namespace

PostgresServer::PostgresServer() {
  bin_ = ServerBin();
  if (bin_.empty()) {
    skip_reason_ = "no PostgreSQL server (scripts/install-deps.sh test installs postgresql)";
    return;
  }
  char pattern[] = "/tmp/fabricscope-pg.XXXXXX";
  if (::mkdtemp(pattern) == nullptr) {
    skip_reason_ = "mkdtemp failed";
    return;
  }
  dir_ = pattern;
  if (::geteuid() == 0) {
    if (Run("id postgres >/dev/null 2>&1") != 0) {
      skip_reason_ = "running as root and there is no postgres user to run the server as";
      return;
    }
    as_postgres_ = "runuser -u postgres -- ";
    Run("chown postgres '" + dir_ + "'");
  }
  const std::string initdb = as_postgres_ + bin_ + "/initdb -D '" + dir_ +
                             "/data' -A trust -U postgres >'" + dir_ + "/initdb.log' 2>&1";
  if (Run(initdb) != 0) {
    skip_reason_ = "initdb failed: " + Tail(dir_ + "/initdb.log");
    return;
  }
  // No TCP at all (listen_addresses ''): the socket in our own directory; fsync off, as a
  // test's server loses nothing worth keeping in a crash.
  const std::string start = as_postgres_ + bin_ + "/pg_ctl -D '" + dir_ + "/data' -l '" + dir_ +
                            "/server.log' -w -t 60 -o \"-k '" + dir_ +
                            "' -c listen_addresses='' -c fsync=off -c max_connections=200\" "
                            "start >/dev/null 2>&1";
  if (Run(start) != 0) {
    skip_reason_ = "the server did not start: " + Tail(dir_ + "/server.log");
    return;
  }
  running_ = true;
}

PostgresServer::~PostgresServer() {
  Stop();
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

void PostgresServer::Stop() {
  if (!running_) return;
  Run(as_postgres_ + bin_ + "/pg_ctl -D '" + dir_ + "/data' -w -m immediate stop >/dev/null 2>&1");
  running_ = false;
}

std::string PostgresServer::NewDatabase() {
  const std::string name = "t" + std::to_string(++databases_);
  Run(bin_ + "/psql -q -h '" + dir_ + "' -U postgres -d postgres -c 'CREATE DATABASE " + name +
      "' >/dev/null 2>&1");
  return "postgresql://postgres@/" + name + "?host=" + dir_;
}

}  // namespace fabricscope::testing
