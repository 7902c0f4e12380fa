#include "common/pool/scale_down_plan.h"

#include <algorithm>
#include <set>

#include "common/pool/keep_failed.h"
#include "common/pool/runner_name.h"
#include "common/pool/span.h"
#include "common/pool/transitions.h"

namespace runpool::pool {

std::string_view scale_down_kind_name(ScaleDownKind kind) {
  switch (kind) {
    case ScaleDownKind::kKeep: return "keep";
    case ScaleDownKind::kMarkOrphan: return "mark-orphan";
    case ScaleDownKind::kUnmarkOrphan: return "unmark-orphan";
    case ScaleDownKind::kTerminate: return "terminate";
    case ScaleDownKind::kRetire: return "retire";
    case ScaleDownKind::kDrain: return "drain";
  }
  return "unknown";
}

namespace {

int64_t min_running_ms(const InstanceRecord& r, const ScaleDownPolicy& p) {
  return r.os == "windows" ? p.min_running_windows_ms : p.min_running_linux_ms;
}

// Records the pass works on: this pool's, not closed.
bool in_scope(const InstanceRecord& r, const std::string& pool) {
  return r.pool == pool && r.state != State::kTerminated;
}

// Phase 1's records. A terminating record is refresh's to finish whatever its mark says, so it
// stays in phase 2 under [terminating] and is never looked up.
bool is_marked_orphan(const InstanceRecord& r) {
  return r.orphan_since_ms != 0 && r.state != State::kTerminating;
}

// The runner the agent registered for the record's current generation; 0 when it has not (yet):
// runner_id stays on the record from earlier assignments, and a claimed instance that is still
// registering must not be matched against — or looked up as — its previous runner.
int64_t current_runner_id(const InstanceRecord& r) {
  return r.signal != AgentSignal::kNone && r.signal_generation == r.generation ? r.runner_id : 0;
}

bool needs_runner_list(const InstanceRecord& r) {
  return r.state == State::kCreated || r.state == State::kClaimed || r.state == State::kRunning;
}

// The order of eviction: who keeps a quota slot first. oldest_first keeps the newest, newest_first
// the oldest; the instance id breaks ties either way.
bool kept_before(const InstanceRecord& a, const InstanceRecord& b, Eviction e) {
  if (a.created_ms != b.created_ms) {
    return e == Eviction::kOldestFirst ? a.created_ms > b.created_ms : a.created_ms < b.created_ms;
  }
  return a.instance_id < b.instance_id;
}

std::string runner_words(const RunnerView& v) {
  return "runner " + std::to_string(v.id) + " (" + (v.online ? "online" : "offline") + ", " +
         (v.busy ? "busy" : "idle") + ")";
}

class ScaleDownPlanner {
 public:
  ScaleDownPlanner(const ScaleDownSnapshot& s, const ScaleDownPolicy& p) : s_(s), p_(p) {}

  ScaleDownPlan run() {
    std::vector<const InstanceRecord*> orphans, active;
    for (const auto& r : s_.records) {
      if (!in_scope(r, s_.pool)) continue;
      (is_marked_orphan(r) ? orphans : active).push_back(&r);
    }
    std::sort(orphans.begin(), orphans.end(),
              [](const InstanceRecord* a, const InstanceRecord* b) { return a->instance_id < b->instance_id; });
    for (const auto* r : orphans) plan_.decisions.push_back(orphan(*r));

    std::vector<ScaleDownDecision> phase2;
    std::map<std::string, std::vector<size_t>> candidates;  // by class: rows that consult the quota
    for (const auto* r : active) {
      bool candidate = false;
      phase2.push_back(active_record(*r, candidate));
      if (candidate) candidates[r->resource_class].push_back(phase2.size() - 1);
    }
    for (auto& [cls, rows] : candidates) apply_quota(cls, rows, phase2);
    std::stable_sort(phase2.begin(), phase2.end(), [this](const ScaleDownDecision& a, const ScaleDownDecision& b) {
      if (a.owner != b.owner) return a.owner < b.owner;
      if (a.record.resource_class != b.record.resource_class) return a.record.resource_class < b.record.resource_class;
      return kept_before(a.record, b.record, quota(a.record.resource_class).eviction);
    });
    for (auto& d : phase2) plan_.decisions.push_back(std::move(d));
    for (const auto& owner : failed_owners_) {
      plan_.notes.push_back("owner " + owner + ": GitHub's runner list could not be read; its instances are kept");
    }
    return std::move(plan_);
  }

