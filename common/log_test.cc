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

// A message quoting outside input cannot forge a second text line or send terminal escapes.
TEST(Logging, TextLinesShowControlCharactersAsQuestionMarks) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("t", sink);
  logger.set_formatter(make_text_formatter());
  logger.warn("skipping item {}", "i-0bad\n2026-11-21T00:00:00.000Z info all good\r\x1b[2J\x07\x7f\ttab");
  logger.flush();
  std::string line = out.str();
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
  for (char c : {'\r', '\x1b', '\x07', '\x7f'}) EXPECT_EQ(line.find(c), std::string::npos) << line;
  EXPECT_NE(line.find("i-0bad?2026-11-21T00:00:00.000Z info all good??[2J??\ttab"), std::string::npos) << line;
  EXPECT_NE(line.find(" warning skipping item "), std::string::npos) << line;
}

TEST(Printable, ShowsControlCharactersAndCutsLongText) {
  EXPECT_EQ(printable("a\nb\r\x1b[2J\x7f\tc"), "a?b??[2J??c");
  EXPECT_EQ(printable("plain \xc3\xa9"), "plain \xc3\xa9");
  EXPECT_EQ(printable(std::string(1 << 20, 'x'), 10), "xxxxxxxxxx…");
  EXPECT_EQ(printable("ab\xc3\xa9", 3), "ab…");  // never half a character
  EXPECT_EQ(printable(""), "");
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
