// The rendezvous store at scale (docs/launch.md): N clients, each a thread with its own
// connection as each rank thread has, meet as the launcher's ranks do: every client sets its
// rank key and waits on one "go" key; client 0 reads every rank key (the header), then sets
// "go". Reported per N: the time from the first connect until every client has its "go",
// the server's connections and threads at the peak, the waiters a Set woke (keyed waiting:
// only those on its key), the requests, and how long the server took to reap every
// thread and fd once the clients left.
//
//   store_rendezvous [--clients 64,256,1024] [--rounds 3]
#include <dirent.h>
#include <fmt/format.h>

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
        for (int r = 0; r < clients; ++r)
          client.Get("rank/" + std::to_string(r), milliseconds(30000));
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
  while (server.stats().threads > 0) std::this_thread::sleep_for(milliseconds(1));
  round.reap_s = std::chrono::duration<double>(Clock::now() - left).count();
  return round;
}

}  // namespace

int main(int argc, char** argv) try {
  CLI::App app{"rendezvous of N store clients (threads) through one TcpStoreServer"};
  std::vector<int> sizes{64, 256, 1024};
  int rounds = 3;
  app.add_option("--clients", sizes, "client counts")->delimiter(',');
  app.add_option("--rounds", rounds, "rounds per count; the median is reported")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  fmt::print("{:>8} {:>14} {:>12} {:>12} {:>10} {:>10} {:>10} {:>10}\n", "clients", "rendezvous_ms",
             "connections", "srv_threads", "fds", "wakeups", "requests", "reap_ms");
  for (int n : sizes) {
    std::vector<double> times;
    std::vector<double> reaps;
    Round last;
    for (int r = 0; r < rounds; ++r) {
      last = Run(n);
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
