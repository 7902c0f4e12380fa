// The runtime of `runpoolctl serve` (serve.h): three loops, each written as a turn that tests call
// one at a time on a fake clock, and that run() runs on threads, waiting on the Context's clock
// between turns (Clock::wait_until, so a wait that must end early — a cancellation, a message,
// a step back — is woken, and a fake clock reaches the deadline without sleeping).
//
// Who owns what, and what crosses (one place for it; keep it true):
//
//   lease keeper — ServeLease's thread, turn ServeLease::tick(). Owns the lease as last written
//     (mine_, recheck). Publishes the fence (fence_until_ms_, back_until_ms_: atomics) that every
//     action of the other two asks first (fenced()). Told by the serving loop to step back
//     (step_back(): atomics, then its wait is notified). Calls on_taken → wake() when the lease
//     becomes ours. Never waits on mu_ but for that wake.
//
//   listener — a thread per session, turn listen_turn(). Owns the poll (the session's queue calls
//     on a connection of their own, last_message_id_). Under mu_ it writes: demand_ (statistics,
//     finished runners), started_ms_, the failure count, and session_end_ when the session is
//     over; then wakes the serving loop. The session object itself is the serving loop's: it is
//     created before the listener starts and destroyed after it is joined.
//
//   serving loop (the reconciler) — run()'s own thread, turn turn(). Owns the scale set, the
//     session's life (open, start and join the listener, close), recent_, the metrics sample,
//     last_why_, looked_up_. Under mu_ it reads copies of demand_ and session_end_, drops the
//     finished names a pass is done with, adds those whose runner GitHub no longer has, and resets
//     demand_ (but its finished names), session_end_ and the failures' clock for a new session
//     (before its listener starts). It holds mu_ across no request: a claim or a launch that takes
//     minutes delays neither the lease keeper (no lock in common) nor the listener (mu_ is free;
//     stop_queue ends its poll only when the session ends). serve_server_test.cc shows it on a
//     fake clock.
//
// Both the listener and the serving loop count the session's failures (failed(), answered()).
// mu_ guards the fields below it and is held only for copies and counters, never across I/O.
// Atomics: stop_listening_ (serving loop → listener), ServeDeps::stop_queue (serving loop → the
// listener's connection), ctx.cancelled (signal → all three).
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/github/message_session.h"
#include "common/pool/scale_set_upkeep.h"
#include "controller/jit_mint.h"
#include "controller/metrics_events.h"
#include "controller/serve.h"
#include "controller/serve_lease.h"
#include "controller/serve_pass.h"
#include "controller/session_demand.h"
#include "controller/session_fault.h"

namespace runpool::controller {

class Server {
 public:
  // Threads::kDriven: turn() starts no listener thread, and run() is not used; a test calls the
  // turns itself (and ServeLease::tick() for the lease keeper).
  enum class Threads { kOwn, kDriven };
  Server(Context& ctx, ServeDeps& deps, Threads threads = Threads::kOwn);
  ~Server();

  // The three loops on their threads until ctx.cancelled; then the session is closed and the lease
  // given up. Returns the exit code.
  int run();

  // The serving loop's turn: with no session, looks the scale set up (creating it) and opens its
  // session while the lease is ours; with one, ends it when it ended, the lease is lost or a
  // cancellation came, else makes one reconcile pass. Returns how long to wait before the next
  // turn (a wake() ends the wait early): serve_reconcile_interval, or kQuietPassWait after a
  // quiet pass.
  Duration turn();
  // The listener's turn: one long poll, its jobs acquired and the envelope acknowledged. Returns
  // how long to wait before the next poll; nullopt: the session is over (session_end() says why,
  // unless it was being stopped).
  std::optional<Duration> listen_turn();

  ServeLease& lease() { return lease_; }
  bool fenced() const { return lease_.fenced(); }
  bool in_session() const { return session_ != nullptr; }
  std::optional<SessionVerdict> session_end();
  SessionDemand demand();

 private:
  // ---- serve_server.cc: the loops, the session's life and its failures
  void pause(Duration d);
  void wake();
  void listen_loop();
  Duration open_session();
  Duration end_session();
  SessionVerdict failed(const std::exception& e);
  void answered(bool fresh_start = false);
  Duration after_session(const SessionVerdict& v);
  github::ScaleSet ensure_scale_set();
  void ended(const std::string& what, const SessionVerdict& v);

  // ---- serve.cc: the scale set's instances (the reconcile pass carried out)
  std::vector<pool::InstanceRecord> set_records();
  void look_up_runners(const ServeSnapshot& snap);
  bool reconcile();  // true: the set is quiet (ServePass::quiet)
  void upkeep(const pool::Upkeep& u);
  std::vector<MintedJit> make_jits(const std::vector<std::string>& names);
  int pool_depth();
  void add_runners(int claim, int launch);
  void remove_armed(const pool::InstanceRecord& r);
  void emit_metrics();

  Context& ctx_;
  const Settings& s_;
  ServeDeps& deps_;
  const Threads threads_;
  const std::string set_name_;

  // The serving loop's own.
  std::optional<int64_t> set_id_;  // the scale set while a session is open or being waited for
  bool conflict_told_ = false;     // the wait for another's live session was logged
  bool served_ = false;
  std::unique_ptr<github::MessageSession> session_;  // used by the listener between its start and join
  std::thread listener_;
  std::map<std::string, pool::InstanceRecord> recent_;
  std::set<std::string> looked_up_;  // runner names known to be the set's under this session
  std::string last_why_;
  ScaleSetSample sample_;
  SteadyTime next_metrics_;

  // The listener's own (reset by the serving loop before a listener starts).
  int64_t last_message_id_ = 0;
  std::atomic<bool> stop_listening_{false};  // set by the serving loop to end the listener

  std::mutex mu_;  // guards the fields from here to lease_
  std::condition_variable cv_;
  bool woken_ = false;
  std::optional<SessionVerdict> session_end_;  // set by the listener: why the session ended
  int failures_in_a_row_ = 0;                  // the session's failures since its last good answer
  int64_t last_good_ms_ = 0;
  SessionDemand demand_;
  std::vector<int64_t> started_ms_;  // queued → started of each job started since the last emission
  ServeLease lease_;  // last: its thread wakes the serving loop through the fields above
};

}  // namespace runpool::controller
