#include "common/testing/fake_http.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "common/testing/expect_malformed.h"

namespace runpool::testing {
namespace {

HttpRequest get(const std::string& url) {
  HttpRequest r;
  r.url = url;
  r.headers = {{"X-Plain", "p"}};
  r.secret_headers = {{"Authorization", Secret("Bearer t")}};
  r.body = R"({"n":1})";
  return r;
}

TEST(FakeHttp, QueueFirstThenFallbackAndEveryRequestRecorded) {
  FakeHttp http;
  EXPECT_THROW(http.send(get("http://a/0")), std::logic_error);  // nothing scripted
  http.push(201, "one", {{"etag", "x"}});
  http.push_transport_error();
  http.push([](const HttpRequest& r) { return reply(202, r.url); });
  http.on([](const HttpRequest&) { return reply(404); });
  EXPECT_EQ(http.pending(), 3u);
  HttpResponse first = http.send(get("http://a/1"));
  EXPECT_EQ(first.status, 201);
  EXPECT_EQ(first.header("ETag"), "x");
  EXPECT_THROW(http.send(get("http://a/2")), HttpTransportError);
  EXPECT_EQ(http.send(get("http://a/3")).body, "http://a/3");
  EXPECT_EQ(http.send(get("http://a/4")).status, 404);
  EXPECT_EQ(http.send(get("http://a/5")).status, 404);
  EXPECT_EQ(http.pending(), 0u);
  EXPECT_EQ(http.count(), 6u);
  EXPECT_EQ(http.request(1).url, "http://a/1");
  EXPECT_EQ(http.last().url, "http://a/5");
  EXPECT_EQ(http.header(1, "X-Plain"), "p");
  EXPECT_EQ(http.header(1, "X-Absent"), "");
  EXPECT_EQ(authorization_of(http.request(1)), "Bearer t");
  EXPECT_EQ(http.body_json(1)["n"].asInt(), 1);
  EXPECT_THROW(http.request(6), std::out_of_range);

  http.push(200);
  http.clear();
  EXPECT_EQ(http.count(), 0u);
  EXPECT_EQ(http.pending(), 0u);
  EXPECT_THROW(http.last(), std::out_of_range);
  EXPECT_EQ(http.send(get("http://a/6")).status, 404);  // the fallback survives clear()
  EXPECT_THROW(http.push(reply(0)), std::invalid_argument);
}

TEST(FakeHttp, ConcurrentSendersEachTakeOneAnswer) {
  FakeHttp http;
  constexpr int kThreads = 4, kEach = 50;
  for (int i = 0; i < kThreads * kEach; ++i) http.push(200 + i % 2);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) ok += http.send(get("http://a/")).status == 200;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, kThreads * kEach / 2);
  EXPECT_EQ(http.count(), static_cast<size_t>(kThreads * kEach));
  EXPECT_EQ(http.pending(), 0u);
}

TEST(ExpectMalformed, FailsUnlessAMalformedResponseFromTheServiceIsThrown) {
  auto malformed = [] { throw aws::AwsError("sqs", "Op", 200, "MalformedResponse", "field 'x' missing"); };
  expect_malformed(malformed, "sqs", "'x'");
  EXPECT_NONFATAL_FAILURE(expect_malformed([] {}, "sqs", "x"), "accepted");
  EXPECT_NONFATAL_FAILURE(expect_malformed(malformed, "ec2", "x"), "ec2");
  EXPECT_NONFATAL_FAILURE(expect_malformed(malformed, "sqs", "'y'"), "does not mention 'y'");
  EXPECT_NONFATAL_FAILURE(
      expect_malformed([] { throw aws::AwsError("sqs", "Op", 400, "Throttling", "x"); }, "sqs", "x"),
      "MalformedResponse");
}

}  // namespace
}  // namespace runpool::testing
