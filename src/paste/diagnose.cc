// The diagnosis of a paste: the failure knowledge base's signatures and the reader's shapes
// turned into causes, ranked by how specific the line is and by the evidence that holds,
// the best one named with its fix when the evidence decides, the candidates otherwise.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "fabricscope/paste.h"
#include "fabricscope/strings.h"

namespace fabricscope {
namespace {

// A cause's score gains this for each condition of its link that held: evidence outranks a
// default guess of the same line.
constexpr int kConditionWeight = 20;
// The best cause is decided when the next one scores at least this much less.
constexpr int kDecisiveMargin = 10;

struct Facts {
  const PasteEvidence& paste;
  std::string transport;  // the platform's; "" unknown
  int nodes = 0;          // 0 unknown
  std::set<std::string> signatures;
};

// One hit of a signature (or a shape the reader computed), with the line it rests on.
struct Hit {
  const Signature* signature = nullptr;
  size_t line = 0;
  std::string text;
  size_t count = 1;
};

bool Holds(const Condition& c, const Hit& hit, const Facts& facts) {
  const auto holds = [&](const std::string& text) {
    return std::find(facts.paste.log_holds.begin(), facts.paste.log_holds.end(), text) !=
           facts.paste.log_holds.end();
  };
  switch (c.kind) {
    case Condition::Kind::kLine:
      return hit.text.find(c.value) != std::string::npos;
    case Condition::Kind::kLog:
      return holds(c.value);
    case Condition::Kind::kNotLog:
      return !holds(c.value);
    case Condition::Kind::kSignature:
      return facts.signatures.count(c.value) > 0;
    case Condition::Kind::kTransport:
      return EqualsIgnoreCase(facts.transport, c.value);
    case Condition::Kind::kNotTransport:
      return !facts.transport.empty() && !EqualsIgnoreCase(facts.transport, c.value);
    case Condition::Kind::kMultiNode:
      return facts.nodes > 0 && (facts.nodes > 1) == (c.value == "true");
  }
  return false;
}

bool AllHold(const std::vector<Condition>& conditions, const Hit& hit, const Facts& facts) {
  return std::all_of(conditions.begin(), conditions.end(),
                     [&](const Condition& c) { return Holds(c, hit, facts); });
}

// One cause as the evidence ranks it.
struct Candidate {
  std::string cause;
  int score = 0;
  bool by_evidence = false;  // a link whose conditions held, or a line with one cause only
  SignatureRole role = SignatureRole::kSymptom;
  std::vector<std::string> evidence;
  std::vector<std::string> decided_by;
};

std::string Where(const PasteEvidence& paste, size_t line, const std::string& text) {
  return fmt::format("{}:{}: {}", paste.source, line, Trim(text));
}

const Signature* Shape(const FailureBase& base, std::string_view shape) {
  for (const Signature& s : base.signatures()) {
    if (s.shape == shape) return &s;
  }
  return nullptr;
}

size_t Distinct(std::vector<std::string> values) {
  std::sort(values.begin(), values.end());
  return static_cast<size_t>(std::unique(values.begin(), values.end()) - values.begin());
}

// Whether every value is within 2% of the first: the same sweep printed by each process.
bool AllAlike(const std::vector<double>& values) {
  return std::all_of(values.begin(), values.end(), [&](double v) {
    return std::fabs(v - values.front()) <= 0.02 * std::fabs(values.front());
  });
}

// Whether every row of the runs has busbw 0 where algbw is not: nccl-tests on one rank.
bool ZeroBusbw(const std::vector<RunResult>& runs) {
  size_t rows = 0;
  for (const RunResult& run : runs) {
    for (const ResultRow& row : run.rows) {
      if (!row.out_of_place) continue;
      if (row.out_of_place->busbw != 0 || row.out_of_place->algbw <= 0) return false;
      ++rows;
    }
  }
  return rows > 0;
}

// Whether the paste holds several nccl-tests jobs where one was meant: headers or trailers
// repeated, each process a job of its own.
bool RanksAlone(const PasteEvidence& paste, const std::vector<RunResult>& runs) {
  size_t single = 0;
  for (const RunResult& run : runs) {
    if (run.nranks == 1 || (run.ranks.size() == 1 && run.nranks <= 1)) ++single;
  }
  const bool many_headers = paste.nthread_headers >= 2 || paste.rank0_hosts.size() >= 2;
  if (many_headers &&
      (single >= 2 || Distinct(paste.rank0_hosts) >= 2 || paste.launcher_ranks >= 2)) {
    return true;
  }
  // Launched for several ranks, and NCCL says each communicator had one, or the rows' busbw is
  // 0 where algbw is not (nccl-tests' factor on one rank).
  if (paste.launcher_ranks >= 2 && (paste.nranks == 1 || ZeroBusbw(runs))) return true;
  return paste.trailers.size() >= 2 && paste.launcher_ranks >= 2 && AllAlike(paste.trailers);
}

// Whether the job was one rank alone (one device line, one GPU, no launcher of more): it has
// no peer, so neither P2P nor the network can have held it up.
bool OneRank(const PasteEvidence& paste, const std::vector<RunResult>& runs) {
  if (paste.launcher_ranks > 1 || paste.nranks > 1 || runs.empty()) return false;
  return std::all_of(runs.begin(), runs.end(), [](const RunResult& r) {
    return r.nranks <= 1 && r.ranks.size() == 1 && r.config.ngpus <= 1 && r.config.nthreads <= 1;
  });
}

// Whether a table header stands with no row under it: in a run read, or a layout only the
// paste reader saw (an old or quoted header).
bool HeaderWithoutRows(const PasteEvidence& paste, const std::vector<RunResult>& runs) {
  const bool any_rows =
      std::any_of(runs.begin(), runs.end(), [](const RunResult& r) { return !r.rows.empty(); });
  if (any_rows) return false;
  const bool cut = std::any_of(runs.begin(), runs.end(), [](const RunResult& r) {
    return std::any_of(r.errors.begin(), r.errors.end(), [](const std::string& e) {
      return e.find("cut off before its first row") != std::string::npos;
    });
  });
  const bool started = std::any_of(runs.begin(), runs.end(), [](const RunResult& r) {
    return !r.ranks.empty() || r.config.min_bytes > 0;
  });
  return cut || started || (paste.header_line > 0 && paste.lines_after_header == 0);
}

// Whether the runs' NCCL lines name a network other than TCP sockets ("NET/IB : Using",
// TCPX's, TCPXO's, EFA's provider): slow figures on it are not a fallback to sockets.
bool NamesFastNetwork(const std::vector<RunResult>& runs) {
  for (const RunResult& run : runs) {
    for (const std::string& line : run.platform_lines) {
      for (std::string_view net : {"NET/IB : Using", "NET/GPUDirectTCPX", "NET/FasTrak", "NET/gIB",
                                   "Using network IB", "Using network AWS Libfabric",
                                   "Selected Provider is efa", "Selected provider is efa"}) {
        if (line.find(net) != std::string::npos) return true;
      }
    }
  }
  return false;
}

// The figures of a multi-node run that only TCP sockets give: small collectives of a few ranks
// taking 80 us or more (InfiniBand, RoCE and EFA take under 40 on so few; TCPXO about 85 on
// 16; shared/reference/platforms.md), busbw topping at 8 GB/s or less from 32 MB up (one
// 100 Gb/s NIC's RDMA gives 10-12). "" when the figures are not TCP-class.
std::string TcpClassFigures(const std::vector<RunResult>& runs) {
  double floor_us = 0;
  int floor_ranks = 0;
  double large_busbw = -1;
  double any_busbw = 0;
  for (const RunResult& run : runs) {
    for (const ResultRow& row : run.rows) {
      for (const auto* half : {&row.out_of_place, &row.in_place}) {
        if (!half->has_value()) continue;
        const PlacementResult& r = **half;
        any_busbw = std::max(any_busbw, r.busbw);
        if (row.size >= (32u << 20)) large_busbw = std::max(large_busbw, r.busbw);
        if (row.size <= 4096 && run.nranks >= 2 && run.nranks <= 8 && r.time_us > 0 &&
            (floor_us == 0 || r.time_us < floor_us)) {
          floor_us = r.time_us;
          floor_ranks = run.nranks;
        }
      }
    }
  }
  const bool slow_latency = floor_us >= 80;
  if (large_busbw >= 0) {
    if (large_busbw > 8) return {};
    return fmt::format("busbw tops at {:.1f} GB/s from 32 MB up{}", large_busbw,
                       slow_latency ? fmt::format(", small collectives take {:.1f} us on {} ranks",
                                                  floor_us, floor_ranks)
                                    : "");
  }
  if (!slow_latency || any_busbw > 8) return {};
  return fmt::format(
      "small collectives take {:.1f} us on {} ranks (InfiniBand, RoCE and EFA take under 40 on "
      "so few) and busbw reaches {:.1f} GB/s",
      floor_us, floor_ranks, any_busbw);
}

// What the shapes are read against besides the paste.
struct ShapeContext {
  const Facts& facts;
  const std::vector<RunResult>& runs;
  const PlatformChoice& platform;
  bool quiet = false;  // no line named a failure's cause
};

// The launcher command's NCCL variables that never reached the ranks on other hosts, with
// what NCCL's own lines show of it (lines from fewer hosts than the job has).
std::string UnforwardedEnv(const ShapeContext& c, const PasteEvidence::LaunchEnv& launch) {
  const std::set<std::string> devices = RunHosts(c.runs);
  const std::vector<std::string>& nccl = c.facts.paste.nccl_hosts;
  if (!launch.multi_host && devices.size() < 2 && nccl.size() < 2) return {};
  std::string text = fmt::format(
      "`{}`: {} set for mpirun and not passed with -x (Open MPI's mpirun gives the "
      "ranks it starts on other hosts only the -x names)",
      Trim(launch.text), fmt::join(launch.unforwarded, ", "));
  if (!nccl.empty() && devices.size() > nccl.size()) {
    std::vector<std::string> silent;
    for (const std::string& h : devices) {
      if (std::find(nccl.begin(), nccl.end(), h) == nccl.end()) silent.push_back(h);
    }
    text += fmt::format("; NCCL printed lines on {} of the job's {} hosts (none from {})",
                        nccl.size(), devices.size(), fmt::join(silent, ", "));
  }
  return text;
}

// The shapes that point at a setting or a path rather than at a line: variables mpirun did not
// pass on, P2P off between the GPUs of a node, TCP-class figures on several nodes.
void PathShapes(const ShapeContext& c, bool failed,
                const std::function<void(std::string_view, size_t, std::string)>& add) {
  const PasteEvidence& paste = c.facts.paste;
  for (const PasteEvidence::LaunchEnv& launch : paste.launch_env) {
    if (!failed) break;
    if (std::string text = UnforwardedEnv(c, launch); !text.empty()) {
      add("env-not-forwarded", launch.line, std::move(text));
    }
  }
  if (paste.channels_shm > 0 && paste.channels_p2p == 0) {
    add("p2p-via-shm", 0,
        fmt::format("{} of NCCL's channel connections go via SHM and none via P2P ({} via NET)",
                    paste.channels_shm, paste.channels_net));
  }
  if (paste.channels_net_nogdr > 0) {
    add("net-no-gdr", 0,
        paste.channels_net_gdr > 0
            ? fmt::format("{} of NCCL's NET/IB connections without GDRDMA, {} with it: GPUDirect "
                          "RDMA works on some GPUs or nodes and not on others",
                          paste.channels_net_nogdr, paste.channels_net_gdr)
            : fmt::format("{} of NCCL's NET/IB connections, none with GDRDMA",
                          paste.channels_net_nogdr));
  }
  if (!paste.error_trace.empty()) {
    add("error-trace", paste.error_trace_line,
        fmt::format("NCCL's error trace: {}", fmt::join(paste.error_trace, ", ")));
  }
  // A platform whose network is known (given, or named by the log's NCCL lines) is judged by
  // the platform's own rules: a 40 Gb/s fabric's few GB/s are its figures, not a fallback.
  const bool guessed = !c.platform.platform || c.platform.network_guessed;
  if (!guessed || c.facts.nodes < 2 || paste.nics_used > 0 || NamesFastNetwork(c.runs)) return;
  std::string figures = TcpClassFigures(c.runs);
  if (figures.empty()) return;
  std::set<std::string> hosts = RunHosts(c.runs);
  hosts.insert(paste.nccl_hosts.begin(), paste.nccl_hosts.end());
  if (const std::string hint = HostNamingOf(hosts).names; !hint.empty()) {
    figures += fmt::format("; the host names ({}) are {}", *hosts.begin(), hint);
  }
  add("tcp-class", 0, fmt::format("on {} nodes, {}", c.facts.nodes, figures));
}

// The shapes of the paste and its runs: every process alone, NCCL variables the program never
// saw, nodes on different NCCL versions, the path shapes; with `quiet` (no line named a cause),
// a header with no rows.
std::vector<Hit> ShapeHits(const ShapeContext& c, const FailureBase& base) {
  const PasteEvidence& paste = c.facts.paste;
  const std::vector<RunResult>& runs = c.runs;
  const bool quiet = c.quiet;
  const int platform_nics = c.platform.platform ? c.platform.platform->nics : 0;
  std::vector<Hit> out;
  const auto add = [&](std::string_view shape, size_t line, std::string text) {
    if (const Signature* s = Shape(base, shape)) out.push_back({s, line, std::move(text), 1});
  };
  PathShapes(c, !quiet || HeaderWithoutRows(paste, runs), add);
  if (RanksAlone(paste, runs)) {
    add("ranks-alone", 0,
        fmt::format("{} nccl-tests headers, {} 'Rank 0' device lines on {} hosts, {} trailers, "
                    "launched for {} ranks",
                    paste.nthread_headers, paste.rank0_hosts.size(), Distinct(paste.rank0_hosts),
                    paste.trailers.size(), paste.launcher_ranks));
  } else if (quiet && HeaderWithoutRows(paste, runs)) {
    add(OneRank(paste, runs) ? "no-rows-alone" : "no-rows", paste.last_line_no,
        "the log ends here: " + paste.last_line);
  }
  for (const std::string& late : paste.late_env) add("late-env", 0, late);
  for (const std::string& rule : paste.rule_flags) {
    add("rule-" + rule, 0,
        fmt::format("check's {} rule: {} is not in use (see the test)", rule, rule));
  }
  if (paste.nics_used > 0 && platform_nics > paste.nics_used) {
    add("nics-fewer", paste.nics_line,
        fmt::format("NCCL uses {} NIC{} of the platform's {}", paste.nics_used,
                    paste.nics_used == 1 ? "" : "s", platform_nics));
  }
  std::map<std::string, std::vector<std::string>> hosts_of;  // version -> hosts
  for (const PasteEvidence::HostVersion& v : paste.versions) {
    hosts_of[v.version].push_back(v.host.empty() ? "(no host)" : v.host);
  }
  if (hosts_of.size() > 1) {
    std::vector<std::string> parts;
    parts.reserve(hosts_of.size());
    for (const auto& [version, hosts] : hosts_of) {
      parts.push_back(fmt::format("NCCL {} on {}", version, fmt::join(hosts, ", ")));
    }
    add("version-mismatch", paste.versions.front().line, fmt::format("{}", fmt::join(parts, "; ")));
  }
  return out;
}

std::vector<Hit> TextHits(const PasteEvidence& paste, const FailureBase& base) {
  std::vector<Hit> out;
  for (const PasteHit& h : paste.hits) {
    out.push_back({&base.signatures().at(h.signature), h.line, h.text, h.count});
  }
  return out;
}

// The nodes the paste shows, when it shows all of them: NCCL's hosts when its lines name as
// many ranks as nranks (or more hosts than one), else the device lines' hosts when they list
// every rank; 0 when the paste is a part of the job's log.
int NodesOf(const PasteEvidence& paste, const std::vector<RunResult>& runs) {
  const size_t nccl_hosts = paste.nccl_hosts.size();
  if (nccl_hosts > 1 || (nccl_hosts == 1 && paste.nranks > 0 &&
                         paste.ranks_seen >= static_cast<size_t>(paste.nranks))) {
    return static_cast<int>(nccl_hosts);
  }
  std::set<std::string> hosts;
  for (const RunResult& run : runs) {
    if (run.ranks.empty() ||
        (run.nranks > 0 && run.ranks.size() < static_cast<size_t>(run.nranks))) {
      continue;
    }
    for (const RankInfo& r : run.ranks) hosts.insert(r.hostname);
  }
  hosts.erase("");
  if (hosts.empty() && paste.single_process_devices > 0) return 1;
  if (hosts.size() == 1 && paste.launcher_ranks > 0) {
    // One host's device lines of a job launched for more ranks than they list.
    size_t listed = 0;
    for (const RunResult& run : runs) listed = std::max(listed, run.ranks.size());
    if (static_cast<size_t>(paste.launcher_ranks) > listed) return 0;
  }
  return static_cast<int>(hosts.size());
}

Finding NoteOf(const Hit& hit, const PasteEvidence& paste) {
  return {.severity = Severity::kInfo,
          .source = "note",
          .what = "harmless here: " + hit.signature->summary + " [" + hit.signature->id + "]",
          .evidence = {Where(paste, hit.line, hit.text)}};
}

// The conditions of `when` that are evidence for the cause: the node count only says which
// causes can apply (a network path needs two nodes), not which of them it is.
size_t EvidenceCount(const std::vector<Condition>& when) {
  return static_cast<size_t>(std::count_if(when.begin(), when.end(), [](const Condition& c) {
    return c.kind != Condition::Kind::kMultiNode;
  }));
}

// Adds the causes `hit` points to, each with the score its evidence earns; false when no
// cause's conditions held (the line is then harmless where it stands).
bool Rank(const Hit& hit, const Facts& facts, std::map<std::string, Candidate>& candidates) {
  const Signature& s = *hit.signature;
  bool ranked = false;
  for (const CauseLink& link : s.causes) {
    if (!AllHold(link.when, hit, facts)) continue;
    ranked = true;
    const int score =
        s.weight + link.weight + kConditionWeight * static_cast<int>(EvidenceCount(link.when));
    Candidate& c = candidates[link.cause];
    c.cause = link.cause;
    const std::string line = hit.line > 0 ? Where(facts.paste, hit.line, hit.text)
                                          : facts.paste.source + ": " + hit.text;
    if (std::find(c.evidence.begin(), c.evidence.end(), line) == c.evidence.end() &&
        c.evidence.size() < 4) {
      c.evidence.push_back(line);
    }
    if (score <= c.score) continue;
    c.score = score;
    c.role = s.role;
    c.by_evidence = EvidenceCount(link.when) > 0 || s.causes.size() == 1;
    c.decided_by.clear();
    c.decided_by.push_back(s.id);
    for (const Condition& cond : link.when) c.decided_by.push_back(cond.value);
  }
  return ranked;
}

Finding CauseFinding(const Candidate& top, const FailureCause& cause, bool decided) {
  Finding f;
  f.severity = top.role == SignatureRole::kSlow ? Severity::kWarn : Severity::kCritical;
  f.source = "cause";
  f.what = cause.title + ": " + cause.explain;
  if (!top.decided_by.empty()) {
    f.what += fmt::format(" (decided by: {})", fmt::join(top.decided_by, "; "));
  }
  f.evidence = top.evidence;
  f.fix = cause.fix + "; to confirm: " + cause.check;
  f.decided = decided;
  f.figures["score"] = top.score;
  return f;
}

// The candidates ranked (a failure before a slowness, then by score), the best named as the
// cause (decided when it rests on evidence and leads the next of its kind by the margin) and
// the next three as candidates with the check that tells them apart.
std::vector<Finding> Conclude(const std::map<std::string, Candidate>& candidates,
                              const FailureBase& base, PasteDiagnosis& out) {
  std::vector<Candidate> ranked;
  ranked.reserve(candidates.size());
  for (const auto& [id, c] : candidates) ranked.push_back(c);
  const auto fails = [](const Candidate& c) { return c.role != SignatureRole::kSlow; };
  std::sort(ranked.begin(), ranked.end(), [&](const Candidate& a, const Candidate& b) {
    if (fails(a) != fails(b)) return fails(a);
    if (a.score != b.score) return a.score > b.score;
    return a.cause < b.cause;  // a stable order for ties
  });
  const Candidate& top = ranked.front();
  const bool alone = ranked.size() == 1 || fails(ranked[1]) != fails(top) ||
                     top.score - ranked[1].score >= kDecisiveMargin;
  out.decided = alone && top.by_evidence;
  out.cause = top.cause;
  Finding named = CauseFinding(top, *base.FindCause(top.cause), out.decided);
  if (!out.decided) {
    named.what = fmt::format("not decided between {} and {}; most likely {}", top.cause,
                             ranked.size() > 1 ? ranked[1].cause : "other causes", named.what);
  }
  out.status = named.severity;
  std::vector<Finding> findings = {std::move(named)};
  for (size_t i = 1; i < ranked.size() && i < 4; ++i) {
    const FailureCause* other = base.FindCause(ranked[i].cause);
    findings.push_back(
        {.severity = Severity::kInfo,
         .source = "candidate",
         .what = fmt::format("{} also possible: {} (score {} against {}); to tell: {}",
                             i == 1 ? "next," : "then,", other->title, ranked[i].score, top.score,
                             other->check),
         .evidence = ranked[i].evidence});
  }
  return findings;
}

// Another tool's own bandwidth verdict, as it gave it: below its expectation is what it failed
// the node for, whatever the cause (which its line does not say).
void ToolVerdicts(const PasteEvidence& paste, PasteDiagnosis& out) {
  for (const PasteEvidence::ToolVerdict& v : paste.tool_verdicts) {
    if (v.expected <= 0 || v.measured >= v.expected) continue;
    Finding f;
    f.severity = Severity::kCritical;
    f.source = "tool";
    f.what = fmt::format(
        "the health check measured busbw {:.1f} GB/s against its own expectation of {:.1f} GB/s "
        "({:.0f}%); its line does not say why: run fabricscope doctor on the node and check the "
        "NCCL variables its image sets (NCCL_TOPO_FILE, NCCL_GRAPH_FILE, /etc/nccl.conf)",
        v.measured, v.expected, 100 * v.measured / v.expected);
    f.evidence = {Where(paste, v.line, v.text)};
    f.figures["measured_busbw"] = v.measured;
    f.figures["expected_busbw"] = v.expected;
    out.status = Severity::kCritical;
    out.findings.push_back(std::move(f));
  }
}

}  // namespace

PasteDiagnosis DiagnosePaste(const PasteEvidence& paste, const std::vector<RunResult>& runs,
                             const PlatformChoice& platform, const FailureBase& base) {
  PasteDiagnosis out;
  out.source = paste.source;
  Facts facts{.paste = paste,
              // A platform the log's GPU alone chose says nothing of the network.
              .transport = platform.platform && !platform.network_guessed
                               ? platform.platform->transport
                               : "",
              .nodes = NodesOf(paste, runs),
              .signatures = {}};
  const std::vector<Hit> text = TextHits(paste, base);
  for (const Hit& h : text) facts.signatures.insert(h.signature->id);
  std::map<std::string, Candidate> candidates;
  const auto judge = [&](const std::vector<Hit>& hits) {
    for (const Hit& hit : hits) {
      const Signature& s = *hit.signature;
      const bool harmless = !s.harmless_when.empty() && AllHold(s.harmless_when, hit, facts);
      if (s.role == SignatureRole::kNote || harmless || !Rank(hit, facts, candidates)) {
        out.findings.push_back(NoteOf(hit, paste));
      }
    }
  };
  judge(text);
  const bool quiet = std::none_of(candidates.begin(), candidates.end(), [](const auto& c) {
    return c.second.role != SignatureRole::kSlow;
  });
  judge(ShapeHits({.facts = facts, .runs = runs, .platform = platform, .quiet = quiet}, base));
  ToolVerdicts(paste, out);
  if (candidates.empty()) return out;
  std::vector<Finding> findings = Conclude(candidates, base, out);
  for (Finding& note : out.findings) findings.push_back(std::move(note));
  out.findings = std::move(findings);
  return out;
}

}  // namespace fabricscope
