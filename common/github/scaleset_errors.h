// Errors of the Actions service (the scale-set API). The service answers errors as
// {"typeName": "<Namespace>.<Exception>, <Assembly>", "message"}; clients match the exception
// name by substring. The ones a caller must branch on get a type of their own: a session
// conflict (wait it out), a scale set that is gone (re-create it), a session that expired
// (create a new one). A taken runner name is the REST client's RunnerNameTakenError.
#pragma once

#include <string>

#include "common/github/github_error.h"

namespace runpool::github {

class ActionsServiceError : public GithubError {
 public:
  // `type_name` is the exception's short name ("RunnerScaleSetNotFoundException"), "" when the
  // answer was not the service's JSON (a text/plain 5xx); `activity_id` the ActivityId header.
  ActionsServiceError(std::string operation, long status, std::string message, std::string type_name = "",
                      std::string activity_id = "")
      : GithubError(std::move(operation), status, describe(message, type_name, activity_id)),
        type_name_(std::move(type_name)), activity_id_(std::move(activity_id)) {}

  const std::string& type_name() const { return type_name_; }
  const std::string& activity_id() const { return activity_id_; }
  bool is(const std::string& exception) const { return type_name_.find(exception) != std::string::npos; }

 private:
  static std::string describe(const std::string& message, const std::string& type_name, const std::string& id) {
    std::string out = type_name.empty() ? message : type_name + ": " + message;
    return id.empty() ? out : out + " [ActivityId " + id + "]";
  }
  std::string type_name_;
  std::string activity_id_;
};

// 409 RunnerScaleSetSessionConflictException: another session of the set is live (a listener
// elsewhere, or one that died and whose session has not lapsed yet). Retry later, do not exit.
class SessionConflictError : public ActionsServiceError {
 public:
  explicit SessionConflictError(const ActionsServiceError& e) : ActionsServiceError(e) {}
};

// 404 RunnerScaleSetNotFoundException: the set was deleted (by us, an admin, or the service after
// a week unused). Its sessions and queue are gone with it.
class ScaleSetGoneError : public ActionsServiceError {
 public:
  explicit ScaleSetGoneError(const ActionsServiceError& e) : ActionsServiceError(e) {}
};

// The session is no longer the set's (deleted, evicted, lapsed and replaced): a refresh answers
// 404 (GitHub was reported to name it RunnerAdminException, "runner referenced a session ID that
// doesn't exist"; any name is taken), a delete 400 RunnerScaleSetSessionExpiredException. Create
// a new session.
class SessionExpiredError : public ActionsServiceError {
 public:
  explicit SessionExpiredError(const ActionsServiceError& e) : ActionsServiceError(e) {}
};

// 409 RunnerScaleSetExistsException: a set of that name exists in the group.
class ScaleSetExistsError : public ActionsServiceError {
 public:
  explicit ScaleSetExistsError(const ActionsServiceError& e) : ActionsServiceError(e) {}
};

}  // namespace runpool::github
