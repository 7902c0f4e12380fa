// The agent loop's unit-test fixture (tests only): the in-memory state table behind a switch that
// takes it down, a fake clock, and fakes for the runner host, the Listener and EC2 — every
// lifecycle path without processes, AWS or sleeping.
#pragma once

#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <utility>

#include "agent/agent_loop.h"
#include "common/pool/memory_state_table.h"
#include "common/pool/transitions.h"

namespace runpool::agent::testing {

using namespace std::chrono_literals;

class FakeListener final : public ListenerProcess {
 public:
  struct Shared {
    std::deque<RunnerEvent> events;
    std::optional<ExitStatus> exit;
    bool interrupted = false;
    bool killed = false;
    int drain_signals = 0;
    bool exit_on_interrupt = true;
    bool adopted = false;  // an earlier agent's: its end has no known status
  };
  explicit FakeListener(std::shared_ptr<Shared> s) : s_(std::move(s)) {}
  std::vector<RunnerEvent> poll_events() override {
    std::vector<RunnerEvent> out(s_->events.begin(), s_->events.end());
    s_->events.clear();
    return out;
  }
  std::optional<ExitStatus> exit_status() override { return s_->exit; }
  void interrupt() override {
    s_->interrupted = true;
    if (s_->exit_on_interrupt) s_->exit = ExitStatus{false, 0, s_->adopted};
  }
  void drain() override { ++s_->drain_signals; }
  void kill() override {
    s_->killed = true;
    s_->exit = ExitStatus{true, 9};
  }
  std::string output_tail() const override { return "last words"; }

 private:
  std::shared_ptr<Shared> s_;
};

class FakeHost final : public RunnerHost {
 public:
  void prepare(const std::string& job_privileges) override {
    ++prepares;
    prepared_privileges.push_back(job_privileges);
    if (!prepare_error.empty()) throw std::runtime_error(prepare_error);
  }
  void ready_next(const std::string& job_privileges) override {
    ++readies;
    readied_privileges.push_back(job_privileges);
    if (!ready_error.empty()) throw std::runtime_error(ready_error);
  }
  std::optional<RunnerIdentity> configured() override { return identity; }
  CommandResult configure(const Registration& r) override {
    configures.push_back(r);
    CommandResult res;
    res.exit_code = configure_exit;
    res.output = configure_exit == 0 ? "√ Settings Saved." : "Http response code: NotFound";
    if (configure_exit == 0) identity = RunnerIdentity{1000 + static_cast<int64_t>(configures.size()), r.name, ""};
    return res;
  }
  CommandResult remove(const Secret& token) override {
    removes.push_back(token.reveal());
    CommandResult res;
    res.exit_code = remove_results.empty() ? 0 : remove_results.front();
    if (!remove_results.empty()) remove_results.pop_front();
    if (res.exit_code == 0) {
      identity.reset();
      if (listener && remove_makes_listener_exit) listener->exit = ExitStatus{false, 0};
    } else {
      res.output = "Bad request - Runner is still running a job";
    }
    return res;
  }
  void remove_local() override {
    ++remove_locals;
    if (!remove_local_error.empty()) throw std::runtime_error(remove_local_error);
    identity.reset();
  }
  std::unique_ptr<ListenerProcess> start_listener(const ListenerStart& how) override {
    if (start_error) throw std::runtime_error("exec failed");
    jit_configs.push_back(how.jit_config.reveal());
    drain_flags.push_back(how.drain_on_sigusr1);
    listener = std::make_shared<FakeListener::Shared>();
    listener->exit_on_interrupt = exit_on_interrupt;
    ++starts;
    return std::make_unique<FakeListener>(listener);
  }
  std::optional<RunnerDrainSupport> drain_support() override {
    ++support_asks;
    return support;
  }
  std::unique_ptr<ListenerProcess> adopt_listener() override {
    if (!stray) return nullptr;
    stray = false;
    ++adopts;
    listener = std::make_shared<FakeListener::Shared>();
    listener->exit_on_interrupt = exit_on_interrupt;
    listener->adopted = true;
    return std::make_unique<FakeListener>(listener);
  }
  void mark_ephemeral(int64_t generation) override { marked_ephemeral = generation; }
  std::optional<int64_t> ephemeral_mark() override { return marked_ephemeral; }
  bool worker_running() override { return worker; }
  bool runner_owns_installation() override { return owns_installation; }
  bool take_update_finished() override {
    ++update_looks;
    return std::exchange(update_finished, false);
  }
  int end_detached() override {
    ++detached_ends;
    if (worker) return 0;
    return std::exchange(detached, 0);
  }
  void end_user_processes() override { ++ends; }
  void clean() override {
    ++cleans;
    if (!clean_error.empty()) throw std::runtime_error(clean_error);
    identity.reset();
  }

  // Helpers that play the runner's part.
  void say(RunnerEvent::Kind k, const std::string& job = "") {
    RunnerEvent e;
    e.kind = k;
    e.job = job;
    if (k == RunnerEvent::kJobCompleted) e.result = "Succeeded";
    listener->events.push_back(e);
  }

