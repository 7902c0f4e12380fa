// EC2's XML answers (common/aws/ec2_xml.*, ec2_shapes.*, ec2_query.*): any body read as an error
// answer, and as DescribeInstances / RunInstances / TerminateInstances results. A malformed answer
// is AwsError naming the element, never a crash or an instance half-read.
#include <pugixml.hpp>

#include "common/aws/aws_error.h"
#include "common/aws/ec2_query.h"
#include "common/aws/ec2_shapes.h"
#include "common/aws/ec2_xml.h"
#include "common/http.h"
#include "tests/fuzz/fuzz_support.h"

using namespace runpool;
using namespace runpool::aws;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  HttpResponse response;
  response.status = 400;
  response.body = fuzz::text(data, size);
  (void)parse_ec2_error(response);

  pugi::xml_document doc;
  if (!doc.load_buffer(response.body.data(), response.body.size())) return 0;
  pugi::xml_node root = doc.first_child();
  Ec2XmlReader xml("ec2", "Fuzz");
  try {
    for (pugi::xml_node reservation : xml.items(root, "reservationSet")) {
      for (pugi::xml_node item : xml.items(reservation, "instancesSet")) {
        Instance i = parse_instance(xml, item);
        FUZZ_CHECK(!i.instance_id.empty());
        (void)i.tag("runpool:pool");
      }
    }
  } catch (const AwsError&) {
  }
  try {
    for (pugi::xml_node item : xml.items(root, "instancesSet")) {
      (void)parse_instance_state(xml, xml.child(item, "currentState"));
      (void)parse_instance_state(xml, xml.child(item, "previousState"));
    }
  } catch (const AwsError&) {
  }
  try {
    (void)xml.optional_integer(root, "maxResults");
    (void)xml.optional_time(root, "launchTime");
    (void)xml.boolean(root, "return", false);
    (void)xml.tags(root);
    (void)xml.optional_text(root, "nextToken");
  } catch (const AwsError&) {
  }
  return 0;
}
