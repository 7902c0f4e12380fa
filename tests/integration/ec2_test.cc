// The EC2 client against the local cloud's EC2 stand-in, through the SigV4-checking proxy:
// instances through their states, filters, pagination, fleets with injected capacity shortages,
// idempotency tokens, launch templates, tags, EC2's error codes, and throttling retried.
#include "common/aws/ec2.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <thread>

#include "tests/support/local_cloud.h"

namespace runpool::aws {
namespace {

using testing::LocalCloud;

constexpr const char* kImage = "ami-0123456789abcdef0";
constexpr const char* kSubnet = "subnet-0aaaaaaaaaaaaaaaa";

class Ec2Integration : public ::testing::Test {
 protected:
  Ec2Integration()
      : cloud_(LocalCloud::shared()),
        creds_(cloud_.controller_credentials()),
        // Many quick attempts, so an injected 30% throttle rate cannot exhaust them (0.3^10 per call).
        caller_(http_, creds_, system_clock(),
                ServiceSettings{"ec2", cloud_.ec2(), cloud_.region(),
                                RetryPolicy{10, std::chrono::milliseconds(5), std::chrono::milliseconds(50)},
                                std::chrono::seconds(10)}),
        ec2_(caller_) {
    // A tag value no other test (nor a repeat of this one) uses, so filters see only this run's
    // instances; the trailing '.' keeps "<tag>*" from matching a later run's tag.
    static int runs = 0;
    run_tag_ = "it" + std::to_string(getpid()) + "-" + std::to_string(++runs) + ".";
  }

  void TearDown() override {
    cloud_.clear_faults();
    cloud_.control("DELETE", "/_control/ec2/capacity");
    if (!launched_.empty()) {
      try {
        ec2_.terminate_instances(launched_);
      } catch (const AwsError&) {
        // Already gone; nothing left to clean.
      }
    }
  }

  RunInstancesRequest basic(int count = 1) {
    RunInstancesRequest r;
    r.image_id = kImage;
    r.instance_type = "t3.micro";
    r.min_count = count;
    r.max_count = count;
    r.subnet_id = kSubnet;
    r.tag_specifications = {{"instance", {{"runpool:test", run_tag_}}}};
    r.instance_initiated_shutdown_behavior = "terminate";
    return r;
  }

  std::vector<Instance> run(const RunInstancesRequest& r) {
    RunInstancesResult result = ec2_.run_instances(r);
    for (const Instance& i : result.instances) launched_.push_back(i.instance_id);
    return result.instances;
  }

  Ec2Filter mine() const { return {"tag:runpool:test", {run_tag_}}; }

  Instance describe_one(const std::string& id) {
    DescribeInstancesRequest d;
    d.instance_ids = {id};
    auto found = ec2_.describe_instances(d);
    if (found.size() != 1) throw std::runtime_error("expected exactly one instance " + id);
    return found[0];
  }

  // Polls until the instance reaches `state`, at most `timeout`.
  Instance wait_for(const std::string& id, const std::string& state,
                    std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    Instance i = describe_one(id);
    while (i.state.name != state && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      i = describe_one(id);
    }
    return i;
  }

  long stat(const std::string& op, const char* field = "requests") {
    return cloud_.control("GET", "/_control/stats")["ec2"][op][field].asInt64();
  }

  void expect_code(const std::function<void()>& call, const std::string& code) {
    try {
      call();
      ADD_FAILURE() << "expected " << code;
    } catch (const AwsError& e) {
      EXPECT_EQ(e.code(), code) << e.what();
    }
  }

