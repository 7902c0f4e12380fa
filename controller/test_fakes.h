// In-memory stand-ins for the controller's unit tests: the pool queues (with SQS's visibility
// semantics), EC2 (CreateFleet with scripted capacity and ClientToken replay), GitHub (token
// counters), a clock whose sleeps advance time and let a simulated agent act, and a state table
// wrapper that injects failures and races. Only tests include this.
#pragma once

#include <algorithm>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "common/aws/aws_error.h"
#include "common/aws/sqs.h"
#include "common/pool/memory_state_table.h"
#include "common/pool/pool_message.h"
#include "common/pool/transitions.h"
#include "common/pool/wake_queue.h"
#include "controller/context.h"
#include "controller/provision.h"

namespace runpool::controller::testing {

// A FakeClock whose sleep_for first runs `on_sleep` (the world moving on while we wait).
class TickingClock final : public Clock {
 public:
  WallTime now() const override { return clock.now(); }
  std::chrono::steady_clock::time_point steady_now() const override { return clock.steady_now(); }
  void sleep_for(Duration d) override {
    clock.sleep_for(d);
    ++sleeps;
    if (on_sleep) on_sleep();
  }
  FakeClock clock{from_epoch_ms(1'800'000'000'000)};
  std::function<void()> on_sleep;
  int sleeps = 0;
};

// The pool queues and the agents' wake-up queues in memory, held to SqsPoolQueue on SQS by the
// contract suite (tests/integration/pool_queue_test.cc). Differences from SQS, kept on purpose:
// - receive never waits: an empty queue answers at once (a long poll would have to move the fake
//   clock, and with it the simulated agents);
// - messages come back in the order sent (SQS: best effort), and depth() is exact (SQS:
//   approximate; local-aws-sqs also counts messages in flight in `visible`);
// - every class has a queue (SQS: QueueDoesNotExist for a class `init` did not create);
// - a receipt of an earlier receive, the message received again since, neither deletes it nor
//   makes it visible (SQS: the call succeeds but "the message might not be deleted"; local-aws-sqs
//   does both) — the pessimistic choice, so the next reader's drop is what unit tests see;
// - a deleted wake-up queue is gone at once (SQS may list it, and take messages, for a minute).
// Where local-aws-sqs departs from SQS's documentation, this follows the documentation: in-flight
// messages are not counted visible, and make_visible of a message no longer in flight is
// MessageNotInflight (local-aws-sqs accepts it).
class MemoryQueue final : public PoolQueue {
 public:
  struct Msg {
    std::string id, body, receipt;
    int64_t hidden_until = 0;
  };
  // `pool` names the wake-up queues ("<pool>-wake-<instance id>"); test_settings() is pool "ci".
  explicit MemoryQueue(Clock& clock, std::string pool = "ci") : clock_(clock), pool_(std::move(pool)) {}

