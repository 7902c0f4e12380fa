#include "common/aws/ec2.h"

#include <gtest/gtest.h>

#include <map>

#include "common/aws/ec2_query.h"
#include "common/retry.h"
#include "common/testing/expect_malformed.h"
#include "common/testing/fake_http.h"

namespace runpool::aws {
namespace {

using runpool::testing::expect_malformed;
using runpool::testing::FakeHttp;

std::string url_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

using Params = std::vector<std::pair<std::string, std::string>>;

Params decode_form(const std::string& body) {
  Params out;
  size_t start = 0;
  while (start <= body.size()) {
    size_t amp = body.find('&', start);
    std::string pair = body.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
    size_t eq = pair.find('=');
    out.emplace_back(url_decode(pair.substr(0, eq)), eq == std::string::npos ? "" : url_decode(pair.substr(eq + 1)));
    if (amp == std::string::npos) break;
    start = amp + 1;
  }
  return out;
}

std::map<std::string, std::string> as_map(const Params& p) { return {p.begin(), p.end()}; }

std::string wrap(const std::string& action, const std::string& inner) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<" + action +
         "Response xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\"><requestId>59dbff89-35bd-4eac-99ed-be587"
         "</requestId>" + inner + "</" + action + "Response>";
}

std::string error_xml(const std::string& code, const std::string& message) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>" + code + "</Code><Message>" +
         message + "</Message></Error></Errors><RequestID>ea966190-f9aa-478e-9ede-example</RequestID></Response>";
}

const char* kInstanceXml =
    "<item><instanceId>i-1234567890abcdef0</instanceId><imageId>ami-0abcdef1234567890</imageId>"
    "<instanceState><code>16</code><name>running</name></instanceState>"
    "<privateDnsName>ip-10-0-0-12.ec2.internal</privateDnsName><amiLaunchIndex>0</amiLaunchIndex>"
    "<productCodes/><instanceType>m5.large</instanceType><launchTime>2024-05-25T07:34:27.000Z</launchTime>"
    "<placement><availabilityZone>us-east-1c</availabilityZone><tenancy>default</tenancy></placement>"
    "<subnetId>subnet-0a</subnetId><vpcId>vpc-1</vpcId><privateIpAddress>10.0.0.12</privateIpAddress>"
    "<instanceLifecycle>spot</instanceLifecycle><spotInstanceRequestId>sir-1</spotInstanceRequestId>"
    "<tagSet><item><key>runpool:pool</key><value>linux-x64</value></item>"
    "<item><key>Name</key><value>a &amp; b</value></item></tagSet></item>";

class Ec2Test : public ::testing::Test {
 protected:
  Ec2Test()
      : creds_(AwsCredentials{"AKIDEXAMPLE", Secret("secret"), Secret(), std::nullopt}),
        caller_(http_, creds_, clock_, ServiceSettings{"ec2", "http://ec2.local", "us-east-1", RetryPolicy{}, {}}),
        ec2_(caller_) {}

  Params sent(size_t i = 0) const { return decode_form(http_.request(i).body); }

  FakeHttp http_;
  FakeClock clock_;
  StaticCredentialsProvider creds_;
  AwsCaller caller_;
  Ec2Client ec2_;
};

// ---- the form

TEST(InstanceStateNames, GoneAndStopped) {
  for (const char* s : {"shutting-down", "terminated"}) {
    EXPECT_TRUE(instance_gone(s)) << s;
    EXPECT_FALSE(instance_stopped(s)) << s;
  }
  for (const char* s : {"stopping", "stopped"}) {
    EXPECT_TRUE(instance_stopped(s)) << s;
    EXPECT_FALSE(instance_gone(s)) << s;
  }
  for (const char* s : {"pending", "running", "", "Terminated"}) {
    EXPECT_FALSE(instance_gone(s) || instance_stopped(s)) << s;
  }
}

TEST(Ec2Form, FlattensKeysAndPercentEncodesNamesAndValues) {
  EXPECT_EQ(form_key("LaunchTemplateConfigs", 1, "Overrides", 2, "InstanceType"),
            "LaunchTemplateConfigs.1.Overrides.2.InstanceType");
  Ec2Form form("CreateTags");
  form.add(form_key("Tag", 1, "Key"), "a b/c").add(form_key("Tag", 1, "Value"), "x&y=z+é");
  form.add_nonempty("Skipped", "").add_optional("AlsoSkipped", std::nullopt).add_list("ResourceId", {"i-1", "i-2"});
  EXPECT_EQ(form.encode(),
            "Action=CreateTags&Version=2016-11-15&Tag.1.Key=a%20b%2Fc&Tag.1.Value=x%26y%3Dz%2B%C3%A9"
            "&ResourceId.1=i-1&ResourceId.2=i-2");
}

TEST(Ec2Base64, RoundTripsAndRejectsGarbage) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("#!/bin/sh\n"), "IyEvYmluL3NoCg==");
  for (const std::string& s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    EXPECT_EQ(base64_decode(base64_encode(s)), s);
  }
  EXPECT_EQ(base64_decode("aGk=\n"), "hi");
  EXPECT_FALSE(base64_decode("abc"));
  EXPECT_FALSE(base64_decode("a=bc"));
  EXPECT_FALSE(base64_decode("ab!c"));
}

// ---- request encoding: exact parameter names, as the AWS SDK for JavaScript v3 sends them

