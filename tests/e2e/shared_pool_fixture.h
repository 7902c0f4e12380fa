// The fixtures of shared_pool_test.cc: a shared pool per test (scale-up, scale-down, the GitHub
// stand-in's runners and REST call counts), and for the window tests a Listener frozen with a job
// dispatched to it (Frozen), a Watch sampling the instance and the job, and the job's fate.
#pragma once

#include <mutex>

#include "tests/e2e/e2e_fixture.h"

namespace runpool::controller::e2e {

inline const std::set<std::string> kLabels = {"self-hosted", "linux", "x64", "small"};
inline constexpr const char* kLabel = "self-hosted,linux,x64,small";  // the record's label: shared_labels + class
inline constexpr int64_t kWindowPollMs = 5000;  // long polls held this long in the window tests

// Stops a process (SIGSTOP, waiting until /proc says so) and lets it go (SIGCONT) on thaw() or
// when destroyed — whatever assertion ends the test first.
class Frozen {
 public:
  explicit Frozen(pid_t pid) : pid_(pid) {
    kill(pid_, SIGSTOP);
    for (int i = 0; i < 100 && !stopped(); ++i) std::this_thread::sleep_for(10ms);
  }
  ~Frozen() { thaw(); }
  Frozen(const Frozen&) = delete;
  Frozen& operator=(const Frozen&) = delete;
  void thaw() {
    if (pid_ > 0) kill(pid_, SIGCONT);
    pid_ = -1;
  }
  bool stopped() const {
    std::string stat = testing::slurp("/proc/" + std::to_string(pid_) + "/stat");
    auto close = stat.rfind(')');
    return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'T';
  }

 private:
  pid_t pid_;
};

// Samples an instance's record, its EC2 state and a job every 50 ms on a thread of its own, for
// what no single look shows: the instance is never terminated while its agent reports busy, nor
// while the job runs on it.
class Watch {
 public:
  Watch(runpool::testing::LocalCloud& cloud, const std::string& table, std::string id, std::string runner, int64_t job)
      : cloud_(cloud), clients_(cloud), table_(clients_.db, table, cloud.instance_role_id()), id_(std::move(id)), runner_(std::move(runner)),
        job_(job) {
    thread_ = std::thread([this] {
      for (int i = 0; i < 6000 && !stop_; ++i) {  // bounded: 5 min at most
        sample();
        std::this_thread::sleep_for(50ms);
      }
    });
  }
  ~Watch() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::vector<std::string> violations() const {
    std::lock_guard<std::mutex> l(mu_);
    return violations_;
  }
  int64_t first_down_ms() const {  // first sample with the instance shutting-down or terminated; 0: none
    std::lock_guard<std::mutex> l(mu_);
    return first_down_ms_;
  }
  int samples() const { return samples_; }

 private:
  void sample() {
    try {
      auto r = table_.get(id_);
      const std::string ec2 = cloud_.control("GET", "/_control/ec2/instances/" + id_, {}, true)["state"].asString();
      const Json::Value job = cloud_.control("GET", "/_control/github/jobs/" + std::to_string(job_));
      const int64_t at = now_ms();
      const bool down = ec2 == "shutting-down" || ec2 == "terminated";
      std::lock_guard<std::mutex> l(mu_);
      ++samples_;
      if (down && !first_down_ms_) first_down_ms_ = at;
      if (r && r->busy && (r->state == State::kTerminating || r->state == State::kTerminated)) {
        violations_.push_back("record " + std::string(pool::state_name(r->state)) + " while its agent reports busy");
      }
      if (down && job["state"].asString() == "running" && job["runnerName"].asString() == runner_) {
        violations_.push_back("instance " + ec2 + " while the job runs on it");
      }
    } catch (const std::exception&) {
      // A missed sample; the next one looks again.
    }
  }

