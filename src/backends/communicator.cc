// What a communicator does unless its backend says otherwise: host backends compute on host
// memory, complete every call in Run, and have no graphs and no transport log.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fabricscope/backend.h"
#include "fabricscope/error.h"

namespace fabricscope {
namespace {

// Host memory, touched once at allocation so that first-touch faults are not timed.
class HostBuffers final : public DeviceBuffers {
 public:
  explicit HostBuffers(size_t bytes)
      : bytes_(bytes), data_(std::make_unique_for_overwrite<std::byte[]>(bytes)) {
    std::memset(data_.get(), 0, bytes_);
  }
  std::byte* data(int /*device*/) const override { return data_.get(); }
  size_t size() const override { return bytes_; }

 private:
  size_t bytes_;
  std::unique_ptr<std::byte[]> data_;
};

}  // namespace

std::unique_ptr<DeviceBuffers> Communicator::Allocate(size_t bytes) {
  return std::make_unique<HostBuffers>(bytes);
}

void Communicator::CopyToDevice(int /*device*/, void* dst, const void* src, size_t bytes) {
  if (bytes > 0 && dst != src) std::memmove(dst, src, bytes);
}

void Communicator::CopyToHost(int /*device*/, void* dst, const void* src, size_t bytes) {
  if (bytes > 0 && dst != src) std::memmove(dst, src, bytes);
}

std::unique_ptr<CapturedWork> Communicator::Capture(const std::function<void()>& /*enqueue*/) {
  throw UnsupportedError("graph capture (-G) needs a GPU backend (nccl, rccl)");
}

std::unique_ptr<DeviceTimer> Communicator::MakeTimer(int /*marks*/) { return nullptr; }

std::string Communicator::Transport(int /*device*/) const { return {}; }

void Communicator::Exchange(const PeerExchange& /*exchange*/) {
  throw UnsupportedError("this backend has no point-to-point exchange on a communicator");
}

std::vector<DeviceDescription> Backend::Devices(const ConnectOptions& /*options*/) const {
  return {};
}

}  // namespace fabricscope
