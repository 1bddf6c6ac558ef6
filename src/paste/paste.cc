// Reading what users paste besides the tables: each line that is not a table row is matched
// against the failure knowledge base and read for NCCL's own facts, in the readers' one pass.
#include "fabricscope/paste.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "fabricscope/strings.h"

namespace fabricscope {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  return s;
}

bool Has(std::string_view line, std::string_view text) {
  return line.find(text) != std::string_view::npos;
}

// The number after `key` in `line` ("nranks 16" -> 16), or nullopt.
std::optional<long> NumberAfter(std::string_view line, std::string_view key) {
  const size_t at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  size_t i = at + key.size();
  size_t end = i;
  while (end < line.size() && end - i < 9 && line[end] >= '0' && line[end] <= '9') ++end;
  if (end == i) return std::nullopt;
  return ToNumber<long>(line.substr(i, end - i));
}

// "busbw: 161.137 GBps (1289.1 Gbps)" with key "busbw: ": all_reduce_bench.py's figures
// (ml-engineering's network/benchmarks/all_reduce_bench.py prints algbw and busbw so).
std::optional<double> BenchFigure(std::string_view line, std::string_view key) {
  const size_t at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + key.size());
  const size_t unit = rest.find("GBps");
  if (unit == std::string_view::npos) return std::nullopt;
  return ToNumber<double>(Trim(rest.substr(0, unit)));
}

// "BUS BW (expected >=431.0 GB/s, but measured 15.1043 GB/s)": Azure's health checks
// (Azure/azurehpc-health-checks, customTests/azure_nccl_allreduce*.nhc).
std::optional<PasteEvidence::ToolVerdict> ToolBandwidth(std::string_view line) {
  constexpr std::string_view kExpected = "(expected >=";
  constexpr std::string_view kMeasured = "but measured ";
  const size_t e = line.find(kExpected);
  if (e == std::string_view::npos) return std::nullopt;
  const size_t m = line.find(kMeasured, e);
  if (m == std::string_view::npos) return std::nullopt;
  const auto number = [](std::string_view text) {
    return ToNumber<double>(Trim(text.substr(0, text.find("GB/s"))));
  };
  const auto expected = number(line.substr(e + kExpected.size()));
  const auto measured = number(line.substr(m + kMeasured.size()));
  if (!expected || !measured) return std::nullopt;
  return PasteEvidence::ToolVerdict{*expected, *measured, 0, ""};
}

// "The average bandwidth of all_reduce with a 4.0GB payload (5 trials, 16 ranks):".
bool BenchHeader(std::string_view line, PastedFigure& figure) {
  constexpr std::string_view kLead = "The average bandwidth of all_reduce with a ";
  const size_t at = line.find(kLead);
  if (at == std::string_view::npos) return false;
  std::string_view rest = line.substr(at + kLead.size());
  const size_t gb = rest.find("GB payload");
  if (gb == std::string_view::npos) return false;
  figure = PastedFigure{};
  if (const auto size = ToNumber<double>(Trim(rest.substr(0, gb))); size && *size > 0) {
    figure.bytes = static_cast<size_t>(*size * 1e9);
  }
  if (const size_t trials = rest.find(" trials, "); trials != std::string_view::npos) {
    std::string_view n = rest.substr(trials + 9);
    n = n.substr(0, n.find(' '));
    figure.ranks = ToNumber<int>(n).value_or(0);
  }
  return true;
}

// The host of a "#  Rank  0 Group  0 Pid 1234 on HOST device 0 [...]" device line.
std::optional<std::string> RankZeroHost(std::string_view line) {
  const size_t rank = line.find("Rank ");
  if (rank == std::string_view::npos) return std::nullopt;
  std::string_view rest = Trim(line.substr(rank + 5));
  if (rest.empty() || rest[0] != '0' || (rest.size() > 1 && rest[1] != ' ')) return std::nullopt;
  const size_t on = rest.find(" on ");
  if (on == std::string_view::npos) return std::nullopt;
  std::string_view host = TrimLeft(rest.substr(on + 4));
  host = host.substr(0, host.find(' '));
  return std::string(host);
}

