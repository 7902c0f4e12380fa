// Bad input to runpoolctl, the real binary against the local cloud: every configuration key (read
// from `runpoolctl config --reference`, so a new key is covered without touching this file) and
// every subcommand option (read from `runpoolctl --help-all`) gets invalid, missing, huge and
// hostile values — shell and JSON injection, control characters, path traversal — through the
// config file, RUNPOOL_<KEY> and the command line. Each run must end with 0 (the value was
// acceptable and nothing bad came of it), 1 or 2 and a short clean message; never a signal or a
// sanitizer report; and nothing may change: no injected file, /etc/passwd and the table as before.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "common/json.h"
#include "common/pool/record_codec.h"
#include "tests/integration/bad_input_support.h"

namespace runpool::bad_input {
namespace {

using controller::testing::CtlPool;
using controller::testing::CtlProcess;
using controller::testing::describe;

struct KeyRow {
  std::string key, env, type;
};

class BadInputCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cloud_ = &runpool::testing::LocalCloud::shared();
    aws_ = new controller::testing::CloudClients(*cloud_);
    // Few attempts, short timeouts: an accepted but useless value (an unreachable endpoint) fails fast.
    // No instance type is allowed, so no provision can launch: an accepted value can only fail.
    pool_ = new CtlPool(*cloud_, "badcli", "badinput-cli",
                        "aws_max_attempts = 2\naws_timeout = 5s\ngithub_timeout = 5s\nallowed_instance_types = no-such-type*\n");
    auto init = pool_->run({"init"});
    ASSERT_EQ(init.exit_code, 0) << describe(init);
    // Children run two levels below a scratch directory, so "../../etc/passwd" as a relative
    // path lands in the scratch directory, not on the machine's /etc/passwd (the tests run as root).
    work_ = pool_->dir() + "/w1/w2";
    std::filesystem::create_directories(work_);
    seed_records();
    passwd_ = system_users();
  }
  static void TearDownTestSuite() {
    delete pool_;
    delete aws_;
  }
  // /etc/passwd but the agents' job users (runpool-j…), which agents of tests running beside this
  // one create and delete: what runpoolctl must never change.
  static std::string system_users() {
    std::istringstream in(file_text("/etc/passwd"));
    std::string out;
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("runpool-j", 0) != 0) out += line + "\n";
    }
    return out;
  }
  void TearDown() override {
    EXPECT_EQ(system_users(), passwd_);
    ::unlink(marker().c_str());
  }

  // An idle and a running record of the pool, so that status has something to read.
  static void seed_records() {
    pool::DynamoStateTable table(aws_->db, pool_->table(), cloud_->instance_role_id());
    int64_t now = to_epoch_ms(system_clock().now());
    for (auto [id, state] : {std::pair{"i-00badc11000000001", pool::State::kIdle},
                             std::pair{"i-00badc11000000002", pool::State::kRunning}}) {
      pool::InstanceRecord r;
      r.instance_id = id;
      r.pool = pool_->pool();
      r.state = state;
      r.generation = 2;
      r.label = state == pool::State::kRunning ? "run-ok" : "";
      r.resource_class = "small";
      r.instance_type = "c7i.large";
      r.created_ms = now;
      r.state_since_ms = now;
      r.deadline_ms = now + 3'600'000;
      r.heartbeat_ms = now;
      r.seal_key = pool::make_seal_keys().public_key;
      ASSERT_TRUE(table.create(r));
    }
  }

  // runpoolctl with exactly these arguments and environment, started from the scratch directory.
  static std::unique_ptr<CtlProcess> start(const std::vector<std::string>& args,
                                           const std::map<std::string, std::string>& env = {}) {
    char old[4096];
    if (!getcwd(old, sizeof old)) throw std::runtime_error("getcwd");
    if (chdir(work_.c_str()) != 0) throw std::runtime_error("chdir");
    auto p = std::make_unique<CtlProcess>(args, pool_->env(env), pool_->dir());
    if (chdir(old) != 0) throw std::runtime_error("chdir back");
    return p;
  }
  static CtlResult run(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
    return start(args, env)->wait(std::chrono::seconds(90));
  }
  static std::vector<std::string> with_config(std::vector<std::string> args, const std::string& config) {
    args.insert(args.begin(), {"--config", config});
    return args;
  }

  static std::vector<KeyRow> keys() {
    auto r = run({"config", "--reference"});
    EXPECT_EQ(r.exit_code, 0) << describe(r);
    std::vector<KeyRow> out;
    std::regex row(R"(^\| `([a-z0-9_]+)` \| `([A-Z0-9_]+)` \| ([a-z]+) \|)");
    for (const auto& line : lines_of(r.out)) {
      std::smatch m;
      if (std::regex_search(line, m, row)) out.push_back({m[1], m[2], m[3]});
    }
    return out;
  }

  static runpool::testing::LocalCloud* cloud_;
  static controller::testing::CloudClients* aws_;
  static CtlPool* pool_;
  static std::string work_, passwd_;
};

