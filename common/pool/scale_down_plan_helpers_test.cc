// What scale-down reads before planning, the re-check before a drain, scale-up's shortfall, and
// how decisions read.
#include <gtest/gtest.h>

#include "common/pool/scale_down_plan.h"
#include "common/pool/scale_down_plan_testing.h"

// In the fixtures' namespace, so their helpers are found first and by this file alone.
namespace runpool::pool::scale_down_testing {
namespace {

TEST(ScaleDownOwnerScope, RepoOrgGhesAndOddities) {
  EXPECT_EQ(owner_scope("https://github.com/acme/app"), "acme/app");
  EXPECT_EQ(owner_scope("https://github.com/acme"), "acme");
  EXPECT_EQ(owner_scope("https://github.com/acme/"), "acme");
  EXPECT_EQ(owner_scope("https://github.com/acme/app/"), "acme/app");
  EXPECT_EQ(owner_scope("https://ghe.example/acme"), "acme");
  EXPECT_EQ(owner_scope("https://ghe.example:8443/acme/app//"), "acme/app");
  EXPECT_EQ(owner_scope("http://ghe.internal/acme/app?x=1"), "acme/app");
  EXPECT_EQ(owner_scope("https://github.com"), "");
  EXPECT_EQ(owner_scope("https://github.com/"), "");
  EXPECT_EQ(owner_scope(""), "");
}

TEST(OwnersToList, BootingAndRunningUnmarkedRecordsOfThePoolOnceEach) {
  std::vector<InstanceRecord> records;
  int n = 1;
  for (State s : {State::kCreated, State::kClaimed, State::kRunning}) {
    InstanceRecord r = record(n++, s);
    r.reg_url = "https://github.com/owner-" + std::string(state_name(s));
    records.push_back(r);
  }
  records.push_back(record(n++, State::kRunning));  // acme/app
  records.push_back(record(n++, State::kRunning));  // acme/app again
  for (State s : {State::kDraining, State::kIdle, State::kTerminating, State::kTerminated}) {
    InstanceRecord r = record(n++, s);
    r.reg_url = "https://github.com/not-needed";
    records.push_back(r);
  }
  InstanceRecord marked = record(n++, State::kRunning);
  marked.reg_url = "https://github.com/marked";
  marked.orphan_since_ms = kNow;
  InstanceRecord other_pool = record(n++, State::kRunning);
  other_pool.pool = "other";
  other_pool.reg_url = "https://github.com/other-pool";
  InstanceRecord no_owner = record(n++, State::kRunning);
  no_owner.reg_url = "https://github.com";
  records.insert(records.end(), {marked, other_pool, no_owner});
  EXPECT_EQ(owners_to_list(records, "ci"),
            (std::vector<std::string>{"acme/app", "owner-claimed", "owner-created", "owner-running"}));
}

TEST(OrphanLookups, MarkedUnbypassedRecordsWithARunnerIdThatAreNotTerminating) {
  auto marked = [](int n, State s, int64_t runner_id) {
    InstanceRecord r = record(n, s);
    r.orphan_since_ms = kNow;
    r.runner_id = runner_id;
    if (runner_id) registered(r);
    return r;
  };
  std::vector<InstanceRecord> records = {marked(1, State::kRunning, 30), marked(2, State::kCreated, 10),
                                         marked(3, State::kDraining, 20), marked(4, State::kRunning, 0),
                                         marked(5, State::kTerminating, 40), marked(6, State::kTerminated, 50)};
  InstanceRecord bypassed = marked(7, State::kRunning, 60);
  bypassed.bypass_removal = true;
  InstanceRecord unmarked = record(8, State::kRunning);
  unmarked.runner_id = 70;
  registered(unmarked);
  InstanceRecord other_pool = marked(9, State::kRunning, 80);
  other_pool.pool = "other";
  records.insert(records.end(), {bypassed, unmarked, other_pool});
  EXPECT_EQ(orphan_lookups(records, "ci"), (std::vector<int64_t>{10, 20, 30}));
}

ScaleDownDecision a_drain() {
  Fixture f;
  f.quota("small", 0);
  f.listed(record(1, State::kRunning));
  ScaleDownDecision d = only(f.plan(), id_of(1));
  EXPECT_EQ(d.kind, ScaleDownKind::kDrain);
  return d;
}

TEST(RecheckBeforeDrain, BusyNowOrUnreadableKeepsGoneOrIdleDrains) {
  const ScaleDownDecision drain = a_drain();
  RunnerLookup fresh;
  fresh.result = RunnerLookup::Result::kFound;
  fresh.runner = {101, "r", false, true};
  ScaleDownDecision d = recheck_before_drain(drain, fresh);
  EXPECT_EQ(d.kind, ScaleDownKind::kDrain);
  EXPECT_EQ(d.rule, "idle.over-quota");

  fresh.runner.busy = true;
  d = recheck_before_drain(drain, fresh);
  EXPECT_EQ(d.kind, ScaleDownKind::kKeep);
  EXPECT_EQ(d.rule, "busy.github-recheck");
  EXPECT_EQ(d.record.instance_id, drain.record.instance_id);
  EXPECT_EQ(d.runner_id, 101);

  fresh.result = RunnerLookup::Result::kNotFound;
  EXPECT_EQ(recheck_before_drain(drain, fresh).kind, ScaleDownKind::kDrain);

  fresh.result = RunnerLookup::Result::kFailed;
  fresh.error = "timed out";
  d = recheck_before_drain(drain, fresh);
  EXPECT_EQ(d.kind, ScaleDownKind::kKeep);
  EXPECT_EQ(d.rule, "github.recheck-failed");
  EXPECT_NE(d.reason.find("timed out"), std::string::npos);
}

TEST(RecheckBeforeDrain, OtherDecisionsPassUnchanged) {
  ScaleDownDecision keep = a_drain();
  keep.kind = ScaleDownKind::kRetire;
  keep.rule = "idle.over-quota";
  RunnerLookup busy;
  busy.result = RunnerLookup::Result::kFound;
  busy.runner.busy = true;
  EXPECT_EQ(recheck_before_drain(keep, busy).kind, ScaleDownKind::kRetire);
}

TEST(ScaleUpShortfall, CountsBootingAndIdleRunningRecordsOfTheClass) {
  IdleQuota q{4, Eviction::kOldestFirst, "test"};
  std::vector<InstanceRecord> records = {record(1, State::kCreated), record(2, State::kClaimed)};
  EXPECT_EQ(scale_up_shortfall(records, "ci", "small", q), 2);
  records.push_back(record(3, State::kRunning));
  EXPECT_EQ(scale_up_shortfall(records, "ci", "small", q), 1);

  // None of these is an idle runner of the class.
  InstanceRecord busy = record(4, State::kRunning);
  busy.busy = true;
  InstanceRecord marked = record(5, State::kRunning);
  marked.orphan_since_ms = kNow;
  InstanceRecord other_class = record(6, State::kRunning);
  other_class.resource_class = "large";
  InstanceRecord other_pool = record(7, State::kRunning);
  other_pool.pool = "other";
  records.insert(records.end(), {busy, marked, other_class, other_pool, record(8, State::kDraining),
                                 record(9, State::kTerminating), record(10, State::kTerminated)});
  EXPECT_EQ(scale_up_shortfall(records, "ci", "small", q), 1);

  records.push_back(record(11, State::kRunning));
  EXPECT_EQ(scale_up_shortfall(records, "ci", "small", q), 0);
  records.push_back(record(12, State::kCreated));
  EXPECT_EQ(scale_up_shortfall(records, "ci", "small", q), 0) << "never negative";
  q.idle = 0;
  EXPECT_EQ(scale_up_shortfall({}, "ci", "small", q), 0);
}

TEST(ScaleDownDescribe, NamesTheKindInstanceRuleAndReason) {
  ScaleDownDecision d;
  d.kind = ScaleDownKind::kDrain;
  d.record.instance_id = "i-0abc";
  d.rule = "idle.over-quota";
  d.reason = "idle shared runner beyond the quota";
  EXPECT_EQ(describe(d), "drain i-0abc [idle.over-quota]: idle shared runner beyond the quota");
  EXPECT_EQ(scale_down_kind_name(ScaleDownKind::kKeep), "keep");
  EXPECT_EQ(scale_down_kind_name(ScaleDownKind::kMarkOrphan), "mark-orphan");
  EXPECT_EQ(scale_down_kind_name(ScaleDownKind::kUnmarkOrphan), "unmark-orphan");
  EXPECT_EQ(scale_down_kind_name(ScaleDownKind::kTerminate), "terminate");
  EXPECT_EQ(scale_down_kind_name(ScaleDownKind::kRetire), "retire");
}

}  // namespace
}  // namespace runpool::pool::scale_down_testing