  std::vector<QueuedMessage> receive(const std::string& c, int max, Duration, Duration visibility) override {
    ++receives;
    if (fail_receive) throw aws::AwsError("sqs", "ReceiveMessage", 500, "InternalFailure", "injected");
    // As SqsPoolQueue asks SQS: 1..10 messages, hidden for whole seconds, at least one.
    max = std::clamp(max, 1, 10);
    const int64_t hidden_ms = std::max<int64_t>(1, visibility.count() / 1000) * 1000;
    std::vector<QueuedMessage> out;
    for (auto& m : queues[c]) {
      if (static_cast<int>(out.size()) >= max) break;
      if (m.hidden_until > now()) continue;
      m.receipt = "rh-" + std::to_string(++counter_);
      receipts_[m.receipt] = {c, m.id};
      m.hidden_until = now() + hidden_ms;
      out.push_back({m.id, m.receipt, m.body, pool::parse_pool_message(m.body)});
    }
    return out;
  }
  void remove(const std::string& c, const std::string& receipt) override {
    ++removes;
    issued(c, receipt, "DeleteMessage");
    std::erase_if(queues[c], [&](const Msg& m) { return m.receipt == receipt; });
  }
  // As SqsPoolQueue: a receipt that cannot be removed is skipped, never thrown.
  void remove_many(const std::string& c, const std::vector<std::string>& receipts) override {
    ++batch_removes;
    for (const auto& r : receipts) {
      try {
        remove(c, r);
      } catch (const aws::AwsError&) {
      }
    }
  }
  // SQS refuses a receipt it never issued, one whose message is deleted (ReceiptHandleIsInvalid)
  // and a message no longer in flight (MessageNotInflight).
  void make_visible(const std::string& c, const std::string& receipt) override {
    const std::string& id = issued(c, receipt, "ChangeMessageVisibility");
    auto& q = queues[c];
    auto it = std::find_if(q.begin(), q.end(), [&](const Msg& m) { return m.id == id; });
    if (it == q.end()) {
      throw aws::AwsError("sqs", "ChangeMessageVisibility", 404, "ReceiptHandleIsInvalid", "its message is deleted");
    }
    if (it->receipt != receipt) return;  // received again since: this receipt no longer counts
    if (it->hidden_until <= now()) {
      throw aws::AwsError("sqs", "ChangeMessageVisibility", 400, "MessageNotInflight", "the message is not in flight");
    }
    it->hidden_until = 0;
  }
  void advertise(const std::string& c, const pool::PoolMessage& message) override {
    if (fail_advertise) throw aws::AwsError("sqs", "SendMessage", 500, "InternalFailure", "injected");
    send(c, pool::pool_message_body(message));
  }
  QueueDepth depth(const std::string& c) override {
    QueueDepth d;
    for (const auto& m : queues[c]) (m.hidden_until > now() ? d.in_flight : d.visible)++;
    return d;
  }
  // Wake-up queues are named and refused as on SQS: created once per instance (CreateQueue is
  // idempotent), and a wake-up for an instance without one is QueueDoesNotExist.
  void create_wake_queue(const std::string& instance_id) override {
    if (fail_wake) throw aws::AwsError("sqs", "CreateQueue", 500, "InternalFailure", "injected");
    auto url = wake_url(instance_id);
    if (!url) throw std::runtime_error("no wake-up queue name for " + instance_id);
    if (std::find(wake_urls.begin(), wake_urls.end(), *url) == wake_urls.end()) wake_urls.push_back(*url);
  }
  void wake(const std::string& instance_id) override {
    ++wake_calls;
    auto url = wake_url(instance_id);
    if (!url) return;  // as SqsPoolQueue: no queue can have been made for it
    if (fail_wake || std::find(wake_urls.begin(), wake_urls.end(), *url) == wake_urls.end()) {
      throw aws::QueueDoesNotExistError(
          aws::AwsError("sqs", "SendMessage", 400, "QueueDoesNotExist", "The specified queue does not exist."));
    }
    wakes.push_back(instance_id);
  }
  std::vector<std::string> wake_queue_urls() override { return wake_urls; }
  void delete_queue(const std::string& url) override {
    deleted_queues.push_back(url);
    std::erase(wake_urls, url);
  }

  void send(const std::string& c, const std::string& body) { queues[c].push_back({"m-" + std::to_string(++counter_), body, "", 0}); }
  std::vector<std::string> bodies(const std::string& c) {
    std::vector<std::string> out;
    for (const auto& m : queues[c]) out.push_back(m.body);
    return out;
  }
  bool all_visible() {
    for (auto& [c, q] : queues) {
      for (auto& m : q) {
        if (m.hidden_until > now()) return false;
      }
    }
    return true;
  }
  // The URL SQS would give instance_id's wake-up queue; nullopt when its name is too long.
  std::optional<std::string> wake_url(const std::string& instance_id) const {
    auto name = pool::wake_queue_name(pool_, instance_id);
    if (!name) return std::nullopt;
    return "http://sqs.local/000000000000/" + *name;
  }

  std::map<std::string, std::deque<Msg>> queues;
  int receives = 0, removes = 0, batch_removes = 0;
  bool fail_advertise = false, fail_receive = false, fail_wake = false;
  int wake_calls = 0;                       // wake() calls, failed ones included
  std::vector<std::string> wakes;           // instance ids, in the order woken
  std::vector<std::string> wake_urls;       // what wake_queue_urls() lists
  std::vector<std::string> deleted_queues;  // delete_queue() calls

