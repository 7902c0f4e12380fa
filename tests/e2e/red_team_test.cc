// The red team. A first job tries every way it knows to leave something for the next tenant of its
// instance (tests/e2e/red_team/attack.sh: files wherever it may write, the runner's own files and
// caches, its home's start-up and tool files, escaped, disguised and SIGTERM-deaf processes,
// System V and POSIX IPC, keyrings, schedulers, the clock and hostname); its instance is released
// to the pool; a job of another workflow claims it warm and looks for each (probe.sh), by name
// everywhere and by the attacker's uid.
//
// With a job user per assignment (the agent's default, sweeping every local filesystem) nothing
// survives. With one fixed runner user (job_users = fixed) the same probes find what the first
// job left outside the runner root: proof that they see what they look for, and the reason that
// configuration is one trust domain. The same holds between two jobs of a runner scale set
// served by `runpoolctl serve`. Each prints its figure.
#include <linux/keyctl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <random>

#include "agent/tenant_sweep.h"
#include "tests/support/docker_daemon.h"
#include "tests/support/private_mounts.h"
#include "tests/e2e/serve_fixture.h"

namespace runpool::controller::e2e {
namespace {

// systemd starts the agent in a session keyring of its own (KeyringMode=private), which every
// process it starts would inherit. Here too: a new one for this binary before the local cloud (and
// with it every agent) starts, so that the session-keyring vector meets what an instance has.
const bool g_session_keyring = syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, nullptr) > 0;

// The btrfs case mounts a file system over /tmp: in a mount namespace of this binary's own
// (propagation private: no other process on the host sees it), made while it has one thread.
// "" when made, else why not.
const std::string g_private_mounts = runpool::testing::enter_private_mounts();

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) s.replace(pos, from.size(), to);
  return s;
}

// What `sha256sum < file` prints, as the probe computes it.
std::string sha256_line(const fs::path& file) {
  FILE* p = popen(("sha256sum < '" + file.string() + "'").c_str(), "r");
  if (!p) return "";
  char buf[256] = {};
  std::string out = fgets(buf, sizeof buf, p) ? buf : "";
  pclose(p);
  return trim(out);
}

struct Vector {
  std::string level;   // the privilege it needs
  std::string attack;  // planted | blocked | unavailable | unproven (said planted, not seen in place)
  std::string probe;   // survived | gone | "" (not probed)
};

// Whether a process of `uid` with `tag` in its command line runs on this machine (the instances'
// PID namespaces included: they are this /proc's too).
bool process_running(const std::string& uid, const std::string& tag) {
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string pid = e.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    struct stat st {};
    if (stat(e.path().c_str(), &st) != 0 || std::to_string(st.st_uid) != uid) continue;
    std::string cmd = slurp(e.path() / "cmdline");
    for (char& c : cmd) c = c ? c : ' ';
    const std::string stat_line = slurp(e.path() / "stat");
    const auto close = stat_line.rfind(')');
    const bool zombie = close == std::string::npos || stat_line.compare(close, 3, ") Z") == 0;
    if (!zombie && cmd.find(tag) != std::string::npos) return true;
  }
  return false;
}

class RedTeam : public E2eTest {
 public:
  struct Outcome {
    std::map<std::string, Vector> vectors;
    std::string attacker_uid, prober_uid, found_by_name, found_processes;
    int planted = 0, blocked = 0, unavailable = 0, survived = 0;
  };

 protected:
  void TearDown() override {
    E2eTest::TearDown();
    std::error_code ec;
    if (!results_.empty()) fs::remove_all(results_, ec);
  }

  std::vector<std::string> lines(const fs::path& p) {
    std::vector<std::string> out;
    std::istringstream in(slurp(p));
    for (std::string l; std::getline(in, l);) {
      if (!l.empty()) out.push_back(l);
    }
    return out;
  }
  static std::vector<std::string> fields(const std::string& line) {
    std::vector<std::string> f;
    std::istringstream in(line);
    for (std::string w; std::getline(in, w, '\t');) f.push_back(w);
    return f;
  }

