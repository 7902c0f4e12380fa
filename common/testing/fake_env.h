// An environment for code that reads variables through a getenv-like function (the AWS
// credential chain, endpoint and config resolution): the given variables and nothing else.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "common/aws/endpoints.h"

namespace runpool::testing {

inline aws::GetEnv env_of(std::map<std::string, std::string> vars) {
  auto owned = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [owned](const char* name) -> const char* {
    auto it = owned->find(name);
    return it == owned->end() ? nullptr : it->second.c_str();
  };
}

}  // namespace runpool::testing
