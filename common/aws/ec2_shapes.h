// Form writers and XML readers for the shapes several EC2 calls share: tags, tag specifications,
// filters, launch template references and instances.
#pragma once

#include <string>
#include <vector>

#include "common/aws/ec2_query.h"
#include "common/aws/ec2_types.h"
#include "common/aws/ec2_xml.h"

namespace runpool::aws {

// prefix.N.Key / prefix.N.Value
void add_tags(Ec2Form& form, const std::string& prefix, const std::vector<Tag>& tags);
// prefix.N.ResourceType, prefix.N.Tag.M.Key / .Value
void add_tag_specifications(Ec2Form& form, const std::string& prefix, const std::vector<TagSpecification>& specs);
// Filter.N.Name, Filter.N.Value.M
void add_filters(Ec2Form& form, const std::vector<Ec2Filter>& filters);
// prefix.LaunchTemplateId | prefix.LaunchTemplateName, prefix.Version. Throws std::invalid_argument
// unless exactly one of id and name is given.
void add_launch_template_ref(Ec2Form& form, const std::string& prefix, const LaunchTemplateRef& ref,
                             bool with_version = true);

InstanceState parse_instance_state(const Ec2XmlReader& xml, pugi::xml_node state);
// One <item> of an instancesSet.
Instance parse_instance(const Ec2XmlReader& xml, pugi::xml_node item);

}  // namespace runpool::aws