runpool::testing::LocalCloud* BadInputCli::cloud_ = nullptr;
controller::testing::CloudClients* BadInputCli::aws_ = nullptr;
CtlPool* BadInputCli::pool_ = nullptr;
std::string BadInputCli::work_, BadInputCli::passwd_;

TEST_F(BadInputCli, EveryConfigKeyRefusesOrSurvivesHostileValues) {
  auto rows = keys();
  ASSERT_GT(rows.size(), 50u) << "config --reference lists the schema";
  const std::string base = file_text(pool_->config_path());
  auto before = snapshot(aws_->db, pool_->table());
  const bool full = full_run();
  struct Job {
    std::string what, key;
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
  };
  std::vector<Job> jobs;
  const auto file_values = hostile_values(true), argv_values = hostile_values(false);
  const size_t nv = file_values.size();
  for (size_t k = 0; k < rows.size(); ++k) {
    const KeyRow& row = rows[k];
    for (int channel = 0; channel < 3; ++channel) {  // 0 file, 1 environment, 2 --set
      const auto& values = channel == 0 ? file_values : argv_values;
      for (size_t v = 0; v < nv; ++v) {
        // The CI size: three values per key, one per channel, rotating so that across the keys
        // every value goes through every channel. RUNPOOL_RELIABILITY_FULL=1: all of them.
        if (!full && v != (3 * k + channel) % nv) continue;
        if (row.type == "secret" && channel == 2) continue;  // --set refuses secrets by design (below)
        const Hostile& h = values[v];
        Job j{row.key + " = <" + h.name + "> via " + std::vector<std::string>{"file", "env", "--set"}[channel], row.key,
              {}, {}};
        if (channel == 0) {
          std::string path = pool_->dir() + "/bad-" + std::to_string(jobs.size()) + ".conf";
          std::ofstream(path, std::ios::trunc) << base << row.key << " = " << h.value << "\n";
          j.args = with_config({"status"}, path);
        } else if (channel == 1) {
          j.args = with_config({"status"}, pool_->config_path());
          j.env = {{row.env, h.value}};
        } else {
          j.args = with_config({"--set", row.key + "=" + h.value, "status"}, pool_->config_path());
        }
        jobs.push_back(std::move(j));
      }
    }
  }
  int refused = 0, accepted = 0;
  // A few at a time: each run is mostly process start-up.
  for (size_t first = 0; first < jobs.size(); first += 4) {
    size_t last = std::min(jobs.size(), first + 4);
    std::vector<std::unique_ptr<CtlProcess>> running;
    for (size_t i = first; i < last; ++i) running.push_back(start(jobs[i].args, jobs[i].env));
    for (size_t i = first; i < last; ++i) {
      const Job& j = jobs[i];
      CtlResult r = running[i - first]->wait(std::chrono::seconds(90));
      expect_clean(r, j.what + "\n" + describe(r).substr(0, 3000));
      if (r.exit_code == 2) {
        ++refused;
        // The message names the key (or the file line it sits on) in one line.
        EXPECT_LE(lines_of(r.err).size(), 2u) << j.what << "\n" << r.err.substr(0, 2000);
        EXPECT_TRUE(r.err.find(j.key) != std::string::npos || r.err.find(".conf:") != std::string::npos)
            << j.what << "\n" << r.err.substr(0, 2000);
      } else {
        ++accepted;
      }
    }
  }
  // A secret is refused on the command line without echoing it.
  auto secret = run(with_config({"--set", "github_token=ghp_leakme$(touch " + marker() + ")", "status"}, pool_->config_path()));
  EXPECT_EQ(secret.exit_code, 2) << describe(secret);
  EXPECT_EQ(secret.err.find("ghp_leakme"), std::string::npos);
  expect_clean(secret, "--set github_token");
  EXPECT_EQ(snapshot(aws_->db, pool_->table()), before) << "a run changed the table";
  std::printf("[ bad input ] config keys: %zu keys, %zu runs, %d refused (exit 2), %d accepted or failed cleanly\n",
              rows.size(), jobs.size() + 1, refused, accepted);
}

