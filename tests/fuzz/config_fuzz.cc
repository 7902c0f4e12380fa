// Configuration files (common/config.*) read with both binaries' real schemas and turned into their
// typed settings (controller/settings.cc, agent/agent_settings.cc). A bad file must be a
// ConfigError and nothing else: runpoolctl and runpool-agent catch exactly that around loading, so
// any other exception would end them without the one-line error.
#include <stdexcept>

#include "agent/agent_settings.h"
#include "common/config.h"
#include "controller/settings.h"
#include "tests/fuzz/fuzz_support.h"

using namespace runpool;

namespace {
const char* no_env(const char*) { return nullptr; }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string file = fuzz::text(data, size);
  {
    Config c(controller::settings_schema());
    try {
      c.merge_text(file, "fuzz");
      (void)controller::load_settings(c, no_env);
    } catch (const ConfigError&) {
    }
    // Whatever merged, the reference and every typed read still work or say ConfigError.
    (void)c.reference_markdown();
  }
  {
    Config c(agent::agent_schema());
    try {
      c.merge_text(file, "fuzz");
      (void)agent::load_agent_settings(c);
    } catch (const ConfigError&) {
    }
  }
  // The small value languages on their own.
  (void)split_list(file);
  if (auto d = parse_duration(file)) FUZZ_CHECK(parse_duration(format_duration(*d)) == d);
  try {
    auto classes = controller::parse_resource_classes(file);
    FUZZ_CHECK(controller::parse_resource_classes(controller::format_resource_classes(classes)) == classes);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
