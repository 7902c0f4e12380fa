#include "agent/job_imds_guard.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "agent/process.h"

namespace runpool::agent {
namespace {

using Kind = ImdsGuardPlan::Kind;

TEST(JobImdsGuard, KnowsEc2sImdsByItsHost) {
  for (const char* url : {"http://169.254.169.254", "http://169.254.169.254/", "http://169.254.169.254:80/latest",
                          "https://169.254.169.254", "http://[fd00:ec2::254]", "http://[fd00:ec2::254]:80/x"}) {
    EXPECT_TRUE(is_ec2_imds_endpoint(url)) << url;
  }
  for (const char* url : {"http://127.0.0.1:4242", "http://169.254.169.2540", "http://169.254.169.25",
                          "http://localhost", "", "http://[fd00:ec2::25]", "http://x@127.0.0.1/169.254.169.254"}) {
    EXPECT_FALSE(is_ec2_imds_endpoint(url)) << url;
  }
}

TEST(JobImdsGuard, BlocksEveryUidButRootsPacketsToBothImdsAddresses) {
  ImdsGuardPlan p = plan_job_imds_guard({.job_imds_access = false, .runner_uid = 999,
                                         .imds_endpoint = "http://169.254.169.254"});
  EXPECT_EQ(p.kind, Kind::kBlock);
  // Replaced whole in one transaction: add (a no-op when present), delete, define again.
  EXPECT_EQ(p.ruleset,
            "add table inet runpool_imds\n"
            "delete table inet runpool_imds\n"
            "add table inet runpool_imds\n"
            "add chain inet runpool_imds output { type filter hook output priority 0; policy accept; }\n"
            "add rule inet runpool_imds output meta skuid != 0 ip daddr 169.254.169.254 counter reject\n"
            "add rule inet runpool_imds output meta skuid != 0 ip6 daddr fd00:ec2::254 counter reject\n");
  EXPECT_NE(p.reason.find("uid 999"), std::string::npos) << p.reason;
  EXPECT_NE(p.reason.find("only root reaches IMDS"), std::string::npos) << p.reason;
  // Over IPv6 too: the same rules.
  EXPECT_EQ(plan_job_imds_guard({false, 999, "http://[fd00:ec2::254]"}).ruleset, p.ruleset);
  // Whichever uid the runner has: a relay through any other uid is refused as well.
  EXPECT_EQ(plan_job_imds_guard({false, 1001, "http://169.254.169.254"}).ruleset, p.ruleset);
}

TEST(JobImdsGuard, PerAssignmentJobUsersAreRefusedWithEveryOtherUid) {
  ImdsGuardPlan p = plan_job_imds_guard({false, 1000000000, "http://169.254.169.254", 1099999999});
  EXPECT_EQ(p.kind, Kind::kBlock);
  EXPECT_EQ(p.ruleset, plan_job_imds_guard({false, 999, "http://169.254.169.254"}).ruleset);
  EXPECT_NE(p.reason.find("uids 1000000000-1099999999"), std::string::npos);
  EXPECT_THROW(plan_job_imds_guard({false, 10, "http://169.254.169.254", 5}), std::invalid_argument);
}

TEST(JobImdsGuard, AllowingAccessRemovesTheTableWhetherOrNotItIsThere) {
  ImdsGuardPlan p = plan_job_imds_guard({true, 999, "http://169.254.169.254"});
  EXPECT_EQ(p.kind, Kind::kAllow);
  EXPECT_EQ(p.ruleset, "add table inet runpool_imds\ndelete table inet runpool_imds\n");
  // The runner's uid does not matter when nothing is blocked.
  EXPECT_EQ(plan_job_imds_guard({true, 0, "http://169.254.169.254"}).kind, Kind::kAllow);
}

TEST(JobImdsGuard, AnImdsThatIsNotEc2sGetsNoRule) {
  for (bool access : {false, true}) {
    ImdsGuardPlan p = plan_job_imds_guard({access, 999, "http://127.0.0.1:38000"});
    EXPECT_EQ(p.kind, Kind::kSkip);
    EXPECT_EQ(p.ruleset, "");
    EXPECT_NE(p.reason.find("127.0.0.1:38000"), std::string::npos);
  }
}

TEST(JobImdsGuard, NeverBlocksRoot) {
  EXPECT_THROW(plan_job_imds_guard({false, 0, "http://169.254.169.254"}), std::invalid_argument);
}

TEST(JobImdsGuard, SkippingRunsNothingAndAMissingNftIsAnError) {
  ImdsGuardPlan skip = plan_job_imds_guard({false, 999, "http://127.0.0.1:1"});
  EXPECT_NO_THROW(apply_job_imds_guard(skip, [] {}, ""));
  ImdsGuardPlan block = plan_job_imds_guard({false, 999, "http://169.254.169.254"});
  try {
    apply_job_imds_guard(block, [] {}, "");
    ADD_FAILURE() << "no nft must fail the guard";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("nft is not installed"), std::string::npos) << e.what();
  }
}

// ---- For real: nft in a network namespace of its own (the host's firewall is never touched) ----

// Connects to addr:80 as `uid` (a forked child that drops to it): 0 connected, 1 refused, 2 other.
int connect_as(uid_t uid, int family, const std::string& addr) {
  pid_t pid = fork();
  if (pid == 0) {
    if (uid != 0 && (setgid(uid) != 0 || setuid(uid) != 0)) _exit(3);
    int fd = socket(family, SOCK_STREAM, 0);
    sockaddr_storage ss{};
    socklen_t len;
    if (family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(&ss);
      a->sin_family = AF_INET;
      a->sin_port = htons(80);
      inet_pton(AF_INET, addr.c_str(), &a->sin_addr);
      len = sizeof(sockaddr_in);
    } else {
      auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
      a->sin6_family = AF_INET6;
      a->sin6_port = htons(80);
      inet_pton(AF_INET6, addr.c_str(), &a->sin6_addr);
      len = sizeof(sockaddr_in6);
    }
    fcntl(fd, F_SETFL, O_NONBLOCK);
    int rc = connect(fd, reinterpret_cast<sockaddr*>(&ss), len);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, 5000) != 1) _exit(2);
      int err = 0;
      socklen_t el = sizeof err;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
      rc = err ? -1 : 0;
      errno = err;
    }
    _exit(rc == 0 ? 0 : errno == ECONNREFUSED ? 1 : 2);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 4;
}