 private:
  static ScaleDownDecision decide(const InstanceRecord& r, int phase, ScaleDownKind kind, std::string rule,
                                  std::string reason, std::string owner) {
    ScaleDownDecision d;
    d.kind = kind;
    d.phase = phase;
    d.rule = std::move(rule);
    d.reason = std::move(reason);
    d.owner = std::move(owner);
    d.record = r;
    // Phase 1 keys its lookup by the recorded id (checked by name once found); phase 2 names a
    // runner only once matched by name.
    d.runner_id = phase == 1 ? current_runner_id(r) : 0;
    return d;
  }

  const IdleQuota& quota(const std::string& resource_class) const {
    static const IdleQuota kNone{};
    auto it = s_.quotas.find(resource_class);
    return it == s_.quotas.end() ? kNone : it->second;
  }

  // ---- phase 1: orphans marked on an earlier pass

  ScaleDownDecision orphan(const InstanceRecord& r) const {
    const int64_t now = s_.now_ms;
    const std::string owner = owner_scope(r.reg_url);
    const std::string marked = "orphan-marked " + span(now - r.orphan_since_ms) + " ago";
    auto d = [&](ScaleDownKind kind, const char* rule, std::string reason) {
      return decide(r, 1, kind, rule, std::move(reason), owner);
    };
    if (r.bypass_removal) return d(ScaleDownKind::kKeep, "bypass", marked + ", but marked bypass-removal");
    if (r.kept_until_ms != 0) return d(ScaleDownKind::kKeep, "kept", marked + ", but " + kept_description(r));
    // The agent is the authority on busy, but only while it is alive to say so.
    if (r.busy && now - r.heartbeat_ms < p_.agent_silence_ms) {
      return d(ScaleDownKind::kKeep, "orphan.agent-busy",
               marked + ", but the agent reports busy (heartbeat " + span(now - r.heartbeat_ms) + " ago)");
    }
    const int64_t runner_id = current_runner_id(r);
    if (runner_id == 0) {
      return d(ScaleDownKind::kTerminate, "orphan.no-runner-id",
               marked + " and no runner registered for generation " + std::to_string(r.generation));
    }
    const std::string id = std::to_string(runner_id);
    auto it = s_.lookups.find(runner_id);
    if (it == s_.lookups.end()) {
      return d(ScaleDownKind::kKeep, "orphan.lookup-failed", marked + "; runner " + id + " was not looked up");
    }
    const RunnerLookup& l = it->second;
    switch (l.result) {
      case RunnerLookup::Result::kNotFound:
        return d(ScaleDownKind::kTerminate, "orphan.gone", marked + "; GitHub does not know runner " + id);
      case RunnerLookup::Result::kFound:
        if (l.runner.name != runner_name(s_.pool, r.instance_id, r.generation)) {
          // A forged runner_id naming another's runner: that runner is never deleted or counted.
          ScaleDownDecision other = d(ScaleDownKind::kTerminate, "orphan.not-its-runner",
                                      marked + "; runner " + id + " is not its assignment's runner");
          other.runner_id = 0;
          return other;
        }
        if (!l.runner.online && l.runner.busy) {
          return d(ScaleDownKind::kTerminate, "orphan.offline-busy",
                   marked + "; GitHub says runner " + id + " is offline and busy");
        }
        return d(ScaleDownKind::kUnmarkOrphan, "orphan.false-positive",
                 "GitHub knows " + runner_words(l.runner) + ": not an orphan");
      case RunnerLookup::Result::kFailed:
        break;
    }
    return d(ScaleDownKind::kKeep, "orphan.lookup-failed",
             marked + "; looking up runner " + id + " failed" + (l.error.empty() ? "" : ": " + l.error) +
                 "; retried next pass");
  }

