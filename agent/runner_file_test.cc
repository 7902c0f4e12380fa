#include "agent/runner_file.h"

#include <gtest/gtest.h>

namespace runpool::agent {
namespace {

const std::string kBom = "\xEF\xBB\xBF";

TEST(RunnerFile, ReadsTheRealRunnersFileWithBomAndCamelCase) {
  std::string text = kBom + R"({
  "agentId": 42,
  "agentName": "pool-i-0abc-g3",
  "poolId": 1,
  "poolName": "Default",
  "serverUrl": "http://127.0.0.1:9/_services/pipelines",
  "gitHubUrl": "http://127.0.0.1:9/o/r",
  "workFolder": "_work"
})";
  RunnerIdentity id = parse_runner_file(text);
  EXPECT_EQ(id.id, 42);
  EXPECT_EQ(id.name, "pool-i-0abc-g3");
  EXPECT_EQ(id.server_url, "http://127.0.0.1:9/_services/pipelines");
}

// A JIT configuration's .runner says ephemeral; configuration writes the setting only when true.
TEST(RunnerFile, ReadsWhetherTheRunnerIsEphemeral) {
  EXPECT_TRUE(parse_runner_file(R"({"agentId": 7, "agentName": "x", "ephemeral": true})").ephemeral);
  EXPECT_TRUE(parse_runner_file(R"({"AgentId": 7, "AgentName": "x", "Ephemeral": true})").ephemeral);
  EXPECT_FALSE(parse_runner_file(R"({"agentId": 7, "agentName": "x"})").ephemeral);
  EXPECT_FALSE(parse_runner_file(R"({"agentId": 7, "agentName": "x", "ephemeral": "yes"})").ephemeral);
}

// disableUpdate: config.sh's --disableupdate, or GitHub's choice in a JIT configuration.
TEST(RunnerFile, ReadsWhetherTheRunnerMayUpdateItself) {
  EXPECT_TRUE(parse_runner_file(R"({"agentId": 7, "agentName": "x", "disableUpdate": true})").disable_update);
  EXPECT_TRUE(parse_runner_file(R"({"AgentId": 7, "AgentName": "x", "DisableUpdate": true})").disable_update);
  EXPECT_FALSE(parse_runner_file(R"({"agentId": 7, "agentName": "x", "ephemeral": true})").disable_update);
  EXPECT_FALSE(parse_runner_file(R"({"agentId": 7, "agentName": "x", "disableUpdate": 1})").disable_update);
}

TEST(RunnerFile, AcceptsPascalCaseNoBomAndQuotedIds) {
  EXPECT_EQ(parse_runner_file(R"({"AgentId": 7, "AgentName": "x"})").id, 7);
  EXPECT_EQ(parse_runner_file(R"({"agentId": "8", "agentName": "x"})").id, 8);
  EXPECT_EQ(parse_runner_file(R"({"agentId": 9, "agentName": "y"})").server_url, "");
}

TEST(RunnerFile, RefusesGarbageAndMissingOrMistypedFields) {
  for (const std::string& bad : {std::string(""), kBom, std::string("not json"), kBom + "{", std::string("[1,2]"),
                                std::string("\"x\""), std::string("{}"), std::string(R"({"agentName":"x"})"),
                                std::string(R"({"agentId":1})"), std::string(R"({"agentId":"1a","agentName":"x"})"),
                                std::string(R"({"agentId":1.5,"agentName":"x"})"),
                                std::string(R"({"agentId":0,"agentName":"x"})"),
                                std::string(R"({"agentId":-3,"agentName":"x"})"),
                                std::string(R"({"agentId":1,"agentName":""})"),
                                std::string(R"({"agentId":1,"agentName":5})"),
                                std::string(R"({"agentId":null,"agentName":"x"})"),
                                std::string(R"({"agentId":99999999999999999999999,"agentName":"x"})"),
                                std::string("\xEF\xBB{\"agentId\":1}")}) {
    EXPECT_THROW(parse_runner_file(bad), RunnerFileError) << bad;
  }
}

}  // namespace
}  // namespace runpool::agent
