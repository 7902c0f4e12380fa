// For the integration and end-to-end tests of runpoolctl (tests/integration/controller_*_test.cc,
// tests/e2e/): run the real binary as a child process against the local cloud, with a config file
// of its own per test pool, and play the agent (or watch the real one) through the real table.
// Header-only; include it only from tests that link the LocalCloud support library.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/aws/dynamodb.h"
#include "common/aws/ec2.h"
#include "common/aws/sqs.h"
#include "common/pool/dynamo_state_table.h"
#include "common/pool/runner_name.h"
#include "common/pool/transitions.h"
#include "tests/support/local_cloud.h"

#ifndef RUNPOOL_CTL_BINARY
#error "RUNPOOL_CTL_BINARY must name the runpoolctl binary"
#endif

namespace runpool::controller::testing {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string make_temp_dir(const std::string& prefix) {
  std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
  return buf.data();
}

struct CtlResult {
  int exit_code = -1;  // -1: killed by a signal
  std::string out, err;
};

// One runpoolctl run as a child process; stdout and stderr go to files.
class CtlProcess {
 public:
  CtlProcess(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
             const std::string& dir) {
    static std::atomic<int> n{0};
    int k = n++;
    out_path_ = dir + "/ctl-" + std::to_string(k) + ".out";
    err_path_ = dir + "/ctl-" + std::to_string(k) + ".err";
    std::vector<std::string> argv_s = {RUNPOOL_CTL_BINARY};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<std::string> env_s;
    for (const auto& [key, value] : env) env_s.push_back(key + "=" + value);
    // Everything the child needs is built before fork: the test process has threads, and a child
    // that allocates before exec can block for ever on a lock one of them held (no output, no
    // request, until the harness kills it).
    std::vector<char*> argv, envp;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    const char* out_path = out_path_.c_str();
    const char* err_path = err_path_.c_str();
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {  // async-signal-safe calls only
      int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
      int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(out, 1);
      dup2(err, 2);
      int devnull = open("/dev/null", O_RDONLY);
      dup2(devnull, 0);
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
  }
  ~CtlProcess() {
    if (pid_ > 0 && !done_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  void signal(int sig) { kill(pid_, sig); }
  pid_t pid() const { return pid_; }

  // Waits up to `timeout`; kills it (and fails the result) past that.
  CtlResult wait(std::chrono::milliseconds timeout = std::chrono::seconds(120)) {
    auto until = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (true) {
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) break;
      if (std::chrono::steady_clock::now() > until) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    done_ = true;
    CtlResult res;
    res.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    res.out = slurp(out_path_);
    res.err = slurp(err_path_);
    return res;
  }

 private:
  pid_t pid_ = -1;
  bool done_ = false;
  std::string out_path_, err_path_;
};

// AWS clients on the local cloud for the test's own look at the world.
struct CloudClients {
  explicit CloudClients(runpool::testing::LocalCloud& cloud)
      : creds(cloud.controller_credentials()),
        db_caller(db_http, creds, system_clock(), {"dynamodb", cloud.dynamodb(), cloud.region()}),
        sqs_caller(sqs_http, creds, system_clock(), {"sqs", cloud.sqs(), cloud.region()}),
        ec2_caller(ec2_http, creds, system_clock(), {"ec2", cloud.ec2(), cloud.region()}),
        db(db_caller),
        sqs(sqs_caller),
        ec2(ec2_caller) {}
  CurlHttpClient db_http, sqs_http, ec2_http;
  aws::StaticCredentialsProvider creds;
  aws::AwsCaller db_caller, sqs_caller, ec2_caller;
  aws::DynamoDbClient db;
  aws::SqsClient sqs;
  aws::Ec2Client ec2;
};

// The agents of a pool, played by a thread through the real table: heartbeat; `registered` for a
// new assignment (taking the registration token); `drained` when draining. Switches make them
// misbehave. Only instances launched into this pool are served.
class SimulatedAgents {
 public:
  SimulatedAgents(runpool::testing::LocalCloud& cloud, const std::string& table, const std::string& pool)
      : clients_(cloud), table_(clients_.db, table, cloud.instance_role_id()), pool_(pool) {
    thread_ = std::thread([this] { loop(); });
  }
  ~SimulatedAgents() {
    stop_ = true;
    thread_.join();
  }

  std::atomic<bool> register_ok{true};
  std::atomic<bool> drain_ok{true};
  std::atomic<bool> heartbeat{true};
  std::atomic<int> registrations{0};
  std::atomic<int> drains{0};

 private:
  void loop() {
    while (!stop_) {
      try {
        tick();
      } catch (const std::exception&) {
        // The table may not exist yet (before init); try again.
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  void tick() {
    std::vector<pool::InstanceRecord> all;
    table_.scan([&](const pool::InstanceRecord& r) {
      if (r.pool == pool_) all.push_back(r);
    });
    int64_t now = to_epoch_ms(system_clock().now());
    for (const auto& r : all) {
      if (r.state == pool::State::kTerminating || r.state == pool::State::kTerminated) continue;
      pool::AgentReport a;
      a.generation = r.generation;
      if (heartbeat) a.heartbeat_ms = now;
      bool fresh_assignment = r.state == pool::State::kCreated || r.state == pool::State::kClaimed;
      if (fresh_assignment && register_ok && !pool::agent_reported(r, pool::AgentSignal::kRegistered)) {
        a.signal = pool::AgentSignal::kRegistered;
        a.take_reg_token = true;
        a.runner_name = pool::runner_name(pool_, r.instance_id, r.generation);
        ++registrations;
      } else if (r.state == pool::State::kDraining && drain_ok &&
                 !pool::agent_reported(r, pool::AgentSignal::kDrained)) {
        a.signal = pool::AgentSignal::kDrained;
        a.take_remove_token = true;
        ++drains;
      } else if (!a.heartbeat_ms) {
        continue;
      }
      table_.report(r.instance_id, a);
    }
  }

  CloudClients clients_;
  pool::DynamoStateTable table_;
  std::string pool_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A pool of its own for one test: a config file, the environment runpoolctl needs, and helpers.
class CtlPool {
 public:
  CtlPool(runpool::testing::LocalCloud& cloud, const std::string& pool, const std::string& table,
          const std::string& extra_config = "")
      : cloud_(cloud), pool_(pool), table_(table), dir_(make_temp_dir("runpoolctl-" + pool)) {
    // A token for the GitHub stand-in, owning the test repository's owner.
    Json::Value pat;
    pat["token"] = token_;
    pat["owners"].append("acme");
    cloud.control("POST", "/_control/github/pats", pat);
    std::ofstream(dir_ + "/user-data.sh.in")
        << "#!/bin/sh\n# Simulated agents play these instances: the boot script starts nothing.\n: '@AGENT_BINARY@'\n"
           "cat > /dev/null <<'RUNPOOL_AGENT_CONFIG_EOF'\n@AGENT_CONFIG@\nRUNPOOL_AGENT_CONFIG_EOF\n";
    std::ofstream conf(dir_ + "/runpool.conf");
    conf << "table = " << table << "\n"
         << "pool = " << pool << "\n"
         << "region = " << cloud.region() << "\n"
         << "endpoint_dynamodb = " << cloud.dynamodb() << "\n"
         << "endpoint_sqs = " << cloud.sqs() << "\n"
         << "endpoint_ec2 = " << cloud.ec2() << "\n"
         << "github_api_url = " << cloud.github() << "\n"
         << "github_owner = acme/app\n"
         << "resource_classes = small=c7i.large,m7i.large;large=m7i.2xlarge\n"
         << "image_id = ami-12345678\n"
         << "instance_profile = runpool-agent\n"
         << "instance_role_id = " << cloud.instance_role_id() << "\n"
         << "subnets = subnet-0a1b2c3d, subnet-1a2b3c4d\n"
         << "user_data_template = " << dir_ << "/user-data.sh.in\n"
         << "agent_binary = /usr/bin/runpool-agent\n"
         << "poll_interval = 100ms\n"
         << "claim_wait = 1s\n"
         << "release_timeout = 20s\n"
         << "cancel_drain_wait = 10s\n"
         << "provision_timeout = 60s\n"
         << extra_config;
  }
  ~CtlPool() { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  const std::string& dir() const { return dir_; }
  const std::string& pool() const { return pool_; }
  const std::string& table() const { return table_; }
  std::string config_path() const { return dir_ + "/runpool.conf"; }

  std::map<std::string, std::string> env(const std::map<std::string, std::string>& extra = {}) const {
    auto creds = cloud_.controller_credentials();
    std::map<std::string, std::string> e = {{"PATH", "/usr/bin:/bin"},
                                            {"AWS_ACCESS_KEY_ID", creds.access_key_id},
                                            {"AWS_SECRET_ACCESS_KEY", creds.secret_access_key.reveal()},
                                            {"RUNPOOL_GITHUB_TOKEN", token_}};
    for (const auto& [k, v] : extra) e[k] = v;
    return e;
  }

  std::unique_ptr<CtlProcess> start(const std::vector<std::string>& args,
                                    const std::map<std::string, std::string>& extra_env = {}) const {
    std::vector<std::string> a = {"--config", config_path()};
    a.insert(a.end(), args.begin(), args.end());
    return std::make_unique<CtlProcess>(a, env(extra_env), dir_);
  }
  CtlResult run(const std::vector<std::string>& args, const std::map<std::string, std::string>& extra_env = {},
                std::chrono::milliseconds timeout = std::chrono::seconds(120)) const {
    return start(args, extra_env)->wait(timeout);
  }

 private:
  runpool::testing::LocalCloud& cloud_;
  std::string pool_, table_, dir_;
  std::string token_ = "ghp_runpoolctl_integration";
};

inline std::string describe(const CtlResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
}

}  // namespace runpool::controller::testing