  // One tenant of the pool's one instance: a run-scoped label provisioned, its job, the label
  // released. `read` takes the job's results (files of the job's user) before the release's
  // cleaning sweeps them. The job's fate; `instance` the instance it ran on ("" when none).
  virtual Json::Value tenant(const std::string& label, const std::string& script, std::string* instance,
                             const std::function<void()>& read) {
    const auto ids = ids_of(provision(label, 1));
    *instance = ids.size() == 1 ? ids[0] : "";
    if (instance->empty()) return Json::Value();
    Json::Value j = finished_job(queue_job(label, label, script, 100), 180s);
    read();
    release(label);
    return j;
  }

  // One attack and one probe, on the same instance, from two workflows.
  Outcome run_red_team(const std::string& what) {
    Outcome o;
    std::mt19937_64 rng(std::random_device{}());
    char token[32];
    std::snprintf(token, sizeof token, "rt%012llx", static_cast<unsigned long long>(rng() & 0xffffffffffffULL));
    token_ = token;
    results_ = testing::make_temp_dir("runpool-e2e-redteam");
    chmod(results_.c_str(), 01777);
    const fs::path src = fs::path(RUNPOOL_SOURCE_DIR) / "tests" / "e2e" / "red_team";

    std::string attack = replace_all(slurp(src / "attack.sh"), "@TOKEN@", token);
    attack = replace_all(attack, "@RESULTS@", results_);
    attack = replace_all(attack, "@DOCKER_HOST@", docker_host_);
    std::string root;
    std::string attacked, probed;
    auto a = tenant("rt-attack", attack, &attacked, [&] {
      for (const auto& l : lines(fs::path(results_) / "attack")) {
        auto f = fields(l);
        if (f.size() == 3) o.vectors[f[0]] = Vector{f[1], f[2], ""};
      }
      o.attacker_uid = trim(slurp(fs::path(results_) / "attacker-uid"));
      root = trim(slurp(fs::path(results_) / "runner-root"));
      // A process the attack left counts as planted only if it still runs now that its job is
      // over (the runner ended what it could reach), before the cleaning.
      for (const auto& l : lines(fs::path(results_) / "processes")) {
        auto f = fields(l);
        if (f.size() == 2 && o.vectors.contains(f[0]) && !process_running(o.attacker_uid, f[1])) {
          o.vectors[f[0]].attack = "unproven";
        }
      }
    });
    EXPECT_EQ(a["result"].asString(), "Succeeded") << write_json(a) << consoles();
    if (attacked.empty()) {
      ADD_FAILURE() << "no instance";
      return o;
    }

    std::string probe = replace_all(slurp(src / "probe.sh"), "@TOKEN@", token);
    probe = replace_all(probe, "@RESULTS@", results_);
    probe = replace_all(probe, "@ATTACKER_UID@", o.attacker_uid);
    probe = replace_all(probe, "@ROOT@", root);
    probe = replace_all(probe, "@DOCKER_HOST@", docker_host_);
    probe = replace_all(probe, "@UBUNTU_ID@", ubuntu_id_);
    const fs::path tmpl = fs::path(base_) / "runner-template";
    probe = replace_all(probe, "@LISTENER_SHA@", sha256_line(tmpl / "bin" / "Runner.Listener"));
    probe = replace_all(probe, "@RUN_SHA@", sha256_line(tmpl / "run.sh"));
    auto p = tenant("rt-probe", probe, &probed, [&] {
      for (const auto& l : lines(fs::path(results_) / "probe")) {
        auto f = fields(l);
        if (f.size() != 2) continue;
        auto& v = o.vectors[f[0]];
        if (v.level.empty()) v.level = "user";
        if (v.attack.empty()) v.attack = "planted";  // the catch-alls: whatever the attack left
        v.probe = f[1];
      }
      o.prober_uid = trim(slurp(fs::path(results_) / "prober-uid"));
      o.found_by_name = slurp(fs::path(results_) / "found-by-name");
      o.found_processes = slurp(fs::path(results_) / "found-processes");
    });
    EXPECT_EQ(p["result"].asString(), "Succeeded") << write_json(p) << consoles();
    EXPECT_EQ(probed, attacked) << "the probe must run on the attacker's instance, warm" << consoles();

    EXPECT_TRUE(g_session_keyring) << "the agents run in no session keyring of their own";
    std::string table;
    for (const auto& [name, v] : o.vectors) {
      EXPECT_NE(v.attack, "unproven") << name << ": said planted, not seen in place before the cleaning";
      o.planted += v.attack == "planted";
      o.blocked += v.attack == "blocked";
      o.unavailable += v.attack == "unavailable";
      o.survived += v.probe == "survived";
      table += "\n  " + name + " [" + v.level + "]: " + v.attack + (v.probe.empty() ? "" : ", " + v.probe);
    }
    std::printf("red team, %s: %zu vectors: %d planted, %d blocked, %d unavailable here; %d survived to the next "
                "tenant%s\n",
                what.c_str(), o.vectors.size(), o.planted, o.blocked, o.unavailable, o.survived, table.c_str());
    return o;
  }

