#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "fabricscope/engine.h"
#include "fabricscope/error.h"
#include "fabricscope/launch.h"
#include "fabricscope/local_time.h"
#include "fabricscope/mpi_session.h"
#include "fabricscope/tcp_store.h"
#include "fabricscope/version.h"
#include "launch/fatal_paths.h"
#include "launch/guarded_reporter.h"
#include "launch/liveness.h"
#include "launch/plan_agreement.h"
#include "launch/watchdog.h"

namespace fabricscope {
namespace {

constexpr const char* kIsoTime = "%Y-%m-%dT%H:%M:%S%z";  // the JSON start and end times

// The heartbeat (launch/liveness.h): a beat a second; a process silent for 10 s is gone. The
// silence is above a link flap of a few seconds and TCP's retransmissions across it, and
// far below the time a user waits before giving up on a hung job.
constexpr std::chrono::milliseconds kBeatInterval{1000};
constexpr std::chrono::milliseconds kSilence{10000};

std::string Hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

// "host memory (<cpu model>)": what a host-backend rank computes on.
std::string HostDeviceName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.starts_with("model name")) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) {
        return "host memory (" + line.substr(colon + 2) + ")";
      }
    }
  }
  return "host memory";
}

// The variables that change how a collective library behaves, recorded with the results as
// NAME=value.
std::vector<std::string> RelevantEnvironment(const Env& env) {
  std::vector<std::string> out;
  for (std::string_view family :
       {"NCCL_*", "FABRICSCOPE_*", "GLOO_*", "OMPI_*", "UCX_*", "CUDA_*"}) {
    for (const auto& [name, value] : env.Family(family)) {
      // Where results are stored changes no result, and its URL may hold a password.
      if (name == "FABRICSCOPE_DB") continue;
      std::string entry = name;
      entry += '=';
      entry += value;
      out.push_back(std::move(entry));
    }
  }
  return out;
}

// NCCL_TESTS_MIN_BW in GB/s; 0 (no verdict) when unset.
double MinimumBandwidth(const Env& env) {
  const auto text = env.Get("NCCL_TESTS_MIN_BW");
  if (!text || text->empty()) return 0;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text->c_str(), &end);
  if (errno != 0 || end == text->c_str() || *end != '\0' || !(v >= 0)) {
    throw UsageError("NCCL_TESTS_MIN_BW='" + *text +
                     "' is not a bandwidth: give the average bus bandwidth in GB/s the run must "
                     "reach (e.g. NCCL_TESTS_MIN_BW=180), or unset it");
  }
  return v;
}

std::chrono::milliseconds Timeout(const RunOptions& options) {
  // Without -T the host backends still give up eventually, so a dead peer never hangs a run
  // forever; 5 minutes is far above any single host-memory collective.
  const double seconds = options.timeout_s > 0 ? options.timeout_s : 300.0;
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

// The numeric address `host` resolves to, or empty.
std::string Resolve(const std::string& host, bool skip_loopback) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return "";
  std::string out;
  for (addrinfo* a = found; a != nullptr && out.empty(); a = a->ai_next) {
    char text[NI_MAXHOST] = {};
    if (::getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST) ==
            0 &&
        !(skip_loopback && std::string_view(text).starts_with("127."))) {
      out = text;
    }
  }
  ::freeaddrinfo(found);
  return out;
}

// Where the other processes can reach rank 0: its hostname's address, else the first
// non-loopback IPv4 address of an interface that is up (hosts without DNS entries, such as
// network namespaces), else loopback.
std::string AdvertisedAddress() {
  if (std::string byname = Resolve(Hostname(), true); !byname.empty()) return byname;
  ifaddrs* list = nullptr;
  std::string out = "127.0.0.1";
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
      if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
      char text[NI_MAXHOST] = {};
      ::getnameinfo(i->ifa_addr, sizeof(sockaddr_in), text, sizeof text, nullptr, 0,
                    NI_NUMERICHOST);
      if (!std::string_view(text).starts_with("127.")) {
        out = text;
        break;
      }
    }
    ::freeifaddrs(list);
  }
  return out;
}

bool IsLoopback(const std::string& address) {
  return address.starts_with("127.") || address == "::1" || address == "localhost";
}

// Where a rank's Gloo device listens: the local address of its connection to the store,
// i.e. the interface this host reaches rank 0 through. Rank 0's host connects to itself,
// possibly through a loopback alias of its own name (Debian maps it to 127.0.1.1): then,
// unless the whole job is on loopback, it listens on its advertised address instead.
std::string ListenAddress(const TcpStoreClient* client, const std::string& master_addr) {
  if (client == nullptr) return "127.0.0.1";  // one process: ranks are threads
  std::string local = client->LocalAddress();
  if (local.empty() || (IsLoopback(local) && !IsLoopback(master_addr))) {
    return AdvertisedAddress();
  }
  return local;
}