 private:
  int64_t now() const { return to_epoch_ms(clock_.now()); }
  // The id of the message `receipt` was issued for; ReceiptHandleIsInvalid for one this class's
  // queue never issued.
  const std::string& issued(const std::string& c, const std::string& receipt, const char* operation) const {
    auto it = receipts_.find(receipt);
    if (it == receipts_.end() || it->second.first != c) {
      throw aws::AwsError("sqs", operation, 400, "ReceiptHandleIsInvalid", "not a receipt of queue " + c);
    }
    return it->second.second;
  }
  Clock& clock_;
  std::string pool_;
  int counter_ = 0;
  std::map<std::string, std::pair<std::string, std::string>> receipts_;  // every receipt issued → class, message id
};

class FakeCompute final : public Compute {
 public:
  // How many more launches of (type, "spot"/"on-demand") succeed; absent: unlimited.
  std::map<std::pair<std::string, std::string>, int> capacity;
  // At most this many instances per CreateFleet call (partial fulfilment); 0: no limit.
  int per_call_limit = 0;
  std::optional<aws::AwsError> fail_next;

  aws::CreateFleetResult create_fleet(const aws::CreateFleetRequest& r) override {
    requests.push_back(r);
    if (fail_next) {
      auto e = *fail_next;
      fail_next.reset();
      throw e;
    }
    if (auto it = by_token.find(r.client_token); it != by_token.end()) return it->second;  // replay
    aws::CreateFleetResult out;
    out.fleet_id = "fleet-" + std::to_string(requests.size());
    int64_t left = r.total_target_capacity;
    std::string usage = r.default_target_capacity_type;
    for (const auto& ov : r.launch_template_configs.at(0).overrides) {
      while (left > 0 && (per_call_limit == 0 || r.total_target_capacity - left < per_call_limit)) {
        auto cap = capacity.find({ov.instance_type, usage});
        if (cap != capacity.end() && cap->second <= 0) break;
        if (cap != capacity.end()) --cap->second;
        char id[32];
        std::snprintf(id, sizeof id, "i-%017x", ++counter_);
        launched.push_back(id);
        tags[id] = r.tag_specifications.empty() ? std::vector<aws::Tag>{} : r.tag_specifications[0].tags;
        if (out.instances.empty() || out.instances.back().instance_type != ov.instance_type) {
          out.instances.push_back({{}, ov.instance_type, usage, ov.subnet_id});
        }
        out.instances.back().instance_ids.push_back(id);
        --left;
      }
    }
    if (left > 0) out.errors.push_back({"InsufficientInstanceCapacity", "no capacity", usage, "", ""});
    by_token[r.client_token] = out;
    return out;
  }
  // As Ec2Compute: the ids in `protected_ids` (termination protection) are not terminated, the
  // others are, then TerminateError names the protected ones with EC2's error.
  void terminate(const std::vector<std::string>& ids) override {
    ++terminate_calls;
    if (fail_terminate) throw aws::AwsError("ec2", "TerminateInstances", 500, "InternalError", "injected");
    std::map<std::string, std::string> refused;
    for (const auto& id : ids) {
      if (!protected_ids.count(id)) {
        terminated.insert(id);
        continue;
      }
      refused[id] = aws::AwsError("ec2", "TerminateInstances", 400, "OperationNotPermitted",
                                  "The instance '" + id + "' may not be terminated. Modify its 'disableApiTermination' "
                                  "instance attribute and try again.")
                        .what();
    }
    if (!refused.empty()) throw TerminateError(std::move(refused));
  }
  std::vector<aws::Instance> describe(const std::vector<std::string>& ids) override {
    std::vector<aws::Instance> out;
    for (const auto& id : ids) {
      if (std::find(launched.begin(), launched.end(), id) == launched.end()) continue;
      aws::Instance i;
      i.instance_id = id;
      i.state = terminated.count(id) ? aws::InstanceState{48, "terminated"} : aws::InstanceState{16, "running"};
      out.push_back(i);
    }
    return out;
  }
  std::vector<aws::Instance> pool_instances() override { return describe(launched); }
  void tag_label(const std::vector<std::string>& ids, const std::string& label) override {
    ++tag_calls;
    if (fail_tag) throw aws::AwsError("ec2", "CreateTags", 500, "InternalError", "injected");
    for (const auto& id : ids) relabelled[id] = label;
  }
  int tag_calls = 0;
  bool fail_tag = false;
  std::map<std::string, std::string> relabelled;  // instance → the label tag_label() gave it

