// The numbered install paths of docs/install.md, as the newcomer test reads them: pure functions
// over the Markdown text. A path starts at `<!-- newcomer-path: STYLE -->` and ends at the next
// heading; its steps are the list items `N. ` at the line's start; each step carries one or more
// `<!-- newcomer: STYLE N MODE [DETAIL] -->` markers (hidden by Markdown renderers), and a marker
// whose mode needs commands takes the fenced code block that follows it. The counts the doc states
// (`**STYLE style: N steps**` in the overview, `**N steps**` in the path's own section) must be
// the number of steps.
#pragma once

#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace runpool::controller::e2e {

struct DocStep {
  int number = 0;
  std::string mode;    // run, stack, job, elsewhere, not-local
  std::string detail;  // elsewhere: the ctest that covers it; not-local: why
  std::string block;   // the fenced block after the marker, its fence's indentation removed
};

struct DocPath {
  std::string style;
  std::vector<int> stated_counts;  // every count the doc states for the style
  int steps = 0;                   // numbered list items of the path
  std::vector<DocStep> markers;    // in the order they appear
  std::vector<std::string> errors;
};

inline std::vector<std::string> doc_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// The fenced block starting at or after line `i` (only blank lines may come before it), dedented.
inline std::string fenced_block_after(const std::vector<std::string>& lines, size_t i, std::string& error) {
  static const std::regex open(R"(^( *)```[A-Za-z0-9_-]*\s*$)");
  while (i < lines.size() && lines[i].find_first_not_of(' ') == std::string::npos) ++i;
  std::smatch m;
  if (i >= lines.size() || !std::regex_match(lines[i], m, open)) {
    error = "no fenced code block follows the marker";
    return "";
  }
  const size_t indent = m[1].length();
  std::string body;
  for (++i; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.compare(0, indent + 3, std::string(indent, ' ') + "```") == 0) return body;
    body += (l.size() >= indent && l.find_first_not_of(' ') >= indent ? l.substr(indent) : l) + "\n";
  }
  error = "the fenced code block is not closed";
  return "";
}

inline DocPath read_doc_path(const std::string& text, const std::string& style) {
  DocPath p;
  p.style = style;
  const std::vector<std::string> lines = doc_lines(text);
  const std::regex overview("\\*\\*" + style + " style: ([0-9]+) steps\\*\\*");
  for (std::sregex_iterator it(text.begin(), text.end(), overview), end; it != end; ++it) {
    p.stated_counts.push_back(std::stoi((*it)[1]));
  }
  const std::string start_marker = "<!-- newcomer-path: " + style + " -->";
  size_t start = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i] == start_marker) start = i;
  }
  if (start == lines.size()) {
    p.errors.push_back("no " + start_marker);
    return p;
  }
  // The section holding the path: its heading before the marker, the next heading after it.
  size_t heading = start;
  while (heading > 0 && lines[heading].rfind("#", 0) != 0) --heading;
  size_t end = start + 1;
  while (end < lines.size() && lines[end].rfind("#", 0) != 0) ++end;
  static const std::regex section_count(R"(\*\*([0-9]+) steps\*\*)");
  for (size_t i = heading; i < start; ++i) {
    for (std::sregex_iterator it(lines[i].begin(), lines[i].end(), section_count), e; it != e; ++it) {
      p.stated_counts.push_back(std::stoi((*it)[1]));
    }
  }
  static const std::regex item(R"(^([0-9]+)\. .*)");
  const std::regex marker("^ *<!-- newcomer: " + style + " ([0-9]+) ([a-z-]+) ?(.*?) ?-->\\s*$");
  std::map<int, int> markers_of;
  for (size_t i = start + 1; i < end; ++i) {
    std::smatch m;
    if (std::regex_match(lines[i], m, item)) {
      const int n = std::stoi(m[1]);
      if (n != p.steps + 1) p.errors.push_back("step " + m[1].str() + " follows step " + std::to_string(p.steps));
      p.steps = n;
    } else if (std::regex_match(lines[i], m, marker)) {
      DocStep s{std::stoi(m[1]), m[2], m[3], ""};
      if (s.number != p.steps) {
        p.errors.push_back("a marker for step " + m[1].str() + " is in step " + std::to_string(p.steps));
      }
      if (s.mode == "run" || s.mode == "stack" || s.mode == "job") {
        std::string error;
        s.block = fenced_block_after(lines, i + 1, error);
        if (!error.empty()) p.errors.push_back("step " + m[1].str() + ": " + error);
      } else if (s.mode != "elsewhere" && s.mode != "not-local") {
        p.errors.push_back("step " + m[1].str() + ": unknown mode " + s.mode);
      } else if (s.detail.empty()) {
        p.errors.push_back("step " + m[1].str() + ": " + s.mode + " without saying where or why");
      }
      ++markers_of[s.number];
      p.markers.push_back(s);
    } else if (lines[i].find("<!-- newcomer") != std::string::npos) {
      p.errors.push_back("a marker that does not parse: " + lines[i]);
    }
  }
  for (int n = 1; n <= p.steps; ++n) {
    if (!markers_of.count(n)) p.errors.push_back("step " + std::to_string(n) + " has no newcomer marker");
  }
  if (p.stated_counts.empty()) p.errors.push_back("the doc states no count of the " + style + " style's steps");
  for (int c : p.stated_counts) {
    if (c != p.steps) {
      p.errors.push_back("the doc says " + std::to_string(c) + " steps; the path numbers " + std::to_string(p.steps));
    }
  }
  return p;
}

}  // namespace runpool::controller::e2e
