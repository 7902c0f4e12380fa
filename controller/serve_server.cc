#include "controller/serve_server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/github/scaleset_errors.h"

namespace runpool::controller {

namespace {

// How often the scale set's metrics are emitted (and a CloudWatch Logs sink flushed).
constexpr auto kMetricsEvery = std::chrono::seconds(60);
// How often the serving loop looks at the lease (and a cancellation) while it is not ours.
constexpr auto kStandbyTurn = std::chrono::milliseconds(200);

}  // namespace

Server::Server(Context& ctx, ServeDeps& deps, Threads threads)
    : ctx_(ctx),
      s_(ctx.settings),
      deps_(deps),
      threads_(threads),
      set_name_(s_.scale_set()),
      next_metrics_(ctx.clock.steady_now() + kMetricsEvery),
      lease_(ctx, deps.leases, serve_lease_name(s_), deps.holder, [this] { wake(); }) {}

Server::~Server() {
  if (listener_.joinable()) {  // only when run() was left by an exception
    stop_listening_.store(true);
    deps_.stop_queue.store(true);
    { std::lock_guard<std::mutex> lock(mu_); }
    cv_.notify_all();
    listener_.join();
  }
}

int Server::run() {
  spdlog::info("serving scale set '{}' of pool {} from class {} as {} (min armed {}, max runners {})", set_name_,
               s_.pool, s_.scale_set_class(), deps_.holder, s_.scale_set_min_armed, s_.scale_set_max_runners);
  lease_.start();
  while (!ctx_.cancelled.load()) pause(turn());
  if (session_) end_session();
  if (served_) emit_metrics();
  lease_.stop();
  spdlog::info("serve stopped");
  return kExitOk;
}

Duration Server::turn() {
  if (!session_) {
    if (ctx_.cancelled.load() || !fenced()) {
      set_id_.reset();  // a new tenure looks the set up again
      conflict_told_ = false;
      return kStandbyTurn;
    }
    try {
      return open_session();
    } catch (const std::exception& e) {
      // Looking the set up, creating it or opening its session failed.
      set_id_.reset();
      const SessionVerdict v = failed(e);
      spdlog::error("serving scale set '{}': {} ({})", set_name_, e.what(), v.why);
      return after_session(v);
    }
  }
  if (ctx_.cancelled.load() || !fenced() || session_end()) return end_session();
  bool quiet = false;
  try {
    quiet = reconcile();
  } catch (const std::exception& e) {
    spdlog::error("scale set '{}': {}", set_name_, e.what());
  }
  if (ctx_.clock.steady_now() >= next_metrics_) emit_metrics();
  return quiet ? std::max<Duration>(s_.serve_reconcile_interval, kQuietPassWait) : s_.serve_reconcile_interval;
}

// Waits up to `d`; a message, the lease taken or a cancellation ends it early.
void Server::pause(Duration d) {
  std::unique_lock<std::mutex> lock(mu_);
  const SteadyTime end = ctx_.clock.steady_now() + d;
  const auto done = [this] { return ctx_.cancelled.load() || woken_; };
  // A cancellation is set by a signal handler, which cannot notify: it is looked at every 200 ms.
  while (!done() && ctx_.clock.steady_now() < end) {
    ctx_.clock.wait_until(lock, cv_, std::min<SteadyTime>(end, ctx_.clock.steady_now() + kStandbyTurn), done);
  }
  woken_ = false;
}

void Server::wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    woken_ = true;
  }
  cv_.notify_all();
}

std::optional<SessionVerdict> Server::session_end() {
  std::lock_guard<std::mutex> lock(mu_);
  return session_end_;
}

SessionDemand Server::demand() {
  std::lock_guard<std::mutex> lock(mu_);
  return demand_;
}

// ---- The session's failures (session_fault.h decides), counted across the listener and the
// serving loop until a good answer.

