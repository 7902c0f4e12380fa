// common/json.*: strict parsing of any bytes, typed field access on whatever document came out,
// and the round trip write_json → parse_json giving the same value back.
#include "common/json.h"
#include "tests/fuzz/fuzz_support.h"

using namespace runpool;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in = fuzz::text(data, size);
  auto parsed = try_parse_json(in);
  try {
    Json::Value v = parse_json(in, "fuzz");
    FUZZ_CHECK(parsed.has_value());
  } catch (const JsonError&) {
    FUZZ_CHECK(!parsed.has_value());
  }
  if (!parsed) return 0;
  const Json::Value& v = *parsed;
  // The accessors over every member name the document has, and a few it may not.
  if (v.isObject()) {
    std::vector<std::string> names = v.getMemberNames();
    names.push_back("instance_id");
    names.push_back("");
    for (const auto& n : names) {
      try { (void)require_member(v, n.c_str(), "fuzz"); } catch (const JsonError&) {}
      try { (void)require_string(v, n.c_str(), "fuzz"); } catch (const JsonError&) {}
      try { (void)require_int(v, n.c_str(), "fuzz"); } catch (const JsonError&) {}
      try { (void)optional_string(v, n.c_str(), "fuzz"); } catch (const JsonError&) {}
      try { (void)optional_int(v, n.c_str(), "fuzz"); } catch (const JsonError&) {}
    }
  } else {
    // Not an object: every accessor must refuse cleanly rather than assert inside jsoncpp.
    try { (void)require_string(v, "x", "fuzz"); } catch (const JsonError&) {}
    try { (void)optional_int(v, "x", "fuzz"); } catch (const JsonError&) {}
  }
  std::string written = write_json(v);
  FUZZ_CHECK(written.find('\n') == std::string::npos);  // one line, as logs and messages need
  auto again = try_parse_json(written);
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(write_json(*again) == written);
  return 0;
}
