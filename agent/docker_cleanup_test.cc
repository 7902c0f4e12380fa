#include "agent/docker_cleanup.h"

#include <gtest/gtest.h>

#include "agent/docker_engine.h"
#include "agent/testing/memory_docker_engine.h"
#include "common/json.h"

namespace runpool::agent {
namespace {

// An engine as an assignment finds it after a cleaning: images and networks.
EngineState base() {
  EngineState s;
  s.images = {{"sha256:ubuntu", {"ubuntu:22.04", "ubuntu:latest"}, 100}, {"sha256:svc", {"mirror:1"}, 90}};
  s.networks = {{"n-bridge", "bridge"}, {"n-host", "host"}, {"n-none", "none"}};
  return s;
}

// One whose image also shipped a container and a volume (a mirror service and its data).
EngineState found() {
  EngineState s = base();
  s.containers = {{"c-keep", "sha256:svc", "mirror"}};
  s.volumes = {"mirror-data"};
  return s;
}

std::vector<std::string> kinds(const DockerCleanupPlan& p) {
  std::vector<std::string> out;
  for (const auto& a : p.actions) {
    switch (a.kind) {
      case DockerActionKind::kRemoveContainer: out.push_back("rm-container " + a.target); break;
      case DockerActionKind::kTag: out.push_back("tag " + a.target + " " + a.image); break;
      case DockerActionKind::kUntag: out.push_back("untag " + a.target); break;
      case DockerActionKind::kRemoveImage: out.push_back("rm-image " + a.target); break;
      case DockerActionKind::kRemoveVolume: out.push_back("rm-volume " + a.target); break;
      case DockerActionKind::kRemoveNetwork: out.push_back("rm-network " + a.target); break;
      case DockerActionKind::kPruneBuildCache: out.push_back("prune"); break;
    }
  }
  return out;
}

TEST(DockerCleanup, AnUnchangedEngineOnlyLosesItsBuildCache) {
  auto p = plan_docker_cleanup(base(), base());
  EXPECT_EQ(kinds(p), std::vector<std::string>{"prune"});
  EXPECT_TRUE(p.damage.empty());
  EXPECT_TRUE(engine_differences(base(), base()).empty());
}

TEST(DockerCleanup, WhatTheJobMadeGoesContainersFirstAndImagesNewestFirst) {
  EngineState now = base();
  now.containers.push_back({"c-job", "sha256:built", "backdoor"});
  now.images.push_back({"sha256:layer", {}, 200});
  now.images.push_back({"sha256:built", {"app:dev"}, 300});
  now.volumes.push_back("secrets");
  now.networks.push_back({"n-job", "jobnet"});
  auto p = plan_docker_cleanup(base(), now);
  EXPECT_EQ(kinds(p), (std::vector<std::string>{"rm-container c-job", "rm-image sha256:built", "rm-image sha256:layer",
                                                "rm-volume secrets", "rm-network n-job", "prune"}));
  EXPECT_TRUE(p.damage.empty());
  auto diff = engine_differences(base(), now);
  EXPECT_EQ(diff.size(), 5u);
}

// A build's images made within one second: only ParentId says which was built on which, and the
// engine refuses to remove a parent first (the order the engine lists them in must not matter).
TEST(DockerCleanup, AChildImageGoesBeforeItsParentWhateverTheirTimes) {
  EngineState now = base();
  now.images.push_back({"sha256:step1", {}, 300, "sha256:ubuntu"});  // built on a baseline image
  now.images.push_back({"sha256:step2", {}, 300, "sha256:step1"});
  now.images.push_back({"sha256:app", {"app:dev"}, 300, "sha256:step2"});
  now.images.push_back({"sha256:other", {"other:1"}, 200});
  auto p = plan_docker_cleanup(base(), now);
  EXPECT_EQ(kinds(p), (std::vector<std::string>{"rm-image sha256:app", "rm-image sha256:step2", "rm-image sha256:step1",
                                                "rm-image sha256:other", "prune"}));
  testing::MemoryDockerEngine engine(now);
  DockerCleanReport r = clean_docker_engine(engine, base(), nullptr);
  EXPECT_TRUE(r.problems.empty()) << r.problems.front();
  EXPECT_TRUE(engine_differences(base(), engine.state()).empty());

  // The same against an engine that enforces it, parent first: refused, as the engine refuses.
  testing::MemoryDockerEngine strict(now);
  EXPECT_THROW(strict.apply({DockerActionKind::kRemoveImage, "sha256:step1", "", ""}), std::runtime_error);
  // A parent loop in a malformed answer ends the walk.
  now.images[2].parent = "sha256:app";
  now.images[4].parent = "sha256:step1";
  EXPECT_EQ(plan_docker_cleanup(base(), now).actions.size(), 5u);
}

TEST(DockerCleanup, AMovedTagGoesBackToItsImageBeforeTheJobsImageIsRemoved) {
  EngineState now = base();
  now.images[0].tags = {"ubuntu:22.04"};                          // latest taken away …
  now.images.push_back({"sha256:evil", {"ubuntu:latest"}, 300});  // … and given to the job's image
  auto p = plan_docker_cleanup(base(), now);
  EXPECT_EQ(kinds(p), (std::vector<std::string>{"tag ubuntu:latest sha256:ubuntu", "rm-image sha256:evil", "prune"}));
  EXPECT_NE(p.actions[0].why.find("moved to image evil"), std::string::npos);
  auto diff = engine_differences(base(), now);
  ASSERT_EQ(diff.size(), 2u);
  EXPECT_EQ(diff[0], "image ubuntu (ubuntu:22.04, ubuntu:latest) is now tagged ubuntu:22.04");
}

TEST(DockerCleanup, ARemovedTagIsPutBackAndAnAddedOneTakenOff) {
  EngineState now = base();
  now.images[0].tags = {"ubuntu:22.04", "ubuntu:evil"};
  auto p = plan_docker_cleanup(base(), now);
  EXPECT_EQ(kinds(p), (std::vector<std::string>{"tag ubuntu:latest sha256:ubuntu", "untag ubuntu:evil", "prune"}));
}

TEST(DockerCleanup, WhatCannotBePutBackIsDamage) {
  EngineState now = base();
  now.images.erase(now.images.begin());  // the job deleted ubuntu: there is no registry to pull it again from
  auto p = plan_docker_cleanup(base(), now);
  ASSERT_EQ(p.damage.size(), 1u);
  EXPECT_EQ(p.damage[0], "image ubuntu (ubuntu:22.04, ubuntu:latest) was removed");
  EXPECT_EQ(kinds(p), std::vector<std::string>{"prune"});
}

// A container or volume the assignment found may hold what a job wrote into it (`docker exec`, a
// write into the volume): none outlives the assignment. Images and networks are kept.
TEST(DockerCleanup, BaselineContainersAndVolumesNeverOutliveTheAssignmentImagesAndNetworksDo) {
  auto p = plan_docker_cleanup(found(), found());
  EXPECT_EQ(kinds(p), (std::vector<std::string>{"rm-container c-keep", "rm-volume mirror-data", "prune"}));
  EXPECT_TRUE(p.damage.empty());
  EXPECT_NE(p.actions[0].why.find("was there when the assignment began"), std::string::npos) << p.actions[0].why;
  EngineState lasting = lasting_part(found());
  EXPECT_TRUE(lasting.containers.empty());
  EXPECT_TRUE(lasting.volumes.empty());
  EXPECT_EQ(lasting.images.size(), found().images.size());
  EXPECT_EQ(lasting.networks.size(), found().networks.size());
  EngineState after = found();
  after.containers.clear();
  after.volumes.clear();
  EXPECT_TRUE(engine_differences(lasting, after).empty()) << "what a cleaning leaves is no difference";
}

TEST(DockerCleanup, TheLossOfWhatTheAssignmentFoundIsReported) {
  EngineState now = found();
  now.containers.clear();
  now.volumes.clear();
  now.networks.pop_back();
  auto diff = engine_differences(found(), now);
  EXPECT_EQ(diff, (std::vector<std::string>{"container mirror is gone", "volume mirror-data is gone", "network none is gone"}));
  now = found();
  now.containers[0].image_id = "sha256:ubuntu";
  EXPECT_EQ(engine_differences(found(), now), std::vector<std::string>{"container mirror runs another image"});
}

TEST(DockerCleanup, WithoutABaselineEverythingRemakableGoesAndTheImagesCannotBeVouchedFor) {
  EngineState now = found();
  auto p = plan_docker_cleanup(std::nullopt, now);
  EXPECT_EQ(kinds(p), (std::vector<std::string>{"rm-container c-keep", "rm-image sha256:ubuntu", "rm-image sha256:svc",
                                                "rm-volume mirror-data", "prune"}));
  ASSERT_EQ(p.damage.size(), 1u);
  EXPECT_NE(p.damage[0].find("cannot be vouched for"), std::string::npos);
  EngineState bare;
  bare.networks = found().networks;
  EXPECT_TRUE(plan_docker_cleanup(std::nullopt, bare).damage.empty());
}

TEST(DockerCleanup, TheEngineApisAnswersParse) {
  // As Docker 20.10 answers (trimmed): null lists, "<none>:<none>" for an untagged image.
  auto s = parse_engine_state(
      R"([{"Id":"abc","Names":["/web"],"Image":"nginx","ImageID":"sha256:n","State":"running"}])",
      R"([{"Id":"sha256:n","RepoTags":["nginx:1","nginx:latest"],"Created":1700000000},
          {"Id":"sha256:x","RepoTags":["<none>:<none>"],"Created":1,"ParentId":"sha256:n"},
          {"Id":"sha256:y","RepoTags":null,"ParentId":""}])",
      R"({"Volumes":null,"Warnings":null})", R"([{"Name":"bridge","Id":"nb","Driver":"bridge"}])");
  ASSERT_EQ(s.containers.size(), 1u);
  EXPECT_EQ(s.containers[0].name, "web");
  EXPECT_EQ(s.containers[0].image_id, "sha256:n");
  ASSERT_EQ(s.images.size(), 3u);
  EXPECT_EQ(s.images[0].tags, (std::vector<std::string>{"nginx:1", "nginx:latest"}));
  EXPECT_EQ(s.images[0].created, 1700000000);
  EXPECT_TRUE(s.images[1].tags.empty());
  EXPECT_EQ(s.images[1].parent, "sha256:n");
  EXPECT_TRUE(s.images[2].tags.empty());
  EXPECT_EQ(s.images[2].parent, "");
  EXPECT_TRUE(s.volumes.empty());
  ASSERT_EQ(s.networks.size(), 1u);
  EXPECT_EQ(s.networks[0].name, "bridge");
  s = parse_engine_state("[]", "[]", R"({"Volumes":[{"Name":"v1"}]})", "[]");
  EXPECT_EQ(s.volumes, std::vector<std::string>{"v1"});
}