TEST_F(Ec2Test, RunInstancesSendsASignedFormPost) {
  http_.push(200, wrap("RunInstances", std::string("<reservationId>r-1</reservationId><ownerId>1</ownerId>"
                                                   "<instancesSet>") + kInstanceXml + "</instancesSet>"));
  RunInstancesRequest r;
  r.image_id = "ami-1";
  r.launch_template = LaunchTemplateRef{"lt-1", "", "2"};
  r.instance_type = "t3.micro";
  r.min_count = 1;
  r.max_count = 2;
  r.user_data = "hi";
  r.subnet_id = "subnet-1";
  r.security_group_ids = {"sg-1"};
  r.iam_instance_profile_name = "prof";
  r.tag_specifications = {{"instance", {{"k", "v"}}}};
  r.spot = true;
  r.instance_initiated_shutdown_behavior = "terminate";
  r.instance_metadata_tags = true;
  r.client_token = "tok-1";
  RunInstancesResult result = ec2_.run_instances(r);

  ASSERT_EQ(http_.count(), 1u);
  HttpRequest req = http_.request(0);
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.url, "http://ec2.local/");
  ASSERT_TRUE(req.sigv4);
  EXPECT_EQ(req.sigv4->service, "ec2");
  EXPECT_EQ(req.sigv4->region, "us-east-1");
  ASSERT_EQ(req.headers.size(), 1u);
  EXPECT_EQ(req.headers[0].first, "Content-Type");
  EXPECT_EQ(req.headers[0].second, "application/x-www-form-urlencoded; charset=utf-8");
  EXPECT_EQ(sent(), (Params{{"Action", "RunInstances"},
                            {"Version", "2016-11-15"},
                            {"ImageId", "ami-1"},
                            {"LaunchTemplate.LaunchTemplateId", "lt-1"},
                            {"LaunchTemplate.Version", "2"},
                            {"InstanceType", "t3.micro"},
                            {"MinCount", "1"},
                            {"MaxCount", "2"},
                            {"UserData", "aGk="},
                            {"SubnetId", "subnet-1"},
                            {"SecurityGroupId.1", "sg-1"},
                            {"IamInstanceProfile.Name", "prof"},
                            {"TagSpecification.1.ResourceType", "instance"},
                            {"TagSpecification.1.Tag.1.Key", "k"},
                            {"TagSpecification.1.Tag.1.Value", "v"},
                            {"InstanceMarketOptions.MarketType", "spot"},
                            {"InstanceMarketOptions.SpotOptions.SpotInstanceType", "one-time"},
                            {"InstanceInitiatedShutdownBehavior", "terminate"},
                            {"MetadataOptions.HttpTokens", "required"},
                            {"MetadataOptions.InstanceMetadataTags", "enabled"},
                            {"ClientToken", "tok-1"}}));
  EXPECT_EQ(result.reservation_id, "r-1");
  ASSERT_EQ(result.instances.size(), 1u);
  EXPECT_EQ(result.instances[0].instance_id, "i-1234567890abcdef0");
}

TEST_F(Ec2Test, CreateFleetEncodesNestedConfigsOverridesAndRequirements) {
  http_.push(200, wrap("CreateFleet", "<fleetId>fleet-1</fleetId><errorSet/><fleetInstanceSet/>"));
  CreateFleetRequest r;
  FleetLaunchTemplateConfig c;
  c.launch_template = LaunchTemplateRef{"", "lt", "$Latest"};
  c.overrides.push_back(FleetOverride{"m5.large", "subnet-1", std::nullopt, "ami-0123456789abcdef0"});
  c.overrides.push_back(FleetOverride{"", "subnet-2", InstanceRequirements{2, 4, 4096, std::nullopt, {"m5.*", "c5.*"}}, ""});
  r.launch_template_configs = {c};
  r.total_target_capacity = 3;
  r.on_demand_target_capacity = 1;
  r.spot_target_capacity = 2;
  r.default_target_capacity_type = "spot";
  r.spot_allocation_strategy = "price-capacity-optimized";
  r.on_demand_allocation_strategy = "lowest-price";
  r.tag_specifications = {{"instance", {{"a b", "c&d"}}}, {"fleet", {{"k", "v"}}}};
  r.client_token = "tok";
  ec2_.create_fleet(r);
  EXPECT_EQ(as_map(sent()), (std::map<std::string, std::string>{
                                {"Action", "CreateFleet"},
                                {"Version", "2016-11-15"},
                                {"Type", "instant"},
                                {"LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName", "lt"},
                                {"LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version", "$Latest"},
                                {"LaunchTemplateConfigs.1.Overrides.1.InstanceType", "m5.large"},
                                {"LaunchTemplateConfigs.1.Overrides.1.SubnetId", "subnet-1"},
                                {"LaunchTemplateConfigs.1.Overrides.1.ImageId", "ami-0123456789abcdef0"},
                                {"LaunchTemplateConfigs.1.Overrides.2.SubnetId", "subnet-2"},
                                {"LaunchTemplateConfigs.1.Overrides.2.InstanceRequirements.VCpuCount.Min", "2"},
                                {"LaunchTemplateConfigs.1.Overrides.2.InstanceRequirements.VCpuCount.Max", "4"},
                                {"LaunchTemplateConfigs.1.Overrides.2.InstanceRequirements.MemoryMiB.Min", "4096"},
                                {"LaunchTemplateConfigs.1.Overrides.2.InstanceRequirements.AllowedInstanceType.1", "m5.*"},
                                {"LaunchTemplateConfigs.1.Overrides.2.InstanceRequirements.AllowedInstanceType.2", "c5.*"},
                                {"TargetCapacitySpecification.TotalTargetCapacity", "3"},
                                {"TargetCapacitySpecification.OnDemandTargetCapacity", "1"},
                                {"TargetCapacitySpecification.SpotTargetCapacity", "2"},
                                {"TargetCapacitySpecification.DefaultTargetCapacityType", "spot"},
                                {"SpotOptions.AllocationStrategy", "price-capacity-optimized"},
                                {"OnDemandOptions.AllocationStrategy", "lowest-price"},
                                {"TagSpecification.1.ResourceType", "instance"},
                                {"TagSpecification.1.Tag.1.Key", "a b"},
                                {"TagSpecification.1.Tag.1.Value", "c&d"},
                                {"TagSpecification.2.ResourceType", "fleet"},
                                {"TagSpecification.2.Tag.1.Key", "k"},
                                {"TagSpecification.2.Tag.1.Value", "v"},
                                {"ClientToken", "tok"}}));
  // The special characters travel percent-encoded.
  EXPECT_NE(http_.request(0).body.find("TagSpecification.1.Tag.1.Key=a%20b"), std::string::npos);
  EXPECT_NE(http_.request(0).body.find("TagSpecification.1.Tag.1.Value=c%26d"), std::string::npos);
  EXPECT_NE(http_.request(0).body.find("Version=%24Latest"), std::string::npos);
}

