// The instance's user-data: a #cloud-config document carrying the template (cloud-init/user-data.sh.in)
// with the agent's config file text and the agent binary's path filled in. What the agent is told
// comes only from here and from its own record: no GitHub credential ever reaches user-data.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace runpool::controller {

// "key = value" lines, in order. Throws std::invalid_argument on a key or value that would not
// read back as the same pair (control characters, '=' or '#' in a key, a value with a newline).
std::string agent_config_text(const std::vector<std::pair<std::string, std::string>>& config);

// Fills @AGENT_CONFIG@ and @AGENT_BINARY@ and wraps the script in its #cloud-config with
// common/cloud_init/user_data.h's renderer (which keeps both from escaping their places). Throws
// std::invalid_argument on what it refuses, or when the document passes EC2's 16 KiB limit.
std::string render_user_data(const std::string& template_text, const std::string& agent_config,
                             const std::string& agent_binary);

// Reads the template file; std::runtime_error naming the path when it cannot.
std::string read_template(const std::string& path);

// Where the template is. `configured` is used as given unless it is the packaged default
// (`packaged`, where the Debian package installs it) and that file is absent: a relocatable install
// (the release tarball, unpacked anywhere) carries it beside its binary, at
// <directory of `self_exe`>/../share/runpool/user-data.sh.in, used when present.
std::string locate_template(const std::string& configured, const std::string& packaged, const std::string& self_exe);

}  // namespace runpool::controller
