#include "controller/session_fault.h"

#include <fmt/format.h>

#include "common/text.h"

namespace runpool::controller {

const char* session_move_name(SessionMove m) {
  switch (m) {
    case SessionMove::kRetry: return "retry";
    case SessionMove::kReopen: return "reopen";
    case SessionMove::kStepBack: return "step-back";
  }
  return "?";
}

SessionVerdict decide_session_fault(const SessionFault& fault, const SessionFailures& failures,
                                    const SessionFaultBounds& bounds) {
  const auto named = [&](const char* name) { return fault.type_name.find(name) != std::string::npos; };
  // Checked first: a session the service keeps dropping (each new one answered 404 again) is as
  // useless as one that keeps failing, and a standby may fare better.
  if (failures.in_a_row >= bounds.max_in_a_row) {
    return {SessionMove::kStepBack, fmt::format("{} failures in a row", failures.in_a_row)};
  }
  if (failures.failing_for_ms >= bounds.max_failing_ms) {
    return {SessionMove::kStepBack, fmt::format("no good answer for {} s", failures.failing_for_ms / 1000)};
  }
  if (fault.status == 404) return {SessionMove::kReopen, "the service no longer knows the session (404)"};
  if (named("RunnerScaleSetSessionExpiredException") || named("RunnerScaleSetSessionNotFoundException")) {
    return {SessionMove::kReopen, "the session expired"};
  }
  // The reported wording, whatever status it might come with.
  const std::string m = text::lower(fault.message);
  if (m.find("session id that doesn't exist") != std::string::npos ||
      m.find("session id that does not exist") != std::string::npos) {
    return {SessionMove::kReopen, "the service no longer knows the session"};
  }
  return {SessionMove::kRetry, fmt::format("failure {} of {} in a row", failures.in_a_row, bounds.max_in_a_row)};
}

}  // namespace runpool::controller
