#include "controller/await_agents.h"

#include <algorithm>
#include <map>
#include <set>

#include <spdlog/spdlog.h>

namespace runpool::controller {

AwaitResult await_agents(Context& ctx, std::vector<AwaitItem> items, const AwaitOptions& o, const AwaitHandler& on) {
  auto next_ec2_look = ctx.clock.steady_now() + (o.look_at_ec2_first ? Duration{0} : o.ec2_look_interval);
  std::map<std::string, std::string> ec2;  // instance id → its state at the last look (dead stays dead)
  AwaitResult result;
  std::map<std::string, pool::InstanceRecord> now;

  // Judges the items `which` selects against `now` and `ec2`, lets the handler act; false on kStop.
  // Ids left waiting go into `waiting`.
  auto pass = [&](const std::function<bool(const AwaitItem&)>& which, std::set<std::string>& waiting) {
    for (auto it = items.begin(); it != items.end();) {
      if (!which(*it)) {
        ++it;
        continue;
      }
      const std::string& id = it->written.instance_id;
      auto found = now.find(id);
      const pool::InstanceRecord* current = found == now.end() ? nullptr : &found->second;
      pool::HandshakeFacts f;
      f.awaited = o.awaited;
      f.written = &it->written;
      f.current = current;
      if (auto e = ec2.find(id); e != ec2.end()) f.ec2_state = e->second;
      f.now_ms = ctx.now_ms();
      f.max_heartbeat_age_ms = ctx.settings.max_heartbeat_age.count();
      f.claimed_warm = it->claimed_warm;
      const pool::HandshakeDecision d = pool::judge_handshake(f);
      AwaitAction a = AwaitAction::kKeep;
      try {
        a = on(f, d);
      } catch (const std::exception& e) {
        spdlog::warn("instance {}: {}; trying again", id, e.what());
      }
      if (a == AwaitAction::kStop) return false;
      if (a == AwaitAction::kKeep && d.verdict == pool::Verdict::kWait) waiting.insert(id);
      it = a == AwaitAction::kResolve ? items.erase(it) : std::next(it);
    }
    return true;
  };

  while (!items.empty()) {
    // One batch read of every record still waited for.
    std::vector<std::string> ids;
    for (const auto& i : items) ids.push_back(i.written.instance_id);
    bool read = false;
    try {
      now = ctx.table.get_many(ids);
      read = true;
    } catch (const std::exception& e) {
      if (!o.retry_failed_reads) throw;
      spdlog::warn("reading {} record(s): {}; trying again", ids.size(), e.what());
    }
    std::set<std::string> waiting;
    if (read && !pass([](const AwaitItem&) { return true; }, waiting)) {
      result.end = AwaitEnd::kStopped;
      break;
    }
    // Those still waited for on their records alone: is the instance still there? One that died
    // (spot reclaimed, killed, its agent's self-termination) will never answer.
    if (read && !waiting.empty() && ctx.clock.steady_now() >= next_ec2_look) {
      next_ec2_look = ctx.clock.steady_now() + o.ec2_look_interval;
      std::vector<std::string> look(waiting.begin(), waiting.end());
      bool looked = false;
      try {
        for (const auto& i : ctx.compute.describe(look)) ec2[i.instance_id] = i.state.name;
        looked = true;
      } catch (const std::exception& e) {
        spdlog::warn("could not look at {} instance(s) in EC2 ({}); waiting on", look.size(), e.what());
      }
      std::set<std::string> still;
      if (looked && !pass([&](const AwaitItem& i) { return waiting.count(i.written.instance_id) > 0; }, still)) {
        result.end = AwaitEnd::kStopped;
        break;
      }
    }
    if (items.empty()) break;
    if (ctx.clock.steady_now() >= o.deadline) {
      result.end = AwaitEnd::kTimedOut;
      break;
    }
    if (o.stop_on_cancel && ctx.cancelled.load()) {
      result.end = AwaitEnd::kCancelled;
      break;
    }
    ctx.clock.sleep_for(std::min<Duration>(
        ctx.settings.poll_interval,
        std::chrono::duration_cast<Duration>(o.deadline - ctx.clock.steady_now()) + Duration{1}));
  }
  result.pending = std::move(items);
  return result;
}

}  // namespace runpool::controller
