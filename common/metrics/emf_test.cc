#include "common/metrics/emf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/json.h"

namespace runpool::metrics {
namespace {

Event base() {
  Event e;
  e.ns = "runpool";
  e.timestamp_ms = 1'800'000'000'000;
  e.dimension("Pool", "ci");
  return e;
}

Json::Value parsed(const Event& e) { return parse_json(format_emf(e), "EMF line"); }

void expect_rejected(const Event& e, const std::string& part) {
  try {
    format_emf(e);
    ADD_FAILURE() << "accepted an event that should mention '" << part << "'";
  } catch (const std::invalid_argument& ex) {
    EXPECT_NE(std::string(ex.what()).find(part), std::string::npos) << ex.what();
  }
}

TEST(Emf, ExactLineForASimpleEvent) {
  Event e = base();
  e.add("WarmClaims", 2);
  EXPECT_EQ(format_emf(e),
            R"({"Pool":"ci","WarmClaims":2,"_aws":{"CloudWatchMetrics":[{"Dimensions":[["Pool"]],)"
            R"("Metrics":[{"Name":"WarmClaims","Unit":"Count"}],"Namespace":"runpool"}],"Timestamp":1800000000000}})");
}

TEST(Emf, DirectiveNamesEveryDimensionAndMetricWithItsUnit) {
  Event e = base();
  e.dimension("ResourceClass", "small")
      .add("ProvisionLatency", 1234.5, Unit::kMilliseconds)
      .add("ProvisionFailures", 0)
      .add_values("ColdReadyLatency", {1000, 2000.25, 3000}, Unit::kMilliseconds)
      .add_values("WarmReadyLatency", {}, Unit::kMilliseconds)  // nothing: no metric
      .property("Label", "ci-1-1-build")
      .property("Requested", 3);
  Json::Value v = parsed(e);
  EXPECT_EQ(v["Pool"], "ci");
  EXPECT_EQ(v["ResourceClass"], "small");
  EXPECT_EQ(v["ProvisionLatency"].asDouble(), 1234.5);
  EXPECT_TRUE(v["ProvisionFailures"].isIntegral());
  ASSERT_TRUE(v["ColdReadyLatency"].isArray());
  EXPECT_EQ(v["ColdReadyLatency"].size(), 3u);
  EXPECT_EQ(v["ColdReadyLatency"][1].asDouble(), 2000.25);
  EXPECT_FALSE(v.isMember("WarmReadyLatency"));
  EXPECT_EQ(v["Label"], "ci-1-1-build");
  EXPECT_EQ(v["Requested"], 3);

  const Json::Value& aws = v["_aws"];
  EXPECT_EQ(aws["Timestamp"].asInt64(), 1'800'000'000'000);
  ASSERT_EQ(aws["CloudWatchMetrics"].size(), 1u);
  const Json::Value& d = aws["CloudWatchMetrics"][0];
  EXPECT_EQ(d["Namespace"], "runpool");
  EXPECT_EQ(write_json(d["Dimensions"]), R"([["Pool","ResourceClass"]])");
  EXPECT_EQ(write_json(d["Metrics"]),
            R"([{"Name":"ProvisionLatency","Unit":"Milliseconds"},{"Name":"ProvisionFailures","Unit":"Count"},)"
            R"({"Name":"ColdReadyLatency","Unit":"Milliseconds"}])");
}

TEST(Emf, ExplicitDimensionSets) {
  Event e = base();
  e.dimension("Rule", "deadline.idle").add("Terminations", 1);
  e.dimension_sets = {{"Pool"}, {"Pool", "Rule"}};
  EXPECT_EQ(write_json(parsed(e)["_aws"]["CloudWatchMetrics"][0]["Dimensions"]), R"([["Pool"],["Pool","Rule"]])");

  e.dimension_sets = {{}};  // no dimensions at all: allowed
  EXPECT_EQ(write_json(parsed(e)["_aws"]["CloudWatchMetrics"][0]["Dimensions"]), "[[]]");

  e.dimension_sets = {{"Pool", "ResourceClass"}};
  expect_rejected(e, "'ResourceClass', which has no value");
}

TEST(Emf, AlwaysExactlyOneLine) {
  Event e = base();
  e.add("ProvisionFailures", 1).property("Error", "line one\nline two\r\n\"quoted\"\ttab ünïcode");
  std::string line = format_emf(e);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.find('\r'), std::string::npos);
  EXPECT_EQ(parse_json(line, "EMF")["Error"], "line one\nline two\r\n\"quoted\"\ttab ünïcode");
}

TEST(Emf, NumbersAreWrittenPlainly) {
  Event e = base();
  e.add("A", 3).add("B", 0.1).add("C", -2).add("D", 1e15).add("E", 2.5e-3);
  std::string line = format_emf(e);
  EXPECT_NE(line.find(R"("A":3,)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("B":0.1,)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("C":-2,)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("D":1000000000000000,)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("E":0.0025,)"), std::string::npos) << line;
}

TEST(Emf, UnitNames) {
  EXPECT_EQ(unit_name(Unit::kNone), "None");
  EXPECT_EQ(unit_name(Unit::kCount), "Count");
  EXPECT_EQ(unit_name(Unit::kMilliseconds), "Milliseconds");
  EXPECT_EQ(unit_name(Unit::kSeconds), "Seconds");
  EXPECT_EQ(unit_name(Unit::kPercent), "Percent");
  EXPECT_EQ(unit_name(Unit::kBytes), "Bytes");
}

TEST(Emf, RejectsBadNamesAndValues) {
  Event e = base();
  expect_rejected(e, "at least one metric");

  e.add("Ok", 1);
  Event bad = e;
  bad.ns = "";
  expect_rejected(bad, "namespace");
  bad.ns = std::string(256, 'n');
  expect_rejected(bad, "namespace");
  bad.ns = std::string(255, 'n');
  EXPECT_NO_THROW(format_emf(bad));

  bad = e;
  bad.add("", 1);
  expect_rejected(bad, "metric ''");
  bad = e;
  bad.add(std::string(256, 'm'), 1);
  expect_rejected(bad, "1-255");

  for (double v : {std::nan(""), std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
    bad = e;
    bad.add("X", v);
    expect_rejected(bad, "non-finite");
  }

  bad = e;
  bad.dimension("ResourceClass", "");
  expect_rejected(bad, "1-1024");
  bad = e;
  bad.dimension("ResourceClass", std::string(1025, 'v'));
  expect_rejected(bad, "1-1024");
}

TEST(Emf, RejectsClashingMembers) {
  Event e = base();
  e.add("Ok", 1);
  Event bad = e;
  bad.add("Ok", 2);
  expect_rejected(bad, "'Ok' clashes");
  bad = e;
  bad.add("Pool", 2);
  expect_rejected(bad, "'Pool' clashes");
  bad = e;
  bad.property("Ok", "x");
  expect_rejected(bad, "'Ok' clashes");
  bad = e;
  bad.property("_aws", "x");
  expect_rejected(bad, "'_aws' clashes");
  bad = e;
  bad.dimension("Pool", "other");
  expect_rejected(bad, "'Pool' clashes");
}

TEST(Emf, RejectsWhatExceedsTheLimits) {
  Event e = base();
  for (int i = 0; i < 100; ++i) e.add("M" + std::to_string(i), i);
  EXPECT_NO_THROW(format_emf(e));
  e.add("M100", 100);
  expect_rejected(e, "at most 100 metrics");

  e = base();
  e.add_values("V", std::vector<double>(100, 1.0), Unit::kCount);
  EXPECT_NO_THROW(format_emf(e));
  e = base();
  e.add_values("V", std::vector<double>(101, 1.0), Unit::kCount);
  expect_rejected(e, "1-100 values");

  e = base();
  e.add("Ok", 1);
  std::vector<std::string> set{"Pool"};
  for (int i = 1; i < 31; ++i) {
    e.dimension("D" + std::to_string(i), "v");
    set.push_back("D" + std::to_string(i));
  }
  e.dimension_sets = {set};
  expect_rejected(e, "at most 30 dimensions");
  set.pop_back();
  e.dimension_sets = {set};
  EXPECT_NO_THROW(format_emf(e));
}

}  // namespace
}  // namespace runpool::metrics
