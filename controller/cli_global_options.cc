#include "controller/cli_global_options.h"

#include <cstdlib>

#include "common/log.h"
#include "controller/config_file.h"

namespace runpool::controller {
namespace {

// Flags that set a configuration key: --table → table, and so on.
struct KeyFlag {
  const char* flag;
  const char* key;
  const char* help;
};
constexpr KeyFlag kKeyFlags[] = {
    {"--table", "table", "DynamoDB state table"},
    {"--pool", "pool", "the pool's name"},
    {"--region", "region", "AWS region"},
    {"--endpoint-dynamodb", "endpoint_dynamodb", "DynamoDB endpoint URL"},
    {"--endpoint-sqs", "endpoint_sqs", "SQS endpoint URL"},
    {"--endpoint-ec2", "endpoint_ec2", "EC2 endpoint URL"},
    {"--github-api-url", "github_api_url", "GitHub REST API base URL"},
    {"--github-owner", "github_owner", "whose runners: owner/repo or an organization"},
};

const char* process_env(const char* name) { return std::getenv(name); }

}  // namespace

void add_global_options(CLI::App& app, GlobalOptions& o) {
  app.add_option("--config", o.config_file,
                 std::string("Configuration file (key = value lines); default: ") + kDefaultConfigFile +
                     " when it exists")->check(CLI::ExistingFile);
  app.add_option("--log-format", o.log_format, "Log format on stderr: text or json (key log_format)");
  app.add_option("--log-level", o.log_level, "Log level: trace, debug, info, warn, error (key log_level)");
  app.add_flag("--json", o.json, "Print the command's result as JSON on stdout");
  for (const auto& kf : kKeyFlags) {
    app.add_option(kf.flag, o.key_flags[kf.key], std::string(kf.help) + " (key " + kf.key + ")");
  }
  app.add_option("--set", o.sets, "Set any configuration key: --set key=value (repeatable; not for secrets)");
}

Settings configure(const GlobalOptions& o, Config& config) {
  if (std::string file = config_file_to_read(o.config_file); !file.empty()) config.merge_file(file);
  config.merge_env(process_env);
  for (const auto& [key, value] : o.key_flags) {
    if (!value.empty()) config.set(key, value, "--" + key);
  }
  for (const auto& kv : o.sets) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) throw ConfigError("--set " + printable(kv, 80) + ": expected key=value");
    std::string key = kv.substr(0, eq);
    for (const auto& spec : config.schema()) {
      if (spec.key == key && spec.type == KeyType::kSecret) {
        throw ConfigError("--set " + key + ": secrets are read from the environment or the config file only");
      }
    }
    config.set(key, kv.substr(eq + 1), "--set " + key);
  }
  if (!o.log_format.empty()) config.set("log_format", o.log_format, "--log-format");
  if (!o.log_level.empty()) config.set("log_level", o.log_level, "--log-level");
  LogFormat format;
  if (!parse_log_format(config.get_string("log_format"), &format) || format == LogFormat::kJournal) {
    config.reject("log_format", "text or json");
  }
  std::string level = config.get_string("log_level");
  if (spdlog::level::from_str(level) == spdlog::level::off && level != "off") {
    config.reject("log_level", "'" + level + "'");
  }
  init_logging(format, level);
  return load_settings(config, process_env);
}

}  // namespace runpool::controller
