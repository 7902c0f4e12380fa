#include "agent/local_runner_host.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <spdlog/spdlog.h>

#include "agent/local_listener.h"
#include "agent/mount_baseline.h"
#include "agent/runner_root_ops.h"
#include "agent/safe_path.h"
#include "agent/state_file.h"
#include "common/pool/reuse_policy.h"

namespace runpool::agent {

namespace fs = std::filesystem;
using root_ops::must;
using root_ops::remove_path;
using root_ops::user_dir;

const std::vector<std::string>& runner_config_files() {
  static const std::vector<std::string> files = {".runner", ".runner_migrated", ".credentials",
                                                 ".credentials_migrated", ".credentials_rsaparams"};
  return files;
}

namespace {

// The runner user's processes with their parents.
std::vector<UserProcess> user_processes(uid_t uid) {
  std::vector<UserProcess> procs;
  for (pid_t p : processes_of_user(uid)) procs.push_back({p, process_parent(p)});
  return procs;
}

}  // namespace

LocalRunnerHost::LocalRunnerHost(RunnerHostSettings settings, std::function<void()> alive)
    : s_(std::move(settings)), alive_(std::move(alive)) {}

std::string LocalRunnerHost::path(const std::string& name) const { return (fs::path(s_.root) / name).string(); }

bool LocalRunnerHost::root_owned_by_runner() const {
  if (s_.tenants) return false;  // job users come and go: the root stays root's
  struct stat st {};
  return stat(s_.root.c_str(), &st) == 0 && st.st_uid == s_.user.uid;
}

std::optional<UserIdentity> LocalRunnerHost::runner_user() {
  if (!s_.tenants) return s_.user;
  if (!tenant_read_) {
    tenant_ = s_.tenants->current();
    tenant_read_ = true;
  }
  return tenant_;
}

UserIdentity LocalRunnerHost::need_runner_user() {
  auto u = runner_user();
  if (!u) throw std::runtime_error("no job user is in place (prepare() makes one)");
  return *u;
}

std::vector<std::string> proxy_environment(const std::function<const char*(const char*)>& getenv) {
  std::vector<std::string> out;
  for (const char* name : {"http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"}) {
    if (const char* v = getenv(name); v && *v) out.push_back(std::string(name) + "=" + v);
  }
  return out;
}

std::vector<std::string> LocalRunnerHost::runner_env(const std::vector<std::string>& extra) const {
  const std::string& name = tenant_ ? tenant_->name : s_.user.name;
  std::vector<std::string> env = {"HOME=" + path("_home"), "PATH=" + s_.path, "LANG=" + s_.lang,
                                  "USER=" + name, "LOGNAME=" + name};
  env.insert(env.end(), s_.proxy_env.begin(), s_.proxy_env.end());
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

void LocalRunnerHost::mark_ephemeral(int64_t generation) {
  if (!s_.ephemeral_mark.empty()) write_state_file(s_.ephemeral_mark, std::to_string(generation) + "\n");
}

std::optional<int64_t> LocalRunnerHost::ephemeral_mark() {
  if (s_.ephemeral_mark.empty()) return std::nullopt;
  const auto text = read_state_file(s_.ephemeral_mark);
  if (!text) return std::nullopt;
  try {
    size_t used = 0;
    const int64_t g = std::stoll(*text, &used);
    if (g > 0 && text->find_first_not_of(" \n", used) == std::string::npos) return g;
  } catch (const std::exception&) {
  }
  spdlog::warn("{} is malformed; ignored", s_.ephemeral_mark);
  return std::nullopt;
}

std::optional<RunnerIdentity> LocalRunnerHost::configured() {
  // The runner user writes these: read from the root's descriptor, never through a link, a
  // regular file only.
  Fd root(open_trusted_dir(s_.root));
  if (!root.ok()) return std::nullopt;
  const char* name = stat_at(root.get(), ".runner_migrated") ? ".runner_migrated" : ".runner";
  Fd fd(openat(root.get(), name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!fd.ok() || fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  std::string text(static_cast<size_t>(std::min<off_t>(st.st_size, 1 << 20)), '\0');
  const ssize_t n = pread(fd.get(), text.data(), text.size(), 0);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return parse_runner_file(text);
}

CommandResult LocalRunnerHost::run_as_runner(const std::vector<std::string>& argv,
                                             const std::vector<std::string>& extra_env) {
  SpawnOptions o;
  o.argv = argv;
  o.cwd = s_.root;
  CommandResult r;
  try {
    o.user = need_runner_user();
    o.env = runner_env(extra_env);
    CommandOutcome c = run_command(o, s_.config_sh_timeout, alive_);
    r.exit_code = c.exit_code;
    r.timed_out = c.timed_out;
    r.output = c.output;
  } catch (const std::exception& e) {
    r.output = e.what();
  }
  return r;
}

CommandResult LocalRunnerHost::configure(const Registration& reg) {
  remove_local();
  scope_key_ = cache_scope_key(s_.cache_scope, reg.url);
  if (s_.tenants && s_.cache) {
    if (auto user = runner_user()) {
      int n = s_.cache->restore(s_.root, scope_key_, *user);
      if (n) spdlog::info("{} cache directories of {} handed to {}", n, scope_key_, user->name);
    }
  }
  std::vector<std::string> argv = {path("config.sh"), "--url", reg.url, "--labels", reg.label, "--no-default-labels",
                                   "--name", reg.name, "--unattended", "--replace", "--work", "_work"};
  if (s_.disable_update) argv.push_back("--disableupdate");
  if (!s_.runner_group.empty()) {
    argv.push_back("--runnergroup");
    argv.push_back(s_.runner_group);
  }
  // The token travels in the environment, never in argv (/proc/*/cmdline is world-readable).
  return run_as_runner(argv, {"ACTIONS_RUNNER_INPUT_TOKEN=" + reg.token.reveal()});
}

CommandResult LocalRunnerHost::remove(const Secret& remove_token) {
  // The token goes into config.sh's environment, which every process of the runner user may read
  // (/proc/<pid>/environ): what a job left running must be gone before it is handed over.
  if (s_.end_processes) {
    try {
      end_leftovers();
    } catch (const std::exception& e) {
      CommandResult r;
      r.output = std::string("not deregistering: ") + e.what();
      return r;
    }
  }
  return run_as_runner({path("config.sh"), "remove"},
                       {"ACTIONS_RUNNER_INPUT_TOKEN=" + remove_token.reveal(), "ACTIONS_RUNNER_INPUT_UNATTENDED=true"});
}

void LocalRunnerHost::remove_local() {
  for (const auto& f : runner_config_files()) remove_path(path(f));
}

std::unique_ptr<ListenerProcess> LocalRunnerHost::start_listener(const ListenerStart& how) {
  confine();  // a resumed assignment (after a reboot) skips prepare()
  DiagTail diag(path("_diag"));  // before the start: only the new Listener's lines count
  DiagTail perf(path("_diag"), "Runner", ".perf");
  SpawnOptions o;
  o.user = need_runner_user();
  o.argv = {path("bin/Runner.Listener"), "run"};
  if (how.drain_on_sigusr1) o.argv.push_back("--drain-on-sigusr1");
  // The perf log tells of every job message before acknowledge (the _diag line only when the
  // server asks for acknowledgement): the earliest sign of busy.
  // ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE: a version GitHub refuses then exits 7, not 1
  // ("not configured"), so the agent can say why.
  o.env = runner_env({"RUNNER_PERFLOG=" + path("_diag"), "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE=1"});
  // The runner reads every ACTIONS_RUNNER_INPUT_<arg> as that argument and unsets it: the JIT
  // configuration (the runner's credentials) never appears in /proc/<pid>/cmdline.
  if (!how.jit_config.empty()) o.env.push_back("ACTIONS_RUNNER_INPUT_JITCONFIG=" + how.jit_config.reveal());
  o.cwd = s_.root;
  // Files, not pipes: the Listener (and the job in hand) outlives an agent that dies or restarts,
  // and would die at its next line of output into a pipe nobody reads any more.
  o.output_to_files = true;
  Child c = spawn(o);
  listener_pid_ = c.pid;
  spdlog::info("started the Listener, pid {}", c.pid);
  if (!s_.listener_mark.empty()) {
    // Its start time is known from fork on: the exec does not change it.
    const auto start = process_start_time(c.pid);
    try {
      if (!start) throw std::runtime_error("its start time is unreadable");
      write_state_file(s_.listener_mark, format_listener_mark({c.pid, *start}));
    } catch (const std::exception& e) {
      // No earlier Listener's mark may stand for this one: without a mark, a restarted agent goes
      // by command line and process group.
      unlink(s_.listener_mark.c_str());
      spdlog::warn("cannot keep the Listener's pid for a restarted agent: {}", e.what());
    }
  }
  return std::make_unique<LocalListener>(c, std::move(diag), std::move(perf));
}

std::optional<RunnerDrainSupport> LocalRunnerHost::drain_support() {
  // Read-only and token-free: the help text of the installed Listener, bounded like config.sh.
  CommandResult r = run_as_runner({path("bin/Runner.Listener"), "run", "--help"}, {});
  if (!r.ok()) {
    spdlog::warn("cannot tell the runner's drain inputs (bin/Runner.Listener run --help {}): {}",
                 r.timed_out ? "timed out" : "exit " + std::to_string(r.exit_code), r.output.substr(0, 300));
    return std::nullopt;
  }
  return parse_run_help(r.output);
}

std::unique_ptr<ListenerProcess> LocalRunnerHost::adopt_listener() {
  auto user = runner_user();
  if (!user) return nullptr;
  std::vector<ListenerCandidate> found;
  for (pid_t p : processes_of_user(user->uid)) {
    std::string cmd = process_cmdline(p);
    if (cmd.find("Runner.Listener") != std::string::npos && cmd.find("configure") == std::string::npos &&
        cmd.find("remove") == std::string::npos) {
      found.push_back({p, process_start_time(p), getpgid(p) == p});
    }
  }
  if (found.empty()) return nullptr;
  std::optional<ListenerMark> mark;
  if (!s_.listener_mark.empty()) {
    if (auto text = read_state_file(s_.listener_mark)) {
      mark = parse_listener_mark(*text);
      if (!mark) spdlog::warn("{} is malformed; ignored", s_.listener_mark);
    }
  }
  const pid_t pid = choose_listener(found, mark);
  if (!pid) {
    spdlog::warn("{} processes of the runner user are named Runner.Listener; none is the one an agent started",
                 found.size());
    return nullptr;
  }
  if (found.size() > 1) spdlog::warn("{} Listener processes of the runner user; following pid {}", found.size(), pid);
  listener_pid_ = pid;
  spdlog::info("following the Listener an earlier agent started, pid {}", pid);
  return LocalListener::adopt(pid, DiagTail(path("_diag")), DiagTail(path("_diag"), "Runner", ".perf"));
}

bool LocalRunnerHost::worker_running() {
  auto user = runner_user();
  return user && listener_has_worker(user->uid, listener_pid_);
}

bool LocalRunnerHost::take_update_finished() {
  // The runner user writes it: looked at and removed through the root's descriptor, never
  // through a link; only a regular file counts.
  Fd root(open_trusted_dir(s_.root));
  if (!root.ok()) return false;
  auto st = stat_at(root.get(), "update.finished");
  if (!st || !S_ISREG(st->mode)) return false;
  if (unlinkat(root.get(), "update.finished", 0) != 0 && errno != ENOENT) {
    spdlog::warn("cannot remove {}/update.finished: {}", s_.root, std::strerror(errno));
  }
  return true;
}

int LocalRunnerHost::end_detached() {
  auto user = runner_user();
  if (!s_.end_processes || !user || listener_pid_ <= 0) return 0;
  std::set<pid_t> ended;
  // In rounds (a process may fork while it is killed), bounded; each round reads the tree anew.
  for (int round = 0; round < 50; ++round) {
    const std::vector<UserProcess> procs = user_processes(user->uid);
    const bool ours = std::any_of(procs.begin(), procs.end(), [&](const UserProcess& p) { return p.pid == listener_pid_; });
    if (!ours) return static_cast<int>(ended.size());  // no Listener of ours: nothing to tell apart
    const Leftovers left = find_leftovers(procs, listener_pid_);
    if (left.job_in_hand || left.kill.empty()) return static_cast<int>(ended.size());
    for (pid_t p : left.kill) {
      ::kill(p, SIGKILL);
      ended.insert(p);
    }
    if (alive_) alive_();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error("processes of " + user->name + " beside the Listener would not end");
}

void LocalRunnerHost::end_leftovers() {
  auto user = runner_user();
  if (!user) return;
  std::vector<pid_t> all = processes_of_user(user->uid);
  if (std::find(all.begin(), all.end(), listener_pid_) == all.end()) {
    end_user_processes();  // no Listener of ours runs: every process of the user goes
    return;
  }
  // A stock drain deregisters while its Listener idles: everything outside that Listener's tree
  // goes, in rounds (a process may fork while it is killed), bounded. A Worker that appeared
  // meanwhile (a job came after all) is spared, and the deregistration waits.
  for (int round = 0; round < 50; ++round) {
    Leftovers left = find_leftovers(user_processes(user->uid), listener_pid_);
    if (left.kill.empty()) {
      if (left.job_in_hand) throw std::runtime_error("a Runner.Worker runs: the runner is still running a job");
      return;
    }
    for (pid_t p : left.kill) ::kill(p, SIGKILL);
    if (alive_) alive_();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error("processes of " + user->name + " beside the Listener would not end");
}

void LocalRunnerHost::end_user_processes() {
  auto user = runner_user();
  if (!user) return;
  size_t left = end_processes_of_user(*user, s_.cleanup_timeout, alive_);
  if (left) throw std::runtime_error(std::to_string(left) + " processes of " + user->name + " would not end");
}

void LocalRunnerHost::retire_tenant() {
  auto user = runner_user();
  if (!user) return;
  const bool unused = never_used(*user);
  // Its uid is this assignment's alone: every process of it goes, wherever it hid.
  end_user_processes();
  if (s_.cache && !unused) {
    // Before the sweep: what is kept is root's until the next job user of the same scope.
    int n = s_.cache->keep(s_.root, scope_key_);
    if (n) spdlog::info("{} cache directories kept for the next assignment of {}", n, scope_key_);
  }
  const auto start = std::chrono::steady_clock::now();
  SweepOptions o = s_.sweep;
  o.user_name = user->name;
  o.check_added_mounts = !unused;
  SweepReport r = sweep_tenant(user->uid, o, alive_);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  spdlog::info("swept job user {}: {} entries removed, {} System V objects, {} mounts detached ({} examined, {} ms)",
               user->name, r.files, r.ipc, r.mounts, r.walked, ms.count());
  if (!r.errors.empty()) {
    std::string first = r.errors.front();
    throw std::runtime_error("the job user's files could not all be removed (" + std::to_string(r.errors.size()) +
                             " errors; first: " + first + ")");
  }
  s_.tenants->retire();
  tenant_.reset();
  mark_unused(std::nullopt);
}

void LocalRunnerHost::grant_root(const UserIdentity& user) {
  // sudo reads every file of its include directory whose name has no '.': the state file's
  // temporary name has one, so sudo never sees half a rule.
  write_state_file(s_.sudoers_file, "# runpool-agent: this assignment's job user may become root (job_privileges = sudo)\n" +
                                        user.name + " ALL=(ALL:ALL) NOPASSWD: ALL\n");
  must(chmod(s_.sudoers_file.c_str(), 0440) == 0, "chmod " + s_.sudoers_file);
}

void LocalRunnerHost::revoke_root() {
  if (s_.sudoers_file.empty()) return;
  if (unlink(s_.sudoers_file.c_str()) != 0 && errno != ENOENT) {
    throw std::runtime_error("cannot remove " + s_.sudoers_file + ": " + std::strerror(errno));
  }
}

void LocalRunnerHost::keep_docker_baseline() {
  if (read_state_file(s_.docker_baseline)) return;  // kept: this assignment's start
  write_state_file(s_.docker_baseline, encode_engine_state(s_.docker->state()));
}

void LocalRunnerHost::clean_docker() {
  if (!s_.docker) return;
  // No baseline: no assignment started since the last clean (prepare() keeps one before any runner
  // starts), and the engine is the image's own — left as it is.
  auto text = read_state_file(s_.docker_baseline);
  if (!text) return;
  std::optional<EngineState> baseline;
  try {
    baseline = decode_engine_state(*text);
  } catch (const std::exception& e) {
    spdlog::error("the Docker engine's state from the assignment's start is unreadable ({}): cleaning without it",
                  e.what());
  }
  const auto start = std::chrono::steady_clock::now();
  DockerCleanReport r = clean_docker_engine(*s_.docker, baseline, alive_);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  spdlog::info("Docker engine cleaned: {} removed, {} tags put back or taken off ({} ms)", r.removed, r.retagged,
               ms.count());
  if (!r.problems.empty()) {
    std::string all;
    for (const auto& p : r.problems) all += (all.empty() ? "" : "; ") + p;
    throw std::runtime_error("the Docker engine is not as the assignment found it: " + all);
  }
  // The next assignment keeps its own start.
  if (unlink(s_.docker_baseline.c_str()) != 0 && errno != ENOENT) {
    throw std::runtime_error("cannot remove " + s_.docker_baseline + ": " + std::strerror(errno));
  }
}

void LocalRunnerHost::clean() {
  // No new sudo from here on; what root already did is not undone (docs/security.md).
  revoke_root();
  // The engine first, once the job can start nothing more through it: containers run as root,
  // beyond the job user's sweep. A failure fails the clean only after the job user is retired,
  // and the baseline stays, so every retry checks the engine again.
  std::optional<std::string> docker_failure;
  if (s_.docker) {
    end_user_processes();
    try {
      clean_docker();
    } catch (const std::exception& e) {
      docker_failure = e.what();
    }
  }
  if (s_.tenants) retire_tenant();
  else if (s_.end_processes) end_user_processes();
  if (!fs::exists(s_.root)) return;  // never installed: nothing on disk to clean
  for (const auto& f : runner_config_files()) remove_path(path(f));
  for (const char* f : {".drain", "_diag", "_work", "_home"}) remove_path(path(f));
  // Everything else the runner created in the root (.env, .path, anything a job dropped there):
  // in the root-owned layout that is exactly what the runner user owns.
  if (!root_owned_by_runner()) {
    std::error_code ec;
    for (fs::directory_iterator it(s_.root, ec), end; !ec && it != end; it.increment(ec)) {
      struct stat st {};
      if (lstat(it->path().c_str(), &st) == 0 && !s_.tenants && st.st_uid == s_.user.uid) remove_path(it->path());
    }
    if (ec) throw std::runtime_error("cannot list " + s_.root + ": " + ec.message());
  } else {
    for (const char* f : {".env", ".path"}) remove_path(path(f));
  }
  if (s_.tenants) {
    // _work and _home are the next job user's, made by prepare(); what the sweep left must be the
    // installation as it was.
    // An agent restarted mid-assignment compares with the start an earlier one kept; none kept
    // means no assignment was prepared on this installation.
    if (!manifest_) manifest_ = kept_manifest();
    if (manifest_) {
      auto now = take_manifest(s_.root, [&](const std::string&, uid_t owner) { return s_.tenant_range.contains(owner); });
      if (auto diff = manifest_difference(*manifest_, now)) {
        throw std::runtime_error("the runner's installation changed during the assignment: " + *diff);
      }
    }
    if (docker_failure) throw std::runtime_error(*docker_failure);
    return;
  }
  user_dir(fs::path(s_.root) / "_work", s_.user, 0755);
  user_dir(fs::path(s_.root) / "_home", s_.user, 0700);
}

}  // namespace runpool::agent