  std::vector<aws::CreateFleetRequest> requests;
  std::vector<std::string> launched;
  std::set<std::string> terminated;
  std::map<std::string, std::vector<aws::Tag>> tags;
  bool fail_terminate = false;
  std::set<std::string> protected_ids;  // termination protection: EC2 refuses to terminate these
  int terminate_calls = 0;

 private:
  std::map<std::string, aws::CreateFleetResult> by_token;
  unsigned counter_ = 0;
};

class FakeRunners final : public Runners {
 public:
  Secret registration_token() override {
    ++registration_tokens;
    ++requests["CreateRegistrationToken"];
    return Secret("reg-" + std::to_string(registration_tokens));
  }
  Secret remove_token() override {
    ++remove_tokens;
    ++requests["CreateRemoveToken"];
    if (fail_remove_token) throw std::runtime_error("GitHub is down");
    return Secret("rm-" + std::to_string(remove_tokens));
  }
  std::string registration_url() override { return url; }
  std::string url = "https://github.com/acme/app";  // where runners register (a test may switch repositories)
  std::vector<github::Runner> list() override {
    ++requests["ListRunners"];
    return {};
  }
  github::DeleteOutcome remove(int64_t) override {
    ++requests["DeleteRunner"];
    return github::DeleteOutcome::kDeleted;
  }
  bool remove_labels(int64_t id) override {
    ++requests["RemoveAllRunnerLabels"];
    unlabelled.push_back(id);
    if (fail_remove_labels) throw std::runtime_error("GitHub is down");
    return true;
  }
  std::vector<int64_t> unlabelled;  // runners whose labels a drain removed, in order
  bool fail_remove_labels = false;
  // One request a call: this GitHub never fails one to be retried.
  long requests_sent(const std::string& operation) override {
    long n = 0;
    for (const auto& [op, k] : requests) n += operation.empty() || op == operation ? k : 0;
    return n;
  }

  // Workflow runs by repository and status, and jobs by run id, as a test sets them.
  std::vector<github::WorkflowRun> workflow_runs(const std::string& repository, const std::string& status) override {
    ++requests["ListWorkflowRuns"];
    auto it = runs.find(repository + " " + status);
    return it == runs.end() ? std::vector<github::WorkflowRun>{} : it->second;
  }
  std::vector<github::WorkflowJob> run_jobs(const std::string&, int64_t run_id) override {
    ++requests["ListJobsForWorkflowRun"];
    auto it = jobs.find(run_id);
    return it == jobs.end() ? std::vector<github::WorkflowJob>{} : it->second;
  }
  std::map<std::string, std::vector<github::WorkflowRun>> runs;  // by "<owner/name> <status>"
  std::map<int64_t, std::vector<github::WorkflowJob>> jobs;
  // Job re-runs asked for, as "<owner/name> <job id>"; refuse_rerun: GitHub's 403 for each;
  // on_rerun: what GitHub does meanwhile (a lost answer: the re-run happens, the POST is refused).
  void rerun_job(const std::string& repository, int64_t job_id) override {
    ++requests["ReRunJobForWorkflowRun"];
    if (on_rerun) on_rerun();
    if (refuse_rerun) throw github::GithubError("ReRunJobForWorkflowRun", 403, "This workflow run is not completed yet.");
    reruns.push_back(repository + " " + std::to_string(job_id));
  }
  std::vector<std::string> reruns;
  bool refuse_rerun = false;
  std::function<void()> on_rerun;