TEST_F(Ec2Test, LaunchTemplateRefNeedsExactlyIdOrName) {
  CreateFleetRequest r;
  r.launch_template_configs = {FleetLaunchTemplateConfig{LaunchTemplateRef{"lt-1", "lt", ""}, {}}};
  EXPECT_THROW(ec2_.create_fleet(r), std::invalid_argument);
  r.launch_template_configs = {FleetLaunchTemplateConfig{LaunchTemplateRef{}, {}}};
  EXPECT_THROW(ec2_.create_fleet(r), std::invalid_argument);
  EXPECT_EQ(http_.count(), 0u);
}

TEST_F(Ec2Test, DescribeTerminateAndTagsEncodeTheirLists) {
  http_.push(200, wrap("DescribeInstances", "<reservationSet/>"));
  http_.push(200, wrap("TerminateInstances", "<instancesSet/>"));
  http_.push(200, wrap("CreateTags", "<return>true</return>"));
  http_.push(200, wrap("DeleteTags", "<return>true</return>"));
  DescribeInstancesRequest d;
  d.instance_ids = {"i-1", "i-2"};
  d.filters = {{"tag:pool", {"a", "b"}}, {"instance-state-name", {"running"}}};
  d.max_results = 5;
  d.next_token = "nt";
  ec2_.describe_instances_page(d);
  ec2_.terminate_instances({"i-1"});
  ec2_.create_tags({"i-1"}, {{"k", ""}});
  ec2_.delete_tags({"i-1", "i-2"}, {"k"});
  EXPECT_EQ(sent(0), (Params{{"Action", "DescribeInstances"},
                             {"Version", "2016-11-15"},
                             {"InstanceId.1", "i-1"},
                             {"InstanceId.2", "i-2"},
                             {"Filter.1.Name", "tag:pool"},
                             {"Filter.1.Value.1", "a"},
                             {"Filter.1.Value.2", "b"},
                             {"Filter.2.Name", "instance-state-name"},
                             {"Filter.2.Value.1", "running"},
                             {"MaxResults", "5"},
                             {"NextToken", "nt"}}));
  EXPECT_EQ(sent(1), (Params{{"Action", "TerminateInstances"}, {"Version", "2016-11-15"}, {"InstanceId.1", "i-1"}}));
  EXPECT_EQ(sent(2), (Params{{"Action", "CreateTags"},
                             {"Version", "2016-11-15"},
                             {"ResourceId.1", "i-1"},
                             {"Tag.1.Key", "k"},
                             {"Tag.1.Value", ""}}));
  EXPECT_EQ(sent(3), (Params{{"Action", "DeleteTags"},
                             {"Version", "2016-11-15"},
                             {"ResourceId.1", "i-1"},
                             {"ResourceId.2", "i-2"},
                             {"Tag.1.Key", "k"}}));
}

const char* kLaunchTemplateXml =
    "<launchTemplate><launchTemplateId>lt-0a20c965061f64abc</launchTemplateId>"
    "<launchTemplateName>runpool</launchTemplateName><createTime>2017-10-31T11:38:52.000Z</createTime>"
    "<createdBy>arn:aws:iam::123456789012:root</createdBy><defaultVersionNumber>1</defaultVersionNumber>"
    "<latestVersionNumber>2</latestVersionNumber></launchTemplate>";

