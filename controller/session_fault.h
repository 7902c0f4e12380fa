// What `runpoolctl serve` does when a call on its message session fails (a poll, an acknowledgement,
// acquiring jobs, the refresh they make after a 401, or opening the session): try again, end the
// session and open a new one, or also give the lease up so that a standby serves. Pure.
//
// GitHub answers a call on a session it no longer knows with a 404, but not under one name: a
// session evicted by the service was reported answered 404 `RunnerAdminException` ("runner
// referenced a session ID that doesn't exist"), a deleted scale set 404
// `RunnerScaleSetNotFoundException`. So any 404 ends the session, whatever its name, and so do
// the names that say the session is gone (a delete's 400 `RunnerScaleSetSessionExpiredException`).
// Anything else (5xx left after the caller's retries, no answer, a malformed body, a 401 after a
// refresh) is tried again, up to a bound past which the session is given up with the lease.
#pragma once

#include <cstdint>
#include <string>

namespace runpool::controller {

struct SessionFault {
  long status = 0;        // the HTTP status; 0: no answer, or not an HTTP error
  std::string type_name;  // the service's exception name ("" when none)
  std::string message;
};

// The session's failures in a row, this one included, since its last good answer.
struct SessionFailures {
  int in_a_row = 1;
  int64_t failing_for_ms = 0;  // since the last good answer (or since the session opened)
};

// Past either, serve stops trying and hands over. Three failed calls in a row: each was already
// retried by the caller (a queue call three times, an admin call five), so three are a failure that
// persisted through about ten attempts, not a blip. Two minutes without a good answer: longer
// than one long poll held by the service (about 50 s) and its retries, so one slow poll is never
// taken for a dead session, yet a standby takes over long before a queued job's runner is missed.
struct SessionFaultBounds {
  int max_in_a_row = 3;
  int64_t max_failing_ms = 120'000;
};

enum class SessionMove {
  kRetry,      // the same session, after serve_retry_wait
  kReopen,     // the session is gone: look the scale set up again (create it if deleted), open a new one
  kStepBack,   // give the session and the lease up; a standby serves, or this one again later
};

struct SessionVerdict {
  SessionMove move = SessionMove::kRetry;
  std::string why;
};

const char* session_move_name(SessionMove m);

SessionVerdict decide_session_fault(const SessionFault& fault, const SessionFailures& failures,
                                    const SessionFaultBounds& bounds = {});

}  // namespace runpool::controller
