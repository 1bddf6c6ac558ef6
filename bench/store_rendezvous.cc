// The rendezvous store at scale (docs/launch.md): N clients, each a thread with its own
// connection as each rank thread has, meet as the launcher's ranks do: every client sets its
// rank key and waits on one "go" key; client 0 reads every rank key (the header, in one
// MultiGet as the launcher does), then sets
// "go". Reported per N: the time from the first connect until every client has its "go",
// the server's connections and threads at the peak, the waiters a Set woke (keyed waiting:
// only those on its key), the requests, and how long the server took to reap every
// thread and fd once the clients left.
//
// With --processes P, the clients are P processes, each driving its share of connections
// from one poll loop over the store's wire format (src/launch/tcp_store.cc), so that 16384
// clients cost the bench 16384 sockets, not 16384 threads whose scheduling it would measure.
//
//   store_rendezvous [--clients 64,256,1024] [--rounds 3] [--processes 0]
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "bench_stats.h"
#include "fabricscope/tcp_store.h"

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Open file descriptors of this process: the clients' and the server's.
size_t OpenFds() {
  size_t n = 0;
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    while (::readdir(dir) != nullptr) ++n;
    ::closedir(dir);
  }
  return n > 3 ? n - 3 : 0;  // ".", ".." and the directory's own fd
}

// Every rank key, as the launcher's rank 0 reads them: in one MultiGet (src/launch/launcher.cc).
std::vector<std::string> RankKeys(int clients) {
  std::vector<std::string> keys;
  for (int r = 0; r < clients; ++r) keys.push_back("rank/" + std::to_string(r));
  return keys;
}

struct Round {
  double rendezvous_s = 0;
  fabricscope::StoreServerStats peak;
  size_t fds = 0;  // of the whole process at the peak: N client ends + N server ends + a few
  double reap_s = 0;
};

Round Run(int clients) {
  fabricscope::TcpStoreServer server(0);
  const uint16_t port = server.port();
  const size_t fds_before = OpenFds();
  std::atomic<int> connected{0};
  std::atomic<bool> release{false};
  Round round;
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(clients));
  std::vector<char> rank_value(64, 'r');
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&, i] {
      fabricscope::TcpStoreClient client("127.0.0.1", port, milliseconds(30000));
      client.Set("rank/" + std::to_string(i), rank_value);
      ++connected;
      if (i == 0) {
        client.MultiGet(RankKeys(clients), milliseconds(30000));
        client.Set("go", {'1'});
      }
      client.Get("go", milliseconds(30000));
      // Held open until the peak is sampled, so the figures are of N live connections.
      while (!release) std::this_thread::sleep_for(milliseconds(1));
    });
  }
  // Done when every client has its "go": the server saw N "go" Gets answered; sampled
  // without disturbing them (stats takes the store's lock briefly).
  const auto answered = [&] {
    const auto s = server.stats();
    return connected == clients && s.requests >= 3 * static_cast<uint64_t>(clients) + 1 &&
           s.waiters == 0;
  };
  while (!answered()) std::this_thread::sleep_for(std::chrono::microseconds(200));
  round.rendezvous_s = std::chrono::duration<double>(Clock::now() - start).count();
  round.peak = server.stats();
  round.fds = OpenFds() - fds_before;
  release = true;
  for (auto& t : threads) t.join();
  const auto left = Clock::now();
  while (server.stats().connections > 0) std::this_thread::sleep_for(milliseconds(1));
  round.reap_s = std::chrono::duration<double>(Clock::now() - left).count();
  return round;
}

// The wire format's requests (tcp_store.cc): 'S' keylen key vallen value, 'G' keylen key ms.
std::string Request(char op, const std::string& key, const std::string& tail) {
  std::string out(1, op);
  const auto len = static_cast<uint32_t>(key.size());
  out.append(reinterpret_cast<const char*>(&len), 4);
  out += key;
  out += tail;
  return out;
}

std::string U32(uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }

void WriteAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) ::_exit(2);
    done += static_cast<size_t>(n);
  }
}

void ReadExactly(int fd, char* out, size_t n) {
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::read(fd, out + done, n - done);
    if (got <= 0) ::_exit(3);
    done += static_cast<size_t>(got);
  }
}

// A connect as fabricscope's client makes it (src/launch/tcp_store.cc, ConnectBy): non-blocking,
// and a new attempt when one is not answered within 250 ms (doubling up to 4 s), so that a SYN
// the server's full accept queue dropped costs 250 ms, not the kernel's one-second
// retransmission. The socket is blocking again once connected.
int Connect(uint16_t port) {
  int wait_ms = 250;
  for (int attempt = 0; attempt < 16; ++attempt) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) ::_exit(4);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int so_error = -1;
      socklen_t len = sizeof so_error;
      if (::poll(&p, 1, wait_ms) == 1) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
      rc = so_error == 0 ? 0 : -1;
    }
    if (rc == 0) {
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      return fd;
    }
    ::close(fd);
    wait_ms = std::min(2 * wait_ms, 4000);
  }
  ::_exit(4);
}

