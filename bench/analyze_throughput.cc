// How fast the real `fabricscope analyze` binary reads a large NCCL_DEBUG=INFO log, end to end
// (process start to exit, file in the page cache), and how much memory it holds: the log of a
// 1024-rank job (128 nodes x 8 GPUs) is generated in /tmp, then `cat FILE > /dev/null`,
// `wc -l FILE`, `fabricscope analyze FILE`, `fabricscope analyze --nccl-nodes FILE` and
// `fabricscope check --platform dgx-h100 FILE` (issue 36: check at analyze's speed) run in
// interleaved rounds, so that the ratio to the bare loops means something on a shared machine.
// Peak RSS is each child's own (wait4's ru_maxrss). The file is deleted at the end.
//
//   analyze_throughput --binary PATH [--megabytes 2048] [--rounds 3] [--dir /tmp] [--keep]
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_stats.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string binary;
  size_t megabytes = 2048;
  int rounds = 3;
  std::string dir = "/tmp";
  bool keep = false;
};

constexpr int kNodes = 128;
constexpr int kLocal = 8;
constexpr int kRanks = kNodes * kLocal;
constexpr int kChannels = 32;
// The node whose HCAs run without GPUDirect RDMA: --nccl-nodes must name it.
constexpr int kOddNode = 77;

// What went into the log, to show the line mix beside the figures.
struct Mix {
  size_t lines = 0;
  size_t info = 0;
  size_t via = 0;
  size_t coll = 0;
  size_t rows = 0;
  size_t device = 0;
  size_t tables = 0;
};

// Writes the log through a large buffer; each rank's lines carry its host, pid and tid as
// NCCL prints them ("gpu-st-077:2345077:2345141 [5] NCCL INFO ...").
class LogWriter {
 public:
  LogWriter(int fd, Mix& mix) : fd_(fd), mix_(mix) { buffer_.reserve(kFlush + 65536); }
  ~LogWriter() { Flush(); }
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  size_t written() const { return written_ + buffer_.size(); }

  template <typename... Args>
  void Line(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(buffer_), format, std::forward<Args>(args)...);
    buffer_ += '\n';
    ++mix_.lines;
    if (buffer_.size() >= kFlush) Flush();
  }

  template <typename... Args>
  void Info(int rank, bool main_thread, fmt::format_string<Args...> format, Args&&... args) {
    const int node = rank / kLocal;
    const int local = rank % kLocal;
    const int pid = 2345000 + rank;
    fmt::format_to(std::back_inserter(buffer_), "gpu-st-{:03d}:{}:{} [{}] NCCL INFO ", node, pid,
                   main_thread ? pid : pid + 64 + local, local);
    ++mix_.info;
    Line(format, std::forward<Args>(args)...);
  }

  void Flush() {
    size_t done = 0;
    while (done < buffer_.size()) {
      const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
      if (n <= 0) {
        std::perror("cannot write the generated log");
        std::exit(3);
      }
      done += static_cast<size_t>(n);
    }
    written_ += buffer_.size();
    buffer_.clear();
  }

 private:
  static constexpr size_t kFlush = 8 << 20;
  int fd_;
  Mix& mix_;
  std::string buffer_;
  size_t written_ = 0;
};

struct CollectiveSpec {
  const char* binary;  // nccl-tests' binary, as in "Collective test starting"
  const char* nccl;    // NCCL's name in the COLL lines
  const char* redop;
  int root;
  double bus_factor;
  bool per_rank_count;    // all_gather, reduce_scatter and alltoall count per rank
  bool peer_connections;  // alltoall connects every pair of ranks on its first size
};

constexpr CollectiveSpec kCollectives[] = {
    {"all_reduce_perf", "AllReduce", "sum", -1, 2.0 * (kRanks - 1) / kRanks, false, false},
    {"all_gather_perf", "AllGather", "none", -1, 1.0 * (kRanks - 1) / kRanks, true, false},
    {"reduce_scatter_perf", "ReduceScatter", "sum", -1, 1.0 * (kRanks - 1) / kRanks, true, false},
    {"alltoall_perf", "AllToAll", "none", -1, 1.0 * (kRanks - 1) / kRanks, true, true},
};

