// Ending instances: the conditional writes around TerminateInstances (begin_terminate →
// TerminateInstances → close_record). Shared by provision's clean-up and release's stragglers.
#pragma once

#include <string>
#include <vector>

#include "common/pool/instance_record.h"
#include "controller/context.h"

namespace runpool::controller {

struct RetireOutcome {
  std::vector<std::string> terminated;  // EC2 accepted the termination and the record is closed
  std::vector<std::string> pending;     // left in terminating (EC2 failed): refresh retries until its deadline
  std::vector<std::string> skipped;     // the record moved on (someone else owns it now) or is gone
  std::vector<std::string> kept;        // failed, and kept for inspection instead (keep_failed)
};

// Why retire() is asked to end instances: kUnregistered when they did not register in time, which
// keep_failed counts as a failure (an agent's reported failure always counts).
enum class RetireCause { kOther, kUnregistered };

// For each record: the conditional write to terminating (re-reading and retrying while the
// record only changed within this assignment — same generation and label), one TerminateInstances
// for all, then each record closed. With keep_failed set, a failed instance is kept for
// inspection instead (its current record decides: pool::keep_verdict). Never throws for one
// instance's trouble; logs it.
RetireOutcome retire(Context& ctx, const std::vector<pool::InstanceRecord>& records, const std::string& why,
                     RetireCause cause = RetireCause::kOther);

}  // namespace runpool::controller
