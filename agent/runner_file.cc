#include "agent/runner_file.h"

#include <cctype>
#include <strings.h>

#include "common/json.h"

namespace runpool::agent {
namespace {

// The member whose name matches `key` case-insensitively (agentId, AgentId, agentid…).
const Json::Value* member(const Json::Value& obj, const char* key) {
  for (const auto& name : obj.getMemberNames()) {
    if (strcasecmp(name.c_str(), key) == 0) return &obj[name];
  }
  return nullptr;
}

}  // namespace

RunnerIdentity parse_runner_file(const std::string& raw) {
  std::string text = raw;
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
  auto doc = try_parse_json(text);
  if (!doc) throw RunnerFileError(".runner is not valid JSON");
  if (!doc->isObject()) throw RunnerFileError(".runner is not a JSON object");
  RunnerIdentity id;
  const Json::Value* agent_id = member(*doc, "agentId");
  if (!agent_id) throw RunnerFileError(".runner has no agentId");
  if (agent_id->isIntegral()) {
    id.id = agent_id->asInt64();
  } else if (agent_id->isString()) {
    // Some writers quote numbers; accept digits only.
    const std::string s = agent_id->asString();
    if (s.empty() || s.size() > 18) throw RunnerFileError(".runner agentId is not a number");
    for (char c : s) {
      if (!std::isdigit(static_cast<unsigned char>(c))) throw RunnerFileError(".runner agentId is not a number");
    }
    id.id = std::stoll(s);
  } else {
    throw RunnerFileError(".runner agentId is not a number");
  }
  if (id.id <= 0) throw RunnerFileError(".runner agentId is not positive");
  const Json::Value* agent_name = member(*doc, "agentName");
  if (!agent_name) throw RunnerFileError(".runner has no agentName");
  if (!agent_name->isString() || agent_name->asString().empty()) {
    throw RunnerFileError(".runner agentName is not a non-empty string");
  }
  id.name = agent_name->asString();
  if (const Json::Value* url = member(*doc, "serverUrl"); url && url->isString()) id.server_url = url->asString();
  // Written only when true (the runner omits false settings); JIT configurations carry it.
  if (const Json::Value* e = member(*doc, "ephemeral"); e && e->isBool()) id.ephemeral = e->asBool();
  if (const Json::Value* d = member(*doc, "disableUpdate"); d && d->isBool()) id.disable_update = d->asBool();
  return id;
}

}  // namespace runpool::agent
