// The sweep at file-system boundaries, on real file systems: a btrfs (a loop file made with
// mkfs.btrfs) where a job user makes subvolumes of its own, a tmpfs mounted during an assignment,
// and the ext4 (or whatever /tmp is) beneath them. Every mount is made in a mount namespace of this
// process alone (unshared when it starts, propagation private): no other process on the host sees
// it, and it is gone when the process ends, however the test ends.
#include <fcntl.h>
#include <grp.h>
#include <linux/btrfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <gtest/gtest.h>

#include "agent/job_cache.h"
#include "agent/mount_baseline.h"
#include "agent/tenant_sweep.h"
#include "tests/support/private_mounts.h"

namespace runpool::agent {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kJob = 1987711001;

// Why mounting is impossible here ("" when it is possible): needs root and a private namespace.
std::string private_mounts() {
  static const std::string why = runpool::testing::enter_private_mounts();
  return why;
}

// Runs `f` as the job user in a child; its exit code (0: done).
int as_job(const std::function<int()>& f) {
  pid_t pid = fork();
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(kJob) != 0 || setuid(kJob) != 0) _exit(100);
    _exit(f());
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// A btrfs subvolume `name` in the directory `parent`, made by whoever calls (the unprivileged
// BTRFS_IOC_SUBVOL_CREATE `btrfs subvolume create` uses), with a file in it.
int make_subvolume(const fs::path& parent, const std::string& name) {
  int fd = open(parent.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return 1;
  struct btrfs_ioctl_vol_args args {};
  std::strncpy(args.name, name.c_str(), sizeof args.name - 1);
  int rc = ioctl(fd, BTRFS_IOC_SUBVOL_CREATE, &args);
  close(fd);
  if (rc != 0) return 2;
  std::ofstream(parent / name / "left-for-the-next-tenant") << "x";
  return fs::exists(parent / name / "left-for-the-next-tenant") ? 0 : 3;
}

std::string run(const std::string& command) {
  std::string out;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return "cannot run " + command;
  char buf[256];
  while (fgets(buf, sizeof buf, p)) out += buf;
  return pclose(p) == 0 ? "" : command + ": " + out;
}

class FsBoundary : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = private_mounts(); !why.empty()) GTEST_SKIP() << "no mounts here: " << why;
    char tmpl[] = "/tmp/runpool-fs-boundary-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);  // the job user reaches what is mounted below
  }
  void TearDown() override {
    // Innermost first; each one lazily (the namespace goes with the process anyway).
    for (auto it = mounted_.rbegin(); it != mounted_.rend(); ++it) umount2(it->c_str(), MNT_DETACH);
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  // A world-writable place like /tmp on a btrfs of its own; "" with the reason when it cannot be had.
  std::string mount_btrfs(const fs::path& at) {
    const fs::path image = dir_ / "btrfs.img";
    fs::create_directories(at);
    if (auto e = run("truncate -s 200M " + image.string()); !e.empty()) return e;
    if (auto e = run("mkfs.btrfs -q " + image.string()); !e.empty()) return e;
    if (auto e = run("mount -o loop " + image.string() + " " + at.string()); !e.empty()) return e;
    mounted_.push_back(at.string());
    chmod(at.c_str(), 01777);
    return "";
  }
  void mount_tmpfs(const fs::path& at) {
    fs::create_directories(at);
    ASSERT_EQ(mount("tmpfs", at.c_str(), "tmpfs", 0, "size=8m,mode=1777"), 0) << std::strerror(errno);
    mounted_.push_back(at.string());
  }
  SweepOptions opts(const fs::path& root) {
    SweepOptions o;
    o.roots = {root.string()};
    o.sysvipc_dir = (dir_ / "no-sysvipc").string();
    o.check_mqueue = false;
    o.mount_baseline = (dir_ / "mounts").string();
    return o;
  }
  static std::string first(const SweepReport& r) { return r.errors.empty() ? "" : r.errors.front(); }
  fs::path dir_;
  std::vector<std::string> mounted_;
};

TEST_F(FsBoundary, AJobUsersBtrfsSubvolumesAreRemoved) {
  const fs::path tmp = dir_ / "tmp";
  if (auto why = mount_btrfs(tmp); !why.empty()) GTEST_SKIP() << "cannot mount a btrfs loop file system: " << why;
  // The image's: a subvolume root made, with a place the job may write in.
  ASSERT_EQ(make_subvolume(tmp, "image-volume"), 0);
  ASSERT_EQ(chmod((tmp / "image-volume").c_str(), 01777), 0);
  record_mount_baseline((dir_ / "mounts").string());

  // The job: a subvolume in the world-writable place, one nested in it, one inside a directory of
  // its own, a file in the image's subvolume.
  ASSERT_EQ(as_job([&] { return make_subvolume(tmp, "job-volume"); }), 0);
  ASSERT_EQ(as_job([&] { return make_subvolume(tmp / "job-volume", "nested"); }), 0);
  ASSERT_EQ(as_job([&] {
              fs::create_directories(tmp / "job-dir");
              return make_subvolume(tmp / "job-dir", "inner");
            }),
            0);
  ASSERT_EQ(as_job([&] { return std::ofstream(tmp / "image-volume" / "planted") << "x" ? 0 : 1; }), 0);
  struct stat a {}, b {};
  ASSERT_EQ(stat(tmp.c_str(), &a), 0);
  ASSERT_EQ(stat((tmp / "job-volume").c_str(), &b), 0);
  ASSERT_NE(a.st_dev, b.st_dev) << "a subvolume has a device of its own: what the sweep used to skip";

  SweepReport r = sweep_tenant(kJob, opts(tmp), nullptr);
  EXPECT_TRUE(r.errors.empty()) << first(r);
  EXPECT_FALSE(fs::exists(tmp / "job-volume"));
  EXPECT_FALSE(fs::exists(tmp / "job-dir"));
  EXPECT_FALSE(fs::exists(tmp / "image-volume" / "planted")) << "the image's subvolume is searched, not skipped";
  EXPECT_TRUE(fs::exists(tmp / "image-volume" / "left-for-the-next-tenant")) << "root's file stays";
  EXPECT_FALSE(fs::exists(dir_ / "mounts")) << "complete: the start's table is done with";
}

