// Test helpers for refresh's plan: a pool "ci" with one table, records of class "small" in any
// state, EC2's view of them, and swept queues. Shared by refresh_plan_test and
// refresh_plan_shared_test.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/pool/pool_message.h"
#include "common/pool/refresh_plan.h"
#include "common/pool/sealed_field.h"

namespace runpool::pool::refresh_testing {

inline constexpr int64_t kNow = 1'800'000'000'000;
inline const std::vector<State> kLive = {State::kCreated,  State::kClaimed, State::kRunning,
                                         State::kDraining, State::kIdle,    State::kTerminating};
inline const std::vector<AgentSignal> kSignals = {AgentSignal::kNone,       AgentSignal::kBooted,
                                                  AgentSignal::kRegistered, AgentSignal::kDrained,
                                                  AgentSignal::kFailed,     AgentSignal::kInterrupted};

inline std::string id_of(int n) {
  std::string hex = "0123456789abcdef";
  std::string id = "i-";
  for (int shift = 28; shift >= 0; shift -= 4) id += hex[(n >> shift) & 0xf];
  return id;  // "i-0000000n", the 8-digit form
}

inline InstanceRecord record(int n, State s, int64_t generation = 2) {
  InstanceRecord r;
  r.instance_id = id_of(n);
  r.pool = "ci";
  r.state = s;
  r.generation = generation;
  r.label = s == State::kIdle || s == State::kTerminated ? "" : "run-1";
  r.resource_class = "small";
  r.seal_key = make_seal_keys().public_key;  // launched with sealed tokens
  r.created_ms = kNow - 3'600'000;
  r.state_since_ms = kNow - 60'000;
  r.deadline_ms = kNow + 600'000;
  if (s == State::kRunning) r.hard_deadline_ms = kNow + 1'800'000;
  if (s == State::kDraining) r.hard_deadline_ms = kNow + 600'000;
  r.heartbeat_ms = kNow - 5'000;
  return r;
}

inline Ec2Instance instance(const std::string& id, const std::string& state = "running",
                            int64_t launch_ms = kNow - 3'600'000) {
  return {id, state, launch_ms, "ci", "runpool-state"};
}

struct Fixture {
  RefreshSnapshot s;
  RefreshPolicy p;
  Fixture() {
    s.pool = "ci";
    s.table = "runpool-state";
    s.now_ms = kNow;
    s.ec2.emplace();
    s.runners.emplace();
  }
  // A record, and its instance running in EC2.
  InstanceRecord& add(const InstanceRecord& r) {
    s.records.push_back(r);
    s.ec2->push_back(instance(r.instance_id));
    return s.records.back();
  }
  RefreshPlan plan() const { return plan_refresh(s, p); }
};

inline std::vector<Action> for_instance(const RefreshPlan& plan, const std::string& id) {
  std::vector<Action> out;
  for (const auto& a : plan.actions) {
    if (a.instance_id == id) out.push_back(a);
  }
  return out;
}

// The single action planned for `id`; fails the test if there is not exactly one.
inline Action only(const RefreshPlan& plan, const std::string& id) {
  auto actions = for_instance(plan, id);
  EXPECT_EQ(actions.size(), 1u) << id;
  if (actions.empty()) {
    Action none;
    none.rule = "<none>";
    return none;
  }
  return actions.front();
}

inline void signal(InstanceRecord& r, AgentSignal s, int64_t generation) {
  r.signal = s;
  r.signal_generation = generation;
}

inline PoolView swept(const std::vector<ReceivedMessage>& messages, const std::vector<InstanceRecord>& fresh) {
  PoolView v;
  v.pool = "ci";
  v.resource_class = "small";
  v.messages = messages;
  v.complete = true;
  for (const auto& r : fresh) v.fresh[r.instance_id] = r;
  return v;
}

inline ReceivedMessage msg(const std::string& mid, const std::string& id, int64_t gen) {
  return {mid, "rh-" + mid, pool_message_body({id, gen})};
}

}  // namespace runpool::pool::refresh_testing
