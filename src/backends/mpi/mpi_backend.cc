// The MPI backend: every fabricscope collective on host memory through MPI's own collectives.
#include "backends/mpi/mpi_backend.h"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fabricscope/collective.h"
#include "fabricscope/dtype.h"
#include "fabricscope/error.h"

namespace fabricscope {
namespace {

using Bytes = uint8_t;

// MPI 3 takes counts as int.
constexpr size_t kMaxCount = static_cast<size_t>(INT_MAX);

// sendrecv's one message per call; the communicator is ours alone, so one tag will do.
constexpr int kSendRecvTag = 0;
constexpr int kExchangeTag = 1;  // Communicator::Exchange, apart from sendrecv's ring

std::string ErrorText(int rc) {
  std::array<char, MPI_MAX_ERROR_STRING> text{};
  int len = 0;
  if (MPI_Error_string(rc, text.data(), &len) != MPI_SUCCESS || len <= 0) {
    return fmt::format("MPI error code {}", rc);
  }
  return std::string(text.data(), static_cast<size_t>(len));
}

bool Finalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

// The first line of MPI_Get_library_version up to its first comma, whitespace collapsed:
// "Open MPI v4.1.4", "MPICH Version: 4.0.2". MPI allows the call before MPI_Init.
std::string LibraryVersion() {
  std::array<char, MPI_MAX_LIBRARY_VERSION_STRING> text{};
  int len = 0;
  if (MPI_Get_library_version(text.data(), &len) != MPI_SUCCESS || len <= 0) return "unknown";
  std::string_view full(text.data(), std::min(static_cast<size_t>(len), text.size()));
  full = full.substr(0, full.find_first_of("\n,"));
  std::string version;
  for (char c : full) {
    if (std::isspace(static_cast<unsigned char>(c)) == 0) {
      version += c;
    } else if (!version.empty() && version.back() != ' ') {
      version += ' ';
    }
  }
  while (!version.empty() && version.back() == ' ') version.pop_back();
  return version.empty() ? "unknown" : version;
}

bool IsRooted(Collective c) {
  return c == Collective::kBroadcast || c == Collective::kReduce || c == Collective::kGather ||
         c == Collective::kScatter;
}

bool Overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a);
  const auto y = reinterpret_cast<uintptr_t>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

// half and bfloat16 have no MPI type: they travel as MPI_UINT16_T and reduce through user
// ops, one function per (type, op), so the callback needs no state at all. MPI defines
// inout[i] = in[i] (op) inout[i]; every op here is commutative.
template <DataType kType, ReduceOp kOp>
void ReduceUserOp(void* in, void* inout, int* len, MPI_Datatype* /*type*/) noexcept {
  Reduce3(kType, kOp, inout, in, inout, static_cast<size_t>(*len));
}

constexpr std::array<DataType, 2> kUserOpTypes = {DataType::kHalf, DataType::kBfloat16};
constexpr std::array<ReduceOp, 4> kWireOps = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax,
                                              ReduceOp::kMin};
constexpr std::array<std::array<MPI_User_function*, 4>, 2> kUserOpFunctions = {{
    {&ReduceUserOp<DataType::kHalf, ReduceOp::kSum>,
     &ReduceUserOp<DataType::kHalf, ReduceOp::kProd>,
     &ReduceUserOp<DataType::kHalf, ReduceOp::kMax>,
     &ReduceUserOp<DataType::kHalf, ReduceOp::kMin>},
    {&ReduceUserOp<DataType::kBfloat16, ReduceOp::kSum>,
     &ReduceUserOp<DataType::kBfloat16, ReduceOp::kProd>,
     &ReduceUserOp<DataType::kBfloat16, ReduceOp::kMax>,
     &ReduceUserOp<DataType::kBfloat16, ReduceOp::kMin>},
}};

size_t UserOpTypeIndex(DataType type) { return type == DataType::kHalf ? 0 : 1; }

size_t WireOpIndex(ReduceOp op) {
  switch (op) {
    case ReduceOp::kProd:
      return 1;
    case ReduceOp::kMax:
      return 2;
    case ReduceOp::kMin:
      return 3;
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
    case ReduceOp::kMulSum:  // not offered (AllCapabilities)
      return 0;
  }
  return 0;
}

bool NeedsUserOp(DataType type) { return type == DataType::kHalf || type == DataType::kBfloat16; }