TEST_F(FsBoundary, ACacheHoldingASubvolumeIsNotKeptAndTheSweepRemovesIt) {
  const fs::path data = dir_ / "data";
  if (auto why = mount_btrfs(data); !why.empty()) GTEST_SKIP() << "cannot mount a btrfs loop file system: " << why;
  const fs::path root = data / "runner";
  fs::create_directories(root / "_work");
  ASSERT_EQ(chown((root / "_work").c_str(), kJob, kJob), 0);
  record_mount_baseline((dir_ / "mounts").string());
  ASSERT_EQ(as_job([&] {
              fs::create_directories(root / "_work" / "_tool" / "node");
              return make_subvolume(root / "_work" / "_tool", "volume");
            }),
            0);
  JobCache cache((data / "runner.caches").string(), {"_work/_tool"});
  EXPECT_EQ(cache.keep(root.string(), "acme/app"), 0) << "a subvolume would leave the sweep's reach in the store";
  EXPECT_FALSE(fs::exists(data / "runner.caches"));
  EXPECT_TRUE(fs::exists(root / "_work" / "_tool" / "volume" / "left-for-the-next-tenant")) << "put back for the sweep";
  SweepReport r = sweep_tenant(kJob, opts(data), nullptr);
  EXPECT_TRUE(r.errors.empty()) << first(r);
  EXPECT_FALSE(fs::exists(root / "_work" / "_tool"));
}

TEST_F(FsBoundary, ATmpfsMountedDuringTheAssignmentFailsTheSweep) {
  const fs::path root = dir_ / "root";
  fs::create_directories(root);
  chmod(root.c_str(), 01777);
  mount_tmpfs(root / "image-tmpfs");  // the image's: there when the assignment starts
  record_mount_baseline((dir_ / "mounts").string());
  ASSERT_EQ(as_job([&] { return std::ofstream(root / "image-tmpfs" / "planted") << "x" ? 0 : 1; }), 0);
  ASSERT_EQ(as_job([&] { return std::ofstream(root / "on-ext4") << "x" ? 0 : 1; }), 0);
  // The job's files beneath a mount made during the assignment (by root: a job given Docker or sudo).
  ASSERT_EQ(as_job([&] {
              fs::create_directories(root / "hidden");
              return std::ofstream(root / "hidden" / "beneath") << "x" ? 0 : 1;
            }),
            0);
  mount_tmpfs(root / "hidden");
  ASSERT_EQ(as_job([&] { return std::ofstream(root / "hidden" / "inside") << "x" ? 0 : 1; }), 0);

  SweepReport r = sweep_tenant(kJob, opts(root), nullptr);
  ASSERT_EQ(r.errors.size(), 1u) << first(r);
  EXPECT_NE(r.errors[0].find("a tmpfs at " + (root / "hidden").string()), std::string::npos) << r.errors[0];
  EXPECT_FALSE(fs::exists(root / "image-tmpfs" / "planted")) << "the image's tmpfs is walked";
  EXPECT_FALSE(fs::exists(root / "on-ext4"));
  EXPECT_TRUE(fs::exists(dir_ / "mounts")) << "kept: the cleaning is tried again against the same start";
}

TEST_F(FsBoundary, AMountInsideTheJobUsersFilesFailsTheSweep) {
  const fs::path root = dir_ / "root";
  fs::create_directories(root);
  chmod(root.c_str(), 01777);
  ASSERT_EQ(as_job([&] {
              fs::create_directories(root / "mine" / "mnt");
              return 0;
            }),
            0);
  mount_tmpfs(root / "mine" / "mnt");
  std::ofstream(root / "mine" / "mnt" / "roots") << "x";
  record_mount_baseline((dir_ / "mounts").string());  // even one there at the start
  SweepReport r = sweep_tenant(kJob, opts(root), nullptr);
  ASSERT_FALSE(r.errors.empty());
  EXPECT_NE(first(r).find("a mount point inside the job user's files"), std::string::npos) << first(r);
  EXPECT_TRUE(fs::exists(root / "mine" / "mnt" / "roots")) << "never emptied through the mount";
}

}  // namespace
}  // namespace runpool::agent