// The host of NCCL's "host:pid:tid [dev] " prefix, `prefix` being the line before its
// INFO/WARN mark ("host:1:2 [0] NCCL ", "host:1:2 [0] misc/socket.cc:484 NCCL ", or NCCL 2.2's
// "host:1:2 [0] "), behind any launcher prefix.
std::optional<std::string_view> NcclHost(std::string_view prefix) {
  const size_t close = prefix.rfind(']');
  if (close == std::string_view::npos) return std::nullopt;
  const size_t open = prefix.rfind(" [", close);
  if (open == std::string_view::npos || open == 0) return std::nullopt;
  const size_t start = prefix.rfind(' ', open - 1);
  std::string_view token = prefix.substr(start == std::string_view::npos ? 0 : start + 1,
                                         open - (start == std::string_view::npos ? 0 : start + 1));
  const size_t colon = token.find(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  // "host:pid:tid": two numbers after the host.
  if (token.find(':', colon + 1) == std::string_view::npos) return std::nullopt;
  return token.substr(0, colon);
}

// Where NCCL's own mark is in a line: "NCCL INFO " / "NCCL WARN " (2.3+), or NCCL 2.2's and
// older "host:pid:tid [dev] INFO " / "host:pid:tid [dev] file.cu:61 WARN " without the word
// NCCL (src/include/debug.h of those versions).
struct NcclMark {
  size_t at = std::string_view::npos;  // where the prefix ends (the mark starts)
  size_t message = 0;                  // where the message starts
  bool info = false;
  bool found() const { return at != std::string_view::npos; }
};

NcclMark FindNcclMark(std::string_view line) {
  for (size_t at = line.find("NCCL "); at != std::string_view::npos;
       at = line.find("NCCL ", at + 1)) {
    if (line.size() < at + 10 || line[at + 9] != ' ') continue;
    const char* level = line.data() + at + 5;
    const bool info = level[0] == 'I' && level[1] == 'N' && level[2] == 'F' && level[3] == 'O';
    const bool warn = level[0] == 'W' && level[1] == 'A' && level[2] == 'R' && level[3] == 'N';
    if (info || warn) return {at, at + 10, info};
  }
  // The old form: INFO right after the "[dev]" of a host:pid:tid prefix; WARN after it and a
  // "file:line".
  for (std::string_view level : {"] INFO ", " WARN "}) {
    const size_t at = line.find(level);
    if (at == std::string_view::npos || at > 256) continue;
    const size_t mark = level[0] == ']' ? at + 2 : at + 1;
    if (!NcclHost(line.substr(0, mark))) continue;
    return {mark, mark + 5, level[0] == ']'};
  }
  return {};
}

// NCCL's per-connection and per-call INFO messages ("Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
// "AllReduce: opCount 0 sendbuff ..."), which NCCL prints by the thousand in a big job.
bool BulkInfo(std::string_view message) {
  using std::string_view_literals::operator""sv;
  if (!message.empty() && message.front() == 'C' &&
      (message.starts_with("Channel "sv) || message.starts_with("Connected all"sv))) {
    return true;
  }
  // "AllReduce: opCount ...": the collective's name, then its colon.
  const size_t colon = message.substr(0, 32).find(':');
  return colon != std::string_view::npos && message.substr(colon).starts_with(": opCount "sv);
}

// "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read" (NCCL's transport/p2p.cc, shm.cc, net.cc):
// counted by the transport after " via ".
// Where " via " is in a channel line: found by its 'v', which the rest of such a line lacks
// (a find of the whole word stops at every space of the line).
size_t FindVia(std::string_view text) {
  for (size_t at = text.find('v', 1); at != std::string_view::npos; at = text.find('v', at + 1)) {
    if (text[at - 1] == ' ' && text.substr(at, 4) == "via ") return at - 1;
  }
  return std::string_view::npos;
}

void CountChannel(PasteEvidence& p, std::string_view message) {
  const size_t via = FindVia(message);
  if (via == std::string_view::npos) return;
  const std::string_view how = message.substr(via + 5);
  if (how.starts_with("SHM")) {
    ++p.channels_shm;
  } else if (how.starts_with("P2P")) {
    ++p.channels_p2p;
  } else if (how.starts_with("NET") || how.starts_with("COLLNET")) {
    ++p.channels_net;
    if (how.find("/GDRDMA") != std::string_view::npos) {
      ++p.channels_net_gdr;
    } else if (how.starts_with("NET/IB/")) {
      ++p.channels_net_nogdr;
    }
  }
}

// One frame of NCCL's error trace, an INFO message "misc/socket.cc:567 -> 2" (NCCLCHECK's
// "%s:%d -> %d", src/include/checks.h): the file and line a failed call returned from, and the
// ncclResult_t it returned.
bool ErrorFrame(std::string_view message) {
  // The frame is the message's first word and its arrow.
  const size_t arrow = message.substr(0, 97).find(' ');
  if (arrow == std::string_view::npos || !message.substr(arrow).starts_with(" -> ")) return false;
  const std::string_view where = message.substr(0, arrow);
  const size_t colon = where.rfind(':');
  if (colon == std::string_view::npos || colon + 1 >= where.size()) return false;
  const std::string_view file = where.substr(0, colon);
  const bool source = file.ends_with(".cc") || file.ends_with(".cu") || file.ends_with(".h") ||
                      file.ends_with(".cpp");
  const std::string_view code = Trim(message.substr(arrow + 4));
  return source && !code.empty() && IsDigit(code.front()) &&
         std::all_of(where.begin() + static_cast<long>(colon) + 1, where.end(), IsDigit);
}

// NCCL_X=value tokens after a nccl-tests binary on a command line: the shell passed them to
// the program as arguments, and NCCL never saw them.
std::vector<std::string> LateAssignments(std::string_view line) {
  std::vector<std::string> out;
  const size_t perf = line.find("_perf");
  if (perf == std::string_view::npos) return out;
  const std::vector<std::string> words = Split(line.substr(perf), ' ');
  for (const std::string& w : words) {
    if (w.starts_with("NCCL_") && w.find('=') != std::string::npos) out.push_back(w);
  }
  return out;
}

// The variables NCCL, its net plugins and libfabric read: the ones a launcher must pass on.
bool NcclVariable(std::string_view name) {
  for (std::string_view prefix : {"NCCL_", "FI_", "OFI_NCCL_", "UCX_", "CUDA_VISIBLE_DEVICES"}) {
    if (name.starts_with(prefix)) return true;
  }
  return false;
}

// The NAME of a shell assignment word "NAME=value"; "" for another word.
std::string_view AssignedName(std::string_view word) {
  const size_t eq = word.find('=');
  if (eq == std::string_view::npos || eq == 0) return {};
  const std::string_view name = word.substr(0, eq);
  const bool shell_name = std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
  return shell_name && !IsDigit(name.front()) ? name : std::string_view{};
}

// Whether `word` is the launcher itself: mpirun, mpiexec or orterun, by any path.
bool IsMpirun(std::string_view word) {
  const size_t slash = word.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? word : word.substr(slash + 1);
  return base == "mpirun" || base == "mpiexec" || base == "orterun";
}

// Options only hydra's mpiexec (MPICH, Intel MPI, MVAPICH) takes; hydra passes the whole
// environment to every rank, so nothing set for it is lost.
bool HydraOption(std::string_view word) {
  for (std::string_view o :
       {"-genv", "-genvall", "-envall", "-env", "-ppn", "-hosts", "-genvlist"}) {
    if (word == o) return true;
  }
  return false;
}

// The NCCL variables a pasted `... mpirun ...` command sets for mpirun (assignments before it,
// or names `export`ed earlier in the paste) and does not forward with -x, and whether it starts
// ranks on other hosts; nullopt for a line that is no Open MPI launch.
std::optional<PasteEvidence::LaunchEnv> LaunchEnvOf(std::string_view command,
                                                    const std::vector<std::string>& exported) {
  std::vector<std::string> words = Split(std::string(command), ' ');
  std::erase_if(words, [](const std::string& w) { return w.empty() || w == "\\"; });
  const auto launcher =
      std::find_if(words.begin(), words.end(), [](const std::string& w) { return IsMpirun(w); });
  if (launcher == words.end()) return std::nullopt;
  PasteEvidence::LaunchEnv out;
  std::set<std::string, std::less<>> forwarded;
  for (auto it = launcher + 1; it != words.end(); ++it) {
    if (HydraOption(*it)) return std::nullopt;
    const bool has_value = it + 1 != words.end();
    if (*it == "-x" && has_value) {
      const std::string& next = *(it + 1);
      forwarded.insert(next.substr(0, next.find('=')));
    } else if ((*it == "-H" || *it == "--host" || *it == "-host") && has_value) {
      out.multi_host = out.multi_host || (it + 1)->find(',') != std::string::npos;
    } else if (*it == "-hostfile" || *it == "--hostfile" || *it == "-machinefile" ||
               *it == "--machinefile" || *it == "--default-hostfile") {
      out.multi_host = true;
    }
  }
  std::set<std::string> set;
  for (auto it = words.begin(); it != launcher; ++it) {
    const std::string_view name = AssignedName(*it);
    if (!name.empty() && NcclVariable(name)) set.emplace(name);
  }
  for (const std::string& name : exported) set.insert(name);
  for (const std::string& name : set) {
    if (forwarded.count(name) == 0) out.unforwarded.push_back(name);
  }
  if (out.unforwarded.empty()) return std::nullopt;
  out.text = std::string(command.substr(0, 512));
  return out;
}

}  // namespace

