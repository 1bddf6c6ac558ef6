// The chunked reader behind ReadResultsFile: the same lines as splitting the whole text (lines
// across chunk edges, CRLF, a last line without newline, lines longer than a chunk), never more
// than a chunk in memory when lines are short, a cut for a line beyond the limit; and files read
// through it give exactly what the whole text gives.
#include "analyze/chunked_lines.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "analyze/fixtures.h"
#include "analyze/lines.h"
#include "analyze/readers.h"
#include "fabricscope/analyze.h"
#include "fabricscope/error.h"
#include "fabricscope/parse.h"
#include "fabricscope/report.h"

namespace fabricscope::analyze {
namespace {

using Lines = std::vector<std::tuple<std::string, size_t, bool>>;

// A file descriptor holding `text`, read from its start (an anonymous in-memory file).
int MemoryFile(const std::string& text) {
  const int fd = memfd_create("chunked-lines-test", MFD_CLOEXEC);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  lseek(fd, 0, SEEK_SET);
  return fd;
}

Lines Whole(const std::string& text) {
  Lines out;
  ForEachLine(text, [&](std::string_view line, size_t no, bool last) {
    out.emplace_back(std::string(line), no, last);
  });
  return out;
}

Lines Chunked(ChunkedLineReader& reader) {
  Lines out;
  reader.ForEachLine([&](std::string_view line, size_t no, bool last) {
    out.emplace_back(std::string(line), no, last);
  });
  return out;
}

const std::vector<std::string>& Texts() {
  static const std::vector<std::string> texts = {
      "",
      "a",
      "a\n",
      "\n",
      "\n\n\n",
      "a\r\nb\r\n",
      "a\r\nbb\r\nccc",  // CRLF and a last line without newline
      "first\nsecond line\nthird\n",
      "short\n" + std::string(100, 'x') + "\nend",  // a line longer than any chunk below
      std::string(57, 'y'),                         // one long line, no newline at all
      "x\n" + std::string(33, '\n') + "y\r",
  };
  return texts;
}

TEST(ChunkedLines, GiveTheSameLinesAsTheWholeTextAtEveryChunkSize) {
  for (const std::string& text : Texts()) {
    for (size_t chunk = 2; chunk <= 19; ++chunk) {
      const int fd = MemoryFile(text);
      ChunkedLineReader reader(fd, {chunk, 1 << 20});
      EXPECT_EQ(Chunked(reader), Whole(text)) << "chunk " << chunk << " text '" << text << "'";
      EXPECT_EQ(reader.cut_lines(), 0u);
      EXPECT_EQ(reader.error(), 0);
      close(fd);
    }
  }
}

// The bound the benchmark's RSS figure rests on: lines no longer than half a chunk never make
// the reader hold more than the chunk, however long the input.
TEST(ChunkedLines, HoldOneChunkWhateverTheInputSize) {
  std::string text;
  for (int i = 0; text.size() < 200000; ++i) {
    text += "gpu-" + std::to_string(i % 97) + ":12:34 [" + std::to_string(i % 8) + "] NCCL\r\n";
  }
  const int fd = MemoryFile(text);
  ChunkedLineReader reader(fd, {64, 1 << 20});
  EXPECT_EQ(Chunked(reader), Whole(text));
  EXPECT_EQ(reader.peak_buffer_bytes(), 64u);
  close(fd);
}

// A line longer than the chunk grows the buffer to about twice the line, not to the input.
TEST(ChunkedLines, GrowOnlyForALineLongerThanTheChunk) {
  const std::string long_line(1000, 'z');
  std::string text;
  for (int i = 0; i < 200; ++i) text += "row " + std::to_string(i) + "\n";
  text += long_line + "\n";
  for (int i = 0; i < 200; ++i) text += "row " + std::to_string(i) + "\n";
  const int fd = MemoryFile(text);
  ChunkedLineReader reader(fd, {16, 1 << 20});
  EXPECT_EQ(Chunked(reader), Whole(text));
  EXPECT_GT(reader.peak_buffer_bytes(), long_line.size());
  EXPECT_LE(reader.peak_buffer_bytes(), 2 * (long_line.size() + 1 + 16));
  EXPECT_LT(reader.peak_buffer_bytes(), text.size());
  close(fd);
}

// Beyond the limit a line is cut: its first max_line_bytes are handed out, the rest skipped,
// and the lines after it keep their numbers.
TEST(ChunkedLines, CutALineBeyondTheLimit) {
  const std::string text = "before\n" + std::string(500, 'q') + "\nafter\n" + std::string(40, 'r') +
                           "\n" + std::string(300, 's');
  const int fd = MemoryFile(text);
  ChunkedLineReader reader(fd, {8, 32});
  const Lines want = {{"before", 1, false},
                      {std::string(32, 'q'), 2, false},
                      {"after", 3, false},
                      {std::string(32, 'r'), 4, false},
                      {std::string(32, 's'), 5, false}};
  EXPECT_EQ(Chunked(reader), want);
  EXPECT_EQ(reader.cut_lines(), 3u);
  EXPECT_EQ(reader.first_cut_line(), 2u);
  EXPECT_LE(reader.peak_buffer_bytes(), 32u + 8u);
  close(fd);
}

// A line of exactly max_line_bytes is whole, and one byte more is cut, at every chunk size:
// where the chunk's edge falls (before or after the '\n') does not decide it.
TEST(ChunkedLines, ALineOfExactlyTheLimitIsWholeAtEveryChunkSize) {
  constexpr size_t kLimit = 32;
  for (const bool final_newline : {true, false}) {
    const std::string text = "a\n" + std::string(kLimit, 'x') + "\n" +
                             std::string(kLimit + 1, 'y') + "\nb\n" + std::string(kLimit, 'z') +
                             (final_newline ? "\n" : "");
    const Lines want = {{"a", 1, false},
                        {std::string(kLimit, 'x'), 2, false},
                        {std::string(kLimit, 'y'), 3, false},
                        {"b", 4, false},
                        {std::string(kLimit, 'z'), 5, !final_newline}};
    for (const size_t chunk : {2, 3, 5, 8, 16, 31, 32, 33, 34, 35, 64, 4096}) {
      const int fd = MemoryFile(text);
      ChunkedLineReader reader(fd, {chunk, kLimit});
      EXPECT_EQ(Chunked(reader), want) << "chunk " << chunk;
      EXPECT_EQ(reader.cut_lines(), 1u) << "chunk " << chunk;
      EXPECT_EQ(reader.first_cut_line(), 3u) << "chunk " << chunk;
      EXPECT_LE(reader.peak_buffer_bytes(), kLimit + chunk) << "chunk " << chunk;
      close(fd);
    }
  }
}

// Options whose sum would overflow (the buffer's bound wrapped to a small size, and the
// reader asked for more forever) are refused with the reason.
TEST(ChunkedLines, OptionsThatWouldOverflowAreRefused) {
  const int fd = MemoryFile("a\n");
  for (const ChunkedReadOptions options :
       {ChunkedReadOptions{16, SIZE_MAX}, ChunkedReadOptions{SIZE_MAX, 16},
        ChunkedReadOptions{SIZE_MAX / 2 + 1, SIZE_MAX / 2 + 1},
        ChunkedReadOptions{16, kMaxChunkedReadBytes + 1}}) {
    try {
      ChunkedLineReader reader(fd, options);
      ADD_FAILURE() << options.chunk_bytes << " " << options.max_line_bytes;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("must be at most 1099511627776 (1 TiB)"),
                std::string::npos)
          << e.what();
    }
  }
  // The largest limit allowed: no overflow, the lines as usual.
  ChunkedLineReader reader(fd, {16, kMaxChunkedReadBytes});
  EXPECT_EQ(Chunked(reader), (Lines{{"a", 1, false}}));
  close(fd);
}

// A pipe hands out a few bytes per read: lines still come out whole.
TEST(ChunkedLines, ReadAPipeInShortPieces) {
  std::string text;
  for (int i = 0; i < 300; ++i) text += "line " + std::to_string(i) + (i % 3 ? "\r\n" : "\n");
  text += "tail";
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::thread writer([&] {
    for (size_t at = 0; at < text.size(); at += 3) {
      const size_t n = std::min<size_t>(3, text.size() - at);
      if (write(fds[1], text.data() + at, n) != static_cast<ssize_t>(n)) break;
    }
    close(fds[1]);
  });
  ChunkedLineReader reader(fds[0], {32, 1 << 20});
  const Lines got = Chunked(reader);
  writer.join();
  close(fds[0]);
  EXPECT_EQ(got, Whole(text));
}

// What content detection needs is read even when it lies beyond the first chunk.
TEST(ChunkedLines, DetectionHeadReachesTheFirstLine) {
  const std::string text = "  \n\n   [  \n \n   {\"size\": 8}\n]\n";
  const int fd = MemoryFile(text);
  ChunkedLineReader reader(fd, {4, 1 << 20});
  const std::string_view head = reader.DetectionHead();
  EXPECT_NE(head.find('{'), std::string_view::npos) << head;
  EXPECT_EQ(reader.ReadToEnd(), text);
  close(fd);
}

// Everything a reader keeps, for comparing two reads of one input.
std::string Fingerprint(const ParsedResults& parsed) {
  std::string out = parsed.source + "|" + parsed.format + "\n";
  std::vector<TestAnalysis> tests;
  for (const RunResult& run : parsed.runs) {
    for (TestAnalysis& test : Analyze(run)) tests.push_back(std::move(test));
    out += run.source + " " + std::to_string(run.nranks) + "\n" + ToJson(run) + "\n";
    for (const std::string& s : run.errors) out += "error " + s + "\n";
    for (const std::string& s : run.transports) out += "transport " + s + "\n";
    for (const std::string& s : run.platform_lines) out += "platform " + s + "\n";
  }
  out += FindAnalysisFormat("json").render(tests, parsed.diagnostics);
  return out;
}

// A file read in chunks gives what its whole text gives, for every layout and launcher prefix,
// with a byte-order mark, CRLF line ends and a last line cut mid-row.
TEST(ChunkedLines, FilesReadAsTheirWholeText) {
  std::vector<std::string> texts;
  for (const fixtures::Layout& layout : fixtures::AllLayouts()) {
    for (const fixtures::Prefix& prefix : fixtures::AllPrefixes()) {
      texts.push_back(fixtures::WithPrefix(fixtures::FixtureLines(layout), prefix.text));
    }
  }
  const std::string plain = texts.front();
  std::string crlf;
  ForEachLine(plain,
              [&](std::string_view line, size_t, bool) { crlf += std::string(line) + "\r\n"; });
  texts.push_back("\xEF\xBB\xBF" + crlf);
  texts.push_back(plain.substr(0, plain.size() * 2 / 3));
  texts.push_back("\xEF\xBB\xBF");
  texts.push_back("\xEF\xBB\xBF{\"results\": [");
  const std::string dir = ::testing::TempDir();
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string path = dir + "/chunked-" + std::to_string(i) + ".log";
    {
      FILE* f = std::fopen(path.c_str(), "wb");
      ASSERT_NE(f, nullptr);
      std::fwrite(texts[i].data(), 1, texts[i].size(), f);
      std::fclose(f);
    }
    EXPECT_EQ(Fingerprint(ReadResultsFile(path)), Fingerprint(ParseResults(texts[i], path)))
        << "text " << i;
    std::remove(path.c_str());
  }
}

