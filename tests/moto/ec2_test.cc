// The controller's EC2 calls on both backends: launch templates (create, versions, the default
// version, describe), RunInstances with TagSpecifications and a ClientToken, DescribeInstances by
// filters page by page, CreateTags, TerminateInstances, EC2's error codes; and CreateFleet
// (instant) as the controller builds it, through Ec2Compute.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "controller/ec2_compute.h"
#include "controller/init.h"
#include "controller/launch_plan.h"
#include "tests/moto/backends.h"

namespace runpool::testing {
namespace {

using aws::AwsError;
using aws::DescribeInstancesRequest;
using aws::Instance;

constexpr const char* kImage = "ami-0123456789abcdef0";

class Ec2Test : public BackendTest {
 protected:
  Ec2Test() : tag_(unique_name("moto-ec2")) {}

  void TearDown() override {
    if (launched_.empty()) return;
    try {
      controller::Ec2Compute(aws_.ec2(), settings_).terminate(launched_);
    } catch (const AwsError&) {
      // Best effort: every instance carries this test's own tag.
    }
  }

  aws::RunInstancesRequest basic(int count) {
    aws::RunInstancesRequest r;
    r.image_id = kImage;
    r.instance_type = "t3.micro";
    r.min_count = r.max_count = count;
    r.subnet_id = backend_.subnet;
    r.tag_specifications = {{"instance", {{"runpool:test", tag_}}}};
    r.instance_initiated_shutdown_behavior = "terminate";
    return r;
  }

  std::vector<Instance> run(const aws::RunInstancesRequest& r) {
    aws::RunInstancesResult result = aws_.ec2().run_instances(r);
    for (const Instance& i : result.instances) launched_.push_back(i.instance_id);
    return result.instances;
  }

  Instance describe_one(const std::string& id) {
    DescribeInstancesRequest d;
    d.instance_ids = {id};
    auto found = aws_.ec2().describe_instances(d);
    if (found.size() != 1) throw std::runtime_error("expected exactly one instance " + id);
    return found[0];
  }

  // Polls until the instance is in one of `states`, at most 10 s.
  Instance wait_for(const std::string& id, const std::set<std::string>& states) {
    Instance i = describe_one(id);
    for (int n = 0; n < 200 && !states.count(i.state.name); ++n) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      i = describe_one(id);
    }
    return i;
  }

  void expect_code(const std::function<void()>& call, const std::string& code) {
    try {
      call();
      ADD_FAILURE() << "expected " << code;
    } catch (const AwsError& e) {
      EXPECT_EQ(e.code(), code) << e.what();
    }
  }

  aws::Ec2Filter mine() const { return {"tag:runpool:test", {tag_}}; }

  std::string tag_;
  std::vector<std::string> launched_;
  controller::Settings settings_;
};

TEST_P(Ec2Test, LaunchTemplatesVersionsAndTheDefault) {
  const std::string name = tag_ + "-lt";
  EXPECT_FALSE(aws_.ec2().describe_launch_template({"", name, ""}));

  aws::CreateLaunchTemplateRequest c;
  c.name = name;
  c.data.image_id = kImage;
  c.data.instance_type = "t3.micro";
  c.data.user_data = "#cloud-config\n# v1\n";
  c.data.iam_instance_profile_name = "runpool-agent";
  c.data.tag_specifications = {{"instance", {{"runpool:test", tag_}, {"from", "template"}}}};
  c.data.instance_initiated_shutdown_behavior = "terminate";
  c.version_description = "first";
  c.tags = {{"runpool:test", tag_}};
  aws::LaunchTemplate created = aws_.ec2().create_launch_template(c);
  EXPECT_EQ(created.id.rfind("lt-", 0), 0u) << created.id;
  EXPECT_EQ(created.name, name);
  EXPECT_EQ(created.default_version, 1);
  EXPECT_EQ(created.latest_version, 1);
  EXPECT_TRUE(created.create_time);
  expect_code([&] { aws_.ec2().create_launch_template(c); }, "InvalidLaunchTemplateName.AlreadyExistsException");

  aws::CreateLaunchTemplateVersionRequest v;
  v.launch_template = {created.id, "", ""};
  v.source_version = "1";
  v.data.instance_type = "t3.small";
  v.data.user_data = "#cloud-config\n# v2\n";
  v.version_description = "second";
  aws::LaunchTemplateVersion v2 = aws_.ec2().create_launch_template_version(v);
  EXPECT_EQ(v2.version_number, 2);
  EXPECT_FALSE(v2.default_version);
  EXPECT_EQ(v2.launch_template_id, created.id);
  EXPECT_EQ(v2.data.instance_type, "t3.small");

  aws::LaunchTemplate modified = aws_.ec2().set_default_launch_template_version({"", name, "2"});
  EXPECT_EQ(modified.id, created.id);
  EXPECT_EQ(modified.default_version, 2);
  EXPECT_EQ(modified.latest_version, 2);

  auto found = aws_.ec2().describe_launch_template({"", name, ""});
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, created.id);
  EXPECT_EQ(found->default_version, 2);
  EXPECT_EQ(found->latest_version, 2);
  EXPECT_EQ(found->tags, (std::vector<aws::Tag>{{"runpool:test", tag_}}));
  EXPECT_EQ(aws_.ec2().describe_launch_templates({name}, {}).size(), 1u);

