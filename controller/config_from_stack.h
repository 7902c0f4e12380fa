// `runpoolctl config from-stack NAME`: reads a runpool stack's outputs (DescribeStacks, with the
// AWS credentials and region runpoolctl uses for everything else) and writes them as runpoolctl's
// configuration file, which it refuses to replace unless told to.
#pragma once

#include <ostream>
#include <string>

#include "common/aws/endpoints.h"
#include "controller/settings.h"

namespace runpool::controller {

// Writes `text` to `path` (mode 0644: it holds no secret). Without `force` an existing file is
// left alone and std::runtime_error says so; with it the file is replaced whole (a temporary
// beside it, renamed over it).
void write_config_file(const std::string& path, const std::string& text, bool force);

// The command: the stack's configuration written to `output`, and printed to `out`.
int run_config_from_stack(const Settings& settings, const std::string& stack, const std::string& output, bool force,
                          std::ostream& out, const aws::GetEnv& getenv = aws::real_getenv);

}  // namespace runpool::controller