  std::optional<RunnerIdentity> identity;
  std::vector<Registration> configures;
  std::vector<std::string> jit_configs;  // what each start_listener() was handed ("" none)
  std::vector<bool> drain_flags;         // and whether with --drain-on-sigusr1
  int configure_exit = 0;
  std::vector<std::string> removes;
  std::deque<int> remove_results;
  bool remove_makes_listener_exit = true;
  int remove_locals = 0, starts = 0, ends = 0, cleans = 0, prepares = 0, support_asks = 0, readies = 0;
  std::vector<std::string> readied_privileges;   // what each ready_next() was asked to ready for
  std::vector<std::string> prepared_privileges;  // what each prepare() was asked to grant
  std::string prepare_error, ready_error, clean_error, remove_local_error;
  bool start_error = false;
  std::shared_ptr<FakeListener::Shared> listener;
  std::optional<RunnerDrainSupport> support = RunnerDrainSupport{};  // what `run --help` shows
  bool exit_on_interrupt = true;
  bool stray = false;  // a Listener an earlier agent left runs (adopt_listener finds it)
  std::optional<int64_t> marked_ephemeral;  // mark_ephemeral()'s file, kept across agents
  int adopts = 0;
  bool worker = false;
  bool owns_installation = false;  // the runner user owns the root (runner_owns_installation())
  bool update_finished = false;    // update.finished is there (take_update_finished() removes it)
  int update_looks = 0;
  int detached = 0;  // processes jobs left beside the Listener (end_detached() ends them)
  int detached_ends = 0;
};

class FakeSelfTerminator final : public SelfTerminator {
 public:
  void terminate_self() override {
    ++terminates;
    if (terminate_fails) throw std::runtime_error("UnauthorizedOperation");
  }
  bool shutdown_os() override {
    ++shutdowns;
    return true;
  }
  int terminates = 0, shutdowns = 0;
  bool terminate_fails = false;
};

// A table that can be taken down.
class FlakyTable final : public pool::StateTableWrapper {
 public:
  explicit FlakyTable(pool::StateTable& inner) : StateTableWrapper(inner) {}
  std::optional<pool::InstanceRecord> get(const std::string& id) override {
    check();
    return StateTableWrapper::get(id);
  }
  std::map<std::string, pool::InstanceRecord> get_many(const std::vector<std::string>& ids) override {
    check();
    return StateTableWrapper::get_many(ids);
  }
  bool report(const std::string& id, const pool::AgentReport& r) override {
    check();
    reports.push_back(r);
    return StateTableWrapper::report(id, r);
  }
  bool down = false;
  std::vector<pool::AgentReport> reports;

 private:
  void check() {
    if (down) throw std::runtime_error("ConnectionError: table unreachable");
  }
};

class AgentLoopTest : public ::testing::Test {
 protected:
  static constexpr const char* kId = "i-0123456789abcdef0";

  AgentLoopTest() : table_(memory_), health_(clock_) {}

  LoopSettings settings() {
    LoopSettings s;
    s.instance_id = kId;
    s.pool = "ci";
    s.agent_version = "test";
    s.poll_interval = 100ms;
    s.boot_grace = 2s;
    s.deadline_grace = 0s;  // the controller is absent here: the agent acts at the deadline
    s.table_unreachable_limit = 5s;
    s.restart_backoff = 200ms;
    s.max_restarts = 3;
    s.drain_signal_timeout = 3s;
    s.stock_idle_wait = 1s;
    s.drain_poll_wait = 500ms;
    s.job_completion_wait = 300ms;
    s.config_sh_timeout = 10s;
    s.cleanup_timeout = 1s;
    s.terminate_wait = 2s;
    return s;
  }

  AgentLoop& loop() {
    if (!loop_) loop_ = std::make_unique<AgentLoop>(settings(), table_, host_, compute_, clock_, health_);
    return *loop_;
  }

  int64_t now() const { return to_epoch_ms(clock_.now()); }
  pool::InstanceRecord record() { return *memory_.get(kId); }

  void launch(const std::string& label = "run-1", const std::string& job_privileges = "") {
    auto r = pool::launched_record(kId, "ci", label, "small", pool::UsageClass::kSpot, "c7i.large", Secret("reg-1"),
                                   "https://github.com/o/r", now(), timeouts_);
    r.job_privileges = job_privileges;
    ASSERT_TRUE(memory_.create(r));
  }
  void step(const pool::Step& s) { ASSERT_TRUE(memory_.transition(kId, s.expect, s.change)); }

  // Ticks `n` times, the clock moving one poll interval each time.
  void ticks(int n = 1) {
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(loop().tick()) << "the loop ended";
      clock_.advance(100ms);
    }
  }
  // Ticks until `pred`, at most `limit` times.
  template <typename F>
  bool tick_until(F pred, int limit = 100) {
    for (int i = 0; i < limit; ++i) {
      if (pred()) return true;
      if (!loop().tick()) return pred();
      clock_.advance(100ms);
    }
    return pred();
  }

  // Launch → registered → running, the Listener listening.
  void serve(const std::string& label = "run-1") {
    launch(label);
    ticks(1);
    ASSERT_EQ(loop().state().phase, Phase::kServing);
    host_.say(RunnerEvent::kListening);
    ticks(1);
    ASSERT_TRUE(pool::agent_reported(record(), pool::AgentSignal::kRegistered));
    step(pool::mark_running(record(), now(), timeouts_));
  }

  FakeClock clock_;
  pool::MemoryStateTable memory_;
  FlakyTable table_;
  FakeHost host_;
  FakeSelfTerminator compute_;
  TableHealth health_;
  pool::Timeouts timeouts_;
  std::unique_ptr<AgentLoop> loop_;
};

}  // namespace runpool::agent::testing
