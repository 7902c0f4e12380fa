// runpoolctl scale-up on a run-scoped pool: fills the warm pool up to its idle quota — the
// schedule's of the moment, or --to N — ahead of the runs that will claim from it (the first run
// of the morning finds it warm). Each class short of its quota gets a provision that launches
// (never claims) under a label of its own, <pool>-warm-<16 hex>, whose runners register and are
// released at once: the instances drain back into the pool, idle and advertised — the way every
// instance enters it, so nothing new is trusted. Runners a dead warm-up left running under its label
// are released first. Only classes with reuse = always are warmed: under
// same-scope or never reuse a released instance that served no repository is terminated.
#pragma once

#include <string>
#include <vector>

#include "controller/context.h"
#include "controller/scale_up.h"

namespace runpool::controller {

// The labels warm-ups use: "<pool>-warm-".
std::string warm_up_prefix(const std::string& pool);

// Exit 0 when every class reached its quota (or was there), 1 when a warm-up fell short.
int run_warm_up(Context& ctx, const ScaleUpOptions& options, const std::vector<const ResourceClass*>& classes);

}  // namespace runpool::controller
