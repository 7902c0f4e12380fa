// Secrets end to end: a run-scoped lifecycle (cold provision of 2, jobs, release, warm provision,
// a job, release) with runpoolctl authenticated as a GitHub App, whose jobs dump what a job can
// see — its environment, the argv and the readable environment of every process of its instance,
// the list of every file it can read that the run wrote — and leave behind a process (started
// with RUNNER_TRACKING_ID= so the runner does not end it) that watches every process's argv and
// environment through the release's drain and deregistration. Meanwhile the test samples every
// process's argv on the machine. At the end every secret of the run (the App's key, its JWTs and
// installation tokens, the PAT, registration, remove, registration-result and runner access
// tokens, the runners' RSA keys, the controller's and the instances' AWS secret keys and session
// tokens) is looked for in all of it, and in runpoolctl's output, the agents' consoles and the
// local cloud's log. The runner and its jobs must run unprivileged.
#include <sys/stat.h>

#include <cstdio>

#include "common/aws/imds.h"
#include "common/pool/record_codec.h"
#include "common/pool/record_key.h"
#include "common/pool/sealed_field.h"
#include "tests/e2e/e2e_fixture.h"
#include "tests/e2e/job_probes.h"
#include "tests/e2e/secret_scan.h"

namespace runpool::controller::e2e {
namespace {

// Files older than this cannot hold a secret of the run: created before the local cloud starts.
std::string g_marker;

class Security : public E2eTest {
 protected:
  static void SetUpTestSuite() {
    const std::string dir = testing::make_temp_dir("runpool-e2e-security-marker");
    chmod(dir.c_str(), 0755);  // the runner user's find must see the marker
    g_marker = dir + "/marker";
    std::ofstream(g_marker) << "";
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(fs::path(g_marker).parent_path(), ec);
  }

  void SetUp() override {
    E2eTest::SetUp();
    if (HasFatalFailure()) return;
    // Each assignment's jobs run as a user of their own: any of them may write here. Outside the
    // agents' sweep roots (the test's tree), or the end of each assignment would remove the dumps.
    dumps_ = testing::make_temp_dir("runpool-e2e-security-dumps");
    chmod(dumps_.c_str(), 01777);
    // runpoolctl as a GitHub App (JWT → installation token), not the fixture's PAT.
    Json::Value app = cloud_.control("POST", "/_control/github/apps", Json::Value(Json::objectValue));
    app_key_ = app["privateKeyPem"].asString();
    Json::Value inst;
    inst["owner"] = "acme";
    cloud_.control("POST", "/_control/github/apps/" + app["appId"].asString() + "/installations", inst);
    app_env_ = {{"RUNPOOL_GITHUB_TOKEN", ""},
                {"RUNPOOL_GITHUB_APP_ID", app["appId"].asString()},
                {"RUNPOOL_GITHUB_APP_PRIVATE_KEY", app_key_}};
    sampler_ = std::make_unique<ArgvSampler>(base_);
    sampler_->start();
  }
  void TearDown() override {
    if (sampler_) sampler_->stop();
    E2eTest::TearDown();
    std::error_code ec;
    if (!dumps_.empty()) fs::remove_all(dumps_, ec);
  }

  CtlResult run_ctl(const std::vector<std::string>& args) {
    CtlResult r = ctl(args, app_env_);
    ctl_output_ += r.out + r.err;
    ++ctl_runs_;
    return r;
  }
  std::vector<std::string> provision_ids(const std::string& label, int count) {
    CtlResult r = run_ctl(provision_args(label, count));
    EXPECT_EQ(r.exit_code, 0) << describe(r) << consoles();
    std::vector<std::string> ids = ids_of(parse_json(r.out.empty() ? "{}" : r.out, "provision"));
    for (const auto& id : ids) instances_.insert(id);
    return ids;
  }
  // `n` jobs on `label` that each leave a watcher running; the next release must end them.
  void leave_watchers(const std::string& label, int cycle, int n) {
    std::vector<int64_t> jobs;
    for (int i = 0; i < n; ++i) {
      const std::string name = "survivor-" + std::to_string(cycle) + "-" + std::to_string(i);
      jobs.push_back(queue_job(label, name, survivor_job(dumps_), 0));
      pending_watchers_.push_back(name);
    }
    for (int64_t id : jobs) EXPECT_EQ(finished_job(id, 90s)["result"].asString(), "Succeeded") << write_json(job(id));
  }
  void release_label(const std::string& label) {
    for (const auto& w : pending_watchers_) release_of_[w] = now_ms();
    pending_watchers_.clear();
    CtlResult r = run_ctl({"--json", "release", "--wait", "--label", label});
    EXPECT_EQ(r.exit_code, 0) << describe(r) << consoles();
  }