// A rank's line of the header, through the store: "host\tpid\tdevice\tbus id\tname".
std::vector<char> EncodeRank(const RankInfo& r) {
  const std::string s = r.hostname + "\t" + std::to_string(r.pid) + "\t" +
                        std::to_string(r.device) + "\t" + r.device_bus_id + "\t" + r.device_name;
  return {s.begin(), s.end()};
}

RankInfo DecodeRank(int rank, const std::vector<char>& data) {
  constexpr size_t kFields = 5;
  RankInfo r;
  r.rank = rank;
  std::vector<std::string> fields(1);
  for (char c : data) {
    if (c == '\t' && fields.size() < kFields) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  fields.resize(kFields);
  r.hostname = fields[0];
  r.pid = std::atoi(fields[1].c_str());
  r.device = std::atoi(fields[2].c_str());
  r.device_bus_id = fields[3];
  r.device_name = fields[4];
  return r;
}

// The rendezvous of the job's processes: an in-memory store for one process, else a TCP
// store served by process 0 (at MASTER_ADDR:MASTER_PORT, or a free port whose address MPI
// broadcasts or, with MASTER_PORT=0, a file publishes). Each rank thread gets its own client: a
// client serves one request at a time, and a rank blocked in a wait must not hold up the others.
class Rendezvous {
 public:
  Rendezvous(const LaunchInfo& launch, int process, int processes, MpiSession* mpi,
             std::chrono::milliseconds timeout)
      : timeout_(timeout) {
    if (processes == 1) {
      shared_ = std::make_unique<InMemoryStore>();
      return;
    }
    port_ = launch.master_port;
    if (launch.kind == LaunchKind::kMpi && mpi != nullptr) {
      std::string where;
      if (process == 0) {
        server_ = std::make_unique<TcpStoreServer>(0);
        where = AdvertisedAddress() + " " + std::to_string(server_->port());
      }
      where = mpi->Broadcast(where);
      listening_ = StoreListening::kKnown;  // broadcast once process 0's server listened
      const size_t space = where.find(' ');
      master_addr_ = where.substr(0, space);
      port_ = static_cast<uint16_t>(std::atoi(where.c_str() + space + 1));
    } else {
      job_store_ = std::make_unique<JobStore>(JobStoreOptions{
          .serve = process == 0, .port = port_, .port_file = launch.port_file, .timeout = timeout});
      port_ = job_store_->port();
      listening_ = job_store_->listening();
      master_addr_ = launch.master_addr;
    }
  }

  // A store for one rank thread; `owned` keeps a client alive while the thread runs.
  Store& ForThread(std::unique_ptr<TcpStoreClient>& owned) const {
    if (shared_) return *shared_;
    owned = Connect(TcpStoreClient::kDefaultIoTimeout);
    return *owned;
  }

  const std::string& master_addr() const { return master_addr_; }
  // Process 0: TcpStoreServer::SinceSetterAnswered of its server; nullopt elsewhere.
  std::optional<std::chrono::milliseconds> SinceAnswered(const std::string& key) const {
    const TcpStoreServer* server = server_      ? server_.get()
                                   : job_store_ ? job_store_->server()
                                                : nullptr;
    return server != nullptr ? server->SinceSetterAnswered(key) : std::nullopt;
  }
  bool shared() const { return shared_ != nullptr; }
  std::string address() const { return master_addr_ + ":" + std::to_string(port_); }

  // A connection of its own whose every request has `io_timeout`: the heartbeat's.
  std::unique_ptr<TcpStoreClient> Connect(std::chrono::milliseconds io_timeout) const {
    auto client = std::make_unique<TcpStoreClient>(master_addr_, port_, timeout_, io_timeout,
                                                   listening_.load());
    // Seen listening: from now on a refused connect of this process means process 0 is gone.
    listening_ = StoreListening::kKnown;
    return client;
  }

 private:
  std::chrono::milliseconds timeout_;
  mutable std::atomic<StoreListening> listening_{StoreListening::kMaybeNotYet};
  std::unique_ptr<TcpStoreServer> server_;  // under MPI, whose broadcast publishes the port
  std::unique_ptr<JobStore> job_store_;     // under the env launcher
  std::unique_ptr<Store> shared_;
  std::string master_addr_ = "127.0.0.1";
  uint16_t port_ = 0;
};

// One job in this process: its plan, its rendezvous, its rank threads, and the record the
// first rank reports. Each step of RunJob is one member, in the order Run calls them.
class JobRunner {
 public:
  JobRunner(const RunOptions& options, Backend& backend, Reporter* sink, const LaunchInfo& launch,
            const Env& env, const RankBody& body)
      : options_(options),
        backend_(backend),
        sink_(sink),
        launch_(launch),
        env_(env),
        body_(body),
        timeout_(Timeout(options)),
        gpus_(std::max(1, options.ngpus)) {}

  RunResult Run() {
    fatal_.emplace([this](int signal, const std::string& what) { Fatal(signal, what); });
    StartProcess();
    PlanJob();
    GuardReport();
    StartWatchdog();
    StartLiveness();
    AgreePlan();
    ListDevices();
    RunRankThreads();
    AwaitProcesses();
    return Finish();
  }

 private:
  // MPI when the launcher or the backend needs it; then what this process is in the job.
  void StartProcess() {
    CheckSupported(backend_, options_);
    if (options_.nthreads < 1) {
      throw UsageError("-t/--nthreads must be at least 1 (got " +
                       std::to_string(options_.nthreads) + ")");
    }
    const bool mpi_processes = backend_.capabilities().mpi_processes;
    if (mpi_processes && launch_.kind != LaunchKind::kMpi && launch_.process_count > 1) {
      throw UsageError("the " + std::string(backend_.name()) +
                       " backend needs MPI to number the processes, but this job was started " +
                       "without it (" + launch_.detected_from +
                       "): under Slurm run srun --mpi=pmix, or start it with mpirun");
    }
    // MPI_THREAD_MULTIPLE only where rank threads may call MPI: it costs every call.
    if (launch_.kind == LaunchKind::kMpi || mpi_processes) {
      mpi_.emplace(MpiSessionOptions{.rank_threads = options_.nthreads > 1});
    }
    process_ = mpi_ ? mpi_->rank() : launch_.process_rank;
    processes_ = mpi_ ? mpi_->size() : launch_.process_count;
    if (mpi_processes && options_.nthreads > 1) {
      throw UnsupportedError("the " + std::string(backend_.name()) +
                             " backend runs one rank per process: launch N processes with "
                             "mpirun -np N instead of -t " +
                             std::to_string(options_.nthreads));
    }
    if (mpi_ && !mpi_->multithreaded() && options_.nthreads > 1) {
      throw UnsupportedError(
          "MPI provides " + mpi_->thread_level() + ", not the MPI_THREAD_MULTIPLE that -t " +
          std::to_string(options_.nthreads) + " needs: use -t 1 and more processes");
    }
  }

  // The sweep, the rendezvous, the header and the split colours of every rank.
  void PlanJob() {
    ranks_per_process_ = options_.nthreads * gpus_;
    plan_ = PlanSweep(options_, ranks_per_process_);
    nranks_ = processes_ * ranks_per_process_;
    rendezvous_.emplace(launch_, process_, processes_, mpi_ ? &*mpi_ : nullptr, timeout_);
    if (const auto ifname = env_.Get("GLOO_SOCKET_IFNAME")) gloo_interface_ = *ifname;
    result_ = MakeHeader(options_, backend_, env_);
    if (mpi_) result_.mpi_thread_level = mpi_->thread_level();
    result_.config.max_bytes = plan_.max_bytes;
    result_.notes = plan_.notes;
    result_.nranks = nranks_;
    host_ = Hostname();
    device_name_ = HostDeviceName();
    ComputeColors();
    CheckRoot();
  }

  // Every rank's colour is a function of its rank, so each process knows every group.
  void ComputeColors() {
    colors_.resize(static_cast<size_t>(nranks_));
    for (int r = 0; r < nranks_; ++r) {
      colors_[static_cast<size_t>(r)] = SplitColor(env_, r);
      if (r % gpus_ != 0 && Color(r) != Color(r - 1)) {
        throw UsageError("NCCL_TESTS_SPLIT puts ranks " + std::to_string(r - 1) + " and " +
                         std::to_string(r) + ", which one thread drives (-g " +
                         std::to_string(gpus_) +
                         "), in different communicators: run one rank per thread (-t) or per "
                         "process instead of -g");
      }
    }
  }

  int Color(int rank) const { return colors_[static_cast<size_t>(rank)]; }

  // -r names a rank of every communicator: checked before any rank connects, so a bad root
  // is one usage error, not a race between it and a peer's lost connection.
  void CheckRoot() const {
    if (options_.root < 0) return;
    std::map<int, int> group_sizes;
    for (int color : colors_) ++group_sizes[color];
    int smallest = nranks_;
    for (const auto& [color, size] : group_sizes) smallest = std::min(smallest, size);
    if (options_.root >= smallest) {
      throw UsageError("root " + std::to_string(options_.root) + " (-r) is out of range for " +
                       std::to_string(smallest) + " ranks: give 0.." +
                       std::to_string(smallest - 1) + ", or -1 for every root");
    }
  }

  // The watchdog's, the heartbeat's or the signal thread may end the report while rank 0's
  // thread still writes it: from here on, the report goes through the guard.
  void GuardReport() {
    if (process_ == 0 && sink_ != nullptr) {
      sink_ = &guarded_.emplace(*sink_);
      guard_ = &*guarded_;
    }
    // What the signal thread, started before any of it was known, names this process by.
    const std::lock_guard lock(fatal_mutex_);
    fatal_who_ = fmt::format("process {} ({} on {})", process_, RankRange(process_), host_);
  }

  // With -T, a call stuck where the backend cannot time out (MPI) ends the process after
  // the timeout plus a grace that lets backends with their own timeouts report first.
  // Without -T, a job of several processes still tracks its calls: the heartbeat says which
  // one a process was in when it went silent.
  void StartWatchdog() {
    if (options_.timeout_s <= 0 && processes_ <= 1) return;
    // Before the process ends, the first process records the error in the report (the
    // JSON file keeps the rows so far and says why they stop). The others wait one grace
    // longer: their peers are stuck in the same call, and one of them ending first makes
    // the launcher (mpirun) kill the first process before it could record anything.
    const auto grace = std::max(std::chrono::milliseconds(1000), timeout_ / 2);
    const auto limit = options_.timeout_s <= 0 ? std::chrono::milliseconds(0)
                                               : timeout_ + (process_ == 0 ? grace : 2 * grace);
    watchdog_.emplace(limit, host_, [this](const std::string& message) { Expire(message); });
    watching_ = &*watchdog_;
  }

  // Every process of a multi-process job beats in the store; a process (or the store's)
  // host that goes silent ends the job within the silence plus a beat, -T or not.
  void StartLiveness() {
    if (processes_ <= 1 || rendezvous_->shared()) return;
    const LivenessOptions live{
        .process = process_,
        .processes = processes_,
        .host = host_,
        .store_address = rendezvous_->address(),
        .interval = kBeatInterval,
        .silence = kSilence,
        .phase = [this] { return Phase(); },
        .ranks = [this](int process) { return RankRange(process); },
        .since_answered =
            [this](const std::string& key) { return rendezvous_->SinceAnswered(key); },
    };
    liveness_.emplace(live, rendezvous_->Connect(kSilence), [this](const std::string& message) {
      // A rank's own error came first (a peer's connection reset, then its process went
      // quiet): both, in order, so the cause is not lost behind the silence.
      std::string full = message;
      {
        const std::lock_guard lock(error_mutex_);
        if (first_error_) full = first_message_ + "; then " + message;
      }
      Expire(full);
    });
  }

  // Every process's plan to process 0, which compares them and publishes its verdict: a
  // difference that changes what the ranks exchange ends every process with the same
  // UsageError (exit 2) before any collective (launch/plan_agreement.h).
  void AgreePlan() {
    if (processes_ <= 1) return;
    stage_ = "comparing the processes' settings";
    std::unique_ptr<TcpStoreClient> client;
    Store& store = rendezvous_->ForThread(client);
    const std::string who =
        fmt::format("process {} ({} on {})", process_, RankRange(process_), host_);
    store.Set("plan/" + std::to_string(process_),
              EncodePlan(who, DescribePlan(options_, plan_, backend_, env_)));
    std::string verdict;
    if (process_ == 0) {
      verdict = ComparePlansOfProcesses(store);
    } else {
      const std::vector<char> v = store.Get("plan/verdict", timeout_);
      verdict.assign(v.begin(), v.end());
      if (!verdict.empty()) {
        // Said done before acknowledging: process 0 then closes the store without this
        // process's heartbeat taking that for process 0's death.
        EndLiveness();
        store.Set("plan/ack/" + std::to_string(process_), {'K'});
      }
    }
    stage_ = nullptr;
    if (!verdict.empty()) throw UsageError(verdict);
  }

  // Process 0: every plan, compared; the verdict published, and when it ends the job, read by
  // every process (one silence at most) before the store closes.
  std::string ComparePlansOfProcesses(Store& store) {
    std::vector<ProcessPlan> plans;
    for (const std::vector<char>& plan : ReadEvery(store, "plan/", processes_, [&](int p) {
           return NotArrived(p * ranks_per_process_);
         })) {
      plans.push_back(DecodePlan(plan));
    }
    const PlanVerdict verdict = ComparePlans(plans);
    if (!verdict.warning.empty()) {
      std::fprintf(stderr, "fabricscope: warning: %s\n", verdict.warning.c_str());
    }
    store.Set("plan/verdict", {verdict.error.begin(), verdict.error.end()});
    if (verdict.error.empty()) return "";
    const auto deadline = std::chrono::steady_clock::now() + kSilence;
    for (int p = 1; p < processes_; ++p) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      try {
        store.Get("plan/ack/" + std::to_string(p), std::max(left, std::chrono::milliseconds(1)));
      } catch (const TimeoutError&) {
        // It ends anyway: it reads the verdict, or finds the store gone.
      }
    }
    return verdict.error;
  }

  // "rendezvous" or "sweep", with the call in flight or last made and its size.
  std::string Phase() const {
    const Watchdog* watching = watching_;  // the signal thread may ask before it exists
    std::string call = watching != nullptr ? watching->LastCall() : std::string();
    if (const char* stage = stage_; call.empty() && stage != nullptr) call = stage;
    return std::string(joined_ ? "sweep" : "rendezvous") + (call.empty() ? "" : " (" + call + ")");
  }

  // "ranks 4-5" (or "rank 4") of a process.
  std::string RankRange(int process) const {
    const int first = process * ranks_per_process_;
    const int last = first + ranks_per_process_ - 1;
    return first == last ? "rank " + std::to_string(first)
                         : "ranks " + std::to_string(first) + "-" + std::to_string(last);
  }

  // The -T policy: the stuck call is inside the communication library, which cannot be
  // interrupted safely, so say why, record it in the report and end the process. Rows
  // already reported are on disk.
  [[noreturn]] void Expire(const std::string& message, int exit_code = 3) {
    std::fprintf(stderr, "fabricscope: error: %s\n", message.c_str());
    std::fflush(stderr);
    if (GuardedReporter* guard = guard_; guard != nullptr)
      guard->Abort(message, LocalTime(kIsoTime));
    // Process 0 names this reason, not a silence. Not while the main thread ends the heartbeat
    // (its thread may be the one here: waiting for that would never end).
    if (std::unique_lock lock(live_mutex_, std::try_to_lock); lock && liveness_) {
      liveness_->Leave(message);
    }
    std::fflush(stdout);
    std::_Exit(exit_code);
  }

  // A signal that stops the run, or an exception on a library's own thread
  // (launch/fatal_paths.h): the same end as a failure, with the rows so far kept.
  [[noreturn]] void Fatal(int signal, const std::string& what) {
    std::string who;
    {
      const std::lock_guard lock(fatal_mutex_);
      who = fatal_who_;
    }
    if (signal != 0) {
      const int code = 128 + signal;
      Expire(fmt::format("{} was ended by {} during {}: the run is cut short, the rows measured so "
                         "far are kept (exit {})",
                         who, FatalPaths::SignalName(signal), Phase(), code),
             code);
    }
    Expire(
        fmt::format("{}: the {} library failed on a thread of its own during {}: {}; a peer "
                    "sent what this rank did not expect (ranks started with different flags "
                    "or builds) or the connection broke",
                    who, backend_.name(), Phase(), what.empty() ? "std::terminate" : what));
  }

  // What ConnectOptions says about the devices of a thread; the same in its rank thread.
  ConnectOptions DeviceOptions(int thread) const {
    ConnectOptions c;
    c.world_rank = FirstRank(thread);
    c.devices = gpus_;
    // nccl-tests' choice: the local rank's block of threads x GPUs, then this thread's.
    c.first_device = (launch_.local_rank * options_.nthreads + thread) * gpus_;
    c.registration = options_.registration;
    c.stream_null = options_.stream_null;
    return c;
  }

  // The job rank of a thread's first device.
  int FirstRank(int thread) const { return (process_ * options_.nthreads + thread) * gpus_; }

  // Every thread's devices, before any thread starts: a device this host lacks is a usage
  // error now, rather than a rank that never arrives at the rendezvous.
  void ListDevices() {
    for (int t = 0; t < options_.nthreads; ++t) {
      thread_devices_.push_back(backend_.Devices(DeviceOptions(t)));
    }
  }

  // How a thread's rank joins the communicator of its colour through `store`.
  ConnectOptions GroupOptions(int thread, Store& store, const TcpStoreClient* client) const {
    const int rank = FirstRank(thread);
    ConnectOptions connect = DeviceOptions(thread);
    connect.rank = 0;
    connect.size = 0;
    for (int r = 0; r < nranks_; ++r) {
      if (Color(r) != Color(rank)) continue;
      if (r < rank) ++connect.rank;
      ++connect.size;
    }
    connect.color = Color(rank);
    connect.store = &store;
    connect.prefix = "fs/c" + std::to_string(connect.color);
    connect.timeout = timeout_;
    connect.hostname = ListenAddress(client, rendezvous_->master_addr());
    connect.network_interface = gloo_interface_;
    return connect;
  }

  // Puts the thread's ranks' lines of the header in the store; returns its first one.
  RankInfo PublishRanks(int thread, Store& store, const ConnectOptions& connect) const {
    const std::vector<DeviceDescription>& devices = thread_devices_[static_cast<size_t>(thread)];
    RankInfo self;
    for (int d = 0; d < gpus_; ++d) {
      RankInfo me;
      me.rank = connect.world_rank + d;
      me.pid = static_cast<int>(getpid());
      me.hostname = host_;
      me.device = connect.first_device + d;
      me.device_name = device_name_;
      if (static_cast<size_t>(d) < devices.size()) {
        me.device = devices[static_cast<size_t>(d)].index;
        me.device_bus_id = devices[static_cast<size_t>(d)].bus_id;
        me.device_name = devices[static_cast<size_t>(d)].name;
      }
      store.Set("rank/" + std::to_string(me.rank), EncodeRank(me));
      if (d == 0) self = me;
    }
    return self;
  }

  // A rank that never came to the rendezvous, named.
  std::string NotArrived(int rank) const {
    return fmt::format(
        "rendezvous: rank {} of {} (process {}) did not arrive within {} s: it was not started, "
        "died, or cannot reach the store at {}",
        rank, nranks_, rank / ranks_per_process_, timeout_.count() / 1000,
        rendezvous_->master_addr());
  }

  // The first rank: every rank's header line, then the report begins.
  void GatherHeader(Store& store) {
    const std::vector<std::vector<char>> ranks =
        ReadEvery(store, "rank/", nranks_, [&](int r) { return NotArrived(r); });
    for (int r = 0; r < nranks_; ++r) {
      result_.ranks.push_back(DecodeRank(r, ranks[static_cast<size_t>(r)]));
    }
    if (sink_ != nullptr) sink_->Begin(result_);
  }

  // The keys PREFIX0 .. PREFIX(count-1), read in one MultiGet (one round trip for 16384
  // processes, not 16384). When one did not appear within the timeout, `not_arrived` of the
  // first absent one's index is the error.
  std::vector<std::vector<char>> ReadEvery(Store& store, const std::string& prefix, int count,
                                           const std::function<std::string(int)>& not_arrived) {
    std::vector<std::string> keys;
    keys.reserve(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) keys.push_back(prefix + std::to_string(i));
    try {
      return store.MultiGet(keys, timeout_);
    } catch (const MissingKeyError& e) {
      const auto missing = std::find(keys.begin(), keys.end(), e.key());
      if (missing == keys.end()) throw;
      throw TimeoutError(not_arrived(static_cast<int>(missing - keys.begin())));
    }
  }

  // Connects through the backend, watched by the -T watchdog when -T is set.
  std::unique_ptr<Communicator> Join(int rank, const ConnectOptions& group) {
    auto connect_group = [&] { return backend_.Connect(group); };
    if (!watchdog_) return connect_group();
    return watchdog_->Connect(rank,
                              "joining the " + std::string(backend_.name()) + " communicator of " +
                                  std::to_string(group.size) + " ranks",
                              connect_group);
  }

  // What NCCL said it uses to reach the peers (NCCL_DEBUG=INFO), known only after the sweep:
  // NCCL connects on first use.
  void CollectTransports(Store& store, const Communicator& comm, int rank) {
    if (!backend_.capabilities().device_memory) return;
    for (int d = 0; d < gpus_; ++d) {
      const std::string transport = comm.Transport(d);
      store.Set("transport/" + std::to_string(rank + d), {transport.begin(), transport.end()});
    }
    if (rank != 0) return;
    std::vector<std::string> keys;
    for (const RankInfo& r : result_.ranks) keys.push_back("transport/" + std::to_string(r.rank));
    const std::vector<std::vector<char>> transports = store.MultiGet(keys, timeout_);
    for (size_t i = 0; i < result_.ranks.size(); ++i) {
      result_.ranks[i].transport.assign(transports[i].begin(), transports[i].end());
    }
  }

  // One rank thread: rendezvous, header, connect, then the sweep or the body.
  void RankMain(int thread) {
    const int rank = FirstRank(thread);
    std::unique_ptr<TcpStoreClient> client;
    Store& store = rendezvous_->ForThread(client);
    const ConnectOptions connect = GroupOptions(thread, store, client.get());
    RankInfo self = PublishRanks(thread, store, connect);
    const bool reporter = rank == 0;
    if (reporter) GatherHeader(store);
    auto comm = Join(rank, connect);
    joined_ = true;
    if (body_) {
      RankContext context{self, nranks_, comm.get(), connect,
                          [this, rank](const ConnectOptions& group) { return Join(rank, group); }};
      body_(context);
      return;
    }
    RunResult scratch;  // ranks other than 0 do not keep rows
    RunBenchmark(options_, plan_, *comm, reporter ? result_ : scratch, reporter ? sink_ : nullptr);
    CollectTransports(store, *comm, rank);
  }

  void RunRankThreads() {
    auto guarded = [this](int thread) {
      try {
        RankMain(thread);
      } catch (const std::exception& e) {
        // The lowest failing rank's error, not the first to arrive: when one rank fails, its
        // peers fail a moment later, and which thread got here first was a race.
        const std::lock_guard lock(error_mutex_);
        if (!first_error_ || thread < first_error_thread_) {
          first_error_thread_ = thread;
          first_error_ = std::current_exception();
          first_message_ =
              "rank " + std::to_string(FirstRank(thread)) + " on " + host_ + ": " + e.what();
        }
      }
    };
    std::vector<std::thread> workers;
    workers.reserve(static_cast<size_t>(options_.nthreads));
    for (int t = 1; t < options_.nthreads; ++t) workers.emplace_back(guarded, t);
    guarded(0);
    for (auto& w : workers) w.join();
  }

  // "process 2 (ranks 4-5 on node2)": for the message naming who never finished.
  std::string ProcessName(int process) const {
    const size_t first_rank =
        static_cast<size_t>(process) * static_cast<size_t>(ranks_per_process_);
    return "process " + std::to_string(process) + " (ranks " + std::to_string(first_rank) + "-" +
           std::to_string(first_rank + static_cast<size_t>(ranks_per_process_) - 1) +
           (first_rank < result_.ranks.size() ? " on " + result_.ranks[first_rank].hostname
                                              : std::string()) +
           ")";
  }

  // Process 0 serves the store: it waits until every process is done with it (or the
  // timeout) before tearing it down. A process that never says so died or hangs: when the
  // job failed, that names the culprit, which a peer's "connection closed" does not.
  void AwaitProcesses() {
    if (processes_ <= 1) return;
    std::string missing;
    try {
      std::unique_ptr<TcpStoreClient> client;
      Store& store = rendezvous_->ForThread(client);
      // A rank that failed on a peer's closed connection may have lost a survivor that read
      // process 0's abort and left: the abort names the process that really went silent.
      if (first_error_ && liveness_) AppendPublishedAbort();
      // Done before saying so: process 0 then never takes this one's end for silence.
      if (process_ != 0) EndLiveness();
      store.Set("done/" + std::to_string(process_), {first_error_ ? 'E' : 'K'});
      // Process 0 keeps watching while it waits: a process that goes silent now is named.
      if (process_ == 0) missing = MissingProcesses(store);
    } catch (const std::exception&) {
      // The store itself is gone (process 0 died): the error already says what failed.
    }
    EndLiveness();
    if (first_error_ && !missing.empty()) {
      first_message_ += "; never finished: " + missing + ", which died or hangs";
    }
  }

  // The heartbeat ended, under the lock Expire takes to reach it from another thread.
  void EndLiveness() {
    const std::lock_guard lock(live_mutex_);
    liveness_.reset();
  }

  // After this process's own error: process 0's abort, when it has published one that the
  // heartbeat has not already added.
  void AppendPublishedAbort() {
    const std::string abort = liveness_->PublishedAbort();
    const std::lock_guard lock(error_mutex_);
    if (!abort.empty() && first_message_.find(abort) == std::string::npos) {
      first_message_ += "; then " + abort;
    }
  }

  // The processes that did not say they are done before the timeout, named.
  std::string MissingProcesses(Store& store) const {
    std::string missing;
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (int p = 1; p < processes_; ++p) {
      try {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        store.Get("done/" + std::to_string(p), std::max(left, std::chrono::milliseconds(1)));
      } catch (const TimeoutError&) {
        missing += (missing.empty() ? "" : ", ") + ProcessName(p);
      }
    }
    return missing;
  }

  RunResult Finish() {
    result_.end_time = LocalTime(kIsoTime);
    if (first_error_) result_.errors.push_back(first_message_);
    if (process_ == 0 && sink_ != nullptr) sink_->End(result_);
    if (!first_error_) return result_;
    try {
      std::rethrow_exception(first_error_);
    } catch (const Error& e) {
      // A usage error is the same on every rank; anything else says which rank and host.
      if (e.code() == ErrorCode::kUsage || e.code() == ErrorCode::kUnsupported) throw;
      ThrowWithMessage(e, first_message_);
    }
  }

  const RunOptions& options_;
  Backend& backend_;
  Reporter* sink_;  // the guard of guarded_ under -T
  const LaunchInfo& launch_;
  const Env& env_;
  const RankBody& body_;
  const std::chrono::milliseconds timeout_;
  const int gpus_;  // -g: each thread drives this many ranks, numbered as nccl-tests does

  std::optional<MpiSession> mpi_;
  int process_ = 0;
  int processes_ = 1;
  int ranks_per_process_ = 1;
  int nranks_ = 1;
  SweepPlan plan_;
  std::optional<Rendezvous> rendezvous_;
  std::string gloo_interface_;
  std::string host_;
  std::string device_name_;
  std::vector<int> colors_;
  std::vector<std::vector<DeviceDescription>> thread_devices_;
  std::optional<GuardedReporter> guarded_;  // before watchdog_: outlives its thread
  std::optional<Watchdog> watchdog_;
  std::atomic<bool> joined_{false};               // a rank of this process joined its communicator
  std::atomic<const char*> stage_{nullptr};       // a step of the rendezvous before any call
  std::atomic<GuardedReporter*> guard_{nullptr};  // guarded_, once it exists (other threads)
  std::atomic<const Watchdog*> watching_{nullptr};  // watchdog_, once it exists
  std::mutex live_mutex_;                           // liveness_'s end against Expire's Leave
  std::mutex fatal_mutex_;
  std::string fatal_who_ = "this process";  // "process 1 (rank 1 on n2)" once planned
  std::optional<Liveness> liveness_;        // after watchdog_ and guarded_: its thread uses both
  std::optional<FatalPaths> fatal_;         // last: its thread uses all of the above

  RunResult result_;
  std::mutex error_mutex_;
  std::exception_ptr first_error_;
  int first_error_thread_ = 0;
  std::string first_message_;
};

}  // namespace

