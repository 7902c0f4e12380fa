// Results for a workflow: step outputs in $GITHUB_OUTPUT and Markdown in $GITHUB_STEP_SUMMARY.
// Outputs are written in the heredoc form (`name<<DELIM` … `DELIM`) with a random delimiter that
// the value does not contain, so no value — multi-line or not — can end its own block early and
// inject another output.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace runpool::controller {

using Outputs = std::vector<std::pair<std::string, std::string>>;

// The text appended to $GITHUB_OUTPUT. `random` gives fresh delimiter material (16 hex digits);
// it is asked again while a delimiter occurs in the value. Output names must be
// [A-Za-z0-9_-]+ (std::invalid_argument otherwise).
std::string github_output_text(const Outputs& outputs, const std::function<std::string()>& random);

// Appends to the file (created if missing). Throws std::runtime_error naming the path.
void append_to_file(const std::string& path, const std::string& text);

// A Markdown table cell: '|' and '\' escaped, newlines as spaces, backticks dropped.
std::string markdown_cell(const std::string& text);

// Text that may quote an agent's words (forgeable: docs/security.md, "The record") as an inline code
// span: shown as written, never read as Markdown, HTML or a link. One line, backticks as ', at most
// 600 bytes. Not for table cells ('|' is left as it is).
std::string markdown_code(const std::string& text);

// Both variables set: we run in a GitHub Actions step.
struct ActionsFiles {
  std::string output;   // $GITHUB_OUTPUT
  std::string summary;  // $GITHUB_STEP_SUMMARY
  bool active() const { return !output.empty(); }
};
ActionsFiles actions_files(const std::function<const char*(const char*)>& getenv);

}  // namespace runpool::controller
