// The rendezvous store over TCP: rank 0 serves, every process (rank 0 too) is a client.
//
// Wire format, all integers little-endian u32:
//   request  'S' keylen key vallen value          reply  'K'
//   request  'G' keylen key timeout_ms            reply  'F' vallen value | 'T' (timed out)
// The server does the waiting, so a timed-out Get leaves no reply in flight.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "fabricscope/error.h"
#include "fabricscope/store.h"

namespace fabricscope {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kMaxField = 64u << 20;  // a rendezvous value is small; this catches garbage

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// Reads exactly n bytes; false on EOF or error.
bool ReadAll(int fd, void* data, size_t n) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t got = ::recv(fd, p, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

bool WriteAll(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t put = ::send(fd, p, n, MSG_NOSIGNAL);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    p += put;
    n -= static_cast<size_t>(put);
  }
  return true;
}

bool ReadU32(int fd, uint32_t* v) {
  uint32_t le = 0;
  if (!ReadAll(fd, &le, sizeof le)) return false;
  *v = le;  // x86 and arm64 are little-endian; the format is defined as such
  return true;
}

void AppendU32(std::vector<char>& out, uint32_t v) {
  const char* p = reinterpret_cast<const char*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

bool ReadField(int fd, std::vector<char>* out) {
  uint32_t len = 0;
  if (!ReadU32(fd, &len) || len > kMaxField) return false;
  out->resize(len);
  return ReadAll(fd, out->data(), len);
}

}  // namespace

struct TcpStoreServer::Impl {
  int listen_fd = -1;
  int wake[2] = {-1, -1};  // written at shutdown to stop the accept loop
  uint16_t port = 0;
  std::atomic<bool> stopping{false};
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::string, std::vector<char>> values;
  std::vector<int> connections;
  std::vector<std::thread> threads;
  std::thread acceptor;

  void Serve(int fd) {
    for (;;) {
      char op = 0;
      std::vector<char> key;
      if (!ReadAll(fd, &op, 1) || !ReadField(fd, &key)) return;
      const std::string k(key.begin(), key.end());
      if (op == 'S') {
        std::vector<char> value;
        if (!ReadField(fd, &value)) return;
        {
          const std::lock_guard lock(mutex);
          values[k] = std::move(value);
        }
        changed.notify_all();
        if (!WriteAll(fd, "K", 1)) return;
      } else if (op == 'G') {
        uint32_t timeout_ms = 0;
        if (!ReadU32(fd, &timeout_ms)) return;
        std::vector<char> reply;
        {
          std::unique_lock lock(mutex);
          const bool found = changed.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] {
            return stopping.load() || values.count(k) > 0;
          });
          if (found && values.count(k) > 0) {
            const auto& v = values[k];
            reply.push_back('F');
            AppendU32(reply, static_cast<uint32_t>(v.size()));
            reply.insert(reply.end(), v.begin(), v.end());
          } else {
            reply.push_back('T');
          }
        }
        if (!WriteAll(fd, reply.data(), reply.size())) return;
      } else {
        return;  // not our protocol: drop the connection
      }
    }
  }

  void Accept() {
    for (;;) {
      pollfd fds[2] = {{listen_fd, POLLIN, 0}, {wake[0], POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[1].revents != 0 || stopping) return;
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      const std::lock_guard lock(mutex);
      connections.push_back(fd);
      threads.emplace_back([this, fd] { Serve(fd); });
    }
  }
};

TcpStoreServer::TcpStoreServer(uint16_t port) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.listen_fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const bool v6 = s.listen_fd >= 0;
  if (!v6) s.listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
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
  if (rc != 0 || ::listen(s.listen_fd, 1024) != 0) {
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
  if (::pipe2(s.wake, O_CLOEXEC) != 0) {
    ::close(s.listen_fd);
    throw SystemError(Errno("rendezvous store: pipe"));
  }
  s.acceptor = std::thread([&s] { s.Accept(); });
}

