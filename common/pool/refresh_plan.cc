#include "common/pool/refresh_plan.h"

#include <map>
#include <set>

#include "common/aws/ec2_types.h"
#include "common/pool/agent_text.h"
#include "common/pool/keep_failed.h"
#include "common/pool/retire_plan.h"
#include "common/pool/runner_name.h"
#include "common/pool/span.h"

namespace runpool::pool {

std::string_view action_name(ActionKind kind) {
  switch (kind) {
    case ActionKind::kTerminate: return "terminate";
    case ActionKind::kRetryTerminate: return "retry-terminate";
    case ActionKind::kTerminateUntracked: return "terminate-untracked";
    case ActionKind::kClose: return "close";
    case ActionKind::kDrain: return "drain";
    case ActionKind::kReturnToPool: return "return-to-pool";
    case ActionKind::kAdvertise: return "advertise";
    case ActionKind::kMarkAdvertised: return "mark-advertised";
    case ActionKind::kDeleteRecord: return "delete-record";
    case ActionKind::kDeleteRunner: return "delete-runner";
    case ActionKind::kDeleteMessage: return "delete-message";
    case ActionKind::kReleaseMessage: return "release-message";
    case ActionKind::kMarkRunning: return "mark-running";
    case ActionKind::kKeep: return "keep";
  }
  return "unknown";
}

namespace {

class RefreshPlanner {
 public:
  RefreshPlanner(const RefreshSnapshot& s, const RefreshPolicy& p) : s_(s), p_(p) {
    for (const auto& r : s_.records) {
      if (r.pool == s_.pool) mine_.emplace(r.instance_id, &r);
      if (r.state != State::kTerminated) live_anywhere_.insert(r.instance_id);
    }
    if (s_.ec2) {
      for (const auto& i : *s_.ec2) ec2_.emplace(i.instance_id, &i);
    }
    for (const auto& v : s_.pools) swept_.insert(v.resource_class);
  }

  RefreshPlan run() {
    for (const auto& [id, r] : mine_) plan_record(*r);
    plan_untracked();
    plan_pools();
    plan_ghosts();
    // Pool messages first: they are invisible to provisions until released or deleted.
    RefreshPlan plan;
    for (auto* list : {&messages_, &records_, &runners_, &retention_}) {
      for (auto& a : *list) plan.actions.push_back(std::move(a));
    }
    plan.notes = std::move(notes_);
    return plan;
  }

 private:
  void add(std::vector<Action>& list, ActionKind kind, const InstanceRecord& r, std::string rule,
           std::string reason, bool warn = false) {
    Action a;
    a.kind = kind;
    a.rule = std::move(rule);
    a.reason = std::move(reason);
    a.warn = warn;
    a.instance_id = r.instance_id;
    a.record = r;
    a.resource_class = r.resource_class;
    if (kind == ActionKind::kTerminate || kind == ActionKind::kRetryTerminate || kind == ActionKind::kClose) {
      retiring_.insert(r.instance_id);
    }
    list.push_back(std::move(a));
  }

