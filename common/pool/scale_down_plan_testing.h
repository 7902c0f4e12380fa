// Test helpers for scale-down's plan: pool "ci", class "small", owner "acme/app", records launched an
// hour ago with a beating agent, and GitHub's runner list per owner. Shared by the
// scale_down_plan*_test files.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/pool/runner_name.h"
#include "common/pool/scale_down_plan.h"

namespace runpool::pool::scale_down_testing {

inline constexpr int64_t kNow = 1'800'000'000'000;
inline constexpr int64_t kHour = 3'600'000;
inline const std::string kOwner = "acme/app";
inline const std::string kUrl = "https://github.com/acme/app";

inline std::string id_of(int n) {
  std::string hex = "0123456789abcdef";
  std::string id = "i-";
  for (int shift = 28; shift >= 0; shift -= 4) id += hex[(n >> shift) & 0xf];
  return id;
}

// A record of the pool; shared ones carry the pool's static labels, run-scoped ones a run label.
inline InstanceRecord record(int n, State s, bool shared = true) {
  InstanceRecord r;
  r.instance_id = id_of(n);
  r.pool = "ci";
  r.state = s;
  r.generation = 1;
  r.shared = shared;
  r.label = s == State::kIdle ? "" : (shared ? "linux,x64" : "run-1");
  r.resource_class = "small";
  r.reg_url = kUrl;
  r.os = "linux";
  r.created_ms = kNow - kHour;
  r.state_since_ms = kNow - kHour;
  r.deadline_ms = kNow + kHour;
  r.heartbeat_ms = kNow - 5'000;
  return r;
}

// The agent reported registering its runner for the record's generation (so runner_id is current).
inline void registered(InstanceRecord& r) {
  r.signal = AgentSignal::kRegistered;
  r.signal_generation = r.generation;
}

// The runner GitHub lists for a record: its reported id, or 100 + n under its assignment's name.
inline RunnerView runner_of(const InstanceRecord& r, bool busy = false, bool online = true) {
  int64_t id = r.runner_id != 0 ? r.runner_id : 100 + std::stoll(r.instance_id.substr(2), nullptr, 16);
  return {id, runner_name(r.pool, r.instance_id, r.generation), busy, online};
}

struct Fixture {
  ScaleDownSnapshot s;
  ScaleDownPolicy p;
  Fixture() {
    s.pool = "ci";
    s.now_ms = kNow;
    s.runners[kOwner] = std::vector<RunnerView>{};
  }
  InstanceRecord& add(const InstanceRecord& r) {
    s.records.push_back(r);
    return s.records.back();
  }
  // A record, and its runner in its owner's list.
  InstanceRecord& listed(const InstanceRecord& r, bool busy = false, bool online = true) {
    auto& list = s.runners[owner_scope(r.reg_url)];
    if (!list) list.emplace();
    list->push_back(runner_of(r, busy, online));
    return add(r);
  }
  void quota(const std::string& resource_class, int idle, Eviction e = Eviction::kOldestFirst) {
    s.quotas[resource_class] = IdleQuota{idle, e, "test"};
  }
  ScaleDownPlan plan() const { return plan_scale_down(s, p); }
};

// The single decision for `id`; fails the test if there is not exactly one.
inline ScaleDownDecision only(const ScaleDownPlan& plan, const std::string& id) {
  std::vector<ScaleDownDecision> found;
  for (const auto& d : plan.decisions) {
    if (d.record.instance_id == id) found.push_back(d);
  }
  EXPECT_EQ(found.size(), 1u) << id;
  if (found.empty()) {
    ScaleDownDecision none;
    none.rule = "<none>";
    return none;
  }
  return found.front();
}

inline std::vector<std::string> order_of(const ScaleDownPlan& plan) {
  std::vector<std::string> ids;
  for (const auto& d : plan.decisions) ids.push_back(d.record.instance_id);
  return ids;
}

}  // namespace runpool::pool::scale_down_testing
