#include "common/ca_bundle.h"

#include <gtest/gtest.h>

#include <set>

namespace runpool {
namespace {

std::function<bool(const std::string&)> files(std::set<std::string> present) {
  return [present](const std::string& p) { return present.count(p) > 0; };
}

const std::string kDebian = "/etc/ssl/certs/ca-certificates.crt";
const std::string kAmazon = "/etc/pki/tls/certs/ca-bundle.crt";

TEST(CaBundle, LibcurlsOwnBundleWhenItIsThere) {
  EXPECT_EQ(ca_bundle_path("", kDebian, files({kDebian, kAmazon})), kDebian);
  EXPECT_EQ(ca_bundle_path("", "/custom/ca.pem", files({"/custom/ca.pem", kDebian})), "/custom/ca.pem");
}

TEST(CaBundle, AmazonLinuxsBundleWhenDebiansIsMissing) {
  // Debian's libcurl (the release tarball's) on Amazon Linux 2023.
  EXPECT_EQ(ca_bundle_path("", kDebian, files({kAmazon})), kAmazon);
  EXPECT_EQ(ca_bundle_path("", kDebian, files({"/etc/ssl/ca-bundle.pem"})), "/etc/ssl/ca-bundle.pem");
  EXPECT_EQ(ca_bundle_path("", "", files({"/etc/ssl/cert.pem"})), "/etc/ssl/cert.pem");
}

TEST(CaBundle, SslCertFileWinsEvenWhenUnreadable) {
  EXPECT_EQ(ca_bundle_path("/mine.pem", kDebian, files({kDebian})), "/mine.pem");
}

TEST(CaBundle, NothingFoundLeavesLibcurlsDefault) {
  EXPECT_EQ(ca_bundle_path("", kDebian, files({})), "");
}

TEST(CaBundle, ThisMachineHasOne) {
  // Debian 12 with ca-certificates (curl's own dependency).
  EXPECT_FALSE(system_ca_bundle().empty());
}

}  // namespace
}  // namespace runpool