  LocalCloud& cloud_;
  CurlHttpClient http_;
  StaticCredentialsProvider creds_;
  AwsCaller caller_;
  Ec2Client ec2_;
  std::string run_tag_;
  std::vector<std::string> launched_;
};

TEST_F(Ec2Integration, RunDescribeTerminateThroughTheStates) {
  RunInstancesRequest r = basic();
  r.user_data = "#cloud-config\n# not executed, only stored\n";
  WallTime before = system_clock().now() - std::chrono::seconds(2);
  std::vector<Instance> launched = run(r);
  ASSERT_EQ(launched.size(), 1u);
  const Instance& first = launched[0];
  EXPECT_EQ(first.state.name, "pending");
  EXPECT_EQ(first.state.code, 0);
  EXPECT_EQ(first.instance_id.rfind("i-", 0), 0u);

  Instance running = wait_for(first.instance_id, "running");
  ASSERT_EQ(running.state.name, "running");
  EXPECT_EQ(running.state.code, 16);
  EXPECT_EQ(running.instance_type, "t3.micro");
  EXPECT_EQ(running.image_id, kImage);
  EXPECT_EQ(running.subnet_id, kSubnet);
  EXPECT_EQ(running.lifecycle, "on-demand");
  EXPECT_FALSE(running.private_ip_address.empty());
  ASSERT_TRUE(running.launch_time);
  EXPECT_GE(*running.launch_time, before);
  EXPECT_LE(*running.launch_time, system_clock().now() + std::chrono::seconds(2));
  EXPECT_EQ(running.tag("runpool:test"), run_tag_);

  auto changes = ec2_.terminate_instances({first.instance_id});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].instance_id, first.instance_id);
  EXPECT_EQ(changes[0].previous_state.name, "running");
  EXPECT_EQ(changes[0].current_state.name, "shutting-down");
  EXPECT_EQ(changes[0].current_state.code, 32);
  Instance gone = wait_for(first.instance_id, "terminated");
  EXPECT_EQ(gone.state.name, "terminated");
  EXPECT_EQ(gone.state.code, 48);
}

TEST_F(Ec2Integration, FiltersByTagAndState) {
  std::vector<Instance> a = run(basic(3));
  RunInstancesRequest other = basic();
  other.tag_specifications = {{"instance", {{"runpool:test", run_tag_ + "other"}}}};
  run(other);
  for (const Instance& i : a) ASSERT_EQ(wait_for(i.instance_id, "running").state.name, "running");
  ec2_.terminate_instances({a[0].instance_id});

  DescribeInstancesRequest d;
  d.filters = {mine(), {"instance-state-name", {"running"}}};
  std::set<std::string> running;
  for (const Instance& i : ec2_.describe_instances(d)) running.insert(i.instance_id);
  EXPECT_EQ(running, (std::set<std::string>{a[1].instance_id, a[2].instance_id}));

  d.filters = {mine(), {"instance-state-name", {"shutting-down", "terminated"}}};
  auto stopping = ec2_.describe_instances(d);
  ASSERT_EQ(stopping.size(), 1u);
  EXPECT_EQ(stopping[0].instance_id, a[0].instance_id);

  d.filters = {{"tag:runpool:test", {run_tag_ + "*"}}};  // wildcards, as in EC2
  EXPECT_EQ(ec2_.describe_instances(d).size(), 4u);
}

TEST_F(Ec2Integration, PaginatesAcrossThreePagesOfFive) {
  run(basic(11));
  DescribeInstancesRequest d;
  d.filters = {mine()};
  d.max_results = 5;

  DescribeInstancesPage page = ec2_.describe_instances_page(d);
  EXPECT_EQ(page.instances.size(), 5u);
  ASSERT_FALSE(page.next_token.empty());

  long calls_before = cloud_.control("GET", "/_control/ec2/calls")["actions"]["DescribeInstances"].asInt64();
  std::set<std::string> seen;
  int visited = 0;
  ec2_.for_each_instance(d, [&](const Instance& i) {
    ++visited;
    seen.insert(i.instance_id);
    return true;
  });
  long calls = cloud_.control("GET", "/_control/ec2/calls")["actions"]["DescribeInstances"].asInt64() - calls_before;
  EXPECT_EQ(visited, 11);
  EXPECT_EQ(seen, std::set<std::string>(launched_.begin(), launched_.end()));
  EXPECT_EQ(calls, 3);

  // The bound holds against a real server too.
  expect_code([&] { ec2_.describe_instances(d, 2); }, "PaginationLimitExceeded");
}