  auto defaults = aws_.ec2().describe_launch_template_versions({"", name, ""}, {"$Default"});
  ASSERT_EQ(defaults.size(), 1u);
  EXPECT_EQ(defaults[0].version_number, 2);
  EXPECT_TRUE(defaults[0].default_version);
  EXPECT_EQ(defaults[0].version_description, "second");
  EXPECT_EQ(defaults[0].data.user_data, "#cloud-config\n# v2\n");
  auto first = aws_.ec2().describe_launch_template_versions({created.id, "", ""}, {"1"});
  ASSERT_EQ(first.size(), 1u);
  const aws::LaunchTemplateData& d = first[0].data;
  EXPECT_EQ(first[0].version_description, "first");
  EXPECT_EQ(d.image_id, kImage);
  EXPECT_EQ(d.user_data, "#cloud-config\n# v1\n");
  EXPECT_EQ(d.iam_instance_profile_name, "runpool-agent");
  EXPECT_TRUE(d.require_imdsv2);
  EXPECT_TRUE(d.instance_metadata_tags);
  EXPECT_EQ(d.instance_initiated_shutdown_behavior, "terminate");
  // The version holds the instance tags given in its data. moto also copies the template's own
  // tags (TagSpecification of type launch-template) into every version's data; AWS does not.
  ASSERT_EQ(d.tag_specifications.size(), on_moto() ? 2u : 1u);
  EXPECT_EQ(d.tag_specifications[0].resource_type, "instance");
  EXPECT_EQ(d.tag_specifications[0].tags.size(), 2u);
  EXPECT_EQ(aws_.ec2().describe_launch_template_versions({created.id, "", ""}, {}).size(), 2u);

  // Missing templates: nullopt from the single lookup, a not-found code from the versions.
  EXPECT_FALSE(aws_.ec2().describe_launch_template({"lt-0123456789abcdef0", "", ""}));
  try {
    aws_.ec2().describe_launch_template_versions({"", name + "-missing", ""}, {});
    ADD_FAILURE() << "expected a not-found error";
  } catch (const AwsError& e) {
    EXPECT_TRUE(aws::is_launch_template_not_found(e.code())) << e.what();
  }
}