// NCCL's init lines of every rank (NCCL_DEBUG=INFO, subsystems INIT, NET, ENV, TUNING): env,
// bootstrap, plugins, HCAs, topology, rings and trees, each channel's connections, NVLS.
// Ranks' lines interleave as they do when 1024 processes share one stdout.
void InitLines(LogWriter& w, std::mt19937& random, int run) {
  const auto comm = [run](int rank) { return 0x55d0c3a00000ULL + run * 0x10000ULL + rank * 16ULL; };
  for (int phase = 0; phase < 8; ++phase) {
    std::vector<int> order(kRanks);
    for (int r = 0; r < kRanks; ++r) order[r] = r;
    std::shuffle(order.begin(), order.end(), random);
    for (int rank : order) {
      const int node = rank / kLocal;
      const int local = rank % kLocal;
      const bool odd = node == kOddNode;
      switch (phase) {
        case 0:
          w.Info(rank, true, "Bootstrap : Using eth0:10.{}.{}.{}<0>", node / 64, node % 64,
                 10 + local);
          w.Info(rank, true, "cudaDriverVersion 12040");
          w.Info(rank, true, "NCCL version 2.21.5+cuda12.4");
          w.Info(rank, true,
                 "NCCL_IB_HCA set to mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11");
          break;
        case 1:
          w.Info(rank, true, "Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so");
          w.Info(rank, true, "P2P plugin IBext_v8");
          w.Info(rank, true,
                 "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_3:1/IB [2]mlx5_4:1/IB [3]mlx5_5:1/IB "
                 "[4]mlx5_6:1/IB [5]mlx5_9:1/IB [6]mlx5_10:1/IB [7]mlx5_11:1/IB [RO]; OOB "
                 "eth0:10.{}.{}.{}<0>",
                 node / 64, node % 64, 10 + local);
          w.Info(rank, true, "Using non-device net plugin version 0");
          w.Info(rank, true, "Using network IBext_v8");
          break;
        case 2:
          w.Info(rank, false,
                 "ncclCommInitRank comm {:#x} rank {} nranks {} cudaDev {} nvmlDev {} busId "
                 "{:x}000 commId 0x7f3c2e1a9b8d4f{:02x} - Init START",
                 comm(rank), rank, kRanks, local, local, 0x18 + local * 0x10, run);
          w.Info(rank, false, "Setting affinity for GPU {} to ffffffff,ffffffff,00000000,00000000",
                 local);
          w.Info(rank, false, "NVLS multicast support is available on dev {}", local);
          w.Info(rank, false,
                 "comm {:#x} rank {} nRanks {} nNodes {} localRanks {} localRank {} MNNVL 0",
                 comm(rank), rank, kRanks, kNodes, kLocal, local);
          if (odd)
            w.Info(rank, false, "GPU Direct RDMA Disabled for HCA {} 'mlx5_{}'", local, local);
          break;
        case 3:
          w.Info(rank, false,
                 "Trees [0] {}/-1/-1->{}->{} [1] {}/-1/-1->{}->{} [2] {}/-1/-1->{}->{} [3] "
                 "{}/-1/-1->{}->{}",
                 (rank + 1) % kRanks, rank, (rank + kRanks - 1) % kRanks, (rank + 1) % kRanks, rank,
                 (rank + kRanks - 1) % kRanks, (rank + 1) % kRanks, rank,
                 (rank + kRanks - 1) % kRanks, (rank + 1) % kRanks, rank,
                 (rank + kRanks - 1) % kRanks);
          w.Info(rank, false, "P2P Chunksize set to 131072");
          break;
        case 4:
        case 5:
          // Rings: within the node over NVLink, across nodes over the HCAs (both directions).
          for (int c = (phase - 4) * kChannels / 2; c < (phase - 3) * kChannels / 2; ++c) {
            const int next = (rank + 1) % kRanks;
            if (local == kLocal - 1) {
              w.Info(rank, false, "Channel {:02d}/0 : {}[{}] -> {}[{}] [send] via NET/IB/{}{}", c,
                     rank, local, next, next % kLocal, c % kLocal, odd ? "" : "/GDRDMA");
              const int prev = (rank + kRanks - kLocal) % kRanks;
              w.Info(rank, false, "Channel {:02d}/0 : {}[{}] -> {}[{}] [receive] via NET/IB/{}{}",
                     c, prev, kLocal - 1, rank, local, c % kLocal, odd ? "" : "/GDRDMA");
            } else {
              w.Info(rank, false, "Channel {:02d}/0 : {}[{}] -> {}[{}] via P2P/CUMEM/read", c, rank,
                     local, next, next % kLocal);
            }
          }
          break;
        case 6:
          w.Info(rank, false, "Connected all rings");
          w.Info(rank, false, "Connected all trees");
          w.Info(rank, false, "Connected NVLS");
          w.Info(rank, false, "threadThresholds 8/8/64 | 8192/8/64 | 512 | 512");
          w.Info(rank, false,
                 "32 coll channels, 32 collnet channels, 16 nvls channels, 32 p2p channels, 32 "
                 "p2p channels per peer");
          w.Info(rank, false, "CC Off, Multi-GPU CC Off, workFifoBytes 1048576");
          break;
        default:
          w.Info(rank, false,
                 "ncclCommInitRank comm {:#x} rank {} nranks {} cudaDev {} nvmlDev {} busId "
                 "{:x}000 commId 0x7f3c2e1a9b8d4f{:02x} - Init COMPLETE",
                 comm(rank), rank, kRanks, local, local, 0x18 + local * 0x10, run);
          w.Info(rank, false,
                 "Init timings: rank {} nranks {} total 2.{:02d} (kernels 0.21, alloc 0.03, "
                 "bootstrap 0.52, allgathers 0.07, topo 0.31, graphs 0.02, connections 1.10, "
                 "rest 0.05)",
                 rank, kRanks, rank % 100);
          if (rank == 0) {
            for (long size = 8; size <= (1L << 30); size *= 8) {
              w.Info(0, false, "AllReduce: {} Bytes -> Algo 1 proto 2 time 33.904999", size);
            }
          }
          break;
      }
    }
  }
}

