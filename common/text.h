// ASCII text helpers the parsers share (header names, config lines, URLs, Link headers, INI
// files). Every format runpool reads is ASCII where these apply, so no locale is consulted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace runpool::text {

// The characters C's isspace() takes in the "C" locale.
inline constexpr std::string_view kSpace = " \t\n\v\f\r";

// `s` with A-Z turned to a-z; every other byte as it was.
std::string lower(std::string_view s);

// `s` without the leading and trailing characters that are in `chars` (each format names its own
// whitespace: a config line's is " \t\r", an HTTP header's " \t").
std::string_view trim(std::string_view s, std::string_view chars = kSpace);

// At most `max` bytes of `s` for an error message, control characters as spaces, "…" when cut.
std::string excerpt(std::string_view s, size_t max);

// A whole decimal integer: an optional '-' and digits, nothing else (no blanks, no '+'), within
// int64_t; else nullopt.
std::optional<int64_t> parse_int(std::string_view s);

}  // namespace runpool::text