const char* kVersionXml =
    "<launchTemplateId>lt-0a20c965061f64abc</launchTemplateId><launchTemplateName>runpool</launchTemplateName>"
    "<versionNumber>2</versionNumber><versionDescription>v2</versionDescription>"
    "<createTime>2017-10-31T11:52:03.000Z</createTime><defaultVersion>false</defaultVersion>"
    "<launchTemplateData><imageId>ami-8c1be5f6</imageId><instanceType>t3.small</instanceType>"
    "<userData>IyEvYmluL3NoCg==</userData><iamInstanceProfile><name>runner</name></iamInstanceProfile>"
    "<metadataOptions><httpTokens>required</httpTokens><instanceMetadataTags>enabled</instanceMetadataTags>"
    "<httpPutResponseHopLimit>1</httpPutResponseHopLimit><httpEndpoint>enabled</httpEndpoint>"
    "<httpProtocolIpv6>disabled</httpProtocolIpv6></metadataOptions><tagSpecificationSet><item><resourceType>instance</resourceType><tagSet><item>"
    "<key>runpool:pool</key><value>p</value></item></tagSet></item></tagSpecificationSet>"
    "<securityGroupIdSet><item>sg-1</item></securityGroupIdSet>"
    "<instanceInitiatedShutdownBehavior>terminate</instanceInitiatedShutdownBehavior>"
    "<blockDeviceMappingSet><item><deviceName>/dev/xvda</deviceName><ebs><volumeSize>64</volumeSize>"
    "<volumeType>gp3</volumeType><deleteOnTermination>true</deleteOnTermination></ebs></item>"
    "<item><deviceName>/dev/sdf</deviceName><ebs><volumeSize>200</volumeSize>"
    "<deleteOnTermination>false</deleteOnTermination></ebs></item></blockDeviceMappingSet></launchTemplateData>";

TEST_F(Ec2Test, LaunchTemplateCallsEncodeTheirData) {
  http_.push(200, wrap("CreateLaunchTemplate", kLaunchTemplateXml));
  http_.push(200, wrap("CreateLaunchTemplateVersion",
                       std::string("<launchTemplateVersion>") + kVersionXml + "</launchTemplateVersion>"));
  http_.push(200, wrap("ModifyLaunchTemplate", kLaunchTemplateXml));
  http_.push(200, wrap("DescribeLaunchTemplateVersions", "<launchTemplateVersionSet/>"));

  CreateLaunchTemplateRequest c;
  c.name = "runpool";
  c.data.image_id = "ami";
  c.data.instance_type = "t3";
  c.data.user_data = "hi";
  c.data.iam_instance_profile_arn = "arn";
  c.data.tag_specifications = {{"instance", {{"k", "v"}}}};
  c.data.security_group_ids = {"sg-1"};
  c.data.instance_initiated_shutdown_behavior = "terminate";
  c.version_description = "d";
  c.tags = {{"k", "v"}};
  c.client_token = "ct";
  LaunchTemplate t = ec2_.create_launch_template(c);
  EXPECT_EQ(t.id, "lt-0a20c965061f64abc");
  EXPECT_EQ(t.default_version, 1);
  EXPECT_EQ(t.latest_version, 2);

  CreateLaunchTemplateVersionRequest v;
  v.launch_template = LaunchTemplateRef{"", "runpool", "ignored"};
  v.source_version = "1";
  v.data.image_id = "ami-2";
  v.data.require_imdsv2 = false;
  v.data.instance_metadata_tags = false;
  v.data.metadata_hop_limit = 1;
  v.data.metadata_http_protocol_ipv6 = "enabled";
  v.data.block_devices = {{"/dev/xvda", 64, "gp3", true}, {"/dev/sdf", 0, "", false}};
  ec2_.create_launch_template_version(v);
  ec2_.set_default_launch_template_version(LaunchTemplateRef{"", "runpool", "2"});
  ec2_.describe_launch_template_versions(LaunchTemplateRef{"lt-1", "", ""}, {"$Latest", "2"});

  EXPECT_EQ(sent(0), (Params{{"Action", "CreateLaunchTemplate"},
                             {"Version", "2016-11-15"},
                             {"LaunchTemplateName", "runpool"},
                             {"LaunchTemplateData.ImageId", "ami"},
                             {"LaunchTemplateData.InstanceType", "t3"},
                             {"LaunchTemplateData.UserData", "aGk="},
                             {"LaunchTemplateData.IamInstanceProfile.Arn", "arn"},
                             {"LaunchTemplateData.MetadataOptions.HttpTokens", "required"},
                             {"LaunchTemplateData.MetadataOptions.InstanceMetadataTags", "enabled"},
                             {"LaunchTemplateData.TagSpecification.1.ResourceType", "instance"},
                             {"LaunchTemplateData.TagSpecification.1.Tag.1.Key", "k"},
                             {"LaunchTemplateData.TagSpecification.1.Tag.1.Value", "v"},
                             {"LaunchTemplateData.SecurityGroupId.1", "sg-1"},
                             {"LaunchTemplateData.InstanceInitiatedShutdownBehavior", "terminate"},
                             {"VersionDescription", "d"},
                             {"TagSpecification.1.ResourceType", "launch-template"},
                             {"TagSpecification.1.Tag.1.Key", "k"},
                             {"TagSpecification.1.Tag.1.Value", "v"},
                             {"ClientToken", "ct"}}));
  EXPECT_EQ(sent(1), (Params{{"Action", "CreateLaunchTemplateVersion"},
                             {"Version", "2016-11-15"},
                             {"LaunchTemplateName", "runpool"},
                             {"SourceVersion", "1"},
                             {"LaunchTemplateData.ImageId", "ami-2"},
                             {"LaunchTemplateData.MetadataOptions.HttpPutResponseHopLimit", "1"},
                             {"LaunchTemplateData.MetadataOptions.HttpProtocolIpv6", "enabled"},
                             {"LaunchTemplateData.BlockDeviceMapping.1.DeviceName", "/dev/xvda"},
                             {"LaunchTemplateData.BlockDeviceMapping.1.Ebs.VolumeSize", "64"},
                             {"LaunchTemplateData.BlockDeviceMapping.1.Ebs.VolumeType", "gp3"},
                             {"LaunchTemplateData.BlockDeviceMapping.1.Ebs.DeleteOnTermination", "true"},
                             {"LaunchTemplateData.BlockDeviceMapping.2.DeviceName", "/dev/sdf"},
                             {"LaunchTemplateData.BlockDeviceMapping.2.Ebs.DeleteOnTermination", "false"}}));
  EXPECT_EQ(sent(2), (Params{{"Action", "ModifyLaunchTemplate"},
                             {"Version", "2016-11-15"},
                             {"LaunchTemplateName", "runpool"},
                             {"SetDefaultVersion", "2"}}));
  EXPECT_EQ(sent(3), (Params{{"Action", "DescribeLaunchTemplateVersions"},
                             {"Version", "2016-11-15"},
                             {"LaunchTemplateId", "lt-1"},
                             {"LaunchTemplateVersion.1", "$Latest"},
                             {"LaunchTemplateVersion.2", "2"}}));
}

