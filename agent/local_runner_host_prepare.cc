// LocalRunnerHost: what an assignment needs before its runner starts — the job user, the runner
// installed, its directories, the jobs confined, the assignment's privileges. ready_next() makes
// what does not depend on the assignment while the instance waits in the pool; prepare() on the
// claim's path then only adds the assignment's own part (sudo, Docker's baseline) — or makes it
// all when nothing was readied.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "agent/local_runner_host.h"
#include "agent/mount_baseline.h"
#include "agent/runner_root_ops.h"
#include "agent/state_file.h"
#include "common/pool/reuse_policy.h"

namespace runpool::agent {

namespace fs = std::filesystem;

pool::JobPrivileges LocalRunnerHost::usable_privileges(const std::string& job_privileges) const {
  const std::string name = job_privileges.empty() ? s_.job_privileges : job_privileges;
  const std::optional<pool::JobPrivileges> privileges = pool::parse_job_privileges(name);
  if (!privileges) throw std::runtime_error("job privileges '" + name + "' are none this agent knows (user, docker, sudo)");
  if (*privileges == pool::JobPrivileges::kDocker && (!s_.tenants || !s_.docker)) {
    throw std::runtime_error(s_.tenants ? "job privileges docker: this machine has no Docker engine (install one in "
                                          "the image; its docker group must exist)"
                                        : "job privileges docker need a job user per assignment (job_users)");
  }
  if (*privileges == pool::JobPrivileges::kSudo && s_.tenants && s_.sudoers_file.empty()) {
    throw std::runtime_error("job privileges sudo: this machine has no sudo (install it in the image; "
                             "/etc/sudoers.d must exist)");
  }
  return *privileges;
}

namespace {

// Whether the user is in the group now, as the system says (not as it was made).
bool member_of(const UserIdentity& user, const std::string& group) {
  const std::optional<gid_t> gid = lookup_group(group);
  const std::optional<UserIdentity> now = lookup_user(user.name);
  if (!gid || !now || now->uid != user.uid) return false;
  return now->gid == *gid || std::find(now->groups.begin(), now->groups.end(), *gid) != now->groups.end();
}

}  // namespace

bool LocalRunnerHost::never_used(const UserIdentity& user) {
  if (!unused_user_read_) {
    unused_user_read_ = true;
    // Unreadable, malformed or not root's own (0600): not known unused, so swept and replaced
    // like a used one. Its word skips a sweep's check, so only a file root alone wrote counts.
    std::optional<std::string> text;
    try {
      if (!s_.unused_user_mark.empty()) text = read_own_state_file(s_.unused_user_mark);
    } catch (const std::exception& e) {
      spdlog::warn("{}: the job user in place is taken as used", e.what());
    }
    if (text) {
      char* end = nullptr;
      const unsigned long uid = std::strtoul(text->c_str(), &end, 10);
      if (end != text->c_str() && (*end == '\n' || *end == '\0') && uid > 0 && uid < 0x7fffffffUL) {
        unused_user_ = static_cast<uid_t>(uid);
      }
    }
  }
  return unused_user_ && *unused_user_ == user.uid;
}

void LocalRunnerHost::mark_unused(std::optional<uid_t> uid) {
  // Cleared before anything runs as the user (a failure refuses the hand-over), so a restarted
  // agent never takes a used job user for an unused one.
  unused_user_ = uid;
  unused_user_read_ = true;
  if (s_.unused_user_mark.empty()) return;
  if (uid) {
    write_state_file(s_.unused_user_mark, std::to_string(*uid) + "\n");
  } else if (unlink(s_.unused_user_mark.c_str()) != 0 && errno != ENOENT) {
    throw std::runtime_error("cannot remove " + s_.unused_user_mark + ": " + std::strerror(errno));
  }
}

bool LocalRunnerHost::ensure_job_user(bool docker) {
  std::optional<UserIdentity> user = runner_user();
  // Only a user nothing ran as, in exactly the groups this assignment is given, is handed over.
  // Any other is swept and retired first: one readied for other privileges, or an earlier
  // assignment's (its cleaning failed, or an agent restarted before it ended).
  if (user && !(never_used(*user) && member_of(*user, "docker") == docker)) {
    if (never_used(*user)) {
      spdlog::info("the readied job user {} is not in the groups this assignment needs: making another", user->name);
    } else {
      spdlog::warn("job user {} of an earlier assignment is still in place: sweeping it before a new one", user->name);
    }
    retire_tenant();
    user.reset();
  }
  if (user) return false;
  tenant_ = s_.tenants->create(docker ? std::vector<std::string>{"docker"} : std::vector<std::string>{});
  tenant_read_ = true;
  return true;
}

// Every time, not once per cleaning: while the instance idles in the pool a root actor of the
// image (a ruleset reload, configuration management) may have removed the guard.
void LocalRunnerHost::confine() {
  if (s_.confine_jobs) s_.confine_jobs();
}

std::optional<InstallManifest> LocalRunnerHost::kept_manifest() {
  if (s_.install_manifest_file.empty() || !read_state_file(s_.install_manifest_file)) return std::nullopt;
  // Only root's own, whole: anything else could hide a change to the installation.
  auto text = read_own_state_file(s_.install_manifest_file);
  auto m = text ? decode_manifest(*text) : std::nullopt;
  if (!m) {
    throw std::runtime_error(s_.install_manifest_file +
                             " is not as the agent wrote it: the runner's installation cannot be compared");
  }
  return m;
}

void LocalRunnerHost::install_for(const UserIdentity& user) {
  const fs::path root(s_.root);
  if (auto bad = root_ops::unsearchable_ancestor(root, user)) {
    throw std::runtime_error("runner user " + user.name + " cannot reach " + s_.root + ": " + *bad +
                             " is not searchable by it");
  }
  std::error_code ec;
  if (!fs::exists(root / "bin" / "Runner.Listener", ec)) {
    if (s_.template_dir.empty()) {
      throw std::runtime_error(s_.root + " has no bin/Runner.Listener and no runner_template is configured");
    }
    if (!fs::exists(fs::path(s_.template_dir) / "bin" / "Runner.Listener", ec)) {
      throw std::runtime_error("runner_template " + s_.template_dir + " has no bin/Runner.Listener");
    }
    spdlog::info("installing the runner from {} into {}", s_.template_dir, s_.root);
    // A new installation: what described the old one is no longer what a clean compares with.
    manifest_.reset();
    if (!s_.install_manifest_file.empty() && unlink(s_.install_manifest_file.c_str()) != 0 && errno != ENOENT) {
      throw std::runtime_error("cannot remove " + s_.install_manifest_file + ": " + std::strerror(errno));
    }
    fs::create_directories(root.parent_path(), ec);
    if (ec) throw std::runtime_error("cannot create " + root.parent_path().string() + ": " + ec.message());
    // Copied next to the root and renamed into place, so a crash never leaves half a runner.
    const fs::path staging = root.string() + ".staging-" + std::to_string(getpid());
    root_ops::remove_path(staging);
    fs::copy(s_.template_dir, staging, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
    if (ec) throw std::runtime_error("cannot copy the runner template: " + ec.message());
    if (fs::exists(root, ec)) {
      fs::copy(staging, root,
               fs::copy_options::recursive | fs::copy_options::copy_symlinks | fs::copy_options::overwrite_existing, ec);
      root_ops::remove_path(staging);
      if (ec) throw std::runtime_error("cannot copy the runner template: " + ec.message());
    } else {
      fs::rename(staging, root, ec);
      if (ec) throw std::runtime_error("cannot move the runner into " + s_.root + ": " + ec.message());
    }
  }
  if (!root_owned_by_runner()) {
    root_ops::must(chown(s_.root.c_str(), 0, user.gid) == 0, "chown " + s_.root);
    root_ops::must(chmod(s_.root.c_str(), 01770) == 0, "chmod " + s_.root);
  }
  if (s_.tenants && !manifest_) {
    // Taken with no job user's file in the root (the last clean removed them): what the next
    // clean must find again. An earlier agent's, when there is one: this one may have restarted
    // after a job ran.
    manifest_ = kept_manifest();
    if (!manifest_) {
      manifest_ = take_manifest(s_.root, [&](const std::string&, uid_t owner) { return s_.tenant_range.contains(owner); });
      if (!s_.install_manifest_file.empty()) write_state_file(s_.install_manifest_file, encode_manifest(*manifest_));
    }
  }
  root_ops::user_dir(root / "_work", user, 0755);
  root_ops::user_dir(root / "_home", user, 0700);
}

void LocalRunnerHost::ready_next(const std::string& job_privileges) {
  const pool::JobPrivileges privileges = usable_privileges(job_privileges);
  // No mount baseline here: the assignment's start is its claim (what the system mounts while the
  // instance idles is not the job's), and a user never handed over is swept without one.
  if (s_.tenants && ensure_job_user(privileges == pool::JobPrivileges::kDocker)) mark_unused(tenant_->uid);
  const UserIdentity user = need_runner_user();
  if (user.uid == 0) throw std::runtime_error("the runner user must not be root");
  confine();
  install_for(user);
}

void LocalRunnerHost::prepare(const std::string& job_privileges) {
  const pool::JobPrivileges privileges = usable_privileges(job_privileges);
  const bool docker = privileges == pool::JobPrivileges::kDocker;
  if (s_.tenants) {
    const bool made = ensure_job_user(docker);
    // Made now or readied (nothing has run as it since): the mounts now are the assignment's start
    // (a mount added from here on fails its sweep; what the system mounted before is not the job's).
    if (made || never_used(need_runner_user())) {
      record_mount_baseline(s_.sweep.mount_baseline);
      mark_unused(std::nullopt);  // handed over: its runner may start from now on
    }
  }
  const UserIdentity user = need_runner_user();
  if (user.uid == 0) throw std::runtime_error("the runner user must not be root");
  // Root for this assignment's user alone; sudo also needs the agent unit's drop-in that relaxes
  // NoNewPrivileges (docs/agent.md). With a fixed runner user the image grants it.
  if (privileges == pool::JobPrivileges::kSudo && s_.tenants) grant_root(user);
  confine();
  install_for(user);
  if (docker) keep_docker_baseline();
}

}  // namespace runpool::agent
