#include "common/log.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>

#include "common/json.h"
#include "common/secret.h"

namespace runpool {
namespace {

TEST(Secret, NeverFormatsInClear) {
  Secret s("ghs_supersecrettokenvalue123");
  EXPECT_EQ(fmt::format("{}", s), Secret::kMask);
  std::ostringstream os;
  os << s;
  EXPECT_EQ(os.str(), Secret::kMask);
  EXPECT_EQ(s.reveal(), "ghs_supersecrettokenvalue123");
}

TEST(Logging, SecretsStayOutOfTextAndJsonLogs) {
  const std::string token = "AQAAtoken-should-never-appear";
  Secret s(token);
  for (bool json : {false, true}) {
    std::ostringstream out;
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
    spdlog::logger logger("t", sink);
    if (json) logger.set_formatter(make_json_formatter());
    logger.info("registering with token {} and {}", s, Secret(token));
    logger.flush();
    EXPECT_EQ(out.str().find(token), std::string::npos) << out.str();
    EXPECT_NE(out.str().find(Secret::kMask), std::string::npos);
  }
}

TEST(Logging, JsonLinesAreValidJsonEvenWithHostileMessages) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("agent", sink);
  logger.set_formatter(make_json_formatter());
  const std::string hostile = "label \"x\\\" injected\n{\"evil\":1} \x01 done";
  logger.warn("{}", hostile);
  logger.flush();
  std::string line = out.str();
  ASSERT_EQ(line.back(), '\n');
  Json::Value v = parse_json(line.substr(0, line.size() - 1), "log line");
  EXPECT_EQ(v["level"].asString(), "warning");
  EXPECT_EQ(v["logger"].asString(), "agent");
  EXPECT_EQ(v["msg"].asString(), hostile);
}

TEST(Logging, ParsesFormatNames) {
  LogFormat f;
  EXPECT_TRUE(parse_log_format("json", &f));
  EXPECT_EQ(f, LogFormat::kJson);
  EXPECT_TRUE(parse_log_format("journal", &f));
  EXPECT_FALSE(parse_log_format("xml", &f));
}

}  // namespace
}  // namespace runpool