  // One action per record at most: the first rule that applies.
  void plan_record(const InstanceRecord& r) {
    const int64_t now = s_.now_ms;
    const std::string state(state_name(r.state));
    if (r.state == State::kTerminated) {
      if (deadline_passed(r, now)) {
        add(retention_, ActionKind::kDeleteRecord, r, "retention",
            "terminated " + span(now - r.state_since_ms) + " ago; retention over");
      }
      return;
    }

    if (s_.ec2) {
      auto it = ec2_.find(r.instance_id);
      if (it == ec2_.end()) {
        if (now - r.created_ms >= p_.launch_grace_ms) {
          add(records_, ActionKind::kClose, r, "ec2.gone", state + " record, but EC2 does not know the instance");
          return;
        }
        notes_.push_back(r.instance_id + ": not in EC2's answer yet, launched " + span(now - r.created_ms) +
                         " ago (within the launch grace)");
      } else if (aws::instance_gone(it->second->state)) {
        add(records_, ActionKind::kClose, r, "ec2.gone", state + " record, but the instance is " + it->second->state);
        return;
      }
    }

    if (r.state == State::kTerminating) {
      if (deadline_passed(r, now)) {
        add(records_, ActionKind::kRetryTerminate, r, "terminating.overdue",
            "still not terminated " + span(now - r.state_since_ms) + " after termination began", true);
      } else {
        add(records_, ActionKind::kRetryTerminate, r, "terminating.retry", "termination not confirmed yet");
      }
      return;
    }

    // keep_failed: a kept instance waits out its keep, whatever else holds, then goes.
    const KeepVerdict keep = keep_verdict(r, now, p_.keep_failed_ms, false);
    switch (keep) {
      case KeepVerdict::kKept:
        notes_.push_back(r.instance_id + ": " + kept_description(r));
        return;
      case KeepVerdict::kKeepOver:
        add(records_, ActionKind::kTerminate, r, "keep_failed.over",
            state + ", kept for inspection (keep_failed); the keep ended " + span(now - r.kept_until_ms) + " ago");
        return;
      case KeepVerdict::kKeep:
      case KeepVerdict::kNotKept:
        break;
    }
    if (agent_reported(r, AgentSignal::kFailed) && !contradicted(r, "failed")) {
      const std::string failed = state + ", agent reported failed" + (r.signal_detail.empty() ? "" : ": " + agent_text(r.signal_detail));
      if (keep == KeepVerdict::kKeep) {
        add(records_, ActionKind::kKeep, r, "agent.failed.kept", failed + "; kept for inspection (keep_failed)");
      } else {
        add(records_, ActionKind::kTerminate, r, "agent.failed", failed);
      }
      return;
    }
    if (s_.ec2) {
      auto it = ec2_.find(r.instance_id);
      if (it != ec2_.end() && aws::instance_stopped(it->second->state)) {
        add(records_, ActionKind::kTerminate, r, "ec2.stopped", state + " record, but the instance is " +
                                                                    it->second->state);
        return;
      }
    }
    // The agent finished its drain but nobody returned it: release crashed or gave up just after.
    // This wins over the drain deadline: the instance is clean and reusable. A shared pool's
    // runner is never reused: its drain (scale-down's) ends in termination.
    if (r.state == State::kDraining && agent_reported(r, AgentSignal::kDrained) && !contradicted(r, "drained")) {
      if (r.shared) {
        add(records_, ActionKind::kTerminate, r, "handshake.drained",
            "shared runner drained but not terminated; shared instances never return to the pool");
      } else if (r.retire_pending) {
        add(records_, ActionKind::kTerminate, r, "retire.pending", "drained, and marked for retirement");
      } else {
        add(records_, ActionKind::kReturnToPool, r, "handshake.drained", "drained but never returned to the pool");
      }
      return;
    }

    // A shared runner serves once registered; the scale-up that launched it may have stopped
    // waiting (--no-wait, a timeout, a crash). A run-scoped one waits for its provision instead.
    if (r.shared && (r.state == State::kCreated || r.state == State::kClaimed) &&
        agent_reported(r, AgentSignal::kRegistered)) {
      add(records_, ActionKind::kMarkRunning, r, "handshake.registered",
          "shared runner registered for generation " + std::to_string(r.generation) + " but not marked running");
      return;
    }

    const bool passed = deadline_passed(r, now);
    const bool hard_passed = r.hard_deadline_ms != 0 && now >= r.hard_deadline_ms;
    const std::string late = " by " + span(now - r.deadline_ms);
    switch (r.state) {
      case State::kCreated:
      case State::kClaimed:
        if (!passed) break;
        if (agent_reported(r, AgentSignal::kRegistered)) {
          // Registered but never marked running (its provision gave up or died): drain it
          // gracefully; the drained instance returns to the pool.
          add(records_, ActionKind::kDrain, r, "deadline." + state + ".registered",
              state + " past its deadline" + late + ", registered: draining");
        } else if (keep_verdict(r, now, p_.keep_failed_ms, true) == KeepVerdict::kKeep) {
          add(records_, ActionKind::kKeep, r, "deadline." + state + ".kept",
              state + " past its deadline" + late + ", never registered; kept for inspection (keep_failed)");
        } else {
          add(records_, ActionKind::kTerminate, r, "deadline." + state,
              state + " past its deadline" + late + ", never registered");
        }
        return;
      case State::kRunning:
        if (hard_passed) {
          add(records_, ActionKind::kTerminate, r, "deadline.running.hard",
              "running past its hard deadline by " + span(now - r.hard_deadline_ms));
          return;
        }
        if (passed) {
          add(records_, ActionKind::kDrain, r, "deadline.running", "running past its maximum runtime" + late);
          return;
        }
        break;
      case State::kDraining:
        if (passed || hard_passed) {
          add(records_, ActionKind::kTerminate, r, "deadline.draining",
              "draining past its deadline" + (passed ? late : " (hard)") + ", agent never confirmed");
          return;
        }
        break;
      case State::kIdle:
        if (passed) {
          add(records_, ActionKind::kTerminate, r, "deadline.idle", "idle past its deadline" + late);
          return;
        }
        break;
      default:
        break;
    }

    if (r.state != State::kIdle) return;
    {
      auto age = p_.max_instance_age_ms.find(r.resource_class);
      std::string due = retirement_due(r, now, age == p_.max_instance_age_ms.end() ? 0 : age->second);
      if (!due.empty()) {
        add(records_, ActionKind::kTerminate, r, r.retire_pending ? "retire.pending" : "retire.max-age",
            "idle, " + due + (r.retire_pending ? "" : " (" + span(now - r.created_ms) + " old)"));
        return;
      }
    }
    if (agent_reported(r, AgentSignal::kInterrupted)) {
      add(records_, ActionKind::kTerminate, r, "agent.interrupted",
          "idle, agent reported an interruption" + (r.signal_detail.empty() ? "" : ": " + agent_text(r.signal_detail)));
      return;
    }
    const int64_t last_sign = std::max(r.heartbeat_ms, r.state_since_ms);
    if (now - last_sign >= p_.agent_silence_ms) {
      add(records_, ActionKind::kTerminate, r, "agent.silent",
          "idle, no heartbeat for " + span(now - last_sign));
      return;
    }
    // A swept class's idle records are decided by the sweep, which sees the queue. A shared record
    // is never advertised: no provision may claim it.
    if (r.advertise_pending && !r.shared && !swept_.count(r.resource_class) && now - r.state_since_ms >= p_.advertise_grace_ms) {
      add(records_, ActionKind::kAdvertise, r, "handshake.advertise",
          "idle " + span(now - r.state_since_ms) + " with its pool message never confirmed sent");
    }
  }

