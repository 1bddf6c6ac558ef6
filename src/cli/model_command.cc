#include "cli/model_command.h"

#include <memory>

#include "cli/output.h"
#include "fabricscope/model_run.h"

namespace fabricscope::cli {

int ExecuteModel(const ModelRequest& request, std::ostream& out, std::ostream& err) {
  const ModelReporter& reporter = FindModelReporter(request.format);
  const ModelRecord record = RunModel(request, err);
  reporter.render(record, out);
  if (Stalled(record)) {
    err << "fabricscope model: the simulated collective cannot complete (see STALLED)\n";
    return kExitFailed;
  }
  return kExitOk;
}

CommandAction SetupModelCommand(CLI::App& app) {
  auto f = std::make_shared<ModelRequest>();
  app.add_option("--platform", f->platform,
                 "catalog platform (docs/catalog.md), e.g. gcp-a3-ultragpu-8g, dgx-h100");
  app.add_option("--gpus-per-node", f->gpus_per_node, "generic platform: GPUs per node");
  app.add_option("--intra-node-busbw", f->intra_node_busbw,
                 "generic platform: GB/s busbw of a healthy single-node ring");
  app.add_option("--nics", f->nics, "generic platform: GPU-fabric NICs per node");
  app.add_option("--nic-rate", f->nic_rate, "generic platform: line rate of one NIC, Gb/s");
  app.add_option("--transport", f->transport, "generic platform: IB, RoCE, EFA, TCPX, TCPXO or TCP")
      ->capture_default_str();
  app.add_option("--latency-floor", f->latency_floor,
                 "generic platform: measured 2-node small-message time, us (sets the latency)");
  CLI::Option* nodes =
      app.add_option("--nodes", f->nodes,
                     "node count to predict or simulate (with --calibrate: the run's, unless "
                     "given)")
          ->capture_default_str();
  CLI::Option* collective =
      app.add_option("--collective", f->collective,
                     "a collective, a comma-separated list, or all (with --calibrate: the run's; "
                     "with --compare: only these of the run's)")
          ->capture_default_str();
  app.add_option("-b,--minbytes", f->min_bytes, "smallest size (K/M/G suffixes)")
      ->capture_default_str();
  app.add_option("-e,--maxbytes", f->max_bytes, "largest size")->capture_default_str();
  app.add_option("-i,--stepbytes", f->step_bytes, "additive step (when -f is 1)")
      ->capture_default_str();
  app.add_option("-f,--stepfactor", f->step_factor, "multiplicative step")->capture_default_str();
  app.add_option("--algo", f->algo,
                 "like NCCL_ALGO: only these (Ring,Tree,NVLS,NVLSTree,CollNetDirect,"
                 "CollNetChain,PAT)");
  app.add_option("--proto", f->proto, "like NCCL_PROTO: only these (LL,LL128,Simple)");
  app.add_option("--gpu-arch", f->gpu_arch,
                 "volta, ampere, hopper or blackwell (default: from the platform's GPU)");
  app.add_option("--cpu", f->cpu, "intel or amd: NCCL's LL cap and network overhead")
      ->capture_default_str();
  app.add_flag("--pcie", f->pcie, "GPUs joined by PCIe, not NVLink (no LL128, no NVLS)");
  app.add_option("--channels", f->channels, "NCCL channels (0: two per NIC)")
      ->capture_default_str();
  app.add_option("--net-efficiency", f->net_efficiency,
                 "fraction of NIC line rate a ring carries (default: the catalog's band, else "
                 "the transport's)");
  app.add_flag("--in-network", f->in_network,
               "in-network reduction (SHARP): CollNet algorithms, multi-node NVLS; with "
               "--simulate, all_reduce through switch aggregation trees");
  AddFormatOption(app, f->format, ModelReporters());

  auto* measured = app.add_option_group(
      "measured runs",
      "any file `fabricscope analyze` reads: nccl-tests/rccl-tests logs, JSON, CSV");
  measured
      ->add_option("--calibrate", f->calibrate,
                   "fit the model's latency and NIC efficiency to this run, print the fit and "
                   "predict with the fitted terms at --nodes")
      ->type_name("FILE");
  CLI::Option* compare =
      measured
          ->add_option("--compare", f->compare,
                       "predicted against measured for every row of this run, at its scale "
                       "(with --calibrate: the calibrated model)")
          ->type_name("FILE");
  measured
      ->add_option("--svg", f->svg,
                   "write the measured (solid) and predicted (dashed) busbw curves to this SVG")
      ->type_name("FILE")
      ->needs(compare);
  measured
      ->add_option("--placement", f->placement, "the halves of each row to read: both, out or in")
      ->capture_default_str();
  measured
      ->add_option("--min-size", f->min_size, "leave measured rows below this size out (e.g. 1M)")
      ->type_name("SIZE")
      ->capture_default_str();
  measured
      ->add_option("--measured-nodes", f->measured_nodes,
                   "node count of a run whose log names no hosts")
      ->type_name("N");

  app.add_option("--fabric", f->fabric,
                 "predict all_reduce (ring) or alltoall busbw on a discovered InfiniBand fabric, "
                 "as routed now and with balanced routes: a directory of saved infiniband-diags "
                 "outputs (fabricscope fabric --save DIR; docs/fabric.md)")
      ->type_name("DIR");
  auto* sim = app.add_option_group("fabric simulator", "with --simulate");
  CLI::Option* simulate = sim->add_flag(
      "--simulate", f->simulate, "simulate the fabric flow by flow instead of the analytic model");
  sim->add_option("--tiers", f->tiers, "2 (leaf-spine) or 3 (leaf-aggregation-core in pods)")
      ->capture_default_str();
  sim->add_option("--design", f->design, "classic (top-of-rack), rail-optimized or rail-only")
      ->capture_default_str();
  sim->add_option("--leaf-ports", f->leaf_ports, "NIC-facing ports per leaf")
      ->capture_default_str();
  sim->add_option("--oversubscription", f->oversubscription, "leaf down:up ratio (2 = 2:1)")
      ->capture_default_str();
  sim->add_option("--leaves-per-pod", f->leaves_per_pod, "3 tiers: leaves per pod")
      ->capture_default_str();
  sim->add_option("--pod-oversubscription", f->pod_oversubscription,
                  "3 tiers: aggregation down:up ratio")
      ->capture_default_str();
  sim->add_option("--routing", f->routing, "ecmp (seeded hash) or balanced (adaptive)")
      ->capture_default_str();
  sim->add_option("--seed", f->seed, "ECMP hash seed")->capture_default_str();
  sim->add_option("--qps", f->qps, "queue pairs per connection, each hashed on its own")
      ->capture_default_str();
  sim->add_option("--peer-shift", f->peer_shift, "sendrecv: node i sends to node i + shift")
      ->capture_default_str();
  sim->add_option("--fail-link", f->fail_links, "fail a link: 'a-b' (both ways) or 'a->b'");
  sim->add_option("--degrade-link", f->degrade_links, "LINK=FACTOR: capacity left, 0 to 1");
  sim->add_option("--slow-node", f->slow_nodes, "NODE=FACTOR: the node's NICs at FACTOR");
  sim->add_option("--top-links", f->top_links, "busiest links to list")->capture_default_str();
  // Every simulator option but --simulate itself needs it.
  for (CLI::Option* option : sim->get_options()) {
    if (option != simulate) option->needs(simulate);
  }
  return [f, nodes, collective](const CommandContext& ctx) {
    f->nodes_given = nodes->count() > 0;
    f->collective_given = collective->count() > 0;
    return ExecuteModel(*f, ctx.out, ctx.err);
  };
}

}  // namespace fabricscope::cli