// ---- parsing real-shaped answers

TEST_F(Ec2Test, DescribeInstancesParsesEveryReservationAndTheNextToken) {
  http_.push(200, wrap("DescribeInstances",
                       std::string("<reservationSet><item><reservationId>r-1</reservationId><instancesSet>") +
                           kInstanceXml +
                           "</instancesSet></item><item><reservationId>r-2</reservationId><instancesSet><item>"
                           "<instanceId>i-2</instanceId><instanceState><code>80</code><name>stopped</name>"
                           "</instanceState><instanceType>t3.micro</instanceType><tagSet/></item></instancesSet>"
                           "</item></reservationSet><nextToken>page-2</nextToken>"));
  DescribeInstancesPage page = ec2_.describe_instances_page({});
  ASSERT_EQ(page.instances.size(), 2u);
  const Instance& a = page.instances[0];
  EXPECT_EQ(a.instance_id, "i-1234567890abcdef0");
  EXPECT_EQ(a.instance_type, "m5.large");
  EXPECT_EQ(a.image_id, "ami-0abcdef1234567890");
  EXPECT_EQ(a.state.code, 16);
  EXPECT_EQ(a.state.name, "running");
  WallTime launched;
  ASSERT_TRUE(parse_iso8601("2024-05-25T07:34:27Z", &launched));
  EXPECT_EQ(a.launch_time, launched);
  EXPECT_EQ(a.lifecycle, "spot");
  EXPECT_EQ(a.subnet_id, "subnet-0a");
  EXPECT_EQ(a.private_ip_address, "10.0.0.12");
  EXPECT_EQ(a.availability_zone, "us-east-1c");
  EXPECT_EQ(a.tags, (std::vector<Tag>{{"runpool:pool", "linux-x64"}, {"Name", "a & b"}}));
  EXPECT_EQ(a.tag("Name"), "a & b");
  EXPECT_FALSE(a.tag("missing"));
  const Instance& b = page.instances[1];
  EXPECT_EQ(b.instance_id, "i-2");
  EXPECT_EQ(b.state.name, "stopped");
  EXPECT_EQ(b.lifecycle, "on-demand");  // no instanceLifecycle element
  EXPECT_FALSE(b.launch_time);
  EXPECT_EQ(page.next_token, "page-2");
}

TEST_F(Ec2Test, StateCodeKeepsOnlyTheLowByte) {
  http_.push(200, wrap("TerminateInstances",
                       "<instancesSet><item><instanceId>i-1</instanceId><currentState><code>288</code>"
                       "<name>shutting-down</name></currentState><previousState><code>16</code><name>running</name>"
                       "</previousState></item></instancesSet>"));
  auto changes = ec2_.terminate_instances({"i-1"});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].instance_id, "i-1");
  EXPECT_EQ(changes[0].previous_state.name, "running");
  EXPECT_EQ(changes[0].current_state.code, 32);
  EXPECT_EQ(changes[0].current_state.name, "shutting-down");
}

