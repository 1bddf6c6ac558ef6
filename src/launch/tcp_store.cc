// The rendezvous store over TCP: rank 0 serves, every process (rank 0 too) is a client.
//
// Wire format, all integers little-endian u32:
//   request  'S' keylen key vallen value          reply  'K'
//   request  'G' keylen key timeout_ms            reply  'F' vallen value | 'T' (timed out)
// The server does the waiting, so a timed-out Get leaves no reply in flight.
#include "fabricscope/tcp_store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "fabricscope/error.h"
#include "fabricscope/strings.h"

namespace fabricscope {
namespace {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;
constexpr Deadline kNoDeadline = Deadline::max();
constexpr uint32_t kMaxField = 64u << 20;  // a rendezvous value is small; this catches garbage

// Once a request's first byte came, the rest of it, and the server's reply, must pass within
// this: a client that stops mid-request is silent, not slow.
constexpr std::chrono::milliseconds kServerIoTimeout{30000};
// How often the loop looks for stalled connections: a pass over every connection, which at
// 16384 of them costs tens of microseconds, once per wakeup was most of a large rendezvous.
constexpr std::chrono::milliseconds kStallSweep{250};

// TCP keepalive and user timeout on every store socket, so a peer whose host vanished without
// FIN or RST (powered off, black-holed) is noticed by the kernel even while this side only
// waits: after 5 s idle, 5 probes 1 s apart; unacknowledged data is given up after 15 s. A
// link down for a few seconds (a flap) stays within both. tcp(7): TCP_KEEPIDLE, TCP_KEEPINTVL,
// TCP_KEEPCNT, TCP_USER_TIMEOUT.
struct KeepaliveOptions {
  int idle_s = 5;
  int interval_s = 1;
  int count = 5;
  unsigned user_timeout_ms = 15000;
};

void EnableKeepalive(int fd, const KeepaliveOptions& k = {}) {
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &k.idle_s, sizeof k.idle_s);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &k.interval_s, sizeof k.interval_s);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &k.count, sizeof k.count);
  ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &k.user_timeout_ms, sizeof k.user_timeout_ms);
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// How an I/O on a store socket ended.
enum class Io { kOk, kClosed, kTimedOut };

// Waits until `fd` is ready for `events` or `deadline` passes (false then).
bool AwaitReady(int fd, short events, Deadline deadline) {
  for (;;) {
    int wait_ms = -1;
    if (deadline != kNoDeadline) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      wait_ms = static_cast<int>(std::min<int64_t>(left, INT32_MAX));
    }
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, wait_ms);
    if (rc > 0) return true;  // ready, or an error the next call reports
    if (rc < 0 && errno != EINTR) return true;
  }
}

// What a failed recv or send means: the kernel giving up on a silent peer (keepalive, user
// timeout) is a timeout like ours; anything else is the connection gone.
Io Failure() { return errno == ETIMEDOUT ? Io::kTimedOut : Io::kClosed; }

// Reads exactly n bytes by `deadline`. Works on blocking and non-blocking sockets alike.
Io ReadAll(int fd, void* data, size_t n, Deadline deadline) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t got = ::recv(fd, p, n, MSG_DONTWAIT);
    if (got == 0) return Io::kClosed;
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return Failure();
      if (!AwaitReady(fd, POLLIN, deadline)) return Io::kTimedOut;
      continue;
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
  return Io::kOk;
}

Io WriteAll(int fd, const void* data, size_t n, Deadline deadline) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t put = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (put < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return Failure();
      if (!AwaitReady(fd, POLLOUT, deadline)) return Io::kTimedOut;
      continue;
    }
    p += put;
    n -= static_cast<size_t>(put);
  }
  return Io::kOk;
}

Io ReadU32(int fd, uint32_t* v, Deadline deadline) {
  uint32_t le = 0;
  const Io io = ReadAll(fd, &le, sizeof le, deadline);
  *v = le;  // x86 and arm64 are little-endian; the format is defined as such
  return io;
}

