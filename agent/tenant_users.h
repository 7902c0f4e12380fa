// Who the runner runs as: a fresh unprivileged user per assignment (a "tenant"), with a group of
// its own, from a range of uids this instance hands out once. Everything one assignment's jobs
// can leave behind is then owned by a uid nobody else ever has: the end of the assignment ends
// its every process and removes its every file by that uid (tenant_sweep.h), and deleting the
// user retires what the kernel and the system keep per uid or per name (keyrings, crontabs,
// at jobs, mail) — a later tenant can never be that user.
//
// The state (the next uid, the tenant in place) is a small file written before the user is
// created, so an agent that dies in between still knows which uid to sweep.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/process.h"
#include "common/clock.h"

namespace runpool::agent {

struct UidRange {
  uid_t first = 0;
  uid_t last = 0;  // inclusive
  bool contains(uid_t u) const { return u >= first && u <= last; }
};

// "FIRST-LAST": both > 0, FIRST ≤ LAST, LAST < 2^31 - 1 (tools with signed uids). nullopt if not.
std::optional<UidRange> parse_uid_range(std::string_view text);

struct TenantState {
  uid_t next = 0;                // the lowest uid never handed out (0: the range's first)
  std::optional<uid_t> current;  // the tenant in place, from its creation to its retirement
};

// The state file's text: "next <uid>\n" and, while a tenant is in place, "current <uid>\n".
// Unknown lines are ignored; nullopt when a line it knows is malformed.
std::optional<TenantState> parse_tenant_state(std::string_view text);
std::string format_tenant_state(const TenantState& state);

// A tenant's user and group name: "runpool-j<uid>".
std::string tenant_name(uid_t uid);

// The next uid to hand out at or after `state.next` (the range's first if below it) that `taken`
// says is free; nullopt when the range is used up.
std::optional<uid_t> next_tenant_uid(const TenantState& state, const UidRange& range,
                                     const std::function<bool(uid_t)>& taken);

struct TenantUsersSettings {
  UidRange range;
  std::string state_file;
  std::string home;                        // the tenants' home directory (created by the runner host)
  Duration command_timeout{std::chrono::seconds(30)};
};

class TenantUsers {
 public:
  virtual ~TenantUsers() = default;
  // The tenant in place (a restarted agent finds it), even when its user is already gone:
  // only the uid and its group are known then.
  virtual std::optional<UserIdentity> current() = 0;
  // A new user and group with the next uid, also a member of `extra_groups` (the assignment's
  // privileges: docker); the state names it current before it exists. Throws std::runtime_error
  // when it cannot (range used up, useradd failing).
  virtual UserIdentity create(const std::vector<std::string>& extra_groups) = 0;
  // Deletes the current tenant's user and group (if they exist) and forgets it; its uid is never
  // handed out again. Throws std::runtime_error when the deletion fails.
  virtual void retire() = 0;
};

// useradd/groupadd/userdel/groupdel, the state file beside them.
class SystemTenantUsers final : public TenantUsers {
 public:
  SystemTenantUsers(TenantUsersSettings settings, std::function<void()> alive);
  std::optional<UserIdentity> current() override;
  UserIdentity create(const std::vector<std::string>& extra_groups) override;
  void retire() override;

 private:
  TenantState load();
  void save(const TenantState& state);
  // Runs a user-database command until `took_effect` (or exit 0); false when it will not.
  bool run(const std::vector<std::string>& argv, const std::function<bool()>& took_effect);

  TenantUsersSettings s_;
  std::function<void()> alive_;
};

}  // namespace runpool::agent