TEST(DockerCleanup, ForeignDocumentsAreClearErrors) {
  EXPECT_THROW(parse_engine_state("{}", "[]", "{}", "[]"), JsonError);
  EXPECT_THROW(parse_engine_state("[{}]", "[]", "{}", "[]"), JsonError);
  EXPECT_THROW(parse_engine_state("[]", R"([{"Id":"x","RepoTags":"a"}])", "{}", "[]"), JsonError);
  EXPECT_THROW(parse_engine_state("[]", "[]", "[]", "[]"), JsonError);
  EXPECT_THROW(parse_engine_state("[]", "[]", "{}", "not json"), JsonError);
}

TEST(DockerCleanup, TheBaselineSurvivesItsFile) {
  EngineState s = base();
  EngineState back = decode_engine_state(encode_engine_state(s));
  EXPECT_TRUE(engine_differences(s, back).empty());
  EXPECT_EQ(back.images[0].created, 100);
  s.images[1].parent = "sha256:ubuntu";
  EXPECT_EQ(decode_engine_state(encode_engine_state(s)).images[1].parent, "sha256:ubuntu");
  EXPECT_THROW(decode_engine_state(R"({"version":2})"), JsonError);
  EXPECT_THROW(decode_engine_state(R"({"version":1,"containers":[]})"), JsonError);
  EXPECT_THROW(decode_engine_state(""), JsonError);
}

TEST(DockerCleanup, TagsSplitAfterTheRegistryPort) {
  EXPECT_EQ(split_image_tag("ubuntu:latest"), (std::pair<std::string, std::string>{"ubuntu", "latest"}));
  EXPECT_EQ(split_image_tag("localhost:5000/team/app:v2"),
            (std::pair<std::string, std::string>{"localhost:5000/team/app", "v2"}));
  EXPECT_EQ(split_image_tag("localhost:5000/app"), (std::pair<std::string, std::string>{"localhost:5000/app", "latest"}));
  EXPECT_TRUE(predefined_network("host"));
  EXPECT_FALSE(predefined_network("jobnet"));
}

}  // namespace
}  // namespace runpool::agent
