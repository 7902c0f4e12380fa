#include "controller/config_from_stack.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "common/aws/aws_session.h"
#include "common/aws/credentials.h"
#include "common/aws/imds.h"
#include "common/clock.h"
#include "common/http.h"
#include "common/config.h"
#include "controller/context.h"
#include "controller/cloudformation_stack.h"
#include "controller/stack_config.h"

namespace runpool::controller {

namespace {

void write_config_all(int fd, const std::string& text, const std::string& path) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

}  // namespace

void write_config_file(const std::string& path, const std::string& text, bool force) {
  // O_EXCL: a file made between a check and the write is never replaced either.
  const std::string target = force ? path + ".from-stack.tmp" : path;
  if (force) ::unlink(target.c_str());
  int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    if (errno == EEXIST && !force) {
      throw std::runtime_error(path + " exists: runpoolctl config from-stack replaces it only with --force");
    }
    throw std::runtime_error("cannot create " + target + ": " + std::strerror(errno));
  }
  try {
    write_config_all(fd, text, target);
    if (::fsync(fd) != 0) throw std::runtime_error("cannot write " + target + ": " + std::strerror(errno));
  } catch (...) {
    ::close(fd);
    if (force) ::unlink(target.c_str());
    throw;
  }
  ::close(fd);
  if (force && std::rename(target.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(target.c_str());
    throw std::runtime_error("cannot replace " + path + ": " + std::strerror(e));
  }
}

int run_config_from_stack(const Settings& settings, const std::string& stack, const std::string& output, bool force,
                          std::ostream& out, const aws::GetEnv& getenv) {
  if (settings.region.empty()) {
    throw ConfigError("region is not set: the stack's region (AWS_REGION, RUNPOOL_REGION or --set region=…)");
  }
  SystemClock local;
  CurlHttpClient http_imds;
  aws::ImdsClient imds(http_imds, local);
  aws::CredentialChainOptions chain;
  chain.region = settings.region;
  chain.imds = &imds;
  auto credentials = aws::credential_chain(chain, local, getenv);
  aws::SessionSettings ss;
  ss.region = settings.region;
  ss.retry.max_attempts = settings.aws_max_attempts;
  ss.timeout = settings.aws_timeout;
  aws::AwsSession session(*credentials, local, ss);
  aws::AwsSettings where{settings.region, {}};
  StackOutputs s = describe_stack(
      session.caller("cloudformation", aws::resolve_endpoint(where, "cloudformation", settings.region, getenv)), stack);
  // A stack without a Region output (an older template's) is in the region it was read from.
  s.outputs.emplace("Region", settings.region);
  std::string text = stack_config_text(stack, s.status, s.outputs);
  write_config_file(output, text, force);
  out << "# wrote " << output << "\n" << text;
  return kExitOk;
}

}  // namespace runpool::controller
