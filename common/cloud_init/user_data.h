// Rendering cloud-init/user-data.sh.in: the agent's configuration text and the agent binary's
// path go in verbatim, after checks that keep them from escaping their places in the script; the
// script then travels inside a #cloud-config document, which `cloud-init schema` can validate.
#pragma once

#include <string>

namespace runpool::cloud_init {

// The heredoc delimiter the template uses around @AGENT_CONFIG@.
inline constexpr const char* kConfigDelimiter = "RUNPOOL_AGENT_CONFIG_EOF";

// Where the cloud-config writes the boot script (under RUNPOOL_LOCALCLOUD_INSTANCE_DIR on the local cloud).
inline constexpr const char* kBootScriptPath = "/var/lib/runpool/boot.sh";

// The filled-in script. Throws std::invalid_argument when the config text holds the delimiter line
// or a NUL, when the binary path is not empty and not a plain absolute path, or when the template
// lacks a placeholder.
std::string render_boot_script(const std::string& tmpl, const std::string& agent_config, const std::string& agent_binary);

// A #cloud-config document whose write_files puts `script`, byte for byte, at kBootScriptPath (mode
// 0700) and whose runcmd runs it. Throws std::invalid_argument on text YAML cannot carry verbatim in
// a literal block: control characters other than tab and newline, other line breaks, invalid UTF-8.
std::string cloud_config(const std::string& script);

// cloud_config(render_boot_script(...)): the instance's user-data.
std::string render_user_data(const std::string& tmpl, const std::string& agent_config, const std::string& agent_binary);

}  // namespace runpool::cloud_init