int listen_on(int family, const std::string& addr) {
  int fd = socket(family, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_storage ss{};
  socklen_t len;
  if (family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(80);
    inet_pton(AF_INET, addr.c_str(), &a->sin_addr);
    len = sizeof(sockaddr_in);
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(80);
    inet_pton(AF_INET6, addr.c_str(), &a->sin6_addr);
    len = sizeof(sockaddr_in6);
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || listen(fd, 16) != 0) return -1;
  return fd;
}

std::string run(const std::vector<std::string>& argv) {
  SpawnOptions o;
  o.argv = argv;
  o.env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
  o.cwd = "/";
  CommandOutcome c = run_command(o, std::chrono::seconds(30), [] {});
  if (c.exit_code != 0) throw std::runtime_error(argv[0] + " failed: " + c.output);
  return c.output;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// In the namespace: IMDS's two addresses on lo with a listener each; the checks, as text (empty =
// all held).
std::string check_in_namespace(uid_t runner) {
  std::string failures;
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) failures += what + "\n";
  };
  run({"/usr/sbin/ip", "link", "set", "lo", "up"});
  run({"/usr/sbin/ip", "addr", "add", std::string(kImdsAddressV4) + "/32", "dev", "lo"});
  run({"/usr/sbin/ip", "-6", "addr", "add", std::string(kImdsAddressV6) + "/128", "dev", "lo", "nodad"});
  if (listen_on(AF_INET, kImdsAddressV4) < 0 || listen_on(AF_INET6, kImdsAddressV6) < 0) {
    return std::string("cannot listen on IMDS's addresses: ") + std::strerror(errno);
  }
  const std::string v4 = kImdsAddressV4, v6 = kImdsAddressV6;
  expect(connect_as(runner, AF_INET, v4) == 0 && connect_as(runner, AF_INET6, v6) == 0,
         "before the guard the runner user reaches both addresses");

  const ImdsGuardPlan block = plan_job_imds_guard({false, runner, "http://169.254.169.254"});
  for (int round = 1; round <= 2; ++round) {  // applied twice: the same rules, not twice as many
    apply_job_imds_guard(block, [] {});
    const std::string r = std::to_string(round);
    expect(connect_as(runner, AF_INET, v4) == 1, "round " + r + ": the runner user is refused over IPv4");
    expect(connect_as(runner, AF_INET6, v6) == 1, "round " + r + ": the runner user is refused over IPv6");
    expect(connect_as(0, AF_INET, v4) == 0 && connect_as(0, AF_INET6, v6) == 0, "round " + r + ": root still connects");
    // A service of another uid (a local proxy a job could make fetch for it) is refused too.
    expect(connect_as(runner + 1, AF_INET, v4) == 1 && connect_as(1, AF_INET6, v6) == 1,
           "round " + r + ": every other non-root uid is refused");
    const std::string table = run({find_nft(), "list", "table", "inet", kImdsGuardTable});
    expect(count(table, "reject") == 2, "round " + r + ": two rules, not " + std::to_string(count(table, "reject")));
  }
  const ImdsGuardPlan allow = plan_job_imds_guard({true, runner, "http://169.254.169.254"});
  for (int round = 1; round <= 2; ++round) {  // removing what is already gone succeeds too
    apply_job_imds_guard(allow, [] {});
    expect(connect_as(runner, AF_INET, v4) == 0 && connect_as(runner, AF_INET6, v6) == 0,
           "allowed: the runner user reaches IMDS again");
    expect(run({find_nft(), "list", "tables"}).find(kImdsGuardTable) == std::string::npos, "allowed: no table left");
  }
  // Per-assignment job users: every uid of their range is refused, and the uids beside it as well;
  // root still connects.
  apply_job_imds_guard(plan_job_imds_guard({false, runner, "http://169.254.169.254", runner + 5}), [] {});
  expect(connect_as(runner + 3, AF_INET, v4) == 1 && connect_as(runner + 5, AF_INET6, v6) == 1,
         "range: a job user of the range is refused");
  expect(connect_as(runner + 6, AF_INET, v4) == 1 && connect_as(runner - 1, AF_INET, v4) == 1,
         "range: the uids beside it are refused too");
  expect(connect_as(0, AF_INET, v4) == 0, "range: root still connects");
  apply_job_imds_guard(plan_job_imds_guard({true, runner, "http://169.254.169.254"}), [] {});
  return failures;
}

TEST(JobImdsGuard, ForRealInANetworkNamespace) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (nft and a network namespace)";
  if (find_nft().empty()) GTEST_SKIP() << "nft is not installed (apt-get install nftables)";
  if (access("/usr/sbin/ip", X_OK) != 0) GTEST_SKIP() << "no /usr/sbin/ip (iproute2)";
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    int code = 0;
    if (unshare(CLONE_NEWNET) != 0) {
      out = std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno);
      code = 77;
    } else {
      try {
        out = check_in_namespace(64123);
        code = out.empty() ? 0 : 1;
      } catch (const std::exception& e) {
        out = e.what();
        code = 1;
      }
    }
    if (write(fds[1], out.data(), out.size()) < 0) code = 2;
    _exit(code);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "the namespace's child died: " << status;
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
}

}  // namespace
}  // namespace runpool::agent
