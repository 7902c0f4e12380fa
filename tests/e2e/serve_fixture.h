// What the serve suites share: a pool whose scale set (named after the test's process) is served by
// `runpoolctl serve` at quick timings, and the checks of its instances and jobs. A mixin over the
// suite's own fixture (E2eTest, or CrashPointTest for crash points). The stand-in assigns the set's
// jobs as `assignment()` says: "service" (github.com: up to the capacity serve polls with) unless
// a suite picks "acquire" (GitHub Enterprise Server: serve acquires what is offered).
#pragma once

#include <signal.h>

#include "common/pool/lease_store.h"
#include "tests/e2e/e2e_fixture.h"

namespace runpool::controller::e2e {

template <class Base>
class ServeTestOf : public Base {
 protected:
  void SetUp() override {
    Base::SetUp();
    Json::Value flow;
    flow["scaleSetAssignment"] = assignment();
    this->cloud_.control("POST", "/_control/github/settings", flow);
    // Quick timings, unless RUNPOOL_TIME_FACTOR scaled GitHub's (a 50 s·f poll, a 4 min·f session
    // lapse). The lapse is how long a successor waits out a killed holder's session, after the
    // lease's 6 s.
    if (!time_factor()) {
      Json::Value gh;
      gh["scaleSetPollMs"] = 1000;
      gh["scaleSetSessionIdleMs"] = 4000;
      this->cloud_.control("POST", "/_control/github/settings", gh);
    }
  }
  virtual std::string assignment() const { return "service"; }
  std::string more_config() const override {
    return Base::more_config() + "\nscale_set_name = " + set_name() +
           "\nscale_set_max_runners = 3\nscale_set_arm_grace = 1s\n"
           "serve_reconcile_interval = 300ms\nserve_lease_ttl = 6s\nserve_retry_wait = 500ms\n"
           "claim_wait = 0s\n";
  }
  std::string serve_lease_name() const { return "scaleset/" + this->pool_name_ + "/" + set_name(); }
  std::string set_name() const { return "e2e-serve-" + std::to_string(getpid()); }

  // A job of the scale set, run to its end; its broker view.
  Json::Value run_job(const std::string& name, const std::string& run = "true") {
    const int64_t id = this->queue_job(set_name(), name, run);
    Json::Value j = this->finished_job(id, 120s);
    EXPECT_EQ(j["state"].asString(), "completed") << write_json(j) << this->consoles();
    EXPECT_EQ(j["result"].asString(), "Succeeded") << write_json(j);
    return j;
  }

  // A warm pool of one: a first job served on a launched instance, cleaned back into the pool. The
  // instance's id ("" after a failure: it did not run the job or did not come back).
  std::string warm_pool_of_one() {
    const std::string id = this->instance_of_runner(run_job("warm-up")["runnerName"].asString());
    if (id.empty() || !eventually([&] { return back_in_pool(id); }, 60s)) {
      ADD_FAILURE() << "no warm instance: " << (id.empty() ? "the job ran on no runner of the pool" : state_of(id))
                    << this->consoles();
      return "";
    }
    return id;
  }

  bool back_in_pool(const std::string& id) {
    auto r = this->table_->get(id);
    return r && r->state == State::kIdle && r->label.empty();
  }
  // Every live instance of the pool is back in it (and there is at least one).
  bool all_back_in_pool() {
    int live = 0;
    for (const auto& r : this->records()) {
      if (r.state == State::kTerminated || r.state == State::kTerminating) continue;
      ++live;
      if (!back_in_pool(r.instance_id)) return false;
    }
    return live > 0;
  }

  // The stand-in's id of the scale set (0: none).
  int64_t scale_set_id() {
    int64_t id = 0;
    const Json::Value all = this->cloud_.control("GET", "/_control/github/scalesets");
    for (const auto& set : all["scaleSets"]) {
      if (set["name"].asString() == set_name()) id = std::max<int64_t>(id, set["id"].asInt64());
    }
    return id;
  }

  std::string state_of(const std::string& id) {
    auto r = this->table_->get(id);
    return r ? std::string(pool::state_name(r->state)) + " gen " + std::to_string(r->generation) + " signal " +
                   std::string(pool::agent_signal_name(r->signal)) + " " + r->signal_detail
             : "no record";
  }
  std::string states() {
    std::string out;
    for (const auto& r : this->records()) out += " " + r.instance_id + ": " + state_of(r.instance_id) + ";";
    return out;
  }

  // The lease as the table has it, and its fencing generation (0: no lease item).
  std::optional<pool::Lease> lease() {
    pool::DynamoLeaseStore leases(this->aws_.db, this->pool_->table());
    return leases.get(serve_lease_name());
  }
  int64_t lease_generation() {
    auto l = lease();
    return l ? l->generation : 0;
  }
  std::string control_path_of_set(int64_t id) const { return "/_control/github/scalesets/" + std::to_string(id); }

  // Stops serve as systemd does (SIGTERM): it gives up its session and lease and exits 0. Its
  // output.
  static CtlResult stop(CtlProcess& serve) {
    serve.signal(SIGTERM);
    CtlResult r = serve.wait(30s);
    EXPECT_EQ(r.exit_code, 0) << describe(r);
    if (std::getenv("RUNPOOL_SHOW_SERVE")) std::printf("%s\n", r.err.c_str());
    return r;
  }
};

}  // namespace runpool::controller::e2e
