#include "agent/diag_tail.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace runpool::agent {
namespace {

namespace fs = std::filesystem;

class DiagTailTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/diag-tail-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void append(const std::string& name, const std::string& text) {
    std::ofstream(fs::path(dir_) / name, std::ios::app) << text;
  }
  std::string dir_;
};

TEST_F(DiagTailTest, SkipsWhatWasThereAndFollowsNewLinesAcrossFiles) {
  append("Runner_20260101-100000-utc.log", "[old] Acknowledging runner request '1'.\n");
  DiagTail tail(dir_);
  EXPECT_TRUE(tail.poll().empty());
  append("Runner_20260101-100000-utc.log", "line one\nline t");
  EXPECT_EQ(tail.poll(), std::vector<std::string>{"line one"});
  append("Runner_20260101-100000-utc.log", "wo\n");
  EXPECT_EQ(tail.poll(), std::vector<std::string>{"line two"});
  append("Runner_20260101-100500-utc.log", "second file\n");
  append("Worker_20260101-100500-utc.log", "not the runner's\n");
  append("Runner_notes.txt", "not a log\n");
  EXPECT_EQ(tail.poll(), std::vector<std::string>{"second file"});
  EXPECT_TRUE(tail.poll().empty());
}

TEST_F(DiagTailTest, ADirectoryThatAppearsLaterOrIsReplacedIsFollowed) {
  DiagTail tail(dir_ + "/_diag");
  EXPECT_TRUE(tail.poll().empty());
  fs::create_directory(dir_ + "/_diag");
  append("_diag/Runner_1.log", "a\n");
  EXPECT_EQ(tail.poll(), std::vector<std::string>{"a"});
  fs::remove_all(dir_ + "/_diag");
  fs::create_directory(dir_ + "/_diag");
  append("_diag/Runner_1.log", "\n");
  EXPECT_EQ(tail.poll(), std::vector<std::string>{""}) << "a shorter file starts over";
}

TEST_F(DiagTailTest, NothingIsReadThroughALinkOrFromAFifo) {
  // Root's files the runner user could name: its _diag a link, a log a link, a log a FIFO.
  fs::create_directories(dir_ + "/root-only");
  std::ofstream(dir_ + "/root-only/Runner_1.log") << "secret\n";
  fs::create_directory(dir_ + "/_diag");
  DiagTail tail(dir_ + "/_diag");
  fs::create_symlink(dir_ + "/root-only/Runner_1.log", dir_ + "/_diag/Runner_2.log");
  ASSERT_EQ(mkfifo((dir_ + "/_diag/Runner_3.log").c_str(), 0600), 0);
  append("_diag/Runner_4.log", "the runner's\n");
  EXPECT_EQ(tail.poll(), std::vector<std::string>{"the runner's"}) << "a FIFO never blocks the tail";
  fs::remove_all(dir_ + "/_diag");
  fs::create_directory_symlink(dir_ + "/root-only", dir_ + "/_diag");
  EXPECT_TRUE(tail.poll().empty());
  EXPECT_TRUE(DiagTail(dir_ + "/_diag").poll().empty());
}

}  // namespace
}  // namespace runpool::agent