  // ---- phase 2: every other record. `candidate` is set for the rows that consult the quota; their
  // kind and rule are settled by apply_quota.

  ScaleDownDecision active_record(const InstanceRecord& r, bool& candidate) {
    const int64_t now = s_.now_ms;
    const std::string state(state_name(r.state));
    const std::string owner = needs_runner_list(r) || r.state == State::kDraining ? owner_scope(r.reg_url) : "";
    auto d = [&](ScaleDownKind kind, const char* rule, std::string reason) {
      return decide(r, 2, kind, rule, std::move(reason), owner);
    };
    // Clamped: created_at and now are two processes' estimates of the AWS clock (1 s resolution),
    // so a record written within the last second may seem to be created after now.
    const int64_t runtime = std::max<int64_t>(0, now - r.created_ms);
    const int64_t min_ms = min_running_ms(r, p_);
    auto too_young = [&] {
      return d(ScaleDownKind::kKeep, "min-running-time",
               state + ", up " + span(runtime) + ", under the minimum running time of " + span(min_ms) + " (" +
                   (r.os == "windows" ? "windows" : "linux") + ")");
    };

    if (r.bypass_removal) return d(ScaleDownKind::kKeep, "bypass", state + ", marked bypass-removal");
    // A failed instance kept for inspection: refresh ends it when its keep does.
    if (r.kept_until_ms != 0) return d(ScaleDownKind::kKeep, "kept", state + ", " + kept_description(r));
    switch (r.state) {
      case State::kTerminating:
        return d(ScaleDownKind::kKeep, "terminating", "terminating; refresh finishes it");
      case State::kDraining:
        if (r.shared && agent_reported(r, AgentSignal::kDrained)) {
          // `drained` is the agent's word, forgeable mid-job: GitHub must not list its runner online.
          auto list = s_.runners.find(owner);
          if (owner.empty() || list == s_.runners.end() || !list->second) {
            if (!owner.empty()) failed_owners_.insert(owner);
            return d(ScaleDownKind::kKeep, "drained.unconfirmed",
                     "drained, but GitHub's runner list could not be read to confirm its runner is gone");
          }
          if (const RunnerView* v = match(r, *list->second); v && v->online) {
            ScaleDownDecision kept = d(ScaleDownKind::kKeep, "drained.runner-online",
                                       "its agent reported drained, but GitHub lists " + runner_words(*v));
            kept.runner_id = v->id;
            return kept;
          }
          return d(ScaleDownKind::kTerminate, "drained", "shared runner drained for generation " +
                                                             std::to_string(r.generation) +
                                                             ": terminated, never returned to the pool");
        }
        return d(ScaleDownKind::kKeep, "draining", "draining; its drain is under way");
      case State::kIdle:
        if (runtime < min_ms) return too_young();
        candidate = true;
        return d(ScaleDownKind::kKeep, "idle.quota", "idle pool instance");
      default:
        break;
    }

    // created, claimed or running: GitHub's list is the cross-check.
    auto list = s_.runners.find(owner);
    if (owner.empty() || list == s_.runners.end() || !list->second) {
      if (!owner.empty()) failed_owners_.insert(owner);
      return d(ScaleDownKind::kKeep, "github.unavailable",
               state + (owner.empty() ? ", its reg_url names no owner" : ", owner " + owner + "'s runner list failed"));
    }
    const RunnerView* found = match(r, *list->second);
    if (!found) {
      // Measured from the state's start: a claimed pool instance is registering anew, however
      // long ago it was launched; a running one registered before it became running.
      const int64_t since = now - (r.state_since_ms ? r.state_since_ms : r.created_ms);
      if (since >= p_.boot_time_ms) {
        return d(ScaleDownKind::kMarkOrphan, "missing.boot-exceeded",
                 state + " for " + span(since) + ", not among " + owner + "'s runners (boot time " +
                     span(p_.boot_time_ms) + ")");
      }
      return d(ScaleDownKind::kKeep, "missing.booting",
               state + " for " + span(since) + ", not among " + owner + "'s runners yet");
    }
    ScaleDownDecision found_d = [&] {
      if (r.state != State::kRunning) {
        return d(ScaleDownKind::kKeep, "registering", state + ", " + runner_words(*found) + " registered");
      }
      if (!r.shared) {
        return d(ScaleDownKind::kKeep, "assigned",
                 "running a workflow's assignment" + (r.label.empty() ? "" : " (" + r.label + ")"));
      }
      if (runtime < min_ms) return too_young();
      if (r.busy) return d(ScaleDownKind::kKeep, "busy.agent", "shared runner, the agent reports busy");
      if (found->busy) return d(ScaleDownKind::kKeep, "busy.github", "shared runner, GitHub says " + runner_words(*found));
      candidate = true;
      return d(ScaleDownKind::kKeep, "idle.quota", "idle shared runner");
    }();
    found_d.runner_id = found->id;
    return found_d;
  }

