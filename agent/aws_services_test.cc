// IMDS notices read through a fake IMDS (HttpClient) answering as the real one does.
#include "agent/aws_services.h"

#include <gtest/gtest.h>

#include <map>

namespace runpool::agent {
namespace {

class FakeImds final : public HttpClient {
 public:
  HttpResponse send(const HttpRequest& r) override {
    HttpResponse resp;
    if (r.method == "PUT") {
      resp.status = 200;
      resp.body = "token";
      return resp;
    }
    const std::string path = r.url.substr(r.url.find("/latest/"));
    auto it = answers.find(path);
    resp.status = it == answers.end() ? 404 : 200;
    if (it != answers.end()) resp.body = it->second;
    return resp;
  }
  std::map<std::string, std::string> answers;
};

TEST(ImdsNotices, NoneUntilIMDSHasOneThenSpotBeforeRebalance) {
  FakeImds http;
  FakeClock clock;
  aws::ImdsOptions o;
  o.endpoint = "http://imds.test";
  aws::ImdsClient imds(http, clock, o);
  ImdsNotices notices(imds);
  EXPECT_FALSE(notices.poll());
  http.answers["/latest/meta-data/events/recommendations/rebalance"] = R"({"noticeTime":"2026-11-21T03:00:00Z"})";
  auto n = notices.poll();
  ASSERT_TRUE(n);
  EXPECT_EQ(n->kind, Notice::kRebalance);
  EXPECT_NE(n->detail.find("2026-11-21T03:00:00Z"), std::string::npos);
  http.answers["/latest/meta-data/spot/instance-action"] = R"({"action":"terminate","time":"2026-11-21T03:02:00Z"})";
  n = notices.poll();
  ASSERT_TRUE(n);
  EXPECT_EQ(n->kind, Notice::kSpotInterruption);
  EXPECT_EQ(n->detail, "spot instance-action terminate at 2026-11-21T03:02:00Z");
}

TEST(ImdsNotices, AMalformedNoticeIsAnErrorNotACrash) {
  FakeImds http;
  FakeClock clock;
  aws::ImdsOptions o;
  o.endpoint = "http://imds.test";
  aws::ImdsClient imds(http, clock, o);
  ImdsNotices notices(imds);
  http.answers["/latest/meta-data/spot/instance-action"] = "{not json";
  EXPECT_THROW(notices.poll(), std::exception);
}

}  // namespace
}  // namespace runpool::agent
