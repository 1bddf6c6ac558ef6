// analyze, compare and report as a user runs them: real files, a real `fabricscope run` read
// back, every bad input, and the HTML report rendered by Chromium, run in this process on
// string streams; stdin and a terminal through the real binary.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/in_process.h"
#include "fabricscope/parse.h"
#include "fabricscope/report.h"

namespace fabricscope {
namespace {

namespace fs = std::filesystem;
using test::Outcome;
using test::Slurp;

std::string Data(const std::string& name) {
  return std::string(FABRICSCOPE_SOURCE_DIR) + "/tests/analyze/data/" + name;
}

class AnalyzeCli : public test::InProcessTest {
 protected:
};

TEST_F(AnalyzeCli, SummarizesThePublishedRunsAsJson) {
  const Outcome o = Here("analyze --format json " + Data("skypilot_h200_all_gather.log") + " " +
                         Data("gke_h200_all_gather.log"));
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto json = nlohmann::json::parse(o.out);
  ASSERT_EQ(json["tests"].size(), 2u);
  EXPECT_EQ(json["tests"][0]["avg_busbw_printed"], 122.073);
  EXPECT_EQ(json["tests"][1]["avg_busbw_printed"], 121.902);
  EXPECT_EQ(json["tests"][0]["peak_busbw"], 332.58);
  EXPECT_EQ(json["tests"][1]["peak_busbw"], 332.16);
  EXPECT_EQ(json["tests"][0]["nodes"], 2);
  // The collective is inferred, and the reader says so.
  EXPECT_NE(o.err.find("its columns fit all_gather and alltoall"), std::string::npos) << o.err;
}

TEST_F(AnalyzeCli, ReadsStdin) {
  const std::string log = Data("skypilot_h200_all_gather.log");
  for (const std::string args :
       {"analyze --collective all_gather", "analyze - --collective all_gather"}) {
    const Outcome o = Run(args, log);
    EXPECT_EQ(o.exit_code, 0) << o.err;
    EXPECT_NE(
        o.out.find("<stdin>:5  all_gather  float  none     16      2    24    122.073  122.073"),
        std::string::npos)
        << o.out;
    EXPECT_EQ(o.err, "");  // named, so nothing to warn about
  }
}

// The round trip: `fabricscope run`'s text, read back, equals the JSON of the same run.
TEST_F(AnalyzeCli, NoInputOnATerminalIsAUsageError) {
  // script(1) gives the command a terminal for stdin.
  if (std::system("command -v script >/dev/null") != 0) GTEST_SKIP() << "no script(1)";
  const fs::path out = dir_ / "typescript";
  const std::string cmd = "script -qec '" + std::string(FABRICSCOPE_BINARY) + " analyze' " +
                          out.string() + " </dev/null >/dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(Slurp(out).find("no input: give result files, or pipe a log in"), std::string::npos)
      << Slurp(out);
}

TEST_F(AnalyzeCli, RunTextReadBackEqualsItsJson) {
  const fs::path json_path = dir_ / "out.json";
  const Outcome run =
      Here("run -t 2 -b 8 -e 64K -f 4 --collective all_reduce,all_gather -J " + json_path.string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const fs::path text_path = Write("out.txt", run.out);
  const ParsedResults text = ReadResultsFile(text_path.string());
  const ParsedResults json = ReadResultsFile(json_path.string());
  ASSERT_TRUE(text.diagnostics.empty()) << text.diagnostics[0].ToString();
  ASSERT_TRUE(json.diagnostics.empty()) << json.diagnostics[0].ToString();
  EXPECT_EQ(text.format, "fabricscope text");
  EXPECT_EQ(json.format, "fabricscope JSON");
  ASSERT_EQ(text.runs.size(), 1u);
  ASSERT_EQ(json.runs.size(), 1u);
  const RunResult& t = text.runs[0];
  const RunResult& j = json.runs[0];
  EXPECT_EQ(t.backend, j.backend);
  EXPECT_EQ(t.backend_version, j.backend_version);
  EXPECT_EQ(t.nranks, j.nranks);
  EXPECT_EQ(t.ranks.size(), j.ranks.size());
  EXPECT_EQ(t.config.iters, j.config.iters);
  ASSERT_EQ(t.rows.size(), j.rows.size());
  ASSERT_EQ(t.rows.size(), 14u);  // 7 sizes (8 B to 32 KB, x4) x 2 collectives
  // The text holds each number as nccl-tests' rule prints it; the JSON at full precision.
  const auto printed = [](double value, int width) {
    return std::stod(FormatNumber(value, width));
  };
  for (size_t i = 0; i < t.rows.size(); ++i) {
    SCOPED_TRACE("row " + std::to_string(i));
    const ResultRow& a = t.rows[i];
    const ResultRow& b = j.rows[i];
    EXPECT_EQ(a.collective, b.collective);
    EXPECT_EQ(a.size, b.size);
    EXPECT_EQ(a.count, b.count);
    EXPECT_EQ(a.type, b.type);
    EXPECT_EQ(a.redop, b.redop);
    EXPECT_EQ(a.root, b.root);
    EXPECT_EQ(a.iterations, b.iterations);
    for (const auto half : {&ResultRow::out_of_place, &ResultRow::in_place}) {
      ASSERT_EQ((a.*half).has_value(), (b.*half).has_value());
      EXPECT_EQ((a.*half)->time_us, printed((b.*half)->time_us, 7));
      EXPECT_EQ((a.*half)->algbw, printed((b.*half)->algbw, 6));
      EXPECT_EQ((a.*half)->busbw, printed((b.*half)->busbw, 6));
      EXPECT_EQ((a.*half)->wrong, (b.*half)->wrong);
    }
  }
  // And the trailers: printed with %g in the text, full precision in the JSON.
  ASSERT_EQ(t.printed.size(), 2u);
  ASSERT_EQ(j.printed.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(t.printed[i].collective, j.printed[i].collective);
    char g[32];
    std::snprintf(g, sizeof(g), "%g", j.printed[i].avg_busbw);
    EXPECT_EQ(t.printed[i].avg_busbw, std::stod(g));
  }
  // analyze agrees with itself on both.
  const Outcome a = Here("analyze --format json " + text_path.string() + " " + json_path.string());
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const auto summary = nlohmann::json::parse(a.out);
  ASSERT_EQ(summary["tests"].size(), 4u);
  EXPECT_EQ(summary["tests"][0]["collective"], "all_reduce");
  EXPECT_EQ(summary["tests"][0]["rows"], summary["tests"][2]["rows"]);
  EXPECT_EQ(summary["tests"][0]["avg_busbw_consistent"], true);
  EXPECT_EQ(summary["tests"][2]["avg_busbw_consistent"], true);
}

TEST_F(AnalyzeCli, WrongElementsExitOne) {
  const Outcome run = Here("run -t 2 -b 1K -e 4K -f 2 --inject-fault 1");
  ASSERT_EQ(run.exit_code, 1) << run.err;
  const fs::path log = Write("fault.log", run.out);
  const Outcome o = Here("analyze " + log.string());
  EXPECT_EQ(o.exit_code, 1) << o.err;
}

TEST_F(AnalyzeCli, BadInputsNameTheFileAndLine) {
  // Missing file.
  Outcome o = Here("analyze " + (dir_ / "missing.log").string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("missing.log: error: cannot read"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("No such file"), std::string::npos) << o.err;
  // Unknown content.
  const fs::path notes = Write("notes.txt", "just some text\n");
  o = Here("analyze " + notes.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("notes.txt: error: no benchmark results found"), std::string::npos) << o.err;
  // A malformed row: the error names the line, and the rest is still summarized.
  std::string log = Slurp(Data("gke_h200_all_gather.log"));
  log.replace(log.find("  28.05    0.07"), 15, "  28.05    x.07");
  const fs::path bad = Write("bad.log", log);
  o = Here("analyze " + bad.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("bad.log:30: error: a table row that cannot be read: algbw 'x.07'"),
            std::string::npos)
      << o.err;
  EXPECT_NE(o.out.find("all_gather"), std::string::npos);
  EXPECT_NE(o.out.find("printed Avg bus bandwidth (121.902) is not the mean of the 46"),
            std::string::npos)
      << o.out;
  // A directory, a bad format, a bad input format.
  o = Here("analyze " + dir_.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("is a directory"), std::string::npos);
  o = Here("analyze --format yaml " + notes.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("unknown --format 'yaml': choose one of text, md, json, csv"),
            std::string::npos);
  o = Here("analyze --input-format xml " + notes.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--input-format 'xml'"), std::string::npos);
}

std::string Table(double scale, int cycles) {
  std::string text =
      "# Collective test starting: all_reduce_perf\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n";
  for (int cycle = 0; cycle < cycles; ++cycle) {
    for (int k = 0; k < 6; ++k) {
      const long size = 1024L << (3 * k);
      const double busbw = (k + 1) * 10.0 * scale * (1 + 0.002 * cycle);
      char line[256];
      std::snprintf(line, sizeof(line),
                    "%12ld  %12ld  %8s  %6s  %6i  %7s  %6.2f  %6.2f  %6g  %7s  %6.2f  %6.2f  %6g\n",
                    size, size / 4, "float", "sum", -1, "10.00", busbw / 1.5, busbw, 0.0, "10.00",
                    busbw / 1.5, busbw, 0.0);
      text += line;
    }
  }
  return text + "# Out of bounds values : 0 OK\n";
}

TEST_F(AnalyzeCli, CompareExitCodeGatesOnRegressions) {
  const fs::path a = Write("a.log", Table(1.0, 1));
  const fs::path same = Write("same.log", Table(1.0, 1));
  const fs::path slow = Write("slow.log", Table(0.8, 1));
  Outcome o = Here("compare " + a.string() + " " + same.string());
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("no regression of same.log against a.log"), std::string::npos) << o.out;
  o = Here("compare " + a.string() + " " + slow.string() + " --format md");
  EXPECT_EQ(o.exit_code, 1) << o.err;
  EXPECT_NE(o.out.find("| Message Size | busbw a.log (GB/s) | busbw slow.log (GB/s) | Speed-up |"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("REGRESSION: 6 sizes slower in slow.log than in a.log"), std::string::npos);
  // A looser threshold lets the same data pass.
  o = Here("compare " + a.string() + " " + slow.string() + " --threshold 0.25");
  EXPECT_EQ(o.exit_code, 0) << o.out;
  // Repeats from -N cycles, and from a directory and a comma list.
  const fs::path ra = Write("ra.log", Table(1.0, 3));
  const fs::path rb = Write("rb.log", Table(0.8, 3));
  o = Here("compare " + ra.string() + " " + rb.string() + " --format json");
  EXPECT_EQ(o.exit_code, 1);
  const auto json = nlohmann::json::parse(o.out);
  EXPECT_EQ(json["tests"][0]["significance_tested"], true);
  EXPECT_EQ(json["tests"][0]["sizes"][0]["a"].size(), 3u);
  fs::create_directories(dir_ / "before");
  fs::copy_file(a, dir_ / "before" / "1.log");
  fs::copy_file(same, dir_ / "before" / "2.log");
  o = Here("compare " + (dir_ / "before").string() + " " + same.string() + "," + a.string() +
           " --label-a before --label-b after --format csv");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("all_reduce,float,sum,1024,10,10,1,2,2,"), std::string::npos) << o.out;
}

TEST_F(AnalyzeCli, CompareRefusesWhatItCannotCompare) {
  const fs::path a = Write("a.log", Table(1.0, 1));
  std::string other = Table(1.0, 1);
  other.replace(other.find("all_reduce_perf"), 15, "broadcast_perf");
  const fs::path b = Write("b.log", other);
  Outcome o = Here("compare " + a.string() + " " + b.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("nothing to compare"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("only in b.log: broadcast float sum"), std::string::npos) << o.err;
  o = Here("compare " + a.string());
  EXPECT_EQ(o.exit_code, 2);
  o = Here("compare " + a.string() + " " + (dir_ / "nope.log").string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("nope.log: error: cannot read"), std::string::npos);
  o = Here("compare " + a.string() + " " + a.string() + " --threshold 2");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--threshold must be a fraction"), std::string::npos);
  o = Here("compare " + a.string() + " " + a.string() + " --min-size 1X");
  EXPECT_EQ(o.exit_code, 2);
  o = Here("compare " + a.string() + " " + a.string() + " --placement sideways");
  EXPECT_EQ(o.exit_code, 2);
  fs::create_directories(dir_ / "empty");
  o = Here("compare " + (dir_ / "empty").string() + " " + a.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("no result files in it"), std::string::npos);
}

TEST_F(AnalyzeCli, ReportWritesHtmlAndSvgs) {
  const fs::path html = dir_ / "r.html";
  Outcome o = Here("report " + Data("skypilot_h200_all_gather.log") + " " +
                   Data("gke_h200_all_gather.log") + " -o " + html.string() + " --svg-dir " +
                   (dir_ / "svg").string() + " --title 'H200 runs'");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::string page = Slurp(html);
  EXPECT_NE(page.find("<h1>H200 runs</h1>"), std::string::npos);
  EXPECT_NE(page.find("skypilot_h200_all_gather.log"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir_ / "svg" / "all_gather_busbw.svg"));
  EXPECT_TRUE(fs::exists(dir_ / "svg" / "all_gather_time.svg"));
  o = Here("report " + Write("x.txt", "nothing\n") + " -o " + html.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("nothing to report"), std::string::npos);
  o = Here("report " + Data("gke_h200_all_gather.log") + " -o " +
           (dir_ / "no" / "r.html").string());
  EXPECT_EQ(o.exit_code, 3);
  EXPECT_NE(o.err.find("cannot write"), std::string::npos);
}

std::string FabricData(const std::string& name) {
  return std::string(FABRICSCOPE_SOURCE_DIR) + "/tests/fabric/data/" + name;
}

TEST_F(AnalyzeCli, ReportIncludesTheFabricPictureAndFindings) {
  const fs::path html = dir_ / "r.html";
  const Outcome o = Here("report --fabric " + FabricData("missing-uplink") + " " +
                         Data("skypilot_h200_all_gather.log") + " -o " + html.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::string page = Slurp(html);
  const size_t section = page.find("<h2>Fabric</h2>");
  ASSERT_NE(section, std::string::npos);
  // The fabric's own picture, inline, after the plots of the runs.
  EXPECT_NE(page.find("<svg", section), std::string::npos);
  EXPECT_NE(page.find("spine1", section), std::string::npos);
  EXPECT_NE(page.find("leaf1", section), std::string::npos);
  EXPECT_NE(page.find("<b>WARN leaf4</b>: 3 uplinks where the other leaves have 4", section),
            std::string::npos)
      << page.substr(section, 2000);
  EXPECT_NE(page.find("</body>", section), std::string::npos);
  // A healthy fabric: its picture and no findings.
  ASSERT_EQ(Here("report --fabric " + FabricData("healthy") + " " +
                 Data("skypilot_h200_all_gather.log") + " -o " + html.string())
                .exit_code,
            0);
  EXPECT_NE(Slurp(html).find("no findings"), std::string::npos);
}

TEST_F(AnalyzeCli, ReportRefusesABadFabricDirectory) {
  const fs::path html = dir_ / "r.html";
  Outcome o = Here("report --fabric " + (dir_ / "nowhere").string() + " " +
                   Data("skypilot_h200_all_gather.log") + " -o " + html.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("is not a directory"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(html));
  fs::create_directories(dir_ / "empty");
  o = Here("report --fabric " + (dir_ / "empty").string() + " " +
           Data("skypilot_h200_all_gather.log") + " -o " + html.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("holds neither iblinkinfo.txt nor ibnetdiscover.txt"), std::string::npos)
      << o.err;
  EXPECT_FALSE(fs::exists(html));
}

TEST_F(AnalyzeCli, HelpListsTheCommands) {
  const Outcome o = Here("--help");
  EXPECT_EQ(o.exit_code, 0);
  for (const char* command : {"analyze", "compare", "report"}) {
    EXPECT_NE(o.out.find(command), std::string::npos) << command;
  }
  EXPECT_NE(Here("compare --help").out.find("--threshold"), std::string::npos);
}

// ---- the report as a browser shows it ----

// RGB(A) pixels of an 8-bit PNG, unfiltered; empty on anything else.
struct Image {
  uint32_t width = 0;
  uint32_t height = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;
};

uint32_t BigEndian(const std::string& s, size_t at) {
  return (static_cast<uint32_t>(static_cast<uint8_t>(s[at])) << 24) |
         (static_cast<uint32_t>(static_cast<uint8_t>(s[at + 1])) << 16) |
         (static_cast<uint32_t>(static_cast<uint8_t>(s[at + 2])) << 8) |
         static_cast<uint32_t>(static_cast<uint8_t>(s[at + 3]));
}

Image DecodePng(const std::string& png) {
  Image image;
  if (png.size() < 33 || png.compare(1, 3, "PNG") != 0) return image;
  std::string compressed;
  int color_type = 0;
  for (size_t at = 8; at + 12 <= png.size();) {
    const uint32_t length = BigEndian(png, at);
    const std::string type = png.substr(at + 4, 4);
    if (type == "IHDR") {
      image.width = BigEndian(png, at + 8);
      image.height = BigEndian(png, at + 12);
      if (png[at + 16] != 8) return {};
      color_type = png[at + 17];
    } else if (type == "IDAT") {
      compressed += png.substr(at + 8, length);
    }
    at += 12 + length;
  }
  image.channels = color_type == 6 ? 4 : color_type == 2 ? 3 : 0;
  if (image.channels == 0) return {};
  const size_t stride = image.width * static_cast<size_t>(image.channels);
  std::vector<uint8_t> raw((stride + 1) * image.height);
  uLongf size = raw.size();
  if (uncompress(raw.data(), &size, reinterpret_cast<const Bytef*>(compressed.data()),
                 compressed.size()) != Z_OK) {
    return {};
  }
  image.pixels.resize(stride * image.height);
  const int bpp = image.channels;
  for (size_t y = 0; y < image.height; ++y) {
    const uint8_t filter = raw[y * (stride + 1)];
    const uint8_t* in = &raw[y * (stride + 1) + 1];
    uint8_t* out = &image.pixels[y * stride];
    const uint8_t* up = y > 0 ? &image.pixels[(y - 1) * stride] : nullptr;
    for (size_t x = 0; x < stride; ++x) {
      const int a = x >= static_cast<size_t>(bpp) ? out[x - bpp] : 0;
      const int b = up != nullptr ? up[x] : 0;
      const int c = (up != nullptr && x >= static_cast<size_t>(bpp)) ? up[x - bpp] : 0;
      int predictor = 0;
      switch (filter) {
        case 1:
          predictor = a;
          break;
        case 2:
          predictor = b;
          break;
        case 3:
          predictor = (a + b) / 2;
          break;
        case 4: {
          const int p = a + b - c;
          const int pa = std::abs(p - a);
          const int pb = std::abs(p - b);
          const int pc = std::abs(p - c);
          predictor = (pa <= pb && pa <= pc) ? a : (pb <= pc ? b : c);
          break;
        }
        default:
          break;
      }
      out[x] = static_cast<uint8_t>(in[x] + predictor);
    }
  }
  return image;
}

TEST_F(AnalyzeCli, ReportRendersInHeadlessChromium) {
  const char* candidates[] = {"/usr/bin/chromium", "/usr/bin/chromium-browser",
                              "/usr/bin/google-chrome"};
  std::string chromium;
  for (const char* path : candidates) {
    if (access(path, X_OK) == 0) chromium = path;
  }
  if (chromium.empty()) GTEST_SKIP() << "no Chromium (Debian package chromium) to render with";
  const fs::path html = dir_ / "report.html";
  ASSERT_EQ(Here("report " + Data("skypilot_h200_all_gather.log") + " " +
                 Data("gke_h200_all_gather.log") + " -o " + html.string())
                .exit_code,
            0);
  const fs::path png = dir_ / "report.png";
  // As root in a container Chromium needs --no-sandbox; its own profile directory keeps it
  // away from any other Chromium of this user.
  const std::string cmd = "timeout 120 " + chromium +
                          " --headless --no-sandbox --disable-gpu --hide-scrollbars "
                          "--user-data-dir=" +
                          (dir_ / "profile").string() +
                          " --window-size=1400,1800 --screenshot=" + png.string() + " file://" +
                          html.string() + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const Image image = DecodePng(Slurp(png));
  ASSERT_EQ(image.width, 1400u);
  ASSERT_EQ(image.height, 1800u);
  // Not blank: text, tables and plot lines cover a real share of the page, and the first
  // series' colour (#1f77b4) is there, so the SVG plots were drawn.
  size_t ink = 0;
  size_t series = 0;
  for (size_t i = 0; i + 2 < image.pixels.size(); i += static_cast<size_t>(image.channels)) {
    const int r = image.pixels[i];
    const int g = image.pixels[i + 1];
    const int b = image.pixels[i + 2];
    if (r < 200 || g < 200 || b < 200) ++ink;
    if (std::abs(r - 0x1f) < 12 && std::abs(g - 0x77) < 12 && std::abs(b - 0xb4) < 12) ++series;
  }
  const size_t total = static_cast<size_t>(image.width) * image.height;
  EXPECT_GT(ink, total / 200) << "ink " << ink << " of " << total;
  EXPECT_GT(series, 100u);
}

}  // namespace
}  // namespace fabricscope

namespace fabricscope {
namespace {

// `analyze --nccl-nodes`: NCCL's lines of a job on three nodes, one with GDR off.
TEST_F(AnalyzeCli, NcclNodesNamesTheOddNodeAndRefusesWhatItCannotDo) {
  std::string log;
  for (int node = 0; node < 3; ++node) {
    for (int local = 0; local < 2; ++local) {
      log += "node" + std::to_string(node) + ":100:20" + std::to_string(local) + " [" +
             std::to_string(local) +
             "] NCCL INFO Channel 00/0 : " + std::to_string(node * 2 + local) + "[" +
             std::to_string(local) + "] -> 9[0] [send] via NET/IB/0" +
             (node == 1 ? "" : "/GDRDMA") + "\n";
    }
  }
  const std::string path = Write("job.log", log);
  Outcome o = Here("analyze --nccl-nodes " + path);
  // No table in the log: the summary's reading error stays, the comparison is printed.
  EXPECT_EQ(o.exit_code, 2) << o.out << o.err;
  EXPECT_NE(o.out.find("3 nodes compared (6 NCCL INFO lines)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("DIFFERS  node1  transport: NET/IB (most nodes, 2 of 3: NET/IB/GDRDMA)"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("job.log:3: node1:100:200 [0] NCCL INFO Channel 00/0 : 2[0] -> 9[0] [send] "
                       "via NET/IB/0"),
            std::string::npos)
      << o.out;
  ExpectRefusedHere("analyze --nccl-nodes --format json " + path, 2, "--nccl-nodes prints text");
  o = Run("analyze --nccl-nodes", path);
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("give the log as a file, not stdin"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace fabricscope
