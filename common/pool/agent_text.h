// Text an agent wrote into its record (signal_detail, pre_run_detail, its versions) is the agent's
// word: anyone holding the instance role's credentials can write it, of any content and up to the
// item's size (docs/security.md, "The record"). The controller quotes it in its decisions' reasons —
// which reach logs, --json and text reports and a workflow's step summary — only through here: one
// line (control characters shown as '?', so no line of its own, no workflow command), at most
// kAgentTextMax bytes (whole UTF-8 sequences; more than any real agent writes).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace runpool::pool {

inline constexpr size_t kAgentTextMax = 600;

std::string agent_text(std::string_view text);

}  // namespace runpool::pool
