// A newcomer follows docs/install.md literally on the local cloud: each numbered step of the serve
// and the step style, its commands taken from the doc's marked code blocks (tests/e2e/doc_steps.h),
// run by bash as written, with only the local cloud substituted — its endpoints, the doc's example
// names and paths, and shims for what a laptop lacks (sudo, systemctl, journalctl: the units'
// own ExecStart and EnvironmentFile lines, run as processes of the test). The stack step is
// played: its parameters are checked against the template, and a stack with the template's
// outputs (valued as it would value them) is made in moto's CloudFormation, the local cloud having
// none; `runpoolctl config from-stack` reads it there. A step that is missing or wrong in the doc
// — a setting not written, a unit or command that does not exist, a count that is off — fails.
#include <fnmatch.h>
#include <signal.h>

#include <regex>

#include "common/aws/aws_caller.h"
#include "common/aws/cloudwatch_logs.h"
#include "common/aws/ec2_query.h"
#include "common/http.h"
#include "controller/cloudformation_stack.h"
#include "tests/e2e/doc_steps.h"
#include "tests/e2e/serve_fixture.h"
#include "tests/moto/moto_server.h"

namespace runpool::controller::e2e {
namespace {

const std::string kSource = RUNPOOL_SOURCE_DIR;

// ---- the doc parser, on tables of cases

struct PathCase {
  std::string name, text;
  int steps;
  std::vector<std::string> errors;  // substrings, in order
};

TEST(DocSteps, ReadsThePathItsCountsAndItsMarkers) {
  const std::string good =
      "- **serve style: 2 steps** — x\n## A\nThe path, **2 steps**:\n<!-- newcomer-path: serve -->\n"
      "1. **One.**\n   <!-- newcomer: serve 1 run -->\n\n   ```sh\n   echo one\n     indented\n   ```\n"
      "2. **Two.**\n   <!-- newcomer: serve 2 elsewhere packaging.image -->\n## B\n3. not the path's\n";
  const std::vector<PathCase> cases = {
      {"good", good, 2, {}},
      {"count off", std::regex_replace(good, std::regex("\\*\\*2 steps"), "**3 steps"), 2,
       {"the doc says 3 steps; the path numbers 2"}},
      {"no path", "**serve style: 1 steps**\n1. x\n", 0, {"no <!-- newcomer-path: serve -->"}},
      {"a step skipped", std::regex_replace(good, std::regex("\n2\\. "), "\n3. "), 3,
       {"step 3 follows step 1", "a marker for step 2 is in step 3", "step 3 has no newcomer marker",
        "the doc says 2 steps; the path numbers 3", "the doc says 2 steps; the path numbers 3"}},
      {"no block", std::regex_replace(good, std::regex(" *```sh[\\s\\S]*?```\n"), ""), 2,
       {"step 1: no fenced code block follows the marker"}},
      {"elsewhere nowhere", std::regex_replace(good, std::regex(" packaging.image"), ""), 2,
       {"step 2: elsewhere without saying where or why"}},
      {"unknown mode", std::regex_replace(good, std::regex("serve 1 run"), "serve 1 try"), 2,
       {"step 1: unknown mode try"}},
  };
  for (const auto& c : cases) {
    DocPath p = read_doc_path(c.text, "serve");
    EXPECT_EQ(p.steps, c.steps) << c.name;
    ASSERT_EQ(p.errors.size(), c.errors.size()) << c.name << ": " << ::testing::PrintToString(p.errors);
    for (size_t i = 0; i < c.errors.size(); ++i) {
      EXPECT_NE(p.errors[i].find(c.errors[i]), std::string::npos) << c.name << ": " << p.errors[i];
    }
  }
  DocPath p = read_doc_path(good, "serve");
  ASSERT_EQ(p.markers.size(), 2u);
  EXPECT_EQ(p.markers[0].block, "echo one\n  indented\n");
  EXPECT_EQ(p.markers[1].detail, "packaging.image");
  EXPECT_EQ(p.stated_counts, (std::vector<int>{2, 2}));
}

// ---- the stack, played

// The top-level mapping `section` of the template: each key at two spaces, with its lines.
std::map<std::string, std::string> template_section(const std::string& section) {
  std::map<std::string, std::string> out;
  bool in = false;
  std::string key;
  for (const std::string& l : doc_lines(testing::slurp(kSource + "/packaging/cloudformation/runpool.yaml"))) {
    if (!l.empty() && l[0] != ' ' && l[0] != '#') {
      in = l == section + ":";
      continue;
    }
    std::smatch m;
    if (in && std::regex_match(l, m, std::regex("^  ([A-Za-z0-9]+):\\s*$"))) key = m[1];
    if (in && !key.empty()) out[key] += l + "\n";
  }
  return out;
}

// The words of a shell command line, its continuations joined and quotes taken off.
std::vector<std::string> shell_words(const std::string& block) {
  const std::string joined = std::regex_replace(block, std::regex("\\\\\n"), " ");
  std::vector<std::string> words;
  std::istringstream in(joined);
  for (std::string w; in >> w;) words.push_back(std::regex_replace(w, std::regex("['\"]"), ""));
  return words;
}

struct StackStep {
  std::string stack_name;
  std::map<std::string, std::string> parameters;
};

// `aws cloudformation deploy` as the doc gives it, checked against the template.
StackStep read_stack_step(const std::string& block) {
  StackStep s;
  const std::vector<std::string> w = shell_words(block);
  EXPECT_GE(w.size(), 3u);
  EXPECT_TRUE(w.size() >= 3 && w[0] == "aws" && w[1] == "cloudformation" && w[2] == "deploy") << block;
  std::set<std::string> caps;
  std::string option;
  for (size_t i = 3; i < w.size(); ++i) {
    if (w[i].rfind("--", 0) == 0) {
      option = w[i];
    } else if (option == "--stack-name") {
      s.stack_name = w[i];
    } else if (option == "--template-file") {
      EXPECT_TRUE(fs::exists(kSource + "/" + w[i])) << "the doc's template " << w[i];
    } else if (option == "--capabilities") {
      caps.insert(w[i]);
    } else if (option == "--parameter-overrides") {
      auto eq = w[i].find('=');
      EXPECT_NE(eq, std::string::npos) << w[i];
      if (eq != std::string::npos) s.parameters[w[i].substr(0, eq)] = w[i].substr(eq + 1);
    }
  }
  EXPECT_FALSE(s.stack_name.empty()) << block;
  // The template makes IAM roles and expands Fn::ForEach: deploy refuses it without both.
  EXPECT_TRUE(caps.count("CAPABILITY_IAM") && caps.count("CAPABILITY_AUTO_EXPAND")) << block;
  const auto params = template_section("Parameters");
  EXPECT_GT(params.size(), 5u);
  for (const auto& [k, v] : s.parameters) EXPECT_TRUE(params.count(k)) << "the template has no parameter " << k;
  for (const auto& [k, body] : params) {
    if (body.find("\n    Default:") == std::string::npos) {
      EXPECT_TRUE(s.parameters.count(k)) << "the doc's stack gives no " << k << ", which has no default";
    }
  }
  return s;
}

std::string param_or_default(const StackStep& s, const std::string& key) {
  if (auto it = s.parameters.find(key); it != s.parameters.end()) return it->second;
  std::smatch m;
  const std::string body = template_section("Parameters")[key];
  return std::regex_search(body, m, std::regex("\n    Default: '?([^'\n]*)'?\n")) ? m[1].str() : "";
}

class Newcomer : public ServeTestOf<E2eTest> {
 protected:
  void SetUp() override {
    ServeTestOf<E2eTest>::SetUp();
    dir_ = fs::path(base_) / "newcomer";
    for (const char* d : {"etc", "bin", "run", "log"}) fs::create_directories(dir_ / d);
    install_shims();
  }
  void TearDown() override {
    stop_units();
    ServeTestOf<E2eTest>::TearDown();
  }