TEST_F(Ec2Test, CreateFleetPartialFulfilmentIsAResult) {
  http_.push(200, wrap("CreateFleet",
                       "<fleetId>fleet-12a34b55-67cd-8ef9-ba9b-9208dEXAMPLE</fleetId>"
                       "<errorSet><item><launchTemplateAndOverrides><launchTemplateSpecification>"
                       "<launchTemplateName>runpool</launchTemplateName><version>$Latest</version>"
                       "</launchTemplateSpecification><overrides><instanceType>m5.large</instanceType>"
                       "<subnetId>subnet-a</subnetId></overrides></launchTemplateAndOverrides>"
                       "<lifecycle>spot</lifecycle><errorCode>InsufficientInstanceCapacity</errorCode>"
                       "<errorMessage>There is no Spot capacity available that matches your request.</errorMessage>"
                       "</item></errorSet>"
                       "<fleetInstanceSet><item><launchTemplateAndOverrides><launchTemplateSpecification>"
                       "<launchTemplateName>runpool</launchTemplateName><version>$Latest</version>"
                       "</launchTemplateSpecification><overrides><instanceType>m5.large</instanceType>"
                       "<subnetId>subnet-b</subnetId></overrides></launchTemplateAndOverrides>"
                       "<lifecycle>on-demand</lifecycle><instanceIds><item>i-1</item><item>i-2</item></instanceIds>"
                       "<instanceType>m5.large</instanceType><platform/></item></fleetInstanceSet>"));
  CreateFleetRequest r;
  r.launch_template_configs = {FleetLaunchTemplateConfig{LaunchTemplateRef{"", "runpool", "$Latest"}, {}}};
  CreateFleetResult result = ec2_.create_fleet(r);
  EXPECT_EQ(result.fleet_id, "fleet-12a34b55-67cd-8ef9-ba9b-9208dEXAMPLE");
  ASSERT_EQ(result.instances.size(), 1u);
  EXPECT_EQ(result.instances[0].instance_ids, (std::vector<std::string>{"i-1", "i-2"}));
  EXPECT_EQ(result.instances[0].lifecycle, "on-demand");
  EXPECT_EQ(result.instances[0].instance_type, "m5.large");
  EXPECT_EQ(result.instances[0].subnet_id, "subnet-b");
  EXPECT_EQ(result.instance_ids(), (std::vector<std::string>{"i-1", "i-2"}));
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_EQ(result.errors[0].code, "InsufficientInstanceCapacity");
  EXPECT_EQ(result.errors[0].lifecycle, "spot");
  EXPECT_EQ(result.errors[0].instance_type, "m5.large");
  EXPECT_EQ(result.errors[0].subnet_id, "subnet-a");
  EXPECT_NE(result.errors[0].message.find("no Spot capacity"), std::string::npos);
}

TEST_F(Ec2Test, LaunchTemplateVersionsParseDataAndDecodeUserData) {
  http_.push(200, wrap("DescribeLaunchTemplateVersions",
                       std::string("<launchTemplateVersionSet><item>") + kVersionXml +
                           "</item><item><launchTemplateId>lt-0a20c965061f64abc</launchTemplateId>"
                           "<versionNumber>1</versionNumber><defaultVersion>true</defaultVersion>"
                           "<launchTemplateData/></item></launchTemplateVersionSet>"));
  auto versions = ec2_.describe_launch_template_versions(LaunchTemplateRef{"", "runpool", ""}, {});
  ASSERT_EQ(versions.size(), 2u);
  const LaunchTemplateVersion& v = versions[0];
  EXPECT_EQ(v.launch_template_id, "lt-0a20c965061f64abc");
  EXPECT_EQ(v.launch_template_name, "runpool");
  EXPECT_EQ(v.version_number, 2);
  EXPECT_FALSE(v.default_version);
  EXPECT_EQ(v.version_description, "v2");
  EXPECT_EQ(v.data.image_id, "ami-8c1be5f6");
  EXPECT_EQ(v.data.instance_type, "t3.small");
  EXPECT_EQ(v.data.user_data, "#!/bin/sh\n");
  EXPECT_EQ(v.data.iam_instance_profile_name, "runner");
  EXPECT_TRUE(v.data.require_imdsv2);
  EXPECT_TRUE(v.data.instance_metadata_tags);
  ASSERT_EQ(v.data.tag_specifications.size(), 1u);
  EXPECT_EQ(v.data.tag_specifications[0].resource_type, "instance");
  EXPECT_EQ(v.data.tag_specifications[0].tags, (std::vector<Tag>{{"runpool:pool", "p"}}));
  EXPECT_EQ(v.data.security_group_ids, (std::vector<std::string>{"sg-1"}));
  EXPECT_EQ(v.data.instance_initiated_shutdown_behavior, "terminate");
  EXPECT_EQ(v.data.metadata_hop_limit, 1);
  EXPECT_EQ(v.data.metadata_http_endpoint, "enabled");
  EXPECT_EQ(v.data.metadata_http_protocol_ipv6, "disabled");
  EXPECT_EQ(v.data.block_devices,
            (std::vector<BlockDevice>{{"/dev/xvda", 64, "gp3", true}, {"/dev/sdf", 200, "", false}}));
  EXPECT_TRUE(versions[1].default_version);
  EXPECT_EQ(versions[1].version_number, 1);
  EXPECT_FALSE(versions[1].data.require_imdsv2);
}

TEST_F(Ec2Test, DescribeLaunchTemplateNotFoundIsNullopt) {
  http_.push(400, error_xml("InvalidLaunchTemplateName.NotFoundException",
                            "At least one of the launch templates specified in the request does not exist."));
  http_.push(200, wrap("DescribeLaunchTemplates", std::string("<launchTemplates><item>") +
                                                      "<launchTemplateId>lt-1</launchTemplateId>"
                                                      "<launchTemplateName>runpool</launchTemplateName>"
                                                      "<defaultVersionNumber>3</defaultVersionNumber>"
                                                      "<latestVersionNumber>4</latestVersionNumber>"
                                                      "<tagSet><item><key>k</key><value>v</value></item></tagSet>"
                                                      "</item></launchTemplates>"));
  EXPECT_FALSE(ec2_.describe_launch_template(LaunchTemplateRef{"", "gone", ""}));
  EXPECT_EQ(sent(0), (Params{{"Action", "DescribeLaunchTemplates"},
                             {"Version", "2016-11-15"},
                             {"LaunchTemplateName.1", "gone"}}));
  auto t = ec2_.describe_launch_template(LaunchTemplateRef{"lt-1", "", ""});
  ASSERT_TRUE(t);
  EXPECT_EQ(t->name, "runpool");
  EXPECT_EQ(t->default_version, 3);
  EXPECT_EQ(t->latest_version, 4);
  EXPECT_EQ(t->tags, (std::vector<Tag>{{"k", "v"}}));
  EXPECT_EQ(as_map(sent(1)).at("LaunchTemplateId.1"), "lt-1");
  EXPECT_EQ(http_.count(), 2u);  // a not-found answer is not retried
}