  std::string results_;
  std::string token_;
  std::string docker_host_;  // the engine jobs may use ("": none)
  std::string ubuntu_id_;    // its ubuntu:latest before the attack
};

class RedTeamPerAssignment : public RedTeam {
 protected:
  // The agent's default sweep: every local filesystem.
  std::string clean_sweep_roots() const override { return "job_users_state=" + base_ + "/{instance_id}/job-users"; }
};

// Every vector the attack planted is gone for the next tenant, who runs as another job user.
void expect_nothing_survived(const RedTeam::Outcome& o) {
  EXPECT_GE(o.planted, 45) << "the attack planted fewer vectors than it should";
  // What any instance gives a job the means for: planted, or the attack proves nothing.
  for (const char* v : {"tmp-file", "deep-tree", "odd-names", "many-files", "backdated-file", "unix-socket-file",
                        "runner-env-preload", "bashrc-preload", "process-setsid", "process-double-fork-renamed",
                        "process-ignores-sigterm", "process-respawner", "process-stopped", "fake-runner-worker",
                        "fake-runner-listener", "busy-forger", "inotify-watcher", "abstract-socket", "posix-mqueue",
                        "user-keyring", "session-keyring"}) {
    EXPECT_EQ(o.vectors.contains(v) ? o.vectors.at(v).attack : "", "planted") << v;
  }
  EXPECT_TRUE(is_job_uid(std::stol(o.attacker_uid.empty() ? "0" : o.attacker_uid))) << o.attacker_uid;
  EXPECT_TRUE(is_job_uid(std::stol(o.prober_uid.empty() ? "0" : o.prober_uid))) << o.prober_uid;
  EXPECT_NE(o.attacker_uid, o.prober_uid) << "each tenant has a user of its own";
  for (const auto& [name, v] : o.vectors) {
    if (v.attack == "planted") {
      EXPECT_EQ(v.probe, "gone") << name << " survived to the next tenant";
    }
    EXPECT_NE(v.probe, "survived") << name;
  }
  EXPECT_EQ(o.found_by_name, "") << "entries the attacker named, found by the next tenant";
  EXPECT_EQ(o.found_processes, "") << "the attacker's processes, found by the next tenant";
}

TEST_F(RedTeamPerAssignment, NothingOfTheLastTenantSurvives) {
  expect_nothing_survived(run_red_team("a job user per assignment, reuse always, job privileges user"));
}