TEST_F(Ec2Integration, CreateFleetKeepsWhatItGotWhenSpotCapacityIsShort) {
  CreateLaunchTemplateRequest t;
  t.name = "it-fleet-" + run_tag_;
  t.data.image_id = kImage;
  t.data.instance_type = "t3.micro";
  t.data.instance_initiated_shutdown_behavior = "terminate";
  ec2_.create_launch_template(t);

  Json::Value rule;
  rule["instanceType"] = "m5.large";
  rule["usageClass"] = "spot";
  rule["available"] = false;
  cloud_.control("POST", "/_control/ec2/capacity", rule);

  CreateFleetRequest f;
  f.launch_template_configs = {{LaunchTemplateRef{"", t.name, "$Latest"}, {{"m5.large", kSubnet, std::nullopt, ""}}}};
  f.total_target_capacity = 3;
  f.on_demand_target_capacity = 1;
  f.spot_target_capacity = 2;
  f.default_target_capacity_type = "spot";
  f.spot_allocation_strategy = "price-capacity-optimized";
  f.on_demand_allocation_strategy = "lowest-price";
  f.tag_specifications = {{"instance", {{"runpool:test", run_tag_}}}, {"fleet", {{"runpool:test", run_tag_}}}};
  f.client_token = "fleet-" + run_tag_;
  CreateFleetResult result = ec2_.create_fleet(f);
  for (const std::string& id : result.instance_ids()) launched_.push_back(id);

  EXPECT_EQ(result.fleet_id.rfind("fleet-", 0), 0u);
  ASSERT_EQ(result.instances.size(), 1u);
  EXPECT_EQ(result.instances[0].lifecycle, "on-demand");
  EXPECT_EQ(result.instances[0].instance_type, "m5.large");
  EXPECT_EQ(result.instances[0].subnet_id, kSubnet);
  ASSERT_EQ(result.instances[0].instance_ids.size(), 1u);
  ASSERT_FALSE(result.errors.empty());
  for (const FleetError& e : result.errors) {
    EXPECT_EQ(e.code, "InsufficientInstanceCapacity");
    EXPECT_EQ(e.lifecycle, "spot");
    EXPECT_EQ(e.instance_type, "m5.large");
    EXPECT_FALSE(e.message.empty());
  }
  Instance launched = describe_one(result.instances[0].instance_ids[0]);
  EXPECT_EQ(launched.tag("aws:ec2:fleet-id"), result.fleet_id);
  EXPECT_EQ(launched.tag("runpool:test"), run_tag_);
  EXPECT_EQ(launched.lifecycle, "on-demand");

  // Attribute-based selection moves spot to the next matching type.
  CreateFleetRequest g;
  g.launch_template_configs = {
      {LaunchTemplateRef{"", t.name, ""}, {{"", kSubnet, InstanceRequirements{2, 2, 8192, 8192, {"m5.*", "m6i.*"}}, ""}}}};
  g.total_target_capacity = 1;
  g.default_target_capacity_type = "spot";
  g.tag_specifications = {{"instance", {{"runpool:test", run_tag_}}}};
  CreateFleetResult spot = ec2_.create_fleet(g);
  for (const std::string& id : spot.instance_ids()) launched_.push_back(id);
  ASSERT_EQ(spot.instance_ids().size(), 1u);
  EXPECT_EQ(spot.instances[0].lifecycle, "spot");
  EXPECT_EQ(spot.instances[0].instance_type, "m6i.large");
  EXPECT_EQ(describe_one(spot.instance_ids()[0]).lifecycle, "spot");
}

TEST_F(Ec2Integration, ClientTokenMakesALaunchIdempotent) {
  RunInstancesRequest r = basic();
  r.client_token = "idem-" + run_tag_;
  std::vector<Instance> first = run(r);
  std::vector<Instance> again = run(r);  // a retried call after a lost answer
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(first[0].instance_id, again[0].instance_id);

  DescribeInstancesRequest d;
  d.filters = {mine()};
  EXPECT_EQ(ec2_.describe_instances(d).size(), 1u);
  Json::Value tokens = cloud_.control("GET", "/_control/ec2/calls")["clientTokens"]["RunInstances"];
  int seen = 0;
  for (const Json::Value& t : tokens) seen += t.asString() == r.client_token;
  EXPECT_EQ(seen, 2);  // both calls reached EC2 with the token; one launch

  r.instance_type = "t3.small";  // the same token with other parameters is refused
  expect_code([&] { run(r); }, "IdempotentParameterMismatch");
}

