// Reading a file descriptor in fixed-size chunks and handing out its lines, so that a log of
// any size is read with one chunk (plus the line that spans its edge) in memory.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace fabricscope::analyze {

struct ChunkedReadOptions {
  // What one read(2) asks for, and the buffer's size when no line is longer than it.
  size_t chunk_bytes = size_t{4} << 20;
  // A line longer than this (a binary file, a log without line breaks) is handed out cut to
  // this length and the rest of it skipped, so that memory stays bounded whatever the input.
  size_t max_line_bytes = size_t{64} << 20;
};
// The most either option may be (1 TiB): their sum, the buffer's bound, cannot overflow.
inline constexpr size_t kMaxChunkedReadBytes = size_t{1} << 40;

class ChunkedLineReader {
 public:
  // Reads `fd` (not owned: the caller closes it). Throws UsageError when an option exceeds
  // kMaxChunkedReadBytes; a chunk below 2 bytes or a limit below 1 is raised to that.
  explicit ChunkedLineReader(int fd, ChunkedReadOptions options = {});

  // The first bytes of the input, at least `bytes` of them unless the input is shorter or a
  // read fails; for telling the format before reading on.
  std::string_view Head(size_t bytes);
  // The first bytes up to and including the first '\n' after the first byte that is neither
  // blank nor '\n' (and, when that is '[', up to the next such byte): what content detection
  // looks at. Stops at max_line_bytes.
  std::string_view DetectionHead();

  // Drops the first `bytes` of what Head returned (a byte-order mark), before any line.
  void Skip(size_t bytes);

  // Calls fn(line, line_no, last) for each '\n'-separated line of the rest of the input, as
  // ForEachLine (lines.h) does on a whole text: numbered from 1, `last` true for a final line
  // with no newline after it. The views are valid during the call only.
  template <typename Fn>
  void ForEachLine(Fn&& fn);

  // Reads everything left into memory (for readers that need the whole text: JSON, CSV) and
  // returns it; valid until the reader is destroyed.
  std::string_view ReadToEnd();

  // errno of a read that failed (the lines before it were handed out), or 0.
  int error() const { return error_; }
  // Lines longer than max_line_bytes, cut; and the number of the first of them.
  size_t cut_lines() const { return cut_lines_; }
  size_t first_cut_line() const { return first_cut_line_; }
  size_t max_line_bytes() const { return options_.max_line_bytes; }
  // The most memory the buffer held at once: at most a chunk, or the longest line (up to
  // max_line_bytes) plus a chunk.
  size_t peak_buffer_bytes() const { return capacity_; }

 private:
  // Moves the pending bytes to the front, grows the buffer when less than half a chunk is
  // free after them (a line longer than that), and reads once into the free space. False at
  // the end of the input or on an error.
  bool ReadMore();
  std::string_view Pending() const { return {buffer_.get() + begin_, end_ - begin_}; }
  // Moves the pending bytes to the front of the buffer.
  void Compact();

  int fd_;
  ChunkedReadOptions options_;
  std::unique_ptr<char[]> buffer_;
  size_t capacity_ = 0;
  size_t begin_ = 0;  // pending bytes are [begin_, end_)
  size_t end_ = 0;
  bool eof_ = false;
  int error_ = 0;
  size_t cut_lines_ = 0;
  size_t first_cut_line_ = 0;
};

template <typename Fn>
void ChunkedLineReader::ForEachLine(Fn&& fn) {
  size_t line_no = 0;
  bool skipping = false;  // in the rest of a line that was cut
  size_t scanned = 0;     // bytes of the pending partial line known to hold no '\n'
  while (true) {
    const char* data = buffer_.get();
    size_t from = begin_ + scanned;
    while (from < end_) {
      const void* found = std::memchr(data + from, '\n', end_ - from);
      if (found == nullptr) break;
      const size_t end = static_cast<size_t>(static_cast<const char*>(found) - data);
      if (!skipping) {
        // A whole line in the buffer is cut by the same rule as one still arriving.
        const size_t length = end - begin_;
        fn(std::string_view(data + begin_, std::min(length, options_.max_line_bytes)), ++line_no,
           false);
        if (length > options_.max_line_bytes && cut_lines_++ == 0) first_cut_line_ = line_no;
      }
      skipping = false;
      begin_ = from = end + 1;
    }
    if (skipping) begin_ = end_;  // still inside the cut line: drop what was read of it
    scanned = end_ - begin_;
    if (scanned > options_.max_line_bytes) {
      // Longer than the limit, known before its end is read: hand out what fits, skip the
      // rest. A line of exactly max_line_bytes is whole, wherever the chunk's edge falls.
      fn(std::string_view(data + begin_, options_.max_line_bytes), ++line_no, false);
      if (cut_lines_++ == 0) first_cut_line_ = line_no;
      begin_ = end_;
      scanned = 0;
      skipping = true;
      continue;
    }
    if (eof_ || error_ != 0) {
      if (scanned > 0 && !skipping) fn(std::string_view(data + begin_, scanned), ++line_no, true);
      begin_ = end_;
      return;
    }
    // The partial line at the end of the chunk is kept; the next chunk is read after it.
    ReadMore();
  }
}

}  // namespace fabricscope::analyze
