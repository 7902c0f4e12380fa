// The agent's cleaning of a real Docker engine (a private dockerd, tests/support/docker_daemon.h):
// a job's containers, images, volumes, networks and build cache removed, the tags it moved put back,
// what cannot be undone reported — checked afterwards with the docker CLI, an independent client of
// the Engine API. The in-memory engine the unit tests use is run on the same state and must end the
// same way.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>

#include "agent/docker_engine.h"
#include "agent/testing/memory_docker_engine.h"
#include "tests/support/docker_daemon.h"

namespace runpool::agent {
namespace {

using namespace std::chrono_literals;

class AgentDockerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (geteuid() != 0) GTEST_SKIP() << "dockerd needs root";
    daemon_ = std::make_unique<runpool::testing::DockerDaemon>();
  }
  static void TearDownTestSuite() { daemon_.reset(); }
  void SetUp() override {
    if (!daemon_) GTEST_SKIP() << "dockerd needs root";
  }

  static runpool::testing::DockerDaemon& d() { return *daemon_; }
  static inline std::unique_ptr<runpool::testing::DockerDaemon> daemon_;
};

std::string lines(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

TEST_F(AgentDockerTest, WhatAJobDidThroughTheEngineIsUndone) {
  // The instance's image: ubuntu (two tags), a service image with a container and its volume.
  const std::string ubuntu = d().import_image("ubuntu:latest", "ubuntu");
  d().must({"tag", "ubuntu:latest", "ubuntu:22.04"});
  const std::string mirror = d().import_image("mirror:1", "mirror");
  d().must({"create", "--network", "none", "--name", "mirror", "mirror:1", "/bin/busybox", "sleep", "1000"});
  d().must({"volume", "create", "mirror-data"});
  DockerEngineApi api(d().socket(), 60s);
  const EngineState start = api.state();
  ASSERT_EQ(start.images.size(), 2u);
  ASSERT_EQ(start.containers.size(), 1u);

  // The job: a container that restarts for ever, a volume, a network, a build (intermediate
  // containers and images, build cache), and ubuntu:latest moved to an image of its own.
  d().must({"run", "-d", "--restart", "always", "--network", "none", "--name", "backdoor", "ubuntu:latest",
            "/bin/busybox", "sleep", "1000"});
  d().must({"volume", "create", "loot"});
  d().must({"network", "create", "--internal", "jobnet"});
  const std::string ctx = d().dir() + "/build";
  std::filesystem::create_directories(ctx);
  std::ofstream(ctx + "/Dockerfile") << "FROM ubuntu:latest\nRUN [\"/bin/busybox\", \"touch\", \"/built\"]\n"
                                     << "RUN [\"/bin/busybox\", \"touch\", \"/built-twice\"]\n";
  d().must({"build", "--network", "none", "-t", "app:dev", ctx});
  const std::string evil = d().import_image("evil:1", "evil");
  d().must({"tag", "evil:1", "ubuntu:latest"});
  d().must({"tag", "mirror:1", "mirror:extra"});
  const EngineState after_job = api.state();
  ASSERT_EQ(d().must({"image", "inspect", "--format", "{{.Id}}", "ubuntu:latest"}), evil);
  // The build's images are made within a second or two: only their parents say which goes first,
  // and the engine (and the memory engine) refuses a parent before its child.
  ASSERT_GE(std::count_if(after_job.images.begin(), after_job.images.end(),
                          [](const DockerImage& i) { return !i.parent.empty(); }),
            2);

  // The same cleanup in memory first: it must end where the real engine will.
  testing::MemoryDockerEngine memory(after_job);
  DockerCleanReport in_memory = clean_docker_engine(memory, start, nullptr);
  EXPECT_TRUE(in_memory.problems.empty()) << lines(in_memory.problems.empty() ? "" : in_memory.problems.front());

  DockerCleanReport r = clean_docker_engine(api, start, nullptr);
  for (const auto& p : r.problems) ADD_FAILURE() << p;
  EXPECT_EQ(r.retagged, in_memory.retagged);
  EXPECT_TRUE(engine_differences(lasting_part(start), api.state()).empty());
  EXPECT_TRUE(engine_differences(lasting_part(start), memory.state()).empty());

  // As the docker CLI sees it.
  EXPECT_EQ(d().must({"image", "inspect", "--format", "{{.Id}}", "ubuntu:latest"}), ubuntu);
  EXPECT_EQ(d().must({"image", "inspect", "--format", "{{.Id}}", "ubuntu:22.04"}), ubuntu);
  // The image's own container and volume go too: a job could have written into them.
  EXPECT_EQ(lines(d().must({"ps", "-a", "--format", "{{.Names}}"})), "");
  EXPECT_EQ(lines(d().must({"volume", "ls", "--format", "{{.Name}}"})), "");
  EXPECT_EQ(d().must({"network", "ls", "--filter", "name=jobnet", "-q"}), "");
  EXPECT_NE(d().cli({"image", "inspect", "app:dev"}).exit_code, 0);
  EXPECT_NE(d().cli({"image", "inspect", evil}).exit_code, 0);
  EXPECT_NE(d().cli({"image", "inspect", "mirror:extra"}).exit_code, 0);
  EXPECT_EQ(d().must({"image", "inspect", "--format", "{{.Id}}", "mirror:1"}), mirror);
  const std::string images = lines(d().must({"images", "-a", "--format", "{{.Repository}}:{{.Tag}}"}));
  EXPECT_EQ(images.find("<none>"), std::string::npos) << "no intermediate image of the build is left: " << images;

  // Cleaning again (from what the next assignment finds) changes nothing.
  DockerCleanReport again = clean_docker_engine(api, api.state(), nullptr);
  EXPECT_TRUE(again.problems.empty());
  EXPECT_EQ(again.removed + again.retagged, 0);
}

TEST_F(AgentDockerTest, WhatCannotBeUndoneIsReportedAndTheRestStillCleaned) {
  d().import_image("spare:1", "spare");
  DockerEngineApi api(d().socket(), 60s);
  const EngineState start = api.state();
  d().must({"rmi", "spare:1"});  // no registry to pull it from again
  d().must({"volume", "create", "loot2"});
  DockerCleanReport r = clean_docker_engine(api, start, nullptr);
  bool named = false;
  for (const auto& p : r.problems) named |= p.find("(spare:1) was removed") != std::string::npos;
  EXPECT_TRUE(named) << (r.problems.empty() ? "no problem reported" : r.problems.front());
  EXPECT_EQ(d().must({"volume", "ls", "-q", "--filter", "name=loot2"}), "");
}

TEST(AgentDockerEngineApi, AnEngineThatDoesNotAnswerIsAClearError) {
  DockerEngineApi api("/nonexistent/docker.sock", 2s);
  try {
    api.state();
    ADD_FAILURE() << "no engine, yet a state";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("the Docker engine at /nonexistent/docker.sock did not answer"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace runpool::agent
