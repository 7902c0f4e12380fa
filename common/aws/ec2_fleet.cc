// CreateFleet of type instant: one synchronous call that launches what it can across the given
// launch template overrides and reports the rest as errors.
#include "common/aws/ec2.h"
#include "common/aws/ec2_query.h"
#include "common/aws/ec2_shapes.h"

namespace runpool::aws {
namespace {

void add_instance_requirements(Ec2Form& form, const std::string& prefix, const InstanceRequirements& r) {
  form.add(form_key(prefix, "VCpuCount", "Min"), r.vcpu_min);
  form.add_optional(form_key(prefix, "VCpuCount", "Max"), r.vcpu_max);
  form.add(form_key(prefix, "MemoryMiB", "Min"), r.memory_mib_min);
  form.add_optional(form_key(prefix, "MemoryMiB", "Max"), r.memory_mib_max);
  form.add_list(form_key(prefix, "AllowedInstanceType"), r.allowed_instance_types);
}

Ec2Form create_fleet_form(const CreateFleetRequest& r) {
  Ec2Form form("CreateFleet");
  form.add("Type", "instant");
  for (size_t i = 0; i < r.launch_template_configs.size(); ++i) {
    const FleetLaunchTemplateConfig& config = r.launch_template_configs[i];
    const std::string prefix = form_key("LaunchTemplateConfigs", i + 1);
    add_launch_template_ref(form, form_key(prefix, "LaunchTemplateSpecification"), config.launch_template);
    for (size_t j = 0; j < config.overrides.size(); ++j) {
      const FleetOverride& o = config.overrides[j];
      const std::string override_prefix = form_key(prefix, "Overrides", j + 1);
      form.add_nonempty(form_key(override_prefix, "InstanceType"), o.instance_type);
      form.add_nonempty(form_key(override_prefix, "SubnetId"), o.subnet_id);
      form.add_nonempty(form_key(override_prefix, "ImageId"), o.image_id);
      if (o.instance_requirements) {
        add_instance_requirements(form, form_key(override_prefix, "InstanceRequirements"), *o.instance_requirements);
      }
    }
  }
  form.add("TargetCapacitySpecification.TotalTargetCapacity", r.total_target_capacity);
  form.add_optional("TargetCapacitySpecification.OnDemandTargetCapacity", r.on_demand_target_capacity);
  form.add_optional("TargetCapacitySpecification.SpotTargetCapacity", r.spot_target_capacity);
  form.add_nonempty("TargetCapacitySpecification.DefaultTargetCapacityType", r.default_target_capacity_type);
  form.add_nonempty("SpotOptions.AllocationStrategy", r.spot_allocation_strategy);
  form.add_nonempty("OnDemandOptions.AllocationStrategy", r.on_demand_allocation_strategy);
  add_tag_specifications(form, "TagSpecification", r.tag_specifications);
  form.add_nonempty("ClientToken", r.client_token);
  return form;
}

}  // namespace

CreateFleetResult Ec2Client::create_fleet(const CreateFleetRequest& request) {
  Ec2Form form = create_fleet_form(request);
  Ec2Response resp = ec2_call(caller_, form);
  Ec2XmlReader xml(caller_.settings().service, form.action());

  // Lenient where leniency keeps launched instances in view: a missing fleet id must not hide
  // the instance ids that came with it.
  CreateFleetResult out;
  out.fleet_id = xml.text_or_empty(resp.root, "fleetId");
  for (pugi::xml_node item : xml.items(resp.root, "fleetInstanceSet")) {
    pugi::xml_node overrides = item.child("launchTemplateAndOverrides").child("overrides");
    FleetInstances f;
    for (pugi::xml_node id : xml.items(item, "instanceIds")) {
      std::string text = id.text().get();
      if (text.empty()) xml.fail(id, "empty instance id");
      f.instance_ids.push_back(std::move(text));
    }
    f.instance_type = xml.text_or_empty(item, "instanceType");
    if (f.instance_type.empty()) f.instance_type = xml.text_or_empty(overrides, "instanceType");
    f.lifecycle = xml.text_or_empty(item, "lifecycle");
    f.subnet_id = xml.text_or_empty(item, "subnetId");
    if (f.subnet_id.empty()) f.subnet_id = xml.text_or_empty(overrides, "subnetId");
    out.instances.push_back(std::move(f));
  }
  for (pugi::xml_node item : xml.items(resp.root, "errorSet")) {
    pugi::xml_node overrides = item.child("launchTemplateAndOverrides").child("overrides");
    FleetError e;
    e.code = xml.text_or_empty(item, "errorCode");
    e.message = xml.text_or_empty(item, "errorMessage");
    e.lifecycle = xml.text_or_empty(item, "lifecycle");
    e.instance_type = xml.text_or_empty(overrides, "instanceType");
    e.subnet_id = xml.text_or_empty(overrides, "subnetId");
    out.errors.push_back(std::move(e));
  }
  return out;
}

}  // namespace runpool::aws
