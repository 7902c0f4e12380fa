// How long the agent's main loop waits before its next look at the record. Reading the record is
// what an idle instance costs (DynamoDB requests per idle hour), and how soon it sees a claim or
// a drain is what a workflow waits for; the wake-up queue (common/pool/wake_queue.h) lets an idle
// agent read rarely yet answer at once, and a start or end of an assignment is read fast because
// runpoolctl is waiting on it right then.
#pragma once

#include "common/clock.h"

namespace runpool::agent {

struct PollIntervals {
  Duration assignment{std::chrono::seconds(1)};  // serving, or idle without a working wake queue
  Duration idle{std::chrono::seconds(15)};       // idle, the wake queue long-polled
  Duration settle{std::chrono::milliseconds(100)};
  Duration settle_window{std::chrono::seconds(30)};
};

struct PollFacts {
  bool idle = false;        // nothing assigned to this instance
  bool settling = false;    // an assignment is starting (not yet registered) or ending
  Duration settling_for{};  // since the settling began
  bool wake_active = false; // the wake queue is being long-polled
};

// How long the main loop waits before its next tick.
Duration next_poll_interval(const PollFacts& f, const PollIntervals& i);

// Whether the next tick reads the record. Settling ticks come fast for the agent's own steps (a
// Listener up, a runner gone); what runpoolctl changes meanwhile (a drain, a cancel) comes with a
// wake-up, so those ticks read the record only when woken or once the interval without settling
// has passed: 50 instances registering at once would otherwise read 500 times a second.
bool record_read_due(const PollFacts& f, const PollIntervals& i, Duration since_last_read, bool woken);

}  // namespace runpool::agent
