#include "common/aws/shared_config.h"
#include "common/testing/fake_env.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>

namespace runpool::aws {
namespace {

using Options = std::map<std::string, std::string>;

std::vector<IniSection> ini(std::string_view text) { return parse_ini(text, "config"); }

// The message of the SharedConfigError `text` raises ("" when it parses).
std::string refusal(std::string_view text) {
  try {
    parse_ini(text, "config");
  } catch (const SharedConfigError& e) {
    return e.what();
  }
  return "";
}

using runpool::testing::env_of;

// Each expectation below is what botocore 1.43 (Python's RawConfigParser) makes of the same text.
TEST(SharedConfigIni, SectionsKeysAndWhitespace) {
  EXPECT_EQ(ini("[default]\nregion = us-east-1\n"), (std::vector<IniSection>{{"default", {{"region", "us-east-1"}}}}));
  EXPECT_EQ(ini("[default]\n  Region\t=\teu-west-1  \nOUTPUT=json"),
            (std::vector<IniSection>{{"default", {{"region", "eu-west-1"}, {"output", "json"}}}}));
  // ':' is a delimiter too; the first of '=' and ':' splits.
  EXPECT_EQ(ini("[a]\nk: v\nrole_arn = arn:aws:iam::1:role/x\nx:y = z\n"),
            (std::vector<IniSection>{{"a", {{"k", "v"}, {"role_arn", "arn:aws:iam::1:role/x"}, {"x", "y = z"}}}}));
  // An empty value is a value.
  EXPECT_EQ(ini("[a]\nk =\n"), (std::vector<IniSection>{{"a", {{"k", ""}}}}));
  // Keys with spaces inside stay whole.
  EXPECT_EQ(ini("[a]\nmy key = v\n"), (std::vector<IniSection>{{"a", {{"my key", "v"}}}}));
  EXPECT_TRUE(ini("").empty());
  EXPECT_TRUE(ini("\n\n# only comments\n; and these\n").empty());
}

TEST(SharedConfigIni, CommentsAreWholeLinesOnly) {
  auto s = ini("# c\n; c\n[default]\nKey = v # not a comment\n  ; indented comment\nother: x=y\n   # also one\n");
  EXPECT_EQ(s, (std::vector<IniSection>{{"default", {{"key", "v # not a comment"}, {"other", "x=y"}}}}));
  EXPECT_EQ(ini("[a]\nk = v;w\n"), (std::vector<IniSection>{{"a", {{"k", "v;w"}}}}));
}

TEST(SharedConfigIni, HeadersRunToTheLastBracketAndKeepTheirSpaces) {
  EXPECT_EQ(ini("[profile  dev ] # trailing\nk=v\n")[0].name, "profile  dev ");
  EXPECT_EQ(ini("[ profile dev]\n")[0].name, " profile dev");
  EXPECT_EQ(ini("[a]b]c\nk=v\n")[0].name, "a]b");
  EXPECT_EQ(ini("  [indented]\n")[0].name, "indented");
  // An indented line under a section that has no key yet is a header, not a continuation.
  auto s = ini("[default]\n  [notheader]\n");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[1].name, "notheader");
}

TEST(SharedConfigIni, ContinuationLinesAndBlankLinesInsideValues) {
  EXPECT_EQ(ini("[default]\nk = first\n  second\n\n\n  third\n\nj = 1\n"),
            (std::vector<IniSection>{{"default", {{"k", "first\nsecond\n\n\nthird"}, {"j", "1"}}}}));
  // Nested settings: a key with no value, then deeper lines.
  EXPECT_EQ(ini("[default]\ns3 =\n  a = 1\n\n  b = 2\nk = v\n"),
            (std::vector<IniSection>{{"default", {{"s3", "\na = 1\n\nb = 2"}, {"k", "v"}}}}));
  // An indented header-looking line after a key continues it; a comment inside does not end it.
  EXPECT_EQ(ini("[default]\nk=v\n  [cont]\n# c\n  more\n"),
            (std::vector<IniSection>{{"default", {{"k", "v\n[cont]\nmore"}}}}));
  // Only deeper than the key's own line continues.
  EXPECT_EQ(ini("[a]\n  k = v\n  j = w\n"), (std::vector<IniSection>{{"a", {{"k", "v"}, {"j", "w"}}}}));
}

TEST(SharedConfigIni, LineEndingsOfEveryKind) {
  EXPECT_EQ(ini("[default]\r\nk = v\r\n\r[p]\rj=2"),
            (std::vector<IniSection>{{"default", {{"k", "v"}}}, {"p", {{"j", "2"}}}}));
}

TEST(SharedConfigIni, DefaultSectionAppliesToEverySection) {
  auto s = ini("[DEFAULT]\nregion=x\n[default]\nk=1\n[profile p]\nregion=y\n");
  EXPECT_EQ(s, (std::vector<IniSection>{{"default", {{"k", "1"}, {"region", "x"}}},
                                        {"profile p", {{"region", "y"}}}}));
}

TEST(SharedConfigIni, WhatTheAwsCliRefuses) {
  EXPECT_EQ(refusal("k=v\n[default]\n"), "config line 1: a line before the first [section]");
  EXPECT_EQ(refusal("[default]\njunk\nk=v\n"), "config line 2: neither a [section] nor a key = value line");
  EXPECT_EQ(refusal("[default]\n=v\n"), "config line 2: neither a [section] nor a key = value line");
  EXPECT_EQ(refusal("[default]\n: v\n"), "config line 2: neither a [section] nor a key = value line");
  EXPECT_EQ(refusal("[default]\nk=1\nK=2\n"), "config line 3: key k appears twice in section [default]");
  EXPECT_EQ(refusal("[a]\n[b]\n[a]\n"), "config line 3: section [a] appears twice");
  EXPECT_EQ(refusal("[]\n"), "config line 1: a line before the first [section]");
  EXPECT_EQ(refusal("[default]\n[]\n"), "config line 2: neither a [section] nor a key = value line");
  EXPECT_NE(refusal("[default]\ns3 =\n  nokey\n").find("not key = value"), std::string::npos);
  // A byte-order mark is not whitespace to Python either.
  EXPECT_NE(refusal("\xEF\xBB\xBF[default]\nk=v\n"), "");
  // The refusal quotes no value: the files hold secrets.
  EXPECT_EQ(refusal("[default]\naws_secret_access_key = hunter2\nhunter3\n").find("hunter"), std::string::npos);
}

TEST(SharedConfigProfiles, ConfigFileNamesProfilesAsTheCliDoes) {
  auto p = config_file_profiles(
      ini("[profile \"my name\"]\nk=v\n[profilex y]\nk=2\n[profile a b]\nk=3\n[default]\nk=4\n[profile default]\n"
          "k=5\n[sso-session s]\nk=6\n[services x]\nk=7\n[other]\nk=8\n[profile  dev ]\nk=9\n[profile 'q]\nk=10\n"));
  // shlex splits the header: two words make a profile; "profilex y" is one too, as botocore has it.
  EXPECT_EQ(p, (Profiles{{"my name", {{"k", "v"}}}, {"y", {{"k", "2"}}}, {"default", {{"k", "5"}}},
                         {"dev", {{"k", "9"}}}}));
  // The later of [default] and [profile default] wins whole.
  EXPECT_EQ(config_file_profiles(ini("[profile default]\na=1\n[default]\nb=2\n")), (Profiles{{"default", {{"b", "2"}}}}));
}

TEST(SharedConfigProfiles, CredentialsFileSectionsAreProfilesAndWinPerKey) {
  auto creds = credentials_file_profiles(ini("[default]\naws_access_key_id = A\n[profile x]\nk=1\n"));
  EXPECT_EQ(creds, (Profiles{{"default", {{"aws_access_key_id", "A"}}}, {"profile x", {{"k", "1"}}}}));
  auto config = config_file_profiles(ini("[default]\naws_access_key_id = B\nregion = r\n[profile only]\nk=1\n"));
  EXPECT_EQ(merge_profiles(config, creds),
            (Profiles{{"default", {{"aws_access_key_id", "A"}, {"region", "r"}}},
                      {"only", {{"k", "1"}}},
                      {"profile x", {{"k", "1"}}}}));
}

TEST(SharedConfigShellSplit, AsPythonShlexSplits) {
  using W = std::vector<std::string>;
  EXPECT_EQ(shell_split("a b  c"), (W{"a", "b", "c"}));
  EXPECT_EQ(shell_split("  \t"), W{});
  EXPECT_EQ(shell_split(""), W{});
  EXPECT_EQ(shell_split(R"("/opt/my tools/creds" --user "helen smith")"), (W{"/opt/my tools/creds", "--user", "helen smith"}));
  EXPECT_EQ(shell_split(R"('a "b"' c)"), (W{"a \"b\"", "c"}));
  EXPECT_EQ(shell_split(R"("a \"b\" \\ \x")"), (W{R"(a "b" \ \x)"}));
  EXPECT_EQ(shell_split(R"(a\ b c\"d)"), (W{"a b", "c\"d"}));
  EXPECT_EQ(shell_split(R"(x'y'"z" '' "")"), (W{"xyz", "", ""}));
  EXPECT_EQ(shell_split("$HOME ~/x a|b"), (W{"$HOME", "~/x", "a|b"}));  // no shell: nothing expands
  EXPECT_FALSE(shell_split("'unclosed"));
  EXPECT_FALSE(shell_split("\"unclosed"));
  EXPECT_FALSE(shell_split("\"ends in \\"));
  EXPECT_FALSE(shell_split("trailing\\"));
}

TEST(SharedConfigFiles, PathsFromTheEnvironmentElseTheHomeDirectory) {
  auto p = shared_config_paths(env_of({{"HOME", "/home/op"}}));
  EXPECT_EQ(p.config, "/home/op/.aws/config");
  EXPECT_EQ(p.credentials, "/home/op/.aws/credentials");
  p = shared_config_paths(env_of({{"HOME", "/home/op"}, {"AWS_CONFIG_FILE", "~/c"}, {"AWS_SHARED_CREDENTIALS_FILE", "/k"}}));
  EXPECT_EQ(p.config, "/home/op/c");
  EXPECT_EQ(p.credentials, "/k");
}

TEST(SharedConfigFiles, LoadsWhatExistsAndRefusesWhatDoesNotParse) {
  char dir[] = "/tmp/runpool-shared-config-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string config = std::string(dir) + "/config", creds = std::string(dir) + "/credentials";
  SharedConfig none = load_shared_config({config, creds});
  EXPECT_FALSE(none.config_found);
  EXPECT_FALSE(none.credentials_found);
  EXPECT_TRUE(none.profiles.empty());

  std::ofstream(config) << "[profile dev]\nregion = eu-west-1\n";
  std::ofstream(creds) << "[dev]\naws_access_key_id = AKIDEXAMPLE\n";
  SharedConfig both = load_shared_config({config, creds});
  EXPECT_TRUE(both.config_found);
  EXPECT_TRUE(both.credentials_found);
  EXPECT_EQ(both.profiles, (Profiles{{"dev", {{"region", "eu-west-1"}, {"aws_access_key_id", "AKIDEXAMPLE"}}}}));

  std::ofstream(creds) << "aws_access_key_id = AKIDEXAMPLE\n";
  try {
    load_shared_config({config, creds});
    ADD_FAILURE() << "a file that does not parse is refused";
  } catch (const SharedConfigError& e) {
    EXPECT_EQ(std::string(e.what()), creds + " line 1: a line before the first [section]");
  }
  EXPECT_THROW(load_shared_config({dir, creds}), SharedConfigError);  // a directory
  std::system(("rm -rf " + std::string(dir)).c_str());
}

TEST(SharedConfigFiles, ProfileFromAwsProfileElseDefault) {
  bool chosen = true;
  EXPECT_EQ(selected_profile(env_of({}), &chosen), "default");
  EXPECT_FALSE(chosen);
  EXPECT_EQ(selected_profile(env_of({{"AWS_PROFILE", "dev"}}), &chosen), "dev");
  EXPECT_TRUE(chosen);
  EXPECT_EQ(selected_profile(env_of({{"AWS_PROFILE", ""}}), &chosen), "default");
  EXPECT_FALSE(chosen);
}

}  // namespace
}  // namespace runpool::aws