// One nccl-tests 2.19.6 run: its header, 1024 device lines, NCCL's init lines, then per size
// the collective calls of some ranks (NCCL_DEBUG_SUBSYS=COLL: one line per call), alltoall's
// peer connections, and the row; then the trailer.
void OneRun(LogWriter& w, std::mt19937& random, int run, Mix& mix) {
  const CollectiveSpec& spec = kCollectives[run % std::size(kCollectives)];
  w.Line("# nccl-tests version 2.19.6 nccl-headers=22105 nccl-library=22105");
  w.Line("# Collective test starting: {}", spec.binary);
  w.Line(
      "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 8589934592 step: 2(factor) warmup iters: 5 "
      "iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0");
  w.Line("#");
  w.Line("# Using devices");
  for (int r = 0; r < kRanks; ++r) {
    w.Line(
        "#  Rank {:4d} Group  0 Pid {:7d} on gpu-st-{:03d} device {:2d} [0000:{:02x}:00] NVIDIA "
        "H100 80GB HBM3",
        r, 2345000 + r, r / kLocal, r % kLocal, 0x18 + (r % kLocal) * 0x10);
    ++mix.device;
  }
  InitLines(w, random, run);
  w.Line("#");
  w.Line(
      "#                                                              out-of-place            "
      "           in-place          ");
  w.Line(
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong   "
      "  time   algbw   busbw  #wrong ");
  w.Line(
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)          "
      "   (us)  (GB/s)  (GB/s)         ");
  double sum = 0;
  int values = 0;
  std::uniform_int_distribution<int> any_rank(0, kRanks - 1);
  for (long size = 1L << 20; size <= (8L << 30); size *= 2) {
    const long count = spec.per_rank_count ? size / 4 / kRanks : size / 4;
    // Warmup and timed calls, out-of-place and in-place, as the COLL subsystem logs them.
    for (int call = 0; call < 45; ++call) {
      for (int k = 0; k < 96; ++k) {
        const int rank = any_rank(random);
        w.Info(rank, true,
               "{}: opCount {:x} sendbuff 0x7f5c{:08x} recvbuff 0x7f5d{:08x} count {} datatype 7 "
               "op 0 root 0 comm 0x55d0c3a{:05x} [nranks={}] stream 0x55d0b9e{:05x}",
               spec.nccl, call + run * 1000, rank * 4096, rank * 4096, count, rank * 16, kRanks,
               rank * 32);
        ++mix.coll;
      }
    }
    if (spec.peer_connections && size == (1L << 20)) {
      // alltoall connects every pair of ranks the first time: one line per peer and channel.
      for (int rank = 0; rank < kRanks; ++rank) {
        for (int peer = 1; peer < 40; ++peer) {
          const int to = (rank + peer * 27) % kRanks;
          const bool same_node = to / kLocal == rank / kLocal;
          w.Info(rank, false, "Channel {:02d}/1 : {}[{}] -> {}[{}] [send] via {}", peer % 4, rank,
                 rank % kLocal, to, to % kLocal,
                 same_node
                     ? "P2P/CUMEM/read"
                     : (rank / kLocal == kOddNode ? "NET/IB/1/Shared" : "NET/IB/1/GDRDMA/Shared"));
          ++mix.via;
        }
      }
    }
    const double time = 40.0 + static_cast<double>(size) / 4.0e4 + run % 5;
    const double algbw = static_cast<double>(size) / 1e3 / time;
    // Averaged as printed (two decimals), so that the trailer agrees with the rows.
    const double busbw = std::round(algbw * spec.bus_factor * 100) / 100;
    sum += 2 * busbw;
    values += 2;
    w.Line(
        "{:12d}  {:12d}  {:>8}  {:>6}  {:6d}  {:7.1f}  {:6.2f}  {:6.2f}  {:6d}  {:7.1f}  {:6.2f}  "
        "{:6.2f}  {:6d}",
        size, count, "float", spec.redop, spec.root, time, algbw, busbw, 0, time, algbw, busbw, 0);
    ++mix.rows;
  }
  w.Line("# Out of bounds values : 0 OK");
  w.Line("# Avg bus bandwidth    : {:.4f} ", sum / values);
  w.Line("#");
  w.Line("# Collective test concluded: {}", spec.binary);
  ++mix.tables;
}

