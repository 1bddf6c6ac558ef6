// How fast `fabricscope model` is: the fabric simulator on the 16,384-GPU ring all_reduce
// (2,048 nodes x 8 on a 3-tier fat-tree; the goal is under 10 s on a 2-core machine), how
// it scales with the node count, the heap-based max-min fair sharing against a plain
// level-by-level filling of the same flows, and the analytic model's evaluation rate.
//
//   model_bench [--nodes 2048] [--rounds 5] [--tiers 3] [--design classic]
//
// Each figure is the median of --rounds runs (min and max beside it); the simulator rounds
// build the fabric, route every connection and run the event loop, as `fabricscope model
// --simulate` does. Throughputs: connections routed and (flow, link) uses shared per second
// of simulation.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "bench_stats.h"
#include "fabricscope/fabric_sim.h"
#include "fabricscope/max_min.h"
#include "fabricscope/model.h"
#include "fabricscope/platform.h"
#include "model/flows.h"

namespace {

using Clock = std::chrono::steady_clock;
using fabricscope::bench::Median;
namespace sim = fabricscope::sim;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

sim::FabricOptions Cluster(int nodes, int tiers, sim::FabricDesign design) {
  sim::FabricOptions o;
  o.nodes = nodes;
  o.gpus_per_node = 8;
  o.nics_per_node = 8;
  o.nic_gbs = 48;  // 400 Gb/s at 0.96
  o.nvlink_gbs = 370;
  o.tiers = tiers;
  o.design = design;
  return o;
}

struct SimTiming {
  std::vector<double> seconds;
  sim::SimResult last;
  size_t links = 0;
};

SimTiming TimeSimulation(const sim::FabricOptions& fo, const sim::SimOptions& so, int rounds) {
  SimTiming t;
  for (int r = 0; r < rounds; ++r) {
    const auto start = Clock::now();
    const sim::Fabric fabric(fo);
    t.last = sim::Simulate(fabric, so);
    t.seconds.push_back(Seconds(start, Clock::now()));
    t.links = fabric.link_count();
  }
  return t;
}

// The definition of max-min fairness run literally: each level, scan every link for the
// one that fills first, freeze its flows. O(levels x uses): the baseline the heap replaces.
void PlainMaxMin(const std::vector<double>& capacity, const sim::FlowSet& flows,
                 std::vector<double>& rates) {
  const size_t nflows = flows.size();
  rates.assign(nflows, 0.0);
  std::vector<char> frozen(nflows, 0);
  std::vector<double> left = capacity;
  size_t unfrozen = nflows;
  std::vector<double> weight(capacity.size());
  while (unfrozen > 0) {
    std::fill(weight.begin(), weight.end(), 0.0);
    for (size_t f = 0; f < nflows; ++f) {
      if (frozen[f]) continue;
      for (size_t i = flows.offsets[f]; i < flows.offsets[f + 1]; ++i) {
        weight[static_cast<size_t>(flows.links[i])] += flows.coefs[i];
      }
    }
    double level = std::numeric_limits<double>::infinity();
    size_t bottleneck = 0;
    for (size_t l = 0; l < capacity.size(); ++l) {
      if (weight[l] > 1e-9 && left[l] / weight[l] < level) {
        level = left[l] / weight[l];
        bottleneck = l;
      }
    }
    if (!std::isfinite(level)) break;
    for (size_t f = 0; f < nflows; ++f) {
      if (frozen[f]) continue;
      bool through = false;
      for (size_t i = flows.offsets[f]; i < flows.offsets[f + 1]; ++i) {
        through = through || static_cast<size_t>(flows.links[i]) == bottleneck;
      }
      if (!through) continue;
      frozen[f] = 1;
      --unfrozen;
      rates[f] = level;
      for (size_t i = flows.offsets[f]; i < flows.offsets[f + 1]; ++i) {
        left[static_cast<size_t>(flows.links[i])] -= flows.coefs[i] * level;
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Speed of fabricscope's fabric simulator and analytic model"};
  int nodes = 2048;
  int rounds = 5;
  int tiers = 3;
  std::string design = "classic";
  app.add_option("--nodes", nodes, "nodes of 8 GPUs in the headline case")
      ->capture_default_str()
      ->check(CLI::Range(2, 1 << 17));
  app.add_option("--rounds", rounds, "repetitions per figure")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--tiers", tiers, "fat-tree tiers")
      ->capture_default_str()
      ->check(CLI::Range(2, 3));
  app.add_option("--design", design, "classic, rail-optimized or rail-only")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const sim::FabricDesign fabric_design = sim::ParseDesign(design);

  // 1. The headline case.
  sim::SimOptions ring;
  ring.bytes = size_t{1} << 30;
  const SimTiming head = TimeSimulation(Cluster(nodes, tiers, fabric_design), ring, rounds);
  const double median = Median(head.seconds);
  fmt::print("# ring all_reduce, {} nodes x 8 GPUs = {} GPUs, {}-tier {} fat-tree, ECMP\n", nodes,
             nodes * 8, tiers, design);
  fmt::print("#   links {}, flows {}, connections {}, link uses {}, events {}\n", head.links,
             head.last.flows, head.last.connections, head.last.link_uses, head.last.events);
  fmt::print(
      "#   simulate (build + route + share): median {:.3f} s (min {:.3f}, max {:.3f}) "
      "over {} rounds; the 10 s goal is {:.0f}x that\n",
      median, *std::min_element(head.seconds.begin(), head.seconds.end()),
      *std::max_element(head.seconds.begin(), head.seconds.end()), rounds, 10.0 / median);
  fmt::print("#   {:.2f} M connections routed/s, {:.2f} M link uses/s, busbw {:.1f} GB/s\n",
             static_cast<double>(head.last.connections) / median / 1e6,
             static_cast<double>(head.last.link_uses) / median / 1e6, head.last.busbw);

  // 2. Scaling with the node count.
  fmt::print("#\n# scaling (ring all_reduce, {}-tier {}):\n", tiers, design);
  fmt::print("#   {:>6} {:>7} {:>9} {:>11} {:>10} {:>12}\n", "nodes", "GPUs", "links", "link uses",
             "median s", "uses/s (M)");
  for (int n : {256, 512, 1024, 2048, 4096}) {
    const SimTiming t = TimeSimulation(Cluster(n, tiers, fabric_design), ring, rounds);
    const double m = Median(t.seconds);
    fmt::print("#   {:>6} {:>7} {:>9} {:>11} {:>10.3f} {:>12.2f}\n", n, n * 8, t.links,
               t.last.link_uses, m, static_cast<double>(t.last.link_uses) / m / 1e6);
  }

  // 3. Max-min: the heap against the plain filling, side by side on the same flows (one
  // sendrecv connection per GPU: thousands of flows, many fill levels under ECMP).
  {
    const int n = std::min(nodes, 512);
    const sim::Fabric fabric(Cluster(n, tiers, fabric_design));
    sim::SimOptions sr;
    sr.collective = fabricscope::Collective::kSendRecv;
    sr.peer_shift = n / 2;
    std::vector<int> all(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) all[static_cast<size_t>(i)] = i;
    const sim::FlowPlan plan = sim::PlanFlows(fabric, sr, {all});
    std::vector<double> capacity(fabric.link_count());
    for (size_t l = 0; l < capacity.size(); ++l) capacity[l] = fabric.link(l).capacity_gbs;
    std::vector<char> active(plan.flows.size(), 1);
    std::vector<double> heap_rates;
    std::vector<double> plain_rates;
    sim::MaxMinWorkspace ws;
    std::vector<double> heap_s;
    std::vector<double> plain_s;
    for (int r = 0; r < rounds; ++r) {
      auto a = Clock::now();
      sim::MaxMinRates(capacity, plan.flows, active, heap_rates, ws);
      auto b = Clock::now();
      PlainMaxMin(capacity, plan.flows, plain_rates);
      auto c = Clock::now();
      heap_s.push_back(Seconds(a, b));
      plain_s.push_back(Seconds(b, c));
    }
    double differ = 0;
    for (size_t f = 0; f < heap_rates.size(); ++f) {
      differ = std::max(differ, std::abs(heap_rates[f] - plain_rates[f]));
    }
    fmt::print("#\n# max-min fair sharing, {} sendrecv flows on {} nodes ({} link uses):\n",
               plan.flows.size(), n, plan.flows.links.size());
    fmt::print(
        "#   heap {:.4f} s, plain filling {:.4f} s: {:.0f}x (largest rate difference {:.2g})\n",
        Median(heap_s), Median(plain_s), Median(plain_s) / Median(heap_s), differ);
  }

  // 4. The analytic model: predictions per second (every enabled algorithm x protocol is
  // evaluated for each), and one calibration.
  {
    const fabricscope::Catalog catalog = fabricscope::Catalog::Builtin();
    const fabricscope::Platform& platform = catalog.Get("dgx-h100");
    fabricscope::ModelOptions o;
    o.nodes = 64;
    const fabricscope::CollectiveModel model(platform, o);
    std::vector<double> rates;
    double sink = 0;
    for (int r = 0; r < rounds; ++r) {
      const auto start = Clock::now();
      size_t predictions = 0;
      for (const auto& spec : fabricscope::Collectives()) {
        for (size_t size = 8; size <= (size_t{1} << 34); size *= 2) {
          sink += model.Predict(spec.id, size).time_us;
          ++predictions;
        }
      }
      rates.push_back(static_cast<double>(predictions) / Seconds(start, Clock::now()));
    }
    fmt::print(
        "#\n# analytic model (dgx-h100, 64 nodes, 9 collectives x 32 sizes): {:.2f} M "
        "predictions/s (checksum {:.3g})\n",
        Median(rates) / 1e6, sink);
  }
  return 0;
}
