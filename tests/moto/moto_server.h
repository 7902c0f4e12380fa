// Starts moto's server (an independent implementation of the AWS APIs, from PyPI) for a test
// binary: every service on one port of 127.0.0.1, picked free by the OS, and stops it when the
// binary exits — also when the test crashes (PR_SET_PDEATHSIG).
#pragma once

#include <sys/types.h>

#include <string>

namespace runpool::testing {

class MotoServer {
 public:
  // `program`: moto's `moto_server` script in its virtual environment. Throws std::runtime_error
  // with the server's output when it does not come up within 60 s.
  explicit MotoServer(const std::string& program);
  ~MotoServer();
  MotoServer(const MotoServer&) = delete;
  MotoServer& operator=(const MotoServer&) = delete;

  // "http://127.0.0.1:<port>": DynamoDB, SQS and EC2 all answer here.
  const std::string& endpoint() const { return endpoint_; }

 private:
  void stop();

  pid_t pid_ = -1;
  std::string log_path_;
  std::string endpoint_;
};

}  // namespace runpool::testing
