// A Docker engine in memory, for tests of the cleaning around it. tests/integration/
// agent_docker_test.cc runs the same cleanup against it and a real engine and expects the same end.
// Like the engine, it refuses to remove an image another image names as its parent. Differences
// from the real engine, none of which the cleanup relies on: a removal never cascades to untagged
// parents, containers never run, and the build cache is not modelled.
#pragma once

#include <algorithm>
#include <stdexcept>

#include "agent/docker_engine.h"

namespace runpool::agent::testing {

class MemoryDockerEngine final : public DockerEngine {
 public:
  explicit MemoryDockerEngine(EngineState s = {}) : s_(std::move(s)) {}

  EngineState state() override {
    ++reads;
    if (unreachable) throw std::runtime_error("the Docker engine did not answer");
    return s_;
  }

  void apply(const DockerAction& a) override {
    applied.push_back(a);
    if (unreachable) throw std::runtime_error("the Docker engine did not answer");
    switch (a.kind) {
      case DockerActionKind::kRemoveContainer:
        std::erase_if(s_.containers, [&](const DockerContainer& c) { return c.id == a.target; });
        break;
      case DockerActionKind::kTag: {
        DockerImage* to = image(a.image);
        if (!to) throw std::runtime_error("No such image: " + a.image);
        untag(a.target);
        to->tags.push_back(a.target);
        std::sort(to->tags.begin(), to->tags.end());
        break;
      }
      case DockerActionKind::kUntag:
        // As the engine: removing an image's last tag removes the image, unless another image was
        // built on it (it stays, untagged).
        if (DockerImage* i = untag(a.target); i && i->tags.empty() && !has_children(i->id)) remove_image(i->id);
        break;
      case DockerActionKind::kRemoveImage:
        remove_image(a.target);
        break;
      case DockerActionKind::kRemoveVolume:
        std::erase(s_.volumes, a.target);
        break;
      case DockerActionKind::kRemoveNetwork:
        std::erase_if(s_.networks, [&](const DockerNetwork& n) { return n.id == a.target; });
        break;
      case DockerActionKind::kPruneBuildCache:
        break;
    }
  }

  EngineState& engine() { return s_; }  // what a job does, done directly
  bool unreachable = false;
  int reads = 0;
  std::vector<DockerAction> applied;

 private:
  DockerImage* image(const std::string& id) {
    for (auto& i : s_.images) {
      if (i.id == id) return &i;
    }
    return nullptr;
  }
  DockerImage* untag(const std::string& tag) {
    for (auto& i : s_.images) {
      if (std::erase(i.tags, tag)) return &i;
    }
    return nullptr;
  }
  bool has_children(const std::string& id) const {
    return std::any_of(s_.images.begin(), s_.images.end(), [&](const DockerImage& i) { return i.parent == id; });
  }
  void remove_image(const std::string& id) {
    if (has_children(id)) {
      throw std::runtime_error("conflict: unable to delete " + id + " (cannot be forced) - image has dependent "
                               "child images");
    }
    std::erase_if(s_.images, [&](const DockerImage& i) { return i.id == id; });
  }

  EngineState s_;
};

}  // namespace runpool::agent::testing