// Each run's ring connection lines count as 'via' lines too.
constexpr size_t kViaPerRun = static_cast<size_t>(kRanks / kLocal) * 2 * kChannels +
                              static_cast<size_t>(kRanks - kRanks / kLocal) * kChannels;

Mix GenerateLog(const std::string& path, size_t bytes) {
  Mix mix;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::perror(("cannot create " + path).c_str());
    std::exit(3);
  }
  {
    std::mt19937 random(14);
    LogWriter w(fd, mix);
    for (int run = 0; w.written() < bytes; ++run) {
      OneRun(w, random, run, mix);
      mix.via += kViaPerRun;
    }
  }
  ::close(fd);
  return mix;
}

// One child's time (wall, and CPU: user + system) and peak RSS.
struct Sample {
  double seconds = 0;
  double cpu_seconds = 0;
  long max_rss_kb = 0;
  int status = 0;
};

// Runs argv with stdout to `out` (and stderr to `err`), waits for it with wait4 for its rusage.
Sample Spawn(const std::vector<std::string>& args, const std::string& out, const std::string& err) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  Sample sample;
  pid_t pid = 0;
  const auto start = Clock::now();
  if (posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ) != 0) {
    std::perror(("cannot start " + args[0]).c_str());
    std::exit(3);
  }
  struct rusage usage {};
  if (::wait4(pid, &sample.status, 0, &usage) != pid) {
    std::perror("wait4");
    std::exit(3);
  }
  sample.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  sample.max_rss_kb = usage.ru_maxrss;
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  sample.cpu_seconds = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  posix_spawn_file_actions_destroy(&actions);
  return sample;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Contender {
  std::string name;
  std::vector<std::string> args;
  std::vector<double> mbps;      // wall clock
  std::vector<double> cpu_mbps;  // per second of CPU time
  long max_rss_kb = 0;
};

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool has_value = i + 1 < argc;
    if (flag == "--binary" && has_value) {
      options.binary = argv[++i];
    } else if (flag == "--megabytes" && has_value) {
      options.megabytes = static_cast<size_t>(std::strtoul(argv[++i], nullptr, 10));
    } else if (flag == "--rounds" && has_value) {
      options.rounds = std::atoi(argv[++i]);
    } else if (flag == "--dir" && has_value) {
      options.dir = argv[++i];
    } else if (flag == "--keep") {
      options.keep = true;
    } else {
      std::fprintf(stderr,
                   "usage: %s --binary PATH [--megabytes 2048] [--rounds 3] [--dir /tmp] "
                   "[--keep]\n",
                   argv[0]);
      return 2;
    }
  }
  if (options.binary.empty() || options.megabytes == 0 || options.rounds < 1) {
    std::fprintf(stderr,
                 "give --binary (the fabricscope executable); --megabytes and --rounds "
                 "must be at least 1\n");
    return 2;
  }
  const std::string stem = fmt::format("{}/fabricscope-analyze-bench-{}", options.dir, getpid());
  const std::string log = stem + ".log";
  const std::string out = stem + ".out";
  const std::string err = stem + ".err";
  const auto start = Clock::now();
  const Mix mix = GenerateLog(log, options.megabytes << 20);
  struct stat info {};
  ::stat(log.c_str(), &info);
  const double mb = static_cast<double>(info.st_size) / 1e6;
  fmt::print(stderr, "generated {} ({:.0f} MB) in {:.1f} s\n", log, mb,
             std::chrono::duration<double>(Clock::now() - start).count());

  std::vector<Contender> contenders = {
      {"cat FILE > /dev/null", {"cat", log}, {}, {}, 0},
      {"wc -l FILE", {"wc", "-l", log}, {}, {}, 0},
      {"fabricscope analyze FILE", {options.binary, "analyze", log}, {}, {}, 0},
      {"fabricscope analyze --nccl-nodes FILE",
       {options.binary, "analyze", "--nccl-nodes", log},
       {},
       {},
       0},
      // check reads the tables and, in the same pass, every other line for the failure
      // signatures and NCCL's facts (docs/failures.md); its verdict may be CRITICAL (exit 1).
      {"fabricscope check --platform dgx-h100 FILE",
       {options.binary, "check", "--platform", "dgx-h100", log},
       {},
       {},
       0},
  };
  // One pass of cat first, so that every round reads from the page cache.
  Spawn({"cat", log}, "/dev/null", "/dev/null");
  bool ok = true;
  for (int round = 0; round < options.rounds; ++round) {
    for (Contender& c : contenders) {
      const Sample s = Spawn(c.args, out, err);
      c.mbps.push_back(mb / s.seconds);
      c.cpu_mbps.push_back(mb / std::max(s.cpu_seconds, 1e-6));
      c.max_rss_kb = std::max(c.max_rss_kb, s.max_rss_kb);
      const bool verdict =
          c.args[1] == "check" && WIFEXITED(s.status) && WEXITSTATUS(s.status) == 1;
      if (!verdict && (!WIFEXITED(s.status) || WEXITSTATUS(s.status) != 0)) {
        fmt::print(stderr, "{} exited with status {}: {}\n", c.name, s.status, Slurp(err));
        ok = false;
      }
      // The work was done: every table read, and the node without GPUDirect RDMA named.
      if (c.args[0] == options.binary) {
        const std::string text = Slurp(out);
        const std::string odd = fmt::format("DIFFERS  gpu-st-{:03d}  transport", kOddNode);
        if (text.find("all_reduce") == std::string::npos ||
            (c.args.size() == 4 && text.find(odd) == std::string::npos)) {
          fmt::print(stderr, "{} did not print what the log holds:\n{}\n", c.name, text);
          ok = false;
        }
      }
    }
  }
  if (!options.keep) ::unlink(log.c_str());
  ::unlink(out.c_str());
  ::unlink(err.c_str());

  fmt::print(
      "# analyze end to end: {:.0f} MB NCCL_DEBUG=INFO log of a {}-rank job ({} nodes), {} lines: "
      "{} NCCL INFO ({} channel connections 'via', {} COLL calls), {} device lines, {} tables of "
      "{} rows; {} rounds, interleaved\n",
      mb, kRanks, kNodes, mix.lines, mix.info, mix.via, mix.coll, mix.device, mix.tables, mix.rows,
      options.rounds);
  fmt::print(
      "# MB/s (1 MB = 1e6 bytes), page-cached file: wall = process start to exit; cpu = per "
      "second of the child's user + system time (what an idle machine's wall clock would show "
      "for a single-threaded program; check reads on two threads, so its cpu figure is below "
      "its wall figure); peak RSS of the child (wait4 ru_maxrss)\n");
  fmt::print("{:<40} {:>11} {:>9} {:>10} {:>12}\n", "", "wall median", "wall best", "cpu median",
             "peak RSS MB");
  for (const Contender& c : contenders) {
    fmt::print("{:<40} {:>11.0f} {:>9.0f} {:>10.0f} {:>12.1f}\n", c.name,
               fabricscope::bench::Median(c.mbps), *std::max_element(c.mbps.begin(), c.mbps.end()),
               fabricscope::bench::Median(c.cpu_mbps), static_cast<double>(c.max_rss_kb) / 1024);
  }
  const double analyze = fabricscope::bench::Median(contenders[2].mbps);
  const double analyze_cpu = fabricscope::bench::Median(contenders[2].cpu_mbps);
  fmt::print(
      "analyze / cat (median, wall): {:.3f}; analyze / wc -l: {:.3f} (cpu: {:.3f}, {:.3f})\n",
      analyze / fabricscope::bench::Median(contenders[0].mbps),
      analyze / fabricscope::bench::Median(contenders[1].mbps),
      analyze_cpu / fabricscope::bench::Median(contenders[0].cpu_mbps),
      analyze_cpu / fabricscope::bench::Median(contenders[1].cpu_mbps));
  const double check = fabricscope::bench::Median(contenders[4].mbps);
  fmt::print("check / analyze (median, wall): {:.3f}; check / wc -l: {:.3f}\n", check / analyze,
             check / fabricscope::bench::Median(contenders[1].mbps));
  const double rss_mb =
      static_cast<double>(std::max(
          {contenders[2].max_rss_kb, contenders[3].max_rss_kb, contenders[4].max_rss_kb})) /
      1024;
  fmt::print("goal >= 1000 MB/s end to end: wall {}, cpu {}; goal < 256 MB RSS: {}\n",
             analyze >= 1000 ? "met" : "NOT met", analyze_cpu >= 1000 ? "met" : "NOT met",
             rss_mb < 256 ? "met" : "NOT met");
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) fmt::print("load average at the end: {:.1f}\n", load[0]);
  return ok ? 0 : 1;
}