TEST_P(Ec2Test, RunTagDescribePageByPageAndTerminate) {
  // Seven launches of one: moto counts MaxResults in reservations, EC2 (and the stand-in) in
  // instances, and with one instance per reservation both page alike.
  std::vector<Instance> launched;
  for (int n = 0; n < 7; ++n) {
    std::vector<Instance> one = run(basic(1));
    ASSERT_EQ(one.size(), 1u);
    launched.push_back(one[0]);
  }
  for (const Instance& i : launched) {
    EXPECT_EQ(i.instance_id.rfind("i-", 0), 0u);
    EXPECT_EQ(i.state.name, "pending");
    EXPECT_EQ(i.state.code, 0);
    EXPECT_EQ(i.instance_type, "t3.micro");
    EXPECT_EQ(i.subnet_id, backend_.subnet);
  }
  Instance running = wait_for(launched[0].instance_id, {"running"});
  EXPECT_EQ(running.state.code, 16);
  EXPECT_EQ(running.image_id, kImage);
  EXPECT_EQ(running.lifecycle, "on-demand");
  EXPECT_TRUE(running.launch_time);
  EXPECT_FALSE(running.private_ip_address.empty());
  EXPECT_FALSE(running.availability_zone.empty());
  EXPECT_EQ(running.tag("runpool:test"), tag_);

  // Pages of 5 (EC2's smallest MaxResults) by filter.
  DescribeInstancesRequest d;
  d.filters = {mine()};
  d.max_results = 5;
  aws::DescribeInstancesPage page = aws_.ec2().describe_instances_page(d);
  EXPECT_EQ(page.instances.size(), 5u);
  ASSERT_FALSE(page.next_token.empty());
  std::set<std::string> seen;
  int visited = 0;
  aws_.ec2().for_each_instance(d, [&](const Instance& i) {
    ++visited;
    seen.insert(i.instance_id);
    return true;
  });
  EXPECT_EQ(visited, 7);
  EXPECT_EQ(seen, std::set<std::string>(launched_.begin(), launched_.end()));

  aws_.ec2().create_tags({launched[1].instance_id, launched[2].instance_id},
                         {{"runpool:state", "idle"}, {"empty", ""}, {"runpool:note", "a b&c=d+é"}});
  Instance tagged = describe_one(launched[1].instance_id);
  EXPECT_EQ(tagged.tag("runpool:state"), "idle");
  EXPECT_EQ(tagged.tag("empty"), "");
  EXPECT_EQ(tagged.tag("runpool:note"), "a b&c=d+é");
  aws_.ec2().create_tags({launched[1].instance_id}, {{"runpool:state", "claimed"}});  // overwrites
  EXPECT_EQ(describe_one(launched[1].instance_id).tag("runpool:state"), "claimed");
  d = {};
  d.filters = {mine(), {"tag-key", {"runpool:note"}}};
  EXPECT_EQ(aws_.ec2().describe_instances(d).size(), 2u);
  d.filters = {mine(), {"tag:runpool:state", {"claimed", "nothing"}}};
  EXPECT_EQ(aws_.ec2().describe_instances(d).size(), 1u);
  d.filters = {{"instance-id", {launched[3].instance_id, launched[4].instance_id}}};
  EXPECT_EQ(aws_.ec2().describe_instances(d).size(), 2u);

  for (const Instance& i : launched) wait_for(i.instance_id, {"running"});
  auto changes = aws_.ec2().terminate_instances({launched[0].instance_id});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].instance_id, launched[0].instance_id);
  EXPECT_EQ(changes[0].previous_state.name, "running");
  EXPECT_EQ(changes[0].previous_state.code, 16);
  EXPECT_TRUE(aws::instance_gone(changes[0].current_state.name)) << changes[0].current_state.name;
  Instance gone = wait_for(launched[0].instance_id, {"terminated"});
  EXPECT_EQ(gone.state.name, "terminated");
  EXPECT_EQ(gone.state.code, 48);

  d.filters = {mine(), {"instance-state-name", {"running"}}};
  EXPECT_EQ(aws_.ec2().describe_instances(d).size(), 6u);
  d.filters = {mine(), {"instance-state-name", {"shutting-down", "terminated"}}};
  auto stopped = aws_.ec2().describe_instances(d);
  ASSERT_EQ(stopped.size(), 1u);
  EXPECT_EQ(stopped[0].instance_id, launched[0].instance_id);
}

TEST_P(Ec2Test, AClientTokenMakesRunInstancesIdempotent) {
  if (on_moto()) GTEST_SKIP() << "moto keeps ClientToken but launches again";
  aws::RunInstancesRequest r = basic(1);
  r.client_token = tag_ + "-token";
  std::vector<Instance> first = run(r);
  std::vector<Instance> again = run(r);  // a retried call after a lost answer
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(first[0].instance_id, again[0].instance_id);
  DescribeInstancesRequest d;
  d.filters = {mine()};
  EXPECT_EQ(aws_.ec2().describe_instances(d).size(), 1u);

  r.instance_type = "t3.small";  // the same token with other parameters
  expect_code([&] { run(r); }, "IdempotentParameterMismatch");
}

TEST_P(Ec2Test, ErrorCodesComeFromEc2) {
  expect_code([&] { aws_.ec2().terminate_instances({"i-0123456789abcdef0"}); }, "InvalidInstanceID.NotFound");
  DescribeInstancesRequest d;
  d.instance_ids = {"i-0123456789abcdef0"};
  expect_code([&] { aws_.ec2().describe_instances(d); }, "InvalidInstanceID.NotFound");
  d.instance_ids = {"i-0123456789abcdef0"};
  d.max_results = 5;
  expect_code([&] { aws_.ec2().describe_instances(d); }, "InvalidParameterCombination");
  // moto answers NotFound for a malformed id and tags instances that do not exist; EC2 does neither.
  if (on_moto()) return;
  expect_code([&] { aws_.ec2().terminate_instances({"not-an-instance"}); }, "InvalidInstanceID.Malformed");
  expect_code([&] { aws_.ec2().create_tags({"i-0123456789abcdef0"}, {{"k", "v"}}); }, "InvalidInstanceID.NotFound");
}