// The same two tenants as jobs of a runner scale set served by `runpoolctl serve`: queued with
// only the scale set's name, the first on an instance launched for it, the second on the same
// instance claimed warm after serve had it cleaned back into the pool.
class RedTeamServe : public ServeTestOf<RedTeamPerAssignment> {
 protected:
  void SetUp() override {
    ServeTestOf::SetUp();
    if (!HasFatalFailure()) serve_ = start_ctl({"serve"});
  }
  void TearDown() override {
    if (serve_) stop(*serve_);
    ServeTestOf::TearDown();
  }
  // The job holds its end (an exit trap) until the test has read its results: serve has the
  // instance cleaned as soon as the job completes.
  Json::Value tenant(const std::string& label, const std::string& script, std::string* instance,
                     const std::function<void()>& read) override {
    const std::string done = results_ + "/" + label + ".done", go = results_ + "/" + label + ".read";
    const std::string held = "trap 'touch \"" + done + "\"; for i in $(seq 1 1200); do [ -e \"" + go +
                             "\" ] && break; sleep 0.1; done' EXIT\n" + script;
    const int64_t id = queue_job(set_name(), label, held, 100);
    EXPECT_TRUE(eventually([&] { return fs::exists(done); }, 180s)) << write_json(job(id)) << consoles();
    read();
    std::ofstream(go).close();
    Json::Value j = finished_job(id, 60s);
    *instance = instance_of_runner(j["runnerName"].asString());
    EXPECT_TRUE(eventually([&] { return all_back_in_pool(); }, 60s)) << states() << consoles();
    return j;
  }
  std::unique_ptr<CtlProcess> serve_;
};

TEST_F(RedTeamServe, NothingOfTheLastTenantOfAScaleSetSurvives) {
  expect_nothing_survived(run_red_team("a scale set served by runpoolctl serve, a job user per assignment"));
}

// job_privileges = docker: the job users join the group of a Docker engine (a private dockerd), and
// the attack goes through it. Everything of the engine's own state is undone; a file written as
// root through a bind mount is not — such a pool is one trust domain, or never reuses.
class RedTeamDocker : public RedTeam {
 protected:
  void SetUp() override {
    daemon_ = std::make_unique<runpool::testing::DockerDaemon>("docker");
    ubuntu_id_ = daemon_->import_image("ubuntu:latest", "ubuntu");
    daemon_->must({"volume", "create", "image-cache"});  // a volume of the image's own
    docker_host_ = "unix://" + daemon_->socket();
    RedTeam::SetUp();
  }
  void TearDown() override {
    RedTeam::TearDown();
    std::error_code ec;
    if (!token_.empty()) fs::remove("/tmp/" + token_ + "-root", ec);  // root's: the point of the last vector
    daemon_.reset();
  }
  // The class's privileges reach the agent through the record; the attacker's and the prober's
  // workflows share an instance only because the pool is declared one trust domain.
  std::string more_config() const override { return "job_privileges = docker\ntrust_domain = pool\n"; }
  std::string clean_sweep_roots() const override {
    return "job_users_state=" + base_ + "/{instance_id}/job-users; docker_socket=" + daemon_->socket();
  }
  std::unique_ptr<runpool::testing::DockerDaemon> daemon_;
};

TEST_F(RedTeamDocker, TheEnginesStateIsUndoneAndWhatRootWroteIsNot) {
  Outcome o = run_red_team("a job user per assignment, reuse always, job privileges docker");
  EXPECT_NE(o.attacker_uid, o.prober_uid);
  for (const char* v : {"docker-build", "docker-found-volume", "docker-image", "docker-container", "docker-volume",
                        "docker-network"}) {
    EXPECT_EQ(o.vectors[v].attack, "planted") << v;
    EXPECT_EQ(o.vectors[v].probe, "gone") << v << " survived to the next tenant";
  }
  EXPECT_EQ(o.vectors["docker-root-file"].attack, "planted");
  EXPECT_EQ(o.vectors["docker-root-file"].probe, "survived") << "the probe missed a file root wrote";
  for (const auto& [name, v] : o.vectors) {
    // The catch-all by name finds the root's file above; every user-level vector is gone.
    if (v.level == "user" && v.attack == "planted" && name != "anything-named-with-the-token") {
      EXPECT_EQ(v.probe, "gone") << name;
    }
  }
  EXPECT_EQ(o.found_by_name, "/tmp/" + token_ + "-root\n") << "only what root wrote through the engine is left";
  EXPECT_EQ(o.found_processes, "");
}