void AppendU32(std::vector<char>& out, uint32_t v) {
  const char* p = reinterpret_cast<const char*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

Io ReadField(int fd, std::vector<char>* out, Deadline deadline) {
  uint32_t len = 0;
  if (const Io io = ReadU32(fd, &len, deadline); io != Io::kOk) return io;
  if (len > kMaxField) return Io::kClosed;
  out->resize(len);
  return ReadAll(fd, out->data(), len, deadline);
}

}  // namespace

// Indexed by StorePhase's value, in its declaration order.
constexpr std::array<std::string_view, 3> kStorePhaseNames = {"connect", "send", "receive"};

const char* NameOf(StorePhase phase) { return NameOf(phase, kStorePhaseNames).data(); }

// One thread serves every connection from an epoll loop, as PyTorch's TCPStore moved to
// libuv for the same reason: a thread per client was 16k threads for a 16k-rank job. Each
// connection's bytes are parsed as they come, its replies queued and sent as the socket
// takes them; a Get that must wait is parked on its key (a Set answers exactly the Gets
// parked on its key) with a deadline the loop's timeout covers. A connection answers its
// requests in order: one parked Get holds the requests behind it.
struct TcpStoreServer::Impl {
  struct Connection {
    int fd = -1;
    std::string in;   // received, not yet a whole request
    std::string out;  // replies not yet sent
    bool parked = false;
    std::string parked_key;
    Deadline parked_until{};
    Deadline stalled_since = kNoDeadline;  // a request or reply half passed since then
    bool want_out = false;                 // EPOLLOUT registered
  };
  static constexpr uint64_t kListener = ~uint64_t{0};
  static constexpr uint64_t kWake = ~uint64_t{0} - 1;

  int listen_fd = -1;
  int epoll_fd = -1;
  int wake_fd = -1;  // an eventfd written at shutdown
  uint16_t port = 0;
  std::atomic<bool> stopping{false};
  // Held by the loop while it works, and briefly by stats() and SinceSetterAnswered().
  mutable std::mutex mutex;
  std::map<std::string, std::vector<char>> values;
  std::map<std::string, uint64_t> setters;  // key -> the connection that set it last
  std::unordered_map<uint64_t, Connection> connections;
  std::map<std::string, std::set<uint64_t>> parked;  // key -> connections whose Get waits
  std::multimap<Deadline, uint64_t> deadlines;       // of the parked Gets
  std::vector<uint64_t> closing;                     // to close once the event is handled
  uint64_t next_id = 0;
  Deadline next_sweep{};  // the next pass for stalled connections (Expire)
  uint64_t wakeups = 0;
  uint64_t requests = 0;
  std::thread loop;

  void Watch(uint64_t id, int fd, uint32_t events, int op) const {
    epoll_event e{};
    e.events = events;
    e.data.u64 = id;
    ::epoll_ctl(epoll_fd, op, fd, &e);
  }