  // The instance role's credentials, as its IMDS hands them out.
  void learn_instance_credentials(const std::string& id) {
    Json::Value summary = cloud_.control("GET", "/_control/ec2/instances/" + id);
    CurlHttpClient http;
    aws::ImdsOptions o;
    o.endpoint = summary["imdsUrl"].asString();
    aws::ImdsClient imds(http, system_clock(), o);
    aws::RoleCredentials c = imds.role_credentials();
    secrets_.add("AWS secret key of " + id, c.secret_access_key.reveal());
    secrets_.add("AWS session token of " + id, c.session_token.reveal());
  }

  // Runs the dump jobs on `label` (one per runner), reads every file each job listed while it
  // holds its runner, and learns the runners' RSA keys meanwhile; then lets them finish.
  void dump_jobs(const std::string& label, const std::string& prefix, int n) {
    std::string roots = "/tmp";
    for (const std::string& d : {base_, cloud_.state_dir()}) {
      if (d.rfind("/tmp/", 0) != 0) roots += " '" + d + "'";
    }
    if (fs::exists("/run/runpool")) roots += " /run/runpool";
    std::vector<int64_t> jobs;
    for (int i = 0; i < n; ++i) jobs.push_back(queue_job(label, prefix + std::to_string(i), dump_job(dumps_, roots, g_marker), 0));
    for (int i = 0; i < n; ++i) {
      const fs::path d = fs::path(dumps_) / (prefix + std::to_string(i));
      ASSERT_TRUE(eventually([&] { return fs::exists(d / "ready"); }, 90s)) << write_json(job(jobs[i])) << consoles();
    }
    learn_secrets();  // what exists now: the files below are read with these needles
    for (int i = 0; i < n; ++i) {
      const fs::path d = fs::path(dumps_) / (prefix + std::to_string(i));
      std::string list = read_all((d / "files").string());
      for (size_t at = 0, nul; at < list.size(); at = nul + 1) {
        nul = list.find('\0', at);
        if (nul == std::string::npos) nul = list.size();
        const std::string path = list.substr(at, nul - at);
        if (path.empty() || path.rfind(dumps_, 0) == 0) continue;  // the dumps are scanned below
        ++files_.files;
        const std::string text = read_all(path);
        for (const auto& what : secrets_.found_in(text)) {
          // The runner's own credential files hold its key: the runner needs it, and its jobs
          // run as the same user (as with every actions/runner). Anything else is a leak.
          const std::string name = fs::path(path).filename();
          if (what.rfind("runner RSA key", 0) == 0 && name == ".credentials_rsaparams") {
            ++runner_key_files_;
            continue;
          }
          files_.leaks.push_back("file readable by the job " + path + ": " + what);
        }
        files_.bytes += text.size();
      }
      check_instance_processes();
      std::ofstream(d / "go") << "";
    }
    for (int64_t id : jobs) EXPECT_EQ(finished_job(id, 90s)["result"].asString(), "Succeeded") << write_json(job(id));
  }

