// The scale-set client against the local cloud's stand-in of GitHub's Actions service
// (tests/localcloud/github, "Runner scale sets"): discovery with a PAT, a set's life, a session
// and its queue, one job from JobAvailable to a JIT runner, conflicts, an expired queue token and
// admin token, injected faults, and a set deleted behind the client's back.
#include <chrono>
#include <memory>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "common/github/actions_service.h"
#include "common/github/message_session.h"
#include "common/github/scaleset_client.h"
#include "tests/support/local_cloud.h"
#include "tests/support/scale_set_stack.h"

namespace runpool::github {
namespace {

using runpool::testing::LocalCloud;
using runpool::testing::ScaleSetStack;
using namespace std::chrono_literals;
using std::chrono::steady_clock;

const std::string kOwner = "ss-acme";
const std::string kPat = "ghp_scaleset_integration_0123";

class ScaleSetIntegration : public ::testing::Test {
 protected:
  ScaleSetIntegration() : cloud_(LocalCloud::shared()) {}
  void SetUp() override {
    Json::Value pat;
    pat["token"] = kPat;
    pat["owners"].append(kOwner);
    cloud_.control("POST", "/_control/github/pats", pat);
    Json::Value settings;
    settings["scaleSetPollMs"] = 500;  // held polls answer 202 quickly
    settings["scaleSetSessionIdleMs"] = 8000;
    settings["scaleSetAssignment"] = "acquire";  // JobAvailable, then acquirejobs (GHES's flow)
    cloud_.control("POST", "/_control/github/settings", settings);
    stack_ = std::make_unique<ScaleSetStack>(cloud_, Secret(kPat), kOwner);
  }
  void TearDown() override {
    cloud_.control("DELETE", "/_control/github/scalesets/faults");
    Json::Value defaults;
    defaults["scaleSetPollMs"] = 3000;
    defaults["scaleSetAssignment"] = "service";
    cloud_.control("POST", "/_control/github/settings", defaults);
  }

  ScaleSet create_set(const std::string& name) {
    ScaleSetSpec spec;
    spec.name = name;
    spec.labels = {{"System", name}};
    return stack_->client.create_scale_set(spec);
  }
  void queue_job(const std::string& label) {
    Json::Value job;
    job["label"] = label;
    job["owner"] = kOwner;
    job["repo"] = "app";
    job["durationMs"] = 200;
    cloud_.control("POST", "/_control/github/jobs", job);
  }
  void fault(const std::string& operation, const Json::Value& status, int retry_after = 0) {
    Json::Value f;
    f["operation"] = operation;
    f["status"] = status;
    f["retryAfterSeconds"] = retry_after;
    cloud_.control("POST", "/_control/github/scalesets/faults", f);
  }

  // Polls (acknowledging every envelope) until a job message of `type` comes; bounded.
  std::optional<JobMessage> wait_for(MessageSession& session, JobMessageType type,
                                     std::optional<ScaleSetStatistics>* stats = nullptr) {
    auto deadline = steady_clock::now() + 15s;
    while (steady_clock::now() < deadline) {
      auto message = session.get_message(last_message_id_, 5);
      if (!message) continue;
      EXPECT_GT(message->message_id, last_message_id_);
      last_message_id_ = message->message_id;
      session.delete_message(message->message_id);
      for (const JobMessage& j : message->jobs) {
        if (j.type != type) continue;
        if (stats) *stats = message->statistics;
        return j;
      }
    }
    return std::nullopt;
  }

  LocalCloud& cloud_;
  std::unique_ptr<ScaleSetStack> stack_;
  int64_t last_message_id_ = 0;
};

TEST_F(ScaleSetIntegration, AJobFromTheQueueToAJitRunner) {
  ScaleSetClient& client = stack_->client;
  auto group = client.get_runner_group("default");
  ASSERT_TRUE(group);
  EXPECT_EQ(group->id, 1);
  EXPECT_TRUE(group->is_default);
  EXPECT_EQ(stack_->auth.discoveries(), 1);

  const std::string name = "rp-ss-flow";
  EXPECT_FALSE(client.get_scale_set(group->id, name));
  ScaleSet set = create_set(name);
  EXPECT_GT(set.id, 0);
  EXPECT_EQ(set.runner_group_name, "Default");
  EXPECT_TRUE(set.runner_setting.disable_update);
  EXPECT_THROW(create_set(name), ScaleSetExistsError);
  EXPECT_EQ(client.get_scale_set(group->id, name)->id, set.id);
  ScaleSetUpdate relabel;
  relabel.labels = std::vector<ScaleSetLabel>{{"System", name}, {"", "linux-x64"}};
  ScaleSet updated = client.update_scale_set(set.id, relabel);
  EXPECT_EQ(updated.labels.size(), 2u);
  EXPECT_EQ(updated.name, name);
  EXPECT_EQ(client.get_scale_set_by_id(set.id)->labels.size(), 2u);

  MessageSession session(client, set.id, "host-1", &stack_->queue_caller);
  EXPECT_THROW((MessageSession{client, set.id, "host-2"}), SessionConflictError);

  queue_job(name);
  auto available = wait_for(session, JobMessageType::kJobAvailable);
  ASSERT_TRUE(available) << "no JobAvailable";
  EXPECT_EQ(available->owner_name, kOwner);
  EXPECT_EQ(available->repository_name, "app");
  EXPECT_EQ(available->request_labels, std::vector<std::string>{name});
  EXPECT_TRUE(available->queue_time);
  EXPECT_FALSE(available->acquire_job_url.empty());

  EXPECT_EQ(session.acquire_jobs({available->runner_request_id}), std::vector<int64_t>{available->runner_request_id});
  std::optional<ScaleSetStatistics> stats;
  auto assigned = wait_for(session, JobMessageType::kJobAssigned, &stats);
  ASSERT_TRUE(assigned) << "no JobAssigned";
  EXPECT_EQ(assigned->runner_request_id, available->runner_request_id);
  EXPECT_TRUE(assigned->scale_set_assign_time);
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->total_assigned_jobs, 1);

