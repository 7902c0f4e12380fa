// The agent's small state files (job users, pre-run result, the Docker baseline): written whole or
// not at all — a temporary file beside the target, flushed, then renamed over it — so a crash or a
// full disk never leaves half a file for the next start to misread. Root's alone (0600), never
// through a link.
#pragma once

#include <optional>
#include <string>

namespace runpool::agent {

// Throws std::runtime_error naming the file and the system's reason.
void write_state_file(const std::string& path, const std::string& text);

// The whole file; nullopt when it does not exist. Throws when it exists but cannot be read.
std::optional<std::string> read_state_file(const std::string& path);
// The same, but nullopt also when the file is not one only this process's user could have
// written: another owner, another kind of file, or any permission for group or others. For a
// file whose word lets a step be skipped.
std::optional<std::string> read_own_state_file(const std::string& path);

}  // namespace runpool::agent