std::vector<RunResult> RunsFromFigures(const PasteEvidence& paste) {
  std::vector<RunResult> out;
  for (const PastedFigure& f : paste.figures) {
    if (f.bytes == 0 || f.busbw <= 0) continue;
    RunResult run;
    run.tool = "all_reduce_bench";
    run.backend = "nccl";
    run.source = paste.source + ":" + std::to_string(f.line);
    run.nranks = f.ranks;
    ResultRow row;
    row.collective = "all_reduce";
    row.size = f.bytes;
    row.count = f.bytes / 4;  // float32: M*N*4 bytes
    row.type = "float";
    row.redop = "sum";
    PlacementResult placement;
    placement.busbw = f.busbw;
    placement.algbw = f.algbw;
    placement.time_us = f.algbw > 0 ? static_cast<double>(f.bytes) / (f.algbw * 1e3) : 0;
    row.out_of_place = placement;
    run.rows.push_back(std::move(row));
    out.push_back(std::move(run));
  }
  return out;
}

size_t ApplyNcclRanks(std::vector<RunResult>& runs, const std::vector<PasteEvidence>& pastes) {
  size_t changed = 0;
  for (const PasteEvidence& paste : pastes) {
    if (paste.nranks <= 0) continue;
    for (RunResult& run : runs) {
      if (!run.source.starts_with(paste.source + ":") || run.nranks >= paste.nranks) continue;
      run.notes.push_back("NCCL's lines say nranks " + std::to_string(paste.nranks) +
                          " where the table alone gave " + std::to_string(run.nranks) +
                          ": NCCL's count is taken");
      run.nranks = paste.nranks;
      ++changed;
    }
  }
  return changed;
}

