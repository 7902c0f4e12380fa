#include "controller/jit_mint.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

namespace runpool::controller {
namespace {

std::vector<std::string> names_of(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("runner-" + std::to_string(i));
  return out;
}

TEST(JitMint, EveryNameOnceInTheNamesOrder) {
  std::mutex mu;
  std::map<std::string, int> calls;
  std::vector<JitLane> lanes;
  for (int l = 0; l < 4; ++l) {
    lanes.push_back([&, l](const std::string& name) {
      std::lock_guard lock(mu);
      ++calls[name];
      return Secret("jit-" + name + "-lane-" + std::to_string(l));
    });
  }
  const auto names = names_of(23);
  const std::vector<MintedJit> got = mint_jit_configs(lanes, names);
  ASSERT_EQ(got.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    ASSERT_TRUE(got[i].config) << names[i];
    EXPECT_EQ(got[i].config->reveal().rfind("jit-" + names[i] + "-lane-", 0), 0u) << got[i].config->reveal();
    EXPECT_TRUE(got[i].error.empty());
    EXPECT_EQ(calls[names[i]], 1) << names[i];
  }
}

TEST(JitMint, AFailedNameKeepsItsErrorAndTheOthersTheirConfigurations) {
  std::vector<JitLane> lanes(3, [](const std::string& name) -> Secret {
    if (name == "runner-4" || name == "runner-7") throw std::runtime_error("HTTP 500 for " + name);
    return Secret("ok");
  });
  const std::vector<MintedJit> got = mint_jit_configs(lanes, names_of(10));
  for (int i = 0; i < 10; ++i) {
    if (i == 4 || i == 7) {
      EXPECT_FALSE(got[i].config);
      EXPECT_EQ(got[i].error, "HTTP 500 for runner-" + std::to_string(i));
    } else {
      ASSERT_TRUE(got[i].config) << i;
      EXPECT_EQ(got[i].config->reveal(), "ok");
    }
  }
}

// The point of lanes: while one waits on GitHub, the others mint. Each lane here waits (bounded)
// until all three are inside at once, which only lanes running side by side can reach.
TEST(JitMint, LanesMintSideBySide) {
  std::mutex mu;
  std::condition_variable cv;
  int inside = 0, most = 0;
  std::set<std::thread::id> threads;
  auto lane = [&](const std::string&) {
    std::unique_lock lock(mu);
    threads.insert(std::this_thread::get_id());
    most = std::max(most, ++inside);
    cv.notify_all();
    cv.wait_for(lock, std::chrono::seconds(5), [&] { return most >= 3; });
    --inside;
    return Secret("x");
  };
  const std::vector<MintedJit> got = mint_jit_configs({lane, lane, lane}, names_of(6));
  EXPECT_EQ(most, 3);
  EXPECT_EQ(threads.size(), 3u);
  EXPECT_TRUE(threads.count(std::this_thread::get_id())) << "the first lane is the caller's thread";
  for (const MintedJit& m : got) EXPECT_TRUE(m.config);
}

TEST(JitMint, NoMoreThreadsThanNamesAndNoneForOne) {
  std::mutex mu;
  std::set<std::thread::id> threads;
  auto lane = [&](const std::string&) {
    std::lock_guard lock(mu);
    threads.insert(std::this_thread::get_id());
    return Secret("x");
  };
  const std::vector<JitLane> lanes(8, lane);
  ASSERT_EQ(mint_jit_configs(lanes, names_of(1)).size(), 1u);
  EXPECT_EQ(threads, std::set<std::thread::id>{std::this_thread::get_id()});
  EXPECT_TRUE(mint_jit_configs(lanes, {}).empty());
}

TEST(JitMint, NoLaneIsRefused) { EXPECT_THROW(mint_jit_configs({}, names_of(1)), std::invalid_argument); }

}  // namespace
}  // namespace runpool::controller
