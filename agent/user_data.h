// Rendering cloud-init/user-data.sh.in: the agent's configuration text and the agent binary's
// path go in verbatim, after checks that keep them from escaping their places in the script.
#pragma once

#include <string>

namespace runpool::agent {

// The heredoc delimiter the template uses around @AGENT_CONFIG@.
inline constexpr const char* kConfigDelimiter = "RUNPOOL_AGENT_CONFIG_EOF";

// Throws std::invalid_argument when the config text holds the delimiter line or a NUL, when the
// binary path is not empty and not a plain absolute path, or when the template lacks a placeholder.
std::string render_user_data(const std::string& tmpl, const std::string& agent_config, const std::string& agent_binary);

}  // namespace runpool::agent