// The same two tenants on an instance whose /tmp is a btrfs file system (a loop file): the runner
// root, its _work and the job's scratch space are there, where any user may make subvolumes —
// places with a device number of their own, which the cleaning must enter or fail on.
class RedTeamBtrfs : public RedTeamPerAssignment {
 protected:
  void SetUp() override {
    if (!g_private_mounts.empty()) GTEST_SKIP() << g_private_mounts;
    // The mount hides the host's /tmp: a source or build tree there (a checkout made with
    // mktemp) would go with it.
    const std::string exe = fs::read_symlink("/proc/self/exe").string();
    for (const std::string& tree : {std::string(RUNPOOL_SOURCE_DIR), exe}) {
      if (tree.rfind("/tmp/", 0) == 0) GTEST_SKIP() << tree << " is under /tmp, which this test mounts over";
    }
    if (system("command -v mkfs.btrfs > /dev/null && command -v btrfs > /dev/null") != 0) {
      GTEST_SKIP() << "no btrfs-progs (scripts/setup.sh installs them)";
    }
    image_dir_ = testing::make_temp_dir("runpool-e2e-btrfs");
    const std::string image = image_dir_ + "/tmp.img";
    // Made before the mount hides the host's /tmp, where the image lives (the loop device keeps it).
    const std::string make = "truncate -s 1G " + image + " && mkfs.btrfs -q " + image + " && mount -o loop " + image + " /tmp";
    ASSERT_EQ(system(make.c_str()), 0) << make;
    mounted_ = true;
    ASSERT_EQ(chmod("/tmp", 01777), 0);
    RedTeamPerAssignment::SetUp();
  }
  void TearDown() override {
    if (mounted_) {  // else skipped, or failed, before anything started
      RedTeamPerAssignment::TearDown();
      EXPECT_EQ(umount2("/tmp", MNT_DETACH), 0) << std::strerror(errno);
    }
    std::error_code ec;
    if (!image_dir_.empty()) fs::remove_all(image_dir_, ec);
  }
  bool mounted_ = false;
  std::string image_dir_;
};

TEST_F(RedTeamBtrfs, NothingOfTheLastTenantSurvivesOnBtrfs) {
  Outcome o = run_red_team("a job user per assignment, /tmp and the runner root on btrfs");
  expect_nothing_survived(o);
  for (const char* v : {"btrfs-subvolume", "btrfs-nested-subvolume", "btrfs-snapshot", "btrfs-subvolume-in-work"}) {
    EXPECT_EQ(o.vectors[v].attack, "planted") << v;
    EXPECT_EQ(o.vectors[v].probe, "gone") << v << " survived to the next tenant";
  }
}

class RedTeamFixedUser : public RedTeam {
 protected:
  std::string clean_sweep_roots() const override { return "job_users=fixed"; }
  void TearDown() override {
    // What the attack left on this machine (the point of the test): removed here.
    if (auto u = agent::lookup_user("runpool-runner")) {
      agent::end_processes_of_user(*u, std::chrono::seconds(1), nullptr);
      agent::SweepOptions o;
      agent::sweep_tenant(u->uid, o, nullptr);
    }
    RedTeam::TearDown();
  }
};

TEST_F(RedTeamFixedUser, OneFixedRunnerUserIsOneTrustDomain) {
  Outcome o = run_red_team("one fixed runner user (job_users = fixed), reuse always, job privileges user");
  EXPECT_GE(o.planted, 30);
  EXPECT_EQ(o.attacker_uid, o.prober_uid);
  // What the probes must see when it is there: files outside the runner root and the home.
  for (const char* left : {"tmp-file", "var-tmp-file", "dev-shm-file", "sysv-shm", "posix-mqueue"}) {
    EXPECT_EQ(o.vectors[left].probe, "survived") << left << ": the probe missed what the attack left";
  }
  // What the fixed user's cleaning does reach: its processes, the runner root, the home.
  for (const char* gone : {"process-setsid", "process-ignores-sigterm", "runner-root-file", "bashrc-preload",
                           "runner-binary-replaced"}) {
    EXPECT_EQ(o.vectors[gone].probe, "gone") << gone;
  }
}

}  // namespace
}  // namespace runpool::controller::e2e
