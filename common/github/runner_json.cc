#include "common/github/runner_json.h"

#include "common/github/json_fields.h"
#include "common/json.h"

namespace runpool::github {
namespace {

std::string item(const std::string& what, const char* key, Json::ArrayIndex i) {
  return what + " " + key + "[" + std::to_string(i) + "]";
}

}  // namespace

std::vector<std::string> Runner::label_names() const {
  std::vector<std::string> names;
  for (const RunnerLabel& l : labels) names.push_back(l.name);
  return names;
}

std::string_view to_string(DeleteOutcome outcome) {
  switch (outcome) {
    case DeleteOutcome::kDeleted: return "deleted";
    case DeleteOutcome::kAlreadyGone: return "already-gone";
    case DeleteOutcome::kBusy: return "busy";
  }
  return "?";
}

RunnerLabel parse_label(const Json::Value& v, const std::string& what) {
  RunnerLabel label;
  label.name = require_string(v, "name", what);
  label.id = optional_int(v, "id", what).value_or(0);
  label.type = optional_string(v, "type", what).value_or("");
  return label;
}

Runner parse_runner(const Json::Value& v, const std::string& what) {
  Runner r;
  r.id = require_int(v, "id", what);
  r.name = require_string(v, "name", what);
  r.os = optional_string(v, "os", what).value_or("");
  r.status = require_string(v, "status", what);
  r.busy = require_bool(v, "busy", what);
  r.ephemeral = optional_bool(v, "ephemeral", false, what);
  r.runner_group_id = optional_int(v, "runner_group_id", what).value_or(0);
  if (v.isMember("labels") && !v["labels"].isNull()) {
    const Json::Value& labels = require_array(v, "labels", what);
    for (Json::ArrayIndex i = 0; i < labels.size(); ++i) {
      r.labels.push_back(parse_label(labels[i], item(what, "labels", i)));
    }
  }
  return r;
}

std::vector<Runner> parse_runner_page(const Json::Value& v, const std::string& what) {
  const Json::Value& runners = require_array(v, "runners", what);
  std::vector<Runner> out;
  for (Json::ArrayIndex i = 0; i < runners.size(); ++i) out.push_back(parse_runner(runners[i], item(what, "runners", i)));
  return out;
}

std::vector<RunnerLabel> parse_label_list(const Json::Value& v, const std::string& what) {
  const Json::Value& labels = require_array(v, "labels", what);
  std::vector<RunnerLabel> out;
  for (Json::ArrayIndex i = 0; i < labels.size(); ++i) out.push_back(parse_label(labels[i], item(what, "labels", i)));
  return out;
}

RunnerToken parse_runner_token(const Json::Value& v, const std::string& what) {
  RunnerToken t;
  t.token = Secret(require_string(v, "token", what));
  if (t.token.empty()) throw JsonError(what + ": field 'token' is empty");
  t.expires_at = require_time(v, "expires_at", what);
  return t;
}

JitConfig parse_jit_config(const Json::Value& v, const std::string& what) {
  JitConfig c;
  c.runner = parse_runner(require_member(v, "runner", what), what + " runner");
  c.encoded_jit_config = Secret(require_string(v, "encoded_jit_config", what));
  if (c.encoded_jit_config.empty()) throw JsonError(what + ": field 'encoded_jit_config' is empty");
  return c;
}

std::vector<RunnerDownload> parse_downloads(const Json::Value& v, const std::string& what) {
  if (!v.isArray()) throw JsonError(what + ": expected a JSON array");
  std::vector<RunnerDownload> out;
  for (Json::ArrayIndex i = 0; i < v.size(); ++i) {
    std::string w = what + "[" + std::to_string(i) + "]";
    RunnerDownload d;
    d.os = require_string(v[i], "os", w);
    d.architecture = require_string(v[i], "architecture", w);
    d.download_url = require_string(v[i], "download_url", w);
    d.filename = require_string(v[i], "filename", w);
    d.sha256_checksum = optional_string(v[i], "sha256_checksum", w).value_or("");
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace runpool::github
