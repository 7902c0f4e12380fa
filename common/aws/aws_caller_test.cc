#include "common/aws/aws_caller.h"

#include <gtest/gtest.h>

#include <deque>

#include "common/aws_clock.h"

namespace runpool::aws {
namespace {

// Answers in order, moving the fake clock by `latency` per request.
class TimedHttp final : public HttpClient {
 public:
  explicit TimedHttp(FakeClock& clock) : clock_(clock) {}
  HttpResponse send(const HttpRequest&) override {
    clock_.advance(latency);
    HttpResponse r = answers.front();
    answers.pop_front();
    return r;
  }
  std::deque<HttpResponse> answers;
  Duration latency{200};

 private:
  FakeClock& clock_;
};

TEST(AwsCallerObserver, SeesEveryAnswerWithItsTimesAndFeedsTheAwsClock) {
  FakeClock clock(from_epoch_ms(1'700'000'000'000));
  TimedHttp http(clock);
  StaticCredentialsProvider creds(AwsCredentials{"AKID", Secret("s"), Secret(), std::nullopt});
  RetryPolicy retry;
  retry.base = Duration{1};
  AwsCaller caller(http, creds, clock, ServiceSettings{"dynamodb", "http://127.0.0.1:9", "us-east-1", retry});
  AwsClock aws_clock(clock);
  std::vector<long> seen;
  caller.set_response_observer([&](const HttpResponse& r, WallTime sent, WallTime received) {
    seen.push_back(r.status);
    EXPECT_EQ(received - sent, Duration{200});
    aws_clock.observe(r.header("date"), sent, received);
  });
  // AWS is 65 s ahead: 1'700'000'065 s is Tue, 14 Nov 2023 22:14:25 GMT.
  const std::string date = "Tue, 14 Nov 2023 22:14:25 GMT";
  http.answers.push_back(HttpResponse{500, {{"date", date}}, R"({"__type":"InternalServerError"})"});
  http.answers.push_back(HttpResponse{200, {{"date", date}}, "{}"});
  caller.call("GetItem", HttpRequest{}, parse_json_error);
  EXPECT_EQ(seen, (std::vector<long>{500, 200}));
  EXPECT_EQ(aws_clock.samples(), 2u);
  // Within the header's one-second resolution of the true 65 s.
  EXPECT_NEAR(static_cast<double>(aws_clock.offset().count()), 65'000.0, 1000.0);
}

// A 503 with Retry-After (the local cloud's fault, and what an overloaded endpoint may send) is
// retried after the time it names, not after a backoff that could be a few milliseconds.
TEST(AwsCallerRetry, WaitsTheRetryAfterOfA503) {
  FakeClock clock(from_epoch_ms(1'700'000'000'000));
  TimedHttp http(clock);
  http.latency = Duration{0};
  StaticCredentialsProvider creds(AwsCredentials{"AKID", Secret("s"), Secret(), std::nullopt});
  AwsCaller caller(http, creds, clock, ServiceSettings{"dynamodb", "http://127.0.0.1:9", "us-east-1", RetryPolicy{}});
  http.answers.push_back(HttpResponse{503, {{"retry-after", "3"}}, R"({"__type":"ServiceUnavailable"})"});
  http.answers.push_back(HttpResponse{200, {}, "{}"});
  const WallTime before = clock.now();
  caller.call("GetItem", HttpRequest{}, parse_json_error);
  EXPECT_EQ(clock.now() - before, Duration{std::chrono::seconds(3)});
  EXPECT_EQ(caller.requests_sent(), 2);
}

}  // namespace
}  // namespace runpool::aws
