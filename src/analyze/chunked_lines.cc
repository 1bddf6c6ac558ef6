#include "analyze/chunked_lines.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "analyze/text_fields.h"
#include "fabricscope/error.h"

namespace fabricscope::analyze {

ChunkedLineReader::ChunkedLineReader(int fd, ChunkedReadOptions options)
    : fd_(fd), options_(options) {
  if (options_.chunk_bytes > kMaxChunkedReadBytes ||
      options_.max_line_bytes > kMaxChunkedReadBytes) {
    throw UsageError("chunked read: chunk of " + std::to_string(options_.chunk_bytes) +
                     " bytes, line limit of " + std::to_string(options_.max_line_bytes) +
                     " bytes: each must be at most " + std::to_string(kMaxChunkedReadBytes) +
                     " (1 TiB)");
  }
  options_.chunk_bytes = std::max<size_t>(options_.chunk_bytes, 2);
  options_.max_line_bytes = std::max<size_t>(options_.max_line_bytes, 1);
  capacity_ = options_.chunk_bytes;
  // Not zero-filled: every byte is written by read(2) before it is looked at.
  buffer_.reset(new char[capacity_]);
}

void ChunkedLineReader::Compact() {
  if (begin_ == 0) return;
  std::memmove(buffer_.get(), buffer_.get() + begin_, end_ - begin_);
  end_ -= begin_;
  begin_ = 0;
}

bool ChunkedLineReader::ReadMore() {
  if (eof_ || error_ != 0) return false;
  Compact();
  if (capacity_ - end_ < options_.chunk_bytes / 2) {
    const size_t limit = options_.max_line_bytes + options_.chunk_bytes;
    const size_t grown = std::min(std::max(capacity_ * 2, end_ + options_.chunk_bytes), limit);
    if (grown > capacity_) {
      std::unique_ptr<char[]> bigger(new char[grown]);
      std::memcpy(bigger.get(), buffer_.get(), end_);
      buffer_ = std::move(bigger);
      capacity_ = grown;
    }
  }
  if (end_ == capacity_) return true;  // full: the caller hands out or cuts what it holds
  while (true) {
    const ssize_t n = ::read(fd_, buffer_.get() + end_, capacity_ - end_);
    if (n > 0) {
      end_ += static_cast<size_t>(n);
      return true;
    }
    if (n == 0) {
      eof_ = true;
      return false;
    }
    if (errno != EINTR) {
      error_ = errno;
      return false;
    }
  }
}

std::string_view ChunkedLineReader::Head(size_t bytes) {
  bytes = std::min(bytes, options_.max_line_bytes);
  while (end_ - begin_ < bytes && ReadMore()) {
  }
  return Pending();
}

namespace {

// Whether `head` holds all that content detection looks at (see DetectionHead).
bool DetectionComplete(std::string_view head) {
  size_t i = 0;
  while (i < head.size() && (head[i] == '\n' || IsBlank(head[i]))) ++i;
  if (i == head.size()) return false;
  if (head[i] == '[') {
    size_t j = i + 1;
    while (j < head.size() && (head[j] == '\n' || IsBlank(head[j]))) ++j;
    if (j == head.size()) return false;
  }
  return head.find('\n', i) != std::string_view::npos;
}

}  // namespace

std::string_view ChunkedLineReader::DetectionHead() {
  while (!DetectionComplete(Pending()) && end_ - begin_ < options_.max_line_bytes && ReadMore()) {
  }
  return Pending();
}

void ChunkedLineReader::Skip(size_t bytes) { begin_ += std::min(bytes, end_ - begin_); }

std::string_view ChunkedLineReader::ReadToEnd() {
  Compact();
  // A regular file says how much is left: one buffer of that size, no growing.
  struct stat info {};
  const off_t at = ::lseek(fd_, 0, SEEK_CUR);
  if (::fstat(fd_, &info) == 0 && S_ISREG(info.st_mode) && at >= 0 && info.st_size >= at) {
    const size_t want = end_ + static_cast<size_t>(info.st_size - at) + 1;
    if (want > capacity_) {
      std::unique_ptr<char[]> bigger(new char[want]);
      std::memcpy(bigger.get(), buffer_.get(), end_);
      buffer_ = std::move(bigger);
      capacity_ = want;
    }
  }
  while (!eof_ && error_ == 0) {
    if (end_ == capacity_) {
      std::unique_ptr<char[]> bigger(new char[capacity_ * 2]);
      std::memcpy(bigger.get(), buffer_.get(), end_);
      buffer_ = std::move(bigger);
      capacity_ *= 2;
    }
    const ssize_t n = ::read(fd_, buffer_.get() + end_, capacity_ - end_);
    if (n > 0) {
      end_ += static_cast<size_t>(n);
    } else if (n == 0) {
      eof_ = true;
    } else if (errno != EINTR) {
      error_ = errno;
    }
  }
  return Pending();
}

}  // namespace fabricscope::analyze
