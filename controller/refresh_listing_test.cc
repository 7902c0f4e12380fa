// run_refresh with the runner-listing marker: a full listing only when the marker says one is due,
// otherwise the runners of records that changed, by id; an agent's word to confirm lists in full.
#include <gtest/gtest.h>

#include "common/json.h"
#include "common/pool/lease_store.h"
#include "common/pool/runner_name.h"
#include "controller/refresh.h"
#include "controller/test_fakes.h"

namespace runpool::controller {
namespace {

// GitHub's runners, counting lists and lookups by id.
class ListingRunners final : public Runners {
 public:
  Secret registration_token() override { throw std::logic_error("unused"); }
  Secret remove_token() override { return Secret("remove-token"); }
  std::string registration_url() override { return "https://github.com/o/r"; }
  bool remove_labels(int64_t) override { return true; }
  std::vector<github::WorkflowRun> workflow_runs(const std::string&, const std::string&) override { return {}; }
  std::vector<github::WorkflowJob> run_jobs(const std::string&, int64_t) override { return {}; }
  long requests_sent(const std::string& operation) override {
    if (operation == "ListRunners") return lists;
    if (operation == "GetRunner") return gets;
    return operation.empty() ? lists + gets + static_cast<long>(deleted.size()) : 0;
  }
  std::vector<github::Runner> list() override {
    ++lists;
    return runners;
  }
  std::optional<github::Runner> get(int64_t id) override {
    ++gets;
    for (const auto& r : runners) {
      if (r.id == id) return r;
    }
    return std::nullopt;
  }
  github::DeleteOutcome remove(int64_t id) override {
    deleted.push_back(id);
    std::erase_if(runners, [&](const github::Runner& r) { return r.id == id; });
    return github::DeleteOutcome::kDeleted;
  }
  void add(int64_t id, const std::string& name) {
    github::Runner r;
    r.id = id;
    r.name = name;
    r.status = "online";
    runners.push_back(r);
  }
  std::vector<github::Runner> runners;
  std::vector<int64_t> deleted;
  long lists = 0, gets = 0;
};

struct ListingWorld : testing::World {
  ListingRunners runners;
  pool::MemoryLeaseStore marker;
  Context lctx{settings, clock, table, queue, compute, runners, out, cancelled};
  // The cadence a large pool sets (the default, 0, lists every pass).
  ListingWorld() { settings.runner_listing_interval = std::chrono::minutes(30); }

  // A record of the pool in `s`, its instance running in EC2.
  pool::InstanceRecord put(const std::string& id, pool::State s, int64_t runner_id) {
    pool::InstanceRecord r = testing::idle_record(id, now());
    r.state = s;
    r.runner_id = runner_id;
    r.runner_name = pool::runner_name("ci", id, r.generation);
    r.signal = pool::AgentSignal::kRegistered;
    r.advertise_pending = false;
    table.inner.create(r);
    queue.create_wake_queue(id);
    compute.launched.push_back(id);
    compute.tags[id] = {{kTagPool, "ci"}, {kTagTable, settings.table}};
    return r;
  }
  Json::Value pass() {
    out.str("");
    run_refresh(lctx, RefreshOptions{false, true, &marker});
    return parse_json(out.str(), "refresh --json");
  }
};

TEST(RefreshListing, ListsInFullOnlyWhenDueAndLooksUpWhatChangedInBetween) {
  ListingWorld w;
  w.agents_on = false;
  w.put("i-0000000a", pool::State::kRunning, 1);
  w.runners.add(1, pool::runner_name("ci", "i-0000000a", 2));
  w.runners.add(9, pool::runner_name("ci", "i-0000000f", 1));  // no record: an orphan runner

  Json::Value first = w.pass();  // no marker yet: a full listing, which finds the orphan
  EXPECT_EQ(first["runner_listing"].asString(), "full");
  EXPECT_EQ(w.runners.lists, 1);
  EXPECT_EQ(w.runners.deleted, std::vector<int64_t>{9});
  ASSERT_TRUE(w.marker.get("runner-listing/ci"));

  w.clock.clock.advance(std::chrono::minutes(1));
  Json::Value quiet = w.pass();  // nothing changed: no GitHub request at all
  EXPECT_EQ(quiet["runner_listing"].asString(), "by id");
  EXPECT_EQ(quiet["github_requests"].asInt64(), 0);
  EXPECT_EQ(w.runners.lists, 1);

  // The instance drained and went idle (its runner still registered): its runner is asked for by
  // id and deleted as a ghost, without a listing.
  pool::InstanceRecord r = w.record("i-0000000a");
  w.table.inner.remove("i-0000000a", {});
  r.state = pool::State::kIdle;
  r.state_since_ms = w.now();
  w.table.inner.create(r);
  w.runners.add(8, pool::runner_name("ci", "i-0000000e", 1));  // an orphan, left to the next listing
  w.clock.clock.advance(std::chrono::minutes(1));
  Json::Value changed = w.pass();
  EXPECT_EQ(changed["runner_listing"].asString(), "by id");
  EXPECT_EQ(changed["runners_looked_up"].asInt(), 1);
  EXPECT_EQ(w.runners.gets, 1);
  EXPECT_EQ(w.runners.lists, 1);
  EXPECT_EQ(w.runners.deleted, (std::vector<int64_t>{9, 1}));

  w.clock.clock.advance(std::chrono::minutes(30));
  Json::Value due = w.pass();
  EXPECT_EQ(due["runner_listing"].asString(), "full");
  EXPECT_EQ(w.runners.lists, 2);
  EXPECT_EQ(w.runners.deleted, (std::vector<int64_t>{9, 1, 8}));
}

TEST(RefreshListing, AnAgentsFailedWordIsConfirmedAgainstAFullListing) {
  ListingWorld w;
  w.agents_on = false;
  w.marker.create({"runner-listing/ci", "another", 1, w.now()});  // a listing just now: none due
  pool::InstanceRecord r = w.put("i-0000000a", pool::State::kRunning, 1);
  w.table.inner.remove("i-0000000a", {});
  r.signal = pool::AgentSignal::kFailed;
  r.signal_generation = r.generation;
  w.table.inner.create(r);
  w.runners.add(1, pool::runner_name("ci", "i-0000000a", 2));  // online: the word is contradicted
  w.runners.add(9, pool::runner_name("ci", "i-0000000f", 1));  // no record: not judged after the scan

  Json::Value j = w.pass();
  EXPECT_EQ(j["runner_listing"].asString(), "full after scan");
  EXPECT_EQ(w.runners.lists, 1);
  EXPECT_EQ(w.record("i-0000000a").state, pool::State::kRunning);
  EXPECT_TRUE(w.runners.deleted.empty());
}

}  // namespace
}  // namespace runpool::controller
