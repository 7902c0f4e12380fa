// In-memory stand-ins for serve's unit tests (serve_server_test.cc; only tests include this): the
// runner scale-set service answering the real clients (ScaleSetClient, MessageSession) over a
// FakeHttp — discovery, scale sets, one live session at a time, the message queue, acquiring
// jobs, JIT runners — and a ServeWorld wiring it, a World (test_fakes.h) and a MemoryLeaseStore
// to a Server whose loops the test turns by hand (Server::Threads::kDriven) on the fake clock.
// What it models is what the tests ask of the service: a session forgotten answers its queue
// calls 404 `RunnerAdminException` (as GitHub was reported to), a second session while one is
// live is refused (409 RunnerScaleSetSessionConflictException), an unacknowledged envelope comes
// again, a runner name is the scale set's until deleted; a scale set deleted behind the client's
// back takes its queue and session with it (their calls answer 404
// RunnerScaleSetNotFoundException), and one created again has a new id.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/github/actions_service.h"
#include "common/github/github_client.h"
#include "common/github/scaleset_client.h"
#include "common/github/scaleset_test_support.h"
#include "common/json.h"
#include "common/pool/lease_store.h"
#include "common/testing/fake_http.h"
#include "controller/serve_server.h"
#include "controller/test_fakes.h"

namespace runpool::controller::testing {

class FakeScaleSetService {
 public:
  explicit FakeScaleSetService(Clock& clock) : clock_(clock) {}

  // Answers every request `http` gets.
  void serve_on(runpool::testing::FakeHttp& http) {
    http.on([this](const HttpRequest& r) { return answer(r); });
  }

  // The service forgets the live session: its queue calls are answered 404 from now on.
  void forget_session() {
    std::lock_guard<std::mutex> lock(mu_);
    live_session_.clear();
  }
  // Another listener's session is live (a holder killed a moment ago): ours is refused until it
  // lapses (lapse_foreign_session).
  void open_foreign_session() {
    std::lock_guard<std::mutex> lock(mu_);
    live_session_ = "foreign-session";
  }
  void lapse_foreign_session() {
    std::lock_guard<std::mutex> lock(mu_);
    if (live_session_ == "foreign-session") live_session_.clear();
  }
  // The service deletes the scale set (as GitHub does one unused for a week): its message queue,
  // with any message not yet delivered, and its session go with it.
  void delete_scale_set() {
    std::lock_guard<std::mutex> lock(mu_);
    set_id_.reset();
    messages_.clear();
    live_session_.clear();
  }
  // The same between a poll and its acknowledgement: the acknowledgement answers 404.
  void delete_scale_set_at_next_ack() {
    std::lock_guard<std::mutex> lock(mu_);
    delete_at_ack_ = true;
  }
  // GitHub removes an ephemeral runner once its job completed.
  void remove_runner(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    runners_.erase(name);
  }
  // Queues an envelope of job messages (a JSON array) with the statistics' assigned jobs.
  void push_message(const std::string& jobs_json, int64_t assigned_jobs) {
    std::lock_guard<std::mutex> lock(mu_);
    Json::Value e(Json::objectValue);
    e["messageId"] = static_cast<Json::Int64>(++message_ids_);
    e["messageType"] = "RunnerScaleSetJobMessages";
    e["body"] = jobs_json;
    e["statistics"]["totalAssignedJobs"] = static_cast<Json::Int64>(assigned_jobs);
    messages_[message_ids_] = write_json(e);
  }
  static std::string job_available(int64_t request_id) {
    return R"([{"messageType":"JobAvailable","runnerRequestId":)" + std::to_string(request_id) +
           R"(,"jobId":"job-)" + std::to_string(request_id) + R"("}])";
  }

  // Runs (outside the service's lock, before answering) whenever a JIT runner is made: a slow
  // GitHub, and the world moving on meanwhile.
  std::function<void(const std::string& runner_name)> on_jit;

  struct Counts {
    int sessions_created = 0, sessions_deleted = 0, polls = 0, acks = 0, jits = 0, runners_deleted = 0;
    std::vector<int64_t> acquired;
  };
  Counts counts() {
    std::lock_guard<std::mutex> lock(mu_);
    return counts_;
  }
  std::optional<int64_t> set_id() {
    std::lock_guard<std::mutex> lock(mu_);
    return set_id_;
  }
  std::string live_session() {
    std::lock_guard<std::mutex> lock(mu_);
    return live_session_;
  }
  size_t unacknowledged() {
    std::lock_guard<std::mutex> lock(mu_);
    return messages_.size();
  }

