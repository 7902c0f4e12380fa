#include "common/pool/record_codec.h"

#include <gtest/gtest.h>

namespace runpool::pool {
namespace {

using aws::AttributeValue;

InstanceRecord full_record() {
  InstanceRecord r;
  r.instance_id = "i-0abc";
  r.pool = "default";
  r.state = State::kDraining;
  r.generation = 7;
  r.label = "runpool-123-1";
  r.deadline_ms = 1'800'000'000'000;
  r.hard_deadline_ms = 1'800'000'600'000;
  r.state_since_ms = 1'799'999'000'000;
  r.created_ms = 1'799'000'000'000;
  r.resource_class = "large";
  r.usage_class = UsageClass::kSpot;
  r.instance_type = "c7i.xlarge";
  r.reg_token = Secret("REGTOKEN");
  r.reg_url = "https://github.com/o/r";
  r.remove_token = Secret("RMTOKEN");
  r.jit_config = Secret("JITCONFIG");
  r.advertise_pending = true;
  r.shared = true;
  r.os = "linux";
  r.orphan_since_ms = 1'799'999'500'000;
  r.kept_until_ms = 1'800'007'200'000;
  r.bypass_removal = true;
  r.ami_id = "ami-0123456789abcdef0";
  r.retire_pending = true;
  r.reuse_scope_key = "repository:o/r";
  r.job_privileges = "docker";
  r.heartbeat_ms = 1'799'999'999'000;
  r.signal = AgentSignal::kRegistered;
  r.signal_generation = 7;
  r.signal_detail = "ok";
  r.runner_id = 42;
  r.runner_name = "default-i-0abc-g7";
  r.busy = true;
  r.agent_version = "0.1.0";
  r.runner_version = "2.336.0";
  r.pre_run = PreRun::kFailed;
  r.pre_run_detail = "exit 3: no disk";
  r.spot_rerun = "rerun 42";
  r.spot_run = "acme/app 7";
  r.spot_job = "build";
  r.spot_generation = 7;
  r.spot_job_result = "Canceled";
  return r;
}

void expect_same(const InstanceRecord& a, const InstanceRecord& b) {
  EXPECT_EQ(encode_record(a), encode_record(b));
}

TEST(RecordCodec, RoundTripsEveryField) {
  InstanceRecord r = full_record();
  expect_same(decode_record(encode_record(r)), r);
}

TEST(RecordCodec, PreRunResultsRoundTripUnderTheirAttributeNames) {
  for (PreRun p : {PreRun::kOk, PreRun::kFailed, PreRun::kTimeout}) {
    InstanceRecord r = full_record();
    r.pre_run = p;
    aws::Item item = encode_record(r);
    EXPECT_EQ(item.at("pre_run").as_string(), pre_run_name(p));
    EXPECT_EQ(item.at("pre_run_detail").as_string(), "exit 3: no disk");
    InstanceRecord back = decode_record(item);
    EXPECT_EQ(back.pre_run, p);
    EXPECT_EQ(back.pre_run_detail, "exit 3: no disk");
  }
  EXPECT_EQ(pre_run_name(PreRun::kOk), "ok");
  EXPECT_EQ(pre_run_name(PreRun::kTimeout), "timeout");
  EXPECT_FALSE(parse_pre_run(""));
  EXPECT_FALSE(parse_pre_run("OK"));
}

TEST(RecordCodec, MinimalRecordRoundTripsAndOmitsEmptyFields) {
  InstanceRecord r;
  r.instance_id = "i-1";
  aws::Item item = encode_record(r);
  EXPECT_EQ(item.count(attr::kLabel), 0u);
  EXPECT_EQ(item.count(attr::kRegToken), 0u);
  EXPECT_EQ(item.count(attr::kJitConfig), 0u);
  EXPECT_EQ(item.count(attr::kSignal), 0u);
  EXPECT_EQ(item.count(attr::kPreRun), 0u) << "no script, or not reported: no attribute";
  EXPECT_EQ(item.count(attr::kPreRunDetail), 0u);
  EXPECT_EQ(item.count(attr::kReuseScopeKey), 0u) << "untagged: no attribute, as in records written before it";
  EXPECT_EQ(item.count(attr::kAwaitedUntil), 0u) << "no provision waits for it: no attribute";
  InstanceRecord back = decode_record(item);
  EXPECT_EQ(back.reuse_scope_key, "");
  EXPECT_EQ(item.count(attr::kJobPrivileges), 0u) << "records written before the field decode to \"\"";
  EXPECT_EQ(back.job_privileges, "");
  EXPECT_EQ(back.state, State::kCreated);
  EXPECT_EQ(back.signal, AgentSignal::kNone);
  EXPECT_EQ(back.pre_run, PreRun::kNone);
  EXPECT_TRUE(back.reg_token.empty());
}

TEST(RecordCodec, ForeignAndCorruptItemsAreRejectedWithTheirId) {
  aws::Item good = encode_record(full_record());
  auto broken = [&](auto mutate) {
    aws::Item item = good;
    mutate(item);
    return item;
  };
  std::vector<aws::Item> bad = {
      broken([](aws::Item& i) { i.erase(attr::kInstanceId); }),
      broken([](aws::Item& i) { i[attr::kInstanceId] = AttributeValue::string("not-an-instance"); }),
      broken([](aws::Item& i) { i.erase(attr::kState); }),
      broken([](aws::Item& i) { i[attr::kState] = AttributeValue::string("sleeping"); }),
      broken([](aws::Item& i) { i[attr::kState] = AttributeValue::number(3); }),
      broken([](aws::Item& i) { i.erase(attr::kGeneration); }),
      broken([](aws::Item& i) { i[attr::kGeneration] = AttributeValue::string("7"); }),
      broken([](aws::Item& i) { i[attr::kDeadline] = AttributeValue::boolean(true); }),
      broken([](aws::Item& i) { i[attr::kUsageClass] = AttributeValue::string("reserved"); }),
      broken([](aws::Item& i) { i[attr::kSignal] = AttributeValue::string("dancing"); }),
      broken([](aws::Item& i) { i[attr::kBusy] = AttributeValue::string("yes"); }),
      broken([](aws::Item& i) { i[attr::kShared] = AttributeValue::string("true"); }),
      broken([](aws::Item& i) { i[attr::kOrphanSince] = AttributeValue::string("soon"); }),
      broken([](aws::Item& i) { i[attr::kKeptUntil] = AttributeValue::string("later"); }),
      broken([](aws::Item& i) { i[attr::kBypassRemoval] = AttributeValue::number(1); }),
      broken([](aws::Item& i) { i[attr::kGeneration] = AttributeValue::number_text("1.5"); }),
      broken([](aws::Item& i) { i[attr::kPreRun] = AttributeValue::string("maybe"); }),
      broken([](aws::Item& i) { i[attr::kPreRun] = AttributeValue::boolean(true); }),
      broken([](aws::Item& i) { i[attr::kPreRunDetail] = AttributeValue::number(3); }),
  };
  for (size_t n = 0; n < bad.size(); ++n) {
    try {
      decode_record(bad[n]);
      ADD_FAILURE() << "case " << n << " accepted";
    } catch (const RecordError& e) {
      std::string what = e.what();
      EXPECT_TRUE(what.find("item") != std::string::npos) << what;
      EXPECT_EQ(what.find("REGTOKEN"), std::string::npos) << "a secret leaked into an error: " << what;
    }
  }
}

// An id that is not "i-" and letters or digits — control characters, a path, shell syntax, a huge
// string — is refused, and the error shows at most 64 printable bytes of it: the warning that skips
// the item stays one short line that cannot forge another.
TEST(RecordCodec, HostileIdsAreRefusedAndShownSafely) {
  aws::Item good = encode_record(full_record());
  for (const std::string& id : {std::string("i-0bad\nforged: all good"), std::string("i-\x1b[31m0bad"),
                                std::string("../../etc/passwd"), std::string("i-$(touch x)"), std::string("i-0 1"),
                                std::string("i-"), "i-" + std::string(100000, 'f'), std::string("i-\xc3\xa9")}) {
    aws::Item item = good;
    item[attr::kInstanceId] = AttributeValue::string(id);
    try {
      decode_record(item);
      ADD_FAILURE() << "accepted " << ::testing::PrintToString(id.substr(0, 40));
    } catch (const RecordError& e) {
      std::string what = e.what();
      EXPECT_LT(what.size(), 200u) << what.substr(0, 300);
      for (char c : what) EXPECT_TRUE(c >= 0x20 || c < 0) << ::testing::PrintToString(what);
      EXPECT_EQ(what.find('\x1b'), std::string::npos);
    }
  }
  aws::Item ok = good;
  ok[attr::kInstanceId] = AttributeValue::string("i-0123456789abcdef0");
  EXPECT_EQ(decode_record(ok).instance_id, "i-0123456789abcdef0");
}

}  // namespace
}  // namespace runpool::pool
