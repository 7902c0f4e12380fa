// Launch templates: create, version, set the default, describe. Templates are immutable; a change
// is a new version, made the default once it exists.
#include <stdexcept>

#include "common/aws/ec2.h"
#include "common/aws/ec2_query.h"
#include "common/aws/ec2_shapes.h"

namespace runpool::aws {
namespace {

void add_launch_template_data(Ec2Form& form, const LaunchTemplateData& d) {
  const std::string p = "LaunchTemplateData";
  form.add_nonempty(form_key(p, "ImageId"), d.image_id);
  form.add_nonempty(form_key(p, "InstanceType"), d.instance_type);
  if (!d.user_data.empty()) form.add(form_key(p, "UserData"), base64_encode(d.user_data));
  form.add_nonempty(form_key(p, "IamInstanceProfile", "Name"), d.iam_instance_profile_name);
  form.add_nonempty(form_key(p, "IamInstanceProfile", "Arn"), d.iam_instance_profile_arn);
  if (d.require_imdsv2) form.add(form_key(p, "MetadataOptions", "HttpTokens"), "required");
  if (d.instance_metadata_tags) form.add(form_key(p, "MetadataOptions", "InstanceMetadataTags"), "enabled");
  if (d.metadata_hop_limit > 0) {
    form.add(form_key(p, "MetadataOptions", "HttpPutResponseHopLimit"), std::to_string(d.metadata_hop_limit));
  }
  form.add_nonempty(form_key(p, "MetadataOptions", "HttpEndpoint"), d.metadata_http_endpoint);
  form.add_nonempty(form_key(p, "MetadataOptions", "HttpProtocolIpv6"), d.metadata_http_protocol_ipv6);
  add_tag_specifications(form, form_key(p, "TagSpecification"), d.tag_specifications);
  form.add_list(form_key(p, "SecurityGroupId"), d.security_group_ids);
  form.add_nonempty(form_key(p, "InstanceInitiatedShutdownBehavior"), d.instance_initiated_shutdown_behavior);
  for (size_t i = 0; i < d.block_devices.size(); ++i) {
    const BlockDevice& b = d.block_devices[i];
    const std::string bd = p + ".BlockDeviceMapping." + std::to_string(i + 1);
    form.add(bd + ".DeviceName", b.device_name);
    if (b.volume_size_gib > 0) form.add(bd + ".Ebs.VolumeSize", std::to_string(b.volume_size_gib));
    form.add_nonempty(bd + ".Ebs.VolumeType", b.volume_type);
    form.add(bd + ".Ebs.DeleteOnTermination", b.delete_on_termination ? "true" : "false");
  }
}

LaunchTemplate parse_launch_template(const Ec2XmlReader& xml, pugi::xml_node node) {
  LaunchTemplate t;
  t.id = xml.text(node, "launchTemplateId");
  t.name = xml.text_or_empty(node, "launchTemplateName");
  t.default_version = xml.optional_integer(node, "defaultVersionNumber").value_or(0);
  t.latest_version = xml.optional_integer(node, "latestVersionNumber").value_or(0);
  t.create_time = xml.optional_time(node, "createTime");
  t.tags = xml.tags(node);
  return t;
}

LaunchTemplateData parse_launch_template_data(const Ec2XmlReader& xml, pugi::xml_node d) {
  LaunchTemplateData data;
  data.image_id = xml.text_or_empty(d, "imageId");
  data.instance_type = xml.text_or_empty(d, "instanceType");
  if (auto encoded = xml.optional_text(d, "userData")) {
    auto decoded = base64_decode(*encoded);
    if (!decoded) xml.fail(d.child("userData"), "not base64");
    data.user_data = std::move(*decoded);
  }
  pugi::xml_node profile = d.child("iamInstanceProfile");
  data.iam_instance_profile_name = xml.text_or_empty(profile, "name");
  data.iam_instance_profile_arn = xml.text_or_empty(profile, "arn");
  pugi::xml_node metadata = d.child("metadataOptions");
  data.require_imdsv2 = xml.text_or_empty(metadata, "httpTokens") == "required";
  data.instance_metadata_tags = xml.text_or_empty(metadata, "instanceMetadataTags") == "enabled";
  data.metadata_hop_limit = xml.optional_integer(metadata, "httpPutResponseHopLimit").value_or(0);
  data.metadata_http_endpoint = xml.text_or_empty(metadata, "httpEndpoint");
  data.metadata_http_protocol_ipv6 = xml.text_or_empty(metadata, "httpProtocolIpv6");
  for (pugi::xml_node spec : xml.items(d, "tagSpecificationSet")) {
    data.tag_specifications.push_back(TagSpecification{xml.text(spec, "resourceType"), xml.tags(spec)});
  }
  for (pugi::xml_node sg : xml.items(d, "securityGroupIdSet")) data.security_group_ids.push_back(sg.text().get());
  data.instance_initiated_shutdown_behavior = xml.text_or_empty(d, "instanceInitiatedShutdownBehavior");
  for (pugi::xml_node m : xml.items(d, "blockDeviceMappingSet")) {
    BlockDevice b;
    b.device_name = xml.text_or_empty(m, "deviceName");
    pugi::xml_node ebs = m.child("ebs");
    b.volume_size_gib = xml.optional_integer(ebs, "volumeSize").value_or(0);
    b.volume_type = xml.text_or_empty(ebs, "volumeType");
    b.delete_on_termination = xml.text_or_empty(ebs, "deleteOnTermination") != "false";
    data.block_devices.push_back(std::move(b));
  }
  return data;
}

LaunchTemplateVersion parse_launch_template_version(const Ec2XmlReader& xml, pugi::xml_node node) {
  LaunchTemplateVersion v;
  v.launch_template_id = xml.text(node, "launchTemplateId");
  v.launch_template_name = xml.text_or_empty(node, "launchTemplateName");
  v.version_number = xml.integer(node, "versionNumber");
  v.default_version = xml.boolean(node, "defaultVersion", false);
  v.version_description = xml.text_or_empty(node, "versionDescription");
  v.create_time = xml.optional_time(node, "createTime");
  v.data = parse_launch_template_data(xml, node.child("launchTemplateData"));
  return v;
}

// Calls `page` with each NextToken ("" first) until the answer has none, at most `max_pages` times.
void paginate(AwsCaller& caller, const std::string& operation, int max_pages,
              const std::function<std::string(const std::string& next_token)>& page) {
  std::string token;
  for (int n = 0; n < max_pages; ++n) {
    std::string next = page(token);
    if (next.empty()) return;
    if (next == token) {
      throw AwsError(caller.settings().service, operation, 0, "MalformedResponse", "NextToken did not advance");
    }
    token = std::move(next);
  }
  throw AwsError(caller.settings().service, operation, 0, "PaginationLimitExceeded",
                 "more than " + std::to_string(max_pages) + " pages");
}

}  // namespace

bool is_launch_template_not_found(const std::string& code) {
  return code.rfind("InvalidLaunchTemplateName.NotFound", 0) == 0 ||
         code.rfind("InvalidLaunchTemplateId.NotFound", 0) == 0;
}

LaunchTemplate Ec2Client::create_launch_template(const CreateLaunchTemplateRequest& r) {
  Ec2Form form("CreateLaunchTemplate");
  form.add("LaunchTemplateName", r.name);
  add_launch_template_data(form, r.data);
  form.add_nonempty("VersionDescription", r.version_description);
  if (!r.tags.empty()) add_tag_specifications(form, "TagSpecification", {TagSpecification{"launch-template", r.tags}});
  form.add_nonempty("ClientToken", r.client_token);
  Ec2Response resp = ec2_call(caller_, form);
  Ec2XmlReader xml(caller_.settings().service, form.action());
  return parse_launch_template(xml, xml.child(resp.root, "launchTemplate"));
}

LaunchTemplateVersion Ec2Client::create_launch_template_version(const CreateLaunchTemplateVersionRequest& r) {
  Ec2Form form("CreateLaunchTemplateVersion");
  add_launch_template_ref(form, "", r.launch_template, /*with_version=*/false);
  form.add_nonempty("SourceVersion", r.source_version);
  add_launch_template_data(form, r.data);
  form.add_nonempty("VersionDescription", r.version_description);
  form.add_nonempty("ClientToken", r.client_token);
  Ec2Response resp = ec2_call(caller_, form);
  Ec2XmlReader xml(caller_.settings().service, form.action());
  return parse_launch_template_version(xml, xml.child(resp.root, "launchTemplateVersion"));
}

LaunchTemplate Ec2Client::set_default_launch_template_version(const LaunchTemplateRef& ref) {
  if (ref.version.empty()) throw std::invalid_argument("ModifyLaunchTemplate: the new default version is required");
  Ec2Form form("ModifyLaunchTemplate");
  add_launch_template_ref(form, "", ref, /*with_version=*/false);
  form.add("SetDefaultVersion", ref.version);
  Ec2Response resp = ec2_call(caller_, form);
  Ec2XmlReader xml(caller_.settings().service, form.action());
  return parse_launch_template(xml, xml.child(resp.root, "launchTemplate"));
}

std::vector<LaunchTemplate> Ec2Client::describe_launch_templates(const std::vector<std::string>& names,
                                                                 const std::vector<std::string>& ids, int max_pages) {
  std::vector<LaunchTemplate> out;
  paginate(caller_, "DescribeLaunchTemplates", max_pages, [&](const std::string& token) {
    Ec2Form form("DescribeLaunchTemplates");
    form.add_list("LaunchTemplateName", names);
    form.add_list("LaunchTemplateId", ids);
    form.add_nonempty("NextToken", token);
    Ec2Response resp = ec2_call(caller_, form);
    Ec2XmlReader xml(caller_.settings().service, form.action());
    for (pugi::xml_node item : xml.items(resp.root, "launchTemplates")) out.push_back(parse_launch_template(xml, item));
    return xml.text_or_empty(resp.root, "nextToken");
  });
  return out;
}

std::optional<LaunchTemplate> Ec2Client::describe_launch_template(const LaunchTemplateRef& ref) {
  if (ref.id.empty() == ref.name.empty()) {
    throw std::invalid_argument("DescribeLaunchTemplates: give a launch template id or a name, not both or neither");
  }
  std::vector<LaunchTemplate> found;
  try {
    found = ref.id.empty() ? describe_launch_templates({ref.name}, {}) : describe_launch_templates({}, {ref.id});
  } catch (const AwsError& e) {
    if (is_launch_template_not_found(e.code())) return std::nullopt;
    throw;
  }
  if (found.empty()) return std::nullopt;
  return found.front();
}

std::vector<LaunchTemplateVersion> Ec2Client::describe_launch_template_versions(const LaunchTemplateRef& ref,
                                                                                const std::vector<std::string>& versions,
                                                                                int max_pages) {
  std::vector<LaunchTemplateVersion> out;
  paginate(caller_, "DescribeLaunchTemplateVersions", max_pages, [&](const std::string& token) {
    Ec2Form form("DescribeLaunchTemplateVersions");
    add_launch_template_ref(form, "", ref, /*with_version=*/false);
    form.add_list("LaunchTemplateVersion", versions);
    form.add_nonempty("NextToken", token);
    Ec2Response resp = ec2_call(caller_, form);
    Ec2XmlReader xml(caller_.settings().service, form.action());
    for (pugi::xml_node item : xml.items(resp.root, "launchTemplateVersionSet")) {
      out.push_back(parse_launch_template_version(xml, item));
    }
    return xml.text_or_empty(resp.root, "nextToken");
  });
  return out;
}

}  // namespace runpool::aws
