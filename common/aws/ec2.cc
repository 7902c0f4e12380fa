#include "common/aws/ec2.h"

#include "common/aws/ec2_query.h"
#include "common/aws/ec2_shapes.h"

namespace runpool::aws {
namespace {

Ec2XmlReader reader(AwsCaller& caller, const Ec2Form& form) { return {caller.settings().service, form.action()}; }

}  // namespace

bool is_instance_not_found(const std::string& code) {
  return code == "InvalidInstanceID.NotFound" || code == "InvalidInstanceID.Malformed";
}

RunInstancesResult Ec2Client::run_instances(const RunInstancesRequest& r) {
  Ec2Form form("RunInstances");
  form.add_nonempty("ImageId", r.image_id);
  if (r.launch_template) add_launch_template_ref(form, "LaunchTemplate", *r.launch_template);
  form.add_nonempty("InstanceType", r.instance_type);
  form.add("MinCount", r.min_count).add("MaxCount", r.max_count);
  if (!r.user_data.empty()) form.add("UserData", base64_encode(r.user_data));
  form.add_nonempty("SubnetId", r.subnet_id);
  form.add_list("SecurityGroupId", r.security_group_ids);
  form.add_nonempty("IamInstanceProfile.Name", r.iam_instance_profile_name);
  form.add_nonempty("IamInstanceProfile.Arn", r.iam_instance_profile_arn);
  add_tag_specifications(form, "TagSpecification", r.tag_specifications);
  if (r.spot) {
    form.add("InstanceMarketOptions.MarketType", "spot");
    form.add("InstanceMarketOptions.SpotOptions.SpotInstanceType", "one-time");
  }
  form.add_nonempty("InstanceInitiatedShutdownBehavior", r.instance_initiated_shutdown_behavior);
  if (r.require_imdsv2) form.add("MetadataOptions.HttpTokens", "required");
  if (r.instance_metadata_tags) form.add("MetadataOptions.InstanceMetadataTags", "enabled");
  form.add_nonempty("ClientToken", r.client_token);

  Ec2Response resp = ec2_call(caller_, form);
  Ec2XmlReader xml = reader(caller_, form);
  RunInstancesResult out;
  out.reservation_id = xml.text_or_empty(resp.root, "reservationId");
  xml.child(resp.root, "instancesSet");  // a launch answer without its instances is not an answer
  for (pugi::xml_node item : xml.items(resp.root, "instancesSet")) {
    out.instances.push_back(parse_instance(xml, item));
  }
  return out;
}

DescribeInstancesPage Ec2Client::describe_instances_page(const DescribeInstancesRequest& r) {
  Ec2Form form("DescribeInstances");
  form.add_list("InstanceId", r.instance_ids);
  add_filters(form, r.filters);
  if (r.max_results) form.add("MaxResults", *r.max_results);
  form.add_nonempty("NextToken", r.next_token);

  Ec2Response resp = ec2_call(caller_, form);
  Ec2XmlReader xml = reader(caller_, form);
  DescribeInstancesPage page;
  for (pugi::xml_node reservation : xml.items(resp.root, "reservationSet")) {
    for (pugi::xml_node item : xml.items(reservation, "instancesSet")) {
      page.instances.push_back(parse_instance(xml, item));
    }
  }
  page.next_token = xml.text_or_empty(resp.root, "nextToken");
  return page;
}

void Ec2Client::for_each_instance(DescribeInstancesRequest request, const std::function<bool(const Instance&)>& visit,
                                  int max_pages) {
  for (int page_no = 0;; ++page_no) {
    if (page_no >= max_pages) {
      throw AwsError(caller_.settings().service, "DescribeInstances", 0, "PaginationLimitExceeded",
                     "more than " + std::to_string(max_pages) + " pages");
    }
    DescribeInstancesPage page = describe_instances_page(request);
    for (const Instance& i : page.instances) {
      if (!visit(i)) return;
    }
    if (page.next_token.empty()) return;
    if (page.next_token == request.next_token) {
      throw AwsError(caller_.settings().service, "DescribeInstances", 0, "MalformedResponse",
                     "NextToken did not advance");
    }
    request.next_token = page.next_token;
  }
}

std::vector<Instance> Ec2Client::describe_instances(const DescribeInstancesRequest& request, int max_pages) {
  std::vector<Instance> out;
  for_each_instance(request, [&](const Instance& i) { out.push_back(i); return true; }, max_pages);
  return out;
}

// TerminateInstances, StopInstances and StartInstances all answer an `instancesSet` of state changes.
static std::vector<InstanceStateChange> ec2_state_changes(AwsCaller& caller, const Ec2Form& form) {
  Ec2Response resp = ec2_call(caller, form);
  Ec2XmlReader xml = reader(caller, form);
  std::vector<InstanceStateChange> out;
  for (pugi::xml_node item : xml.items(resp.root, "instancesSet")) {
    InstanceStateChange c;
    c.instance_id = xml.text(item, "instanceId");
    c.previous_state = parse_instance_state(xml, xml.child(item, "previousState"));
    c.current_state = parse_instance_state(xml, xml.child(item, "currentState"));
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<InstanceStateChange> Ec2Client::terminate_instances(const std::vector<std::string>& instance_ids) {
  Ec2Form form("TerminateInstances");
  form.add_list("InstanceId", instance_ids);
  return ec2_state_changes(caller_, form);
}

std::vector<InstanceStateChange> Ec2Client::stop_instances(const std::vector<std::string>& instance_ids, bool force) {
  Ec2Form form("StopInstances");
  form.add_list("InstanceId", instance_ids);
  if (force) form.add("Force", "true");
  return ec2_state_changes(caller_, form);
}

std::vector<InstanceStateChange> Ec2Client::start_instances(const std::vector<std::string>& instance_ids) {
  Ec2Form form("StartInstances");
  form.add_list("InstanceId", instance_ids);
  return ec2_state_changes(caller_, form);
}

void Ec2Client::create_tags(const std::vector<std::string>& resource_ids, const std::vector<Tag>& tags) {
  Ec2Form form("CreateTags");
  form.add_list("ResourceId", resource_ids);
  add_tags(form, "Tag", tags);
  Ec2Response resp = ec2_call(caller_, form);
  if (!reader(caller_, form).boolean(resp.root, "return", true)) {
    throw AwsError(caller_.settings().service, form.action(), 0, "Unsuccessful", "EC2 answered return=false");
  }
}

void Ec2Client::delete_tags(const std::vector<std::string>& resource_ids, const std::vector<std::string>& keys) {
  Ec2Form form("DeleteTags");
  form.add_list("ResourceId", resource_ids);
  for (size_t i = 0; i < keys.size(); ++i) form.add(form_key("Tag", i + 1, "Key"), keys[i]);
  Ec2Response resp = ec2_call(caller_, form);
  if (!reader(caller_, form).boolean(resp.root, "return", true)) {
    throw AwsError(caller_.settings().service, form.action(), 0, "Unsuccessful", "EC2 answered return=false");
  }
}

}  // namespace runpool::aws
