// The sweep's plan over mountinfo and /proc/sysvipc text, and a real sweep of a uid's files in a
// scratch tree (the tests run as root: they chown files to a uid nobody has).
#include "agent/tenant_sweep.h"

#include <fcntl.h>
#include <mqueue.h>
#include <sys/wait.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace runpool::agent {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMountinfo =
    "22 1 259:1 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p1 rw,discard,errors=remount-ro\n"
    "23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
    "24 22 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw\n"
    "25 22 0:5 / /dev rw,nosuid,relatime shared:3 - devtmpfs udev rw,size=4010344k,mode=755\n"
    "26 25 0:23 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw\n"
    "27 25 0:24 / /dev/mqueue rw,nosuid,nodev,noexec,relatime shared:14 - mqueue mqueue rw\n"
    "28 22 0:25 / /run rw,nosuid,nodev,noexec,relatime shared:5 - tmpfs tmpfs rw,size=804000k,mode=755\n"
    "29 28 0:26 / /run/user/1000 rw,nosuid,nodev,relatime shared:6 - tmpfs tmpfs rw,size=4k,mode=700,uid=1000\n"
    "30 22 7:0 / /snap/core/1 ro,nodev,relatime shared:7 - squashfs /dev/loop0 ro\n"
    "31 22 0:27 / /mnt/nfs rw,relatime shared:8 - nfs4 srv:/export rw,vers=4.2\n"
    "32 22 0:28 / /tmp/with\\040space rw,relatime shared:9 - tmpfs tmpfs rw\n"
    "33 22 0:29 / /var/tmp/fuse rw,nosuid,nodev,relatime shared:10 - fuse.sshfs me@host: rw,user_id=1000000007,group_id=1000000007\n"
    "34 22 0:30 / /home/x/fuse rw,nosuid,nodev,relatime shared:11 - fuse.sshfs x@host: rw,user_id=1000,group_id=1000\n"
    "35 22 0:31 / /sys/fs/cgroup rw shared:13 - cgroup2 cgroup2 rw\n"
    "garbage line\n";

TEST(TenantSweep, ParsesMountinfo) {
  auto mounts = parse_mountinfo(kMountinfo);
  ASSERT_EQ(mounts.size(), 14u);
  EXPECT_EQ(mounts[0].point, "/");
  EXPECT_EQ(mounts[0].fs_type, "ext4");
  EXPECT_FALSE(mounts[0].read_only);
  EXPECT_TRUE(mounts[8].read_only);
  EXPECT_EQ(mounts[10].point, "/tmp/with space");
  ASSERT_TRUE(mounts[11].fuse_owner);
  EXPECT_EQ(*mounts[11].fuse_owner, 1000000007u);
  EXPECT_FALSE(mounts[0].fuse_owner);
  EXPECT_EQ(mounts[0].id, 22);
  EXPECT_EQ(mounts[0].device, "259:1");
  EXPECT_EQ(mounts[0].source_root, "/");
}

TEST(TenantSweep, WalksLocalWritableMountsAndDetachesTheUidsFuseMounts) {
  SweepPlan p = plan_sweep(parse_mountinfo(kMountinfo), {"/"}, 1000000007);
  EXPECT_EQ(p.walk, (std::vector<std::string>{"/", "/dev", "/dev/mqueue", "/dev/shm", "/run", "/run/user/1000",
                                              "/tmp/with space"}));
  EXPECT_EQ(p.detach, std::vector<std::string>{"/var/tmp/fuse"});
}

TEST(TenantSweep, NarrowRootsWalkTheirOwnFilesystemAndTheMountsBelow) {
  auto mounts = parse_mountinfo(kMountinfo);
  SweepPlan p = plan_sweep(mounts, {"/tmp/", "/dev", "/dev/shm", "/proc/1", "/mnt/nfs/a"}, 42);
  // /dev/shm is under /dev: walked as /dev's submount, once. /proc and NFS are never walked.
  EXPECT_EQ(p.walk, (std::vector<std::string>{"/dev", "/dev/mqueue", "/dev/shm", "/tmp", "/tmp/with space"}));
  EXPECT_TRUE(p.detach.empty());
}

TEST(TenantSweep, PseudoAndRemoteFilesystems) {
  for (const char* t : {"proc", "sysfs", "cgroup2", "nfs4", "cifs", "fuse.sshfs", "fuse"}) EXPECT_TRUE(is_pseudo_or_remote(t)) << t;
  for (const char* t : {"ext4", "xfs", "btrfs", "tmpfs", "devtmpfs", "mqueue", "overlay", "hugetlbfs"}) {
    EXPECT_FALSE(is_pseudo_or_remote(t)) << t;
  }
}