  static runpool::testing::MotoServer& moto() {
    static runpool::testing::MotoServer server(RUNPOOL_MOTO_SERVER);
    return server;
  }

  // What the stack would have made that the steps after it use: the launch template (image and
  // security groups), the metrics log group; and the stack's outputs, in moto's CloudFormation.
  void play_stack(const StackStep& s) {
    const std::string pool = param_or_default(s, "PoolName"), table = param_or_default(s, "TableName");
    aws::CreateLaunchTemplateRequest lt;
    lt.name = "runpool-" + pool;
    lt.data.image_id = s.parameters.at("ImageId");
    lt.data.security_group_ids = {s.parameters.at("SecurityGroupIds")};
    try {
      aws_.ec2.create_launch_template(lt);
    } catch (const aws::AwsError& e) {
      ASSERT_NE(std::string(e.what()).find("AlreadyExists"), std::string::npos) << e.what();  // the other style's
    }
    CurlHttpClient http;
    aws::AwsCaller logs_caller(http, aws_.creds, system_clock(), {"logs", cloud_.logs(), cloud_.region()});
    aws::CloudWatchLogsClient(logs_caller).create_log_group("/runpool/" + pool + "/metrics");

    // Every output the template declares, valued as the template values it (ids made up).
    const std::map<std::string, std::string> values = {
        {"Table", table},
        {"Pool", pool},
        {"InstanceProfile", "runpool-" + pool + "-InstanceProfile-NewComer1"},
        {"InstanceRoleId", cloud_.instance_role_id()},
        {"LaunchTemplate", "lt-0123456789abcdef0"},
        {"LaunchTemplateName", "runpool-" + pool},
        {"MetricsLogGroup", "/runpool/" + pool + "/metrics"},
        {"ControllerPolicyArn", "arn:aws:iam::" + cloud_.account_id() + ":policy/runpool-controller"}};
    Json::Value tmpl;
    tmpl["Resources"]["Queue"]["Type"] = "AWS::SQS::Queue";
    for (const auto& [key, body] : template_section("Outputs")) {
      const bool conditional = body.find("\n    Condition:") != std::string::npos;
      if (key == "Region") {
        tmpl["Outputs"][key]["Value"]["Ref"] = "AWS::Region";
      } else if (values.count(key)) {
        tmpl["Outputs"][key]["Value"] = values.at(key);
      } else if (!conditional) {
        tmpl["Outputs"][key]["Value"] = "made-by-the-stack";
      }
    }
    aws::StaticCredentialsProvider creds(cloud_.controller_credentials());
    aws::AwsCaller cfn(http, creds, system_clock(), {"cloudformation", moto().endpoint(), cloud_.region()});
    auto call = [&](const std::string& action, const std::string& params) {
      HttpRequest r;
      r.method = "POST";
      r.headers = {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
      r.body = "Action=" + action + "&Version=2010-05-15&StackName=" + url_encode(s.stack_name) + params;
      cfn.call(action, std::move(r), aws::parse_ec2_error);
    };
    call("DeleteStack", "");  // the other style's stack of the same name (none: a no-op)
    call("CreateStack", "&TemplateBody=" + url_encode(write_json(tmpl)));
    EXPECT_EQ(describe_stack(cfn, s.stack_name).status, "CREATE_COMPLETE");
  }

  // ---- the commands, run as the doc gives them

  // The doc's example names and paths, as they are on the local cloud.
  std::string localised(std::string text) const {
    const std::vector<std::pair<std::string, std::string>> subs = {
        {"/etc/runpool/", (dir_ / "etc").string() + "/"},
        {"/opt/actions-runner", base_ + "/runner-template"},
        {"example-org/example-repo", "acme/app"},
        {"eu-west-1", cloud_.region()}};
    for (const auto& [from, to] : subs) {
      for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
      }
    }
    return text;
  }