  // `failed` and `drained` are the agent's word, and anyone holding the instance role's credentials
  // can write them (docs/security.md, "The record"). An assigned instance is terminated or returned on
  // that word only while GitHub lists no runner of the instance online (by name, of any generation:
  // `generation` is writable with those credentials too): a real agent that failed has stopped its
  // Listener, and one that drained has deregistered it. Contradicted or unconfirmed, the word is
  // noted and the deadlines decide.
  bool contradicted(const InstanceRecord& r, const char* word) {
    if (r.state != State::kCreated && r.state != State::kClaimed && r.state != State::kRunning &&
        r.state != State::kDraining) {
      return false;  // no assignment, no runner to serve a job
    }
    std::string why;
    if (!s_.runners) {
      why = "GitHub's runners could not be read to confirm it";
    } else {
      for (const auto& v : *s_.runners) {
        auto parts = parse_runner_name(s_.pool, v.name);
        if (parts && parts->instance_id == r.instance_id && v.online) {
          why = "GitHub lists runner " + v.name + " online" + (v.busy ? " and busy" : "");
        }
      }
    }
    if (why.empty()) return false;
    notes_.push_back(r.instance_id + ": its agent reported " + word + ", but " + why +
                     "; not acted on (its deadlines still apply)");
    return true;
  }

  void plan_untracked() {
    if (!s_.ec2) return;
    for (const auto& i : *s_.ec2) {
      if (aws::instance_gone(i.state) || i.pool_tag != s_.pool || i.table_tag != s_.table) continue;
      if (live_anywhere_.count(i.instance_id)) continue;
      if (i.launch_ms == 0) {
        notes_.push_back(i.instance_id + ": no live record, but EC2 gave no launch time; spared");
        continue;
      }
      const int64_t age = s_.now_ms - i.launch_ms;
      auto rec = mine_.find(i.instance_id);
      const std::string why = rec == mine_.end() ? "no record" : "its record is terminated";
      if (age < p_.launch_grace_ms) {
        notes_.push_back(i.instance_id + ": " + why + ", launched " + span(age) + " ago (within the launch grace)");
        continue;
      }
      Action a;
      a.kind = ActionKind::kTerminateUntracked;
      a.rule = "ec2.untracked";
      a.reason = i.state + " instance tagged for the pool, " + why + ", launched " + span(age) + " ago";
      a.instance_id = i.instance_id;
      if (rec != mine_.end()) a.record = *rec->second;
      records_.push_back(std::move(a));
    }
  }

