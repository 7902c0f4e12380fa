#include "common/aws/credentials_providers.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/aws/shared_config.h"
#include "common/config.h"
#include "common/json.h"
#include "common/log.h"
#include "common/retry.h"
#include "common/text.h"

extern char** environ;

namespace runpool::aws {
namespace {

// RFC 3339 / ISO 8601 with any UTC offset ("…Z", "…+00:00", "…-05:00"), as credential tools write it.
bool parse_time(const std::string& text, WallTime* out) {
  if (parse_iso8601(text, out)) return true;
  if (text.size() < 6) return false;
  const std::string offset = text.substr(text.size() - 6);
  if ((offset[0] != '+' && offset[0] != '-') || offset[3] != ':' || !std::isdigit(offset[1]) ||
      !std::isdigit(offset[2]) || !std::isdigit(offset[4]) || !std::isdigit(offset[5])) {
    return false;
  }
  if (!parse_iso8601(text.substr(0, text.size() - 6) + "Z", out)) return false;
  const auto minutes = std::chrono::minutes(std::stoi(offset.substr(1, 2)) * 60 + std::stoi(offset.substr(4, 2)));
  *out += offset[0] == '+' ? -minutes : minutes;
  return true;
}

struct UrlParts {
  std::string scheme, host;  // lower-cased; an IPv6 host keeps its brackets
};

std::optional<UrlParts> parse_url(const std::string& url) {
  auto sep = url.find("://");
  if (sep == std::string::npos || sep == 0) return std::nullopt;
  UrlParts u;
  u.scheme = url.substr(0, sep);
  std::string authority = url.substr(sep + 3, url.find_first_of("/?#", sep + 3) - (sep + 3));
  if (auto at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
  if (!authority.empty() && authority[0] == '[') {
    auto close = authority.find(']');
    if (close == std::string::npos) return std::nullopt;
    u.host = authority.substr(0, close + 1);
  } else {
    u.host = authority.substr(0, authority.find(':'));
  }
  for (auto* s : {&u.scheme, &u.host}) *s = text::lower(*s);
  if (u.host.empty()) return std::nullopt;
  return u;
}

bool is_loopback_ipv4(const std::string& host) {
  std::vector<std::string> parts;
  std::stringstream ss(host);
  for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
  if (parts.size() != 4 || host.back() == '.' || parts[0] != "127") return false;
  return std::all_of(parts.begin(), parts.end(), [](const std::string& p) {
    return !p.empty() && p.size() <= 3 && std::all_of(p.begin(), p.end(), [](unsigned char c) { return std::isdigit(c); }) &&
           std::stoi(p) <= 255;
  });
}

std::string host_of(const std::string& url) {
  auto u = parse_url(url);
  return u ? u->host : "?";
}

}  // namespace

// --- Web identity ------------------------------------------------------------------------------

Secret read_token_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CredentialsError(what + " " + path + " cannot be read: " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string token(text::trim(ss.str()));
  if (token.empty()) throw CredentialsError(what + " " + path + " is empty");
  return Secret(std::move(token));
}

WebIdentityCredentialsProvider::WebIdentityCredentialsProvider(StsClient& sts, WebIdentitySettings settings,
                                                               Clock& clock, Duration refresh_before)
    : RefreshingCredentialsProvider(clock, refresh_before), sts_(sts), settings_(std::move(settings)) {}

AwsCredentials WebIdentityCredentialsProvider::fetch() {
  Secret token = read_token_file(settings_.token_file, "the web identity token file");
  AssumeRoleRequest r{settings_.role_arn, settings_.session_name, "", settings_.duration_seconds};
  return sts_.assume_role_with_web_identity(r, token);
}

// --- AssumeRole --------------------------------------------------------------------------------

AssumeRoleCredentialsProvider::AssumeRoleCredentialsProvider(StsClient& sts,
                                                             std::unique_ptr<CredentialsProvider> source,
                                                             AssumeRoleRequest request, Clock& clock,
                                                             Duration refresh_before)
    : RefreshingCredentialsProvider(clock, refresh_before),
      sts_(sts),
      source_(std::move(source)),
      request_(std::move(request)) {}

AwsCredentials AssumeRoleCredentialsProvider::fetch() { return sts_.assume_role(request_, *source_); }

// --- Container endpoint ------------------------------------------------------------------------

bool container_url_allowed(const std::string& url) {
  auto u = parse_url(url);
  if (!u) return false;
  if (u->scheme == "https") return true;
  if (u->scheme != "http") return false;
  static const char* const kHosts[] = {"localhost", "169.254.170.2", "169.254.170.23", "[fd00:ec2::23]", "[::1]",
                                       "[0000:0000:0000:0000:0000:0000:0000:0001]"};
  return std::find(std::begin(kHosts), std::end(kHosts), u->host) != std::end(kHosts) || is_loopback_ipv4(u->host);
}

std::optional<ContainerEndpoint> container_endpoint_from_env(const GetEnv& getenv) {
  auto var = [&](const char* name) -> std::string {
    const char* v = getenv(name);
    return v ? v : "";
  };
  ContainerEndpoint e;
  const std::string relative = var("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
  const std::string full = var("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  if (!relative.empty()) {
    e.url = kEcsCredentialsHost + relative;
  } else if (!full.empty()) {
    if (!container_url_allowed(full)) {
      throw CredentialsError("AWS_CONTAINER_CREDENTIALS_FULL_URI must be https, or http to a loopback address "
                             "(127.0.0.0/8, ::1, localhost) or the ECS or EKS credential host (169.254.170.2, "
                             "169.254.170.23, fd00:ec2::23)");
    }
    e.url = full;
  } else {
    return std::nullopt;
  }
  e.token_file = var("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
  e.token = Secret(var("AWS_CONTAINER_AUTHORIZATION_TOKEN"));
  return e;
}

AwsCredentials parse_container_credentials(const std::string& body) {
  const std::string what = "the container credentials";
  std::optional<Json::Value> doc = try_parse_json(body);  // not parse_json: its errors quote the text
  if (!doc || !doc->isObject()) {
    throw CredentialsError(what + " are not a JSON object (" + std::to_string(body.size()) + " bytes)");
  }
  try {
    AwsCredentials c;
    c.access_key_id = require_string(*doc, "AccessKeyId", what);
    c.secret_access_key = Secret(require_string(*doc, "SecretAccessKey", what));
    c.session_token = Secret(require_string(*doc, "Token", what));
    WallTime expiration;
    if (!parse_time(require_string(*doc, "Expiration", what), &expiration)) {
      throw CredentialsError(what + ": Expiration is not an RFC 3339 time");
    }
    c.expiration = expiration;
    if (c.access_key_id.empty() || c.secret_access_key.empty()) throw CredentialsError(what + ": an empty key");
    return c;
  } catch (const JsonError& e) {
    throw CredentialsError(e.what());
  }
}

ContainerCredentialsProvider::ContainerCredentialsProvider(HttpClient& http, ContainerEndpoint endpoint, Clock& clock,
                                                           Duration refresh_before)
    : RefreshingCredentialsProvider(clock, refresh_before), http_(http), endpoint_(std::move(endpoint)), clock_(clock) {}

AwsCredentials ContainerCredentialsProvider::fetch() {
  const std::string where = "the container credentials endpoint (" + host_of(endpoint_.url) + ")";
  HttpRequest req;
  req.url = endpoint_.url;
  req.timeout = std::chrono::seconds(2);
  req.connect_timeout = std::chrono::seconds(2);
  Secret token = !endpoint_.token_file.empty()
                     ? read_token_file(endpoint_.token_file, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")
                     : endpoint_.token;
  if (token.reveal().find_first_of(std::string("\r\n\0", 3)) != std::string::npos) {
    throw CredentialsError("the container authorization token holds a line break");
  }
  if (!token.empty()) req.secret_headers.emplace_back("Authorization", token);
  std::optional<AwsCredentials> out;
  RetryPolicy policy{3, Duration{100}, Duration{1000}, Duration{std::chrono::seconds(5)}};
  with_retries(policy, clock_, [&](int, bool last) -> std::optional<RetryVerdict> {
    HttpResponse resp;
    try {
      resp = http_.send(req);
    } catch (const HttpTransportError& e) {
      if (last) throw CredentialsError(where + " did not answer: " + e.what());
      return RetryVerdict{true, std::nullopt, "connection error"};
    }
    if (resp.status == 200) {
      out = parse_container_credentials(resp.body);
      return std::nullopt;
    }
    if ((resp.status >= 500 || resp.status == 429) && !last) {
      return RetryVerdict{true, std::nullopt, "HTTP " + std::to_string(resp.status)};
    }
    std::string detail;
    if (auto doc = try_parse_json(resp.body); doc && doc->isObject()) {
      for (const char* key : {"Code", "Message"}) {
        if ((*doc)[key].isString()) detail += (detail.empty() ? ": " : " ") + printable((*doc)[key].asString(), 200);
      }
    }
    throw CredentialsError(where + " answered HTTP " + std::to_string(resp.status) + detail);
  });
  return *out;
}

// --- credential_process ------------------------------------------------------------------------

AwsCredentials parse_credential_process_output(const std::string& stdout_text) {
  const std::string what = "credential_process output";
  std::optional<Json::Value> doc = try_parse_json(stdout_text);
  if (!doc || !doc->isObject()) {
    throw CredentialsError(what + " is not a JSON object (" + std::to_string(stdout_text.size()) + " bytes)");
  }
  const Json::Value& version = (*doc)["Version"];
  if (!version.isIntegral() || version.asInt64() != 1) throw CredentialsError(what + ": Version must be 1");
  try {
    AwsCredentials c;
    c.access_key_id = require_string(*doc, "AccessKeyId", what);
    c.secret_access_key = Secret(require_string(*doc, "SecretAccessKey", what));
    if (c.access_key_id.empty() || c.secret_access_key.empty()) {
      throw CredentialsError(what + ": AccessKeyId and SecretAccessKey must not be empty");
    }
    if (auto token = optional_string(*doc, "SessionToken", what)) c.session_token = Secret(*token);
    if (auto expiration = optional_string(*doc, "Expiration", what)) {
      WallTime t;
      if (!parse_time(*expiration, &t)) throw CredentialsError(what + ": Expiration is not an ISO 8601 time");
      c.expiration = t;
    }
    return c;
  } catch (const JsonError& e) {
    throw CredentialsError(e.what());
  }
}

ProcessCredentialsProvider::ProcessCredentialsProvider(std::string command, std::string origin, Clock& clock,
                                                       Duration refresh_before, Duration timeout)
    : RefreshingCredentialsProvider(clock, refresh_before),
      command_(std::move(command)),
      origin_(std::move(origin)),
      timeout_(timeout) {}

AwsCredentials ProcessCredentialsProvider::fetch() {
  const std::string what = origin_ + ": credential_process";
  auto words = shell_split(command_);
  if (!words || words->empty()) throw CredentialsError(what + " is not a command line (an unclosed quote?)");
  std::vector<char*> argv;
  for (auto& w : *words) argv.push_back(w.data());
  argv.push_back(nullptr);

  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) throw CredentialsError(what + ": pipe: " + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // The command starts with no signal blocked and SIGPIPE at its default, whatever this process did.
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    throw CredentialsError(what + ": cannot run " + printable((*words)[0], 200) + ": " + std::strerror(rc));
  }

  constexpr size_t kMaxOutput = 1 << 20;
  std::string output;
  std::string failure;
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      failure = "ran longer than " + format_duration(timeout_) + " and was killed";
      break;
    }
    pollfd pfd{out[0], POLLIN, 0};
    int ready = poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char buf[8192];
    ssize_t n = read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.append(buf, static_cast<size_t>(n));
    if (output.size() > kMaxOutput) {
      failure = "wrote more than 1 MiB and was killed";
      break;
    }
  }
  close(out[0]);
  if (!failure.empty()) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!failure.empty()) throw CredentialsError(what + " " + failure);
  if (WIFSIGNALED(status)) {
    throw CredentialsError(what + " was killed by signal " + std::to_string(WTERMSIG(status)));
  }
  if (WEXITSTATUS(status) != 0) {
    throw CredentialsError(what + " exited with status " + std::to_string(WEXITSTATUS(status)) +
                           " (what it wrote to stderr is above)");
  }
  try {
    return parse_credential_process_output(output);
  } catch (const CredentialsError& e) {
    throw CredentialsError(origin_ + ": " + e.what());
  }
}

}  // namespace runpool::aws
