#include "agent/tenant_users.h"

#include <fcntl.h>
#include <sys/file.h>
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <spdlog/spdlog.h>

#include "agent/state_file.h"

namespace runpool::agent {

namespace fs = std::filesystem;

namespace {

std::optional<uint64_t> parse_number(std::string_view s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// The shadow tools' path (spawn does not search PATH): /usr/sbin on Debian, Ubuntu and Amazon Linux.
std::string tool(const std::string& name) {
  for (const char* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/"}) {
    const std::string p = dir + name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return name;  // spawn then fails with a message naming it
}

constexpr uint64_t kMaxUid = 2147483646;  // 2^31 - 2: signed-uid tools, and (uid_t)-1 stays far

}  // namespace

std::optional<UidRange> parse_uid_range(std::string_view text) {
  auto dash = text.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  auto first = parse_number(text.substr(0, dash)), last = parse_number(text.substr(dash + 1));
  if (!first || !last || *first == 0 || *first > *last || *last > kMaxUid) return std::nullopt;
  return UidRange{static_cast<uid_t>(*first), static_cast<uid_t>(*last)};
}

std::optional<TenantState> parse_tenant_state(std::string_view text) {
  TenantState st;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    auto space = line.find(' ');
    if (space == std::string::npos) continue;
    const std::string key = line.substr(0, space);
    if (key != "next" && key != "current") continue;
    auto v = parse_number(std::string_view(line).substr(space + 1));
    if (!v || *v == 0 || *v > kMaxUid + 1) return std::nullopt;
    if (key == "next") st.next = static_cast<uid_t>(*v);
    else st.current = static_cast<uid_t>(*v);
  }
  return st;
}

std::string format_tenant_state(const TenantState& st) {
  std::string out = "next " + std::to_string(st.next) + "\n";
  if (st.current) out += "current " + std::to_string(*st.current) + "\n";
  return out;
}

std::string tenant_name(uid_t uid) { return "runpool-j" + std::to_string(uid); }

std::optional<uid_t> next_tenant_uid(const TenantState& st, const UidRange& range,
                                     const std::function<bool(uid_t)>& taken) {
  uint64_t u = std::max<uint64_t>(st.next, range.first);
  // Bounded: a range whose every uid is taken is used up, not a hang (taken uids are rare).
  for (int tries = 0; u <= range.last && tries < 100000; ++u, ++tries) {
    if (!taken(static_cast<uid_t>(u))) return static_cast<uid_t>(u);
  }
  return std::nullopt;
}

SystemTenantUsers::SystemTenantUsers(TenantUsersSettings settings, std::function<void()> alive)
    : s_(std::move(settings)), alive_(std::move(alive)) {}

TenantState SystemTenantUsers::load() {
  std::ifstream in(s_.state_file, std::ios::binary);
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  auto st = parse_tenant_state(ss.str());
  // A state we cannot read must not make us hand out a uid twice or forget one to sweep.
  if (!st) throw std::runtime_error("the job users' state " + s_.state_file + " is malformed");
  return *st;
}

void SystemTenantUsers::save(const TenantState& st) {
  std::error_code ec;
  fs::create_directories(fs::path(s_.state_file).parent_path(), ec);
  try {
    write_state_file(s_.state_file, format_tenant_state(st));
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("the job users' state: ") + e.what());
  }
}

bool SystemTenantUsers::run(const std::vector<std::string>& argv, const std::function<bool()>& took_effect) {
  // /etc/passwd is locked by each of these; another writer (a package install) makes them fail
  // for a moment, and a failure may come after part of the work was done: a few tries, each
  // judged by its effect rather than its exit code.
  std::string last;
  for (int attempt = 0; attempt < 5; ++attempt) {
    SpawnOptions o;
    o.argv = argv;
    o.argv[0] = tool(argv[0]);
    o.env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"};
    CommandOutcome c = run_command(o, s_.command_timeout, alive_);
    if (c.exit_code == 0 || took_effect()) return true;
    last = argv[0] + " exit " + std::to_string(c.exit_code) + ": " + c.output.substr(0, 300);
    // 1: cannot update the password file, 10: cannot update the group file (both: locked);
    // userdel's 8: a process of the user still exists — one ending after its kill, or a zombie
    // its parent has not reaped yet. Others are final.
    if (c.exit_code != 10 && c.exit_code != 1 && !(c.exit_code == 8 && argv[0] == "userdel")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100 << attempt));
  }
  spdlog::warn("{}", last);
  return false;
}

