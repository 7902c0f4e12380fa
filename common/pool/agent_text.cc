#include "common/pool/agent_text.h"

#include "common/log.h"

namespace runpool::pool {

std::string agent_text(std::string_view text) { return printable(text, kAgentTextMax); }

}  // namespace runpool::pool
