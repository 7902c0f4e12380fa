// The test harness's own failure path: a local cloud that cannot start says why (its stderr), and
// the harness cleans up after it once — under AddressSanitizer a second destruction of its members
// would abort the test binary instead.
#include "tests/support/local_cloud.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace runpool::testing {
namespace {

TEST(LocalCloudHarness, ACloudThatCannotStartThrowsItsStderrAndCleansUpOnce) {
  std::string what;
  try {
    LocalCloud cloud("/nonexistent/localcloud.js");
    FAIL() << "a local cloud started from a script that does not exist";
  } catch (const std::runtime_error& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("the local cloud did not start"), std::string::npos) << what;
  EXPECT_NE(what.find("/nonexistent/localcloud.js"), std::string::npos) << "node's own error is shown: " << what;
}

TEST(LocalCloudHarness, TheRealOneStartsAndAnswers) {
  LocalCloud cloud;
  EXPECT_FALSE(cloud.dynamodb().empty());
  EXPECT_EQ(cloud.instance_role_id().rfind("AROA", 0), 0u);
  EXPECT_EQ(cloud.account_id().size(), 12u);
  EXPECT_TRUE(cloud.control("GET", "/_control/faults", {}, true).isObject());
}

}  // namespace
}  // namespace runpool::testing
