// Every node's report to process 0: through the TCP rendezvous store under the env launcher,
// through MPI under mpirun/srun.
#include <mpi.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "fabricscope/doctor.h"
#include "fabricscope/error.h"
#include "fabricscope/mpi_session.h"
#include "fabricscope/tcp_store.h"

namespace fabricscope::doctor {
namespace {

using Clock = std::chrono::steady_clock;

std::string Key(int rank) { return "fabricscope/doctor/report/" + std::to_string(rank); }

void CheckMpi(int rc, const char* call) {
  if (rc != MPI_SUCCESS) throw BackendError(std::string("doctor gather: ") + call + " failed");
}

// MPI starts every process, so there is no one to wait for: a gather of the reports.
std::vector<std::string> GatherMpi(const std::string& mine) {
  const MpiSession mpi;
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<size_t>(mpi.size()));
  CheckMpi(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD),
           "MPI_Gather");
  std::vector<int> offsets(lengths.size(), 0);
  int total = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    offsets[i] = total;
    total += lengths[i];
  }
  std::vector<char> all(static_cast<size_t>(mpi.rank() == 0 ? total : 0));
  std::vector<char> data(mine.begin(), mine.end());
  CheckMpi(MPI_Gatherv(data.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                       MPI_CHAR, 0, MPI_COMM_WORLD),
           "MPI_Gatherv");
  std::vector<std::string> out;
  if (mpi.rank() != 0) return out;
  for (size_t i = 0; i < lengths.size(); ++i) {
    out.emplace_back(all.begin() + offsets[i], all.begin() + offsets[i] + lengths[i]);
  }
  return out;
}

std::vector<std::string> GatherStore(const std::string& mine, const LaunchInfo& launch,
                                     std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const JobStore store(JobStoreOptions{.serve = launch.process_rank == 0,
                                       .port = launch.master_port,
                                       .port_file = launch.port_file,
                                       .timeout = timeout});
  TcpStoreClient client(launch.master_addr, store.port(), timeout);
  std::vector<std::string> out;
  if (launch.process_rank != 0) {
    try {
      client.Set(Key(launch.process_rank), std::vector<char>(mine.begin(), mine.end()));
    } catch (const BackendError&) {
      // Process 0 tears its store down once it holds every report, which may be before
      // this acknowledgement reaches us. Had it died instead, its own exit status and
      // message say so: the verdict on the cluster is process 0's to give.
    }
    return out;
  }
  client.Set(Key(0), std::vector<char>(mine.begin(), mine.end()));
  out.push_back(mine);
  std::string missing;
  for (int r = 1; r < launch.process_count; ++r) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    try {
      const auto data = client.Get(Key(r), std::max(left, std::chrono::milliseconds(1)));
      out.emplace_back(data.begin(), data.end());
    } catch (const TimeoutError&) {
      missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
  }
  if (!missing.empty()) {
    throw TimeoutError("doctor: no report from rank(s) " + missing + " of " +
                       std::to_string(launch.process_count) + " within " +
                       std::to_string(timeout.count() / 1000) +
                       " s: start `fabricscope doctor` on every node with the same MASTER_ADDR, "
                       "MASTER_PORT and WORLD_SIZE (or raise --timeout)");
  }
  return out;
}

}  // namespace

ClusterReport GatherReports(const NodeReport& mine, const LaunchInfo& launch,
                            std::chrono::milliseconds timeout) {
  ClusterReport cluster;
  if (launch.process_count <= 1 || launch.kind == LaunchKind::kSingle) {
    cluster.nodes.push_back(mine);
    return cluster;
  }
  const std::string json = NodeReportToJson(mine);
  const std::vector<std::string> reports =
      launch.kind == LaunchKind::kMpi ? GatherMpi(json) : GatherStore(json, launch, timeout);
  if (reports.empty()) {  // not process 0: its part is done
    cluster.nodes.push_back(mine);
    return cluster;
  }
  for (const std::string& r : reports) cluster.nodes.push_back(NodeReportFromJson(r));
  cluster.drift = FindDrift(cluster.nodes);
  return cluster;
}

}  // namespace fabricscope::doctor