std::set<std::string> RunHosts(const std::vector<RunResult>& runs) {
  std::set<std::string> hosts;
  for (const RunResult& run : runs) {
    for (const RankInfo& r : run.ranks) {
      if (!r.hostname.empty()) hosts.insert(r.hostname);
    }
  }
  return hosts;
}

HostNaming HostNamingOf(const std::set<std::string>& hosts) {
  const auto digits = [](std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return IsDigit(c); });
  };
  const auto ec2 = [&](std::string_view h) {
    if (!h.starts_with("ip-")) return false;
    const std::vector<std::string> parts = Split(h.substr(3, h.find('.') - 3), '-');
    return parts.size() == 4 && std::all_of(parts.begin(), parts.end(), digits);
  };
  const auto cray = [&](std::string_view h) {
    return h.starts_with("nid") && h.size() >= 8 && digits(h.substr(3, 5));
  };
  if (hosts.empty()) return {};
  if (std::all_of(hosts.begin(), hosts.end(), ec2)) return {"EC2's instance names", "aws-"};
  if (std::all_of(hosts.begin(), hosts.end(), cray)) return {"HPE Cray EX's node names", ""};
  return {};
}

bool PasteEvidence::Judgeable() const {
  return !hits.empty() || nccl_lines > 0 || channels_net + channels_p2p + channels_shm > 0 ||
         !trailers.empty() || !figures.empty() || !late_env.empty() || header_line > 0 ||
         nthread_headers > 0 || !rank0_hosts.empty() || single_process_devices > 0 ||
         !tool_verdicts.empty();
}

