// The pre-run script runs once per boot, not once per agent start: an agent that the service
// manager restarts (a crash, the watchdog, an upgrade) must not mount, fetch or warm twice. The
// result of this boot's run is kept in a small state file under /run (cleared at every boot, and
// the file also names the kernel's boot id), so a restarted agent reuses it. A run that never
// finished — the agent died while the script ran — counts as failed: the script may be half done,
// and it is never started a second time on the same boot.
#pragma once

#include <optional>
#include <string>

#include "agent/pre_run.h"

namespace runpool::agent {

// /proc/sys/kernel/random/boot_id; "" when it cannot be read.
std::string current_boot_id();

// Where this instance keeps the result: /run/runpool/pre-run-<instance id>.
std::string pre_run_state_file(const std::string& instance_id);

// The result this boot's earlier run left in `path`; nullopt when there is none for `boot_id`
// (no file, another boot's, or unreadable).
std::optional<PreRunResult> load_boot_result(const std::string& path, const std::string& boot_id);

// Writes `path` (mode 600, its directory 700, replaced atomically) for `boot_id`: `status` is the
// record's word ("ok", "failed", "timeout") or "running" while the script runs. Throws
// std::runtime_error when it cannot.
void save_boot_result(const std::string& path, const std::string& boot_id, const std::string& status,
                      const std::string& detail);

// This boot's result: the earlier run's when there was one, else the script run now (and its
// result kept). A cancelled run keeps nothing, so the next agent runs the script from the start.
PreRunResult run_pre_run_once(const PreRunOptions& options, const std::string& state_file, const std::string& boot_id,
                              const std::function<void()>& alive, const std::function<bool()>& cancelled);

}  // namespace runpool::agent