TcpStoreServer::~TcpStoreServer() {
  Impl& s = *impl_;
  s.stopping = true;
  (void)!::write(s.wake[1], "x", 1);
  s.acceptor.join();
  {
    const std::lock_guard lock(s.mutex);
    for (int fd : s.connections) ::shutdown(fd, SHUT_RDWR);
  }
  s.changed.notify_all();
  for (auto& t : s.threads) t.join();
  for (int fd : s.connections) ::close(fd);
  ::close(s.listen_fd);
  ::close(s.wake[0]);
  ::close(s.wake[1]);
}

uint16_t TcpStoreServer::port() const { return impl_->port; }

TcpStoreClient::TcpStoreClient(const std::string& host, uint16_t port,
                               std::chrono::milliseconds connect_timeout)
    : where_(host + ":" + std::to_string(port)) {
  const auto deadline = Clock::now() + connect_timeout;
  std::string last_error = "no address";
  for (;;) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int gai = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
    if (gai != 0) {
      last_error = std::string("cannot resolve host: ") + ::gai_strerror(gai);
    } else {
      for (addrinfo* a = found; a != nullptr && fd_ < 0; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          fd_ = fd;
        } else {
          last_error = std::strerror(errno);
          ::close(fd);
        }
      }
      ::freeaddrinfo(found);
    }
    if (fd_ >= 0) break;
    if (Clock::now() >= deadline) {
      throw TimeoutError("rendezvous: cannot reach the store of rank 0 at " + where_ + " within " +
                         std::to_string(connect_timeout.count()) + " ms (" + last_error +
                         "); check MASTER_ADDR/MASTER_PORT and that rank 0 is running");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
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

void TcpStoreClient::Set(const std::string& key, const std::vector<char>& value) {
  std::vector<char> msg{'S'};
  AppendU32(msg, static_cast<uint32_t>(key.size()));
  msg.insert(msg.end(), key.begin(), key.end());
  AppendU32(msg, static_cast<uint32_t>(value.size()));
  msg.insert(msg.end(), value.begin(), value.end());
  const std::lock_guard lock(mutex_);
  char ack = 0;
  if (!WriteAll(fd_, msg.data(), msg.size()) || !ReadAll(fd_, &ack, 1) || ack != 'K') {
    throw BackendError("rendezvous: lost the store of rank 0 at " + where_ + " while setting '" +
                       key + "'; rank 0 died or the network failed");
  }
}

std::vector<char> TcpStoreClient::Get(const std::string& key, std::chrono::milliseconds timeout) {
  std::vector<char> msg{'G'};
  AppendU32(msg, static_cast<uint32_t>(key.size()));
  msg.insert(msg.end(), key.begin(), key.end());
  const auto ms = std::clamp<int64_t>(timeout.count(), 0, INT32_MAX);
  AppendU32(msg, static_cast<uint32_t>(ms));
  const std::lock_guard lock(mutex_);
  char status = 0;
  std::vector<char> value;
  if (!WriteAll(fd_, msg.data(), msg.size()) || !ReadAll(fd_, &status, 1) ||
      (status == 'F' && !ReadField(fd_, &value))) {
    throw BackendError("rendezvous: lost the store of rank 0 at " + where_ +
                       " while waiting for '" + key + "'; rank 0 died or the network failed");
  }
  if (status != 'F') {
    throw TimeoutError("rendezvous: key '" + key + "' did not appear within " + std::to_string(ms) +
                       " ms; a rank did not start or died");
  }
  return value;
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
    if (port_ == 0) port_ = AwaitPortFile(options.port_file, options.timeout);
    return;
  }
  server_ = std::make_unique<TcpStoreServer>(port_);
  if (port_ != 0) return;
  port_ = server_->port();
  PublishPort(options.port_file, port_);
  published_ = options.port_file;
}

JobStore::~JobStore() {
  if (!published_.empty()) std::remove(published_.c_str());
}

}  // namespace fabricscope
