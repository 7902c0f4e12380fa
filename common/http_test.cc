#include "common/http.h"

#include <gtest/gtest.h>

namespace runpool {
namespace {

// Nothing listens on port 1: a request that got as far as connecting would fail with
// HttpTransportError, so std::invalid_argument shows it was refused before anything was sent.
HttpRequest to_nowhere() {
  HttpRequest r;
  r.url = "http://127.0.0.1:1/";
  r.connect_timeout = std::chrono::milliseconds(500);
  r.timeout = std::chrono::seconds(1);
  return r;
}

TEST(CurlHttpClient, RefusesAHeaderValueWithALineBreakBeforeSending) {
  CurlHttpClient http;
  for (const std::string& value : {std::string("a\r\nX-Injected: 1"), std::string("a\nb"), std::string("a\rb"),
                                   std::string("a\0b", 3)}) {
    HttpRequest r = to_nowhere();
    r.headers = {{"X-Ok", "fine"}, {"X-Value", value}};
    EXPECT_THROW(http.send(r), std::invalid_argument) << ::testing::PrintToString(value);
  }
}

TEST(CurlHttpClient, RefusesASecretHeaderWithALineBreakWithoutQuotingIt) {
  CurlHttpClient http;
  HttpRequest r = to_nowhere();
  r.secret_headers = {{"Authorization", Secret("token ghp_secret\r\nX-Injected: 1")}};
  try {
    http.send(r);
    FAIL() << "sent";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("Authorization"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("ghp_secret"), std::string::npos) << e.what();
  }
  r.secret_headers.clear();
  r.sigv4 = SigV4Signing{"us-east-1", "sqs", "AKID", Secret("s"), Secret("session\ntoken")};
  EXPECT_THROW(http.send(r), std::invalid_argument);
}

TEST(CurlHttpClient, PlainHeadersStillGoOut) {
  CurlHttpClient http;
  HttpRequest r = to_nowhere();
  r.headers = {{"X-Tab", "a\tb"}, {"X-Unicode", "\xc3\xa9"}};
  EXPECT_THROW(http.send(r), HttpTransportError);  // got as far as connecting
}

}  // namespace
}  // namespace runpool
