#include "common/pool/pool_sweep.h"

#include "common/pool/pool_message.h"

namespace runpool::pool {

bool needs_sweep(int64_t queue_depth, int64_t idle_records) { return queue_depth != idle_records; }

namespace {

// One entry per message id, in first-seen order, with the latest receipt handle: an earlier
// receipt of a message received again is no longer valid.
std::vector<ReceivedMessage> distinct_messages(const std::vector<ReceivedMessage>& received) {
  std::vector<ReceivedMessage> out;
  std::map<std::string, size_t> index;
  for (const auto& m : received) {
    auto [it, inserted] = index.emplace(m.message_id, out.size());
    if (inserted) {
      out.push_back(m);
    } else {
      out[it->second].receipt_handle = m.receipt_handle;
    }
  }
  return out;
}

}  // namespace

SweepPlan plan_pool_sweep(const PoolView& view, const std::vector<InstanceRecord>& idle,
                          const std::set<std::string>& retiring, int64_t now_ms, int64_t advertise_grace_ms) {
  SweepPlan plan;
  std::set<std::string> named;  // instances with a valid message kept in the queue

  for (const auto& m : distinct_messages(view.messages)) {
    MessageVerdict v;
    v.message = m;
    auto drop = [&](const char* rule, std::string reason) {
      v.fate = SweepFate::kDelete;
      v.rule = rule;
      v.reason = std::move(reason);
    };
    std::string error;
    auto parsed = parse_pool_message(m.body, &error);
    if (!parsed) {
      drop("pool.malformed", "malformed message body: " + error);
      plan.messages.push_back(std::move(v));
      continue;
    }
    v.instance_id = parsed->instance_id;
    auto fresh = view.fresh.find(parsed->instance_id);
    if (fresh == view.fresh.end()) {
      v.fate = SweepFate::kRelease;
      v.rule = "pool.unverified";
      v.reason = "record could not be re-read; left in the queue";
    } else if (!fresh->second) {
      drop("pool.stale", "no record for the instance");
    } else {
      const InstanceRecord& r = *fresh->second;
      if (r.pool != view.pool) {
        drop("pool.stale", "instance belongs to pool '" + r.pool + "'");
      } else if (r.state != State::kIdle) {
        drop("pool.stale", "instance is " + std::string(state_name(r.state)));
      } else if (r.generation != parsed->generation) {
        drop("pool.stale", "message for generation " + std::to_string(parsed->generation) + ", record at " +
                               std::to_string(r.generation));
      } else if (r.resource_class != view.resource_class) {
        drop("pool.stale", "instance is of class '" + r.resource_class + "'");
      } else if (retiring.count(r.instance_id)) {
        drop("pool.retiring", "instance is being terminated");
      } else if (!named.insert(r.instance_id).second) {
        drop("pool.duplicate", "another message already advertises it");
      } else {
        v.fate = SweepFate::kRelease;
        v.rule = "pool.valid";
        v.reason = "advertises idle generation " + std::to_string(r.generation);
      }
    }
    plan.messages.push_back(std::move(v));
  }

  std::set<std::string> considered;
  for (const auto& scanned : idle) {
    const std::string& id = scanned.instance_id;
    if (!considered.insert(id).second || retiring.count(id)) continue;
    auto fresh = view.fresh.find(id);
    if (fresh == view.fresh.end()) {
      plan.notes.push_back(id + ": idle record could not be re-read; not re-advertised");
      continue;
    }
    if (!fresh->second || fresh->second->state != State::kIdle ||
        fresh->second->resource_class != view.resource_class || fresh->second->pool != view.pool) {
      continue;  // it moved on since the scan: nothing to advertise
    }
    const InstanceRecord& r = *fresh->second;
    if (named.count(id)) {
      if (r.advertise_pending) {
        plan.mark_advertised.push_back({r, "pool.advertised", "its message is in the queue; clearing the flag"});
      }
      continue;
    }
    if (r.advertise_pending && now_ms - r.state_since_ms < advertise_grace_ms) {
      plan.notes.push_back(id + ": returned to the pool just now; its release is advertising it");
      continue;
    }
    // A release that never confirmed its message (the flag, past the grace) is presumed to have
    // died before sending it: re-advertised even while messages are in flight elsewhere (a sweep
    // or claim that died holds them for its visibility timeout) — at worst a duplicate, which
    // claims drop and the next sweep deletes.
    if (!view.complete && !r.advertise_pending) {
      plan.notes.push_back(id + ": no message seen, but the sweep did not see the whole queue");
      continue;
    }
    plan.advertise.push_back({r, "pool.lost", "idle generation " + std::to_string(r.generation) +
                                                  " has no message in the pool"});
  }
  return plan;
}

}  // namespace runpool::pool