  void plan_pools() {
    for (const auto& view : s_.pools) {
      SweepPlan sweep = plan_pool_sweep(view, idle_records(s_.records, s_.pool, view.resource_class), retiring_,
                                        s_.now_ms, p_.advertise_grace_ms);
      for (auto& v : sweep.messages) {
        Action a;
        a.kind = v.fate == SweepFate::kDelete ? ActionKind::kDeleteMessage : ActionKind::kReleaseMessage;
        a.rule = v.rule;
        a.reason = v.reason;
        a.warn = v.rule == "pool.malformed";
        a.instance_id = v.instance_id;
        a.resource_class = view.resource_class;
        a.message = v.message;
        messages_.push_back(std::move(a));
      }
      for (auto& d : sweep.advertise) add(records_, ActionKind::kAdvertise, d.record, d.rule, d.reason);
      for (auto& d : sweep.mark_advertised) add(records_, ActionKind::kMarkAdvertised, d.record, d.rule, d.reason);
      for (auto& n : sweep.notes) notes_.push_back(view.resource_class + ": " + n);
    }
  }

  void plan_ghosts() {
    if (!s_.runners) return;
    for (const auto& runner : *s_.runners) {
      auto parts = parse_runner_name(s_.pool, runner.name);
      if (!parts) continue;  // not one of this pool's runners: never touched
      auto it = mine_.find(parts->instance_id);
      std::string why;
      if (it == mine_.end()) {
        why = "no record for " + parts->instance_id;
      } else {
        const InstanceRecord& r = *it->second;
        if (r.state == State::kTerminated || r.state == State::kTerminating) {
          why = "its instance is " + std::string(state_name(r.state));
        } else if (parts->generation < r.generation) {
          why = "generation " + std::to_string(parts->generation) + " is over; the instance is at " +
                std::to_string(r.generation);
        } else if (parts->generation == r.generation && r.state == State::kIdle) {
          why = "its instance drained and is idle";
        } else if (parts->generation > r.generation) {
          notes_.push_back(runner.name + ": names a generation the record never had; left alone");
          continue;
        } else {
          continue;  // serving its assignment
        }
      }
      Action a;
      a.kind = ActionKind::kDeleteRunner;
      a.rule = "ghost.runner";
      a.reason = "runner " + runner.name + " (id " + std::to_string(runner.id) + "): " + why;
      a.instance_id = parts->instance_id;
      a.runner_id = runner.id;
      a.runner_name = runner.name;
      runners_.push_back(std::move(a));
    }
  }

  const RefreshSnapshot& s_;
  const RefreshPolicy& p_;
  std::map<std::string, const InstanceRecord*> mine_;
  std::set<std::string> live_anywhere_;
  std::map<std::string, const Ec2Instance*> ec2_;
  std::set<std::string> swept_;
  std::set<std::string> retiring_;
  std::vector<Action> messages_, records_, runners_, retention_;
  std::vector<std::string> notes_;
};

}  // namespace

RefreshPlan plan_refresh(const RefreshSnapshot& snapshot, const RefreshPolicy& policy) {
  return RefreshPlanner(snapshot, policy).run();
}

std::vector<InstanceRecord> idle_records(const std::vector<InstanceRecord>& records, const std::string& pool,
                                         const std::string& resource_class) {
  std::vector<InstanceRecord> out;
  for (const auto& r : records) {
    if (r.pool == pool && r.state == State::kIdle && !r.shared && r.resource_class == resource_class) {
      out.push_back(r);
    }
  }
  return out;
}

std::string describe(const Action& a) {
  std::string subject;
  switch (a.kind) {
    case ActionKind::kDeleteRunner: subject = a.runner_name; break;
    case ActionKind::kDeleteMessage:
    case ActionKind::kReleaseMessage:
      subject = "message " + a.message.message_id + " in " + a.resource_class;
      break;
    default: subject = a.instance_id; break;
  }
  return std::string(action_name(a.kind)) + " " + subject + " [" + a.rule + "]: " + a.reason;
}

}  // namespace runpool::pool