  // Every process of each instance: what is not root's is the runner user's, and what is root's
  // (the instance's init, the boot script, the agent) is nothing of the runner or a job.
  void check_instance_processes() {
    for (const auto& id : instances_) {
      for (pid_t p : pids_matching(id, "")) {
        const std::string cmd = agent::process_cmdline(p);
        const long uid = process_uid(p);
        if (uid < 0 || cmd.empty()) continue;
        ++instance_processes_;
        if (uid == 0) {
          root_cmdlines_.insert(cmd);
          for (const char* runner_side : {"Runner.", "config.sh", "_work", "watch.py", "spawnclient"}) {
            EXPECT_EQ(cmd.find(runner_side), std::string::npos) << "a runner or job process runs as root: " << cmd;
          }
          continue;
        }
        ++runner_processes_;
        EXPECT_TRUE(is_job_uid(uid)) << "uid " << uid << ": " << cmd;
      }
    }
  }

  // Every secret the run has made so far.
  void learn_secrets() {
    secrets_.add("the fixture's PAT", "ghp_runpoolctl_integration", false);
    secrets_.add("the controller's AWS secret key", cloud_.controller_credentials().secret_access_key.reveal());
    std::istringstream pem(app_key_);
    for (std::string line; std::getline(pem, line);) {
      if (line.find("-----") == std::string::npos) secrets_.add("the App's private key", line, false);
    }
    const Json::Value s = cloud_.control("GET", "/_control/github/secrets");
    for (const auto& t : s["runnerTokens"]) secrets_.add(t["kind"].asString() + " token", t["token"].asString());
    for (const auto& t : s["adminTokens"]) secrets_.add("registration result token", t.asString());
    for (const auto& t : s["accessTokens"]) secrets_.add("runner access token", t.asString());
    for (const auto& t : s["installationTokens"]) secrets_.add("installation token", t.asString());
    const Json::Value calls = cloud_.control("GET", "/_control/github/calls");
    for (const auto& name : calls["byToken"].getMemberNames()) {
      if (std::count(name.begin(), name.end(), '.') == 2) {  // a JWT: its signature is the secret part
        secrets_.add("the App's JWT", name, false);
        secrets_.add("the App's JWT signature", name.substr(name.rfind('.') + 1), false);
      }
    }
    for (const auto& id : instances_) {
      const fs::path creds = fs::path(base_) / id / "runner" / ".credentials_rsaparams";
      Json::Value rsa;
      if (!fs::exists(creds)) continue;
      try {
        std::string text = read_all(creds.string());
        if (text.rfind("\xEF\xBB\xBF", 0) == 0) text = text.substr(3);
        rsa = parse_json(text, "rsaparams");
      } catch (const std::exception&) {
        continue;
      }
      for (const char* k : {"d", "p", "q", "dp", "dq", "inverseQ"}) secrets_.add("runner RSA key " + id, rsa[k].asString());
    }
  }

  // The local cloud's own log (warnings and errors: it runs --quiet): the stderr file of our
  // child that runs localcloud.js; nullopt when not found.
  std::optional<std::string> local_cloud_log() {
    for (const auto& entry : fs::directory_iterator("/proc")) {
      const std::string pid = entry.path().filename();
      if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
      if (agent::process_cmdline(std::stoi(pid)).find("localcloud.js") == std::string::npos) continue;
      const std::string stat = read_all((entry.path() / "stat").string());
      std::istringstream after(stat.substr(stat.rfind(')') + 1));
      std::string state;
      long ppid = 0;
      after >> state >> ppid;
      std::error_code ec;
      const fs::path err = fs::read_symlink(entry.path() / "fd" / "2", ec);
      if (ppid == getpid() && !ec) return read_all(err.string());
    }
    return std::nullopt;
  }