  void Close(uint64_t id) {
    const auto it = connections.find(id);
    if (it == connections.end()) return;
    Unpark(id, it->second);
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, it->second.fd, nullptr);
    ::close(it->second.fd);
    connections.erase(it);
  }

  void Unpark(uint64_t id, Connection& c) {
    if (!c.parked) return;
    c.parked = false;
    if (const auto waiting = parked.find(c.parked_key); waiting != parked.end()) {
      waiting->second.erase(id);
      if (waiting->second.empty()) parked.erase(waiting);
    }
    for (auto [d, end] = deadlines.equal_range(c.parked_until); d != end; ++d) {
      if (d->second == id) {
        deadlines.erase(d);
        break;
      }
    }
  }

  // Sends what the socket takes now; the rest when it is writable again.
  void Flush(uint64_t id, Connection& c) {
    while (!c.out.empty()) {
      const ssize_t put = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (put < 0 && errno == EINTR) continue;
      if (put < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (put < 0) {
        closing.push_back(id);
        return;
      }
      c.out.erase(0, static_cast<size_t>(put));
    }
    const bool want_out = !c.out.empty();
    UpdateStall(c);
    if (want_out == c.want_out) return;
    c.want_out = want_out;
    Watch(id, c.fd, EPOLLIN | EPOLLRDHUP | (want_out ? EPOLLOUT : 0u), EPOLL_CTL_MOD);
  }

  // A connection with half a request in or a reply not yet out is stalled from the moment
  // that began; one with neither is idle, which a client may be as long as it likes.
  static void UpdateStall(Connection& c) {
    if (c.in.empty() && c.out.empty()) {
      c.stalled_since = kNoDeadline;
    } else if (c.stalled_since == kNoDeadline) {
      c.stalled_since = Clock::now();
    }
  }

  void Reply(uint64_t id, Connection& c, std::string_view bytes) {
    c.out.append(bytes);
    Flush(id, c);
  }

  static std::string Found(const std::vector<char>& value) {
    std::string reply(1, 'F');
    const auto len = static_cast<uint32_t>(value.size());
    reply.append(reinterpret_cast<const char*>(&len), sizeof len);
    reply.append(value.begin(), value.end());
    return reply;
  }

  void HandleSet(uint64_t id, Connection& c, const std::string& key, std::vector<char> value) {
    ++requests;
    Reply(id, c, "K");
    setters[key] = id;
    const std::vector<char>& stored = values[key] = std::move(value);
    const auto waiting = parked.find(key);
    if (waiting == parked.end()) return;
    // Off the map before any is answered: what a woken client sent behind its Get (served
    // below) may set this key again, and must not answer these a second time. Unpark then
    // finds them gone from it and clears the rest.
    const std::set<uint64_t> woken = std::move(waiting->second);
    parked.erase(waiting);
    const std::string reply = Found(stored);
    for (uint64_t w : woken) {
      Connection& other = connections.at(w);
      Unpark(w, other);
      ++wakeups;
      Reply(w, other, reply);
      if (!Serve(w, other)) closing.push_back(w);  // what it sent behind its Get
    }
  }

  void HandleGet(uint64_t id, Connection& c, std::string key, uint32_t timeout_ms) {
    ++requests;
    if (const auto found = values.find(key); found != values.end()) {
      Reply(id, c, Found(found->second));
    } else if (timeout_ms == 0 || stopping) {
      Reply(id, c, "T");
    } else {
      c.parked = true;
      c.parked_until = Clock::now() + std::chrono::milliseconds(timeout_ms);
      deadlines.emplace(c.parked_until, id);
      parked[key].insert(id);
      c.parked_key = std::move(key);
    }
  }

  // The whole requests in `c.in`, in order, until one parks; false when the connection
  // speaks another protocol and is to be closed.
  bool Serve(uint64_t id, Connection& c) {
    size_t at = 0;
    const auto u32 = [&](size_t offset, uint32_t* v) {
      if (c.in.size() < at + offset + 4) return false;
      std::memcpy(v, c.in.data() + at + offset, 4);  // little-endian, as the format says
      return true;
    };
    bool ok = true;
    while (!c.parked && at < c.in.size()) {
      const char op = c.in[at];
      uint32_t key_len = 0;
      if (op != 'S' && op != 'G') {
        ok = false;
        break;
      }
      if (!u32(1, &key_len)) break;
      if (key_len > kMaxField) {
        ok = false;
        break;
      }
      const size_t key_at = at + 5;
      uint32_t second = 0;
      if (!u32(5 + key_len, &second)) break;
      if (op == 'S' && second > kMaxField) {
        ok = false;
        break;
      }
      const size_t whole = 9 + key_len + (op == 'S' ? second : 0);
      if (c.in.size() < at + whole) break;
      std::string key = c.in.substr(key_at, key_len);
      if (op == 'S') {
        const char* v = c.in.data() + key_at + key_len + 4;
        HandleSet(id, c, key, std::vector<char>(v, v + second));
      } else {
        HandleGet(id, c, std::move(key), second);
      }
      at += whole;
    }
    c.in.erase(0, at);
    UpdateStall(c);
    return ok;
  }

  void Receive(uint64_t id, Connection& c) {
    char buffer[65536];
    bool ended = false;  // closed, reset, or given up on by keepalive
    for (;;) {
      const ssize_t got = ::recv(c.fd, buffer, sizeof buffer, MSG_DONTWAIT);
      if (got > 0) {
        c.in.append(buffer, static_cast<size_t>(got));
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      ended = !(got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
      break;
    }
    // What came before the end is served: a client may set a key and leave at once.
    if (!Serve(id, c) || ended) closing.push_back(id);
  }

  void AcceptAll() {
    for (;;) {
      // Keepalive, the user timeout and TCP_NODELAY come from the listener: Linux copies them
      // to the sockets it accepts (the child socket is a clone of the listener's), which keeps
      // the accept loop fast enough that a burst of 16k connects does not overflow the
      // backlog (a dropped SYN costs its client a second).
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) return;
      const uint64_t id = next_id++;
      connections[id].fd = fd;
      Watch(id, fd, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_ADD);
    }
  }

  // Parked Gets past their deadline answer 'T'; a request or reply stuck half-way for
  // kServerIoTimeout closes its connection: a client that stops mid-request is silent.
  void Expire() {
    const Deadline now = Clock::now();
    while (!deadlines.empty() && deadlines.begin()->first <= now) {
      const uint64_t id = deadlines.begin()->second;
      Connection& c = connections.at(id);
      Unpark(id, c);
      Reply(id, c, "T");
      if (!Serve(id, c)) closing.push_back(id);
    }
    if (now < next_sweep) return;
    next_sweep = now + kStallSweep;
    for (auto& [id, c] : connections) {
      if (c.stalled_since != kNoDeadline && now - c.stalled_since > kServerIoTimeout) {
        closing.push_back(id);
      }
    }
  }

  int WaitMs() const {
    const std::lock_guard lock(mutex);
    int wait_ms = 1000;  // the stalled-connection sweep's period
    if (!deadlines.empty()) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadlines.begin()->first - Clock::now())
              .count();
      wait_ms = static_cast<int>(std::clamp<int64_t>(left, 0, wait_ms));
    }
    return wait_ms;
  }

  void Run() {
    std::vector<epoll_event> events(256);
    while (!stopping) {
      const int n =
          ::epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), WaitMs());
      if (n < 0 && errno != EINTR) return;
      if (stopping) return;
      const std::lock_guard lock(mutex);
      for (int i = 0; i < n; ++i) {
        const uint64_t id = events[static_cast<size_t>(i)].data.u64;
        const uint32_t what = events[static_cast<size_t>(i)].events;
        if (id == kListener) {
          AcceptAll();
          continue;
        }
        if (id == kWake) continue;
        const auto it = connections.find(id);
        if (it == connections.end()) continue;
        if ((what & EPOLLOUT) != 0) Flush(id, it->second);
        if ((what & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) Receive(id, it->second);
        for (uint64_t gone : closing) Close(gone);
        closing.clear();
      }
      Expire();
      for (uint64_t gone : closing) Close(gone);
      closing.clear();
      AcceptAll();  // connects that came while this batch was served: the backlog is bounded
    }
  }
};