struct PasteReader::State {
  const FailureBase* base = nullptr;
  std::vector<std::string> watched;
  std::vector<PasteEvidence> done;
  std::optional<PasteEvidence> current;
  std::map<size_t, size_t> hit_index;  // signature -> index in current->hits
  std::vector<char> holds;             // per watched text: some line held it
  size_t unseen = 0;                   // watched texts no line held yet
  std::vector<size_t> matched;
  PastedFigure figure;  // all_reduce_bench's header and algbw, until its busbw line
  TextSet watched_set;
  std::string last_host;
  std::map<std::string, std::pair<std::string, size_t>> versions;  // host -> version, line
  std::set<long> ranks;
  std::set<std::string, std::less<>> hosts;
  std::string command;  // a command line continued with a backslash so far
  size_t command_line = 0;
  std::vector<std::string> exported;  // NCCL variables `export`ed by the paste's shell lines

  void Close() {
    if (!current) return;
    current->log_holds.clear();
    for (size_t i = 0; i < watched.size(); ++i) {
      if (holds[i] != 0) current->log_holds.push_back(watched[i]);
    }
    current->ranks_seen = ranks.size();
    current->nccl_hosts.assign(hosts.begin(), hosts.end());
    for (const auto& [host, version] : versions) {
      current->versions.push_back({host, version.first, version.second});
    }
    ranks.clear();
    hosts.clear();
    command.clear();
    exported.clear();
    versions.clear();
    last_host.clear();
    done.push_back(std::move(*current));
    current.reset();
    hit_index.clear();
  }

  // A line of NCCL's own ("host:pid:tid [dev] NCCL INFO message"): most of a big log, so
  // each fact is looked for only where the message can start with it.
  void NcclFacts(PasteEvidence& p, std::string_view line, const NcclMark& mark, size_t line_no) {
    ++p.nccl_lines;
    if (auto host = NcclHost(line.substr(0, mark.at)); host && *host != last_host) {
      last_host.assign(*host);
      if (hosts.size() < 100000 && hosts.find(*host) == hosts.end()) hosts.emplace(*host);
    }
    using std::string_view_literals::operator""sv;
    const std::string_view message = line.substr(mark.message);
    const char first = message.empty() ? '\0' : message.front();
    if ((first == 'c' && message.starts_with("comm "sv)) ||
        (first == 'n' &&
         (message.starts_with("ncclCommInitRank"sv) || message.starts_with("nranks "sv)))) {
      if (const auto n = NumberAfter(message, "nranks ")) {
        p.nranks = std::max(p.nranks, static_cast<int>(*n));
        if (const auto r = NumberAfter(message, " rank ")) ranks.insert(*r);
      }
    } else if (first == 'N' && message.starts_with("NET/IB : Using"sv)) {
      const std::string_view list = message.substr(0, message.find(';'));
      const int n = static_cast<int>(std::count(list.begin(), list.end(), '['));
      if (n > p.nics_used) {
        p.nics_used = n;
        p.nics_line = line_no;
      }
    } else if (first == 'N' && message.starts_with("NCCL version "sv)) {
      Version(message.substr(13), line_no);
    } else if (p.error_trace.size() < 8 && first >= 'a' && first <= 'z' && ErrorFrame(message)) {
      if (p.error_trace.empty()) p.error_trace_line = line_no;
      p.error_trace.emplace_back(Trim(message));
    }
  }

