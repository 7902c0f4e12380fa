// The pool's launch template: which of its fields runpool owns, how a new version keeps what the
// operator put there, and how far a template has drifted from the configuration. Pure functions;
// `runpoolctl init` (controller/init.cc) writes versions and Ec2Compute checks before launching.
//
// runpool owns: the user data (the agent and its configuration), the instance profile, the
// instance-metadata options it relies on (IMDSv2 required, hop limit 1 so containers on the host
// cannot reach IMDS through it, tags in metadata), terminate on OS shutdown, the pool's tags on
// instances and the operator's extra tags on instances and volumes, and — when configured — the
// AMI, the security groups and the root volume's size and type. The default Name tag is set by
// each version runpool makes but is not checked as drift: a template made elsewhere (the
// CloudFormation stack's) or renamed in the console still launches. Everything else (key pair,
// network interfaces, other block devices, other tags, other metadata options) is the operator's
// and survives every version runpool makes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/aws/ec2_types.h"
#include "controller/settings.h"

namespace runpool::controller {

// The fields runpool owns, rendered from the settings (the user data from its template file).
// Instances are named (tag Name) default_instance_name(s) unless instance_tags names them.
aws::LaunchTemplateData launch_template_data(const Settings& s);
std::string default_instance_name(const Settings& s);

// A digest of the owned fields, kept in the version description ("runpool <digest>"): an
// unchanged configuration is told from a changed one without relying on how EC2 echoes fields.
std::string launch_template_fingerprint(const aws::LaunchTemplateData& owned);

// The data of a new version made from `current` (the template's default version): runpool's
// fields set, the operator's kept. EC2 copies every field of the source version that the new
// version does not give, but a field given replaces the source's whole (all tag specifications,
// all metadata options, all block devices): so those are merged here, key by key.
aws::LaunchTemplateData merge_into_current(const aws::LaunchTemplateData& owned, const aws::LaunchTemplateData& current);

// What in `actual` (a template's default version) differs from the owned fields: one line per
// difference, naming the field; empty when the template launches what the configuration says.
std::vector<std::string> launch_template_drift(const aws::LaunchTemplateData& owned, const aws::LaunchTemplateData& actual);

}  // namespace runpool::controller
