// libFuzzer target: any bytes, read as a log (and as whatever they look like), summarized and
// rendered, and compared across nodes as NCCL's own log; and read again through the chunked
// reader of ReadResultsFile with a chunk of a few bytes, which must give the lines and the
// results the whole text gives. The readers must neither crash, hang, nor read out of bounds on
// any input; ASan and UBSan, compiled in, turn any such slip into a failure.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "analyze/chunked_lines.h"
#include "analyze/lines.h"
#include "analyze/readers.h"
#include "fabricscope/analyze.h"
#include "fabricscope/nccl_nodes.h"
#include "fabricscope/parse.h"

namespace {

using Lines = std::vector<std::tuple<std::string, size_t, bool>>;

// `text` in an anonymous in-memory file, read from its start.
int MemoryFile(std::string_view text) {
  const int fd = memfd_create("fuzz", MFD_CLOEXEC);
  if (fd < 0) std::abort();
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  lseek(fd, 0, SEEK_SET);
  return fd;
}

std::string Summary(const fabricscope::ParsedResults& parsed) {
  std::string out = std::to_string(parsed.runs.size()) + " " + std::to_string(parsed.RowCount());
  for (const fabricscope::Diagnostic& d : parsed.diagnostics) out += "\n" + d.ToString();
  return out;
}

// The chunked reader against the whole text: the same lines (a chunk of 2 to 33 bytes and a
// line limit above the input, so that nothing is cut), and the same results from the text
// reader fed by it.
void CheckChunked(std::string_view text) {
  if (text.empty()) return;
  const fabricscope::analyze::ChunkedReadOptions options{
      size_t{2} + static_cast<unsigned char>(text[0]) % 32, text.size() + 1};
  Lines whole;
  fabricscope::ForEachLine(text, [&](std::string_view line, size_t no, bool last) {
    whole.emplace_back(std::string(line), no, last);
  });
  int fd = MemoryFile(text);
  Lines chunked;
  {
    fabricscope::analyze::ChunkedLineReader reader(fd, options);
    reader.ForEachLine([&](std::string_view line, size_t no, bool last) {
      chunked.emplace_back(std::string(line), no, last);
    });
  }
  close(fd);
  if (chunked != whole) std::abort();
  fd = MemoryFile(text);
  fabricscope::analyze::ChunkedLineReader reader(fd, options);
  const fabricscope::ParseOptions parse;
  const std::string streamed =
      Summary(fabricscope::analyze::ParseTextLines(reader, 0, "fuzz", parse));
  close(fd);
  if (streamed != Summary(fabricscope::analyze::ParseTextResults(text, "fuzz", parse))) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const fabricscope::InputFormat format :
       {fabricscope::InputFormat::kText, fabricscope::InputFormat::kAuto}) {
    fabricscope::ParseOptions options;
    options.format = format;
    const fabricscope::ParsedResults parsed = fabricscope::ParseResults(text, "fuzz", options);
    std::vector<fabricscope::TestAnalysis> tests;
    for (const fabricscope::RunResult& run : parsed.runs) {
      for (fabricscope::TestAnalysis& test : fabricscope::Analyze(run)) tests.push_back(test);
    }
    for (const fabricscope::AnalysisFormat& render : fabricscope::AnalysisFormats()) {
      (void)render.render(tests, parsed.diagnostics);
    }
  }
  // NCCL's INFO lines compared across nodes (analyze --nccl-nodes, doctor --nccl-log).
  (void)fabricscope::RenderNcclNodes(fabricscope::CompareNcclNodes(text, "fuzz"));
  CheckChunked(text);
  return 0;
}
