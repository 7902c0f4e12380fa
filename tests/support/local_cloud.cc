#include "tests/support/local_cloud.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common/json.h"

#ifndef RUNPOOL_LOCALCLOUD_DIR
#error "RUNPOOL_LOCALCLOUD_DIR must be defined by the build"
#endif

namespace runpool::testing {
namespace {

std::string tail_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string all = ss.str();
  return all.size() > 4000 ? all.substr(all.size() - 4000) : all;
}

}  // namespace

LocalCloud& LocalCloud::shared() {
  static LocalCloud cloud;
  return cloud;
}

LocalCloud::LocalCloud() : LocalCloud(std::string(RUNPOOL_LOCALCLOUD_DIR) + "/localcloud.js") {}

LocalCloud::LocalCloud(const std::string& script) {
  char tmpl[] = "/tmp/runpool-localcloud-stderr-XXXXXX";
  int err_fd = mkstemp(tmpl);
  if (err_fd < 0) throw std::runtime_error("mkstemp failed");
  stderr_path_ = tmpl;

  int in_pipe[2], out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  // The child's argv, built before the fork.
  std::vector<const char*> argv = {"node", script.c_str(), "--quiet"};
  // The IAM tier (tests/localcloud/iam/): every signed AWS request appended to this file, one JSON
  // line each; the local clouds of one test binary may share it.
  const char* record = std::getenv("RUNPOOL_LOCALCLOUD_RECORD_REQUESTS");
  if (record != nullptr && *record != '\0') {
    argv.push_back("--record-requests");
    argv.push_back(record);
  }
  argv.push_back(nullptr);
  pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_fd, 2);
    execvp("node", const_cast<char* const*>(argv.data()));
    _exit(127);
  }
  close(err_fd);
  close(in_pipe[0]);
  close(out_pipe[1]);
  stdin_fd_ = in_pipe[1];

  // Read the one ready line, bounded by a deadline.
  std::string line;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (line.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd pfd{out_pipe[0], POLLIN, 0};
    if (left.count() <= 0 || poll(&pfd, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[4096];
    ssize_t n = read(out_pipe[0], buf, sizeof buf);
    if (n <= 0) break;
    line.append(buf, n);
  }
  close(out_pipe[0]);
  auto doc = try_parse_json(line.substr(0, line.find('\n')));
  if (!doc || !(*doc)["ready"].asBool()) {
    // A constructor that throws runs no destructor of its own, only its members': stop the child
    // here (calling ~LocalCloud() instead would destroy the members twice).
    std::string why = "the local cloud did not start; its stderr:\n" + tail_of(stderr_path_);
    stop();
    throw std::runtime_error(why);
  }
  const Json::Value& ep = (*doc)["endpoints"];
  region_ = (*doc)["region"].asString();
  dynamodb_ = ep["dynamodb"].asString();
  sqs_ = ep["sqs"].asString();
  ec2_ = ep["ec2"].asString();
  logs_ = ep["logs"].asString();
  github_ = ep["github"].asString();
  github_web_ = ep["githubWeb"].asString();
  sts_ = ep["sts"].asString();
  container_ = ep["container"].asString();
  control_ = ep["control"].asString();
  state_dir_ = (*doc)["stateDir"].asString();
  account_id_ = (*doc)["accountId"].asString();
  instance_role_id_ = (*doc)["instanceRoleId"].asString();
  access_key_id_ = (*doc)["credentials"]["accessKeyId"].asString();
  secret_access_key_ = (*doc)["credentials"]["secretAccessKey"].asString();
}

LocalCloud::~LocalCloud() { stop(); }

void LocalCloud::stop() {
  if (pid_ <= 0) return;
  if (stdin_fd_ >= 0) close(stdin_fd_);  // the child's signal to shut down cleanly
  stdin_fd_ = -1;
  int status = 0;
  for (int i = 0; i < 200; ++i) {  // up to 10 s for instances to be terminated
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  if (!stderr_path_.empty()) unlink(stderr_path_.c_str());
}

aws::AwsCredentials LocalCloud::controller_credentials() const {
  aws::AwsCredentials c;
  c.access_key_id = access_key_id_;
  c.secret_access_key = Secret(secret_access_key_);
  return c;
}

Json::Value LocalCloud::control(const std::string& method, const std::string& path, const Json::Value& body,
                                bool allow_error) {
  HttpRequest req;
  req.method = method;
  req.url = control_ + path;
  if (method != "GET") {
    req.headers.emplace_back("Content-Type", "application/json");
    req.body = body.isNull() ? "{}" : write_json(body);
  }
  HttpResponse resp = http_.send(req);
  if (!allow_error && (resp.status < 200 || resp.status >= 300)) {
    throw std::runtime_error("control " + method + " " + path + " answered " + std::to_string(resp.status) + ": " +
                             resp.body);
  }
  auto doc = try_parse_json(resp.body);
  return doc ? *doc : Json::Value(resp.body);
}

void LocalCloud::clear_faults() {
  for (const char* service : {"dynamodb", "sqs", "ec2", "imds", "github", "logs"}) {
    Json::Value body;
    body["service"] = service;
    control("POST", "/_control/faults", body);
  }
}

}  // namespace runpool::testing
