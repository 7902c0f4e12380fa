// The runner on this machine: its root directory, config.sh, and `bin/Runner.Listener run`
// supervised as a child in its own process group, run as the unprivileged runner user.
//
// Layout: the installation (copied from runner_template, or installed by the image) stays owned
// by root; the root directory itself is root:<runner group>, mode 1770 (sticky), so the runner
// can create its configuration, _diag and _work there but cannot replace or delete what it does
// not own — a job cannot plant anything in the installation that outlives its assignment. A root
// the operator gave to the runner user is left as it is.
#pragma once

#include <functional>
#include <string>

#include "agent/docker_engine.h"
#include "agent/install_manifest.h"
#include "agent/job_cache.h"
#include "agent/listener_tree.h"
#include "agent/process.h"
#include "agent/runner_host.h"
#include "agent/tenant_sweep.h"
#include "agent/tenant_users.h"
#include "common/pool/reuse_policy.h"

namespace runpool::agent {

// The proxy variables of an environment, as NAME=value (http_proxy, https_proxy, no_proxy and
// their upper-case forms; empty ones left out): a proxy the agent's unit sets reaches the runner.
std::vector<std::string> proxy_environment(const std::function<const char*(const char*)>& getenv);

struct RunnerHostSettings {
  std::string root;
  std::string template_dir;  // "" = none
  // Who the runner runs as. With `tenants`, a new job user per assignment (created by ready_next()
  // or prepare(), swept and retired by clean()); without, always `user` (one trust domain: what
  // one job leaves outside the runner root, the next one finds).
  UserIdentity user;
  TenantUsers* tenants = nullptr;
  UidRange tenant_range;  // the tenants' uids: never part of the installation's manifest
  SweepOptions sweep;     // where clean() looks for a job user's files (roots: every local filesystem)
  // What jobs may do when the assignment's record names nothing ("user", "docker" or "sudo").
  std::string job_privileges = "user";
  // The sudoers drop-in that lets a sudo assignment's job user become root without a password
  // (job users only), removed by clean(). "" = no sudo on this machine: a sudo assignment of a
  // job user is refused. With a fixed runner user, root for it is the image's to grant.
  std::string sudoers_file;
  // The Docker engine jobs of a docker assignment use (job users only): its state when such an
  // assignment starts is kept in `docker_baseline` (a file, so an agent restarted mid-assignment
  // still has it), and the engine is cleaned back to it after the assignment. nullptr: no engine
  // on this machine (a docker assignment is refused).
  DockerEngine* docker = nullptr;
  std::string docker_baseline;
  // Where mark_ephemeral() keeps its generation (a root-owned file outside the runner root).
  std::string ephemeral_mark;
  // Where ready_next() marks the job user it made as never used (its uid; a root-owned file
  // outside the runner root), until prepare() hands it over: a restarted agent still knows that
  // nothing ran as it. "" = kept in memory only.
  std::string unused_user_mark;
  // Where start_listener() keeps the Listener's pid and start time (root-owned, outside the runner
  // root): the one adopt_listener() follows. "" = none kept (adopt goes by command line).
  std::string listener_mark;
  // Where prepare() keeps the installation's manifest (root-owned, outside the runner root), so an
  // agent restarted mid-assignment still compares the clean with the assignment's start. "" = kept
  // in memory only.
  std::string install_manifest_file;
  // Caches kept for the next assignment of the same scope (job users only; nullptr: none kept).
  JobCache* cache = nullptr;
  CacheScope cache_scope = CacheScope::kNone;
  bool disable_update = true;
  std::string runner_group;  // --runnergroup (validated by the settings: never reads as an option)
  std::string path;
  std::string lang = "C.UTF-8";
  // The agent's own proxy variables (proxy_environment()), given to the runner too: GitHub's
  // runner and the tools of its jobs read the same https_proxy / no_proxy.
  std::vector<std::string> proxy_env;
  Duration config_sh_timeout{std::chrono::minutes(2)};
  Duration cleanup_timeout{std::chrono::seconds(30)};
  // Whether clean() ends the runner user's processes. Always on an instance (one agent per host);
  // tests of the file handling on a shared machine turn it off.
  bool end_processes = true;
  // Called before a runner process starts (by ready_next(), prepare() and start_listener()):
  // installs what confines the jobs (job_imds_guard.h); throwing refuses the
  // assignment. Empty: nothing.
  std::function<void()> confine_jobs;
};

class LocalRunnerHost final : public RunnerHost {
 public:
  // `alive` is called while waiting on commands and processes (the watchdog's pulse).
  LocalRunnerHost(RunnerHostSettings settings, std::function<void()> alive);

