#include "common/metrics/file_sink.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/json.h"
#include "common/metrics/testing.h"

namespace runpool::metrics {
namespace {

namespace fs = std::filesystem;

class FileSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "runpool-metrics-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> lines(const fs::path& p) {
    std::ifstream in(p);
    std::vector<std::string> out;
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  }
  std::string contents(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  fs::path dir_;
};

Event event(const std::string& metric, double value, const std::string& note = "") {
  Event e;
  e.ns = "runpool";
  e.timestamp_ms = 1'800'000'000'000;
  e.dimension("Pool", "ci").add(metric, value);
  if (!note.empty()) e.property("Note", note);
  return e;
}

TEST_F(FileSinkTest, AppendsOneLinePerEventAfterWhatIsThere) {
  fs::path p = dir_ / "metrics.log";
  { std::ofstream(p) << "earlier line\n"; }
  FileSink sink(p.string());
  EXPECT_EQ(sink.path(), p.string());
  sink.emit(event("WarmClaims", 2, "multi\nline"));
  sink.emit(event("ColdLaunches", 1));
  std::string text = contents(p);
  ASSERT_EQ(text.back(), '\n');
  auto got = lines(p);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], "earlier line");
  EXPECT_EQ(got[1], format_emf(event("WarmClaims", 2, "multi\nline")));
  EXPECT_EQ(parse_json(got[2], "line")["ColdLaunches"], 1);
  EXPECT_EQ(fs::status(p).permissions() & fs::perms::others_write, fs::perms::none);
}

TEST_F(FileSinkTest, CreatesTheFileAndPicksUpARotation) {
  fs::path p = dir_ / "m.log";
  FileSink sink(p.string());
  sink.emit(event("A", 1));
  fs::rename(p, dir_ / "m.log.1");  // logrotate's move
  sink.emit(event("B", 2));
  ASSERT_EQ(lines(p).size(), 1u);
  EXPECT_EQ(parse_json(lines(p)[0], "line")["B"], 2);
  EXPECT_EQ(lines(dir_ / "m.log.1").size(), 1u);
}

TEST_F(FileSinkTest, AFailureIsAWarningNeverAnException) {
  testing::CapturedLog log;
  FileSink sink((dir_ / "no" / "such" / "dir" / "m.log").string());
  EXPECT_NO_THROW(sink.emit(event("A", 1)));
  EXPECT_NE(log.text().find("metrics: cannot open"), std::string::npos) << log.text();

  FileSink bad_event((dir_ / "ok.log").string());
  EXPECT_NO_THROW(bad_event.emit(event("A", std::nan(""))));
  EXPECT_FALSE(fs::exists(dir_ / "ok.log"));  // nothing half-written
  EXPECT_NE(log.text().find("dropped an event"), std::string::npos);
}

TEST_F(FileSinkTest, ConcurrentWritersNeverInterleaveWithinALine) {
  fs::path p = dir_ / "shared.log";
  const std::string padding(3000, 'x');  // long lines make a torn write likely if it could happen
  constexpr int kThreads = 4, kEach = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      FileSink sink(p.string());  // each its own sink, as separate processes would be
      for (int i = 0; i < kEach; ++i) sink.emit(event("T" + std::to_string(t), i, padding));
    });
  }
  for (auto& th : threads) th.join();
  auto got = lines(p);
  ASSERT_EQ(got.size(), static_cast<size_t>(kThreads * kEach));
  std::map<std::string, int> per_thread;
  for (const auto& l : got) {
    Json::Value v = parse_json(l, "line");
    EXPECT_EQ(v["Note"], padding);
    for (int t = 0; t < kThreads; ++t) {
      if (v.isMember("T" + std::to_string(t))) ++per_thread["T" + std::to_string(t)];
    }
  }
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(per_thread["T" + std::to_string(t)], kEach);
}

}  // namespace
}  // namespace runpool::metrics
