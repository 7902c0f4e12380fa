#include "agent/mount_baseline.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "agent/state_file.h"

namespace runpool::agent {
namespace {

namespace fs = std::filesystem;

constexpr const char* kStart =
    "22 1 259:1 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p1 rw\n"
    "26 25 0:23 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw\n"
    "28 22 0:25 / /run rw,nosuid,nodev shared:5 - tmpfs tmpfs rw\n"
    "40 22 0:40 / /tmp/pool rw shared:9 - tmpfs tmpfs rw\n";

std::vector<std::string> points(const std::vector<MountEntry>& ms) {
  std::vector<std::string> out;
  for (const auto& m : ms) out.push_back(m.point);
  return out;
}

TEST(MountBaseline, NewMountsUnderASweptRoot) {
  const auto start = parse_mountinfo(kStart);
  struct Case {
    const char* name;
    std::string added;  // lines mounted since the start
    std::vector<std::string> roots;
    std::vector<std::string> want;
  } cases[] = {
      {"nothing new", "", {"/"}, {}},
      {"a tmpfs under /tmp", "50 22 0:50 / /tmp/x rw - tmpfs tmpfs rw\n", {"/"}, {"/tmp/x"}},
      {"outside narrow roots", "50 22 0:50 / /mnt/x rw - tmpfs tmpfs rw\n", {"/tmp", "/var/tmp/"}, {}},
      {"at a root itself", "50 22 0:50 / /var/tmp rw - tmpfs tmpfs rw\n", {"/tmp", "/var/tmp/"}, {"/var/tmp"}},
      {"not a prefix match", "50 22 0:50 / /tmpx rw - tmpfs tmpfs rw\n", {"/tmp"}, {}},
      {"a bind mount of a directory", "51 22 259:1 /home/a /tmp/b rw - ext4 /dev/nvme0n1p1 rw\n", {"/tmp"}, {"/tmp/b"}},
      {"a kernel view counts too", "52 22 0:4 / /tmp/proc rw - proc proc rw\n", {"/tmp"}, {"/tmp/proc"}},
      {"the uid's FUSE mount (detached)", "53 22 0:53 / /tmp/f rw - fuse.sshfs a: rw,user_id=7,group_id=7\n", {"/"}, {}},
      {"another uid's FUSE mount", "54 22 0:54 / /tmp/g rw - fuse.sshfs a: rw,user_id=8,group_id=8\n", {"/"}, {"/tmp/g"}},
  };
  for (const auto& c : cases) {
    auto now = parse_mountinfo(std::string(kStart) + c.added);
    EXPECT_EQ(points(mounts_added(start, now, c.roots, 7)), c.want) << c.name;
  }
}

TEST(MountBaseline, AMountReplacedAtTheSamePointIsNew) {
  const auto start = parse_mountinfo(kStart);
  std::string now = kStart;
  now.replace(now.find("40 22 0:40"), 10, "41 22 0:41");  // /tmp/pool unmounted, another tmpfs there
  auto added = mounts_added(start, parse_mountinfo(now), {"/tmp"}, 7);
  EXPECT_EQ(points(added), std::vector<std::string>{"/tmp/pool"});
  EXPECT_EQ(describe_mounts(added), "a tmpfs at /tmp/pool");
}

TEST(MountBaseline, RecordsTheTableAsItIsNow) {
  char tmpl[] = "/tmp/runpool-mounts-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;
  std::ofstream(dir / "baseline") << "an earlier assignment's\n";
  std::ofstream(dir / "mountinfo") << kStart;
  record_mount_baseline((dir / "baseline").string(), (dir / "mountinfo").string());
  EXPECT_EQ(read_state_file((dir / "baseline").string()), std::string(kStart));
  record_mount_baseline((dir / "not-yet" / "baseline").string(), (dir / "mountinfo").string());
  EXPECT_EQ(read_state_file((dir / "not-yet" / "baseline").string()), std::string(kStart)) << "its directory made";
  EXPECT_THROW(record_mount_baseline((dir / "other").string(), (dir / "missing").string()), std::runtime_error);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace runpool::agent
