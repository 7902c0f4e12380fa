#include "common/settings_table.h"

#include <gtest/gtest.h>

namespace runpool {
namespace {

struct Nested {
  int64_t wait_ms = 90'000;
};

struct Example {
  std::string name = "pool";
  bool on = true;
  int count = 3;
  Duration every{std::chrono::milliseconds(250)};
  Nested nested;
  std::vector<std::string> labels{"a", "b"};
};

SettingsTable<Example> example_table(int* checks = nullptr) {
  return {
      checked<Example>(string_row("name", &Example::name, "a name"),
                       [checks](const Config& c, Example& e) {
                         if (checks) ++*checks;
                         if (e.name.empty()) c.reject("name", "must not be empty");
                       }),
      bool_row("on", &Example::on, "on or off"),
      int_row("count", &Example::count, "how many", 1, 10),
      duration_row("every", &Example::every, "how often", Duration{10}, Duration{60'000}),
      millis_row<Example>("wait", [](Example& e) -> int64_t& { return e.nested.wait_ms; }, "how long", Duration{0},
                          Duration{3'600'000}),
      list_row("labels", &Example::labels, "labels"),
      {{"later", KeyType::kString, "", "read after the table"}, {}},
  };
}

TEST(SettingsTable, DefaultsComeFromTheStructsOwnInitialisers) {
  auto schema = schema_of(example_table());
  ASSERT_EQ(schema.size(), 7u);
  EXPECT_EQ(schema[0].default_value, "pool");
  EXPECT_EQ(schema[1].default_value, "true");
  EXPECT_EQ(schema[2].default_value, "3");
  EXPECT_EQ(schema[2].min, 1);
  EXPECT_EQ(schema[2].max, 10);
  EXPECT_EQ(schema[3].default_value, "250ms");
  EXPECT_EQ(schema[3].type, KeyType::kDuration);
  EXPECT_EQ(schema[4].default_value, "90s");
  EXPECT_EQ(schema[5].default_value, "a,b");
  EXPECT_EQ(schema[6].key, "later");
}

TEST(SettingsTable, LoadingNothingGivesTheDefaultsAndValuesReachTheirMembers) {
  Example untouched;
  Config empty(schema_of(example_table()));
  Example e;
  e.name = "x";
  e.nested.wait_ms = 1;
  load_rows(example_table(), empty, e);
  EXPECT_EQ(e.name, untouched.name);
  EXPECT_EQ(e.nested.wait_ms, untouched.nested.wait_ms);
  EXPECT_EQ(e.labels, untouched.labels);

  Config c(schema_of(example_table()));
  c.merge_text("name = other\non = false\ncount = 7\nevery = 2s\nwait = 5m\nlabels = x y\n", "test.conf");
  int checks = 0;
  load_rows(example_table(&checks), c, e);
  EXPECT_EQ(checks, 1);
  EXPECT_EQ(e.name, "other");
  EXPECT_FALSE(e.on);
  EXPECT_EQ(e.count, 7);
  EXPECT_EQ(e.every, Duration{2000});
  EXPECT_EQ(e.nested.wait_ms, 300'000);
  EXPECT_EQ(e.labels, (std::vector<std::string>{"x", "y"}));
}

TEST(SettingsTable, ChecksRejectNamingTheKeyAndBoundsComeFromTheRow) {
  Config c(schema_of(example_table()));
  c.merge_text("name =\n", "test.conf");
  Example e;
  try {
    load_rows(example_table(), c, e);
    FAIL() << "an empty name was accepted";
  } catch (const ConfigError& err) {
    EXPECT_NE(std::string(err.what()).find("name"), std::string::npos) << err.what();
  }
  Config bounded(schema_of(example_table()));
  EXPECT_THROW(bounded.merge_text("count = 11\n", "test.conf"), ConfigError);
}

TEST(SettingsTable, AKeyBoundTwiceIsRefused) {
  auto table = example_table();
  table.push_back(bool_row("on", &Example::on, "again"));
  EXPECT_THROW(schema_of(table), std::logic_error);
}

}  // namespace
}  // namespace runpool
