#include "controller/settings.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

namespace runpool::controller {
namespace {

using Env = std::map<std::string, std::string>;

Settings load(const std::string& text, const Env& env = {}) {
  Config c(settings_schema());
  c.merge_text(text, "test.conf");
  auto getenv = [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  c.merge_env(getenv);
  return load_settings(c, getenv);
}

std::string error_of(const std::string& text, const Env& env = {}) {
  try {
    load(text, env);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ResourceClasses, Parse) {
  auto rc = parse_resource_classes("small=c7i.large, m7i.large; large = m7i.2xlarge;");
  ASSERT_EQ(rc.size(), 2u);
  EXPECT_EQ(rc[0], (ResourceClass{"small", {"c7i.large", "m7i.large"}}));
  EXPECT_EQ(rc[1], (ResourceClass{"large", {"m7i.2xlarge"}}));
  EXPECT_EQ(format_resource_classes(rc), "small=c7i.large,m7i.large;large=m7i.2xlarge");
  EXPECT_EQ(parse_resource_classes("a=t3.micro,t3.micro")[0].instance_types.size(), 1u);
  EXPECT_EQ(parse_resource_classes("x=m7i-flex.large")[0].instance_types[0], "m7i-flex.large");
}

TEST(ResourceClasses, Rejects) {
  for (const char* bad : {"", ";", "small", "small=", "=c7i.large", "a b=c7i.large", "small=c7i", "small=C7I.large",
                          "small=c7i.large;small=m7i.large", "small=c7i.large;x", "s/x=c7i.large",
                          "small=c7i.large.x", "small=.large", "small=c7i.", "small=c7i.large$(id)"}) {
    EXPECT_THROW(parse_resource_classes(bad), std::invalid_argument) << bad;
  }
  EXPECT_THROW(parse_resource_classes(std::string(33, 'a') + "=c7i.large"), std::invalid_argument);
}

TEST(Settings, Defaults) {
  Settings s = load("", {{"AWS_REGION", "eu-west-1"}});
  EXPECT_EQ(s.table, "runpool");
  EXPECT_EQ(s.pool, "default");
  EXPECT_EQ(s.region, "eu-west-1");
  EXPECT_EQ(s.launch_template, "runpool-default");
  EXPECT_EQ(s.github_api_url, "https://api.github.com");
  EXPECT_EQ(s.github_server_url, "https://github.com");
  EXPECT_EQ(s.usage_class, pool::UsageClass::kSpot);
  EXPECT_TRUE(s.on_demand_fallback);
  EXPECT_EQ(s.timeouts.boot_ms, 600'000);
  EXPECT_EQ(s.timeouts.retention_ms, 86'400'000);
  EXPECT_EQ(s.poll_interval.count(), 200);
  EXPECT_EQ(s.claim_wait.count(), 1000);
  EXPECT_EQ(s.advertise_grace.count(), 60'000);
  EXPECT_EQ(s.agent_silence.count(), 600'000);
  EXPECT_TRUE(s.resource_classes.empty());
  EXPECT_THROW(require_launch(s), ConfigError);
  EXPECT_THROW(require_github(s), ConfigError);
  EXPECT_THROW(require_aws(s), ConfigError);  // no instance_role_id: records could not be keyed
  EXPECT_NO_THROW(require_aws(load("instance_role_id = AROA3XFRBF535PLBIFPI4\n", {{"AWS_REGION", "eu-west-1"}})));
  EXPECT_THROW(require_aws(load("instance_role_id = AROA3XFRBF535PLBIFPI4\n")), ConfigError);  // no region
}

// A default is written once, in Settings: what loading nothing gives is what Settings{} holds.
TEST(Settings, LoadingNothingGivesTheStructsDefaults) {
  const Settings untouched;
  Settings s = load("", {{"AWS_REGION", "eu-west-1"}});
  EXPECT_EQ(s.timeouts.boot_ms, untouched.timeouts.boot_ms);
  EXPECT_EQ(s.timeouts.registration_ms, untouched.timeouts.registration_ms);
  EXPECT_EQ(s.timeouts.max_runtime_ms, untouched.timeouts.max_runtime_ms);
  EXPECT_EQ(s.timeouts.drain_ms, untouched.timeouts.drain_ms);
  EXPECT_EQ(s.timeouts.hard_grace_ms, untouched.timeouts.hard_grace_ms);
  EXPECT_EQ(s.timeouts.idle_ttl_ms, untouched.timeouts.idle_ttl_ms);
  EXPECT_EQ(s.timeouts.terminate_ms, untouched.timeouts.terminate_ms);
  EXPECT_EQ(s.timeouts.retention_ms, untouched.timeouts.retention_ms);
  EXPECT_EQ(s.scale_down.min_running_linux_ms, untouched.scale_down.min_running_linux_ms);
  EXPECT_EQ(s.scale_down.min_running_windows_ms, untouched.scale_down.min_running_windows_ms);
  EXPECT_EQ(s.scale_down.boot_time_ms, untouched.scale_down.boot_time_ms);
  EXPECT_EQ(s.scale_down.agent_silence_ms, untouched.scale_down.agent_silence_ms);
  EXPECT_EQ(s.table, untouched.table);
  EXPECT_EQ(s.shared_labels, untouched.shared_labels);
  EXPECT_EQ(s.root_volume_device, untouched.root_volume_device);
  EXPECT_EQ(s.spot_allocation_strategy, untouched.spot_allocation_strategy);
  EXPECT_EQ(s.provision_timeout, untouched.provision_timeout);
  EXPECT_EQ(s.max_count, untouched.max_count);
}

TEST(Settings, ResourceClassImagesNameKnownClassesOnce) {
  Settings s = load("resource_classes = small=c7i.large;arm=c7g.large\nresource_class_images = arm=ami-0123456789abcdef0\n");
  EXPECT_EQ(s.resource_class_images, (std::map<std::string, std::string>{{"arm", "ami-0123456789abcdef0"}}));
  for (const char* bad : {"gpu=ami-0123456789abcdef0", "arm=ami-", "arm", "arm=ami-01234567;arm=ami-01234568",
                          "arm=i-0123456789abcdef0"}) {
    EXPECT_THROW(load(std::string("resource_classes = small=c7i.large;arm=c7g.large\nresource_class_images = ") + bad +
                      "\n"),
                 ConfigError)
        << bad;
  }
}

TEST(Settings, MaxInstanceAgeHasPerClassOverrides) {
  Settings none = load("resource_classes = small=c7i.large;large=m7i.2xlarge\n");
  EXPECT_EQ(none.max_instance_age_ms("small"), 0) << "no limit by default";
  Settings s = load("resource_classes = small=c7i.large;large=m7i.2xlarge;gpu=g5.xlarge\nmax_instance_age = 7d\n"
                    "resource_class_max_instance_age = small=3d; large = 12h\n");
  EXPECT_EQ(s.max_instance_age_ms("small"), 3 * 86'400'000LL);
  EXPECT_EQ(s.max_instance_age_ms("large"), 12 * 3'600'000LL);
  EXPECT_EQ(s.max_instance_age_ms("gpu"), 7 * 86'400'000LL);
  for (const char* bad : {"tiny=3d", "small", "small=soon", "small=3d;small=4d"}) {
    EXPECT_THROW(load(std::string("resource_classes = small=c7i.large\nresource_class_max_instance_age = ") + bad + "\n"),
                 ConfigError)
        << bad;
  }
}

TEST(Settings, ReusePolicyDefaultsAndPerClassOverrides) {
  Settings none = load("resource_classes = small=c7i.large\n");
  EXPECT_EQ(none.reuse_policy_for("small"), pool::ReusePolicy{});
  Settings s = load("resource_classes = small=c7i.large;large=m7i.2xlarge;gpu=g5.xlarge\n"
                    "reuse = same-scope\nreuse_scope = owner\n"
                    "resource_class_job_privileges = large=sudo; gpu=docker\n"
                    "resource_class_reuse = large=never\nresource_class_reuse_scope = gpu=repository\n");
  EXPECT_EQ(s.reuse_policy_for("small"),
            (pool::ReusePolicy{pool::JobPrivileges::kUser, pool::Reuse::kSameScope, pool::ReuseScope::kOwner,
                               pool::TrustDomain::kNone}));
  EXPECT_EQ(s.reuse_policy_for("large"),
            (pool::ReusePolicy{pool::JobPrivileges::kSudo, pool::Reuse::kNever, pool::ReuseScope::kOwner,
                               pool::TrustDomain::kNone}));
  EXPECT_EQ(s.reuse_policy_for("gpu"),
            (pool::ReusePolicy{pool::JobPrivileges::kDocker, pool::Reuse::kSameScope, pool::ReuseScope::kRepository,
                               pool::TrustDomain::kNone}));
  for (const char* bad : {"job_privileges = root", "reuse = sometimes", "reuse_scope = org", "trust_domain = all",
                          "resource_class_reuse = tiny=never", "resource_class_reuse = small",
                          "resource_class_reuse = small=never;small=always", "resource_class_job_privileges = small=x"}) {
    EXPECT_THROW(load(std::string("resource_classes = small=c7i.large\n") + bad + "\n"), ConfigError) << bad;
  }
}

// Root-equivalent jobs on instances any workflow reuses: refused, saying why, unless one trust domain.
TEST(Settings, ReuseAlwaysWithRootEquivalentJobsNeedsOneTrustDomain) {
  for (const char* priv : {"docker", "sudo"}) {
    try {
      load(std::string("resource_classes = small=c7i.large\njob_privileges = ") + priv + "\n");
      ADD_FAILURE() << priv << " with reuse = always was accepted";
    } catch (const ConfigError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("reuse"), std::string::npos) << what;
      EXPECT_NE(what.find("root-equivalent"), std::string::npos) << what;
      EXPECT_NE(what.find("use reuse = same-scope or never, or declare trust_domain = pool"), std::string::npos) << what;
    }
    EXPECT_NO_THROW(load(std::string("resource_classes = small=c7i.large\njob_privileges = ") + priv +
                         "\ntrust_domain = pool\n"));
    EXPECT_NO_THROW(load(std::string("resource_classes = small=c7i.large\njob_privileges = ") + priv +
                         "\nreuse = same-scope\n"));
    EXPECT_NO_THROW(load(std::string("resource_classes = small=c7i.large\njob_privileges = ") + priv +
                         "\nreuse = never\n"));
  }
  // A class's own override is what is checked, and the error names the key that made it so.
  try {
    load("resource_classes = small=c7i.large;big=m7i.2xlarge\nresource_class_job_privileges = big=sudo\n");
    ADD_FAILURE() << "big: sudo with reuse = always was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("resource_class_job_privileges"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("class 'big'"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(load("resource_classes = small=c7i.large;big=m7i.2xlarge\nresource_class_job_privileges = big=sudo\n"
                       "resource_class_reuse = big=never\n"));
  EXPECT_NO_THROW(load("resource_classes = small=c7i.large;big=m7i.2xlarge\njob_privileges = sudo\n"
                       "resource_class_trust_domain = small=pool;big=pool\n"));
}

TEST(Settings, InstanceTagsAndRootVolume) {
  Settings s = load("instance_tags = Name=ci-runner CostCenter=42\nroot_volume_size = 100\nroot_volume_type = gp3\n");
  ASSERT_EQ(s.instance_tags.size(), 2u);
  EXPECT_EQ(s.instance_tags[0], (std::pair<std::string, std::string>{"Name", "ci-runner"}));
  EXPECT_EQ(s.root_volume_size, 100);
  EXPECT_EQ(s.root_volume_type, "gp3");
  EXPECT_EQ(s.root_volume_device, "/dev/xvda");
  for (const char* bad : {"instance_tags = runpool:pool=x", "instance_tags = aws:foo=1", "instance_tags = novalue",
                          "instance_tags = =x", "root_volume_type = ssd", "root_volume_size = -1",
                          "root_volume_device = xvda", "root_volume_device = /dev/x;rm"}) {
    EXPECT_THROW(load(std::string(bad) + "\n"), ConfigError) << bad;
  }
}

TEST(Settings, InstanceRoleIdIsARolesUniqueIdAndReachesTheAgent) {
  Settings s = load("instance_role_id = AROA3XFRBF535PLBIFPI4\n", {{"AWS_REGION", "eu-west-1"}});
  EXPECT_EQ(s.instance_role_id, "AROA3XFRBF535PLBIFPI4");
  bool passed = false;
  for (const auto& [k, v] : s.agent_config) passed |= k == "instance_role_id" && v == "AROA3XFRBF535PLBIFPI4";
  EXPECT_TRUE(passed);
  for (const char* bad : {"runpool-agent", "arn:aws:iam::123456789012:role/runpool-agent", "AIDA3XFRBF535PLBIFPI4",
                          "aroa3xfrbf535plbifpi4"}) {
    EXPECT_THROW(load(std::string("instance_role_id = ") + bad + "\n"), ConfigError) << bad;
  }
}

TEST(Settings, FileEnvAndTypedValues) {
  Settings s = load(
      "region = us-east-1\npool = ci\nresource_classes = small=c7i.large;large=m7i.2xlarge\n"
      "default_resource_class = large\nsubnets = subnet-0a1b, subnet-2c3d\nimage_id = ami-12345678\n"
      "security_groups = sg-1234abcd\nusage_class = on-demand\nboot_timeout = 90s\nidle_ttl = 2h\n"
      "github_api_url = http://127.0.0.1:9/api/v3/\ngithub_owner = acme/app\n",
      {{"RUNPOOL_GITHUB_TOKEN", "ghp_x"}, {"RUNPOOL_POOL", "ci2"}});
  EXPECT_EQ(s.pool, "ci2");
  EXPECT_EQ(s.queue_name("small"), "ci2-small");
  EXPECT_EQ(s.default_resource_class, "large");
  ASSERT_NE(s.find_class("small"), nullptr);
  EXPECT_EQ(s.find_class("nope"), nullptr);
  EXPECT_EQ(s.subnets, (std::vector<std::string>{"subnet-0a1b", "subnet-2c3d"}));
  EXPECT_EQ(s.usage_class, pool::UsageClass::kOnDemand);
  EXPECT_EQ(s.timeouts.boot_ms, 90'000);
  EXPECT_EQ(s.timeouts.idle_ttl_ms, 7'200'000);
  EXPECT_EQ(s.github_api_url, "http://127.0.0.1:9/api/v3");
  EXPECT_EQ(s.github_server_url, "http://127.0.0.1:9");
  EXPECT_EQ(s.github_token.reveal(), "ghp_x");
  EXPECT_NO_THROW(require_launch(s));
  EXPECT_NO_THROW(require_github(s));
  EXPECT_EQ(load("resource_classes = a=t3.micro;b=t3.small\n").default_resource_class, "a");
}

TEST(Settings, RefreshGracesAreTheirOwnKeys) {
  Settings s = load("advertise_grace = 30s\nagent_silence = 3m\nmax_heartbeat_age = 1m\n");
  EXPECT_EQ(s.advertise_grace.count(), 30'000);
  EXPECT_EQ(s.agent_silence.count(), 180'000);
  EXPECT_EQ(load("", {{"RUNPOOL_AGENT_SILENCE", "121s"}}).agent_silence.count(), 121'000);
  EXPECT_EQ(load("max_heartbeat_age = 10s\n").agent_silence.count(), 600'000) << "not derived from max_heartbeat_age";
}

TEST(Settings, SharedPoolsScaleDownAndMetrics) {
  Settings d = load("");
  EXPECT_FALSE(d.shared);
  EXPECT_EQ(d.shared_label_list("small"), "self-hosted,linux,x64,small");
  EXPECT_EQ(d.os, "linux");
  EXPECT_TRUE(d.scale_down_schedule.empty()) << "no schedule: every class's quota is 0";
  EXPECT_EQ(d.scale_down.min_running_linux_ms, 5 * 60'000);
  EXPECT_EQ(d.scale_down.min_running_windows_ms, 15 * 60'000);
  EXPECT_EQ(d.scale_down.boot_time_ms, 5 * 60'000);
  EXPECT_EQ(d.scale_down.agent_silence_ms, d.agent_silence.count()) << "one silence bound for refresh and scale-down";
  EXPECT_EQ(d.metrics_namespace, "runpool");
  EXPECT_EQ(d.github_max_pages, 1000) << "a runner listing covers 100,000 runners before it refuses";

  Settings s = load(
      "pool_mode = shared\nshared_labels = self-hosted linux,gpu\nos = windows\n"
      "scale_down_schedule = [{\"cron\": \"* 8-18 * * mon-fri\", \"time_zone\": \"Europe/Berlin\", \"idle\": 3}]\n"
      "min_running_time_windows = 20m\nrunner_boot_time = 2m\nscale_down_drain_wait = 0s\n");
  EXPECT_TRUE(s.shared);
  EXPECT_EQ(s.agent_config.back(), (std::pair<std::string, std::string>{"wake_queue", "false"}))
      << "shared runners have no wake-up queue to look for";
  EXPECT_EQ(s.shared_label_list("large"), "self-hosted,linux,gpu,large");
  EXPECT_EQ(s.os, "windows");
  ASSERT_EQ(s.scale_down_schedule.size(), 1u);
  EXPECT_EQ(s.scale_down_schedule[0].idle, 3);
  EXPECT_EQ(s.scale_down.min_running_windows_ms, 20 * 60'000);
  EXPECT_EQ(s.scale_down.boot_time_ms, 2 * 60'000);
  EXPECT_EQ(s.scale_down_drain_wait.count(), 0);

  EXPECT_NE(error_of("pool_mode = pooled").find("pool_mode"), std::string::npos);
  EXPECT_NE(error_of("shared_labels = ok,bad;label").find("shared_labels"), std::string::npos);
  EXPECT_NE(error_of("shared_labels = -dash").find("shared_labels"), std::string::npos);
  EXPECT_NE(error_of("os = macos").find("os"), std::string::npos);
  EXPECT_NE(error_of("scale_down_schedule = [{\"cron\": \"* 25 * * *\", \"idle\": 1}]").find("scale_down_schedule"),
            std::string::npos);
  EXPECT_NE(error_of("scale_down_schedule = {").find("scale_down_schedule"), std::string::npos);
  EXPECT_NE(error_of("endpoint_logs = ftp://x").find("endpoint_logs"), std::string::npos);
  EXPECT_NE(error_of("metrics_namespace = ").find("metrics_namespace"), std::string::npos);
}

TEST(Settings, GithubServerDerivation) {
  EXPECT_EQ(github_server_for_api("https://api.github.com"), "https://github.com");
  EXPECT_EQ(github_server_for_api("https://ghes.example.com/api/v3"), "https://ghes.example.com");
  EXPECT_EQ(github_server_for_api("https://api.acme.ghe.com"), "https://acme.ghe.com");
  EXPECT_EQ(load("github_server_url = https://web.example/\n").github_server_url, "https://web.example");
}

TEST(Settings, GithubUrlsConfiguredBeatTheWorkflowsEnvironment) {
  const Env job = {{"GITHUB_API_URL", "https://ghes.example.com/api/v3"},
                   {"GITHUB_SERVER_URL", "https://ghes.example.com"}};
  // Neither URL configured: the job's (a workflow on GHES or GHE.com needs no setting).
  Settings s = load("", job);
  EXPECT_EQ(s.github_api_url, "https://ghes.example.com/api/v3");
  EXPECT_EQ(s.github_server_url, "https://ghes.example.com");
  // Configured in the file, RUNPOOL_*, or as the default's own value: the configuration wins.
  s = load("github_api_url = https://api.acme.ghe.com\n", job);
  EXPECT_EQ(s.github_api_url, "https://api.acme.ghe.com");
  EXPECT_EQ(s.github_server_url, "https://acme.ghe.com");
  Env both = job;
  both["RUNPOOL_GITHUB_API_URL"] = "https://api.github.com";
  s = load("", both);
  EXPECT_EQ(s.github_api_url, "https://api.github.com");
  EXPECT_EQ(s.github_server_url, "https://github.com");
  s = load("github_server_url = https://acme.ghe.com\n", job);
  EXPECT_EQ(s.github_api_url, "https://api.acme.ghe.com");
  EXPECT_EQ(s.github_server_url, "https://acme.ghe.com");
  EXPECT_NE(error_of("", {{"GITHUB_API_URL", "not a url"}}).find("GITHUB_API_URL"), std::string::npos);
}

TEST(Settings, RunnerGroupsAndEnterpriseOwners) {
  Settings s = load("github_owner = octo-org\ngithub_runner_group = Linux GPU\n");
  EXPECT_EQ(s.github_runner_group, "Linux GPU");
  EXPECT_NE(std::find(s.agent_config.begin(), s.agent_config.end(),
                      std::pair<std::string, std::string>{"runner_group", "Linux GPU"}),
            s.agent_config.end());
  s = load("github_owner = enterprise:octo-corp\ngithub_runner_group = ent\ngithub_token = ghp_x\n");
  EXPECT_EQ(s.github_owner, "enterprise:octo-corp");
  // No group: the agent is told none (the Default group).
  for (const auto& [k, v] : load("github_owner = octo-org\n").agent_config) EXPECT_NE(k, "runner_group");
  // A repository's runners have no group to join; a name that could read as an option is refused.
  EXPECT_NE(error_of("github_owner = octo/app\ngithub_runner_group = g\n").find("is a repository"), std::string::npos);
  for (const char* bad : {"--url", "-x", "a/b", "a;b", "a=b"}) {
    std::string e = error_of(std::string("github_owner = octo\ngithub_runner_group = ") + bad + "\n");
    EXPECT_NE(e.find("github_runner_group"), std::string::npos) << bad << ": " << e;
  }
  // GitHub Apps cannot manage enterprise runners.
  std::string e = error_of("github_owner = enterprise:octo-corp\ngithub_app_id = 123\ngithub_app_private_key_file = /k\n");
  EXPECT_NE(e.find("github_app_id"), std::string::npos) << e;
  EXPECT_NE(e.find("manage_runners:enterprise"), std::string::npos) << e;
  EXPECT_NE(error_of("github_owner = enterprise:a/b\n").find("github_owner"), std::string::npos);
}

TEST(Settings, ErrorsNameTheKey) {
  struct Case {
    const char* text;
    const char* key;
  };
  for (const Case& c : std::vector<Case>{
           {"table = ab\n", "table"},
           {"table = a b c\n", "table"},
           {"pool = a/b\n", "pool"},
           {"pool = ppppppppppppppppppppppppppppppppppppppppp\n", "pool"},
           {"endpoint_sqs = 127.0.0.1:9\n", "endpoint_sqs"},
           {"github_api_url = ftp://x\n", "github_api_url"},
           {"github_owner = a/b/c\n", "github_owner"},
           {"resource_classes = small\n", "resource_classes"},
           {"resource_classes = wake-up=t3.micro\n", "resource_classes"},
           {"resource_classes = a=t3.micro\ndefault_resource_class = b\n", "default_resource_class"},
           {"usage_class = cheap\n", "usage_class"},
           {"subnets = vpc-123\n", "subnets"},
           {"image_id = ubuntu\n", "image_id"},
           {"security_groups = default\n", "security_groups"},
           {"launch_template = a b\n", "launch_template"},
           {"launch_template = lt-0123456789abcdef0\n", "launch_template"},
           {"launch_template = lt-0abc1234\n", "launch_template"},
           {"boot_timeout = soon\n", "boot_timeout"},
           {"claim_wait = 30s\n", "claim_wait"},
           {"fleet_rounds = 0\n", "fleet_rounds"},
           {"aws_max_attempts = x\n", "aws_max_attempts"},
           {"agent_extra = nokey\n", "agent_extra"},
           {"max_heartbeat_age = 5s\nagent_heartbeat_interval = 10s\n", "max_heartbeat_age"},
           // Values the agent itself would refuse (its bounds are shared): never rendered into user-data.
           {"agent_heartbeat_interval = 10ms\n", "agent_heartbeat_interval"},
           {"agent_heartbeat_interval = 2h\n", "agent_heartbeat_interval"},
           {"agent_assignment_poll_interval = 10ms\n", "agent_assignment_poll_interval"},
           {"agent_assignment_poll_interval = 6m\n", "agent_assignment_poll_interval"},
           {"agent_silence = 2m\n", "agent_silence"},
           {"agent_silence = 10m\nmax_heartbeat_age = 15m\n", "agent_silence"},
           {"agent_silence = 0s\n", "agent_silence"},
           {"advertise_grace = 0s\n", "advertise_grace"},
           {"advertise_grace = 2h\n", "advertise_grace"},
           {"ghost_runner_grace = 5m\n", "ghost_runner_grace"},
           {"agent_drain_capable = maybe\n", "agent_drain_capable"},
           {"agent_binary = runpool-agent\n", "agent_binary"},
           {"agent_binary = /usr/bin/agent'x\n", "agent_binary"},
           {"github_token = t\ngithub_app_id = 1\n", "github_app_id"},
           {"no_such_key = 1\n", "no_such_key"},
       }) {
    std::string e = error_of(c.text);
    EXPECT_NE(e.find(c.key), std::string::npos) << c.text << " → " << e;
  }
  std::string e = error_of("", {{"RUNPOOL_FLEET_ROUNDS", "99"}});
  EXPECT_NE(e.find("RUNPOOL_FLEET_ROUNDS"), std::string::npos) << e;
}

// A stack's launch template id put where its name belongs is refused with the fix named; a name
// that merely starts with lt- is a name.
TEST(Settings, LaunchTemplateIdIsRefusedWithTheFix) {
  std::string e = error_of("launch_template = lt-0123456789abcdef0\n");
  EXPECT_NE(e.find("is a launch template id"), std::string::npos) << e;
  EXPECT_NE(e.find("LaunchTemplateName"), std::string::npos) << e;
  EXPECT_EQ(load("launch_template = lt-runners\n", {{"AWS_REGION", "eu-west-1"}}).launch_template, "lt-runners");
  EXPECT_EQ(load("launch_template = lt-0123456789abcdef0x\n", {{"AWS_REGION", "eu-west-1"}}).launch_template,
            "lt-0123456789abcdef0x");
}

TEST(Settings, RequireGithubForms) {
  EXPECT_NO_THROW(require_github(load("github_owner = acme\ngithub_app_id = 12\ngithub_app_private_key_file = /k.pem\n")));
  EXPECT_THROW(require_github(load("github_owner = acme\ngithub_app_id = 12\n")), ConfigError);
  EXPECT_THROW(require_github(load("github_token = t\n")), ConfigError);
}

TEST(Settings, AgentConfigCarriesWhereThePoolLivesAndTheAgentKeysThatAreSet) {
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(load("").agent_config, (Pairs{{"table", "runpool"}, {"pool", "default"}}));
  Settings s = load(
      "region = us-east-1\nendpoint_dynamodb = http://127.0.0.1:1\nendpoint_sqs = http://127.0.0.1:2\n"
      "agent_runner_user = ci\nagent_drain_capable = true\nagent_heartbeat_interval = 500ms\n"
      "agent_extra = boot_grace=30s; listener_max_restarts = 3\n");
  EXPECT_EQ(s.agent_config, (Pairs{{"table", "runpool"},
                                   {"pool", "default"},
                                   {"region", "us-east-1"},
                                   {"endpoint_dynamodb", "http://127.0.0.1:1"},
                                   {"endpoint_sqs", "http://127.0.0.1:2"},
                                   {"runner_user", "ci"},
                                   {"drain_capable", "true"},
                                   {"heartbeat_interval", "500ms"},
                                   {"boot_grace", "30s"},
                                   {"listener_max_restarts", "3"}}));
  EXPECT_NE(error_of("agent_extra = Bad-Key=1\n").find("agent_extra"), std::string::npos);
  EXPECT_NE(error_of("agent_extra = =1\n").find("agent_extra"), std::string::npos);
}

TEST(Settings, SecretsAreNotEchoed) {
  std::string e = error_of("github_token = hunter2\ngithub_app_id = 1\n");
  EXPECT_EQ(e.find("hunter2"), std::string::npos) << e;
}

}  // namespace
}  // namespace runpool::controller

namespace runpool::controller {
namespace {

// docs/runpoolctl.md lists every key (its table is `runpoolctl config --reference`).
TEST(Settings, TheDocsListEveryKey) {
  std::ifstream in(std::string(RUNPOOL_SOURCE_DIR) + "/docs/runpoolctl.md");
  ASSERT_TRUE(in) << "docs/runpoolctl.md";
  std::stringstream ss;
  ss << in.rdbuf();
  for (const auto& spec : settings_schema()) {
    EXPECT_NE(ss.str().find("| `" + spec.key + "` |"), std::string::npos) << spec.key << " is not in docs/runpoolctl.md";
  }
}

}  // namespace
}  // namespace runpool::controller
