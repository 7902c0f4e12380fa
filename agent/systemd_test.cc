// The notify protocol against a real datagram socket standing in for systemd, and the watchdog's
// rule: pet only while the main loop shows life.
#include "agent/systemd.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace runpool::agent {
namespace {

using namespace std::chrono_literals;

class NotifySocket {
 public:
  NotifySocket() {
    path_ = "/tmp/notify-" + std::to_string(getpid()) + ".sock";
    unlink(path_.c_str());
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    timeval tv{2, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setenv("NOTIFY_SOCKET", path_.c_str(), 1);
  }
  ~NotifySocket() {
    unsetenv("NOTIFY_SOCKET");
    close(fd_);
    unlink(path_.c_str());
  }
  std::string next() {
    char buf[4096];
    ssize_t n = recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }

 private:
  std::string path_;
  int fd_ = -1;
};

TEST(SystemdNotifier, SpeaksTheNotifyProtocol) {
  NotifySocket systemd;
  SystemdNotifier n;
  n.ready();
  EXPECT_EQ(systemd.next(), "READY=1");
  n.status("serving run-1 (generation 2), busy\nsecond line");
  EXPECT_EQ(systemd.next(), "STATUS=serving run-1 (generation 2), busy second line");
  n.watchdog();
  EXPECT_EQ(systemd.next(), "WATCHDOG=1");
  n.stopping();
  EXPECT_EQ(systemd.next(), "STOPPING=1");
}

TEST(SystemdNotifier, IsANoOpWithoutSystemd) {
  unsetenv("NOTIFY_SOCKET");
  SystemdNotifier n;
  n.ready();
  n.status("x");
  n.watchdog();
  n.stopping();
  unsetenv("WATCHDOG_USEC");
  EXPECT_FALSE(SystemdNotifier::watchdog_interval());
  setenv("WATCHDOG_USEC", "500000", 1);
  EXPECT_EQ(SystemdNotifier::watchdog_interval(), Duration{500});
  setenv("WATCHDOG_PID", "1", 1);  // meant for another process
  EXPECT_FALSE(SystemdNotifier::watchdog_interval());
  unsetenv("WATCHDOG_PID");
  unsetenv("WATCHDOG_USEC");
}

class CountingNotifier final : public Notifier {
 public:
  void ready() override {}
  void status(const std::string&) override {}
  void watchdog() override { ++pets; }
  void stopping() override {}
  std::atomic<int> pets{0};
};

TEST(Watchdog, PetsOnlyWhileTheLoopIsAlive) {
  EXPECT_TRUE(Watchdog::should_pet(Duration{99}, Duration{100}));
  EXPECT_FALSE(Watchdog::should_pet(Duration{100}, Duration{100}));
  CountingNotifier n;
  Watchdog w(n, Duration{100});
  for (int i = 0; i < 12; ++i) {
    w.alive();
    std::this_thread::sleep_for(25ms);
  }
  EXPECT_GE(n.pets.load(), 3) << "petted every half interval while alive";
  std::this_thread::sleep_for(150ms);  // the loop is stuck
  int stuck = n.pets.load();
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(n.pets.load(), stuck) << "a stuck loop lets the watchdog fire";
  w.alive();
  std::this_thread::sleep_for(120ms);
  EXPECT_GT(n.pets.load(), stuck) << "and petting resumes with the loop";
}

TEST(Watchdog, DoesNothingWithoutAnInterval) {
  CountingNotifier n;
  {
    Watchdog w(n, std::nullopt);
    w.alive();
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(n.pets.load(), 0);
}

}  // namespace
}  // namespace runpool::agent
