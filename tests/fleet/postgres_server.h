// A real PostgreSQL server for a test: Debian's postgresql package, a fresh cluster in a
// temporary directory, reached on a Unix socket there (no port to collide with another
// test), stopped and removed when the object goes. Root cannot run the server: as root it
// runs as the postgres user (runuser), as the testbeds recipe does.
#pragma once

#include <string>

namespace fabricscope::testing {

class PostgresServer {
 public:
  PostgresServer();  // starts it; on failure, skip_reason() says why
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // Empty when the server is up; else why there is none (not installed, initdb failed...).
  const std::string& skip_reason() const { return skip_reason_; }
  // A new, empty database on the server, as a postgresql:// URL libpq takes.
  std::string NewDatabase();
  // Stops the server (a store that is down); the directory stays until destruction.
  void Stop();

 private:
  std::string dir_;
  std::string bin_;
  std::string as_postgres_;  // "runuser -u postgres -- " as root, "" otherwise
  std::string skip_reason_;
  bool running_ = false;
  int databases_ = 0;
};

}  // namespace fabricscope::testing