  // "2.18.3+cuda12.2" of the host whose line this is.
  void Version(std::string_view text, size_t line_no) {
    const std::string version(Trim(text.substr(0, text.find_first_of(" \t"))));
    if (version.empty() || versions.size() >= 100000) return;
    versions.emplace(last_host, std::pair(version, line_no));
  }

  // `mark`: where NCCL's INFO or WARN mark is in the line, if it has one.
  void Facts(PasteEvidence& p, std::string_view line, const NcclMark& mark, size_t line_no) {
    if (mark.found()) return NcclFacts(p, line, mark, line_no);
    if (const size_t v = line.find("NCCL version "); v != std::string_view::npos) {
      Version(line.substr(v + 13), line_no);
    }
    const std::string_view text = TrimLeft(line);
    if (p.header_line > 0 && !text.empty() && IsDigit(text.front())) ++p.lines_after_header;
    if (Has(line, "algbw") && Has(line, "busbw") && !Has(line, "busbw:")) p.header_line = line_no;
    if (Has(line, "mpirun") || Has(line, "srun") || Has(line, "mpiexec")) {
      for (std::string_view flag : {" -np ", " -n ", " --ntasks ", " --np "}) {
        if (const auto n = NumberAfter(line, flag)) {
          p.launcher_ranks = static_cast<int>(*n);
          break;
        }
      }
    }
    if (Has(line, "nThread ") && Has(line, "nGpus ")) ++p.nthread_headers;
    if (Has(line, "Rank ") && Has(line, " uses device ")) ++p.single_process_devices;
    if (Has(line, "Rank ") && Has(line, " on ") && Has(line, "device ")) {
      if (auto host = RankZeroHost(line)) p.rank0_hosts.push_back(*host);
    }
    if (Has(line, "Avg bus bandwidth")) {
      const size_t colon = line.find(':', line.find("Avg bus bandwidth"));
      if (colon != std::string_view::npos) {
        if (auto v = ToNumber<double>(Trim(line.substr(colon + 1)))) {
          p.trailers.push_back(*v);
        }
      }
    }
    if (BenchHeader(line, figure)) return;
    if (auto verdict = ToolBandwidth(line)) {
      verdict->line = line_no;
      verdict->text = std::string(line.substr(0, 1024));
      p.tool_verdicts.push_back(std::move(*verdict));
    }
    if (auto algbw = BenchFigure(line, "algbw: ")) figure.algbw = *algbw;
    if (auto busbw = BenchFigure(line, "busbw: ")) {
      figure.busbw = *busbw;
      figure.line = line_no;
      figure.text = std::string(line);
      p.figures.push_back(figure);
      figure = PastedFigure{};
    }
    for (const std::string& w : LateAssignments(line)) {
      p.late_env.push_back(p.source + ":" + std::to_string(line_no) + ": " + w);
    }
    Command(p, text, line_no);
    // A channel line without NCCL's prefix ("9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA"),
    // cut from a log.
    if (FindVia(text) != std::string_view::npos && Has(text, " -> ")) CountChannel(p, text);
  }

