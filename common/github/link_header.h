// RFC 8288 Link headers as GitHub sends them for pagination:
//   <https://api.github.com/…&page=2>; rel="next", <https://api.github.com/…&page=5>; rel="last"
// A pure parser: odd spacing, unquoted or multi-valued rel, extra parameters, commas inside the
// URL and garbage between entries are all tolerated; an unparseable entry is skipped.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace runpool::github {

struct LinkEntry {
  std::string url;
  std::vector<std::string> rels;  // lower-cased; rel="next last" gives two
};

std::vector<LinkEntry> parse_link_header(std::string_view header);

// The URL of the first entry whose rels include `rel` (case-insensitive), if any.
std::optional<std::string> find_link(std::string_view header, std::string_view rel);
inline std::optional<std::string> next_link(std::string_view header) { return find_link(header, "next"); }

}  // namespace runpool::github