// CreateFleet (instant) exactly as provision builds it, after init made the pool: the pool's
// launch template at $Default, one override per type and subnet, the pool's tags on instances
// and fleet, the derived ClientToken; then the pool's instances found, described and terminated
// through Ec2Compute.
TEST_P(Ec2Test, ControllerFleetThroughEc2Compute) {
  settings_ = pool_settings(backend_, tag_);
  controller::init_pool(settings_, aws_.db(), aws_.sqs(), aws_.ec2(), std::chrono::seconds(30));

  controller::Ec2Compute compute(aws_.ec2(), settings_);
  const std::string label = tag_ + "-label";
  const std::string token = controller::fleet_client_token(settings_.pool, label, pool::UsageClass::kOnDemand, 1, 2);
  aws::CreateFleetRequest request = controller::fleet_request(settings_, "small", {"c7i.large", "m7i.large"},
                                                              pool::UsageClass::kOnDemand, 2, label, token);
  aws::CreateFleetResult result = compute.create_fleet(request);
  std::vector<std::string> ids = result.instance_ids();
  launched_.insert(launched_.end(), ids.begin(), ids.end());
  EXPECT_EQ(result.fleet_id.rfind("fleet-", 0), 0u) << result.fleet_id;
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_TRUE(result.errors.empty());
  std::vector<controller::LaunchedInstance> got = controller::fleet_instances(result, pool::UsageClass::kSpot);
  ASSERT_EQ(got.size(), 2u);
  for (const auto& l : got) {
    EXPECT_EQ(l.usage, pool::UsageClass::kOnDemand) << "the answer's lifecycle";
    EXPECT_TRUE(l.instance_type == "c7i.large" || l.instance_type == "m7i.large") << l.instance_type;
  }

  for (const Instance& i : compute.describe(ids)) {
    EXPECT_EQ(i.tag(controller::kTagPool), settings_.pool);
    EXPECT_EQ(i.tag(controller::kTagTable), settings_.table);
    EXPECT_EQ(i.tag(controller::kTagLabel), label);
    EXPECT_EQ(i.tag(controller::kTagResourceClass), "small");
    EXPECT_EQ(i.subnet_id, backend_.subnet);
  }
  EXPECT_EQ(compute.describe(ids).size(), 2u);
  EXPECT_EQ(compute.label_instances(label).size(), 2u);
  EXPECT_TRUE(compute.label_instances(label + "-other").empty());
  EXPECT_EQ(compute.pool_instances().size(), 2u);

  // An unknown id among them is not an error: it is gone already.
  compute.terminate({ids[0], "i-0123456789abcdef0", ids[1]});
  for (const std::string& id : ids) EXPECT_TRUE(aws::instance_gone(describe_one(id).state.name));
  EXPECT_TRUE(compute.label_instances(label).empty());
}

// A replayed CreateFleet with the same ClientToken returns the first answer instead of launching
// again: what makes a retried or re-run provision safe.
TEST_P(Ec2Test, AClientTokenMakesCreateFleetIdempotent) {
  if (on_moto()) GTEST_SKIP() << "moto ignores CreateFleet's ClientToken";
  settings_.pool = tag_;
  settings_.table = tag_ + "-table";
  settings_.launch_template = "runpool-" + tag_;
  aws::CreateLaunchTemplateRequest c;
  c.name = settings_.launch_template;
  c.data.image_id = kImage;
  aws_.ec2().create_launch_template(c);
  const std::string label = tag_ + "-label";
  aws::CreateFleetRequest request = controller::fleet_request(
      settings_, "small", {"c7i.large"}, pool::UsageClass::kOnDemand, 1, label,
      controller::fleet_client_token(settings_.pool, label, pool::UsageClass::kOnDemand, 1, 1));
  aws::CreateFleetResult first = aws_.ec2().create_fleet(request);
  aws::CreateFleetResult again = aws_.ec2().create_fleet(request);
  for (const auto* r : {&first, &again}) {
    for (const std::string& id : r->instance_ids()) launched_.push_back(id);
  }
  EXPECT_EQ(first.fleet_id, again.fleet_id);
  EXPECT_EQ(first.instance_ids(), again.instance_ids());
  EXPECT_EQ(controller::Ec2Compute(aws_.ec2(), settings_).label_instances(label).size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Backends, Ec2Test, ::testing::ValuesIn(backend_names()), backend_test_name);

}  // namespace
}  // namespace runpool::testing