MPI_Datatype WireType(DataType type) {
  switch (type) {
    case DataType::kInt8:
      return MPI_INT8_T;
    case DataType::kUint8:
      return MPI_UINT8_T;
    case DataType::kInt32:
      return MPI_INT32_T;
    case DataType::kUint32:
      return MPI_UINT32_T;
    case DataType::kInt64:
      return MPI_INT64_T;
    case DataType::kUint64:
      return MPI_UINT64_T;
    case DataType::kHalf:
    case DataType::kBfloat16:
      return MPI_UINT16_T;
    case DataType::kFloat:
      return MPI_FLOAT;
    case DataType::kDouble:
      return MPI_DOUBLE;
    case DataType::kFloat8e4m3:  // not offered (AllCapabilities)
    case DataType::kFloat8e5m2:
      return MPI_DATATYPE_NULL;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op NativeOp(ReduceOp op) {
  switch (CombiningOp(op)) {
    case ReduceOp::kProd:
      return MPI_PROD;
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kMin:
      return MPI_MIN;
    default:
      return MPI_SUM;
  }
}

// A communicator split off MPI_COMM_WORLD, freed with its owner, or MPI_COMM_WORLD itself,
// which is never freed. After MPI_Finalize there is nothing left to free (and no MPI call is
// allowed), so a late destructor does nothing.
class CommHandle {
 public:
  explicit CommHandle(MPI_Comm comm) : comm_(comm) {}
  CommHandle(CommHandle&& other) noexcept : comm_(std::exchange(other.comm_, MPI_COMM_NULL)) {}
  CommHandle& operator=(CommHandle&&) = delete;
  ~CommHandle() {
    if (comm_ != MPI_COMM_NULL && comm_ != MPI_COMM_WORLD && !Finalized()) MPI_Comm_free(&comm_);
  }
  MPI_Comm get() const { return comm_; }

 private:
  MPI_Comm comm_;
};

// The user ops for half and bfloat16, created for one communicator and freed with it.
class UserOps {
 public:
  UserOps() {
    for (auto& row : ops_) row.fill(MPI_OP_NULL);
  }
  UserOps(UserOps&& other) noexcept : ops_(other.ops_) {
    for (auto& row : other.ops_) row.fill(MPI_OP_NULL);
  }
  UserOps& operator=(UserOps&&) = delete;
  ~UserOps() {
    if (Finalized()) return;
    for (auto& row : ops_) {
      for (MPI_Op& op : row) {
        if (op != MPI_OP_NULL) MPI_Op_free(&op);
      }
    }
  }

  // Throws BackendError starting with `where`.
  void Create(const std::string& where) {
    for (size_t t = 0; t < kUserOpTypes.size(); ++t) {
      for (size_t o = 0; o < kWireOps.size(); ++o) {
        const int rc = MPI_Op_create(kUserOpFunctions[t][o], /*commute=*/1, &ops_[t][o]);
        if (rc != MPI_SUCCESS) {
          throw BackendError(fmt::format("{}MPI_Op_create for {} {}: {}", where,
                                         NameOf(kUserOpTypes[t]), NameOf(kWireOps[o]),
                                         ErrorText(rc)));
        }
      }
    }
  }

  MPI_Op Get(DataType type, ReduceOp op) const {
    return ops_[UserOpTypeIndex(type)][WireOpIndex(op)];
  }

 private:
  std::array<std::array<MPI_Op, kWireOps.size()>, kUserOpTypes.size()> ops_;
};

// One rank's MPI communicator, plus the scratch memory that in-place calls need where MPI
// has no in-place form (or one that allocates on every call).
class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(CommHandle comm, UserOps ops, int rank, int size)
      : comm_(std::move(comm)), ops_(std::move(ops)), rank_(rank), size_(size) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void Run(const CollectiveCall& call) override {
    // NCCL returns at once for count 0.
    if (call.count == 0) return;
    if (call.count > kMaxCount) {
      throw UnsupportedError(
          fmt::format("{}MPI takes at most {} elements per call (an int count); use a smaller size",
                      Where(call), kMaxCount));
    }
    // Checked here, as the Gloo backend does: MPI checks roots only while its parameter
    // checking is on (Open MPI's mpi_param_check), and an unchecked bad root is undefined.
    if (IsRooted(call.collective) && (call.root < 0 || call.root >= size_)) {
      throw UsageError(fmt::format("{}root {} is not a rank of {}", Where(call), call.root, size_));
    }
    const int rc = Dispatch(call);
    if (rc != MPI_SUCCESS) [[unlikely]] {
      throw BackendError(Where(call) + ErrorText(rc));
    }
  }

  // MPI_Sendrecv with the peer on this communicator (MPI_COMM_WORLD's split): the job's
  // communicator serves every pair, nothing is created per exchange.
  void Exchange(const PeerExchange& x) override {
    const std::string where = fmt::format(
        "mpi exchange (rank {} with {} of {}, {} elements): ", rank_, x.peer, size_, x.count);
    if (x.peer < 0 || x.peer >= size_ || x.peer == rank_) {
      throw UsageError(where + fmt::format("peer {} is not another rank of {}", x.peer, size_));
    }
    if (x.count == 0) return;
    if (x.count > kMaxCount) {
      throw UnsupportedError(where + fmt::format("MPI takes at most {} elements per call (an int "
                                                 "count); use a smaller size",
                                                 kMaxCount));
    }
    const MPI_Datatype type = WireType(x.type);
    const int count = static_cast<int>(x.count);
    const size_t bytes = x.count * SizeOf(x.type);
    const void* send = x.send;
    if (Overlaps(x.send, bytes, x.recv, bytes)) {  // in place: MPI_Sendrecv needs two
      if (scratch_.size() < bytes) scratch_.resize(bytes);
      std::memcpy(scratch_.data(), x.send, bytes);
      send = scratch_.data();
    }
    const int rc = MPI_Sendrecv(send, count, type, x.peer, kExchangeTag, x.recv, count, type,
                                x.peer, kExchangeTag, comm_.get(), MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) throw BackendError(where + ErrorText(rc));
  }

  void Barrier() override {
    const int rc = MPI_Barrier(comm_.get());
    if (rc != MPI_SUCCESS) {
      throw BackendError(
          fmt::format("mpi barrier (rank {} of {}): {}", rank_, size_, ErrorText(rc)));
    }
  }

 private:
  // Every message starts like this: "mpi all_reduce (rank 2 of 4, 1048576 elements): ".
  std::string Where(const CollectiveCall& call) const {
    return fmt::format("mpi {} (rank {} of {}, {} elements): ", SpecOf(call.collective).name, rank_,
                       size_, call.count);
  }

  int Dispatch(const CollectiveCall& call) {
    switch (call.collective) {
      case Collective::kAllReduce:
        return AllReduce(call);
      case Collective::kAllGather:
        return AllGather(call);
      case Collective::kReduceScatter:
        return ReduceScatter(call);
      case Collective::kBroadcast:
        return Broadcast(call);
      case Collective::kReduce:
        return Reduce(call);
      case Collective::kAlltoAll:
        return AlltoAll(call);
      case Collective::kSendRecv:
        return SendRecv(call);
      case Collective::kGather:
        return Gather(call);
      case Collective::kScatter:
        return Scatter(call);
    }
    throw UsageError(Where(call) + "unknown collective");
  }

  MPI_Op WireOp(const CollectiveCall& call) const {
    return NeedsUserOp(call.type) ? ops_.Get(call.type, CombiningOp(call.op)) : NativeOp(call.op);
  }

  // Buffers that overlap without being nccl-tests' in-place layout would make MPI read what
  // it has already overwritten.
  void RequireDisjoint(const CollectiveCall& call, size_t send_bytes, size_t recv_bytes) const {
    if (Overlaps(call.send, send_bytes, call.recv, recv_bytes)) {
      throw UsageError(Where(call) +
                       "the send and receive buffers overlap but are not the in-place layout");
    }
  }

  // Grows only: after the first call of the largest size, the hot path never allocates.
  Bytes* Scratch(const CollectiveCall& call, size_t bytes) {
    if (scratch_.size() < bytes) {
      try {
        scratch_.resize(bytes);
      } catch (const std::bad_alloc&) {
        throw SystemError(
            fmt::format("{}out of host memory for a {}-byte scratch buffer", Where(call), bytes));
      }
    }
    return scratch_.data();
  }

  size_t ChunkBytes(const CollectiveCall& call) const { return call.count * SizeOf(call.type); }
  size_t AllChunksBytes(const CollectiveCall& call) const {
    return ChunkBytes(call) * static_cast<size_t>(size_);
  }
  size_t MyOffset(const CollectiveCall& call) const {
    return ChunkBytes(call) * static_cast<size_t>(rank_);
  }
  static int Count(const CollectiveCall& call) { return static_cast<int>(call.count); }

  void FinishAverageIfAvg(const CollectiveCall& call) const {
    if (call.op == ReduceOp::kAvg) FinishAverage(call.type, call.recv, call.count, size_);
  }

  int AllReduce(const CollectiveCall& call) {
    const bool in_place = call.send == call.recv;
    if (!in_place) RequireDisjoint(call, ChunkBytes(call), ChunkBytes(call));
    const int rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : call.send, call.recv, Count(call),
                                 WireType(call.type), WireOp(call), comm_.get());
    if (rc == MPI_SUCCESS) FinishAverageIfAvg(call);
    return rc;
  }

  // In place, this rank's chunk is already in the receive buffer (send = recv + rank*count).
  int AllGather(const CollectiveCall& call) {
    const bool in_place = call.send == static_cast<const Bytes*>(call.recv) + MyOffset(call);
    if (!in_place) RequireDisjoint(call, ChunkBytes(call), AllChunksBytes(call));
    const MPI_Datatype type = WireType(call.type);
    return MPI_Allgather(in_place ? MPI_IN_PLACE : call.send, Count(call), type, call.recv,
                         Count(call), type, comm_.get());
  }

  // MPI's in-place reduce_scatter_block reduces the whole input in the receive buffer and
  // leaves the result at its start, not at recv = send + rank*count: it would need a copy of
  // the whole input. Reducing into scratch and copying one chunk back costs one chunk.
  int ReduceScatter(const CollectiveCall& call) {
    const size_t chunk = ChunkBytes(call);
    const bool in_place = call.recv == static_cast<const Bytes*>(call.send) + MyOffset(call);
    if (!in_place) RequireDisjoint(call, AllChunksBytes(call), chunk);
    void* out = in_place ? Scratch(call, chunk) : call.recv;
    const int rc = MPI_Reduce_scatter_block(call.send, out, Count(call), WireType(call.type),
                                            WireOp(call), comm_.get());
    if (rc != MPI_SUCCESS) return rc;
    if (in_place) std::memcpy(call.recv, out, chunk);
    FinishAverageIfAvg(call);
    return rc;
  }

  // NCCL's broadcast: the root sends from its send buffer and every rank, the root included,
  // ends with the data in its receive buffer.
  int Broadcast(const CollectiveCall& call) {
    if (call.send != call.recv) {
      RequireDisjoint(call, ChunkBytes(call), ChunkBytes(call));
      if (rank_ == call.root) std::memcpy(call.recv, call.send, ChunkBytes(call));
    }
    return MPI_Bcast(call.recv, Count(call), WireType(call.type), call.root, comm_.get());
  }

  // Only the root's receive buffer is defined, as in NCCL; the others pass none.
  int Reduce(const CollectiveCall& call) {
    const bool in_place = call.send == call.recv;
    if (!in_place) RequireDisjoint(call, ChunkBytes(call), ChunkBytes(call));
    const bool root = rank_ == call.root;
    const void* send = root && in_place ? MPI_IN_PLACE : call.send;
    const int rc = MPI_Reduce(send, root ? call.recv : nullptr, Count(call), WireType(call.type),
                              WireOp(call), call.root, comm_.get());
    if (rc == MPI_SUCCESS && root) FinishAverageIfAvg(call);
    return rc;
  }

  int AlltoAll(const CollectiveCall& call) {
    const bool in_place = call.send == call.recv;
    if (!in_place) RequireDisjoint(call, AllChunksBytes(call), AllChunksBytes(call));
    const MPI_Datatype type = WireType(call.type);
    return MPI_Alltoall(in_place ? MPI_IN_PLACE : call.send, Count(call), type, call.recv,
                        Count(call), type, comm_.get());
  }

  // Send to rank+1, receive from rank-1. In place the data is copied aside first: that is
  // what MPI_Sendrecv_replace does too, but it allocates its buffer on every call.
  int SendRecv(const CollectiveCall& call) {
    const size_t bytes = ChunkBytes(call);
    const void* send = call.send;
    if (call.send == call.recv) {
      Bytes* copy = Scratch(call, bytes);
      std::memcpy(copy, call.send, bytes);
      send = copy;
    } else {
      RequireDisjoint(call, bytes, bytes);
    }
    const MPI_Datatype type = WireType(call.type);
    return MPI_Sendrecv(send, Count(call), type, (rank_ + 1) % size_, kSendRecvTag, call.recv,
                        Count(call), type, (rank_ + size_ - 1) % size_, kSendRecvTag, comm_.get(),
                        MPI_STATUS_IGNORE);
  }

  // In place (send = recv + rank*count) the root's own chunk is already where it belongs.
  int Gather(const CollectiveCall& call) {
    const bool in_place = call.send == static_cast<const Bytes*>(call.recv) + MyOffset(call);
    if (!in_place) RequireDisjoint(call, ChunkBytes(call), AllChunksBytes(call));
    const bool root = rank_ == call.root;
    const MPI_Datatype type = WireType(call.type);
    return MPI_Gather(root && in_place ? MPI_IN_PLACE : call.send, Count(call), type,
                      root ? call.recv : nullptr, Count(call), type, call.root, comm_.get());
  }

  // In place (recv = send + rank*count) the root's own chunk is already where it belongs.
  int Scatter(const CollectiveCall& call) {
    const bool in_place = call.recv == static_cast<const Bytes*>(call.send) + MyOffset(call);
    if (!in_place) RequireDisjoint(call, AllChunksBytes(call), ChunkBytes(call));
    const bool root = rank_ == call.root;
    const MPI_Datatype type = WireType(call.type);
    return MPI_Scatter(root ? call.send : nullptr, Count(call), type,
                       root && in_place ? MPI_IN_PLACE : call.recv, Count(call), type, call.root,
                       comm_.get());
  }

  // Members are destroyed in reverse: the ops go before the communicator.
  CommHandle comm_;
  UserOps ops_;
  const int rank_;
  const int size_;
  std::vector<Bytes> scratch_;
};