TcpStoreServer::TcpStoreServer(uint16_t port) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.listen_fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  const bool v6 = s.listen_fd >= 0;
  if (!v6) s.listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s.listen_fd < 0) throw SystemError(Errno("rendezvous store: socket"));
  const int one = 1;
  ::setsockopt(s.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc = 0;
  if (v6) {
    const int zero = 0;  // dual stack: IPv4 peers too
    ::setsockopt(s.listen_fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_any;
    addr.sin6_port = htons(port);
    rc = ::bind(s.listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  } else {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(port);
    rc = ::bind(s.listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  }
  // The kernel caps the backlog at net.core.somaxconn: a job's ranks connect at once, and a
  // SYN dropped for a full backlog costs its client a second.
  if (rc != 0 || ::listen(s.listen_fd, 65535) != 0) {
    const std::string msg =
        Errno("rendezvous store: cannot listen on port " + std::to_string(port)) +
        "; pick a free MASTER_PORT";
    ::close(s.listen_fd);
    throw SystemError(msg);
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(s.listen_fd, reinterpret_cast<sockaddr*>(&bound), &len);
  s.port = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                    : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  EnableKeepalive(s.listen_fd);  // inherited by every accepted socket (AcceptAll)
  s.epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  s.wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s.epoll_fd < 0 || s.wake_fd < 0) {
    const std::string msg = Errno("rendezvous store: epoll");
    ::close(s.listen_fd);
    if (s.epoll_fd >= 0) ::close(s.epoll_fd);
    if (s.wake_fd >= 0) ::close(s.wake_fd);
    throw SystemError(msg);
  }
  s.Watch(Impl::kListener, s.listen_fd, EPOLLIN, EPOLL_CTL_ADD);
  s.Watch(Impl::kWake, s.wake_fd, EPOLLIN, EPOLL_CTL_ADD);
  s.loop = std::thread([&s] { s.Run(); });
}

TcpStoreServer::~TcpStoreServer() {
  Impl& s = *impl_;
  s.stopping = true;
  const uint64_t one = 1;
  (void)!::write(s.wake_fd, &one, sizeof one);
  s.loop.join();
  for (auto& [id, c] : s.connections) ::close(c.fd);
  ::close(s.listen_fd);
  ::close(s.epoll_fd);
  ::close(s.wake_fd);
}

uint16_t TcpStoreServer::port() const { return impl_->port; }

std::optional<std::chrono::milliseconds> TcpStoreServer::SinceSetterAnswered(
    const std::string& key) const {
  const std::lock_guard lock(impl_->mutex);
  const auto setter = impl_->setters.find(key);
  if (setter == impl_->setters.end()) return std::nullopt;
  const auto c = impl_->connections.find(setter->second);
  if (c == impl_->connections.end()) return std::nullopt;
  tcp_info info{};
  socklen_t len = sizeof info;
  if (::getsockopt(c->second.fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 ||
      info.tcpi_state != TCP_ESTABLISHED) {
    return std::nullopt;
  }
  return std::chrono::milliseconds(info.tcpi_last_ack_recv);
}

StoreServerStats TcpStoreServer::stats() const {
  const std::lock_guard lock(impl_->mutex);
  StoreServerStats out;
  out.connections = impl_->connections.size();
  out.threads = 1;  // the loop, whatever the number of clients
  out.wakeups = impl_->wakeups;
  out.requests = impl_->requests;
  for (const auto& [key, ids] : impl_->parked) out.waiters += ids.size();
  return out;
}

namespace {

// The first connect attempt's wait for an answer, doubled on each silent attempt up to the
// last. A SYN the server's full accept queue dropped (a burst of thousands of ranks
// connecting at once overflows net.core.somaxconn) is only sent again by the kernel after
// a second; a new attempt after 250 ms finds the queue drained. A far host answers a later,
// longer attempt.
constexpr std::chrono::milliseconds kFirstConnectWait{250};
constexpr std::chrono::milliseconds kLastConnectWait{4000};

// One non-blocking connect to `a` by `deadline`: the fd, or -1 with `error` saying why
// (and `refused` set when the host answered with a reset: nothing listens on the port;
// `silent` when it did not answer by the deadline).
int ConnectBy(const addrinfo& a, Deadline deadline, std::string* error, bool* refused,
              bool* silent) {
  const int fd = ::socket(a.ai_family, a.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a.ai_protocol);
  if (fd < 0) {
    *error = std::strerror(errno);
    return -1;
  }
  int rc = ::connect(fd, a.ai_addr, a.ai_addrlen);
  if (rc != 0 && errno == EINPROGRESS) {
    if (!AwaitReady(fd, POLLOUT, deadline)) {
      *error = "no answer: the host drops the connection or is down";
      *silent = true;
      ::close(fd);
      return -1;
    }
    int so_error = 0;
    socklen_t len = sizeof so_error;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
    errno = so_error;
    rc = so_error == 0 ? 0 : -1;
  }
  if (rc != 0) {
    const int why = errno;
    *error = std::strerror(why);
    *refused = *refused || why == ECONNREFUSED;
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

TcpStoreClient::TcpStoreClient(const std::string& host, uint16_t port,
                               std::chrono::milliseconds connect_timeout,
                               std::chrono::milliseconds io_timeout, StoreListening listening)
    : where_(host + ":" + std::to_string(port)), io_timeout_(io_timeout) {
  const auto deadline = Clock::now() + connect_timeout;
  std::string last_error = "no address";
  std::chrono::milliseconds attempt_wait = kFirstConnectWait;
  for (;;) {
    bool refused = false;
    bool silent = false;
    const Deadline attempt_deadline = std::min<Deadline>(deadline, Clock::now() + attempt_wait);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int gai = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
    if (gai != 0) {
      last_error = std::string("cannot resolve host: ") + ::gai_strerror(gai);
    } else {
      for (addrinfo* a = found; a != nullptr && fd_ < 0; a = a->ai_next) {
        fd_ = ConnectBy(*a, attempt_deadline, &last_error, &refused, &silent);
      }
      ::freeaddrinfo(found);
    }
    if (fd_ >= 0) break;
    if (refused && listening == StoreListening::kKnown) {
      throw BackendError(
          "rendezvous: the store of rank 0 at " + where_ + " refused the connection (" +
          last_error +
          ") after it had listened there: process 0 ended or died (or the port was read from "
          "a FABRICSCOPE_PORT_FILE an earlier job left)");
    }
    if (Clock::now() >= deadline) {
      throw StoreTimeoutError("rendezvous: cannot reach the store of rank 0 at " + where_ +
                                  " within " + std::to_string(connect_timeout.count()) +
                                  " ms (connect: " + last_error +
                                  "); check MASTER_ADDR/MASTER_PORT and that rank 0 is running",
                              where_, StorePhase::kConnect);
    }
    if (silent) {
      attempt_wait = std::min(2 * attempt_wait, kLastConnectWait);
      continue;  // the attempt waited already
    }
    std::this_thread::sleep_for(
        std::min<Clock::duration>(std::chrono::milliseconds(100), deadline - Clock::now()));
  }
  EnableKeepalive(fd_);
}

std::string TcpStoreClient::LocalAddress() const {
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  char text[NI_MAXHOST] = {};
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&local), &len) != 0 ||
      ::getnameinfo(reinterpret_cast<sockaddr*>(&local), len, text, sizeof text, nullptr, 0,
                    NI_NUMERICHOST) != 0) {
    return "";
  }
  std::string address = text;
  if (address.rfind("::ffff:", 0) == 0) address = address.substr(7);  // IPv4-mapped
  return address;
}

TcpStoreClient::~TcpStoreClient() {
  if (fd_ >= 0) ::close(fd_);
}

char TcpStoreClient::Exchange(const std::vector<char>& request, const std::string& key,
                              Deadline deadline) {
  if (broken_) {
    throw BackendError("rendezvous: the connection to the store of rank 0 at " + where_ +
                       " was given up after a deadline; cannot ask for '" + key + "'");
  }
  auto fail = [&](Io io, StorePhase phase) {
    if (io == Io::kTimedOut) {
      // A reply may still come: the connection is out of step, so it is not used again.
      broken_ = true;
      ::shutdown(fd_, SHUT_RDWR);
      throw StoreTimeoutError("rendezvous: the store of rank 0 at " + where_ + " went silent (" +
                                  NameOf(phase) + " of '" + key +
                                  "' passed its deadline): its host is down, cut off or stuck",
                              where_, phase);
    }
    throw BackendError("rendezvous: lost the store of rank 0 at " + where_ + " (" + NameOf(phase) +
                       " of '" + key + "'); rank 0 died or the network failed");
  };
  if (const Io io = WriteAll(fd_, request.data(), request.size(),
                             std::min(deadline, Clock::now() + io_timeout_));
      io != Io::kOk) {
    fail(io, StorePhase::kSend);
  }
  char status = 0;
  if (const Io io = ReadAll(fd_, &status, 1, deadline); io != Io::kOk) {
    fail(io, StorePhase::kReceive);
  }
  return status;
}

void TcpStoreClient::Set(const std::string& key, const std::vector<char>& value) {
  std::vector<char> msg{'S'};
  AppendU32(msg, static_cast<uint32_t>(key.size()));
  msg.insert(msg.end(), key.begin(), key.end());
  AppendU32(msg, static_cast<uint32_t>(value.size()));
  msg.insert(msg.end(), value.begin(), value.end());
  const std::lock_guard lock(mutex_);
  if (Exchange(msg, key, Clock::now() + io_timeout_) != 'K') {
    throw BackendError("rendezvous: the store of rank 0 at " + where_ + " answered setting '" +
                       key + "' with garbage; is MASTER_PORT another service's port?");
  }
}

std::vector<char> TcpStoreClient::Get(const std::string& key, std::chrono::milliseconds timeout) {
  std::vector<char> msg{'G'};
  AppendU32(msg, static_cast<uint32_t>(key.size()));
  msg.insert(msg.end(), key.begin(), key.end());
  const auto ms = std::clamp<int64_t>(timeout.count(), 0, INT32_MAX);
  AppendU32(msg, static_cast<uint32_t>(ms));
  const std::lock_guard lock(mutex_);
  // The server waits up to the timeout before it answers; the reply then has io_timeout.
  const Deadline deadline = Clock::now() + std::chrono::milliseconds(ms) + io_timeout_;
  const char status = Exchange(msg, key, deadline);
  std::vector<char> value;
  if (status == 'F') {
    if (const Io io = ReadField(fd_, &value, deadline); io != Io::kOk) {
      broken_ = true;
      throw BackendError("rendezvous: lost the store of rank 0 at " + where_ + " while reading '" +
                         key + "'; rank 0 died or the network failed");
    }
    return value;
  }
  if (status != 'T') {
    throw BackendError("rendezvous: the store of rank 0 at " + where_ + " answered '" + key +
                       "' with garbage; is MASTER_PORT another service's port?");
  }
  throw MissingKeyError("rendezvous: key '" + key + "' did not appear within " +
                            std::to_string(ms) + " ms; a rank did not start or died",
                        key);
}

std::vector<std::vector<char>> TcpStoreClient::MultiGet(const std::vector<std::string>& keys,
                                                        std::chrono::milliseconds timeout) {
  if (keys.empty()) return {};
  const auto ms = std::clamp<int64_t>(timeout.count(), 0, INT32_MAX);
  std::vector<char> requests;
  for (const std::string& key : keys) {
    requests.push_back('G');
    AppendU32(requests, static_cast<uint32_t>(key.size()));
    requests.insert(requests.end(), key.begin(), key.end());
    AppendU32(requests, static_cast<uint32_t>(ms));
  }
  const std::lock_guard lock(mutex_);
  // The server serves them in order, each parked Get holding those behind it until its key is
  // set or its `ms` pass (then the reading stops: below); so every reply is in by `ms` after
  // the last key is set, or the first missing key's `ms`, plus the I/O allowance.
  const Deadline deadline = Clock::now() + 2 * std::chrono::milliseconds(ms) + io_timeout_;
  std::vector<std::vector<char>> values(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    // The first exchange writes every request; the others only read their reply.
    const char status =
        i == 0 ? Exchange(requests, keys[0], deadline) : ReadStatus(keys[i], deadline);
    if (status == 'F') {
      if (ReadField(fd_, &values[i], deadline) != Io::kOk) {
        broken_ = true;
        throw BackendError("rendezvous: lost the store of rank 0 at " + where_ +
                           " while reading '" + keys[i] + "'; rank 0 died or the network failed");
      }
    } else if (status == 'T') {
      // The Gets behind it would each wait their own timeout: the connection is given up
      // rather than read to its end (the caller ends the job on a missing key).
      broken_ = true;
      ::shutdown(fd_, SHUT_RDWR);
      throw MissingKeyError("rendezvous: key '" + keys[i] + "' did not appear within " +
                                std::to_string(ms) + " ms; a rank did not start or died",
                            keys[i]);
    } else {
      broken_ = true;
      throw BackendError("rendezvous: the store of rank 0 at " + where_ + " answered '" + keys[i] +
                         "' with garbage; is MASTER_PORT another service's port?");
    }
  }
  return values;
}

char TcpStoreClient::ReadStatus(const std::string& key, Deadline deadline) {
  char status = 0;
  if (const Io io = ReadAll(fd_, &status, 1, deadline); io != Io::kOk) {
    broken_ = true;
    if (io == Io::kTimedOut) ::shutdown(fd_, SHUT_RDWR);
    throw StoreTimeoutError("rendezvous: the store of rank 0 at " + where_ +
                                " did not answer the read of '" + key +
                                "' in time: its host is down, cut off or stuck",
                            where_, StorePhase::kReceive);
  }
  return status;
}

namespace {

// What FABRICSCOPE_PORT_FILE holds: the port in decimal and a newline. Empty when the file
// is not there yet; throws UsageError when it holds anything else.
std::optional<uint16_t> ReadPortFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  const std::string content = text.str();
  char* end = nullptr;
  errno = 0;
  const long port = std::strtol(content.c_str(), &end, 10);
  if (errno != 0 || end == content.c_str() || (*end != '\n' && *end != '\0') || port < 1 ||
      port > 65535) {
    throw UsageError("rendezvous: '" + path + "' (FABRICSCOPE_PORT_FILE) holds '" +
                     content.substr(0, 32) +
                     "', not a port: give each job a path of its own that does not exist "
                     "before it starts");
  }
  return static_cast<uint16_t>(port);
}

uint16_t AwaitPortFile(const std::string& path, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (const auto port = ReadPortFile(path)) return *port;
    if (Clock::now() >= deadline) {
      throw TimeoutError("rendezvous: process 0 did not publish its store's port in '" + path +
                         "' (FABRICSCOPE_PORT_FILE, with MASTER_PORT=0) within " +
                         std::to_string(timeout.count()) +
                         " ms: it was not started, died, or was given another path");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Written beside the file and renamed over it, so a reader sees no port or the whole one.
void PublishPort(const std::string& path, uint16_t port) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << "\n";
    out.close();
    if (!out) {
      throw SystemError("rendezvous: cannot write the store's port to '" + tmp +
                        "' (FABRICSCOPE_PORT_FILE): check the directory exists and is writable");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw SystemError("rendezvous: cannot publish the store's port as '" + path +
                      "' (FABRICSCOPE_PORT_FILE): " + why);
  }
}

}  // namespace

JobStore::JobStore(const JobStoreOptions& options) : port_(options.port) {
  if (port_ == 0 && options.port_file.empty()) {
    throw UsageError(
        "MASTER_PORT=0 lets process 0 pick the store's port, which the other processes then "
        "read from a file: set FABRICSCOPE_PORT_FILE to a path every process can read, or "
        "MASTER_PORT to a free port");
  }
  if (!options.serve) {
    if (port_ == 0) {
      port_ = AwaitPortFile(options.port_file, options.timeout);
      listening_ = StoreListening::kKnown;
    }
    return;
  }
  server_ = std::make_unique<TcpStoreServer>(port_);
  listening_ = StoreListening::kKnown;  // its own
  if (port_ != 0) return;
  port_ = server_->port();
  PublishPort(options.port_file, port_);
  published_ = options.port_file;
}

JobStore::~JobStore() {
  if (!published_.empty()) std::remove(published_.c_str());
}

}  // namespace fabricscope