// `--help-all` lists every subcommand and its options; each option gets the hostile values (and a
// flag gets a value it does not take). Commands that would launch or drain run against a label
// and ids that match nothing, so an accepted value can only find nothing to do.
TEST_F(BadInputCli, EverySubcommandOptionRefusesOrSurvivesHostileValues) {
  auto help = run({"--help-all"});
  ASSERT_EQ(help.exit_code, 0) << describe(help);
  std::map<std::string, std::vector<std::pair<std::string, bool>>> options;  // command -> (--long, takes a value)
  std::string command;
  std::regex sub(R"(^([a-z][a-z-]+)$)");
  std::regex opt(R"(^\s+(?:-[a-zA-Z],)?(--[a-z][a-z-]*)( (?:TEXT|INT))?)");
  for (const auto& line : lines_of(help.out)) {
    std::smatch m;
    if (std::regex_search(line, m, sub)) command = m[1];
    else if (!command.empty() && std::regex_search(line, m, opt) && m[1] != "--help") {
      options[command].push_back({m[1], m[2].matched});
    }
  }
  for (const char* c : {"init", "provision", "release", "refresh", "scale-down", "scale-up", "bypass-removal", "status", "config"}) {
    EXPECT_TRUE(options.count(c) || std::string(c) == "init" || std::string(c) == "status" || std::string(c) == "refresh")
        << "no options parsed for " << c << "\n" << help.out;
  }
  ASSERT_GE(options["provision"].size(), 5u) << help.out;

  auto before = snapshot(aws_->db, pool_->table());
  auto live_before = aws_->ec2.describe_instances({});
  // What each command needs besides the option under test (groups: a flag and its value), so that
  // it gets as far as it can: a label, ids and a class that match nothing.
  std::map<std::string, std::vector<std::vector<std::string>>> needs = {
      {"release", {{"--label", "nothing-here"}}},
      {"bypass-removal", {{"i-0000000000000dead"}}},
      {"provision", {{"--label", "bad-input-nothing"}, {"--timeout", "5s"}}},
      {"scale-up", {{"--resource-class", "no-such-class"}}},
      {"scale-down", {{"--dry-run"}}},
      {"refresh", {{"--dry-run"}}},
      {"retire", {{"--dry-run"}}},  // a well-formed version or AMI retires every instance that differs
  };
  int runs = 0;
  size_t n = 0;
  for (const auto& [cmd, opts] : options) {
    for (const auto& [flag, takes_value] : opts) {
      auto values = hostile_values(false);
      for (size_t v = 0; v < values.size(); ++v) {
        if (!full_run() && (++n % 7) != 0) continue;  // the CI size: every seventh, rotating over values
        std::vector<std::string> args = {cmd};
        for (const auto& group : needs[cmd]) {
          if (group[0] != flag) args.insert(args.end(), group.begin(), group.end());
        }
        if (takes_value) {
          args.push_back(flag);
          args.push_back(values[v].value);
        } else {
          args.push_back(flag + "=" + values[v].value);
        }
        ++runs;
        auto r = run(with_config(args, pool_->config_path()));
        expect_clean(r, cmd + " " + flag + " <" + values[v].name + ">\n" + describe(r).substr(0, 3000));
      }
    }
  }
  // Positional and top-level hostile arguments.
  for (const auto& h : hostile_values(false)) {
    for (std::vector<std::string> args : {std::vector<std::string>{"bypass-removal", h.value},
                                          std::vector<std::string>{"release", "--label", h.value},
                                          std::vector<std::string>{h.value},
                                          std::vector<std::string>{"--log-level", h.value, "status"},
                                          std::vector<std::string>{"--log-format", h.value, "status"},
                                          std::vector<std::string>{"--table", h.value, "status"}}) {
      ++runs;
      auto r = run(with_config(args, pool_->config_path()));
      expect_clean(r, args[0] + " <" + h.name + ">\n" + describe(r).substr(0, 3000));
      // Shell, JSON or path syntax is never a label or an instance id.
      bool syntax = h.value.find_first_of("$`\"'\n\r\x01/{") != std::string::npos;
      if ((args[0] == "bypass-removal" || args[0] == "release") && syntax) {
        EXPECT_EQ(r.exit_code, 2) << "a hostile id or label was accepted: " << h.name << "\n" << describe(r).substr(0, 2000);
      }
    }
  }
  EXPECT_EQ(snapshot(aws_->db, pool_->table()), before) << "a run changed the table";
  EXPECT_EQ(aws_->ec2.describe_instances({}).size(), live_before.size()) << "a run launched instances";
  std::printf("[ bad input ] subcommand options: %zu commands, %d runs\n", options.size(), runs);
}

// A token with a line break would carry a header of its own into every GitHub request (libcurl
// sends header lines as given): refused before anything is sent, without printing the token.
TEST_F(BadInputCli, ALineBreakInTheTokenNeverReachesTheWire) {
  const std::string token = pool_->env()["RUNPOOL_GITHUB_TOKEN"];
  for (const std::string& tail : {std::string("\r\nX-Injected: 1"), std::string("\nX-Injected: 1"), std::string("\r")}) {
    // refresh lists GitHub's runners first, always.
    auto r = run(with_config({"refresh", "--dry-run"}, pool_->config_path()), {{"RUNPOOL_GITHUB_TOKEN", token + tail}});
    expect_clean(r, "token with a line break\n" + describe(r));
    EXPECT_NE(r.exit_code, 0) << "a request went out with the injected header\n" << describe(r);
    EXPECT_EQ(r.err.find(token), std::string::npos) << "the token was printed";
  }
  auto ok = run(with_config({"refresh", "--dry-run"}, pool_->config_path()));
  EXPECT_EQ(ok.exit_code, 0) << describe(ok);
}

}  // namespace
}  // namespace runpool::bad_input
