// Which configuration file runpoolctl reads: --config when given, else the packaged default
// (/etc/runpool/runpoolctl.conf) when it exists — so an operator on a machine with the package
// needs no --config — else none: the environment and flags alone.
#pragma once

#include <string>

namespace runpool::controller {

inline constexpr const char* kDefaultConfigFile = "/etc/runpool/runpoolctl.conf";

// The explicit file wins (the default is then not read at all); a missing default is no error
// ("" returned). A default that exists but cannot be read is returned, so reading it fails loudly
// rather than the pool running on a configuration other than the operator's.
std::string config_file_to_read(const std::string& explicit_file, const std::string& default_file = kDefaultConfigFile);

}  // namespace runpool::controller
