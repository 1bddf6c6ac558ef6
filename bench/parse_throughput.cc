// How fast `fabricscope analyze` reads logs: the text reader on a large generated log of
// SkyPilot-prefixed nccl-tests output with NCCL INFO lines between the rows, side by side
// with a bare memchr pass over the same bytes (the memory-bound floor of any line reader).
//
//   parse_throughput [--megabytes 64] [--rounds 7] [--prefix skypilot|none]
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fabricscope/parse.h"
#include "fabricscope/statistics.h"

namespace {

using Clock = std::chrono::steady_clock;
using fabricscope::Median;

struct Options {
  size_t megabytes = 64;
  int rounds = 7;
  std::string prefix = "skypilot";
};

// One nccl-tests 2.19 run of 16 ranks on 2 nodes, 1 KB to 8 GB, as a SkyPilot job prints it
// (the "(head, rank=0, pid=...)" and mpirun "[1,0]<stdout>:" prefixes), with NCCL's INFO
// lines from the other node mixed in.
std::string OneRun(const std::string& prefix, int run) {
  std::string text;
  const auto line = [&](const std::string& body) { text += prefix + body + "\n"; };
  line("# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809");
  line("# Collective test starting: all_gather_perf");
  line(
      "# nThread 1 nGpus 1 minBytes 1024 maxBytes 8589934592 step: 2(factor) warmup iters: 5 "
      "iters: 100 agg iters: 1 validation: 1 graph: 0 unalign: 0");
  line("#");
  line("# Using devices");
  for (int r = 0; r < 16; ++r) {
    line(
        fmt::format("#  Rank {:2d} Group  0 Pid {:6d} on {:>10} device {:2d} [0000:{:02x}:00] "
                    "NVIDIA H200",
                    r, 7000 + r, r < 8 ? "node-head" : "node-wrk1", r % 8, 0x8f + r % 8));
  }
  line("#");
  line(
      "#                                                              out-of-place            "
      "           in-place          ");
  line(
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong   "
      "  time   algbw   busbw  #wrong ");
  line(
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)          "
      "   (us)  (GB/s)  (GB/s)         ");
  double sum = 0;
  int values = 0;
  for (int k = 0; k < 24; ++k) {
    const long size = 1024L << k;
    const double time = 28.0 + 0.003 * static_cast<double>(size) / 1024 + run % 7;
    const double algbw = static_cast<double>(size) / 1e3 / time;
    const double busbw = algbw * 15 / 16;
    sum += 2 * busbw;
    values += 2;
    line(fmt::format(
        "{:12d}  {:12d}  {:>8}  {:>6}  {:6d}  {:7.2f}  {:6.2f}  {:6.2f}  {:6g}  "
        "{:7.2f}  {:6.2f}  {:6.2f}  {:6g}",
        size, size / 64, "float", "none", -1, time, algbw, busbw, 0.0, time, algbw, busbw, 0.0));
    if (k % 4 == 0) {
      text +=
          "(worker1, rank=1, pid=2769, ip=10.100.10.12) node-wrk1:4926:5012 [0] NCCL INFO "
          "Channel 03/0 : 8[0] -> 0[0] [receive] via NET/IB/1/GDRDMA\n";
    }
  }
  line("# Out of bounds values : 0 OK");
  line(fmt::format("# Avg bus bandwidth    : {:g} ", sum / values));
  line("#");
  line("# Collective test concluded: all_gather_perf");
  return text;
}

std::string GenerateLog(const Options& options) {
  const std::string prefix =
      options.prefix == "none" ? "" : "(head, rank=0, pid=3808) [1,0]<stdout>:";
  std::string text;
  text.reserve(options.megabytes << 20);
  for (int run = 0; text.size() < (options.megabytes << 20); ++run) text += OneRun(prefix, run);
  return text;
}

// The floor: find every line end, as any line reader must.
size_t CountLines(const std::string& text) {
  size_t lines = 0;
  const char* at = text.data();
  const char* end = text.data() + text.size();
  while (at < end) {
    const void* found = std::memchr(at, '\n', static_cast<size_t>(end - at));
    if (found == nullptr) break;
    at = static_cast<const char*>(found) + 1;
    ++lines;
  }
  return lines;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--megabytes") {
      options.megabytes = static_cast<size_t>(std::strtoul(argv[i + 1], nullptr, 10));
    } else if (flag == "--rounds") {
      options.rounds = std::atoi(argv[i + 1]);
    } else if (flag == "--prefix") {
      options.prefix = argv[i + 1];
    } else {
      std::fprintf(stderr, "usage: %s [--megabytes N] [--rounds N] [--prefix skypilot|none]\n",
                   argv[0]);
      return 2;
    }
  }
  if (options.megabytes == 0 || options.rounds < 1) {
    std::fprintf(stderr, "--megabytes and --rounds must be at least 1\n");
    return 2;
  }
  const std::string text = GenerateLog(options);
  const double mb = static_cast<double>(text.size()) / 1e6;

  // The same log through ReadResultsFile: the file read is part of what a user waits for.
  char path[] = "/tmp/fabricscope-parse-bench-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0 || write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    std::perror("cannot write the generated log to /tmp");
    return 3;
  }
  close(fd);

  std::vector<double> scan;
  std::vector<double> parse;
  std::vector<double> file;
  size_t rows = 0;
  size_t lines = 0;
  // Interleaved rounds, so that drift on a shared machine hits all three alike.
  for (int round = 0; round < options.rounds; ++round) {
    auto start = Clock::now();
    lines = CountLines(text);
    scan.push_back(mb / std::chrono::duration<double>(Clock::now() - start).count());

    start = Clock::now();
    const fabricscope::ParsedResults parsed = fabricscope::ParseResults(text, "bench.log");
    parse.push_back(mb / std::chrono::duration<double>(Clock::now() - start).count());
    rows = parsed.RowCount();
    if (parsed.HasErrors()) {
      std::fprintf(stderr, "the generated log did not parse: %s\n",
                   parsed.diagnostics[0].ToString().c_str());
      return 3;
    }

    start = Clock::now();
    const fabricscope::ParsedResults read = fabricscope::ReadResultsFile(path);
    file.push_back(mb / std::chrono::duration<double>(Clock::now() - start).count());
    if (read.RowCount() != rows) return 3;
  }
  unlink(path);

  fmt::print("# parse throughput: {:.1f} MB log, {} lines, {} rows, prefix {}, {} rounds\n", mb,
             lines, rows, options.prefix, options.rounds);
  fmt::print("# MB/s (1 MB = 1e6 bytes): median and best of the rounds\n");
  fmt::print("{:<34} {:>10} {:>10}\n", "", "median", "best");
  const auto report = [](const char* name, const std::vector<double>& values) {
    fmt::print("{:<34} {:>10.0f} {:>10.0f}\n", name, Median(values),
               *std::max_element(values.begin(), values.end()));
  };
  report("memchr line scan (floor)", scan);
  report("ParseResults (in memory)", parse);
  report("ReadResultsFile (file, cached)", file);
  fmt::print("parse / scan ratio (median): {:.3f}\n", Median(parse) / Median(scan));
  fmt::print("goal >= 200 MB/s: {}\n", Median(parse) >= 200 ? "met" : "NOT met");
  return 0;
}