  ScaleSetJitConfig jit = client.generate_jit_config(set.id, "rp-ss-runner-1");
  EXPECT_GT(jit.runner.id, 0);
  EXPECT_EQ(jit.runner.scale_set_id, set.id);
  EXPECT_FALSE(jit.encoded_jit_config.empty());
  EXPECT_THROW(client.generate_jit_config(set.id, "rp-ss-runner-1"), RunnerNameTakenError);
  EXPECT_EQ(client.get_runner(jit.runner.id)->name, "rp-ss-runner-1");
  EXPECT_EQ(client.get_runner_by_name("rp-ss-runner-1")->id, jit.runner.id);
  EXPECT_EQ(client.delete_runner(jit.runner.id), DeleteOutcome::kDeleted);
  EXPECT_FALSE(client.get_runner(jit.runner.id));

  // The queue token expires: the next poll refreshes the session and goes on.
  cloud_.control("POST", "/_control/github/scalesets/" + std::to_string(set.id) + "/expire-queue-token");
  std::string old_token = session.info().message_queue_token.reveal();
  session.get_message(last_message_id_, 5);
  EXPECT_EQ(session.refreshes(), 1);
  EXPECT_NE(session.info().message_queue_token.reveal(), old_token);

  EXPECT_EQ(session.close(), DeleteOutcome::kDeleted);
  EXPECT_EQ(session.close(), DeleteOutcome::kAlreadyGone);
  EXPECT_EQ(client.delete_scale_set(set.id), DeleteOutcome::kDeleted);
  EXPECT_FALSE(client.get_scale_set_by_id(set.id));
  EXPECT_EQ(client.delete_scale_set(set.id), DeleteOutcome::kAlreadyGone);
  EXPECT_THROW((MessageSession{client, set.id, "host-1"}), ScaleSetGoneError);
  EXPECT_THROW(client.generate_jit_config(set.id, "rp-ss-runner-2"), ScaleSetGoneError);
  ScaleSetUpdate rename;
  rename.name = "x";
  EXPECT_THROW(client.update_scale_set(set.id, rename), ScaleSetGoneError);
}

TEST_F(ScaleSetIntegration, AnOrphanedSessionIsWaitedOut) {
  ScaleSet set = create_set("rp-ss-orphan");
  Json::Value ms;
  ms["ms"] = 1500;
  cloud_.control("POST", "/_control/github/scalesets/" + std::to_string(set.id) + "/session-conflict", ms);
  EXPECT_THROW((MessageSession{stack_->client, set.id, "host-1"}), SessionConflictError);
  std::unique_ptr<MessageSession> session;
  auto deadline = steady_clock::now() + 10s;
  while (!session && steady_clock::now() < deadline) {
    try {
      session = std::make_unique<MessageSession>(stack_->client, set.id, "host-1");
    } catch (const SessionConflictError&) {
      std::this_thread::sleep_for(250ms);
    }
  }
  ASSERT_TRUE(session) << "the orphaned session never lapsed";
  session->close();
  EXPECT_EQ(stack_->client.delete_scale_set(set.id), DeleteOutcome::kDeleted);
}

TEST_F(ScaleSetIntegration, ASetDeletedBehindTheClientsBackIsGone) {
  ScaleSet set = create_set("rp-ss-vanish");
  MessageSession session(stack_->client, set.id, "host-1");
  cloud_.control("DELETE", "/_control/github/scalesets/" + std::to_string(set.id));
  EXPECT_THROW(session.get_message(0, 1), ScaleSetGoneError);
  EXPECT_FALSE(stack_->client.get_scale_set_by_id(set.id));
}

TEST_F(ScaleSetIntegration, FaultsAreRetriedAndAnExpiredAdminTokenRediscovered) {
  ScaleSetClient& client = stack_->client;
  fault("createScaleSet", 503, 0);
  fault("getScaleSetById", 429, 1);
  fault("getScaleSetById", 502);
  auto start = steady_clock::now();
  ScaleSet set = create_set("rp-ss-faults");
  EXPECT_TRUE(client.get_scale_set_by_id(set.id));
  EXPECT_GE(steady_clock::now() - start, 1s);  // Retry-After honoured

  cloud_.control("POST", "/_control/github/scalesets/expire-admin-tokens");
  EXPECT_TRUE(client.get_scale_set_by_id(set.id));
  EXPECT_EQ(stack_->auth.discoveries(), 2);

  MessageSession session(client, set.id, "host-1");
  fault("getMessage", "empty");
  EXPECT_THROW(session.get_message(0, 1), GithubError);
  fault("getMessage", 500);
  EXPECT_FALSE(session.get_message(0, 1));  // retried, then the held poll's 202

  session.close();
  EXPECT_EQ(client.delete_scale_set(set.id), DeleteOutcome::kDeleted);
}

}  // namespace
}  // namespace runpool::github
