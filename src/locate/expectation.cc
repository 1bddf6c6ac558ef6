// What two nodes' one pair is judged against: the platform's expectation, as `fabricscope
// check` judges a 2-node sendrecv (the catalog's band when it has one, else the model of the
// platform), for one pair of ranks (one GPU and its NIC on each node).
#include <fmt/format.h>

#include <string>

#include "fabricscope/collective.h"
#include "fabricscope/error.h"
#include "fabricscope/locate.h"
#include "fabricscope/model.h"
#include "fabricscope/platform.h"

namespace fabricscope {

PairExpectation PlatformPairExpectation(const Platform& platform, size_t bytes) {
  if (bytes == 0) throw UsageError("the expectation of a pair needs a message size above 0");
  PairExpectation out;
  // The catalog's own figure first, as check prefers it; then the model, as check falls
  // back to it for sendrecv (the catalog holds ring collectives only).
  if (const auto band = platform.ExpectationFor("sendrecv", 2, bytes)) {
    out.gbs = band->typical_busbw;
    out.source =
        fmt::format("{}'s catalog band for sendrecv on 2 nodes ({})", platform.name, band->source);
    return out;
  }
  ModelOptions options;
  options.nodes = 2;
  try {
    const Prediction p = CollectiveModel(platform, options).Predict(Collective::kSendRecv, bytes);
    out.gbs = p.busbw;
  } catch (const UsageError& e) {
    throw UsageError(
        fmt::format("platform {} gives no expectation for a pair: {}", platform.name, e.what()));
  }
  if (!(out.gbs > 0)) {
    throw UsageError(fmt::format(
        "platform {} gives no expectation for a pair (the model predicts {} GB/s for sendrecv on "
        "2 nodes): give --expect GBPS",
        platform.name, out.gbs));
  }
  out.source = fmt::format(
      "{}: check's expectation for sendrecv on 2 nodes at {} bytes, from `fabricscope model` "
      "(NCCL {} tuning constants over the catalog's figures)",
      platform.name, bytes, NcclTuningVersion());
  return out;
}

}  // namespace fabricscope
