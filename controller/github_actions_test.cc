#include "controller/github_actions.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include <unistd.h>

namespace runpool::controller {
namespace {

// Reads $GITHUB_OUTPUT as the runner does: `name=value` lines and `name<<DELIM` blocks.
std::map<std::string, std::string> parse_output_file(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto heredoc = line.find("<<");
    auto eq = line.find('=');
    if (heredoc != std::string::npos && (eq == std::string::npos || heredoc < eq)) {
      std::string name = line.substr(0, heredoc), delim = line.substr(heredoc + 2), value, l;
      bool first = true;
      while (std::getline(in, l) && l != delim) {
        value += (first ? "" : "\n") + l;
        first = false;
      }
      out[name] = value;
    } else if (eq != std::string::npos) {
      out[line.substr(0, eq)] = line.substr(eq + 1);
    }
  }
  return out;
}

TEST(GithubActions, OutputsRoundTripThroughTheRunnersParser) {
  int n = 0;
  auto random = [&] { return "000000000000000" + std::to_string(n++ % 10); };
  Outputs o = {{"label", "ci-1-1-build"}, {"instance-ids", "i-1 i-2"}, {"multi", "a\nb\nc"}, {"warm", "2"}};
  auto parsed = parse_output_file(github_output_text(o, random));
  EXPECT_EQ(parsed.size(), 4u);
  EXPECT_EQ(parsed["label"], "ci-1-1-build");
  EXPECT_EQ(parsed["instance-ids"], "i-1 i-2");
  EXPECT_EQ(parsed["multi"], "a\nb\nc");
  EXPECT_EQ(parsed["warm"], "2");
}

TEST(GithubActions, AValueCannotInjectAnotherOutput) {
  // The value holds the delimiter the first random draw would give, then an output line.
  std::vector<std::string> draws = {"aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"};
  size_t i = 0;
  auto random = [&] { return draws.at(std::min(i++, draws.size() - 1)); };
  std::string evil = "x\nghadelimiter_aaaaaaaaaaaaaaaa\nlaunched=999\nwarm<<E\nevil\nE";
  auto text = github_output_text({{"label", evil}, {"launched", "1"}}, random);
  auto parsed = parse_output_file(text);
  EXPECT_EQ(parsed["label"], evil);
  EXPECT_EQ(parsed["launched"], "1");
  EXPECT_EQ(parsed.count("warm"), 0u);
  EXPECT_NE(text.find("ghadelimiter_bbbbbbbbbbbbbbbb"), std::string::npos);
}

TEST(GithubActions, BadNamesAreRefused) {
  auto random = [] { return std::string("0123456789abcdef"); };
  EXPECT_THROW(github_output_text({{"a=b", "x"}}, random), std::invalid_argument);
  EXPECT_THROW(github_output_text({{"a\nb", "x"}}, random), std::invalid_argument);
  EXPECT_THROW(github_output_text({{"", "x"}}, random), std::invalid_argument);
  auto same = [] { return std::string("x"); };
  EXPECT_THROW(github_output_text({{"a", "ghadelimiter_x"}}, same), std::runtime_error);
}

TEST(GithubActions, MarkdownCell) {
  EXPECT_EQ(markdown_cell("a|b"), "a\\|b");
  EXPECT_EQ(markdown_cell("a\nb\r"), "a b ");
  EXPECT_EQ(markdown_cell("`x`\\"), "x\\\\");
}

// What may quote an agent's words (forgeable) is a code span: no Markdown, HTML or link in it acts.
TEST(GithubActions, MarkdownCode) {
  struct Case {
    std::string in, out;
  };
  const Case cases[] = {
      {"exit 3: failed", "`exit 3: failed`"},
      {"<img src=https://x/y.png> [click](https://x) **bold**", "`<img src=https://x/y.png> [click](https://x) **bold**`"},
      {"a`b``c", "`a'b''c`"},  // no backtick can close the span early
      {"x\n::set-output name=label::evil", "`x?::set-output name=label::evil`"},
      {"", "``"},
  };
  for (const auto& c : cases) EXPECT_EQ(markdown_code(c.in), c.out) << c.in;
  const std::string huge = markdown_code(std::string(100'000, 'a'));
  EXPECT_LE(huge.size(), 600u + 5);
  EXPECT_EQ(huge.front(), '`');
  EXPECT_EQ(huge.back(), '`');
}

TEST(GithubActions, FilesFromTheEnvironmentAndAppend) {
  std::map<std::string, std::string> env = {{"GITHUB_OUTPUT", "/tmp/o"}, {"GITHUB_STEP_SUMMARY", "/tmp/s"}};
  auto f = actions_files([&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  EXPECT_TRUE(f.active());
  EXPECT_EQ(f.summary, "/tmp/s");
  EXPECT_FALSE(actions_files([](const char*) -> const char* { return nullptr; }).active());

  char path[] = "/tmp/runpool-gha-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  append_to_file(path, "one\n");
  append_to_file(path, "two\n");
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "one\ntwo\n");
  std::remove(path);
  EXPECT_THROW(append_to_file("/nonexistent-dir/x", "y"), std::runtime_error);
}

}  // namespace
}  // namespace runpool::controller
