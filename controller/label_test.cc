#include "controller/label.h"

#include <gtest/gtest.h>

#include <map>

namespace runpool::controller {
namespace {

std::function<const char*(const char*)> env_of(const std::map<std::string, std::string>& env) {
  return [env](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
}

std::string fixed_hex() { return "0123456789abcdef"; }

TEST(Label, Valid) {
  for (const char* ok : {"ci-123-1-build", "a", "Pool_1.x", "self-hosted-2", "x64-runner"}) {
    EXPECT_EQ(label_problem(ok), "") << ok;
  }
  EXPECT_EQ(label_problem(std::string(100, 'a')), "");
}

TEST(Label, Invalid) {
  for (const char* bad : {"", "a,b", "a b", "a\tb", "a\nb", "-rm", ".hidden", "a;b", "$(id)", "a'b", "a\"b",
                          "a/b", "a:b", "é", "self-hosted", "Linux", "X64", "arm64"}) {
    EXPECT_NE(label_problem(bad), "") << bad;
  }
  EXPECT_NE(label_problem(std::string(101, 'a')), "");
  EXPECT_NE(label_problem(std::string("a\0b", 3)), "");
}

TEST(Label, DerivedFromTheRunAttemptAndJob) {
  auto env = env_of({{"GITHUB_RUN_ID", "987654"}, {"GITHUB_RUN_ATTEMPT", "2"}, {"GITHUB_JOB", "provision"}});
  EXPECT_EQ(derive_label("ci", env, fixed_hex), "ci-987654-2-provision");
  EXPECT_EQ(derive_label("ci", env_of({{"GITHUB_RUN_ID", "5"}}), fixed_hex), "ci-5-1");
  // A re-run (new attempt) and another job get other labels.
  EXPECT_NE(derive_label("ci", env_of({{"GITHUB_RUN_ID", "987654"}, {"GITHUB_RUN_ATTEMPT", "3"}, {"GITHUB_JOB", "provision"}}),
                         fixed_hex),
            derive_label("ci", env, fixed_hex));
}

TEST(Label, TheCheckRunIdTellsApartJobsThatShareTheirName) {
  // Two calls of one reusable workflow, or two legs of a matrix: same run, attempt and GITHUB_JOB.
  auto env = env_of({{"GITHUB_RUN_ID", "987654"}, {"GITHUB_RUN_ATTEMPT", "1"}, {"GITHUB_JOB", "provision"}});
  EXPECT_EQ(derive_label("ci", env, fixed_hex, "51725241954"), "ci-987654-1-provision-51725241954");
  EXPECT_NE(derive_label("ci", env, fixed_hex, "51725241954"), derive_label("ci", env, fixed_hex, "51725241955"));
  // The same job execution (a retried step) gets the same label again.
  EXPECT_EQ(derive_label("ci", env, fixed_hex, "7"), derive_label("ci", env, fixed_hex, "7"));
  // Outside GitHub Actions it changes nothing.
  EXPECT_EQ(derive_label("ci", env_of({}), fixed_hex, "7"), "ci-0123456789abcdef");
  EXPECT_EQ(check_run_id_problem("51725241954"), "");
  for (const char* bad : {"", "12a", "-1", "1 2", "123456789012345678901", "$(id)"}) EXPECT_NE(check_run_id_problem(bad), "") << bad;
}

TEST(Label, DerivedOutsideActionsIsRandom) {
  EXPECT_EQ(derive_label("ci", env_of({}), fixed_hex), "ci-0123456789abcdef");
  EXPECT_NE(random_hex16(), random_hex16());
  EXPECT_EQ(random_hex16().size(), 16u);
}

TEST(Label, DerivedLabelsAreAlwaysValid) {
  auto env = env_of({{"GITHUB_RUN_ID", "1"}, {"GITHUB_RUN_ATTEMPT", "1"}, {"GITHUB_JOB", "my job,$(x) 'q'"}});
  std::string l = derive_label("ci", env, fixed_hex);
  EXPECT_EQ(label_problem(l), "") << l;
  EXPECT_EQ(l, "ci-1-1-my-job---x---q-");
  std::string long_job(200, 'j');
  auto env2 = env_of({{"GITHUB_RUN_ID", "1"}, {"GITHUB_JOB", long_job}});
  std::string l2 = derive_label("ci", env2, fixed_hex);
  EXPECT_EQ(l2.size(), 100u);
  EXPECT_EQ(label_problem(l2), "");
  auto env3 = env_of({{"GITHUB_RUN_ID", "1"}, {"GITHUB_JOB", long_job + "x"}});
  EXPECT_NE(derive_label("ci", env3, fixed_hex), l2);  // the hash tells truncated labels apart
}

}  // namespace
}  // namespace runpool::controller
