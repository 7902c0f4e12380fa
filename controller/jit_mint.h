// Just-in-time runner configurations for many runners at once. Each is one GitHub request
// (generate-jitconfig), a few hundred milliseconds on github.com: a burst of 50 jobs minted one
// after another keeps the last job waiting for all the others, and a claim that runs past its time
// budget launches instances the warm pool had. So minting goes over lanes — each a connection of
// its own — side by side, and the claim and the launch ask for a whole batch at once.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/github/scaleset_client.h"
#include "common/secret.h"

namespace runpool::controller {

struct MintedJit {
  std::optional<Secret> config;  // nullopt: not made (see error)
  std::string error;
};

// Makes the configuration of one runner name, on a connection of its own.
using JitLane = std::function<Secret(const std::string& runner_name)>;
// Makes one configuration per name, results in the names' order.
using JitMint = std::function<std::vector<MintedJit>(const std::vector<std::string>& runner_names)>;

// Runs `names` over `lanes` (at least one): the first lane on the calling thread, each other on a
// thread of its own for this call, every lane taking the next name as it is free. A name whose
// lane throws gets the error; the others are not affected. Returns when every name has an answer.
std::vector<MintedJit> mint_jit_configs(const std::vector<JitLane>& lanes, const std::vector<std::string>& names);

// A JIT runner of scale set `set_id` for `name`, made through `client`. A name already taken is one
// this controller made before an answer was lost (names carry the instance and generation): it is
// deleted and made again.
Secret make_jit(github::ScaleSetClient& client, int64_t set_id, const std::string& name);
// Deletes the runner named `name` if there is one; a failure is logged (refresh removes it later).
void discard_jit(github::ScaleSetClient& client, const std::string& name);

}  // namespace runpool::controller
