// Typed reads from EC2's XML answers. A missing required element or a value of the wrong shape
// becomes AwsError "MalformedResponse" naming the element's path, never a crash or a silent
// default. Lists are EC2's `<nameSet><item>…</item></nameSet>` form; an absent list is empty.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <pugixml.hpp>

#include "common/clock.h"

namespace runpool::aws {

struct Tag {
  std::string key;
  std::string value;
  bool operator==(const Tag&) const = default;
};

class Ec2XmlReader {
 public:
  Ec2XmlReader(std::string service, std::string operation)
      : service_(std::move(service)), operation_(std::move(operation)) {}

  // Required, non-empty text of <name> under `parent`.
  std::string text(pugi::xml_node parent, const char* name) const;
  // Text of <name>, or nullopt when the element is absent.
  std::optional<std::string> optional_text(pugi::xml_node parent, const char* name) const;
  // Text of <name>, or "" when absent.
  std::string text_or_empty(pugi::xml_node parent, const char* name) const;
  int64_t integer(pugi::xml_node parent, const char* name) const;
  std::optional<int64_t> optional_integer(pugi::xml_node parent, const char* name) const;
  // "true"/"false"; `fallback` when absent.
  bool boolean(pugi::xml_node parent, const char* name, bool fallback) const;
  std::optional<WallTime> optional_time(pugi::xml_node parent, const char* name) const;
  // The <item> children of <name>; empty when <name> is absent.
  std::vector<pugi::xml_node> items(pugi::xml_node parent, const char* name) const;
  // <name><item><key/><value/></item>…</name>
  std::vector<Tag> tags(pugi::xml_node parent, const char* name = "tagSet") const;
  // The element itself, required.
  pugi::xml_node child(pugi::xml_node parent, const char* name) const;

  [[noreturn]] void fail(pugi::xml_node at, const std::string& what) const;

 private:
  std::string service_, operation_;
};

}  // namespace runpool::aws