class MpiBackend final : public Backend {
 public:
  MpiBackend() : capabilities_(Capabilities()) {}

  std::string_view name() const override { return "mpi"; }

  std::string version() const override { return LibraryVersion(); }

  const BackendCapabilities& capabilities() const override { return capabilities_; }

  // Collective over MPI_COMM_WORLD: every process of the job must call it.
  std::unique_ptr<Communicator> Connect(const ConnectOptions& options) override {
    const std::string where =
        fmt::format("mpi connect (rank {} of {}): ", options.rank, options.size);
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized == 0) {
      throw UsageError(where +
                       "the mpi backend needs MPI to be initialized by the launcher; start the "
                       "ranks with mpirun (or srun) and the MPI launcher");
    }
    if (Finalized()) throw UsageError(where + "MPI has already been finalized");
    if (options.size < 1 || options.rank < 0 || options.rank >= options.size) {
      throw UsageError(where + "rank must be in [0, size)");
    }
    if (options.color < 0) {
      throw UsageError(where + fmt::format("colour {} is negative", options.color));
    }
    int world_rank = 0;
    Check(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank), where, "MPI_Comm_rank");
    if (options.world_rank != world_rank) {
      throw UsageError(where + fmt::format("world rank {} is not this process's MPI rank {}: the "
                                           "mpi backend runs one rank per process",
                                           options.world_rank, world_rank));
    }
    CommHandle comm(Split(options, where));
    Check(MPI_Comm_set_errhandler(comm.get(), MPI_ERRORS_RETURN), where, "MPI_Comm_set_errhandler");
    int rank = 0;
    int size = 0;
    Check(MPI_Comm_rank(comm.get(), &rank), where, "MPI_Comm_rank");
    Check(MPI_Comm_size(comm.get(), &size), where, "MPI_Comm_size");
    if (rank != options.rank || size != options.size) {
      throw BackendError(where + fmt::format("MPI_Comm_split (colour {}, world rank {}) gave rank "
                                             "{} of {}, but the launcher expects rank {} of {}",
                                             options.color, options.world_rank, rank, size,
                                             options.rank, options.size));
    }
    UserOps ops;
    ops.Create(where);
    return std::make_unique<MpiCommunicator>(std::move(comm), std::move(ops), rank, size);
  }

 private:
  static BackendCapabilities Capabilities() {
    BackendCapabilities c = AllCapabilities();
    c.mpi_processes = true;
    c.point_to_point = true;
    return c;
  }

  // The group of the call's colour. A group of every process is MPI_COMM_WORLD itself: a
  // new communicator needs a context id, which Open MPI agrees on through a non-blocking
  // allreduce, and from then on its libnbc component polls in every progress loop of the
  // process, on every later call (22 instructions per poll, 15% of an 8-byte sendrecv's
  // polling here; a plain MPI program never pays it). Collective: every process calls it.
  static MPI_Comm Split(const ConnectOptions& options, const std::string& where) {
    int world_size = 0;
    Check(MPI_Comm_size(MPI_COMM_WORLD, &world_size), where, "MPI_Comm_size");
    if (options.size == world_size && options.rank == options.world_rank) return MPI_COMM_WORLD;
    MPI_Comm split = MPI_COMM_NULL;
    Check(MPI_Comm_split(MPI_COMM_WORLD, options.color, options.world_rank, &split), where,
          "MPI_Comm_split");
    return split;
  }

  static void Check(int rc, const std::string& where, std::string_view call) {
    if (rc != MPI_SUCCESS) throw BackendError(fmt::format("{}{}: {}", where, call, ErrorText(rc)));
  }

  const BackendCapabilities capabilities_;
};

}  // namespace

std::unique_ptr<Backend> MakeMpiBackend() { return std::make_unique<MpiBackend>(); }

}  // namespace fabricscope