  // Looks for every secret in everything gathered; `dumps_expected` dump jobs and `watchers`
  // survivors ran, each survivor into the release that followed it.
  void scan_everything(int dumps_expected, int watchers) {
    sampler_->stop();
    learn_secrets();
    // Everything a job saw: its environment, uid, argv and environ of its instance's processes, and
    // what the watchers recorded.
    ScanReport jobs;
    int dumps = 0, watched = 0;
    std::string tree;
    for (const auto& entry : fs::recursive_directory_iterator(dumps_)) {
      tree += "\n  " + entry.path().string();
      if (!entry.is_regular_file()) continue;
      const std::string name = entry.path().filename();
      if (name == "env" || name == "cmdlines" || name == "environs" || name == "watched") {
        jobs.scan(secrets_, "a job's view (" + entry.path().string() + ")", read_all(entry.path().string()));
        dumps += name != "watched";
        watched += name == "watched";
        if (name == "watched") {  // it lived into the release (until the agent ended it)
          const std::string beat = read_all(entry.path().string() + ".alive");
          const std::string job_name = entry.path().parent_path().filename();
          EXPECT_GE(beat.empty() ? 0 : std::stoll(beat), release_of_.at(job_name))
              << entry.path() << " stopped before the release";
        }
      }
      if (name == "env") {  // the runner's clean environment: nothing of the agent's or AWS's
        std::istringstream in(read_all(entry.path().string()));
        for (std::string line; std::getline(in, line);) {
          for (const char* prefix : {"AWS_", "RUNPOOL_", "ACTIONS_RUNNER_INPUT_"}) {
            EXPECT_NE(line.rfind(prefix, 0), 0u) << entry.path() << ": " << line.substr(0, line.find('='));
          }
        }
      }
      if (name == "uid") {
        EXPECT_TRUE(is_job_uid(std::stol(read_all(entry.path().string())))) << "a job's uid";
      }
    }
    EXPECT_EQ(dumps, 3 * dumps_expected) << "env, cmdlines, environs of each dump job";
    EXPECT_EQ(watched, watchers) << "every watcher recorded something:" << tree;

    // The logs: runpoolctl's output, the agents' consoles, the local cloud's log, the runners' _diag.
    ScanReport logs;
    logs.scan(secrets_, "runpoolctl's output", ctl_output_);
    for (const auto& id : instances_) logs.scan(secrets_, "the console (agent log) of " + id, console(id));
    const auto cloud_log = local_cloud_log();
    EXPECT_TRUE(cloud_log) << "the local cloud's log was not found";
    logs.scan(secrets_, "the local cloud's log", cloud_log.value_or(""));
    const auto diag = sampler_->diag();
    for (const auto& [path, text] : diag) logs.scan(secrets_, "the runner's log " + path, text);
    EXPECT_FALSE(diag.empty()) << "no runner _diag log was seen";

    // Every argv on the machine during the run.
    ScanReport argv;
    for (const auto& cmd : sampler_->cmdlines()) argv.scan(secrets_, "argv \"" + cmd.substr(0, 120) + "\"", cmd);
    std::string runner_side;
    for (const auto& [what, uids] : sampler_->runner_uids()) {
      for (long uid : uids) EXPECT_TRUE(is_job_uid(uid)) << what << " ran as uid " << uid << " (root?)";
      runner_side += " " + what;
    }
    std::string runner_cmds;
    for (const auto& c : sampler_->cmdlines()) {
      if (c.find("Runner.") != std::string::npos) runner_cmds += "\n  " + c.substr(0, 200);
    }
    EXPECT_TRUE(sampler_->runner_uids().count("Runner.Listener")) << "the sampler never saw a Listener:" << runner_cmds;

    std::string roots;
    for (const auto& c : root_cmdlines_) roots += "\n  " + c.substr(0, 150);
    std::printf("root's processes on the instances:%s\n", roots.c_str());
    std::printf("secrets tracked: %zu values of %zu kinds (%zu needles)\n", secrets_.secrets(), secrets_.kinds(),
                secrets_.needles().size());
    std::printf("job-readable files: %zu files, %zu bytes (the runner's own key file seen %d times)\n", files_.files,
                files_.bytes, runner_key_files_);
    std::printf("job views: %zu texts, %zu lines; logs: %zu texts, %zu lines, %zu bytes (%d runpoolctl runs)\n",
                jobs.texts, jobs.lines, logs.texts, logs.lines, logs.bytes, ctl_runs_);
    std::printf("argv: %zu samples, %zu processes read, %zu distinct command lines; instance processes checked: %d "
                "(%d of the runner and its jobs, none root); sampled under the runner roots, all job users' uids:%s\n",
                sampler_->samples(), sampler_->processes_seen(), sampler_->cmdlines().size(), instance_processes_,
                runner_processes_, runner_side.c_str());
    EXPECT_GE(secrets_.secrets(), 10u);
    EXPECT_GT(files_.files, 0u);
    EXPECT_GT(runner_processes_, 0);
    for (const auto* r : {&files_, &jobs, &logs, &argv}) {
      for (const auto& leak : r->leaks) ADD_FAILURE() << "leak: " << leak;
    }
  }

