// SVG plots and the HTML report: structure, axes, escaping, and that nothing external or
// executable ends up in them.
#include "fabricscope/plot.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fabricscope/parse.h"

namespace fabricscope {
namespace {

size_t Occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(SvgPlot, LinesAxesAndLegend) {
  std::vector<PlotSeries> series = {
      {"run <a> & \"b\"", {{1024, 0.5}, {1048576, 50}, {1073741824, 300}}},
      {"second", {{1024, 0.0}, {4096, 1.5}, {1048576, 40}}},
  };
  PlotOptions options;
  options.title = "all_gather: bus bandwidth";
  options.y_label = "busbw (GB/s)";
  const std::string svg = RenderSvgPlot(series, options);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(Occurrences(svg, "<polyline"), 2u);
  // The zero cannot sit on a log axis: 3 + 2 markers.
  EXPECT_EQ(Occurrences(svg, "<circle"), 5u);
  EXPECT_NE(svg.find(">1K<"), std::string::npos);
  EXPECT_NE(svg.find(">1M<"), std::string::npos);
  EXPECT_NE(svg.find(">1G<"), std::string::npos);
  EXPECT_NE(svg.find(">0.1<"), std::string::npos);
  EXPECT_NE(svg.find(">1000<"), std::string::npos);
  EXPECT_NE(svg.find("run &lt;a&gt; &amp; &quot;b&quot;"), std::string::npos);
  EXPECT_EQ(svg.find("<a>"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
}

TEST(SvgPlot, NothingToDrawSaysSo) {
  const std::string svg = RenderSvgPlot({{"zeros", {{8, 0.0}, {16, 0.0}}}}, PlotOptions());
  EXPECT_NE(svg.find("no positive values"), std::string::npos);
  EXPECT_EQ(svg.find("<polyline"), std::string::npos);
  EXPECT_NE(RenderSvgPlot({}, PlotOptions()).find("</svg>"), std::string::npos);
}

TEST(HtmlReport, SummariesAndPlotsOfEveryInput) {
  const std::string log =
      "# Collective test starting: all_reduce_perf\n"
      "#  Rank  0 Group  0 Pid   1000 on <script>alert(1)</script> device  0 [0000:8f:00] GPU\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "        1024           256     float     sum      -1    10.00    0.10    0.15      0    "
      "10.00    0.10    0.15      0\n"
      "     1048576        262144     float     sum      -1    50.00   20.97   31.46      0    "
      "50.00   20.97   31.46      0\n"
      "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 15.805 \n";
  std::vector<ParsedResults> inputs = {ParseResults(log, "first.log"),
                                       ParseResults(log, "second.log"),
                                       ParseResults("nothing here\n", "empty.log")};
  const std::string html = RenderHtmlReport(inputs, "Test <report>");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<title>Test &lt;report&gt;</title>"), std::string::npos);
  EXPECT_EQ(Occurrences(html, "<svg"), 2u);       // busbw and time of all_reduce
  EXPECT_EQ(Occurrences(html, "<polyline"), 4u);  // two runs in each
  EXPECT_NE(html.find("first.log"), std::string::npos);
  EXPECT_NE(html.find("<td>15.805</td>"), std::string::npos);
  EXPECT_NE(html.find("empty.log: error: no benchmark results found"), std::string::npos);
  // Self-contained and inert: no script, nothing fetched.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  const std::vector<TestPlots> plots = PlotResults(inputs);
  ASSERT_EQ(plots.size(), 1u);
  EXPECT_EQ(plots[0].collective, "all_reduce");
}

}  // namespace
}  // namespace fabricscope
