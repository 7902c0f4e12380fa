#include "common/aws/ec2_shapes.h"

#include <stdexcept>

namespace runpool::aws {

void add_tags(Ec2Form& form, const std::string& prefix, const std::vector<Tag>& tags) {
  for (size_t i = 0; i < tags.size(); ++i) {
    form.add(form_key(prefix, i + 1, "Key"), tags[i].key);
    form.add(form_key(prefix, i + 1, "Value"), tags[i].value);
  }
}

void add_tag_specifications(Ec2Form& form, const std::string& prefix, const std::vector<TagSpecification>& specs) {
  for (size_t i = 0; i < specs.size(); ++i) {
    form.add(form_key(prefix, i + 1, "ResourceType"), specs[i].resource_type);
    add_tags(form, form_key(prefix, i + 1, "Tag"), specs[i].tags);
  }
}

void add_filters(Ec2Form& form, const std::vector<Ec2Filter>& filters) {
  for (size_t i = 0; i < filters.size(); ++i) {
    form.add(form_key("Filter", i + 1, "Name"), filters[i].name);
    form.add_list(form_key("Filter", i + 1, "Value"), filters[i].values);
  }
}

void add_launch_template_ref(Ec2Form& form, const std::string& prefix, const LaunchTemplateRef& ref,
                             bool with_version) {
  if (ref.id.empty() == ref.name.empty()) {
    throw std::invalid_argument(form.action() + ": give a launch template id or a name, not both or neither");
  }
  auto name = [&](const char* member) { return prefix.empty() ? std::string(member) : form_key(prefix, member); };
  form.add_nonempty(name("LaunchTemplateId"), ref.id);
  form.add_nonempty(name("LaunchTemplateName"), ref.name);
  if (with_version) form.add_nonempty(name("Version"), ref.version);
}

InstanceState parse_instance_state(const Ec2XmlReader& xml, pugi::xml_node state) {
  InstanceState s;
  // EC2's code carries the state in its low byte; the high byte is for internal use.
  s.code = static_cast<int>(xml.integer(state, "code") & 0xff);
  s.name = xml.text(state, "name");
  return s;
}

Instance parse_instance(const Ec2XmlReader& xml, pugi::xml_node item) {
  Instance i;
  i.instance_id = xml.text(item, "instanceId");
  i.instance_type = xml.text_or_empty(item, "instanceType");
  i.image_id = xml.text_or_empty(item, "imageId");
  i.state = parse_instance_state(xml, xml.child(item, "instanceState"));
  i.launch_time = xml.optional_time(item, "launchTime");
  // instanceLifecycle is present only for spot (and scheduled) instances.
  i.lifecycle = xml.optional_text(item, "instanceLifecycle").value_or(kLifecycleOnDemand);
  if (i.lifecycle.empty()) i.lifecycle = kLifecycleOnDemand;
  i.subnet_id = xml.text_or_empty(item, "subnetId");
  i.private_ip_address = xml.text_or_empty(item, "privateIpAddress");
  i.availability_zone = xml.text_or_empty(item.child("placement"), "availabilityZone");
  i.tags = xml.tags(item);
  return i;
}

std::optional<std::string> Instance::tag(const std::string& key) const {
  for (const Tag& t : tags) {
    if (t.key == key) return t.value;
  }
  return std::nullopt;
}

std::vector<std::string> CreateFleetResult::instance_ids() const {
  std::vector<std::string> out;
  for (const FleetInstances& f : instances) out.insert(out.end(), f.instance_ids.begin(), f.instance_ids.end());
  return out;
}

}  // namespace runpool::aws