RunResult MakeHeader(const RunOptions& options, const Backend& backend, const Env& env) {
  RunResult result;
  result.version = kVersion;
  result.backend = std::string(backend.name());
  result.backend_version = backend.version();
  result.nccl_version = backend.nccl_version_code();
  result.start_time = LocalTime(kIsoTime);
  result.env = RelevantEnvironment(env);
  result.args = options.command_line;
  RunConfig& c = result.config;
  c.nthreads = options.nthreads;
  c.ngpus = options.ngpus;
  c.graph = options.graph_launches;
  c.unalign = options.unalign;
  c.parallel_init = options.parallel_init ? 1 : 0;
  c.min_bytes = options.min_bytes;
  c.max_bytes = options.max_bytes;
  c.step_bytes = options.step_bytes;
  c.step_factor = options.step_factor;
  c.warmup_iters = options.warmup_iters;
  c.iters = options.iters;
  c.agg_iters = options.agg_iters;
  c.check = options.check;
  c.blocking = options.blocking;
  c.average = static_cast<int>(options.average);
  c.per_iter_timing = options.per_iter_timing ? 1 : 0;
  c.per_iter_skip = options.per_iter_skip;
  c.event_timing = backend.capabilities().device_memory;
  c.report_timestamps = options.report_timestamps ? 1 : 0;
  c.report_cputime = options.report_cputime ? 1 : 0;
  c.min_bw = MinimumBandwidth(env);
  return result;
}

RunResult RunJob(const RunOptions& options, Backend& backend, Reporter* sink,
                 const LaunchInfo& launch, const Env& env, const RankBody& body) {
  return JobRunner(options, backend, sink, launch, env, body).Run();
}

RunResult RunThreads(const RunOptions& options, Backend& backend, Reporter* sink, const Env& env) {
  return RunJob(options, backend, sink, LaunchInfo{}, env);
}

}  // namespace fabricscope
