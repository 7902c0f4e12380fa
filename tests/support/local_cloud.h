// Starts the local cloud (tests/localcloud/localcloud.js) for a test binary and stops it when the
// binary exits — cleanly, and also when the test crashes: the child watches its stdin, which only
// this process holds open, and gets SIGTERM through PR_SET_PDEATHSIG besides.
#pragma once

#include <sys/types.h>

#include <string>

#include <json/json.h>

#include "common/aws/credentials.h"
#include "common/http.h"

namespace runpool::testing {

class LocalCloud {
 public:
  // The cloud shared by every test of this binary, started on first use.
  static LocalCloud& shared();

  LocalCloud();  // starts it; throws std::runtime_error with the child's stderr tail on failure
  explicit LocalCloud(const std::string& script);  // the same, from another localcloud.js
  ~LocalCloud();
  LocalCloud(const LocalCloud&) = delete;
  LocalCloud& operator=(const LocalCloud&) = delete;

  const std::string& region() const { return region_; }
  const std::string& dynamodb() const { return dynamodb_; }
  const std::string& sqs() const { return sqs_; }
  const std::string& ec2() const { return ec2_; }
  const std::string& logs() const { return logs_; }  // CloudWatch Logs (read back: /_control/logs/events)
  const std::string& github() const { return github_; }       // REST API base (…/api/v3)
  const std::string& github_web() const { return github_web_; }
  const std::string& sts() const { return sts_; }              // STS (POST /_localcloud/web-identity-token mints a token)
  const std::string& container() const { return container_; }  // container credentials (POST /_localcloud/tasks)
  const std::string& control_url() const { return control_; }
  const std::string& state_dir() const { return state_dir_; }
  // The account every service answers for, and the unique id (AROA…) of the instance role whose
  // credentials IMDS hands out: what runpoolctl's `instance_role_id` must name.
  const std::string& account_id() const { return account_id_; }
  const std::string& instance_role_id() const { return instance_role_id_; }
  aws::AwsCredentials controller_credentials() const;

  // Calls the control API: `method` "GET"/"POST", `path` like "/_control/faults". Throws on a
  // non-2xx answer unless `allow_error`.
  Json::Value control(const std::string& method, const std::string& path, const Json::Value& body = {},
                      bool allow_error = false);
  // Clears every fault knob of every service.
  void clear_faults();

 private:
  void stop();  // ends the child (stdin closed, then SIGKILL after 10 s) and removes the stderr file

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  std::string stderr_path_;
  std::string region_, dynamodb_, sqs_, ec2_, logs_, github_, github_web_, sts_, container_, control_, state_dir_,
      account_id_, instance_role_id_;
  std::string access_key_id_, secret_access_key_;
  CurlHttpClient http_;
};

}  // namespace runpool::testing