  // By the generation's runner name, never by runner_id alone: the id is the agent's word, and a
  // forged one would match — and drain, take the labels of — another's runner (runner_identity.h).
  const RunnerView* match(const InstanceRecord& r, const std::vector<RunnerView>& runners) const {
    const std::string name = runner_name(s_.pool, r.instance_id, r.generation);
    for (const auto& v : runners) {
      if (v.name == name) return &v;
    }
    return nullptr;
  }

  // The class's candidates in eviction order: the first `idle` keep their slot, the rest go.
  void apply_quota(const std::string& cls, std::vector<size_t>& rows, std::vector<ScaleDownDecision>& decisions) const {
    const IdleQuota& q = quota(cls);
    std::sort(rows.begin(), rows.end(), [&](size_t a, size_t b) {
      return kept_before(decisions[a].record, decisions[b].record, q.eviction);
    });
    const std::string of_quota =
        q.idle == IdleQuota::kKeepAll
            ? "no idle limit for " + cls + " (" + q.source + ")"
            : "the idle quota of " + std::to_string(q.idle) + " for " + cls + " (" +
                  std::string(eviction_name(q.eviction)) + ")";
    for (size_t i = 0; i < rows.size(); ++i) {
      ScaleDownDecision& d = decisions[rows[i]];
      const std::string what = d.record.state == State::kIdle ? "idle pool instance" : "idle shared runner";
      if (static_cast<int64_t>(i) < q.idle) {
        d.kind = ScaleDownKind::kKeep;
        d.rule = "idle.quota";
        d.reason = what + ", slot " + std::to_string(i + 1) + " of " + of_quota;
      } else {
        d.kind = d.record.state == State::kIdle ? ScaleDownKind::kRetire : ScaleDownKind::kDrain;
        d.rule = "idle.over-quota";
        d.reason = what + " beyond " + of_quota;
      }
    }
  }