  // The environment of every step: the controller's credentials and token, and the local cloud's
  // settings no doc gives (endpoints, the agent's local paths and quick timings: the fixture's).
  std::string environment() const {
    static const std::set<std::string> local = {
        "endpoint_dynamodb", "endpoint_sqs", "endpoint_ec2", "github_api_url", "user_data_template",
        "agent_binary", "agent_runner_root", "agent_runner_user", "agent_heartbeat_interval",
        "agent_assignment_poll_interval", "agent_extra", "poll_interval", "claim_wait", "release_timeout",
        "cancel_drain_wait", "provision_timeout", "max_heartbeat_age", "scale_set_arm_grace",
        "serve_reconcile_interval", "serve_lease_ttl", "serve_retry_wait"};
    std::map<std::string, std::string> env = pool_->env();
    for (const std::string& l : doc_lines(testing::slurp(pool_->config_path()))) {
      auto eq = l.find(" = ");
      if (eq == std::string::npos || !local.count(l.substr(0, eq))) continue;
      std::string var = "RUNPOOL_" + l.substr(0, eq);
      std::transform(var.begin(), var.end(), var.begin(), ::toupper);
      env[var] = l.substr(eq + 3);
    }
    env["RUNPOOL_ENDPOINT_LOGS"] = cloud_.logs();
    env["AWS_ENDPOINT_URL_CLOUDFORMATION"] = moto().endpoint();
    env["PATH"] = (dir_ / "bin").string() + ":/usr/bin:/bin";
    std::string out;
    for (const auto& [k, v] : env) out += "export " + k + "='" + v + "'\n";
    return out;
  }

