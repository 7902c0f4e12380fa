// Reading the runner API's JSON into runner.h's types. Every function throws JsonError naming
// `what` and the field on a missing field or a wrong type — never a value, as values can be secret.
#pragma once

#include <string>
#include <vector>

#include <json/json.h>

#include "common/github/runner.h"

namespace runpool::github {

Runner parse_runner(const Json::Value& v, const std::string& what);
// {"total_count", "runners": [Runner]} — one page.
std::vector<Runner> parse_runner_page(const Json::Value& v, const std::string& what);
RunnerLabel parse_label(const Json::Value& v, const std::string& what);
// {"total_count", "labels": [Label]}
std::vector<RunnerLabel> parse_label_list(const Json::Value& v, const std::string& what);
// {"token", "expires_at"}
RunnerToken parse_runner_token(const Json::Value& v, const std::string& what);
// {"runner": Runner, "encoded_jit_config"}
JitConfig parse_jit_config(const Json::Value& v, const std::string& what);
// [RunnerDownload]
std::vector<RunnerDownload> parse_downloads(const Json::Value& v, const std::string& what);

}  // namespace runpool::github