SessionVerdict Server::failed(const std::exception& e) {
  SessionFault fault;
  fault.message = e.what();
  if (auto* as = dynamic_cast<const github::ActionsServiceError*>(&e)) fault.type_name = as->type_name();
  if (auto* gh = dynamic_cast<const github::GithubError*>(&e)) {
    fault.status = gh->status();
    fault.message = gh->message();
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++failures_in_a_row_;
  return decide_session_fault(fault, {failures_in_a_row_, ctx_.now_ms() - last_good_ms_});
}

// A good answer; `fresh_start`: serving (re)starts, counted from now unless failures run on.
void Server::answered(bool fresh_start) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fresh_start && failures_in_a_row_ > 0) return;
  failures_in_a_row_ = 0;
  last_good_ms_ = ctx_.now_ms();
}

// What the serving loop does once a session ended, or could not be opened: how long it waits.
Duration Server::after_session(const SessionVerdict& v) {
  switch (v.move) {
    case SessionMove::kRetry: return s_.serve_retry_wait;
    case SessionMove::kReopen: {
      // At once the first time; paced when new sessions keep failing.
      std::lock_guard<std::mutex> lock(mu_);
      return failures_in_a_row_ > 1 ? s_.serve_retry_wait : Duration{0};
    }
    case SessionMove::kStepBack: {
      // Holding the lease while unable to serve would keep a standby out for good.
      spdlog::warn("scale set '{}': cannot serve ({}); giving the lease up for {} so that a standby serves", set_name_,
                   v.why, format_duration(s_.serve_lease_ttl));
      lease_.step_back(s_.serve_lease_ttl);
      std::lock_guard<std::mutex> lock(mu_);
      failures_in_a_row_ = 0;
      return Duration{0};
    }
  }
  return s_.serve_retry_wait;
}

// ---- The scale set and its session

github::ScaleSet Server::ensure_scale_set() {
  int64_t group_id = 1;  // the Default group
  if (!s_.github_runner_group.empty()) {
    auto group = deps_.scale_sets.get_runner_group(s_.github_runner_group);
    if (!group) throw std::runtime_error("runner group '" + s_.github_runner_group + "' does not exist");
    group_id = group->id;
  }
  if (auto set = deps_.scale_sets.get_scale_set(group_id, set_name_)) return *set;
  github::ScaleSetSpec spec;
  spec.name = set_name_;
  spec.runner_group_id = group_id;
  spec.labels = {{"System", set_name_}};
  try {
    github::ScaleSet set = deps_.scale_sets.create_scale_set(spec);
    spdlog::info("created scale set '{}' (id {})", set_name_, set.id);
    return set;
  } catch (const github::ScaleSetExistsError&) {
    // Created by another controller between our look and our create.
    if (auto set = deps_.scale_sets.get_scale_set(group_id, set_name_)) return *set;
    throw;
  }
}

// Opens the set's session (looking the set up first), or waits out one another listener still
// holds: after a restart the old session lingers until the service lets it lapse.
Duration Server::open_session() {
  if (!set_id_) {
    answered(/*fresh_start=*/true);
    set_id_ = ensure_scale_set().id;
    served_ = true;
  }
  try {
    session_ = std::make_unique<github::MessageSession>(deps_.scale_sets, *set_id_, deps_.holder, &deps_.queue_caller);
  } catch (const github::SessionConflictError&) {
    if (!conflict_told_) spdlog::info("scale set '{}' has another live session; waiting for it to lapse", set_name_);
    conflict_told_ = true;
    return s_.serve_retry_wait;
  }
  conflict_told_ = false;
  spdlog::info("listening to scale set '{}' (id {})", set_name_, *set_id_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A completion heard under the last session stays true: its drain may not be written yet.
    SessionDemand fresh;
    fresh.finished = std::move(demand_.finished);
    demand_ = std::move(fresh);
    if (auto st = session_->info().statistics) demand_.assigned_jobs = st->total_assigned_jobs;
    session_end_.reset();
    last_good_ms_ = ctx_.now_ms();  // not a good answer yet: failures in a row run on
  }
  looked_up_.clear();  // the set may be new: every armed runner is looked up again (look_up_runners)
  deps_.stop_queue.store(false);
  stop_listening_.store(false);
  last_message_id_ = 0;
  if (threads_ == Threads::kOwn) listener_ = std::thread([this] { listen_loop(); });
  return Duration{0};
}