  // Runs one block in the newcomer's working directory; its output, and a failure when it fails.
  std::string run_block(const DocStep& step) {
    const std::string name = "step-" + std::to_string(step.number) + "-" + std::to_string(++blocks_);
    std::ofstream(dir_ / (name + ".sh")) << localised(step.block);
    std::ofstream(dir_ / "env.sh", std::ios::trunc) << environment();
    const std::string cmd = "cd '" + dir_.string() + "' && env -i PATH=/usr/bin:/bin timeout -k 5 240 bash -c " +
                            "'. ./env.sh && exec bash -euo pipefail ./" + name + ".sh' > " + name + ".out 2>&1";
    const int rc = std::system(cmd.c_str());
    const std::string out = testing::slurp((dir_ / (name + ".out")).string());
    EXPECT_EQ(rc, 0) << "step " << step.number << " failed:\n" << localised(step.block) << "--- output\n" << out
                     << units_logs();
    return out;
  }

  // A workflow's job: `runs-on:` and its `run:` steps, queued on the GitHub stand-in and run.
  void run_job_step(const DocStep& step) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(step.block, m, std::regex("runs-on: *([^ #\n]+)"))) << step.block;
    const std::string label = m[1];
    std::string run;
    static const std::regex run_line("- run: *([^\n]+)");
    for (std::sregex_iterator it(step.block.begin(), step.block.end(), run_line), e; it != e; ++it) {
      run += (*it)[1].str() + "\n";
    }
    const int64_t id = queue_job(label, "newcomer", run.empty() ? "true" : run);
    Json::Value j = finished_job(id, 120s);
    EXPECT_EQ(j["result"].asString(), "Succeeded")
        << "the job on " << label << ": " << write_json(j) << units_logs() << consoles();
    EXPECT_FALSE(instance_of_runner(j["runnerName"].asString()).empty()) << "ran on the pool: " << write_json(j);
  }