  runpool::testing::LocalCloud& cloud_;
  testing::CloudClients clients_;
  pool::DynamoStateTable table_;
  std::string id_, runner_;
  int64_t job_;
  mutable std::mutex mu_;
  std::vector<std::string> violations_;
  int64_t first_down_ms_ = 0;
  std::atomic<int> samples_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class SharedPool : public E2eTest {
 protected:
  std::string more_config() const override { return "pool_mode = shared\nscale_down_drain_wait = 60s\n"; }

  // A later line of the pool's config file wins over an earlier one.
  void set_config(const std::string& key, const std::string& value) {
    std::ofstream(pool_->config_path(), std::ios::app) << key << " = " << value << "\n";
  }
  void broker_settings(int64_t poll_ms, int64_t lock_expiry_ms, int64_t session_idle_ms) {
    Json::Value gh;
    gh["pollMs"] = Json::Int64(poll_ms);
    gh["lockExpiryMs"] = Json::Int64(lock_expiry_ms);
    gh["sessionIdleMs"] = Json::Int64(session_idle_ms);
    cloud_.control("POST", "/_control/github/settings", gh);
  }

  // scale-up of the small class to `to` idle runners; the launched instance ids.
  std::vector<std::string> scale_up(int to) {
    CtlResult r = ctl({"--json", "scale-up", "--to", std::to_string(to), "--resource-class", "small"});
    EXPECT_EQ(r.exit_code, 0) << describe(r) << consoles();
    Json::Value j = parse_json(r.out.empty() ? "{}" : r.out, "scale-up");
    EXPECT_TRUE(j["ok"].asBool()) << r.out;
    std::vector<std::string> ids;
    for (const auto& id : j["classes"][0]["launched"]) ids.push_back(id.asString());
    return ids;
  }
  // scale-down reads a runtime on its own estimate of the AWS clock (Date headers: 1 s resolution),
  // so even with no minimum running time a record under a second old can read as too young.
  void let_age(const std::vector<std::string>& ids) {
    for (const auto& id : ids) {
      const int64_t wait = std::min<int64_t>(record(id).created_ms + 2000 - now_ms(), 2000);
      if (wait > 0) std::this_thread::sleep_for(std::chrono::milliseconds(wait));
    }
  }
  static Json::Value report_of(const CtlResult& r) {
    Json::Value j = parse_json(r.out.empty() ? "{}" : r.out, "scale-down");
    j["exit_code"] = r.exit_code;
    j["stderr"] = r.err;
    return j;
  }
  Json::Value scale_down(const std::vector<std::string>& more) {
    std::vector<std::string> args = {"--json", "scale-down"};
    args.insert(args.end(), more.begin(), more.end());
    return report_of(ctl(args));
  }
  static Json::Value decision(const Json::Value& report, const std::string& id) {
    for (const auto& d : report["decisions"]) {
      if (d["instance_id"].asString() == id) return d;
    }
    return Json::Value();
  }

  // ---- the GitHub stand-in

  Json::Value github_runner(const std::string& name) {
    const Json::Value all = cloud_.control("GET", "/_control/github/runners");
    for (const auto& r : all["runners"]) {
      if (r["name"].asString() == name) return r;
    }
    return Json::Value();
  }
  // Pages of one runner list of acme/app (per_page 100), as the stand-in holds them now.
  int runner_list_pages() {
    const Json::Value all = cloud_.control("GET", "/_control/github/runners");
    int n = 0;
    for (const auto& r : all["runners"]) n += r["owner"].asString() == "acme" && r["repo"].asString() == "app";
    return std::max(1, (n + 99) / 100);
  }
  // REST calls since the last reset, by route (the runner protocol is counted apart).
  std::map<std::string, int> rest_calls(int* total = nullptr) {
    const Json::Value c = cloud_.control("GET", "/_control/github/calls");
    std::map<std::string, int> out;
    for (const auto& route : c["byRoute"].getMemberNames()) out[route] = c["byRoute"][route].asInt();
    if (total) *total = c["total"].asInt();
    return out;
  }
  Json::Value queue_shared_job(const std::string& name, int duration_ms) {
    Json::Value body;
    for (const auto& l : kLabels) body["labels"].append(l);
    body["name"] = name;
    body["durationMs"] = duration_ms;
    body["owner"] = "acme";
    body["repo"] = "app";
    body["run"] = "true";
    return cloud_.control("POST", "/_control/github/jobs", body);
  }

  // Queues a job and has it dispatched to the runner of `id` and frozen there: the Listener is
  // stopped while its long poll is open with at least 2 s to go, so the broker hands the job to
  // that poll and the Listener cannot acknowledge it — GitHub says not busy (busy flips at acquire)
  // and the agent says not busy (it sees a job at `Acknowledging`). Null job when no attempt found
  // an open poll.
  Json::Value dispatch_to_frozen_listener(const std::string& id, const std::string& runner,
                                          std::unique_ptr<Frozen>& frozen) {
    for (int attempt = 0; attempt < 40; ++attempt) {
      std::vector<pid_t> pids = pids_matching(id, "Runner.Listener run");
      if (pids.size() == 1) {
        frozen = std::make_unique<Frozen>(pids[0]);
        const Json::Value session = github_runner(runner)["session"];
        if (frozen->stopped() && session.isObject() && session["openPolls"].asInt() > 0 &&
            now_ms() - session["lastSeen"].asInt64() < kWindowPollMs - 2000) {
          return queue_shared_job("at-the-drain", 2000);
        }
        frozen.reset();  // thawed: let it finish this poll and open the next
      }
      std::this_thread::sleep_for(300ms);
    }
    return Json::Value();
  }
};

// What a job dispatched at the moment of the drain became, and what the test saw on the way.
struct WindowRun {
  std::string id, runner;
  int64_t job = 0;
  bool hit = false;           // the drain landed while the job was dispatched and unacknowledged
  int64_t drain_seen_ms = 0;  // when the test saw the record draining (the drain write)
  Json::Value report;         // scale-down's
  std::unique_ptr<Watch> watch;  // on until expect_guarantees saw the instance terminated
};

// Why a frozen Listener. The race a drain must survive is a job GitHub has handed to a runner that
// nobody reports busy yet: GitHub's busy flag flips at acquire, the agent's at the Listener's
// `Acknowledging` line. On the local cloud that window lasts milliseconds, so queueing the job
// right before scale-down would hit it by luck, and mostly test something else (the job seen busy
// by the plan, or queued after the runner left). Holding dispatch back until the drain is written
// tests the opposite order, which no runner is exposed to once its `.drain` check has run. So the
// test widens the real window rather than inventing one: it stops the Listener (SIGSTOP) while its
// long poll is open, queues the job — the broker dispatches it into that poll, as GitHub would to
// a runner whose process is merely slow — starts scale-down, and lets the Listener go once the
// drain is in the table. Controller, agent and broker run unchanged; the job's dispatch and acquire
// times, either side of the moment the drain was seen, show the window was hit.
class SharedPoolWindow : public SharedPool {
 protected:
  // One shared runner; a job dispatched to it and frozen there (see dispatch_to_frozen_listener);
  // `scale-down --idle 0` started; once its drain write shows in the table the Listener goes on —
  // or, with `after_deregistration`, only once the runner is gone from GitHub (the stock drain's
  // DELETE came first). From the freeze on, a Watch samples the instance and the job.
  WindowRun run_window(bool after_deregistration) {
    // Long polls held 5 s (so a frozen poll stays open), a lock that outlives the freeze, and a
    // session that stays live while frozen (GitHub would not call the runner offline this fast).
    broker_settings(kWindowPollMs, 20000, 30000);
    set_config("min_running_time_linux", "0s");
    WindowRun w;
    const std::vector<std::string> ids = scale_up(1);
    EXPECT_EQ(ids.size(), 1u);
    if (ids.size() != 1) return w;
    w.id = ids[0];
    w.runner = record(w.id).runner_name;
    let_age(ids);
    std::unique_ptr<Frozen> frozen;
    Json::Value queued = dispatch_to_frozen_listener(w.id, w.runner, frozen);
    EXPECT_FALSE(queued.isNull()) << "no open long poll to freeze" << consoles();
    if (queued.isNull()) return w;
    w.job = queued["id"].asInt64();
    EXPECT_EQ(queued["state"].asString(), "dispatched") << write_json(queued);
    EXPECT_EQ(queued["dispatches"][0]["runnerName"].asString(), w.runner) << write_json(queued);
    w.watch = std::make_unique<Watch>(cloud_, pool_->table(), w.id, w.runner, w.job);

    auto sd = start_ctl({"--json", "scale-down", "--idle", "0"});
    if (!eventually([&] { return record(w.id).state == State::kDraining; }, 60s)) {
      frozen->thaw();
      w.report = report_of(sd->wait(180s));
      ADD_FAILURE() << "never draining: " << pool::state_name(record(w.id).state) << "\n"
                    << write_json(w.report) << consoles();
      return w;
    }
    w.drain_seen_ms = now_ms();
    if (after_deregistration) {
      EXPECT_TRUE(eventually([&] { return github_runner(w.runner).isNull(); }, 60s)) << consoles();
    }
    w.hit = !record(w.id).busy && job(w.job)["state"].asString() == "dispatched";
    frozen->thaw();
    w.report = report_of(sd->wait(180s));
    return w;
  }