// Stops the listener and closes the session; then does what its end asks. Returns the wait.
Duration Server::end_session() {
  const std::optional<SessionVerdict> end = session_end();
  Duration wait{0};
  // The lease first: closing may take the caller's retries, and no action waits for it.
  if (end && end->move == SessionMove::kStepBack) wait = after_session(*end);
  stop_listening_.store(true);
  deps_.stop_queue.store(true);
  { std::lock_guard<std::mutex> lock(mu_); }  // a wait about to begin sees stop_listening_
  cv_.notify_all();
  if (listener_.joinable()) listener_.join();
  deps_.stop_queue.store(false);
  try {
    session_->close();
  } catch (const std::exception& e) {
    spdlog::warn("could not close the session ({}); it lapses on its own", e.what());
  }
  session_.reset();
  set_id_.reset();
  if (end && end->move != SessionMove::kStepBack) wait = after_session(*end);
  return wait;
}

void Server::listen_loop() {
  while (!stop_listening_.load()) {
    const std::optional<Duration> next = listen_turn();
    if (!next) return;
    if (next->count() <= 0) continue;
    std::unique_lock<std::mutex> lock(mu_);
    ctx_.clock.wait_until(lock, cv_, ctx_.clock.steady_now() + *next, [this] { return stop_listening_.load(); });
  }
}

std::optional<Duration> Server::listen_turn() {
  if (!session_ || stop_listening_.load()) return std::nullopt;
  github::MessageSession& session = *session_;
  try {
    std::optional<github::ScaleSetMessage> m = session.get_message(last_message_id_, s_.scale_set_max_runners);
    if (!m) {
      answered();
      return Duration{0};
    }
    // Unacknowledged, it comes again: to this holder's next poll, or to a successor's.
    if (!fenced()) return kStandbyTurn;
    Absorbed a;
    {
      std::lock_guard<std::mutex> lock(mu_);
      a = absorb(demand_, *m, ctx_.clock.now());
    }
    if (!a.to_acquire.empty()) {
      std::vector<int64_t> got = session.acquire_jobs(a.to_acquire);
      spdlog::info("acquired {} of {} job(s) offered", got.size(), a.to_acquire.size());
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const JobStart& j : a.started) {
        if (j.queued_to_started_ms) started_ms_.push_back(*j.queued_to_started_ms);
      }
    }
    for (const JobStart& j : a.started) {
      spdlog::info("job {} started on {}{}", j.job_id, j.runner_name,
                   j.queued_to_started_ms ? fmt::format(": queued → started {} ms", *j.queued_to_started_ms) : "");
    }
    session.delete_message(m->message_id);
    answered();  // only now: a poll that works beside an acknowledgement that fails is no good answer
    last_message_id_ = m->message_id;
    wake();
    return Duration{0};
  } catch (const std::exception& e) {
    if (stop_listening_.load()) return std::nullopt;
    const SessionVerdict v = failed(e);
    if (v.move != SessionMove::kRetry) {
      ended(e.what(), v);
      return std::nullopt;
    }
    spdlog::warn("scale set '{}': the message poll failed ({}; {}); again in {}", set_name_, e.what(), v.why,
                 format_duration(s_.serve_retry_wait));
    return s_.serve_retry_wait;
  }
}

void Server::ended(const std::string& what, const SessionVerdict& v) {
  spdlog::warn("scale set '{}': the session ended: {} ({}; {})", set_name_, what, v.why,
               v.move == SessionMove::kReopen ? "looking the set up again for a new one" : "stepping back");
  {
    std::lock_guard<std::mutex> lock(mu_);
    session_end_ = v;
  }
  wake();
}

// The scale set as the last pass saw it, and the jobs started since the last emission.
void Server::emit_metrics() {
  next_metrics_ = ctx_.clock.steady_now() + kMetricsEvery;
  sample_.scale_set = set_name_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sample_.queued_to_started_ms.swap(started_ms_);
    started_ms_.clear();
  }
  try {
    for (const metrics::Event& e : scale_set_events(s_, ctx_.now_ms(), sample_)) ctx_.metrics.emit(e);
    ctx_.metrics.flush();
  } catch (const std::exception& e) {
    spdlog::warn("scale set '{}': metrics not emitted: {}", set_name_, e.what());
  }
  sample_.queued_to_started_ms.clear();
}

}  // namespace runpool::controller