  // Follows a style's path; the stack step names the pool the later steps run.
  void follow(const std::string& style, int target) {
    const DocPath p = read_doc_path(testing::slurp(kSource + "/docs/install.md"), style);
    ASSERT_TRUE(p.errors.empty()) << ::testing::PrintToString(p.errors);
    EXPECT_LE(p.steps, target) << "the " << style << " style's target";
    std::ofstream(dir_ / "token.txt") << pool_->env().at("RUNPOOL_GITHUB_TOKEN") << "\n";
    const std::string tests = testing::slurp(kSource + "/tests/packaging/CMakeLists.txt");
    for (const DocStep& s : p.markers) {
      SCOPED_TRACE(style + " step " + std::to_string(s.number) + " (" + s.mode + ")");
      if (s.mode == "elsewhere") {
        EXPECT_NE(tests.find("NAME " + s.detail + "\n"), std::string::npos) << "no ctest " << s.detail;
      } else if (s.mode == "stack") {
        const StackStep stack = read_stack_step(s.block);
        ASSERT_FALSE(::testing::Test::HasFailure());
        play_stack(stack);
        // The fixture's helpers look at the doc's pool from now on.
        pool_name_ = param_or_default(stack, "PoolName");
        instance_types_ = param_or_default(stack, "InstanceTypes");
        table_ = std::make_unique<pool::DynamoStateTable>(aws_.db, param_or_default(stack, "TableName"),
                                                          cloud_.instance_role_id());
      } else if (s.mode == "run") {
        run_block(s);
      } else if (s.mode == "job") {
        run_job_step(s);
      }
      ASSERT_FALSE(::testing::Test::HasFailure()) << "the path stops at the first step that fails";
    }
    for (const fs::path& conf : {dir_ / "etc" / "runpoolctl.conf", dir_ / "runpool.conf"}) {
      if (fs::exists(conf)) expect_types_within_the_stack(testing::slurp(conf.string()));
    }
  }