  // The protocol's guarantees, whatever became of the job: no instance terminated while its agent
  // reports busy or with the job running on it; a job the drained runner acquired runs to success;
  // the instance ends terminated and its runner deregistered.
  void expect_guarantees(WindowRun& w, const Json::Value& fate) {
    EXPECT_TRUE(eventually([&] { return ec2_state(w.id) == "terminated"; }, 60s)) << ec2_state(w.id);
    eventually([&] { return w.watch->first_down_ms() != 0; }, 2s);  // its last samples
    w.watch->stop();
    std::printf("watched the instance and the job %d times\n", w.watch->samples());
    const std::vector<std::string> violations = w.watch->violations();
    EXPECT_TRUE(violations.empty()) << ::testing::PrintToString(violations);
    EXPECT_NE(w.watch->first_down_ms(), 0) << "the instance was never seen shutting down";
    for (const auto& d : fate["dispatches"]) {
      if (d["runnerName"].asString() == w.runner && !d["acquiredAt"].isNull()) {
        EXPECT_EQ(fate["runnerName"].asString(), w.runner) << write_json(fate);
        EXPECT_EQ(fate["result"].asString(), "Succeeded") << "a drain interrupted the job: " << write_json(fate);
        EXPECT_LE(fate["completedAt"].asInt64(), w.watch->first_down_ms()) << "the job outlived its instance";
      }
    }
    EXPECT_TRUE(github_runner(w.runner).isNull()) << w.runner << " left registered";
    for (const auto& name : registered_runners()) {  // a fresh runner may have come for the job
      EXPECT_EQ(ec2_state(instance_of_runner(name)), "running") << name << " registered for a dead instance";
    }
  }
};

class SharedPoolStock : public SharedPoolWindow {
 protected:
  void SetUp() override {
    SharedPoolWindow::SetUp();
    if (HasFatalFailure()) return;
    use_runner_build("stock");
  }
  // Before init: it renders the agent's configuration into the launch template.
  std::string more_config() const override {
    return SharedPoolWindow::more_config() +
           "agent_extra = notice_poll_interval=500ms; boot_grace=60s; drain_signal_timeout=60s; config_sh_timeout=60s; "
           "cleanup_timeout=2s; terminate_wait=5s; listener_restart_backoff=200ms; stock_idle_wait=3s; "
           "drain_poll_wait=" + drain_poll_wait() + "; " + clean_sweep_roots() + "\n";
  }

