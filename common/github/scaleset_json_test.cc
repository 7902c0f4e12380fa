#include "common/github/scaleset_json.h"

#include <gtest/gtest.h>

#include "common/json.h"

namespace runpool::github {
namespace {

Json::Value doc(const std::string& text) { return parse_json(text, "test"); }

TEST(ScaleSetJson, ReadsASetWithOptionalPartsAbsent) {
  ScaleSet s = parse_scale_set(doc(R"({"id":3,"name":"rp"})"), "set");
  EXPECT_EQ(s.id, 3);
  EXPECT_TRUE(s.labels.empty());
  EXPECT_FALSE(s.created_on);
  EXPECT_FALSE(s.statistics);
  EXPECT_FALSE(s.runner_setting.disable_update);

  ScaleSet full = parse_scale_set(
      doc(R"({"id":3,"name":"rp","labels":[{"name":"a"}],"RunnerSetting":{"isElastic":true},)"
          R"("createdOn":"2026-05-01T10:00:00Z","statistics":{"totalIdleRunners":2}})"),
      "set");
  EXPECT_EQ(full.labels[0].type, "");
  EXPECT_TRUE(full.runner_setting.is_elastic);
  EXPECT_TRUE(full.created_on);
  EXPECT_EQ(full.statistics->total_idle_runners, 2);
}

TEST(ScaleSetJson, RefusesWrongTypesWithoutQuotingValues) {
  for (const char* text : {R"({"id":3})", R"({"id":3,"name":"rp","labels":{}})",
                           R"({"id":3,"name":"rp","RunnerSetting":{"ephemeral":"yes"}})",
                           R"({"id":3,"name":"rp","statistics":{"totalAssignedJobs":1.5}})",
                           R"({"id":3,"name":"rp","statistics":[]})"}) {
    EXPECT_THROW(parse_scale_set(doc(text), "set"), JsonError) << text;
  }
  try {
    parse_message_session(doc(R"({"sessionId":"s","messageQueueUrl":"u","messageQueueAccessToken":"TOKEN-X"})"), "s");
    FAIL();
  } catch (const JsonError& e) {
    EXPECT_EQ(std::string(e.what()).find("TOKEN-X"), std::string::npos);
  }
  EXPECT_THROW(parse_message_session(doc(R"({"sessionId":"s","messageQueueUrl":"https://q"})"), "s"), JsonError);
  EXPECT_THROW(parse_scale_set_jit_config(doc(R"({"encodedJITConfig":"x"})"), "j"), JsonError);
  EXPECT_THROW(parse_scale_set_jit_config(doc(R"({"runner":{"id":1,"name":"r"},"encodedJITConfig":""})"), "j"),
               JsonError);
}

TEST(ScaleSetJson, JobMessagesOfUnknownTypeAreSkippedNotErrors) {
  Json::Value e = doc(R"({"messageId":5,"messageType":"RunnerScaleSetJobMessages"})");
  e["body"] = R"([{"messageType":"JobAssigned","runnerRequestId":1},{"messageType":"Future","x":[]}])";
  ScaleSetMessage m = parse_scale_set_message(e, "m");
  ASSERT_EQ(m.jobs.size(), 1u);
  EXPECT_EQ(m.jobs[0].type, JobMessageType::kJobAssigned);
  EXPECT_EQ(m.skipped, 1);
  EXPECT_FALSE(m.statistics);
  EXPECT_THROW(parse_job_message(doc(R"({"messageType":"Future","runnerRequestId":1})"), "j"), JsonError);
  EXPECT_EQ(to_string(JobMessageType::kJobCompleted), "JobCompleted");
}

TEST(ScaleSetJson, TimesThatAreNotTimesAreUnset) {
  JobMessage j = parse_job_message(
      doc(R"({"messageType":"JobCompleted","runnerRequestId":1,"finishTime":"yesterday","queueTime":"2026-05-01T10:00:00+02:00"})"),
      "j");
  EXPECT_FALSE(j.finish_time);
  EXPECT_EQ(*j.queue_time, WallTime{std::chrono::seconds(1777622400)});
  EXPECT_THROW(parse_job_message(doc(R"({"messageType":"JobCompleted","runnerRequestId":1,"finishTime":5})"), "j"),
               JsonError);
}

TEST(ScaleSetJson, WritesUpdatesPartially) {
  EXPECT_EQ(write_json(scale_set_update_json({})), "{}");
  ScaleSetUpdate u;
  u.labels = std::vector<ScaleSetLabel>{{"", "x"}};
  u.ephemeral = true;
  EXPECT_EQ(write_json(scale_set_update_json(u)),
            R"({"RunnerSetting":{"ephemeral":true},"labels":[{"name":"x","type":"System"}]})");
  u.labels = std::vector<ScaleSetLabel>{};
  EXPECT_THROW(scale_set_update_json(u), std::invalid_argument);
  ScaleSetUpdate unnamed;
  unnamed.name = "";
  EXPECT_THROW(scale_set_update_json(unnamed), std::invalid_argument);
}

}  // namespace
}  // namespace runpool::github