  const ScaleDownSnapshot& s_;
  const ScaleDownPolicy& p_;
  ScaleDownPlan plan_;
  std::set<std::string> failed_owners_;
};

}  // namespace

ScaleDownPlan plan_scale_down(const ScaleDownSnapshot& snapshot, const ScaleDownPolicy& policy) {
  return ScaleDownPlanner(snapshot, policy).run();
}

std::vector<std::string> owners_to_list(const std::vector<InstanceRecord>& records, const std::string& pool) {
  std::set<std::string> owners;
  for (const auto& r : records) {
    // A shared runner's drained is checked against the list too (the [drained] row).
    const bool drained_shared = r.shared && r.state == State::kDraining && agent_reported(r, AgentSignal::kDrained);
    if (!in_scope(r, pool) || !(needs_runner_list(r) || drained_shared) || r.orphan_since_ms != 0) continue;
    std::string owner = owner_scope(r.reg_url);
    if (!owner.empty()) owners.insert(std::move(owner));
  }
  return {owners.begin(), owners.end()};
}

std::vector<int64_t> orphan_lookups(const std::vector<InstanceRecord>& records, const std::string& pool) {
  std::set<int64_t> ids;
  for (const auto& r : records) {
    if (in_scope(r, pool) && is_marked_orphan(r) && !r.bypass_removal && current_runner_id(r) != 0) {
      ids.insert(current_runner_id(r));
    }
  }
  return {ids.begin(), ids.end()};
}

std::string owner_scope(const std::string& reg_url) {
  std::string_view v = reg_url;
  if (auto scheme = v.find("://"); scheme != std::string_view::npos) v.remove_prefix(scheme + 3);
  auto slash = v.find('/');
  if (slash == std::string_view::npos) return "";
  v.remove_prefix(slash);
  if (auto end = v.find_first_of("?#"); end != std::string_view::npos) v = v.substr(0, end);
  while (!v.empty() && v.front() == '/') v.remove_prefix(1);
  while (!v.empty() && v.back() == '/') v.remove_suffix(1);
  return std::string(v);
}

ScaleDownDecision recheck_before_drain(const ScaleDownDecision& drain, const RunnerLookup& fresh) {
  if (drain.kind != ScaleDownKind::kDrain) return drain;
  ScaleDownDecision d = drain;
  const std::string id = std::to_string(drain.runner_id);
  switch (fresh.result) {
    case RunnerLookup::Result::kFound:
      if (!fresh.runner.busy) return drain;
      d.kind = ScaleDownKind::kKeep;
      d.rule = "busy.github-recheck";
      d.reason = "GitHub says runner " + id + " is busy now; not drained";
      return d;
    case RunnerLookup::Result::kNotFound:
      return drain;  // nothing left to take a job: the drain only cleans up
    case RunnerLookup::Result::kFailed:
      break;
  }
  d.kind = ScaleDownKind::kKeep;
  d.rule = "github.recheck-failed";
  d.reason = "re-reading runner " + id + " before the drain failed" + (fresh.error.empty() ? "" : ": " + fresh.error);
  return d;
}

int scale_up_shortfall(const std::vector<InstanceRecord>& records, const std::string& pool,
                       const std::string& resource_class, const IdleQuota& quota) {
  int idle = 0;
  for (const auto& r : records) {
    if (r.pool != pool || r.resource_class != resource_class || r.orphan_since_ms != 0) continue;
    const bool booting = r.state == State::kCreated || r.state == State::kClaimed;
    if (booting || (r.state == State::kRunning && !r.busy)) ++idle;
  }
  return std::max(0, quota.idle - idle);
}

int warm_up_shortfall(const std::vector<InstanceRecord>& records, const std::string& pool,
                      const std::string& resource_class, const IdleQuota& quota, const std::string& warm_prefix) {
  int idle = 0;
  for (const auto& r : records) {
    if (r.pool != pool || r.resource_class != resource_class || r.orphan_since_ms != 0) continue;
    const bool warming = !warm_prefix.empty() && r.label.rfind(warm_prefix, 0) == 0 &&
                         r.state != State::kTerminating && r.state != State::kTerminated;
    if (r.state == State::kIdle || warming) ++idle;
  }
  return std::max(0, quota.idle - idle);
}

std::string describe(const ScaleDownDecision& d) {
  return std::string(scale_down_kind_name(d.kind)) + " " + d.record.instance_id + " [" + d.rule + "]: " + d.reason;
}

}  // namespace runpool::pool
