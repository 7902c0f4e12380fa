#include "agent/poll_interval.h"

namespace runpool::agent {

Duration next_poll_interval(const PollFacts& f, const PollIntervals& i) {
  // Past the window a stuck start or end (a slow config.sh, a job the drain waits for) is no
  // longer worth ten reads a second; the controller's own bounds take over.
  if (f.settling && f.settling_for < i.settle_window) return i.settle;
  if (f.idle && f.wake_active && !f.settling) return i.idle;
  return i.assignment;
}

bool record_read_due(const PollFacts& f, const PollIntervals& i, Duration since_last_read, bool woken) {
  if (woken) return true;
  PollFacts calm = f;
  calm.settling = false;
  return since_last_read >= next_poll_interval(calm, i);
}

}  // namespace runpool::agent
