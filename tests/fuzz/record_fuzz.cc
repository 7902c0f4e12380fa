// DynamoDB items as the table hands them over (common/aws/attribute_value.*) and the instance
// record read out of them (common/pool/record_codec.*): any JSON either decodes or is refused with
// JsonError / RecordError; whatever decodes encodes back to an item that decodes to the same thing.
#include "common/aws/attribute_value.h"
#include "common/json.h"
#include "common/pool/record_codec.h"
#include "tests/fuzz/fuzz_support.h"

using namespace runpool;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto json = try_parse_json(fuzz::text(data, size));
  if (!json) return 0;
  // A single attribute value, strictly.
  try {
    aws::AttributeValue a = aws::AttributeValue::from_json(*json, "fuzz");
    aws::AttributeValue b = aws::AttributeValue::from_json(a.to_json(), "fuzz");
    FUZZ_CHECK(a == b);
    if (a.type() == aws::AttributeValue::Type::kNumber) {
      FUZZ_CHECK(aws::is_dynamodb_number(a.as_number_text()));
      try { (void)a.as_int(); } catch (const aws::AttributeTypeError&) {}
    }
  } catch (const JsonError&) {
  }
  aws::Item item;
  try {
    item = aws::item_from_json(*json, "fuzz");
  } catch (const JsonError&) {
    return 0;
  }
  FUZZ_CHECK(aws::item_from_json(aws::item_to_json(item), "fuzz") == item);
  for (const auto& [name, value] : item) {
    try { (void)aws::find_string(item, name); } catch (const aws::AttributeTypeError&) {}
    try { (void)aws::find_int(item, name); } catch (const aws::AttributeTypeError&) {}
    try { (void)aws::find_bool(item, name); } catch (const aws::AttributeTypeError&) {}
  }
  pool::InstanceRecord record;
  try {
    record = pool::decode_record(item);
  } catch (const pool::RecordError&) {
    return 0;
  }
  aws::Item once = pool::encode_record(record);
  aws::Item twice = pool::encode_record(pool::decode_record(once));
  FUZZ_CHECK(once == twice);
  return 0;
}