  // The controller policy lets runpoolctl launch only the stack's InstanceTypes (globs): the local
  // cloud has no IAM in the way, so the doc's resource_classes are held against them here.
  void expect_types_within_the_stack(const std::string& conf) const {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(conf, m, std::regex("\nresource_classes = ([^\n]*)"))) << conf;
    const std::vector<std::string> globs = shell_words(std::regex_replace(instance_types_, std::regex(","), " "));
    ASSERT_FALSE(globs.empty()) << "the stack gives no InstanceTypes";
    std::string classes = m[1];
    for (const std::string& cls : shell_words(std::regex_replace(classes, std::regex(";"), " "))) {
      const std::string types = cls.substr(cls.find('=') + 1);
      for (const std::string& type : shell_words(std::regex_replace(types, std::regex(","), " "))) {
        const bool allowed = std::any_of(globs.begin(), globs.end(),
                                         [&](const std::string& g) { return fnmatch(g.c_str(), type.c_str(), 0) == 0; });
        EXPECT_TRUE(allowed) << type << " is not among the stack's InstanceTypes " << instance_types_;
      }
    }
  }

  // ---- shims for what the newcomer's host has and the test's does not

  void install_shims() {
    const fs::path bin = dir_ / "bin";
    const std::string etc = (dir_ / "etc").string(), run = (dir_ / "run").string(), log = (dir_ / "log").string();
    // runpoolctl reads /etc/runpool/runpoolctl.conf when no --config is given; here, the test's.
    write_exec(bin / "runpoolctl",
               "#!/bin/bash\nargs=()\n"
               "if [[ \" $* \" != *' --config '* ]]; then\n"
               "  if [ -e '" + etc + "/runpoolctl.conf' ]; then args=(--config '" + etc + "/runpoolctl.conf')\n"
               "  else args=(--config /dev/null); fi\nfi\n"
               "if [[ \" $* \" == *' from-stack '* && \" $* \" != *' -o '* && \" $* \" != *' --output '* ]]; then\n"
               "  set -- \"$@\" -o '" + etc + "/runpoolctl.conf'\nfi\n"
               "exec " RUNPOOL_CTL_BINARY " \"${args[@]}\" \"$@\"\n");
    write_exec(bin / "sudo", "#!/bin/sh\nexec env \"$@\"\n");
    // systemctl enable --now: each unit of the package (a timer's service run once), as systemd
    // would start it: its EnvironmentFile lines read, its ExecStart run (simple: in the
    // background, its pid kept, for at most 10 minutes should the test die; oneshot: to its end).
    write_exec(bin / "systemctl",
               "#!/bin/bash\nset -euo pipefail\n[ \"$1\" = enable ] || { echo \"systemctl shim: $1\" >&2; exit 2; }\n"
               "shift; [ \"${1:-}\" = --now ] || { echo 'systemctl shim: enable without --now' >&2; exit 2; }\n"
               "shift\nfor unit in \"$@\"; do\n"
               "  case $unit in *.service|*.timer) ;; *) unit=$unit.service ;; esac\n"
               "  file=" + kSource + "/controller/$unit\n"
               "  [ -f \"$file\" ] || { echo \"Failed to enable unit: Unit $unit does not exist\" >&2; exit 1; }\n"
               "  if [[ $unit == *.timer ]]; then unit=${unit%.timer}.service; file=" + kSource + "/controller/$unit; fi\n"
               "  envs=$(sed -n 's/^EnvironmentFile=-\\{0,1\\}//p' \"$file\" | sed 's#/etc/runpool/#" + etc + "/#' | tr '\\n' ' ')\n"
               "  exec_start=$(sed -n 's/^ExecStart=//p' \"$file\" | sed 's#^/usr/bin/runpoolctl#runpoolctl#')\n"
               "  start=\"set -a; for f in $envs; do [ ! -e \\$f ] || . \\$f; done; set +a; exec $exec_start\"\n"
               "  if grep -qx 'Type=oneshot' \"$file\"; then bash -c \"$start\" >> '" + log + "'/$unit.log 2>&1\n"
               "  else setsid timeout -k 10 600 bash -c \"$start\" >> '" + log + "'/$unit.log 2>&1 < /dev/null &\n"
               "    echo $! > '" + run + "'/$unit.pid; fi\ndone\n");
    write_exec(bin / "journalctl",
               "#!/bin/bash\nwhile [ $# -gt 0 ]; do case $1 in -u) unit=$2; shift ;; esac; shift; done\n"
               "case $unit in *.*) ;; *) unit=$unit.service ;; esac\ncat '" + log + "'/$unit.log\n");
  }
  static void write_exec(const fs::path& p, const std::string& text) {
    std::ofstream(p) << text;
    fs::permissions(p, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  }

  // The units the shim started: SIGTERM, as systemctl stop sends, then SIGKILL after 30 s.
  void stop_units() {
    if (dir_.empty() || !fs::exists(dir_ / "run")) return;
    for (const auto& e : fs::directory_iterator(dir_ / "run")) {
      const pid_t pid = std::stoi(testing::slurp(e.path().string()));
      if (pid <= 1) continue;
      kill(pid, SIGTERM);
      if (!eventually([&] { return kill(pid, 0) != 0; }, 30s)) kill(pid, SIGKILL);
      fs::remove(e.path());
    }
  }
  std::string units_logs() const {
    std::string out;
    for (const auto& e : fs::directory_iterator(dir_ / "log")) {
      out += "\n--- " + e.path().filename().string() + "\n" + testing::slurp(e.path().string());
    }
    return out;
  }

  fs::path dir_;
  std::string instance_types_;  // the stack step's InstanceTypes
  int blocks_ = 0;
};

// The serve style, from the stack to a first job served by the units the doc enables, with the
// settings the doc writes: a setting left out (the runner, the scale set's name) fails a step.
TEST_F(Newcomer, ServeStyleFromTheStackToAFirstJob) {
  follow("serve", 7);
  const std::string conf = testing::slurp((dir_ / "etc" / "runpoolctl.conf").string());
  EXPECT_NE(conf.find("\nlaunch_template = runpool-" + pool_name_ + "\n"), std::string::npos) << conf;
  EXPECT_TRUE(fs::exists(dir_ / "run" / "runpoolctl-serve.service.pid")) << "serve was started by its unit";
  EXPECT_EQ(fs::status(dir_ / "etc" / "serve.env").permissions() & (fs::perms::group_all | fs::perms::others_all),
            fs::perms::none)
      << "the token's file is root's only";
}

// The step style as far as it runs without GitHub: the configuration from the stack, init, and
// the smoke test's provision, status and release on the pool's instances.
TEST_F(Newcomer, StepStyleFromTheStackToASmokeTest) {
  follow("step", 9);
  EXPECT_FALSE(records().empty()) << "the smoke test launched an instance of the doc's pool";
}

}  // namespace
}  // namespace runpool::controller::e2e
