// How often `fabricscope locate` is right on simulated clusters: for each node count and
// noise, --seeds clusters with one slow node (a random one, at --factor of the bandwidth)
// and --seeds without a fault, all with transients; the table gives the recall (the slow
// node named alone), wrong names (anyone named who is not at fault), inconclusive or
// ambiguous runs and the mean sweeps. Two nodes are judged against the expected bandwidth
// (--expect, the model's 25 GB/s): "ambiguous" is their right answer to a slow node.
// docs/locate.md has the table.
//
//   locate_accuracy [--min-nodes 2] [--max-nodes 16] [--seeds 100] [--noise 0.1,0.3,0.5]
//                   [--transients 0.05] [--factor 0.25] [--noise-from FILE ...]
//                   [--no-round-effects]
// --noise-from replays the noise of recorded healthy runs (`locate --save-samples`, e.g.
// tests/locate/data/bed*-none.jsonl) instead of --noise and --transients;
// --no-round-effects leaves each round's shared effect on its samples, for comparison.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabricscope/error.h"
#include "fabricscope/locate.h"

namespace {

using fabricscope::LocateStatus;
using fabricscope::SuspectKind;

struct Counts {
  int runs = 0;
  int named_right = 0;  // the slow node, alone
  int wrong = 0;        // a run that named anyone not at fault
  int inconclusive = 0;
  int ambiguous = 0;
  int clear = 0;
  int sweeps = 0;
};

struct Config {
  int nodes = 4;
  double noise = 0.1;
  double transients = 0.05;
  double factor = 0.25;
  int seeds = 100;
  std::shared_ptr<const fabricscope::RecordedNoise> recorded;  // replayed instead of noise
  bool round_effects = true;
};

// One run: `slow` is the slow node, or -1 for none.
void RunOne(const Config& c, uint64_t seed, int slow, Counts& counts) {
  fabricscope::SimulatedClusterOptions sim;
  sim.nodes = c.nodes;
  sim.noise = c.noise;
  sim.transient_rate = c.transients;
  sim.seed = seed;
  sim.recorded_noise = c.recorded;
  if (slow >= 0) {
    fabricscope::SimulatedFault f;
    f.kind = SuspectKind::kNode;
    f.node = slow;
    f.factor = c.factor;
    sim.faults.push_back(f);
  }
  fabricscope::SimulatedCluster cluster(sim);
  fabricscope::LocateOptions options;
  options.stragglers = false;
  options.round_effects = c.round_effects;
  // Two nodes have nothing to compare their pair with but what the platform should do.
  if (c.nodes == 2) options.expect_gbs = sim.bandwidth;
  const fabricscope::LocateReport r = fabricscope::Locate(options, cluster.Layout(), cluster);
  ++counts.runs;
  counts.sweeps += r.sweeps;
  bool wrong = false;
  for (const fabricscope::Suspect& s : r.suspects) {
    wrong = wrong || s.kind != SuspectKind::kNode || s.nodes != std::vector<int>{slow};
  }
  if (wrong) {
    fmt::print(stderr, "wrong: --simulate {} {} --seed {}{}: {}\n", c.nodes,
               c.recorded ? std::string("--noise-from (the bench's files)")
                          : fmt::format("--noise {} --transients {}", c.noise, c.transients),
               seed,
               slow >= 0 ? fmt::format(" --inject node:{}:{}", slow, c.factor) : std::string(),
               r.suspects.front().evidence);
  }
  counts.wrong += wrong ? 1 : 0;
  if (!wrong && r.suspects.size() == 1) ++counts.named_right;
  counts.inconclusive += r.status == LocateStatus::kInconclusive ? 1 : 0;
  counts.ambiguous += r.status == LocateStatus::kAmbiguous ? 1 : 0;
  counts.clear += r.status == LocateStatus::kClear ? 1 : 0;
}

std::string Percent(int part, int whole) {
  return whole == 0 ? "-" : fmt::format("{:.0f}%", 100.0 * part / whole);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"locate's recall and wrong names on simulated clusters"};
  int min_nodes = 2;
  int max_nodes = 16;
  int seeds = 100;
  std::vector<double> noises = {0.1, 0.3, 0.5};
  double transients = 0.05;
  double factor = 0.25;
  app.add_option("--min-nodes", min_nodes)->capture_default_str();
  app.add_option("--max-nodes", max_nodes)->capture_default_str();
  app.add_option("--seeds", seeds)->capture_default_str();
  app.add_option("--noise", noises)->delimiter(',');
  app.add_option("--transients", transients)->capture_default_str();
  app.add_option("--factor", factor)->capture_default_str();
  std::vector<std::string> noise_from;
  app.add_option("--noise-from", noise_from, "replay these recorded healthy runs' noise");
  bool no_round_effects = false;
  app.add_flag("--no-round-effects", no_round_effects,
               "leave each round's shared effect on its samples (for comparison)");
  CLI11_PARSE(app, argc, argv);
  std::shared_ptr<const fabricscope::RecordedNoise> recorded;
  if (!noise_from.empty()) {
    try {
      recorded = fabricscope::LoadRecordedNoise(noise_from);
    } catch (const fabricscope::Error& e) {
      fmt::print(stderr, "locate_accuracy: {}\n", e.what());
      return 2;
    }
    noises = {0};
  }

  fmt::print(
      "| nodes | noise | slow node named | wrong names | ambiguous (fault) | inconclusive "
      "(fault) | clear (no fault) | inconclusive (no fault) | mean sweeps |\n"
      "|---|---|---|---|---|---|---|---|---|\n");
  int total_wrong = 0;
  for (int n = min_nodes; n <= max_nodes; ++n) {
    for (double noise : noises) {
      const Config c{n, noise, transients, factor, seeds, recorded, !no_round_effects};
      Counts fault;
      Counts none;
      for (int s = 0; s < seeds; ++s) {
        const uint64_t seed = 1000003ULL * static_cast<uint64_t>(n) + static_cast<uint64_t>(s);
        RunOne(c, seed, s % n, fault);
        RunOne(c, seed + 7, -1, none);
      }
      total_wrong += fault.wrong + none.wrong;
      fmt::print("| {} | {} | {} | {} | {} | {} | {} | {} | {:.1f} |\n", n,
                 recorded ? std::string("replayed") : fmt::format("{}", noise),
                 Percent(fault.named_right, fault.runs), fault.wrong + none.wrong,
                 Percent(fault.ambiguous, fault.runs), Percent(fault.inconclusive, fault.runs),
                 Percent(none.clear, none.runs),
                 Percent(none.inconclusive + none.ambiguous, none.runs),
                 static_cast<double>(fault.sweeps + none.sweeps) / (fault.runs + none.runs));
    }
  }
  fmt::print("\nwrong names in all runs: {}\n", total_wrong);
  return total_wrong == 0 ? 0 : 1;
}
