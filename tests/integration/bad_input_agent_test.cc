// Bad input to runpool-agent: every configuration key (from --config-reference) with the hostile
// values through the file, RUNPOOL_<KEY> and --set, checked with --check-config (0 or 2, a short
// clean message, nothing injected); and, on real local-cloud instances, an agent whose own record
// is corrupted or carries hostile values: it skips what it cannot read with a warning, never
// crashes, never runs what a value smuggles in, and ends its instance rather than serve a record
// it cannot trust.
#include <gtest/gtest.h>

#include <map>
#include <regex>

#include "common/json.h"
#include "common/log.h"
#include "common/pool/record_key.h"
#include "tests/integration/bad_input_support.h"
#include "tests/support/agent_cloud.h"

namespace runpool::bad_input {
namespace {

using namespace std::chrono_literals;
using agent::testing::AgentCloud;
using agent::testing::eventually;
using aws::AttributeValue;
using controller::testing::describe;

// runpool-agent with these arguments and environment.
CtlResult run_agent(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                    const std::string& dir) {
  std::map<std::string, std::string> e = env;
  e["PATH"] = "/usr/bin:/bin";
  return run_program(RUNPOOL_AGENT_BINARY, args, e, dir, dir, 60s);
}

TEST(BadInputAgentConfig, EveryKeyRefusesOrAcceptsHostileValuesCleanly) {
  std::string dir = controller::testing::make_temp_dir("badagent");
  auto ref = run_agent({"--config-reference"}, {}, dir);
  ASSERT_EQ(ref.exit_code, 0) << describe(ref);
  std::vector<std::pair<std::string, std::string>> keys;  // key, env
  std::regex row(R"(^\| `([a-z0-9_]+)` \| `([A-Z0-9_]+)` \|)");
  for (const auto& line : lines_of(ref.out)) {
    std::smatch m;
    if (std::regex_search(line, m, row)) keys.push_back({m[1], m[2]});
  }
  ASSERT_GT(keys.size(), 25u) << ref.out;
  const std::string base = "table = runpool\npool = ci\nrunner_user = runpool-runner\n";
  std::ofstream(dir + "/base.conf") << base;
  int runs = 0, refused = 0;
  for (size_t k = 0; k < keys.size(); ++k) {
    const auto& [key, env] = keys[k];
    for (int channel = 0; channel < 3; ++channel) {
      auto values = hostile_values(channel == 0);
      for (size_t v = 0; v < values.size(); ++v) {
        // The CI size: three values per key, one per channel, rotating over the values.
        if (!full_run() && v != (3 * k + channel) % values.size()) continue;
        const Hostile& h = values[v];
        CtlResult r;
        if (channel == 0) {
          std::ofstream(dir + "/bad.conf", std::ios::trunc) << base << key << " = " << h.value << "\n";
          r = run_agent({"--check-config", "--config", dir + "/bad.conf"}, {}, dir);
        } else if (channel == 1) {
          r = run_agent({"--check-config", "--config", dir + "/base.conf"}, {{env, h.value}}, dir);
        } else {
          r = run_agent({"--check-config", "--config", dir + "/base.conf", "--set", key + "=" + h.value}, {}, dir);
        }
        ++runs;
        std::string what = key + " = <" + h.name + "> via " + std::to_string(channel);
        expect_clean(r, what + "\n" + describe(r).substr(0, 3000), "runpool-agent|configuration");
        if (r.exit_code == 2) {
          ++refused;
          EXPECT_LE(lines_of(r.err).size(), 2u) << what << "\n" << r.err.substr(0, 2000);
          EXPECT_TRUE(r.err.find(key) != std::string::npos || r.err.find("bad.conf:") != std::string::npos)
              << what << "\n" << r.err.substr(0, 2000);
        } else {
          EXPECT_EQ(r.exit_code, 0) << what << "\n" << describe(r).substr(0, 2000);
        }
      }
    }
  }
  // A missing or unreadable configuration file.
  for (const std::string& path : {dir + "/none.conf", std::string("/proc/self/mem"), dir}) {
    auto r = run_agent({"--check-config", "--config", path}, {}, dir);
    ++runs;
    expect_clean(r, "config file " + path + "\n" + describe(r), "runpool-agent|configuration");
    EXPECT_EQ(r.exit_code, 2) << describe(r);
  }
  std::system(("rm -rf '" + dir + "'").c_str());
  std::printf("[ bad input ] agent config: %zu keys, %d runs, %d refused\n", keys.size(), runs, refused);
}

class BadInputAgentRecord : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { env_ = new AgentCloud(); }
  static void TearDownTestSuite() {
    delete env_;
    env_ = nullptr;
  }
  void TearDown() override { ::unlink(marker().c_str()); }
  static bool ended(const std::string& id, Duration timeout) {
    return eventually([&] {
      std::string s = env_->state_of(id);
      return s == "shutting-down" || s == "terminated";
    }, timeout);
  }
  // The table the agents use (AgentCloud keeps its client private): from the config it writes them.
  static std::string table_name() {
    std::smatch m;
    std::string config = env_->agent_config({});
    std::regex_search(config, m, std::regex(R"(table = (\S+))"));
    return m[1];
  }
  static aws::DynamoDbClient& db() {
    static controller::testing::CloudClients clients(env_->cloud());
    return clients.db;
  }
  static inline AgentCloud* env_ = nullptr;
};

// The agent's own record, corrupted in ways a decoder must refuse: it cannot read it, says so,
// and ends the instance after the boot grace (as for no record); its bad attributes stay as they were.
TEST_F(BadInputAgentRecord, ACorruptedOwnRecordIsSkippedAndTheInstanceEnds) {
  const std::vector<std::pair<std::string, std::pair<std::string, AttributeValue>>> corruptions = {
      {"unknown state", {"state", AttributeValue::string("zombie")}},
      {"generation as a string", {"generation", AttributeValue::string("two")}},
      {"deadline as a map", {"deadline", AttributeValue::map({{"x", AttributeValue::string("$(touch " + marker() + ")")}})}},
  };
  for (const auto& [name, corruption] : corruptions) {
    SCOPED_TRACE(name);
    const std::string id = env_->launch();
    env_->write_launched_record(id, "run-corrupt");
    // Corrupt it in place, attribute by attribute, as a foreign writer would.
    aws::UpdateItemRequest u;
    u.table = table_name();
    u.key = {{"instance_id", AttributeValue::string(pool::record_key(runpool::testing::LocalCloud::shared().instance_role_id(), id))}};
    u.update = "SET #a = :v";
    u.names = {{"#a", corruption.first}};
    u.values = {{":v", corruption.second}};
    db().update_item(u);
    ASSERT_TRUE(ended(id, 30s)) << env_->console(id);
    std::string console = env_->console(id);
    EXPECT_NE(console.find("skipping a record"), std::string::npos) << console;
    for (const char* bad : {"AddressSanitizer", "runtime error:", "terminate called"}) {
      EXPECT_EQ(console.find(bad), std::string::npos) << console;
    }
    aws::GetItemRequest g;
    g.table = table_name();
    g.key = u.key;
    g.consistent_read = true;
    auto item = db().get_item(g);
    ASSERT_TRUE(item.has_value());
    EXPECT_EQ(item->at(corruption.first), corruption.second) << "the agent rewrote the corrupted attribute";
    EXPECT_FALSE(exists(marker()));
  }
}

// A record that decodes but carries hostile values where the agent passes them on (the label to
// config.sh, the registration URL): nothing they smuggle runs; the registration fails cleanly.
TEST_F(BadInputAgentRecord, HostileValuesInTheOwnRecordAreNeverExecuted) {
  const std::string id = env_->launch();
  env_->write_launched_record(id, "run-hostile");
  aws::UpdateItemRequest u;
  u.table = table_name();
  u.key = {{"instance_id", AttributeValue::string(pool::record_key(runpool::testing::LocalCloud::shared().instance_role_id(), id))}};
  u.update = "SET #l = :l, #u = :u";
  u.names = {{"#l", "label"}, {"#u", "reg_url"}};
  u.values = {{":l", AttributeValue::string("x,$(touch " + marker() + "),`touch " + marker() + "`")},
              {":u", AttributeValue::string(env_->reg_url() + "\";touch " + marker() + ";\"")}};
  db().update_item(u);
  ASSERT_TRUE(eventually([&] {
    auto s = env_->record(id).signal;
    return s == pool::AgentSignal::kRegistered || s == pool::AgentSignal::kFailed;
  }, 60s)) << env_->console(id);
  auto rec = env_->record(id);
  EXPECT_FALSE(pool::agent_reported(rec, pool::AgentSignal::kRegistered)) << env_->console(id);
  EXPECT_EQ(rec.signal, pool::AgentSignal::kFailed) << env_->console(id);
  std::printf("[ bad input ] agent with a hostile label and registration URL: %s: %s\n",
              std::string(pool::agent_signal_name(rec.signal)).c_str(), printable(rec.signal_detail, 160).c_str());
  std::string console = env_->console(id);
  for (const char* bad : {"AddressSanitizer", "runtime error:", "terminate called"}) {
    EXPECT_EQ(console.find(bad), std::string::npos) << console;
  }
  EXPECT_FALSE(exists(marker())) << "a value in the record ran as a command\n" << console;
}

}  // namespace
}  // namespace runpool::bad_input