  int registration_tokens = 0, remove_tokens = 0;
  bool fail_remove_token = false;
  std::map<std::string, long> requests;  // by operation
};

// A MemoryStateTable with hooks: a failing create, failing batch reads, and a `before_transition`
// callback (a competitor's write slipped in between our read and our write); it logs its reads.
struct HookedTableStorage {
  pool::MemoryStateTable inner;  // constructed before the wrapper that forwards to it
};
class HookedTable final : public HookedTableStorage, public pool::StateTableWrapper {
 public:
  HookedTable() : StateTableWrapper(inner) {}
  HookedTable(const HookedTable&) = delete;
  HookedTable& operator=(const HookedTable&) = delete;
  std::optional<pool::InstanceRecord> get(const std::string& id) override {
    reads.push_back("get " + id);
    return inner.get(id);
  }
  std::map<std::string, pool::InstanceRecord> get_many(const std::vector<std::string>& ids) override {
    reads.push_back("get_many " + std::to_string(ids.size()));
    if (pass_get_many > 0) {
      --pass_get_many;
    } else if (fail_get_many > 0) {
      --fail_get_many;
      throw aws::AwsError("dynamodb", "BatchGetItem", 500, "InternalServerError", "injected");
    }
    return inner.get_many(ids);
  }
  bool create(const pool::InstanceRecord& r) override {
    if (fail_create) throw aws::AwsError("dynamodb", "PutItem", 500, "InternalServerError", "injected");
    return inner.create(r);
  }
  bool transition(const std::string& id, const pool::Expect& e, const pool::LifecycleChange& c) override {
    if (before_transition) before_transition(id, e, c);
    bool ok = inner.transition(id, e, c);
    if (ok && lose_answer_once) {  // applied, but the answer was lost and the retry failed its condition
      lose_answer_once = false;
      return false;
    }
    return ok;
  }

  bool fail_create = false;
  int fail_get_many = 0;  // how many more get_many calls fail
  int pass_get_many = 0;  // how many get_many calls succeed before those failures
  std::vector<std::string> reads;  // "get <id>" and "get_many <number of ids>", in order
  bool lose_answer_once = false;
  std::function<void(const std::string&, const pool::Expect&, const pool::LifecycleChange&)> before_transition;
};

// What agents do, driven by the clock's ticks: heartbeat; report `registered` for a new
// assignment (created/claimed), `drained` when draining. Switch parts off to make them misbehave.
struct AgentSim {
  pool::StateTable& table;
  Clock& clock;
  bool register_ok = true;
  bool drain_ok = true;
  std::set<std::string> failing;  // these report failed
  std::set<std::string> silent;   // these say nothing (a dead agent)