  // The job's fate, with a fresh runner to take it should it be back in the queue; one line for the
  // log and the test report (property `job_fate`).
  Json::Value report_fate(const WindowRun& w, const std::string& when) {
    Json::Value fate = finished_job(w.job, 5s);
    std::string s = fate["state"].asString();
    if (s != "completed" && s != "lost") {
      EXPECT_EQ(scale_up(1).size(), 1u) << "a fresh runner for the job";
      fate = finished_job(w.job, 90s);
      s = fate["state"].asString();
    }
    std::string what;
    if (s == "completed" && fate["runnerName"].asString() == w.runner) {
      what = "ran on the drained runner: " + fate["result"].asString();
    } else if (s == "completed") {
      what = "redispatched after " + std::to_string(fate["lateMs"].asInt64()) + " ms (" +
             std::to_string(fate["dispatches"].size()) + " dispatches), ran on a fresh runner: " +
             fate["result"].asString();
    } else {
      what = s == "lost" ? "lost (recorded by the broker)" : "still " + s + " after a fresh runner had 90 s";
    }
    std::printf("STOCK RUNNER, job dispatched %s: %s\n", when.c_str(), what.c_str());
    RecordProperty("job_fate", what);
    EXPECT_TRUE(s == "completed" || s == "lost") << "no fate recorded: " << write_json(fate);
    return fate;
  }
};

}  // namespace runpool::controller::e2e