namespace {

// One agent at a time adds job users on this machine (one per EC2 instance; many on a test host
// running local instances, which must never pick the same uid). The lock file also holds the
// lowest uid no agent on this machine has handed out since boot: local instances sharing a host
// then never reuse each other's uids either (a retired uid's files outside one instance's sweep
// must not become a later user's).
class HostLock {
 public:
  HostLock() {
    fd_ = open("/run/lock/runpool-agent-job-users", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) fd_ = open("/run/runpool-agent-job-users.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ >= 0) flock(fd_, LOCK_EX);
  }
  ~HostLock() {
    if (fd_ >= 0) close(fd_);
  }
  // The lowest uid not handed out of the range starting at `first` ("<first> <next>" lines).
  uid_t floor(uid_t first) const {
    auto all = read();
    auto it = all.find(first);
    return it == all.end() ? 0 : it->second;
  }
  void set_floor(uid_t first, uid_t next) const {
    auto all = read();
    if (fd_ < 0 || all[first] >= next) return;
    all[first] = next;
    std::string text;
    for (const auto& [f, n] : all) text += std::to_string(f) + " " + std::to_string(n) + "\n";
    if (ftruncate(fd_, 0) != 0 || pwrite(fd_, text.data(), text.size(), 0) < 0) spdlog::warn("cannot update the job users' lock file");
  }

 private:
  std::map<uid_t, uid_t> read() const {
    std::map<uid_t, uid_t> out;
    if (fd_ < 0) return out;
    std::string text(4096, '\0');
    ssize_t n = pread(fd_, text.data(), text.size(), 0);
    text.resize(n > 0 ? static_cast<size_t>(n) : 0);
    std::istringstream in(text);
    for (std::string first, next; in >> first >> next;) {
      auto f = parse_number(first), x = parse_number(next);
      if (f && x && *f <= kMaxUid && *x <= kMaxUid + 1) out[static_cast<uid_t>(*f)] = static_cast<uid_t>(*x);
    }
    return out;
  }

  int fd_ = -1;
};

}  // namespace

std::optional<UserIdentity> SystemTenantUsers::current() {
  TenantState st = load();
  if (!st.current) return std::nullopt;
  if (auto u = lookup_user(tenant_name(*st.current)); u && u->uid == *st.current) return u;
  UserIdentity u;
  u.name = tenant_name(*st.current);
  u.uid = *st.current;
  u.gid = *st.current;
  u.groups = {u.gid};
  return u;
}

UserIdentity SystemTenantUsers::create(const std::vector<std::string>& extra_groups) {
  TenantState st = load();
  if (st.current) throw std::runtime_error("a job user is still in place: " + tenant_name(*st.current));
  auto taken = [](uid_t u) {
    std::vector<char> buf(16384);
    struct passwd pw {};
    struct passwd* p = nullptr;
    struct group gr {};
    struct group* g = nullptr;
    return (getpwuid_r(u, &pw, buf.data(), buf.size(), &p) == 0 && p) ||
           (getgrgid_r(u, &gr, buf.data(), buf.size(), &g) == 0 && g);
  };
  HostLock lock;
  st.next = std::max(st.next, lock.floor(s_.range.first));
  std::optional<uid_t> uid;
  // A uid whose group cannot be made is someone else's (a group of the image with that id): the
  // next one is tried.
  for (int attempt = 0; attempt < 20 && !uid; ++attempt) {
    auto candidate = next_tenant_uid(st, s_.range, taken);
    if (!candidate) {
      throw std::runtime_error("the job users' uid range " + std::to_string(s_.range.first) + "-" +
                               std::to_string(s_.range.last) + " is used up: replace this instance");
    }
    st.current = *candidate;
    st.next = *candidate + 1;
    save(st);  // before the group and user exist: a crash from here on still sweeps this uid
    lock.set_floor(s_.range.first, st.next);
    const std::string name = tenant_name(*candidate);
    if (run({"groupadd", "--gid", std::to_string(*candidate), name}, [&] { return lookup_group(name) == *candidate; })) {
      uid = candidate;
    } else {
      st.current.reset();
      save(st);
    }
  }
  if (!uid) throw std::runtime_error("no free uid for a job user after 20 tries");
  const std::string name = tenant_name(*uid), id = std::to_string(*uid);
  std::vector<std::string> useradd = {"useradd", "--uid", id, "--gid", id, "--no-log-init", "--no-create-home",
                                      "--home-dir", s_.home, "--shell", "/usr/sbin/nologin", "--comment",
                                      "runpool job user"};
  std::string groups;
  for (const auto& g : extra_groups) groups += (groups.empty() ? "" : ",") + g;
  if (!groups.empty()) {
    useradd.push_back("--groups");
    useradd.push_back(groups);
  }
  useradd.push_back(name);
  const uid_t want = *uid;
  run(useradd, [&] {
    auto u = lookup_user(name);
    return u && u->uid == want;
  });
  auto u = lookup_user(name);
  if (!u || u->uid != *uid) throw std::runtime_error("useradd made no user " + name + " with uid " + id);
  spdlog::info("job user {} (uid {}) created", name, id);
  return *u;
}

void SystemTenantUsers::retire() {
  TenantState st = load();
  if (!st.current) return;
  const std::string name = tenant_name(*st.current);
  HostLock lock;
  // userdel also removes the user's own group when it has no other member; groupdel makes sure.
  if (!run({"userdel", name}, [&] { return !lookup_user(name); }) ||
      !run({"groupdel", name}, [&] { return !lookup_group(name); })) {
    throw std::runtime_error("cannot delete the job user " + name);
  }
  st.current.reset();
  save(st);
  spdlog::info("job user {} retired", name);
}

}  // namespace runpool::agent