  // A shell line of the paste: `export NCCL_X=...`, or a command, joined across lines that end
  // in a backslash, that may launch the job.
  void Command(PasteEvidence& p, std::string_view text, size_t line_no) {
    std::string_view shell = Trim(text);
    if (const size_t prompt = shell.find("$ ");
        prompt != std::string_view::npos && prompt < 64 && command.empty()) {
      shell = shell.substr(prompt + 2);
    }
    if (shell.starts_with("export ")) {
      const std::string_view name = AssignedName(Trim(shell.substr(7)));
      if (!name.empty() && NcclVariable(name) && exported.size() < 256) {
        exported.emplace_back(name);
      }
      return;
    }
    const bool continued = !shell.empty() && shell.back() == '\\';
    if (command.empty() && !continued && !Has(shell, "mpirun") && !Has(shell, "mpiexec")) return;
    if (command.empty()) command_line = line_no;
    if (command.size() < 8192) {
      command.append(shell.substr(0, continued ? shell.size() - 1 : shell.size()));
      command += ' ';
    }
    if (continued) return;
    if (auto launch = LaunchEnvOf(command, exported)) {
      launch->line = command_line;
      p.launch_env.push_back(std::move(*launch));
    }
    command.clear();
  }
};

PasteReader::PasteReader(const FailureBase& base) : state_(std::make_unique<State>()) {
  state_->base = &base;
  std::set<std::string> watched;
  for (const Signature& s : base.signatures()) {
    for (const CauseLink& link : s.causes) {
      for (const Condition& c : link.when) {
        if (c.kind == Condition::Kind::kLog || c.kind == Condition::Kind::kNotLog) {
          watched.insert(c.value);
        }
      }
    }
    for (const Condition& c : s.harmless_when) {
      if (c.kind == Condition::Kind::kLog || c.kind == Condition::Kind::kNotLog) {
        watched.insert(c.value);
      }
    }
  }
  state_->watched.assign(watched.begin(), watched.end());
  state_->watched_set = TextSet(state_->watched);
}

PasteReader::~PasteReader() = default;

void PasteReader::Begin(const std::string& source) {
  state_->Close();
  state_->current.emplace();
  state_->current->source = source;
  state_->holds.assign(state_->watched.size(), 0);
  state_->unseen = state_->watched.size();
}

void PasteReader::Line(std::string_view line, size_t line_no, size_t info_at) {
  State& s = *state_;
  if (!s.current) Begin("<input>");
  PasteEvidence& p = *s.current;
  ++p.lines;
  p.last_line.assign(line.substr(0, 512));
  p.last_line_no = line_no;
  // The reader's INFO mark is NCCL's when a space follows it, as FindNcclMark asks.
  const bool given =
      info_at != std::string_view::npos && line.size() >= info_at + 10 && line[info_at + 9] == ' ';
  const NcclMark mark = given ? NcclMark{info_at, info_at + 10, true} : FindNcclMark(line);
  const bool info = mark.found() && mark.info;
  const std::string_view message = mark.found() ? line.substr(mark.message) : line;
  // Most of a big log is one line per channel connection and per collective call: the text
  // readers take their transports; no fact, failure signature or watched text is in them
  // that the rank's other lines do not give.
  if (info && BulkInfo(message)) {
    ++p.nccl_lines;
    if (message.starts_with("Channel ")) CountChannel(p, message);
    return;
  }
  s.Facts(p, line, mark, line_no);
  s.matched.clear();
  if (info) {
    s.base->MatchInfoMessage(message, s.matched);
  } else {
    s.base->Match(line, s.matched);
  }
  for (size_t index : s.matched) {
    const auto [it, fresh] = s.hit_index.emplace(index, p.hits.size());
    if (fresh) {
      p.hits.push_back({index, line_no, std::string(line.substr(0, 2048)), 1});
    } else {
      ++p.hits[it->second].count;
    }
  }
  if (s.unseen > 0) {
    s.watched_set.Find(line, [&](size_t i) {
      if (s.holds[i] == 0) {
        s.holds[i] = 1;
        --s.unseen;
      }
    });
  }
}

std::vector<PasteEvidence> PasteReader::Take() {
  state_->Close();
  return std::move(state_->done);
}

}  // namespace fabricscope
