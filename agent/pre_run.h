// The operator's pre-run script (docs/agent.md, "Pre-run script"): the image's own preparation —
// mounting disks, warming caches, fetching what the image needs — run by the agent as root before
// it takes its first assignment. It runs with a clean minimal environment, stdin from /dev/null,
// in a process group of its own that is killed at the timeout; its output is kept (the tail) for
// the log, and its result becomes the record's `pre_run` and `pre_run_detail`.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/process.h"
#include "common/clock.h"
#include "common/pool/instance_record.h"

namespace runpool::agent {

inline constexpr size_t kPreRunDetailMax = 200;     // bytes of `pre_run_detail`
inline constexpr size_t kPreRunOutputTail = 4096;   // bytes of output kept for the log
inline constexpr const char* kPreRunPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

struct PreRunOptions {
  std::string script;  // absolute path of an executable (a #! line for a script)
  Duration timeout{std::chrono::minutes(10)};
  std::string instance_id;
  std::string pool;
  std::string resource_class;  // "" when not known
};

struct PreRunResult {
  pool::PreRun status = pool::PreRun::kNone;
  std::string detail;       // for the record: at most kPreRunDetailMax bytes of clean UTF-8, one line
  std::string output;       // the tail of stdout and stderr, as the script wrote it
  bool cancelled = false;   // the agent was stopped while it ran: there is no result
  bool failed() const { return status == pool::PreRun::kFailed || status == pool::PreRun::kTimeout; }
};

// PATH, HOME=/root and the RUNPOOL_ variables the script may use; nothing of the agent's own.
std::vector<std::string> pre_run_environment(const PreRunOptions& options);

// One line of text fit for the record and the log: valid UTF-8 (anything else becomes '?'), no
// control characters or terminal escape sequences (tabs and newlines become spaces), trimmed,
// cut to `max` bytes on a character boundary ("…" marks a cut).
std::string clean_text(std::string_view text, size_t max);
// The last line of `output` that has anything but whitespace in it; "" when none.
std::string last_line(std::string_view output);

// The result of a finished run: ok on exit 0, timeout when it was killed at the timeout, failed
// otherwise — with a detail such as "exit 3: <last line of output>".
PreRunResult pre_run_result(const CommandOutcome& outcome, Duration timeout, Duration took);

// Runs the script to its end or its timeout, and logs its output and result. `alive` is called
// about every 100 ms (the watchdog's pulse); `cancelled` returning true ends the script early.
PreRunResult run_pre_run_script(const PreRunOptions& options, const std::function<void()>& alive,
                                const std::function<bool()>& cancelled);

}  // namespace runpool::agent
