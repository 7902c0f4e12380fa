#include "common/config.h"

#include <gtest/gtest.h>

#include <map>

namespace runpool {
namespace {

std::vector<KeySpec> schema() {
  return {
      {"table", KeyType::kString, "runpool", "the state table"},
      {"heartbeat_interval", KeyType::kDuration, "10s", "how often the agent beats", 100, 3'600'000},
      {"max_instances", KeyType::kInt, "50", "cap", 1, 1000},
      {"drain_capable", KeyType::kBool, "false", "runner understands .drain"},
      {"subnets", KeyType::kList, "", "subnet ids"},
      {"github_token", KeyType::kSecret, "", "a PAT"},
  };
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ParseDuration, Units) {
  EXPECT_EQ(parse_duration("250ms")->count(), 250);
  EXPECT_EQ(parse_duration("30s")->count(), 30'000);
  EXPECT_EQ(parse_duration("30")->count(), 30'000);
  EXPECT_EQ(parse_duration("5m")->count(), 300'000);
  EXPECT_EQ(parse_duration("2h")->count(), 7'200'000);
  EXPECT_EQ(parse_duration("1d")->count(), 86'400'000);
  for (const char* bad : {"", "s", "-5s", "5 s", "5x", "1.5s", "99999999999999999s"}) {
    EXPECT_FALSE(parse_duration(bad)) << bad;
  }
  EXPECT_EQ(format_duration(Duration{90'000}), "90s");
  EXPECT_EQ(format_duration(Duration{120'000}), "2m");
  EXPECT_EQ(format_duration(Duration{1500}), "1500ms");
}

TEST(Config, DefaultsThenFileThenEnvThenFlagsWin) {
  Config c(schema());
  EXPECT_EQ(c.get_string("table"), "runpool");
  EXPECT_EQ(c.origin("table"), "default");
  c.merge_text("# comment\n\ntable = from-file\nmax_instances = 7\n", "pool.conf");
  EXPECT_EQ(c.get_string("table"), "from-file");
  EXPECT_EQ(c.origin("max_instances"), "pool.conf:4");
  std::map<std::string, std::string> env{{"RUNPOOL_TABLE", "from-env"}};
  c.merge_env([&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  EXPECT_EQ(c.get_string("table"), "from-env");
  c.set("table", "from-flag", "--table");
  EXPECT_EQ(c.get_string("table"), "from-flag");
  EXPECT_EQ(c.get_int("max_instances"), 7);
}

TEST(Config, TypedValues) {
  Config c(schema());
  c.set("heartbeat_interval", "500ms", "--x");
  c.set("drain_capable", "yes", "--x");
  c.set("subnets", "subnet-a, subnet-b subnet-c", "--x");
  EXPECT_EQ(c.get_duration("heartbeat_interval").count(), 500);
  EXPECT_TRUE(c.get_bool("drain_capable"));
  EXPECT_EQ(c.get_list("subnets"), (std::vector<std::string>{"subnet-a", "subnet-b", "subnet-c"}));
  EXPECT_FALSE(c.has("github_token"));
}

TEST(SplitList, CommasAndSpacesSeparateEmptiesAreDropped) {
  EXPECT_EQ(split_list("c* m7i.*"), (std::vector<std::string>{"c*", "m7i.*"}));
  EXPECT_EQ(split_list(" a,,b , c  d,"), (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_TRUE(split_list("").empty());
  EXPECT_TRUE(split_list(" , ").empty());
}

TEST(Config, ErrorsNameTheKeyAndTheOrigin) {
  Config c(schema());
  auto e = error_of([&] { c.set("max_instances", "lots", "RUNPOOL_MAX_INSTANCES"); });
  EXPECT_NE(e.find("max_instances"), std::string::npos) << e;
  EXPECT_NE(e.find("RUNPOOL_MAX_INSTANCES"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { c.set("max_instances", "0", "--m"); }).find("out of range"), std::string::npos);
  EXPECT_NE(error_of([&] { c.set("heartbeat_interval", "1ms", "--h"); }).find("out of range"), std::string::npos);
  EXPECT_NE(error_of([&] { c.set("drain_capable", "maybe", "--d"); }).find("boolean"), std::string::npos);
  EXPECT_NE(error_of([&] { c.set("tabel", "x", "--t"); }).find("unknown configuration key 'tabel'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { c.merge_text("table\n", "f"); }).find("f:1"), std::string::npos);
  EXPECT_NE(error_of([&] { c.merge_text("\nnope = 1\n", "f"); }).find("f:2"), std::string::npos);
  EXPECT_NE(error_of([&] { c.set("table", "a\nb", "--t"); }).find("control characters"), std::string::npos);
  EXPECT_NE(error_of([&] { c.set("table", std::string(5000, 'a'), "--t"); }).find("too long"), std::string::npos);
  EXPECT_NE(error_of([&] { c.merge_file("/nonexistent/runpool.conf"); }).find("cannot read"), std::string::npos);
}

// What an error quotes back (an unknown key, a file path, a reason quoting a value) is one short
// printable line: a hostile key cannot drive the terminal or forge a second line.
TEST(Config, ErrorsQuoteOutsideInputPrintably) {
  Config c(schema());
  for (const std::string& e : {error_of([&] { c.set("a\x1b[2J\nb", "1", "--set"); }),
                               error_of([&] { c.set(std::string(100000, 'k'), "1", "--set"); }),
                               error_of([&] { c.merge_file("/nonexistent/\x1b[31m\n.conf"); }),
                               error_of([&] { c.reject("table", "'" + std::string(5000, 'v') + "\r\n' is bad"); })}) {
    EXPECT_LT(e.size(), 600u) << e.substr(0, 700);
    EXPECT_EQ(e.find_first_of("\n\r\x1b"), std::string::npos) << e.substr(0, 700);
  }
  EXPECT_NE(error_of([&] { c.set("a\nb", "1", "--set"); }).find("unknown configuration key 'a?b'"), std::string::npos);
}

TEST(Config, RejectNamesTheKeyAndWhereItsValueCameFrom) {
  Config c(schema());
  c.merge_text("\nmax_instances = 7\n", "pool.conf");
  EXPECT_EQ(error_of([&] { c.reject("max_instances", "must exceed min_instances"); }),
            "invalid value for max_instances (from pool.conf:2): must exceed min_instances");
  EXPECT_EQ(error_of([&] { c.reject("table", "taken"); }), "invalid value for table (from default): taken");
  EXPECT_THROW(c.reject("tabel", "x"), ConfigError) << "an unknown key still throws the ConfigError";
}

TEST(Config, SecretsNeverAppearInErrors) {
  std::vector<KeySpec> s = schema();
  s.push_back({"key_count", KeyType::kInt, "", "x"});
  Config c(s);
  c.set("github_token", "ghp_secretvalue", "--t");
  EXPECT_EQ(c.get_secret("github_token").reveal(), "ghp_secretvalue");
  EXPECT_EQ(error_of([&] { c.set("github_token", std::string(5000, 's'), "--t"); }).find("sss"), std::string::npos);
}

TEST(Config, ReferenceListsEveryKey) {
  Config c(schema());
  std::string md = c.reference_markdown();
  for (const auto& s : schema()) EXPECT_NE(md.find("`" + s.key + "`"), std::string::npos) << s.key;
  EXPECT_NE(md.find("RUNPOOL_HEARTBEAT_INTERVAL"), std::string::npos);
}

}  // namespace
}  // namespace runpool
