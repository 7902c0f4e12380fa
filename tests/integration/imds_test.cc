// The IMDSv2 client against a launched instance's own IMDS in the local cloud: identity, user
// data, tags, role credentials that the SigV4 proxy accepts, short token TTLs, spot notices.
#include "common/aws/imds.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>

#include "common/aws/credentials.h"
#include "common/aws/ec2.h"
#include "tests/support/local_cloud.h"

namespace runpool::aws {
namespace {

using testing::LocalCloud;

// Passes everything through but hides the TTL IMDS granted, so a client believes the TTL it
// asked for and meets the expiry as a 401.
class HideGrantedTtl final : public HttpClient {
 public:
  explicit HideGrantedTtl(HttpClient& inner) : inner_(inner) {}
  HttpResponse send(const HttpRequest& request) override {
    HttpResponse r = inner_.send(request);
    r.headers.erase("x-aws-ec2-metadata-token-ttl-seconds");
    if (request.method == "GET" && r.status == 401) ++unauthorized;
    return r;
  }
  int unauthorized = 0;

 private:
  HttpClient& inner_;
};

// An ISO 8601 time as whole seconds since the epoch; -1 when it does not parse.
int64_t seconds_of(const std::string& iso) {
  WallTime t;
  if (!parse_iso8601(iso, &t)) return -1;
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

class ImdsIntegration : public ::testing::Test {
 protected:
  ImdsIntegration()
      : cloud_(LocalCloud::shared()),
        creds_(cloud_.controller_credentials()),
        ec2_caller_(http_, creds_, system_clock(),
                    ServiceSettings{"ec2", cloud_.ec2(), cloud_.region(), RetryPolicy{}, std::chrono::seconds(10)}),
        ec2_(ec2_caller_) {
    static int runs = 0;
    run_tag_ = "imds" + std::to_string(getpid()) + "-" + std::to_string(++runs);
  }

  void TearDown() override {
    cloud_.clear_faults();
    Json::Value settings;
    settings["imdsTokenMaxTtlSeconds"] = 21600;
    cloud_.control("POST", "/_control/ec2/settings", settings);
    if (!launched_.empty()) {
      try {
        ec2_.terminate_instances(launched_);
      } catch (const AwsError&) {
        // Already gone.
      }
    }
  }

  // Launches one instance, waits until it runs, and returns its id; `imds_url_` is its IMDS.
  std::string launch(bool spot) {
    RunInstancesRequest r;
    r.image_id = "ami-0123456789abcdef0";
    r.instance_type = "t3.micro";
    r.user_data = user_data();
    r.iam_instance_profile_name = "runpool-agent";
    r.tag_specifications = {{"instance", {{"runpool:pool", "imds-test"}, {"runpool:run", run_tag_}}}};
    r.spot = spot;
    r.instance_metadata_tags = true;
    r.instance_initiated_shutdown_behavior = "terminate";
    RunInstancesResult result = ec2_.run_instances(r);
    if (result.instances.size() != 1) throw std::runtime_error("expected one instance");
    const std::string id = result.instances[0].instance_id;
    launched_.push_back(id);
    Json::Value summary;
    for (int i = 0; i < 200; ++i) {  // ≤ 10 s
      summary = cloud_.control("GET", "/_control/ec2/instances/" + id);
      if (summary["state"].asString() == "running") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (summary["state"].asString() != "running") throw std::runtime_error(id + " did not reach running");
    imds_url_ = summary["imdsUrl"].asString();
    return id;
  }

  std::string user_data() const { return "#cloud-config\n# served, not run: " + run_tag_ + "\n"; }

  ImdsOptions options() const {
    ImdsOptions o;
    o.endpoint = imds_url_;
    o.retry = RetryPolicy{10, std::chrono::milliseconds(5), std::chrono::milliseconds(50)};
    return o;
  }

  LocalCloud& cloud_;
  CurlHttpClient http_;
  StaticCredentialsProvider creds_;
  AwsCaller ec2_caller_;
  Ec2Client ec2_;
  std::string run_tag_;
  std::string imds_url_;
  std::vector<std::string> launched_;
};

TEST_F(ImdsIntegration, IdentityUserDataAndTags) {
  const std::string id = launch(false);
  ASSERT_EQ(imds_url_.rfind("http://127.0.0.1:", 0), 0u) << imds_url_;
  CurlHttpClient http;
  ImdsClient imds(http, system_clock(), options());
  EXPECT_EQ(imds.instance_id(), id);
  EXPECT_EQ(imds.region(), cloud_.region());
  EXPECT_EQ(imds.instance_type(), "t3.micro");
  EXPECT_EQ(imds.user_data(), user_data());
  EXPECT_EQ(imds.tag("runpool:pool"), "imds-test");
  EXPECT_EQ(imds.tag("runpool:run"), run_tag_);
  EXPECT_FALSE(imds.tag("runpool:absent"));
  EXPECT_EQ(imds.get("meta-data/instance-life-cycle"), "on-demand");
  EXPECT_FALSE(imds.spot_instance_action());
  EXPECT_FALSE(imds.rebalance_notice_time());

  // Tags read live: a change through the API shows in IMDS.
  ec2_.create_tags({id}, {{"runpool:pool", "moved"}});
  EXPECT_EQ(imds.tag("runpool:pool"), "moved");
  EXPECT_EQ(imds.token_fetches(), 1);  // one session token for all of the above
}

TEST_F(ImdsIntegration, RoleCredentialsSignCallsTheProxyAccepts) {
  const std::string id = launch(false);
  CurlHttpClient imds_http;
  ImdsClient imds(imds_http, system_clock(), options());
  ImdsCredentialsProvider role(imds, system_clock());
  AwsCredentials c = role.get();
  EXPECT_FALSE(c.session_token.empty());
  ASSERT_TRUE(c.expiration);
  EXPECT_GT(*c.expiration, system_clock().now());

  CurlHttpClient http;
  AwsCaller ddb(http, role, system_clock(),
                ServiceSettings{"dynamodb", cloud_.dynamodb(), cloud_.region(), RetryPolicy{}, std::chrono::seconds(10)});
  Json::Value tables = json_call(ddb, "DynamoDB_20120810", "ListTables", Json::Value(Json::objectValue));
  EXPECT_TRUE(tables["TableNames"].isArray());
  EXPECT_EQ(role.fetches(), 1);

  // The proxy knows these as this instance's credentials: it may describe, not launch.
  AwsCaller ec2_as_instance(http, role, system_clock(),
                            ServiceSettings{"ec2", cloud_.ec2(), cloud_.region(), RetryPolicy{}, std::chrono::seconds(10)});
  Ec2Client instance_ec2(ec2_as_instance);
  DescribeInstancesRequest d;
  d.instance_ids = {id};
  EXPECT_EQ(instance_ec2.describe_instances(d).at(0).instance_id, id);
  RunInstancesRequest r;
  r.image_id = "ami-0123456789abcdef0";
  try {
    instance_ec2.run_instances(r);
    ADD_FAILURE() << "an instance's role must not launch instances";
  } catch (const AwsError& e) {
    EXPECT_EQ(e.code(), "UnauthorizedOperation") << e.what();
  }

  // And the check is real: the same key with a wrong secret is refused.
  AwsCredentials forged = c;
  forged.secret_access_key = Secret(c.secret_access_key.reveal() + "x");
  StaticCredentialsProvider forged_provider(forged);
  AwsCaller forged_ddb(http, forged_provider, system_clock(),
                       ServiceSettings{"dynamodb", cloud_.dynamodb(), cloud_.region(), RetryPolicy{},
                                       std::chrono::seconds(10)});
  try {
    json_call(forged_ddb, "DynamoDB_20120810", "ListTables", Json::Value(Json::objectValue));
    ADD_FAILURE() << "a forged signature must be refused";
  } catch (const AwsError& e) {
    EXPECT_EQ(e.code(), "InvalidSignatureException") << e.what();
  }
}

TEST_F(ImdsIntegration, ShortTokenTtlIsRefreshedTransparently) {
  launch(false);
  Json::Value settings;
  settings["imdsTokenMaxTtlSeconds"] = 1;
  cloud_.control("POST", "/_control/ec2/settings", settings);

  // The client honours the TTL IMDS granted (1 s, not the 6 h it asked for) and refreshes early.
  CurlHttpClient http;
  ImdsClient imds(http, system_clock(), options());
  const std::string id = imds.instance_id();
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_EQ(imds.instance_id(), id);
  EXPECT_EQ(imds.token_fetches(), 2);

  // Without the granted TTL the expired token meets a 401, and the client recovers by itself.
  CurlHttpClient raw;
  HideGrantedTtl hiding(raw);
  ImdsClient blind(hiding, system_clock(), options());
  EXPECT_EQ(blind.instance_id(), id);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_EQ(blind.region(), cloud_.region());
  EXPECT_EQ(hiding.unauthorized, 1);
  EXPECT_EQ(blind.token_fetches(), 2);
}

TEST_F(ImdsIntegration, ImdsFaultsAreRetried) {
  launch(false);
  CurlHttpClient http;
  ImdsClient imds(http, system_clock(), options());
  cloud_.control("POST", "/_control/stats/reset");
  Json::Value faults;
  faults["service"] = "imds";
  faults["errorRate"] = 0.3;
  faults["spread"] = 1;  // faults fall evenly: 11 requests surely meet some (independent draws miss all 2% of the time)
  cloud_.control("POST", "/_control/faults", faults);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(imds.instance_type(), "t3.micro");
  cloud_.clear_faults();
  Json::Value stats = cloud_.control("GET", "/_control/stats")["imds"];
  long errors = 0;
  for (const std::string& op : stats.getMemberNames()) errors += stats[op]["errors"].asInt64();
  EXPECT_GT(errors, 0);
}

TEST_F(ImdsIntegration, SpotInterruptionAndRebalanceNotices) {
  const std::string id = launch(true);
  CurlHttpClient http;
  ImdsClient imds(http, system_clock(), options());
  EXPECT_EQ(imds.get("meta-data/instance-life-cycle"), "spot");
  EXPECT_FALSE(imds.spot_instance_action());
  EXPECT_FALSE(imds.rebalance_notice_time());

  Json::Value rebalance = cloud_.control("POST", "/_control/ec2/instances/" + id + "/rebalance");
  auto notice_time = imds.rebalance_notice_time();
  ASSERT_TRUE(notice_time);
  EXPECT_EQ(seconds_of(*notice_time), seconds_of(rebalance["noticeTime"].asString()));  // IMDS: whole seconds
  EXPECT_FALSE(imds.spot_instance_action());

  Json::Value body;
  body["action"] = "terminate";
  body["inSeconds"] = 60;
  Json::Value notice = cloud_.control("POST", "/_control/ec2/instances/" + id + "/spot-interruption", body);
  auto action = imds.spot_instance_action();
  ASSERT_TRUE(action);
  EXPECT_EQ(action->action, "terminate");
  EXPECT_EQ(seconds_of(action->time), seconds_of(notice["time"].asString()));
  EXPECT_GT(seconds_of(action->time), seconds_of(format_iso8601(system_clock().now())) + 30);
}

}  // namespace
}  // namespace runpool::aws