 private:
  static HttpResponse json(long status, const Json::Value& v) { return runpool::testing::reply(status, write_json(v)); }
  static HttpResponse error(long status, const std::string& type, const std::string& message) {
    Json::Value v(Json::objectValue);
    v["typeName"] = type;
    v["message"] = message;
    return json(status, v);
  }
  static Json::Value list(const std::vector<Json::Value>& items) {
    Json::Value v(Json::objectValue);
    v["count"] = static_cast<Json::Int>(items.size());
    v["value"] = Json::Value(Json::arrayValue);
    for (const Json::Value& i : items) v["value"].append(i);
    return v;
  }
  static std::string query(const std::string& url, const std::string& key) {
    const size_t q = url.find('?');
    if (q == std::string::npos) return "";
    const std::string needle = key + "=";
    for (size_t at = q + 1; at < url.size();) {
      size_t amp = url.find('&', at);
      if (amp == std::string::npos) amp = url.size();
      if (url.compare(at, needle.size(), needle) == 0) return url.substr(at + needle.size(), amp - at - needle.size());
      at = amp + 1;
    }
    return "";
  }

  HttpResponse answer(const HttpRequest& r) {
    const std::string path = r.url.substr(0, r.url.find('?'));
    const auto ends = [&](const std::string& tail) {
      return path.size() >= tail.size() && path.compare(path.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (ends("/actions/runners/registration-token")) {
      return runpool::testing::reply(201, R"({"token":"AREG","expires_at":"2099-01-01T00:00:00Z"})");
    }
    if (ends("/actions/runner-registration")) {
      Json::Value v(Json::objectValue);
      v["url"] = github::testing::kScaleSetService + "/";
      v["token"] = github::testing::jwt_expiring(clock_.now() + std::chrono::hours(1));
      return json(201, v);
    }
    if (r.method == "POST" && ends("/generatejitconfig")) {
      const std::string name = parse_json(r.body, "request")["name"].asString();
      if (on_jit) on_jit(name);
      const std::string set = path.substr(0, path.size() - std::string("/generatejitconfig").size());
      return jit(name, std::stoll(set.substr(set.rfind('/') + 1)));
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (path.rfind(kQueue, 0) == 0) {
      if (!set_id_) return error(404, "RunnerScaleSetNotFoundException", "No runner scale set found");
      return queue_call(r, path.substr(kQueue.size()));
    }
    if (ends("/_apis/runtime/runnerscalesets") && r.method == "GET") {
      std::vector<Json::Value> found;
      if (set_id_ && query(r.url, "name") == set_name_) found.push_back(set_json());
      return json(200, list(found));
    }
    if (ends("/_apis/runtime/runnerscalesets") && r.method == "POST") {
      set_name_ = parse_json(r.body, "request")["name"].asString();
      set_id_ = next_set_id_++;
      return json(200, set_json());
    }
    if (ends("/sessions") && r.method == "POST") {
      if (!live_session_.empty()) {
        return error(409, "RunnerScaleSetSessionConflictException", "a session is already live");
      }
      live_session_ = "session-" + std::to_string(++counts_.sessions_created);
      return json(200, session_json());
    }
    if (path.find("/sessions/") != std::string::npos && r.method == "DELETE") {
      const std::string id = path.substr(path.rfind('/') + 1);
      if (id != live_session_) return error(404, "RunnerAdminException", "session ID that doesn't exist");
      live_session_.clear();
      ++counts_.sessions_deleted;
      return runpool::testing::reply(204);
    }
    if (ends("/acquirejobs")) {
      const Json::Value ids = parse_json(r.body, "request");
      std::vector<Json::Value> got;
      for (const Json::Value& id : ids) {
        counts_.acquired.push_back(id.asInt64());
        got.push_back(id);
      }
      return json(200, list(got));
    }
    if (path.find("/distributedtask/pools/0/agents") != std::string::npos) return agents_call(r, path);
    return error(500, "UnexpectedRequest", r.method + " " + r.url);
  }

  HttpResponse queue_call(const HttpRequest& r, const std::string& rest) {
    // rest: "<session>/messages" or "<session>/messages/<id>"
    const std::string session = rest.substr(0, rest.find('/'));
    if (session != live_session_) return error(404, "RunnerAdminException", "runner referenced a session ID that doesn't exist");
    if (r.method == "DELETE" && delete_at_ack_) {
      delete_at_ack_ = false;
      set_id_.reset();
      messages_.clear();
      live_session_.clear();
      return error(404, "RunnerScaleSetNotFoundException", "No runner scale set found");
    }
    if (r.method == "DELETE") {
      messages_.erase(std::stoll(rest.substr(rest.rfind('/') + 1)));
      ++counts_.acks;
      return runpool::testing::reply(200);
    }
    ++counts_.polls;
    const std::string last = query(r.url, "lastMessageId");
    const int64_t after = last.empty() ? 0 : std::stoll(last);
    auto it = messages_.upper_bound(after);
    if (it == messages_.end()) return runpool::testing::reply(202);
    return runpool::testing::reply(200, it->second);
  }

  HttpResponse agents_call(const HttpRequest& r, const std::string& path) {
    if (r.method == "DELETE") {
      const int64_t id = std::stoll(path.substr(path.rfind('/') + 1));
      for (auto it = runners_.begin(); it != runners_.end(); ++it) {
        if (it->second.first == id) {
          runners_.erase(it);
          ++counts_.runners_deleted;
          break;
        }
      }
      return runpool::testing::reply(204);
    }
    std::vector<Json::Value> found;
    auto it = runners_.find(query(r.url, "agentName"));
    if (it != runners_.end()) found.push_back(runner_json(it->first, it->second.first, it->second.second));
    return json(200, list(found));
  }

  HttpResponse jit(const std::string& name, int64_t set_id) {
    std::lock_guard<std::mutex> lock(mu_);
    if (set_id_ != set_id) return error(404, "RunnerScaleSetNotFoundException", "No runner scale set found");
    if (runners_.count(name)) return error(409, "AgentExistsException", "name taken");
    runners_[name] = {++runner_ids_, set_id};
    ++counts_.jits;
    Json::Value v(Json::objectValue);
    v["runner"] = runner_json(name, runner_ids_, set_id);
    v["encodedJITConfig"] = "jit-of-" + name;
    return json(200, v);
  }

  Json::Value set_json() const {
    Json::Value v(Json::objectValue);
    v["id"] = static_cast<Json::Int64>(*set_id_);
    v["name"] = set_name_;
    v["runnerGroupId"] = 1;
    return v;
  }
  Json::Value session_json() const {
    Json::Value v(Json::objectValue);
    v["sessionId"] = live_session_;
    v["ownerName"] = "serve";
    v["messageQueueUrl"] = kQueue + live_session_ + "/messages";
    v["messageQueueAccessToken"] = "queue-token";
    v["statistics"]["totalAssignedJobs"] = 0;
    return v;
  }
  static Json::Value runner_json(const std::string& name, int64_t id, int64_t set_id) {
    Json::Value v(Json::objectValue);
    v["id"] = static_cast<Json::Int64>(id);
    v["name"] = name;
    v["runnerScaleSetId"] = static_cast<Json::Int64>(set_id);
    return v;
  }

  const std::string kQueue = "https://broker.example.net/queues/";
  Clock& clock_;
  std::mutex mu_;
  std::optional<int64_t> set_id_;
  int64_t next_set_id_ = 7;
  bool delete_at_ack_ = false;
  std::string set_name_;
  std::string live_session_;
  std::map<int64_t, std::string> messages_;  // unacknowledged, by id
  int64_t message_ids_ = 0;
  std::map<std::string, std::pair<int64_t, int64_t>> runners_;  // name → its id and its scale set's
  int64_t runner_ids_ = 0;
  Counts counts_;
};

// A Server of scale set "ci" (pool "ci", class small) over the in-memory world, its loops turned
// by the test. `standby` is another holder's keeper of the same lease, on the same store.
struct ServeWorld {
  // The settings' defaults hold: a lease of 30 s, retries every 5 s, a pass every 2 s (the lease
  // keepers read them when built, below).
  ServeWorld() {
    world.agents_on = false;  // no agent answers: the records stay as the test leaves them
    service.serve_on(http);
  }
  static github::GithubSettings github_settings() {
    github::GithubSettings s;
    s.api_base = github::testing::kScaleSetApi;
    return s;
  }

  World world;
  runpool::testing::FakeHttp http;
  FakeScaleSetService service{world.clock};
  github::GithubCaller github_caller{http, world.clock, github_settings()};
  github::StaticTokenSource pat{Secret("ghp_serve_test")};
  github::GithubClient github_client{github_caller, pat, github::OwnerScope::parse("octo-org")};
  github::ActionsCaller caller{http, world.clock, github::ActionsServiceSettings{}};
  github::ActionsCaller queue_caller{http, world.clock, github::ActionsServiceSettings{}};
  github::ActionsServiceAuth auth{github_client, github::testing::kScaleSetApi, caller};
  github::ScaleSetClient scale_sets{caller, auth};
  std::atomic<bool> stop_queue{false};
  pool::MemoryLeaseStore leases;
  ServeDeps deps{scale_sets, queue_caller, stop_queue, leases, "host-a:1"};
  Server server{world.ctx, deps, Server::Threads::kDriven};
  ServeLease standby{world.ctx, leases, serve_lease_name(world.settings), "host-b:2", [] {}};

  std::optional<pool::Lease> lease() { return leases.get(serve_lease_name(world.settings)); }
  bool we_hold() {
    auto l = lease();
    return l && l->holder == "host-a:1" && l->expires_ms > world.now();
  }
  // Moves the clock by `d` without sleeping anyone.
  void advance(Duration d) { world.clock.clock.advance(d); }
};

}  // namespace runpool::controller::testing
