#include "common/aws/ec2_xml.h"

#include <cerrno>
#include <cstdlib>

#include "common/aws/aws_error.h"

namespace runpool::aws {

void Ec2XmlReader::fail(pugi::xml_node at, const std::string& what) const {
  std::string where = at ? at.path() : std::string("(document)");
  throw AwsError(service_, operation_, 0, "MalformedResponse", where + ": " + what);
}

pugi::xml_node Ec2XmlReader::child(pugi::xml_node parent, const char* name) const {
  pugi::xml_node node = parent.child(name);
  if (!node) fail(parent, std::string("missing <") + name + ">");
  return node;
}

std::optional<std::string> Ec2XmlReader::optional_text(pugi::xml_node parent, const char* name) const {
  pugi::xml_node node = parent.child(name);
  if (!node) return std::nullopt;
  if (node.first_child() && node.first_child().type() == pugi::node_element) {
    fail(node, "expected text, found elements");
  }
  return std::string(node.text().get());
}

std::string Ec2XmlReader::text_or_empty(pugi::xml_node parent, const char* name) const {
  return optional_text(parent, name).value_or("");
}

std::string Ec2XmlReader::text(pugi::xml_node parent, const char* name) const {
  auto value = optional_text(parent, name);
  if (!value) fail(parent, std::string("missing <") + name + ">");
  if (value->empty()) fail(parent.child(name), "empty");
  return *value;
}

std::optional<int64_t> Ec2XmlReader::optional_integer(pugi::xml_node parent, const char* name) const {
  auto value = optional_text(parent, name);
  if (!value) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(value->c_str(), &end, 10);
  if (value->empty() || *end != '\0' || errno == ERANGE) fail(parent.child(name), "not an integer: '" + *value + "'");
  return v;
}

int64_t Ec2XmlReader::integer(pugi::xml_node parent, const char* name) const {
  auto v = optional_integer(parent, name);
  if (!v) fail(parent, std::string("missing <") + name + ">");
  return *v;
}

bool Ec2XmlReader::boolean(pugi::xml_node parent, const char* name, bool fallback) const {
  auto value = optional_text(parent, name);
  if (!value) return fallback;
  if (*value == "true") return true;
  if (*value == "false") return false;
  fail(parent.child(name), "not a boolean: '" + *value + "'");
}

std::optional<WallTime> Ec2XmlReader::optional_time(pugi::xml_node parent, const char* name) const {
  auto value = optional_text(parent, name);
  if (!value) return std::nullopt;
  WallTime t;
  if (!parse_iso8601(*value, &t)) fail(parent.child(name), "not an ISO 8601 time: '" + *value + "'");
  return t;
}

std::vector<pugi::xml_node> Ec2XmlReader::items(pugi::xml_node parent, const char* name) const {
  std::vector<pugi::xml_node> out;
  pugi::xml_node list = parent.child(name);
  for (pugi::xml_node item : list.children()) {
    if (item.type() != pugi::node_element) continue;
    if (std::string_view(item.name()) != "item") fail(item, "expected <item> in a list");
    out.push_back(item);
  }
  return out;
}

std::vector<Tag> Ec2XmlReader::tags(pugi::xml_node parent, const char* name) const {
  std::vector<Tag> out;
  for (pugi::xml_node item : items(parent, name)) out.push_back(Tag{text(item, "key"), text_or_empty(item, "value")});
  return out;
}

}  // namespace runpool::aws