  void tick() {
    std::vector<pool::InstanceRecord> all;
    table.scan([&](const pool::InstanceRecord& r) { all.push_back(r); });
    int64_t now = to_epoch_ms(clock.now());
    for (const auto& r : all) {
      if (r.state == pool::State::kTerminating || r.state == pool::State::kTerminated) continue;
      if (silent.count(r.instance_id)) continue;
      pool::AgentReport a;
      a.heartbeat_ms = now;
      a.generation = r.generation;
      if (failing.count(r.instance_id) && !pool::agent_reported(r, pool::AgentSignal::kFailed)) {
        a.signal = pool::AgentSignal::kFailed;
        a.signal_detail = "config.sh failed";
      } else if ((r.state == pool::State::kCreated || r.state == pool::State::kClaimed) && register_ok &&
                 !pool::agent_reported(r, pool::AgentSignal::kRegistered)) {
        a.signal = pool::AgentSignal::kRegistered;
        a.take_reg_token = true;
      } else if (r.state == pool::State::kDraining && drain_ok && !pool::agent_reported(r, pool::AgentSignal::kDrained)) {
        a.signal = pool::AgentSignal::kDrained;
        a.take_remove_token = true;
      }
      table.report(r.instance_id, a);
    }
  }
};

// The seal key pair of the tests' instances (common/pool/sealed_field.h), so a test can open what a
// claim or a drain wrote.
inline const pool::SealKeys& test_seal_keys() {
  static const pool::SealKeys keys = pool::make_seal_keys();
  return keys;
}

// An idle instance, as release leaves one: advertised in its class's queue.
inline pool::InstanceRecord idle_record(const std::string& id, int64_t now_ms, int64_t generation = 2,
                                        const std::string& cls = "small",
                                        pool::UsageClass usage = pool::UsageClass::kSpot,
                                        const std::string& type = "c7i.large") {
  pool::InstanceRecord r;
  r.instance_id = id;
  r.pool = "ci";
  r.state = pool::State::kIdle;
  r.generation = generation;
  r.resource_class = cls;
  r.usage_class = usage;
  r.instance_type = type;
  r.created_ms = now_ms - 600'000;
  r.state_since_ms = now_ms - 60'000;
  r.deadline_ms = now_ms + 3'600'000;
  r.heartbeat_ms = now_ms - 1'000;
  r.signal = pool::AgentSignal::kDrained;
  r.signal_generation = generation;
  r.seal_key = test_seal_keys().public_key;  // launched with sealed tokens
  return r;
}

// Settings of the tests' pool "ci": classes small (c7i.large, m7i.large) and large (m7i.2xlarge).
inline Settings test_settings() {
  Settings s;
  s.table = "runpool";
  s.pool = "ci";
  s.region = "us-east-1";
  s.github_owner = "acme/app";
  s.resource_classes = {{"small", {"c7i.large", "m7i.large"}}, {"large", {"m7i.2xlarge"}}};
  s.default_resource_class = "small";
  s.usage_class = pool::UsageClass::kSpot;
  s.on_demand_fallback = true;
  s.launch_template = "runpool-ci";
  s.spot_allocation_strategy = "price-capacity-optimized";
  s.poll_interval = std::chrono::milliseconds(500);
  s.provision_timeout = std::chrono::minutes(5);
  s.release_timeout = std::chrono::minutes(2);
  s.cancel_drain_wait = std::chrono::seconds(30);
  return s;
}

// Everything a command needs, in memory.
struct World {
  Settings settings = test_settings();
  TickingClock clock;
  HookedTable table;
  MemoryQueue queue{clock};
  FakeCompute compute;
  FakeRunners github;
  std::ostringstream out;
  std::atomic<bool> cancelled{false};
  AgentSim agents{table, clock, true, true, {}, {}};
  Context ctx{settings, clock, table, queue, compute, github, out, cancelled};

  World() {
    clock.on_sleep = [this] {
      if (agents_on) agents.tick();
      if (on_tick) on_tick();
    };
  }
  int64_t now() const { return to_epoch_ms(clock.now()); }

  // An idle, advertised instance of the pool.
  pool::InstanceRecord add_idle(const std::string& id, int64_t generation = 2, const std::string& cls = "small",
                                pool::UsageClass usage = pool::UsageClass::kSpot, const std::string& type = "c7i.large") {
    pool::InstanceRecord r = idle_record(id, now(), generation, cls, usage, type);
    table.inner.create(r);
    queue.create_wake_queue(id);  // made at its launch
    queue.advertise(cls, {id, generation});
    return r;
  }
  pool::InstanceRecord record(const std::string& id) { return *table.get(id); }
  // Every record in state `s`.
  std::vector<pool::InstanceRecord> in_state(pool::State s) {
    std::vector<pool::InstanceRecord> out;
    table.scan([&](const pool::InstanceRecord& r) {
      if (r.state == s) out.push_back(r);
    });
    return out;
  }

  bool agents_on = true;
  std::function<void()> on_tick;
};

// A provision of `count` for `label` that reads no environment and names its attempt with a fixed
// nonce: what every provision test starts from.
inline ProvisionOptions provision_options(int count, const std::string& label = "ci-1-1-build") {
  ProvisionOptions o;
  o.count = count;
  o.label = label;
  o.getenv = [](const char*) -> const char* { return nullptr; };
  o.random = [] { return std::string("0123456789abcdef"); };
  return o;
}

}  // namespace runpool::controller::testing
