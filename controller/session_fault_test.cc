#include "controller/session_fault.h"

#include <gtest/gtest.h>

namespace runpool::controller {
namespace {

constexpr auto kRetry = SessionMove::kRetry;
constexpr auto kReopen = SessionMove::kReopen;
constexpr auto kStepBack = SessionMove::kStepBack;

struct Case {
  const char* name;
  SessionFault fault;
  SessionFailures failures;
  SessionMove want;
};

const char* const kAdminMessage = "runner referenced a session ID that doesn't exist in redis";

TEST(SessionFault, DecidesEveryCase) {
  const Case cases[] = {
      // Any 404 ends the session, whatever the service calls it.
      {"404 RunnerAdminException (GitHub, a session it evicted)", {404, "RunnerAdminException", kAdminMessage}, {1, 0}, kReopen},
      {"404 RunnerScaleSetSessionNotFoundException", {404, "RunnerScaleSetSessionNotFoundException", "no"}, {1, 0}, kReopen},
      {"404 RunnerScaleSetNotFoundException (the set deleted)", {404, "RunnerScaleSetNotFoundException", "gone"}, {1, 0}, kReopen},
      {"404 without a body", {404, "", "HTTP 404"}, {1, 0}, kReopen},
      {"404 of another name", {404, "NotFoundException", "No API"}, {2, 5'000}, kReopen},
      // The names that say the session is gone, whatever the status.
      {"400 RunnerScaleSetSessionExpiredException", {400, "RunnerScaleSetSessionExpiredException", "x"}, {1, 0}, kReopen},
      {"namespaced type name", {404, "GitHub.Actions.Runtime.WebApi.RunnerScaleSetSessionNotFoundException", ""}, {1, 0}, kReopen},
      {"the reported wording under another status", {400, "RunnerAdminException", kAdminMessage}, {1, 0}, kReopen},
      {"the wording, capitalised", {500, "", "Runner referenced a session id that does not exist"}, {1, 0}, kReopen},
      // Anything else is tried again, below the bounds.
      {"503 once", {503, "", "Service Unavailable"}, {1, 0}, kRetry},
      {"500 twice", {500, "", "Internal Server Error"}, {2, 3'000}, kRetry},
      {"no answer", {0, "", "connection refused"}, {1, 1'000}, kRetry},
      {"401 after a refresh", {401, "VssUnauthorizedException", "bad token"}, {1, 0}, kRetry},
      {"409 conflict on a call", {409, "RunnerScaleSetSessionConflictException", "active session"}, {1, 0}, kRetry},
      {"RunnerAdminException other than a session (400)", {400, "RunnerAdminException", "something else"}, {1, 0}, kRetry},
      {"a long poll that took long, then failed", {502, "", "Bad Gateway"}, {1, 95'000}, kRetry},
      // The bounds: failures in a row, and time without a good answer.
      {"503 the third time in a row", {503, "", "Service Unavailable"}, {3, 4'000}, kStepBack},
      {"no answer the fourth time", {0, "", "timeout"}, {4, 9'000}, kStepBack},
      {"two failures over two minutes", {0, "", "timeout"}, {2, 120'000}, kStepBack},
      {"one failure just short of two minutes", {0, "", "timeout"}, {1, 119'999}, kRetry},
      {"a 404 past the bound: the service keeps dropping sessions", {404, "RunnerAdminException", kAdminMessage}, {3, 2'000}, kStepBack},
      {"a 404 after a long silence", {404, "RunnerAdminException", kAdminMessage}, {1, 130'000}, kStepBack},
  };
  for (const Case& c : cases) {
    SessionVerdict v = decide_session_fault(c.fault, c.failures);
    EXPECT_EQ(v.move, c.want) << c.name << ": got " << session_move_name(v.move) << " (" << v.why << ")";
    EXPECT_FALSE(v.why.empty()) << c.name;
  }
}

TEST(SessionFault, BoundsAreTheCallersToSet) {
  const SessionFault fault{503, "", "Service Unavailable"};
  EXPECT_EQ(decide_session_fault(fault, {4, 0}, {5, 60'000}).move, kRetry);
  EXPECT_EQ(decide_session_fault(fault, {5, 0}, {5, 60'000}).move, kStepBack);
  EXPECT_EQ(decide_session_fault(fault, {1, 60'000}, {5, 60'000}).move, kStepBack);
  EXPECT_EQ(decide_session_fault(fault, {1, 59'999}, {5, 60'000}).move, kRetry);
}

}  // namespace
}  // namespace runpool::controller