// ---- pagination

std::string page_xml(const std::string& id, const std::string& next) {
  return wrap("DescribeInstances", "<reservationSet><item><instancesSet><item><instanceId>" + id +
                                       "</instanceId><instanceState><code>0</code><name>pending</name>"
                                       "</instanceState></item></instancesSet></item></reservationSet>" +
                                       (next.empty() ? "" : "<nextToken>" + next + "</nextToken>"));
}

TEST_F(Ec2Test, DescribeInstancesFollowsNextTokenAcrossPages) {
  http_.push(200, page_xml("i-1", "t2"));
  http_.push(200, page_xml("i-2", "t3"));
  http_.push(200, page_xml("i-3", ""));
  DescribeInstancesRequest r;
  r.max_results = 5;
  auto all = ec2_.describe_instances(r);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2].instance_id, "i-3");
  EXPECT_FALSE(as_map(sent(0)).count("NextToken"));
  EXPECT_EQ(as_map(sent(1)).at("NextToken"), "t2");
  EXPECT_EQ(as_map(sent(2)).at("NextToken"), "t3");
  EXPECT_EQ(as_map(sent(2)).at("MaxResults"), "5");
}

TEST_F(Ec2Test, VisitorStopsEarlyAndPagesAreBounded) {
  http_.push(200, page_xml("i-1", "t2"));
  int seen = 0;
  ec2_.for_each_instance({}, [&](const Instance&) { ++seen; return false; });
  EXPECT_EQ(seen, 1);
  EXPECT_EQ(http_.count(), 1u);

  http_.push(200, page_xml("i-1", "t2"));
  http_.push(200, page_xml("i-2", "t3"));
  try {
    ec2_.describe_instances({}, 2);
    FAIL() << "expected a pagination limit";
  } catch (const AwsError& e) {
    EXPECT_EQ(e.code(), "PaginationLimitExceeded");
  }
  http_.push(200, page_xml("i-1", "same"));
  http_.push(200, page_xml("i-1", "same"));
  try {
    ec2_.describe_instances({});
    FAIL() << "expected a stuck token to be refused";
  } catch (const AwsError& e) {
    EXPECT_EQ(e.code(), "MalformedResponse");
  }
}

// ---- errors

TEST_F(Ec2Test, ErrorsCarryAwsCodeAndMessageAndClientErrorsAreNotRetried) {
  http_.push(400, error_xml("InvalidInstanceID.NotFound", "The instance ID 'i-1' does not exist"));
  try {
    ec2_.terminate_instances({"i-1"});
    FAIL() << "expected AwsError";
  } catch (const AwsError& e) {
    EXPECT_EQ(e.service(), "ec2");
    EXPECT_EQ(e.operation(), "TerminateInstances");
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.code(), "InvalidInstanceID.NotFound");
    EXPECT_EQ(e.message(), "The instance ID 'i-1' does not exist");
    EXPECT_TRUE(is_instance_not_found(e.code()));
  }
  EXPECT_EQ(http_.count(), 1u);
}

TEST_F(Ec2Test, RequestLimitExceededIsRetriedToSuccess) {
  http_.push(503, error_xml("RequestLimitExceeded", "Request limit exceeded."));
  http_.push(503, error_xml("RequestLimitExceeded", "Request limit exceeded."));
  http_.push(200, wrap("CreateTags", "<return>true</return>"));
  ec2_.create_tags({"i-1"}, {{"k", "v"}});
  EXPECT_EQ(http_.count(), 3u);
  EXPECT_EQ(caller_.requests_sent(), 3);
}

TEST_F(Ec2Test, CapacityErrorsAreAnswersNotRetriedEvenAs5xx) {
  http_.push(500, error_xml("InsufficientInstanceCapacity",
                            "We currently do not have sufficient m5.large capacity in the Availability Zone."));
  http_.push(200, wrap("RunInstances", "<instancesSet/>"));
  RunInstancesRequest r;
  r.image_id = "ami-1";
  try {
    ec2_.run_instances(r);
    FAIL() << "expected AwsError";
  } catch (const AwsError& e) {
    EXPECT_EQ(e.code(), "InsufficientInstanceCapacity");
    EXPECT_EQ(e.status(), 500);
  }
  EXPECT_EQ(http_.count(), 1u);
  EXPECT_TRUE(is_aws_capacity_code("InsufficientHostCapacity"));
  EXPECT_FALSE(is_aws_capacity_code("InstanceLimitExceeded"));
}

