// Settings: shared pools and scale-down, runner scale sets, metrics, logging.
#include "controller/settings_rows.h"

#include <filesystem>
#include <stdexcept>

#include "common/cloud_init/agent_key_bounds.h"
#include "common/github/endpoint.h"
#include "common/pool/record_key.h"
#include "controller/user_data.h"

namespace runpool::controller::settings_rows {

std::vector<Row> fleet_rows() {
  return {
      // Shared pools and scale-down.
      {{"pool_mode", KeyType::kString, "run-scoped",
        "run-scoped (provision registers runners per workflow run under a unique label) or shared (scale-up "
        "keeps runners registered with shared_labels, serving any workflow)"},
       [](const Config& c, Settings& s) {
         const std::string mode = c.get_string("pool_mode");
         if (mode != "run-scoped" && mode != "shared") c.reject("pool_mode", "'" + mode + "' must be run-scoped or shared");
         s.shared = mode == "shared";
       }},
      checked<Settings>(
          list_row("shared_labels", &Settings::shared_labels,
                   "shared pools: the labels a runner registers with; its resource class is appended"),
          [](const Config& c, Settings& s) {
            if (s.shared_labels.empty() || s.shared_labels.size() > 50) c.reject("shared_labels", "must hold 1 to 50 labels");
            for (const auto& l : s.shared_labels) {
              if (l.size() > 100 || l[0] == '-' || l[0] == '.' ||
                  !std::all_of(l.begin(), l.end(), [](char ch) { return is_name_char(ch) || ch == '.'; })) {
                c.reject("shared_labels",
                         "'" + l + "' is not a label (1–100 of A-Z a-z 0-9 . _ -, not starting with - or .)");
              }
            }
          }),
      checked<Settings>(
          string_row("os", &Settings::os,
                     "the image's operating system, linux or windows (scale-down's minimum running time)"),
          [](const Config& c, Settings& s) {
            if (s.os != "linux" && s.os != "windows") c.reject("os", "'" + s.os + "' must be linux or windows");
          }),
      {{"scale_down_schedule", KeyType::kString, "[]",
        "the idle quota as JSON: [{\"cron\": \"* 8-18 * * mon-fri\", \"time_zone\": \"Europe/Berlin\", \"idle\": 3, "
        "\"eviction\": \"oldest_first\", \"resource_class\": \"small\"}, …]; the first entry whose cron matches the "
        "current minute decides, none matching means 0; an empty schedule keeps every idle instance "
        "(docs/configuration.md)"},
       [](const Config& c, Settings& s) {
         try {
           s.scale_down_schedule = schedule::parse_idle_schedule(c.get_string("scale_down_schedule"));
         } catch (const std::invalid_argument& e) {
           c.reject("scale_down_schedule", e.what());
         }
       }},
      millis_row<Settings>("min_running_time_linux",
                           [](Settings& s) -> int64_t& { return s.scale_down.min_running_linux_ms; },
                           "scale-down: a Linux instance younger than this is kept", Duration{0}, kDay),
      millis_row<Settings>("min_running_time_windows",
                           [](Settings& s) -> int64_t& { return s.scale_down.min_running_windows_ms; },
                           "scale-down: a Windows instance younger than this is kept", Duration{0}, kDay),
      millis_row<Settings>("runner_boot_time", [](Settings& s) -> int64_t& { return s.scale_down.boot_time_ms; },
                           "scale-down: an instance whose runner GitHub does not list this long into created, claimed "
                           "or running is marked orphan",
                           kSec, kDay),
      duration_row("scale_down_drain_wait", &Settings::scale_down_drain_wait,
                   "scale-down: how long a pass waits for the drains it started (the rest finish on the next pass)",
                   Duration{0}, kHour),
      // Serving a runner scale set.
      checked<Settings>(string_row("scale_set_name", &Settings::scale_set_name,
                                   "serve: the runner scale set's name, the label workflows give as runs-on (\"\": the "
                                   "pool's name)"),
                        [](const Config& c, Settings& s) {
                          if (s.scale_set_name.size() > 100) c.reject("scale_set_name", "must be at most 100 characters");
                        }),
      string_row("scale_set_resource_class", &Settings::scale_set_resource_class,
                 "serve: the resource class the scale set's runners come from (\"\": default_resource_class)"),
      int_row("scale_set_min_armed", &Settings::scale_set_min_armed,
              "serve: runners kept started and listening with no job, for the fastest pickup", 0, 1000),
      int_row("scale_set_max_runners", &Settings::scale_set_max_runners,
              "serve: the most runners the scale set has at once (starting, armed and busy)", 1, 10000),
      duration_row("scale_set_arm_grace", &Settings::scale_set_arm_grace,
                   "serve: an armed runner younger than this is never removed (a job may be on its way to it)",
                   Duration{0}, kHour),
      duration_row("scale_set_return_wait", &Settings::scale_set_return_wait,
                   "serve: a runner short is left to an instance being cleaned back into the pool (seconds) rather "
                   "than launched (a minute's boot) while that cleaning began less than this long ago (0: always launch)",
                   Duration{0}, kHour),
      duration_row("serve_reconcile_interval", &Settings::serve_reconcile_interval,
                   "serve: how often the scale set's instances are looked at when no message comes", 100 * kMs, kMin),
      duration_row("serve_lease_ttl", &Settings::serve_lease_ttl,
                   "serve: how long one write of the scale set's lease holds it; a standby takes over this long "
                   "after the holder's last renewal",
                   3 * kSec, kHour),
      duration_row("serve_retry_wait", &Settings::serve_retry_wait,
                   "serve: the pause after a failed call, and between attempts to open a session another listener "
                   "still holds",
                   100 * kMs, kHour),
      // Metrics.
      string_row("metrics_file", &Settings::metrics_file, "append CloudWatch embedded-metric-format lines to this file"),
      string_row("metrics_log_group", &Settings::metrics_log_group,
                 "send embedded-metric-format events to this CloudWatch Logs group"),
      checked<Settings>(string_row("metrics_namespace", &Settings::metrics_namespace,
                                   "the CloudWatch namespace of the metrics"),
                        [](const Config& c, Settings& s) {
                          if (s.metrics_namespace.empty() || s.metrics_namespace.size() > 255) {
                            c.reject("metrics_namespace", "must be 1–255 characters");
                          }
                        }),
      endpoint_row("endpoint_logs", &Settings::endpoint_logs,
                   "CloudWatch Logs endpoint URL (else AWS_ENDPOINT_URL_CLOUDWATCH_LOGS, else AWS's)"),
      // Logging: read by the command line before the settings (cli_global_options).
      {{"log_format", KeyType::kString, "text", "text or json (on stderr)"}, {}},
      {{"log_level", KeyType::kString, "info", "trace, debug, info, warn, error"}, {}},
  };
}

}  // namespace runpool::controller::settings_rows