TEST_F(Ec2Integration, LaunchTemplatesEndToEnd) {
  const std::string name = "it-lt-" + run_tag_;
  EXPECT_FALSE(ec2_.describe_launch_template(LaunchTemplateRef{"", name, ""}));

  CreateLaunchTemplateRequest c;
  c.name = name;
  c.data.image_id = kImage;
  c.data.instance_type = "t3.micro";
  c.data.user_data = "#cloud-config\n# v1\n";
  c.data.iam_instance_profile_name = "runpool-agent";
  c.data.tag_specifications = {{"instance", {{"runpool:test", run_tag_}, {"from", "template"}}}};
  c.data.instance_initiated_shutdown_behavior = "terminate";
  c.version_description = "first";
  c.tags = {{"runpool:test", run_tag_}};
  c.client_token = "lt-" + run_tag_;
  LaunchTemplate created = ec2_.create_launch_template(c);
  EXPECT_EQ(created.id.rfind("lt-", 0), 0u);
  EXPECT_EQ(created.name, name);
  EXPECT_EQ(created.default_version, 1);
  EXPECT_EQ(created.latest_version, 1);
  expect_code([&] { c.client_token.clear(); ec2_.create_launch_template(c); },
              "InvalidLaunchTemplateName.AlreadyExistsException");

  CreateLaunchTemplateVersionRequest v;
  v.launch_template = LaunchTemplateRef{created.id, "", ""};
  v.source_version = "1";
  v.data.instance_type = "t3.small";
  v.data.user_data = "#cloud-config\n# v2\n";
  v.version_description = "second";
  LaunchTemplateVersion v2 = ec2_.create_launch_template_version(v);
  EXPECT_EQ(v2.version_number, 2);
  EXPECT_FALSE(v2.default_version);
  EXPECT_EQ(v2.data.image_id, kImage);  // inherited from version 1
  EXPECT_EQ(v2.data.instance_type, "t3.small");

  LaunchTemplate modified = ec2_.set_default_launch_template_version(LaunchTemplateRef{"", name, "2"});
  EXPECT_EQ(modified.default_version, 2);
  EXPECT_EQ(modified.latest_version, 2);

  auto found = ec2_.describe_launch_template(LaunchTemplateRef{"", name, ""});
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, created.id);
  EXPECT_EQ(found->default_version, 2);
  EXPECT_EQ(found->tags, (std::vector<Tag>{{"runpool:test", run_tag_}}));
  ASSERT_EQ(ec2_.describe_launch_templates({name}, {created.id}).size(), 1u);

  auto defaults = ec2_.describe_launch_template_versions(LaunchTemplateRef{"", name, ""}, {"$Default"});
  ASSERT_EQ(defaults.size(), 1u);
  EXPECT_EQ(defaults[0].version_number, 2);
  EXPECT_TRUE(defaults[0].default_version);
  EXPECT_EQ(defaults[0].data.user_data, "#cloud-config\n# v2\n");
  auto all = ec2_.describe_launch_template_versions(LaunchTemplateRef{created.id, "", ""}, {});
  ASSERT_EQ(all.size(), 2u);
  for (const LaunchTemplateVersion& version : all) {
    EXPECT_EQ(version.default_version, version.version_number == 2);
    EXPECT_TRUE(version.data.require_imdsv2);
    EXPECT_TRUE(version.data.instance_metadata_tags);
    EXPECT_EQ(version.data.iam_instance_profile_name, "runpool-agent");
    ASSERT_EQ(version.data.tag_specifications.size(), 1u);
    EXPECT_EQ(version.data.tag_specifications[0].resource_type, "instance");
  }
  auto latest = ec2_.describe_launch_template_versions(LaunchTemplateRef{created.id, "", ""}, {"1"});
  ASSERT_EQ(latest.size(), 1u);
  EXPECT_EQ(latest[0].data.user_data, "#cloud-config\n# v1\n");
  EXPECT_EQ(latest[0].version_description, "first");

  // A launch from the template takes the default version's values and its tags.
  RunInstancesRequest r;
  r.launch_template = LaunchTemplateRef{"", name, "$Default"};
  std::vector<Instance> launched = run(r);
  ASSERT_EQ(launched.size(), 1u);
  Instance i = describe_one(launched[0].instance_id);
  EXPECT_EQ(i.instance_type, "t3.small");
  EXPECT_EQ(i.image_id, kImage);
  EXPECT_EQ(i.tag("from"), "template");
  EXPECT_EQ(i.tag("aws:ec2launchtemplate:id"), created.id);
  EXPECT_EQ(i.tag("aws:ec2launchtemplate:version"), "2");

  // Missing templates: nullopt from the single lookup, EC2's not-found code elsewhere.
  EXPECT_FALSE(ec2_.describe_launch_template(LaunchTemplateRef{"lt-0123456789abcdef0", "", ""}));
  try {
    ec2_.describe_launch_template_versions(LaunchTemplateRef{"", name + "-missing", ""}, {});
    ADD_FAILURE() << "expected a not-found error";
  } catch (const AwsError& e) {
    EXPECT_TRUE(is_launch_template_not_found(e.code())) << e.what();
  }
}