TEST(TenantSweep, FindsSysvObjectsByOwnerOrCreator) {
  const std::string shm =
      "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap\n"
      "         0         10  1600                 4096   100   100      0  1000000007  1000000007  1000000007  1000000007  0 0 0 4096 0\n"
      "         0         11  1600                 4096   100   100      0     0     0  1000000007  0  0 0 0 4096 0\n"
      "         0         12  1600                 4096   100   100      0     0     0     0     0  0 0 0 4096 0\n";
  auto objs = sysv_objects_of(SysvObject::Kind::kShm, shm, 1000000007);
  ASSERT_EQ(objs.size(), 2u);
  EXPECT_EQ(objs[0].id, 10);
  EXPECT_EQ(objs[1].id, 11);
  const std::string sem = "       key      semid perms      nsems   uid   gid  cuid  cgid      otime      ctime\n"
                          "  1234   7  600  1  1000000007  5  1000000007  5  0  0\n";
  EXPECT_EQ(sysv_objects_of(SysvObject::Kind::kSem, sem, 1000000007).size(), 1u);
  EXPECT_TRUE(sysv_objects_of(SysvObject::Kind::kMsg, "", 1).empty());
  EXPECT_TRUE(sysv_objects_of(SysvObject::Kind::kMsg, "no header here\n1 2 3\n", 1).empty());
}

std::string read_mountinfo_of_self() {
  std::ifstream in("/proc/self/mountinfo");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class TenantSweepOnDisk : public ::testing::Test {
 protected:
  static constexpr uid_t kUid = 1987654321;
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (chown to another uid)";
    char tmpl[] = "/tmp/runpool-sweep-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  void file(const fs::path& p, uid_t owner) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "x";
    ASSERT_EQ(lchown(p.c_str(), owner, owner), 0);
  }
  void dir(const fs::path& p, uid_t owner, mode_t mode = 0755) {
    fs::create_directories(p);
    ASSERT_EQ(lchown(p.c_str(), owner, owner), 0);
    chmod(p.c_str(), mode);
  }
  SweepOptions opts() {
    SweepOptions o;
    o.roots = {dir_};
    o.sysvipc_dir = dir_ + "/no-sysvipc";  // the machine's own objects are not this test's
    o.check_mqueue = false;
    return o;
  }
  std::string dir_;
};

TEST_F(TenantSweepOnDisk, RemovesEveryEntryOfTheUidAndNothingElse) {
  const fs::path d = dir_;
  file(d / "tmp/planted", kUid);
  file(d / "tmp/theirs", 0);
  dir(d / "tmp/hidden-dir", kUid, 0);  // unreadable to its owner: root removes it anyway
  file(d / "tmp/hidden-dir/inside", kUid);
  dir(d / "shared", 0, 01777);
  file(d / "shared/.bashrc", kUid);
  fs::create_symlink("/etc/passwd", d / "shared/link");
  ASSERT_EQ(lchown((d / "shared/link").c_str(), kUid, kUid), 0);  // its link goes, never /etc/passwd
  ASSERT_EQ(mkfifo((d / "shared/fifo").c_str(), 0600), 0);
  ASSERT_EQ(lchown((d / "shared/fifo").c_str(), kUid, kUid), 0);
  file(d / "keep/deep/a", 4242);
  SweepReport r = sweep_tenant(kUid, opts(), nullptr);
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_FALSE(fs::exists(d / "tmp/planted"));
  EXPECT_FALSE(fs::exists(d / "tmp/hidden-dir"));
  EXPECT_FALSE(fs::exists(fs::symlink_status(d / "shared/link")));
  EXPECT_FALSE(fs::exists(fs::symlink_status(d / "shared/fifo")));
  EXPECT_FALSE(fs::exists(d / "shared/.bashrc"));
  EXPECT_TRUE(fs::exists("/etc/passwd"));
  EXPECT_TRUE(fs::exists(d / "tmp/theirs"));
  EXPECT_TRUE(fs::exists(d / "keep/deep/a"));
  EXPECT_EQ(r.files, 6u);  // planted, hidden-dir + inside, .bashrc, link, fifo
}

