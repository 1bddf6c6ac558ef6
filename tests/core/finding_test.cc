// The one finding model: its scale, its exit rule and its two writers.
#include "fabricscope/finding.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fabricscope/error.h"

namespace fabricscope {
namespace {

Finding Problem() {
  return {Severity::kWarn,
          "ib-ports",
          "runs at 4x HDR, the others at 4x NDR",
          "mlx5_0 port 1",
          {"/sys/class/infiniband/mlx5_0/ports/1/rate: 200 Gb/sec (4X HDR)"},
          "reseat or replace the cable",
          {{"rate_gbps", 200}}};
}

TEST(Finding, SeveritiesAreOrderedWorstLast) {
  EXPECT_EQ(SeverityName(Severity::kOk), "OK");
  EXPECT_EQ(SeverityName(Severity::kInfo), "INFO");
  EXPECT_EQ(SeverityName(Severity::kWarn), "WARN");
  EXPECT_EQ(SeverityName(Severity::kCritical), "CRITICAL");
  std::vector<Finding> findings = {{Severity::kInfo, "a", "x"}, Problem()};
  EXPECT_EQ(Worst(findings), Severity::kWarn);
  EXPECT_EQ(Worst({}), Severity::kOk);
  EXPECT_EQ(Worst({}, Severity::kInfo), Severity::kInfo);
}

TEST(Finding, OneExitRule) {
  EXPECT_EQ(OutcomeOf(Severity::kOk, false, false), Outcome::kClear);
  EXPECT_EQ(OutcomeOf(Severity::kWarn, false, false), Outcome::kClear);
  EXPECT_EQ(OutcomeOf(Severity::kWarn, false, true), Outcome::kFailed);
  EXPECT_EQ(OutcomeOf(Severity::kCritical, true, false), Outcome::kFailed);
  EXPECT_EQ(OutcomeOf(Severity::kInfo, true, false), Outcome::kInconclusive);
  // A WARN under --strict outranks an undecided finding: something is known to be wrong.
  EXPECT_EQ(OutcomeOf(Severity::kWarn, true, true), Outcome::kFailed);
  Finding undecided{Severity::kInfo, "straggler", "rank 3 is late, within the others' skew"};
  undecided.decided = false;
  EXPECT_EQ(OutcomeOf({undecided}, false), Outcome::kInconclusive);
  EXPECT_EQ(OutcomeOf({undecided, Problem()}, true), Outcome::kFailed);
}

TEST(Finding, TextIsOneLineEachWithDetailsUnderProblems) {
  const std::vector<Finding> findings = {{Severity::kOk, "pci", "every GPU at Gen5 x16"},
                                         Problem()};
  EXPECT_EQ(FindingsText(findings),
            "OK            pci       every GPU at Gen5 x16\n"
            "WARN          ib-ports  mlx5_0 port 1: runs at 4x HDR, the others at 4x NDR\n"
            "                        evidence: /sys/class/infiniband/mlx5_0/ports/1/rate: 200 "
            "Gb/sec (4X HDR)\n"
            "                        fix: reseat or replace the cable\n");
  FindingTextStyle style;
  style.problems_only = true;
  style.details = false;
  style.indent = "  ";
  EXPECT_EQ(FindingsText(findings, style),
            "  WARN          ib-ports  mlx5_0 port 1: runs at 4x HDR, the others at 4x NDR\n");
  EXPECT_EQ(FindingsText({}), "");
}

TEST(Finding, AnUndecidedFindingReadsInconclusiveAndIsAProblem) {
  Finding f{Severity::kInfo, "straggler",     "rank 3 is 1.9 ms late, the next 1.6 ms",
            "rank 3",        {"noise: 0.13"}, "rerun with -n 200"};
  f.decided = false;
  FindingTextStyle style;
  style.problems_only = true;
  const std::string text = FindingsText({f}, style);
  EXPECT_EQ(text.rfind("INCONCLUSIVE  straggler  rank 3: rank 3 is 1.9 ms late", 0), 0u) << text;
  EXPECT_NE(text.find("fix: rerun with -n 200"), std::string::npos) << text;
}

TEST(Finding, JsonHasEveryKeyAlways) {
  const auto j = FindingsJson({Problem(), {Severity::kOk, "pci", "fine"}});
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0].dump(),
            R"j({"severity":"WARN","source":"ib-ports","what":"runs at 4x HDR, the others at )j"
            R"j(4x NDR","where":"mlx5_0 port 1","evidence":["/sys/class/infiniband/mlx5_0/)j"
            R"j(ports/1/rate: 200 Gb/sec (4X HDR)"],"fix":"reseat or replace the cable",)j"
            R"j("figures":{"rate_gbps":200.0},)j"
            R"j("decided":true,"element":"","nodes":[]})j");
  EXPECT_EQ(j[1]["where"].get<std::string>(), "");
  EXPECT_TRUE(j[1]["evidence"].is_array());
  EXPECT_EQ(j[1]["fix"].get<std::string>(), "");
  EXPECT_TRUE(j[1]["figures"].is_object());
}

TEST(Finding, JsonReadsBackWhatItWrote) {
  Finding undecided{Severity::kInfo, "straggler",         "rank 3 is late",   "rank 3",
                    {"noise: 0.13"}, "rerun with -n 200", {{"late_us", 1900}}};
  undecided.decided = false;
  undecided.element = "node";
  undecided.nodes = {"node-3"};
  for (const Finding& f : {Problem(), undecided}) {
    const Finding back = FindingFromJson(FindingJson(f));
    EXPECT_EQ(FindingJson(back), FindingJson(f));
  }
  // A version 1 finding (no element, no nodes) reads as one that says neither.
  auto v1 = FindingJson(undecided);
  v1.erase("element");
  v1.erase("nodes");
  EXPECT_EQ(FindingFromJson(v1).element, "");
  EXPECT_TRUE(FindingFromJson(v1).nodes.empty());
  auto bad = FindingJson(Problem());
  bad["severity"] = "FAIL";
  EXPECT_THROW(FindingFromJson(bad), UsageError);
  bad.erase("severity");
  EXPECT_THROW(FindingFromJson(bad), nlohmann::json::exception);
}

}  // namespace
}  // namespace fabricscope
