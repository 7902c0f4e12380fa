// An answer from GitHub that is not the one asked for (after retries), carrying GitHub's own
// message and documentation link. Status 0 means no HTTP answer (connection error, bad page
// link). Messages never contain a token: the caller masks the one it sent.
#pragma once

#include <stdexcept>
#include <string>

namespace runpool::github {

class GithubError : public std::runtime_error {
 public:
  GithubError(std::string operation, long status, std::string message, std::string documentation_url = "")
      : std::runtime_error("GitHub " + operation + ": " + (message.empty() ? "error" : message) +
                           (status ? " (HTTP " + std::to_string(status) + ")" : "")),
        operation_(std::move(operation)), status_(status), message_(std::move(message)),
        documentation_url_(std::move(documentation_url)) {}

  const std::string& operation() const { return operation_; }
  long status() const { return status_; }
  const std::string& message() const { return message_; }
  const std::string& documentation_url() const { return documentation_url_; }

 private:
  std::string operation_;
  long status_;
  std::string message_;
  std::string documentation_url_;
};

// generate-jitconfig answered 409 (or 422 "already exists"): a runner of that name is registered.
// `after_retry` says the POST had been retried, so the runner may be the one our own lost first
// attempt created (GitHub has been seen to register and still answer 5xx).
class RunnerNameTakenError : public GithubError {
 public:
  RunnerNameTakenError(const GithubError& e, bool after_retry)
      : GithubError(e), after_retry_(after_retry) {}
  bool after_retry() const { return after_retry_; }

 private:
  bool after_retry_;
};

}  // namespace runpool::github
