#include "common/pool/agent_text.h"

#include <gtest/gtest.h>

namespace runpool::pool {
namespace {

TEST(AgentText, OneLineAndShort) {
  struct Case {
    const char* why;
    std::string in;
    std::string out;
  };
  const Case cases[] = {
      {"plain text stays", "exit 3: config.sh failed", "exit 3: config.sh failed"},
      {"a workflow command cannot start a line", "x\n::set-output name=label::evil\r\n",
       "x?::set-output name=label::evil??"},
      {"an escape sequence is shown", "\x1b[2Jcleared", "?[2Jcleared"},
      {"empty", "", ""},
  };
  for (const auto& c : cases) EXPECT_EQ(agent_text(c.in), c.out) << c.why;
  const std::string huge(400'000, 'a');
  const std::string clipped = agent_text(huge);
  EXPECT_LE(clipped.size(), kAgentTextMax + 3) << "cut, with a marker";
  EXPECT_EQ(clipped.find('\n'), std::string::npos);
  EXPECT_EQ(clipped.substr(0, 10), "aaaaaaaaaa");
}

}  // namespace
}  // namespace runpool::pool
