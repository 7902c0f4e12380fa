// GitHub's JSON answers (common/github/*): runner pages, labels, registration tokens, JIT configs,
// downloads, and the Link header that pages them. Anything malformed is JsonError, never a crash.
#include <string>

#include "common/github/link_header.h"
#include "common/github/runner_json.h"
#include "common/json.h"
#include "tests/fuzz/fuzz_support.h"

using namespace runpool;
using namespace runpool::github;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in = fuzz::text(data, size);
  for (const auto& l : parse_link_header(in)) {
    for (const auto& rel : l.rels) {
      for (char c : rel) FUZZ_CHECK(!(c >= 'A' && c <= 'Z'));  // rels are lower-cased
    }
  }
  (void)next_link(in);
  auto json = try_parse_json(in);
  if (!json) return 0;
  try { (void)parse_runner_page(*json, "fuzz"); } catch (const JsonError&) {}
  try { (void)parse_runner(*json, "fuzz"); } catch (const JsonError&) {}
  try { (void)parse_label_list(*json, "fuzz"); } catch (const JsonError&) {}
  try { (void)parse_runner_token(*json, "fuzz"); } catch (const JsonError&) {}
  try { (void)parse_jit_config(*json, "fuzz"); } catch (const JsonError&) {}
  try { (void)parse_downloads(*json, "fuzz"); } catch (const JsonError&) {}
  return 0;
}
