// A value that must never reach a log, an error message or argv in clear: tokens, keys,
// registration credentials. Formatting it (fmt/spdlog or ostream) prints a fixed mask; the only
// way to the clear text is an explicit reveal(), which reviewers can grep for.
#pragma once

#include <ostream>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace runpool {

class Secret {
 public:
  Secret() = default;
  explicit Secret(std::string value) : value_(std::move(value)) {}

  // The clear text. Call only where the secret leaves the process on purpose (an HTTP header,
  // a file with mode 0600, a request body).
  const std::string& reveal() const { return value_; }
  bool empty() const { return value_.empty(); }
  bool operator==(const Secret& other) const = default;

  static constexpr const char* kMask = "<redacted>";

  // `text` with every occurrence of this secret replaced by the mask (an error body that echoes
  // the request's credentials).
  std::string masked_in(std::string text) const {
    if (value_.empty()) return text;
    for (size_t pos = text.find(value_); pos != std::string::npos; pos = text.find(value_, pos)) {
      text.replace(pos, value_.size(), kMask);
      pos += std::char_traits<char>::length(kMask);
    }
    return text;
  }

 private:
  std::string value_;
};

inline std::ostream& operator<<(std::ostream& os, const Secret&) { return os << Secret::kMask; }

}  // namespace runpool

template <>
struct fmt::formatter<runpool::Secret> : fmt::formatter<std::string_view> {
  template <typename Ctx>
  auto format(const runpool::Secret&, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(runpool::Secret::kMask, ctx);
  }
};
