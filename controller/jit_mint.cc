#include "controller/jit_mint.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "common/github/scaleset_errors.h"

namespace runpool::controller {

std::vector<MintedJit> mint_jit_configs(const std::vector<JitLane>& lanes, const std::vector<std::string>& names) {
  if (lanes.empty()) throw std::invalid_argument("minting needs at least one lane");
  std::vector<MintedJit> out(names.size());
  std::atomic<size_t> next{0};
  auto work = [&](const JitLane& lane) {
    for (size_t i = next++; i < names.size(); i = next++) {
      try {
        out[i].config = lane(names[i]);
      } catch (const std::exception& e) {
        out[i].error = e.what();
      }
    }
  };
  // No more threads than names: one name is minted where it is asked for.
  const size_t helpers = std::min(lanes.size(), std::max<size_t>(names.size(), 1)) - 1;
  std::vector<std::thread> threads;
  threads.reserve(helpers);
  for (size_t l = 1; l <= helpers; ++l) {
    try {
      threads.emplace_back(work, std::cref(lanes[l]));
    } catch (const std::system_error&) {
      break;  // no thread to be had: the lanes started carry the rest
    }
  }
  work(lanes[0]);
  for (std::thread& t : threads) t.join();
  return out;
}

Secret make_jit(github::ScaleSetClient& client, int64_t set_id, const std::string& name) {
  try {
    return client.generate_jit_config(set_id, name).encoded_jit_config;
  } catch (const github::RunnerNameTakenError&) {
    discard_jit(client, name);
    return client.generate_jit_config(set_id, name).encoded_jit_config;
  }
}

void discard_jit(github::ScaleSetClient& client, const std::string& name) {
  try {
    if (auto runner = client.get_runner_by_name(name)) client.delete_runner(runner->id);
  } catch (const std::exception& e) {
    spdlog::warn("could not delete the unused runner {} ({}); refresh removes it", name, e.what());
  }
}

}  // namespace runpool::controller