// A line beyond the limit is a warning naming it, and the table around it is still read.
TEST(ChunkedLines, ALineBeyondTheLimitIsAWarningAndTheTableStillReads) {
  const std::string table = fixtures::WithPrefix(fixtures::FixtureLines(fixtures::Layout{"t"}), "");
  const std::string text = std::string(5000, 'b') + "\n" + table;
  const int fd = MemoryFile(text);
  ChunkedLineReader reader(fd, {64, 1024});
  const ParsedResults parsed = ParseTextLines(reader, 0, "long.log", ParseOptions{});
  close(fd);
  EXPECT_EQ(parsed.RowCount(), ParseResults(table, "t").RowCount());
  EXPECT_GT(parsed.RowCount(), 0u);
  bool warned = false;
  for (const Diagnostic& d : parsed.diagnostics) {
    if (d.line == 1 && d.severity == Diagnostic::Severity::kWarning &&
        d.message.find("a line longer than 1024 bytes") != std::string::npos &&
        d.message.find("the rest of it was skipped") != std::string::npos) {
      warned = true;
    }
  }
  EXPECT_TRUE(warned) << (parsed.diagnostics.empty() ? "" : parsed.diagnostics[0].ToString());
}

// A read that fails (standard input that is a directory) is an error with the system's reason.
TEST(ChunkedLines, AFailedReadIsAnErrorWithTheReason) {
  const int saved = dup(STDIN_FILENO);
  const int dir = open(::testing::TempDir().c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(dir, 0);
  ASSERT_EQ(dup2(dir, STDIN_FILENO), STDIN_FILENO);
  const ParsedResults parsed = ReadResultsFile("-");
  dup2(saved, STDIN_FILENO);
  close(saved);
  close(dir);
  ASSERT_TRUE(parsed.HasErrors());
  bool reason = false;
  for (const Diagnostic& d : parsed.diagnostics) {
    if (d.message.find("cannot read standard input: Is a directory") != std::string::npos) {
      reason = true;
    }
  }
  EXPECT_TRUE(reason) << parsed.diagnostics[0].ToString();
}

}  // namespace
}  // namespace fabricscope::analyze