TEST_F(Ec2Integration, CreateAndDeleteTags) {
  std::vector<Instance> launched = run(basic());
  const std::string id = launched.at(0).instance_id;
  ec2_.create_tags({id}, {{"runpool:state", "idle"}, {"empty", ""}, {"runpool:note", "a b&c=d+é"}});
  Instance i = describe_one(id);
  EXPECT_EQ(i.tag("runpool:state"), "idle");
  EXPECT_EQ(i.tag("empty"), "");
  EXPECT_EQ(i.tag("runpool:note"), "a b&c=d+é");

  ec2_.create_tags({id}, {{"runpool:state", "claimed"}});  // overwrite
  EXPECT_EQ(describe_one(id).tag("runpool:state"), "claimed");

  DescribeInstancesRequest d;
  d.filters = {mine(), {"tag-key", {"runpool:note"}}};
  EXPECT_EQ(ec2_.describe_instances(d).size(), 1u);

  ec2_.delete_tags({id}, {"runpool:note", "empty"});
  i = describe_one(id);
  EXPECT_FALSE(i.tag("runpool:note"));
  EXPECT_FALSE(i.tag("empty"));
  EXPECT_EQ(i.tag("runpool:state"), "claimed");
  EXPECT_TRUE(ec2_.describe_instances(d).empty());
}

TEST_F(Ec2Integration, ErrorCodesComeFromEc2) {
  expect_code([&] { ec2_.terminate_instances({"i-0123456789abcdef0"}); }, "InvalidInstanceID.NotFound");
  expect_code([&] { ec2_.terminate_instances({"not-an-instance"}); }, "InvalidInstanceID.Malformed");
  DescribeInstancesRequest d;
  d.instance_ids = {"i-0123456789abcdef0"};
  expect_code([&] { ec2_.describe_instances(d); }, "InvalidInstanceID.NotFound");
  RunInstancesRequest r = basic();
  r.image_id = "not-an-ami";
  expect_code([&] { run(r); }, "InvalidAMIID.Malformed");
  try {
    ec2_.terminate_instances({"i-0123456789abcdef0"});
  } catch (const AwsError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.service(), "ec2");
    EXPECT_EQ(e.operation(), "TerminateInstances");
    EXPECT_FALSE(e.message().empty());
    EXPECT_TRUE(is_instance_not_found(e.code()));
  }
}

TEST_F(Ec2Integration, ThrottlingIsRetriedToSuccess) {
  cloud_.control("POST", "/_control/stats/reset");
  Json::Value faults;
  faults["service"] = "ec2";
  faults["throttleRate"] = 0.3;
  cloud_.control("POST", "/_control/faults", faults);
  long sent_before = caller_.requests_sent();
  DescribeInstancesRequest d;
  d.filters = {mine()};
  for (int n = 0; n < 20; ++n) EXPECT_TRUE(ec2_.describe_instances(d).empty());
  cloud_.clear_faults();
  long throttles = stat("DescribeInstances", "throttles");
  EXPECT_GT(throttles, 0);
  EXPECT_EQ(stat("DescribeInstances"), 20 + throttles);
  EXPECT_EQ(caller_.requests_sent() - sent_before, 20 + throttles);
}

TEST_F(Ec2Integration, CapacityErrorsAreNotRetried) {
  Json::Value rule;
  rule["instanceType"] = "m6i.large";
  rule["usageClass"] = "on-demand";
  rule["available"] = false;
  cloud_.control("POST", "/_control/ec2/capacity", rule);
  cloud_.control("POST", "/_control/stats/reset");
  RunInstancesRequest r = basic();
  r.instance_type = "m6i.large";
  try {
    run(r);
    ADD_FAILURE() << "expected InsufficientInstanceCapacity";
  } catch (const AwsError& e) {
    EXPECT_EQ(e.code(), "InsufficientInstanceCapacity");
    EXPECT_GE(e.status(), 500);  // a server error in EC2's own classification, and still not retried
  }
  EXPECT_EQ(stat("RunInstances"), 1);
}

}  // namespace
}  // namespace runpool::aws