  std::string dumps_, app_key_, ctl_output_;
  std::map<std::string, std::string> app_env_;
  std::set<std::string> instances_, root_cmdlines_;
  std::vector<std::string> pending_watchers_;
  std::map<std::string, int64_t> release_of_;  // watcher job → when the release it watched began
  std::unique_ptr<ArgvSampler> sampler_;
  SecretSet secrets_;
  ScanReport files_;
  int ctl_runs_ = 0, runner_key_files_ = 0, instance_processes_ = 0, runner_processes_ = 0;
};

TEST_F(Security, NoSecretReachesAJobALogOrAnArgvAndTheRunnerIsUnprivileged) {
  // Workflow 1: cold. Dump jobs on both runners, then a watcher left behind on each.
  std::vector<std::string> ids = provision_ids("sec-run-1", 2);
  ASSERT_EQ(ids.size(), 2u);
  for (const auto& id : ids) learn_instance_credentials(id);
  dump_jobs("sec-run-1", "dump-1-", 2);
  leave_watchers("sec-run-1", 1, 2);
  release_label("sec-run-1");  // the drain and deregistration, watched by the survivors

  // Then warm workflows (5 with RUNPOOL_RELIABILITY_FULL=1): a job of the next assignment looks
  // around again (after the earlier release wrote what it wrote), another watcher, a release.
  const int warm = std::getenv("RUNPOOL_RELIABILITY_FULL") ? 5 : 1;
  for (int c = 2; c < 2 + warm; ++c) {
    const std::string label = "sec-run-" + std::to_string(c);
    ASSERT_EQ(provision_ids(label, 1).size(), 1u);
    dump_jobs(label, "dump-" + std::to_string(c) + "-", 1);
    leave_watchers(label, c, 1);
    release_label(label);
  }
  scan_everything(2 + warm, 2 + warm);
  std::printf("workflows: 1 cold (2 instances) + %d warm; dump jobs %d, watchers %d\n", warm, 2 + warm, 2 + warm);
}


// A job that reached IMDS keeps the instance role's credentials after its job ends (they stay
// valid for hours) and polls its instance's record through the next tenant's assignment, as a
// thief would: every token it ever sees is sealed, no token GitHub issued is in anything it read,
// and the instance's private key is gone from the record before any job could have run.
class StolenCredentials : public E2eTest {
 protected:
  // What the thief read: every item, as text, and the sealed values among them.
  struct Loot {
    std::vector<std::string> items;
    std::set<std::string> sealed;  // "<attribute>" of each sealed value seen
    int open_keys = 0;
    int plain_tokens = 0;
  };
  void poll_as_thief(const aws::RoleCredentials& stolen, const std::string& id, std::atomic<bool>& stop, Loot& loot) {
    CurlHttpClient http;
    aws::StaticCredentialsProvider creds(aws::AwsCredentials{stolen.access_key_id, stolen.secret_access_key,
                                                             stolen.session_token, std::nullopt});
    aws::AwsCaller caller(http, creds, system_clock(), {"dynamodb", cloud_.dynamodb(), cloud_.region()});
    aws::DynamoDbClient db(caller);
    aws::Item key;
    key[pool::attr::kInstanceId] = aws::AttributeValue::string(pool::record_key(cloud_.instance_role_id(), id));
    // Bounded: ten minutes of polls at most, far beyond the assignment it watches.
    for (int i = 0; i < 12'000 && !stop.load(); ++i) {
      auto item = db.get_item({.table = pool_->table(), .key = key, .consistent_read = true});
      if (item) {
        std::string text;
        for (const auto& [name, v] : *item) {
          const std::string value = v.type() == aws::AttributeValue::Type::kString ? v.as_string() : "";
          text += name + "=" + value + "\n";
          if (name == pool::attr::kOpenKey) ++loot.open_keys;
          if (name == pool::attr::kRegToken || name == pool::attr::kRemoveToken || name == pool::attr::kJitConfig) {
            if (pool::is_sealed(Secret(value))) {
              loot.sealed.insert(name);
            } else {
              ++loot.plain_tokens;
            }
          }
        }
        loot.items.push_back(std::move(text));
      }
      std::this_thread::sleep_for(50ms);
    }
  }
};

TEST_F(StolenCredentials, TheNextAssignmentsTokensAreSealedToTheInstance) {
  std::vector<std::string> first = ids_of(provision("thief-1", 1));
  ASSERT_EQ(first.size(), 1u);
  const std::string id = first[0];
  // The first tenant's job reaches IMDS: the stolen credentials.
  Json::Value summary = cloud_.control("GET", "/_control/ec2/instances/" + id);
  CurlHttpClient imds_http;
  aws::ImdsOptions o;
  o.endpoint = summary["imdsUrl"].asString();
  const aws::RoleCredentials stolen = aws::ImdsClient(imds_http, system_clock(), o).role_credentials();
  EXPECT_EQ(finished_job(queue_job("thief-1", "thief-job"))["result"].asString(), "Succeeded") << consoles();
  EXPECT_TRUE(record(id).open_key.empty()) << "the private key left the record before the first job";
  ASSERT_EQ(release("thief-1")["returned"].size(), 1u) << consoles();

  std::atomic<bool> stop{false};
  Loot loot;
  std::thread thief([&] { poll_as_thief(stolen, id, stop, loot); });
  // The next tenant: a warm claim of the same instance (a registration token), its job, its
  // release (a remove token while the stock runner drains).
  Json::Value next = provision("thief-2", 1);
  EXPECT_EQ(ids_of(next), std::vector<std::string>{id}) << write_json(next);
  EXPECT_EQ(finished_job(queue_job("thief-2", "tenant-job"))["result"].asString(), "Succeeded") << consoles();
  release("thief-2");
  stop = true;
  thief.join();

  SecretSet secrets;
  const Json::Value issued = cloud_.control("GET", "/_control/github/secrets");
  for (const auto& t : issued["runnerTokens"]) secrets.add(t["kind"].asString() + " token", t["token"].asString());
  ScanReport read;
  for (const auto& text : loot.items) read.scan(secrets, "an item read with the stolen credentials", text);
  for (const auto& leak : read.leaks) ADD_FAILURE() << "leak: " << leak;
  EXPECT_GE(secrets.secrets(), 3u) << "registration tokens of both tenants and a remove token";
  EXPECT_GT(loot.items.size(), 10u);
  EXPECT_TRUE(loot.sealed.count(pool::attr::kRegToken)) << "the thief never saw the claim's token: it proves nothing";
  EXPECT_EQ(loot.plain_tokens, 0) << "a token in clear was readable with the instance role's credentials";
  EXPECT_EQ(loot.open_keys, 0) << "the instance's private key was readable with its credentials";
  std::printf("the thief read the record %zu times; sealed values seen in:", loot.items.size());
  for (const auto& a : loot.sealed) std::printf(" %s", a.c_str());
  std::printf("\n");
}

// The same with the stock runner: its drain deregisters (config.sh remove, with the remove token)
// while the Listener idles, so what a job left running is ended around the Listener.
class SecurityStock : public Security {
 protected:
  void SetUp() override {
    Security::SetUp();
    use_runner_build("stock");
  }
};

TEST_F(SecurityStock, AStockDrainHandsTheRemoveTokenToNoLeftoverProcess) {
  std::vector<std::string> ids = provision_ids("sec-stock", 1);
  ASSERT_EQ(ids.size(), 1u);
  learn_instance_credentials(ids[0]);
  dump_jobs("sec-stock", "dump-s-", 1);
  leave_watchers("sec-stock", 1, 1);
  release_label("sec-stock");
  scan_everything(1, 1);
}

}  // namespace
}  // namespace runpool::controller::e2e
