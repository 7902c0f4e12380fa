// The agent's wake-up queue on a real local-cloud instance: with record polls a minute apart, an
// assignment followed by a wake-up message (what runpoolctl sends) is served within seconds; the
// agent found its queue (made after it started) and consumed the wake-up.
#include <gtest/gtest.h>

#include "common/aws/sqs.h"
#include "common/pool/wake_queue.h"
#include "tests/support/agent_cloud.h"

namespace runpool::agent::testing {
namespace {

TEST(AgentWake, AnAssignmentIsSeenAtTheWakeUpNotAtTheNextPoll) {
  AgentCloud env;
  auto& cloud = env.cloud();
  CurlHttpClient http;
  aws::StaticCredentialsProvider creds(cloud.controller_credentials());
  aws::AwsCaller caller(http, creds, system_clock(),
                        aws::ServiceSettings{"sqs", cloud.sqs(), cloud.region(), RetryPolicy{}, 30s});
  aws::SqsClient sqs(caller);

  // Every record poll a minute apart: only the wake-up can make it answer within seconds.
  const std::string id = env.launch(
      {.extra_config = "idle_poll_interval = 60s\nassignment_poll_interval = 60s\nboot_grace = 5m\n"});

  // Its queue, as runpoolctl makes it at launch (here a little later: the agent looks again).
  const std::string name = *pool::wake_queue_name(AgentCloud::kPool, id);
  const std::string url = sqs.create_queue(name, {{"MessageRetentionPeriod", "60"}});
  ASSERT_TRUE(eventually([&] { return env.console(id).find("listening for wake-ups on " + name) != std::string::npos; },
                         30s))
      << env.console(id);
  std::this_thread::sleep_for(2s);  // past its first look at the (still missing) record

  env.write_launched_record(id, "run-wake-1");
  const auto woken = std::chrono::steady_clock::now();
  sqs.send_message(url, "wake");
  env.wait_registered_and_mark_running(id, 1, 40s);
  EXPECT_LT(std::chrono::steady_clock::now() - woken, 30s) << "not at the next poll, a minute later";
  EXPECT_TRUE(eventually([&] { return sqs.get_queue_attributes(url).approximate_number_of_messages.value_or(1) == 0; },
                         10s))
      << "the wake-up was consumed";
}

}  // namespace
}  // namespace runpool::agent::testing