  void prepare(const std::string& job_privileges) override;
  void ready_next(const std::string& job_privileges) override;
  std::optional<RunnerIdentity> configured() override;
  CommandResult configure(const Registration& r) override;
  CommandResult remove(const Secret& remove_token) override;
  void remove_local() override;
  std::unique_ptr<ListenerProcess> start_listener(const ListenerStart& how) override;
  std::optional<RunnerDrainSupport> drain_support() override;
  std::unique_ptr<ListenerProcess> adopt_listener() override;
  void mark_ephemeral(int64_t generation) override;
  std::optional<int64_t> ephemeral_mark() override;
  bool worker_running() override;
  bool runner_owns_installation() override { return root_owned_by_runner(); }
  bool take_update_finished() override;
  int end_detached() override;
  void end_user_processes() override;
  void clean() override;

  // The runner's environment: HOME, PATH, LANG, USER, LOGNAME and `extra` — nothing of the agent's.
  std::vector<std::string> runner_env(const std::vector<std::string>& extra = {}) const;

 private:
  std::string path(const std::string& name) const;
  CommandResult run_as_runner(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env);
  bool root_owned_by_runner() const;
  // The user the runner runs as now: the fixed user, or the job user in place (nullopt: none).
  std::optional<UserIdentity> runner_user();
  UserIdentity need_runner_user();
  // Ends the job user's processes, removes what it owns everywhere and retires it.
  void retire_tenant();
  // local_runner_host_prepare.cc: the privileges asked for ("": the agent's own), when this
  // machine can grant them (throws with the reason); a job user in the groups they need (docker),
  // made when none known unused is in place (a used one is swept and retired first); the jobs confined (at every call); the runner installed in a
  // root the user can reach, with its _work and _home.
  pool::JobPrivileges usable_privileges(const std::string& job_privileges) const;
  bool ensure_job_user(bool docker);  // true: made now
  void confine();
  void install_for(const UserIdentity& user);
  std::optional<InstallManifest> kept_manifest();
  // job_privileges = sudo: the job user's sudoers drop-in, written by prepare(), removed by clean().
  void grant_root(const UserIdentity& user);
  void revoke_root();
  // With a Docker engine: its state at the assignment's start, unless already kept.
  void keep_docker_baseline();
  // With a Docker engine: back to that state; throws when it cannot be (the instance is unfit).
  void clean_docker();
  // Before a token is handed to config.sh: ends every process of the runner user outside the tree
  // of the Listener this host started (if it runs); throws when some would not end, and when
  // that tree holds a Worker (a job in hand: the token must not reach it, and the deregistration
  // waits for idle).
  void end_leftovers();

  RunnerHostSettings s_;
  std::function<void()> alive_;
  pid_t listener_pid_ = -1;  // the last Listener start_listener started (or adopt_listener found)
  std::optional<UserIdentity> tenant_;  // the job user in place (tenant mode), once read
  bool tenant_read_ = false;
  std::optional<InstallManifest> manifest_;  // the installation as the last prepare() left it
  // The uid of the job user ready_next() made, until prepare() hands it to an assignment: no
  // runner has run as it yet (also in `unused_user_mark`, read back by a restarted agent).
  std::optional<uid_t> unused_user_;
  bool unused_user_read_ = false;
  // Whether `user` is the job user in place and known never used (runner_user() first).
  bool never_used(const UserIdentity& user);
  void mark_unused(std::optional<uid_t> uid);
  std::string scope_key_;  // the assignment's cache scope, from its registration URL ("" unknown)
};

// The config and credential files configuration writes (and a new identity must not find).
const std::vector<std::string>& runner_config_files();

}  // namespace runpool::agent
