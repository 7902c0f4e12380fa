// An error answer from an AWS service (after retries), carrying AWS's own code and message.
#pragma once

#include <stdexcept>
#include <string>

namespace runpool::aws {

class AwsError : public std::runtime_error {
 public:
  AwsError(std::string service, std::string operation, long status, std::string code, std::string message)
      : std::runtime_error(service + " " + operation + ": " + code + (message.empty() ? "" : ": " + message) +
                           (status ? " (HTTP " + std::to_string(status) + ")" : "")),
        service_(std::move(service)), operation_(std::move(operation)), status_(status),
        code_(std::move(code)), message_(std::move(message)) {}

  const std::string& service() const { return service_; }
  const std::string& operation() const { return operation_; }
  long status() const { return status_; }  // 0 when there was no HTTP answer
  const std::string& code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  std::string service_, operation_;
  long status_;
  std::string code_, message_;
};

}  // namespace runpool::aws
