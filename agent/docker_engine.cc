#include "agent/docker_engine.h"

#include <spdlog/spdlog.h>

#include "common/json.h"

namespace runpool::agent {
namespace {

// A fixed API version: the paths and answers below are those of v1.41, which every engine since
// Docker 20.10 (Debian 12's docker.io) serves.
constexpr const char* kApi = "http://localhost/v1.41";

std::string engine_message(const HttpResponse& r) {
  if (auto doc = try_parse_json(r.body); doc && doc->isObject() && (*doc)["message"].isString()) {
    return (*doc)["message"].asString();
  }
  return r.body.substr(0, 200);
}

}  // namespace

DockerEngineApi::DockerEngineApi(std::string socket_path, Duration timeout)
    : socket_(std::move(socket_path)), timeout_(timeout) {}

HttpResponse DockerEngineApi::call(const std::string& method, const std::string& path) {
  HttpRequest req;
  req.method = method;
  req.url = kApi + path;
  req.unix_socket = socket_;
  req.timeout = timeout_;
  try {
    return http_.send(req);
  } catch (const HttpTransportError& e) {
    throw std::runtime_error("the Docker engine at " + socket_ + " did not answer " + method + " " + path + ": " +
                             e.what());
  }
}

std::string DockerEngineApi::get(const std::string& path) {
  HttpResponse r = call("GET", path);
  if (r.status != 200) {
    throw std::runtime_error("Docker engine: GET " + path + " answered " + std::to_string(r.status) + ": " +
                             engine_message(r));
  }
  return r.body;
}

EngineState DockerEngineApi::state() {
  return parse_engine_state(get("/containers/json?all=1"), get("/images/json?all=1"), get("/volumes"),
                            get("/networks"));
}

void DockerEngineApi::apply(const DockerAction& a) {
  std::string method = "DELETE", path;
  switch (a.kind) {
    case DockerActionKind::kRemoveContainer:
      path = "/containers/" + url_encode(a.target) + "?force=1&v=1";
      break;
    case DockerActionKind::kTag: {
      auto [repo, tag] = split_image_tag(a.target);
      method = "POST";
      path = "/images/" + url_encode(a.image) + "/tag?repo=" + url_encode(repo) + "&tag=" + url_encode(tag);
      break;
    }
    case DockerActionKind::kUntag:
      // Without force: the image keeps its other tags, and an image of the baseline is never
      // deleted through a tag the job added to it.
      path = "/images/" + url_encode(a.target) + "?noprune=1";
      break;
    case DockerActionKind::kRemoveImage:
      path = "/images/" + url_encode(a.target) + "?force=1";
      break;
    case DockerActionKind::kRemoveVolume:
      path = "/volumes/" + url_encode(a.target) + "?force=1";
      break;
    case DockerActionKind::kRemoveNetwork:
      path = "/networks/" + url_encode(a.target);
      break;
    case DockerActionKind::kPruneBuildCache:
      method = "POST";
      path = "/build/prune?all=1";
      break;
  }
  HttpResponse r = call(method, path);
  // 404 to a removal: already gone (a parent image pruned with its child). Never for a tag.
  if (r.status / 100 == 2 || (r.status == 404 && a.kind != DockerActionKind::kTag && a.kind != DockerActionKind::kPruneBuildCache)) return;
  throw std::runtime_error(method + " " + path + " answered " + std::to_string(r.status) + ": " + engine_message(r));
}

DockerCleanReport clean_docker_engine(DockerEngine& engine, const std::optional<EngineState>& baseline,
                                      const std::function<void()>& alive) {
  DockerCleanReport rep;
  DockerCleanupPlan plan = plan_docker_cleanup(baseline, engine.state());
  rep.problems = plan.damage;
  for (const auto& a : plan.actions) {
    if (alive) alive();
    try {
      engine.apply(a);
      spdlog::debug("docker: {}", a.why);
      if (a.kind == DockerActionKind::kTag || a.kind == DockerActionKind::kUntag) ++rep.retagged;
      else if (a.kind != DockerActionKind::kPruneBuildCache) ++rep.removed;
    } catch (const std::exception& e) {
      rep.problems.push_back(a.why + ", and could not be undone: " + e.what());
    }
  }
  if (baseline) {
    for (auto& d : engine_differences(lasting_part(*baseline), engine.state())) {
      rep.problems.push_back("after cleaning, " + d);
    }
  }
  return rep;
}

}  // namespace runpool::agent
