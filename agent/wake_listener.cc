#include "agent/wake_listener.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace runpool::agent {
namespace {

// Until runpoolctl has made the queue, SQS answers QueueDoesNotExist to a caller allowed to know,
// and AccessDenied to one that only the queue's own policy will admit — an instance role has no
// SQS permission of its own. Both mean "not there yet".
bool not_there_yet(const std::exception& e) {
  if (dynamic_cast<const aws::QueueDoesNotExistError*>(&e)) return true;
  auto* aws_error = dynamic_cast<const aws::AwsError*>(&e);
  return aws_error && aws_error->code().find("AccessDenied") != std::string::npos;
}

}  // namespace

bool WakeListener::poll_once(int wait_seconds) {
  try {
    if (url_.empty()) {
      url_ = sqs_.get_queue_url(name_);
      spdlog::info("listening for wake-ups on {}", name_);
    }
    // Listening from here on: the main loop may count on a wake-up while this poll is open.
    active_ = true;
    aws::ReceiveRequest r;
    r.queue_url = url_;
    r.max_messages = 1;  // answer at the first wake-up (a few more are deleted by later polls)
    r.wait_seconds = wait_seconds;
    auto messages = sqs_.receive_messages(r);
    for (const auto& m : messages) sqs_.delete_message(url_, m.receipt_handle);
    return !messages.empty();
  } catch (const std::exception& e) {
    if (not_there_yet(e)) url_.clear();
    active_ = false;
    throw;
  } catch (...) {
    active_ = false;
    throw;
  }
}

void WakeListener::run(StopFlag& stop) {
  using namespace std::chrono_literals;
  Duration backoff = 1s;
  std::string last_error;
  while (!stop.requested()) {
    try {
      if (poll_once(20)) stop.nudge();
      backoff = 1s;
      if (!last_error.empty()) spdlog::info("wake-up queue {} works again", name_);
      last_error.clear();
    } catch (const std::exception& e) {
      if (stop.requested()) break;  // the long poll was cancelled for the stop
      if (e.what() != last_error) {
        // A queue that does not exist yet is normal at boot (runpoolctl creates it right after the
        // launch) and for instances launched by an older runpoolctl: not a warning.
        const bool missing = not_there_yet(e);
        spdlog::log(missing ? spdlog::level::info : spdlog::level::warn,
                    "wake-up queue {}: {} (reading the record every assignment_poll_interval meanwhile)", name_,
                    missing ? "not there (yet)" : e.what());
      }
      last_error = e.what();
      if (stop.wait_for(backoff)) break;
      backoff = std::min<Duration>(2 * backoff, std::chrono::minutes(1));
    }
  }
}

}  // namespace runpool::agent