// One client process: connects clients [first, last), sets each one's rank key, parks a Get
// of "go" on each, and says when every "go" came (a byte on `done`); then holds the
// connections open until `release` closes.
[[noreturn]] void ClientProcess(int first, int last, int port_pipe, int done, int release) {
  // At the lowest priority: a job's clients are on other hosts and take none of the server's
  // CPU; here they share its two cores, and unniced, 64 of them starve its one thread.
  (void)!::nice(19);
  uint16_t port = 0;
  ReadExactly(port_pipe, reinterpret_cast<char*>(&port), sizeof port);
  std::vector<int> fds;
  const std::string value(64, 'r');
  for (int i = first; i < last; ++i) {
    const int fd = Connect(port);
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    WriteAll(fd, Request('S', "rank/" + std::to_string(i), U32(64) + value));
    fds.push_back(fd);
  }
  // The replies after every request is out: the process's connections are its ranks, each
  // of which would not wait for another's reply.
  for (int fd : fds) {
    char k = 0;
    ReadExactly(fd, &k, 1);
  }
  for (int fd : fds) WriteAll(fd, Request('G', "go", U32(30000)));
  std::vector<pollfd> waiting;
  for (int fd : fds) waiting.push_back({fd, POLLIN, 0});
  size_t left = waiting.size();
  while (left > 0) {
    if (::poll(waiting.data(), waiting.size(), 30000) <= 0) ::_exit(5);
    for (pollfd& p : waiting) {
      if (p.fd < 0 || (p.revents & POLLIN) == 0) continue;
      char reply[6];  // 'F', the length 1, the value
      ReadExactly(p.fd, reply, sizeof reply);
      p.fd = -1;
      --left;
    }
  }
  WriteAll(done, "d");
  char byte = 0;
  (void)!::read(release, &byte, 1);  // EOF: released
  ::_exit(0);
}

// Raises the soft limit on open files to the hard one: the server holds one fd per client.
void RaiseFdLimit(int clients) {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < static_cast<rlim_t>(clients) + 64) {
    throw std::runtime_error(fmt::format("{} clients need {} open files; the hard limit is {}",
                                         clients, clients + 64, limit.rlim_max));
  }
}

Round RunProcesses(int clients, int processes) {
  RaiseFdLimit(clients);
  int port_pipe[2], done_pipe[2], release_pipe[2];
  if (::pipe(port_pipe) != 0 || ::pipe(done_pipe) != 0 || ::pipe(release_pipe) != 0) {
    throw std::runtime_error("pipe failed");
  }
  // Forked before the server's thread exists: a child of a one-thread process.
  std::vector<pid_t> children;
  for (int p = 0; p < processes; ++p) {
    const int first = clients * p / processes;
    const int last = clients * (p + 1) / processes;
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(release_pipe[1]);
      ClientProcess(first, last, port_pipe[0], done_pipe[1], release_pipe[0]);
    }
    children.push_back(pid);
  }
  ::close(release_pipe[0]);
  Round round;
  {
    fabricscope::TcpStoreServer server(0);
    const uint16_t port = server.port();
    const auto start = Clock::now();
    for (int p = 0; p < processes; ++p)
      WriteAll(port_pipe[1], std::string(reinterpret_cast<const char*>(&port), sizeof port));
    // Client 0's part as the launcher's rank 0 does it: every rank key, then "go".
    fabricscope::TcpStoreClient reader("127.0.0.1", port, milliseconds(30000));
    reader.MultiGet(RankKeys(clients), milliseconds(30000));
    reader.Set("go", {'1'});
    for (int p = 0; p < processes; ++p) {
      char byte = 0;
      ReadExactly(done_pipe[0], &byte, 1);
    }
    round.rendezvous_s = std::chrono::duration<double>(Clock::now() - start).count();
    round.peak = server.stats();
    round.fds = OpenFds();
    ::close(release_pipe[1]);
    for (pid_t pid : children) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        throw std::runtime_error(fmt::format("a client process failed (status {})", status));
      }
    }
    const auto left = Clock::now();
    while (server.stats().connections > 1) std::this_thread::sleep_for(milliseconds(1));
    round.reap_s = std::chrono::duration<double>(Clock::now() - left).count();
  }
  for (int fd : {port_pipe[0], port_pipe[1], done_pipe[0], done_pipe[1]}) ::close(fd);
  return round;
}

}  // namespace

int main(int argc, char** argv) try {
  CLI::App app{"rendezvous of N store clients (threads or processes) through one TcpStoreServer"};
  std::vector<int> sizes{64, 256, 1024};
  int rounds = 3;
  app.add_option("--clients", sizes, "client counts")->delimiter(',');
  app.add_option("--rounds", rounds, "rounds per count; the median is reported")
      ->check(CLI::PositiveNumber);
  int processes = 0;
  app.add_option("--processes", processes,
                 "client processes, each driving its share of connections from a poll loop; "
                 "0: one thread per client in this process");
  CLI11_PARSE(app, argc, argv);
  fmt::print("{:>8} {:>14} {:>12} {:>12} {:>10} {:>10} {:>10} {:>10}\n", "clients", "rendezvous_ms",
             "connections", "srv_threads", "fds", "wakeups", "requests", "reap_ms");
  for (int n : sizes) {
    std::vector<double> times;
    std::vector<double> reaps;
    Round last;
    for (int r = 0; r < rounds; ++r) {
      last = processes > 0 ? RunProcesses(n, std::min(processes, n)) : Run(n);
      times.push_back(last.rendezvous_s * 1e3);
      reaps.push_back(last.reap_s * 1e3);
    }
    fmt::print("{:>8} {:>14.1f} {:>12} {:>12} {:>10} {:>10} {:>10} {:>10.1f}\n", n,
               fabricscope::bench::Median(times), last.peak.connections, last.peak.threads,
               last.fds, last.peak.wakeups, last.peak.requests, fabricscope::bench::Median(reaps));
  }
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "store_rendezvous: {}\n", e.what());
  return 1;
}
