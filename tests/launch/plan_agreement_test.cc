// What the processes of a job compare before they measure (launch/plan_agreement.h).
#include "launch/plan_agreement.h"

#include <gtest/gtest.h>

namespace fabricscope {
namespace {

ProcessPlan Plan(const std::string& who, std::vector<PlanSetting> settings) {
  return DecodePlan(EncodePlan(who, settings));
}

TEST(PlanAgreementTest, EncodedPlansDecodeToTheSameSettings) {
  const std::vector<PlanSetting> settings = {
      {"-e/--maxbytes", "4194304"}, {"NCCL_DEBUG", "INFO", false}, {"ODD", "a\nb"}};
  const ProcessPlan plan = Plan("process 3 (rank 3 on n3)", settings);
  EXPECT_EQ(plan.who, "process 3 (rank 3 on n3)");
  ASSERT_EQ(plan.settings.size(), 3u);
  EXPECT_EQ(plan.settings[0].name, "-e/--maxbytes");
  EXPECT_EQ(plan.settings[0].value, "4194304");
  EXPECT_TRUE(plan.settings[0].shapes_run);
  EXPECT_FALSE(plan.settings[1].shapes_run);
  EXPECT_EQ(plan.settings[2].value, "a\\nb");  // one line, the newline shown
}

TEST(PlanAgreementTest, AgreeingPlansGiveNoVerdict) {
  const std::vector<PlanSetting> same = {{"-n/--iters", "20"}};
  const PlanVerdict v = ComparePlans({Plan("p0", same), Plan("p1", same)});
  EXPECT_TRUE(v.error.empty());
  EXPECT_TRUE(v.warning.empty());
}

TEST(PlanAgreementTest, TheOddProcessIsNamedAfterTheMajority) {
  const PlanVerdict v =
      ComparePlans({Plan("p0", {{"-n/--iters", "20"}}), Plan("p1", {{"-n/--iters", "20"}}),
                    Plan("p2", {{"-n/--iters", "5"}})});
  EXPECT_NE(v.error.find("-n/--iters is 20 on p0, p1 but 5 on p2"), std::string::npos) << v.error;
}

TEST(PlanAgreementTest, ASettingOneProcessLacksIsUnsetThere) {
  const PlanVerdict v = ComparePlans(
      {Plan("p0", {{"NCCL_ALGO", "Ring"}}), Plan("p1", {}), Plan("p2", {{"NCCL_ALGO", "Ring"}})});
  EXPECT_NE(v.error.find("NCCL_ALGO is Ring on p0, p2 but (unset) on p1"), std::string::npos)
      << v.error;
}

TEST(PlanAgreementTest, LoggingVariablesAndTheTimeoutAreWarningsNotErrors) {
  const PlanVerdict v = ComparePlans(
      {Plan("p0", {{"NCCL_DEBUG", "WARN", VariableShapesRun("NCCL_DEBUG")}, {"-T", "5", false}}),
       Plan("p1", {{"NCCL_DEBUG", "INFO", VariableShapesRun("NCCL_DEBUG")}, {"-T", "9", false}})});
  EXPECT_TRUE(v.error.empty()) << v.error;
  EXPECT_NE(v.warning.find("NCCL_DEBUG is INFO on p1 but WARN on p0"), std::string::npos)
      << v.warning;
  EXPECT_NE(v.warning.find("-T is 5 on p0 but 9 on p1"), std::string::npos) << v.warning;
}

TEST(PlanAgreementTest, AThousandProcessesNameFourAndCountTheRest) {
  std::vector<ProcessPlan> plans;
  for (int p = 0; p < 1000; ++p) {
    plans.push_back(Plan("p" + std::to_string(p), {{"-e/--maxbytes", p < 10 ? "4M" : "1M"}}));
  }
  const PlanVerdict v = ComparePlans(plans);
  EXPECT_NE(v.error.find("1M on p10, p11, p12, p13 and 986 more but 4M on p0, p1, p2, p3 and 6 "
                         "more"),
            std::string::npos)
      << v.error;
}

TEST(PlanAgreementTest, AnUnreadableLineIsKeptAsASettingThatDiffers) {
  const std::string text = "p1\ngarbage line\n";
  const ProcessPlan odd = DecodePlan({text.begin(), text.end()});
  ASSERT_EQ(odd.settings.size(), 1u);
  const PlanVerdict v = ComparePlans({Plan("p0", {}), odd});
  EXPECT_NE(v.error.find("garbage line is (unset) on p0 but (unreadable) on p1"), std::string::npos)
      << v.error;
}

TEST(PlanAgreementTest, WhatOnlyLogsOrNamesAnInterfaceDoesNotShapeTheRun) {
  EXPECT_FALSE(VariableShapesRun("NCCL_DEBUG_SUBSYS"));
  EXPECT_FALSE(VariableShapesRun("NCCL_SOCKET_IFNAME"));
  EXPECT_FALSE(VariableShapesRun("NCCL_INSPECTOR_DUMP_DIR"));
  EXPECT_TRUE(VariableShapesRun("NCCL_ALGO"));
  EXPECT_TRUE(VariableShapesRun("NCCL_IB_HCA"));
}

}  // namespace
}  // namespace fabricscope
