// Wiring the agent together: identity from IMDSv2, role credentials, the AWS clock, the clients,
// the runner host, the threads (heartbeat, notices, watchdog, signals) and the main loop.
#pragma once

#include "agent/agent_settings.h"

namespace runpool::agent {

// The agent's exit codes (documented in --help).
inline constexpr int kExitStopped = 0;         // stopped by SIGTERM/SIGINT
inline constexpr int kExitFailure = 1;         // could not start (no identity from IMDS, …)
inline constexpr int kExitUsage = 2;           // usage or configuration error
inline constexpr int kExitNotTerminated = 3;   // self-termination did not take effect in time

// Runs until a signal stops it or the instance goes away. Returns one of the exit codes above.
int run_agent(const AgentSettings& settings, const std::string& version);

}  // namespace runpool::agent