TEST_F(TenantSweepOnDisk, RemovesATreeNestedDeeperThanDescriptorsAllow) {
  // 3000 levels: a walk holding one descriptor per level would run out (1024 by default).
  dir(fs::path(dir_) / "top", kUid);
  int fd = open((dir_ + "/top").c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  for (int i = 0; i < 3000; ++i) {
    ASSERT_EQ(mkdirat(fd, "d", 0755), 0);
    ASSERT_EQ(fchownat(fd, "d", kUid, kUid, AT_SYMLINK_NOFOLLOW), 0);
    int next = openat(fd, "d", O_RDONLY | O_DIRECTORY);
    close(fd);
    ASSERT_GE(next, 0);
    fd = next;
  }
  ASSERT_EQ(close(fd), 0);
  SweepReport r = sweep_tenant(kUid, opts(), nullptr);
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(r.files, 3001u);
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(TenantSweepOnDisk, RemovesTheUidsSysvSharedMemoryAndLingerMark) {
  const int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
  ASSERT_GE(id, 0);
  shmid_ds ds{};
  ASSERT_EQ(shmctl(id, IPC_STAT, &ds), 0);
  ds.shm_perm.uid = kUid;
  ASSERT_EQ(shmctl(id, IPC_SET, &ds), 0);
  dir(fs::path(dir_) / "linger", 0);
  file(fs::path(dir_) / "linger/runpool-j1", 0);
  SweepOptions o = opts();
  o.sysvipc_dir = "/proc/sysvipc";
  o.user_name = "runpool-j1";
  o.linger_dir = dir_ + "/linger";
  SweepReport r = sweep_tenant(kUid, o, nullptr);
  EXPECT_EQ(r.ipc, 1u);
  EXPECT_NE(shmctl(id, IPC_STAT, &ds), 0);
  EXPECT_FALSE(fs::exists(fs::path(dir_) / "linger/runpool-j1"));
}

TEST_F(TenantSweepOnDisk, RemovesTheUidsPosixMessageQueuesMountedOrNot) {
  // Made by a child that takes the uid: mq_open through librt, as a job would.
  const std::string name = "/runpool-sweep-test-" + std::to_string(getpid());
  pid_t child = fork();
  if (child == 0) {
    if (setgid(kUid) != 0 || setuid(kUid) != 0) _exit(2);
    mqd_t q = mq_open(name.c_str(), O_CREAT | O_RDWR, 0600, nullptr);
    _exit(q == static_cast<mqd_t>(-1) ? 3 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  SweepOptions o = opts();
  o.check_mqueue = true;
  SweepReport r = sweep_tenant(kUid, o, nullptr);
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  mqd_t again = mq_open(name.c_str(), O_RDONLY);
  EXPECT_EQ(again, static_cast<mqd_t>(-1)) << "the queue is still there";
  if (again != static_cast<mqd_t>(-1)) {
    mq_close(again);
    mq_unlink(name.c_str());
  }
}

TEST_F(TenantSweepOnDisk, AMountTheAssignmentDidNotStartWithFailsTheSweep) {
  // The mount tables as files: the start's, and now one more under the swept root.
  const std::string self = read_mountinfo_of_self();
  std::ofstream(dir_ + "/start") << self;
  std::ofstream(dir_ + "/now") << self << "999999 1 0:999 / " << dir_ << "/sub rw - tmpfs tmpfs rw\n";
  file(fs::path(dir_) / "planted", kUid);
  SweepOptions o = opts();
  o.mountinfo = dir_ + "/now";
  o.mount_baseline = dir_ + "/start";
  SweepReport r = sweep_tenant(kUid, o, nullptr);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("a tmpfs at " + dir_ + "/sub"), std::string::npos) << r.errors[0];
  EXPECT_TRUE(fs::exists(dir_ + "/start")) << "kept for the next try";
  EXPECT_FALSE(fs::exists(dir_ + "/planted")) << "what could be removed still was";

  // Without the file: the agent's start stands in.
  o.mount_baseline = dir_ + "/none";
  o.start_mountinfo = self;
  r = sweep_tenant(kUid, o, nullptr);
  EXPECT_EQ(r.errors.size(), 1u);

  // The same table as at the start: complete, and the start's table is done with.
  o.mountinfo = dir_ + "/start";
  o.mount_baseline = dir_ + "/start";
  r = sweep_tenant(kUid, o, nullptr);
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_FALSE(fs::exists(dir_ + "/start"));
}

TEST_F(TenantSweepOnDisk, ARootWithALinkOnItsWayIsAnErrorNotFollowed) {
  dir(fs::path(dir_) / "real", 0);
  file(fs::path(dir_) / "real/planted", kUid);
  fs::create_directory_symlink(fs::path(dir_) / "real", fs::path(dir_) / "link");
  SweepOptions o = opts();
  o.roots = {dir_ + "/link/"};
  SweepReport r = sweep_tenant(kUid, o, nullptr);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("a symbolic link on its way"), std::string::npos) << r.errors[0];
  EXPECT_TRUE(fs::exists(fs::path(dir_) / "real/planted"));
}

TEST(TenantSweep, RefusesRoot) { EXPECT_THROW(sweep_tenant(0, SweepOptions{}, nullptr), std::invalid_argument); }

}  // namespace
}  // namespace runpool::agent
