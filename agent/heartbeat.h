// The heartbeat: every interval, the agent's AWS-clock time and busy flag written to its own
// record (conditional on the item existing), from a thread of its own so that a long step of the
// main loop never makes the instance look dead. A beat that finds no record (the agent booted
// before runpoolctl wrote it: common when a provision launches many at once) is tried again soon,
// not an interval later: a claim drops an idle instance whose heartbeat it cannot see.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "agent/table_health.h"
#include "common/pool/state_table.h"

namespace runpool::agent {

// The wait before the next beat: the interval after a written beat; after one that was not,
// `retry` (first 1 s), doubled each time up to the interval.
Duration next_beat_wait(bool written, Duration interval, Duration& retry);

class Heartbeat {
 public:
  Heartbeat(pool::StateTable& table, std::string instance_id, Clock& aws_clock, Duration interval,
            std::function<bool()> busy, TableHealth& health);
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  void start();
  void stop();
  // One beat (the thread's body, and tests'): true when written.
  bool beat();

 private:
  pool::StateTable& table_;
  std::string instance_id_;
  Clock& clock_;
  Duration interval_;
  std::function<bool()> busy_;
  TableHealth& health_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace runpool::agent
