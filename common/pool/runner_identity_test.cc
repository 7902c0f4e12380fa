#include "common/pool/runner_identity.h"

#include <gtest/gtest.h>

namespace runpool::pool {
namespace {

InstanceRecord record(int64_t generation = 4) {
  InstanceRecord r;
  r.pool = "ci";
  r.instance_id = "i-0123456789abcdef0";
  r.generation = generation;
  r.runner_id = 77;  // the agent's word: never part of the judgement
  return r;
}

TEST(RunnerIdentity, OnlyTheCurrentAssignmentsNameIsTheRecords) {
  struct Case {
    const char* why;
    InstanceRecord r;
    std::string github_name;
    bool records;
  };
  InstanceRecord no_pool = record();
  no_pool.pool = "";
  InstanceRecord no_id = record();
  no_id.instance_id = "";
  const Case cases[] = {
      {"its own name", record(), "ci-i-0123456789abcdef0-g4", true},
      {"an earlier generation's runner", record(), "ci-i-0123456789abcdef0-g3", false},
      {"a later generation's name", record(), "ci-i-0123456789abcdef0-g5", false},
      {"another instance's runner", record(), "ci-i-0fedcba9876543210-g4", false},
      {"another pool's runner", record(), "other-i-0123456789abcdef0-g4", false},
      {"another tenant's runner", record(), "build-box-7", false},
      {"a name with a suffix", record(), "ci-i-0123456789abcdef0-g40", false},
      {"a name differing in case", record(), "CI-i-0123456789abcdef0-g4", false},
      {"empty", record(), "", false},
      {"a record with no pool", no_pool, "-i-0123456789abcdef0-g4", false},
      {"a record with no instance id", no_id, "ci--g4", false},
  };
  for (const auto& c : cases) EXPECT_EQ(is_records_runner(c.r, c.github_name), c.records) << c.why;
  EXPECT_EQ(records_runner_name(record(9)), "ci-i-0123456789abcdef0-g9");
}

}  // namespace
}  // namespace runpool::pool
