#include "common/github/link_header.h"
#include "common/text.h"

#include <cctype>

namespace runpool::github {
namespace {

// The blanks a Link header may carry around its parts.
constexpr std::string_view kBlanks = " \t\r\n";
bool is_space(char c) { return kBlanks.find(c) != std::string_view::npos; }
std::string_view trim(std::string_view s) { return text::trim(s, kBlanks); }

class Scanner {
 public:
  explicit Scanner(std::string_view s) : s_(s) {}
  bool done() const { return i_ >= s_.size(); }
  char peek() const { return done() ? '\0' : s_[i_]; }
  void skip_spaces() { while (!done() && is_space(s_[i_])) ++i_; }
  void advance() { ++i_; }

  // Moves past the next comma that separates entries (not one inside <…> or "…").
  void skip_entry() {
    while (!done()) {
      char c = s_[i_];
      if (c == ',') { ++i_; return; }
      if (c == '<') {
        size_t close = s_.find('>', i_ + 1);
        i_ = close == std::string_view::npos ? s_.size() : close + 1;
      } else if (c == '"') {
        read_quoted();
      } else {
        ++i_;
      }
    }
  }

  // At '<': the URI up to '>', or nullopt when it never closes.
  std::optional<std::string_view> read_uri() {
    size_t close = s_.find('>', i_ + 1);
    if (close == std::string_view::npos) {
      i_ = s_.size();
      return std::nullopt;
    }
    std::string_view uri = s_.substr(i_ + 1, close - i_ - 1);
    i_ = close + 1;
    return trim(uri);
  }

  // A parameter name: up to '=', ';', ',' or a space.
  std::string_view read_name() {
    size_t start = i_;
    while (!done() && s_[i_] != '=' && s_[i_] != ';' && s_[i_] != ',' && !is_space(s_[i_])) ++i_;
    return s_.substr(start, i_ - start);
  }

  // At '"': a quoted string with backslash escapes; an unterminated one runs to the end.
  std::string read_quoted() {
    std::string out;
    ++i_;
    while (!done() && s_[i_] != '"') {
      if (s_[i_] == '\\' && i_ + 1 < s_.size()) ++i_;
      out += s_[i_++];
    }
    if (!done()) ++i_;
    return out;
  }

  // An unquoted value: up to ';' or ','.
  std::string read_token() {
    size_t start = i_;
    while (!done() && s_[i_] != ';' && s_[i_] != ',') ++i_;
    return std::string(trim(s_.substr(start, i_ - start)));
  }

 private:
  std::string_view s_;
  size_t i_ = 0;
};

std::vector<std::string> split_rels(const std::string& value) {
  std::vector<std::string> rels;
  std::string current;
  for (char c : value + " ") {
    if (is_space(c)) {
      if (!current.empty()) rels.push_back(text::lower(current));
      current.clear();
    } else {
      current += c;
    }
  }
  return rels;
}

}  // namespace

std::vector<LinkEntry> parse_link_header(std::string_view header) {
  std::vector<LinkEntry> entries;
  Scanner sc(header);
  while (true) {
    while (!sc.done() && (is_space(sc.peek()) || sc.peek() == ',')) sc.advance();
    if (sc.done()) break;
    if (sc.peek() != '<') {  // garbage where an entry should start
      sc.skip_entry();
      continue;
    }
    auto uri = sc.read_uri();
    if (!uri) break;
    LinkEntry entry{std::string(*uri), {}};
    bool rel_seen = false;
    while (true) {
      sc.skip_spaces();
      if (sc.done() || sc.peek() == ',') break;
      if (sc.peek() != ';') {  // junk after a parameter: drop the rest of this entry
        sc.skip_entry();
        break;
      }
      sc.advance();
      sc.skip_spaces();
      std::string name = text::lower(sc.read_name());
      sc.skip_spaces();
      std::string value;
      if (sc.peek() == '=') {
        sc.advance();
        sc.skip_spaces();
        value = sc.peek() == '"' ? sc.read_quoted() : sc.read_token();
      }
      if (name == "rel" && !rel_seen) {  // RFC 8288: only the first rel counts
        rel_seen = true;
        entry.rels = split_rels(value);
      }
    }
    if (!entry.url.empty()) entries.push_back(std::move(entry));
  }
  return entries;
}

std::optional<std::string> find_link(std::string_view header, std::string_view rel) {
  std::string wanted = text::lower(rel);
  for (const LinkEntry& e : parse_link_header(header)) {
    for (const std::string& r : e.rels) {
      if (r == wanted) return e.url;
    }
  }
  return std::nullopt;
}

}  // namespace runpool::github
