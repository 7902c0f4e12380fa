// The Docker engine as the agent's cleaning sees it: its state, and the removals and tags of a
// cleanup plan (docker_cleanup.h). DockerEngineApi speaks the Engine API (v1.41, Docker 20.10 and
// later) over the engine's Unix socket; clean_docker_engine runs plan, actions and verification.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/docker_cleanup.h"
#include "common/clock.h"
#include "common/http.h"

namespace runpool::agent {

class DockerEngine {
 public:
  virtual ~DockerEngine() = default;
  virtual EngineState state() = 0;
  // Carries out one action; something already gone counts as done. Throws with the engine's
  // message otherwise.
  virtual void apply(const DockerAction& action) = 0;
};

class DockerEngineApi final : public DockerEngine {
 public:
  // `timeout`: each request's (removing a large image takes a while).
  DockerEngineApi(std::string socket_path, Duration timeout);
  EngineState state() override;
  void apply(const DockerAction& action) override;

 private:
  HttpResponse call(const std::string& method, const std::string& path);
  std::string get(const std::string& path);

  std::string socket_;
  Duration timeout_;
  CurlHttpClient http_;
};

struct DockerCleanReport {
  int removed = 0;   // containers, images, volumes and networks removed
  int retagged = 0;  // tags put back or taken off
  // Why the engine is not as the assignment found it (empty: it is): damage no action can undo,
  // actions that failed, and what the verification still finds different.
  std::vector<std::string> problems;
};

// Plans against `baseline`, applies every action (a failure is a problem, the rest still run),
// then compares the engine with the baseline again. `alive` is called between actions.
DockerCleanReport clean_docker_engine(DockerEngine& engine, const std::optional<EngineState>& baseline,
                                      const std::function<void()>& alive);

}  // namespace runpool::agent