TEST_F(Ec2Test, ServerErrorsAreRetriedAndANonXmlErrorBodyStillGivesAClearError) {
  http_.push(500, error_xml("InternalError", "An internal error has occurred"));
  http_.push(200, wrap("TerminateInstances", "<instancesSet/>"));
  EXPECT_TRUE(ec2_.terminate_instances({"i-1"}).empty());
  EXPECT_EQ(http_.count(), 2u);

  HttpResponse r;
  r.status = 403;
  r.body = "<html><body>Forbidden</body></html>";
  EXPECT_EQ(parse_ec2_error(r).code, "");
  EXPECT_EQ(parse_ec2_error(r).message, r.body);
  r.body = "<ErrorResponse><Error><Type>Sender</Type><Code>SignatureDoesNotMatch</Code><Message>m</Message>"
           "</Error></ErrorResponse>";
  EXPECT_EQ(parse_ec2_error(r).code, "SignatureDoesNotMatch");
  http_.push(403, "not xml at all");
  try {
    ec2_.terminate_instances({"i-1"});
    FAIL() << "expected AwsError";
  } catch (const AwsError& e) {
    EXPECT_EQ(e.code(), "HTTP403");
    EXPECT_EQ(e.message(), "not xml at all");
  }
}

// ---- malformed answers: a clear AwsError, never a crash

TEST_F(Ec2Test, MalformedAnswersBecomeClearErrors) {
  auto describe = [&] { ec2_.describe_instances_page({}); };
  http_.push(200, "");
  expect_malformed(describe, "ec2", "not XML");
  http_.push(200, "{\"json\": true}");
  expect_malformed(describe, "ec2", "not XML");
  std::string full = page_xml("i-1", "");
  http_.push(200, full.substr(0, full.size() / 2));  // truncated
expect_malformed(describe, "ec2", "not XML");
  http_.push(200, wrap("RunInstances", "<instancesSet/>"));  // someone else's answer
expect_malformed(describe, "ec2", "expected <DescribeInstancesResponse>");
  http_.push(200, wrap("DescribeInstances",
                       "<reservationSet><item><instancesSet><item><instanceState><code>0</code><name>pending</name>"
                       "</instanceState></item></instancesSet></item></reservationSet>"));
  expect_malformed(describe, "ec2", "instanceId");
  http_.push(200, wrap("DescribeInstances",
                       "<reservationSet><item><instancesSet><item><instanceId>i-1</instanceId></item>"
                       "</instancesSet></item></reservationSet>"));
  expect_malformed(describe, "ec2", "instanceState");
  http_.push(200, wrap("DescribeInstances",
                       "<reservationSet><item><instancesSet><item><instanceId>i-1</instanceId><instanceState>"
                       "<code>sixteen</code><name>running</name></instanceState></item></instancesSet></item>"
                       "</reservationSet>"));
  expect_malformed(describe, "ec2", "not an integer");
  http_.push(200, wrap("DescribeInstances",
                       "<reservationSet><item><instancesSet><item><instanceId>i-1</instanceId><instanceState>"
                       "<code>16</code><name>running</name></instanceState><launchTime>yesterday</launchTime>"
                       "</item></instancesSet></item></reservationSet>"));
  expect_malformed(describe, "ec2", "ISO 8601");
  http_.push(200, wrap("DescribeInstances", "<reservationSet><instance/></reservationSet>"));
  expect_malformed(describe, "ec2", "expected <item>");
  http_.push(200, wrap("DescribeInstances",
                       "<reservationSet><item><instancesSet><item><instanceId><x/></instanceId></item>"
                       "</instancesSet></item></reservationSet>"));
  expect_malformed(describe, "ec2", "expected text");

  http_.push(200, wrap("RunInstances", "<reservationId>r-1</reservationId>"));
  expect_malformed([&] { ec2_.run_instances({}); }, "ec2", "instancesSet");
  http_.push(200, wrap("CreateLaunchTemplate", "<warning/>"));
  expect_malformed([&] { ec2_.create_launch_template({}); }, "ec2", "launchTemplate");
  http_.push(200, wrap("DescribeLaunchTemplateVersions",
                       "<launchTemplateVersionSet><item><launchTemplateId>lt-1</launchTemplateId><versionNumber>1"
                       "</versionNumber><launchTemplateData><userData>%%%</userData></launchTemplateData></item>"
                       "</launchTemplateVersionSet>"));
  expect_malformed([&] { ec2_.describe_launch_template_versions(LaunchTemplateRef{"lt-1", "", ""}, {}); },
                   "ec2", "not base64");
  http_.push(200, wrap("DescribeLaunchTemplateVersions",
                       "<launchTemplateVersionSet><item><launchTemplateId>lt-1</launchTemplateId><versionNumber>1"
                       "</versionNumber><defaultVersion>yes</defaultVersion></item></launchTemplateVersionSet>"));
  expect_malformed([&] { ec2_.describe_launch_template_versions(LaunchTemplateRef{"lt-1", "", ""}, {}); },
                   "ec2", "not a boolean");
  http_.push(200, wrap("CreateFleet", "<fleetInstanceSet><item><instanceIds><item/></instanceIds></item>"
                                      "</fleetInstanceSet>"));
  expect_malformed([&] {
    CreateFleetRequest r;
    r.launch_template_configs = {FleetLaunchTemplateConfig{LaunchTemplateRef{"lt-1", "", ""}, {}}};
    ec2_.create_fleet(r);
  }, "ec2", "empty instance id");
}

}  // namespace
}  // namespace runpool::aws
