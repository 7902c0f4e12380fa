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
};

// For each record: the conditional write to terminating (re-reading and retrying while the
// record only changed within this assignment — same generation and label), one TerminateInstances
// for all, then each record closed. Never throws for one instance's trouble; logs it.
RetireOutcome retire(Context& ctx, const std::vector<pool::InstanceRecord>& records, const std::string& why);

}  // namespace runpool::controller
