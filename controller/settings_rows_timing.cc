// Settings: lifecycle deadlines and how runpoolctl waits.
#include "controller/settings_rows.h"

#include <filesystem>
#include <stdexcept>

#include "common/cloud_init/agent_key_bounds.h"
#include "common/github/endpoint.h"
#include "common/pool/record_key.h"
#include "controller/user_data.h"

namespace runpool::controller::settings_rows {

std::vector<Row> timing_rows() {
  using K = KeyType;
  return {
      // Lifecycle deadlines (pool::Timeouts).
      millis_row<Settings>("boot_timeout", [](Settings& s) -> int64_t& { return s.timeouts.boot_ms; },
                           "created: launch → registered, else terminated", kSec, kDay),
      millis_row<Settings>("registration_timeout", [](Settings& s) -> int64_t& { return s.timeouts.registration_ms; },
                           "claimed: claim → registered, else terminated", kSec, kDay),
      millis_row<Settings>("max_runtime", [](Settings& s) -> int64_t& { return s.timeouts.max_runtime_ms; },
                           "running: then a drain starts", kSec, 30 * kDay),
      millis_row<Settings>("drain_timeout", [](Settings& s) -> int64_t& { return s.timeouts.drain_ms; },
                           "draining: drain → drained, else terminated", kSec, kDay),
      millis_row<Settings>("hard_grace", [](Settings& s) -> int64_t& { return s.timeouts.hard_grace_ms; },
                           "running: terminated regardless this long after max_runtime", kSec, kDay),
      millis_row<Settings>("idle_ttl", [](Settings& s) -> int64_t& { return s.timeouts.idle_ttl_ms; },
                           "idle: an unclaimed instance retires after this", kSec, 30 * kDay),
      millis_row<Settings>("terminate_timeout", [](Settings& s) -> int64_t& { return s.timeouts.terminate_ms; },
                           "terminating: retry termination until then", kSec, kDay),
      millis_row<Settings>("retention", [](Settings& s) -> int64_t& { return s.timeouts.retention_ms; },
                           "terminated records are deleted after this", kSec, 365 * kDay),
      // How runpoolctl waits.
      duration_row("init_timeout", &Settings::init_timeout,
                   "init: how long to wait for the table and its index to become active", kSec, kDay),
      duration_row("provision_timeout", &Settings::provision_timeout,
                   "provision: claim + launch + registration must finish in this", kSec, kDay),
      duration_row("provision_straggler_wait", &Settings::provision_straggler_wait,
                   "provision with --min-count: once that many run, how much longer the rest may take before they are "
                   "let go",
                   Duration{0}, kHour),
      duration_row("release_timeout", &Settings::release_timeout,
                   "release --wait: how long to wait for the agents' drained", kSec, kDay),
      duration_row("cancel_drain_wait", &Settings::cancel_drain_wait,
                   "a failed provision: how long to wait for claimed instances to drain back to the pool", Duration{0},
                   kHour),
      duration_row("poll_interval", &Settings::poll_interval, "how often waits re-read the table", 10 * kMs, kMin),
      duration_row("claim_wait", &Settings::claim_wait, "long poll of one pool receive (0–20s)", Duration{0}, 20 * kSec),
      duration_row("claim_visibility", &Settings::claim_visibility, "a received pool message stays hidden this long",
                   kSec, 12 * kHour),
      duration_row("claim_min_remaining", &Settings::claim_min_remaining,
                   "an idle instance must have this much idle life left to be claimed", Duration{0}, kDay),
      duration_row("max_heartbeat_age", &Settings::max_heartbeat_age,
                   "an idle instance's agent must have beaten this recently", kSec, kDay),
      int_row("fleet_rounds", &Settings::fleet_rounds, "CreateFleet calls per usage class to top up a partial launch", 1,
              10),
      int_row("max_count", &Settings::max_count, "the most instances one provision may ask for", 1, 1000),
      duration_row("orphan_grace", &Settings::orphan_grace,
                   "refresh: a tagged instance without a live record is terminated after this", kSec, kDay),
      duration_row("rerun_window", &Settings::rerun_window,
                   "refresh: for this long after a release, a re-run of the workflow run (GitHub's \"re-run failed "
                   "jobs\") whose jobs wait on the released label gets runners for it again; then what the "
                   "provision was for is forgotten (0: re-runs are not served). The token needs Actions: read on the "
                   "repositories",
                   Duration{0}, 30 * kDay),
      duration_row("keep_failed", &Settings::keep_failed,
                   "keep a failed instance (its agent reported failed, or it never registered in time) running for "
                   "this long for inspection instead of terminating it: out of service (its registration token "
                   "removed), billed as any running instance; then refresh terminates it (0: terminate at once)",
                   Duration{0}, 7 * kDay),
      duration_row("advertise_grace", &Settings::advertise_grace,
                   "refresh: an idle record whose pool message may be missing (advertise_pending still set) is "
                   "re-advertised after this; a release's SendMessage must fit in it",
                   kSec, kHour),
      duration_row("runner_listing_interval", &Settings::runner_listing_interval,
                   "refresh: all of GitHub's runners are listed at most this often; between listings the runners of "
                   "records that changed are looked up by id, and a runner whose record never got its id (an "
                   "instance lost before its agent reported) waits for the next listing (0: every pass lists)",
                   Duration{0}, kDay),
      checked<Settings>(duration_row("agent_silence", &Settings::agent_silence,
                                     "refresh: an idle instance whose agent has not beaten for this long is terminated "
                                     "(longer than max_heartbeat_age)",
                                     kSec, kDay),
                        [](const Config&, Settings& s) { s.scale_down.agent_silence_ms = s.agent_silence.count(); }),
      duration_row("max_instance_age", &Settings::max_instance_age,
                   "an idle instance older than this (since its launch) is never claimed and refresh retires it, so a "
                   "warm pool keeps rolling onto the current image and runner (0: no limit)",
                   Duration{0}, 365 * kDay),
      {{"resource_class_max_instance_age", K::kString, "",
        "max_instance_age of particular resource classes, class=duration[;class=duration] (small=3d;large=7d); "
        "others use max_instance_age"},
       [](const Config& c, Settings& s) {
         per_class_entries(
             c, s, "resource_class_max_instance_age", "class=duration",
             [](const std::string& v) {
               auto d = parse_duration(v);
               return d && d->count() >= 0 ? d : std::nullopt;
             },
             [&](const std::string& cls, Duration age) { s.resource_class_max_instance_age[cls] = age; });
       }},
  };
}

}  // namespace runpool::controller::settings_rows
