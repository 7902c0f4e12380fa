#include "common/aws/aws_caller.h"

#include "common/json.h"

namespace runpool::aws {

AwsCaller::AwsCaller(HttpClient& http, CredentialsProvider& credentials, Clock& clock, ServiceSettings settings)
    : http_(http), credentials_(credentials), clock_(clock), settings_(std::move(settings)) {}

HttpResponse AwsCaller::call(const std::string& operation, HttpRequest request, const ErrorParser& parse_error,
                             std::optional<Duration> timeout) {
  if (request.url.empty()) request.url = settings_.endpoint + "/";
  request.timeout = timeout.value_or(settings_.timeout);
  HttpResponse result;
  with_retries(settings_.retry, clock_, [&](int, bool last) -> std::optional<RetryVerdict> {
    if (settings_.sign) {
      AwsCredentials creds = credentials_.get();
      request.sigv4 = SigV4Signing{settings_.region, settings_.service, creds.access_key_id,
                                   creds.secret_access_key, creds.session_token};
    }
    ++requests_sent_;
    HttpResponse resp;
    WallTime sent = clock_.now();
    try {
      resp = http_.send(request);
      if (observer_) observer_(resp, sent, clock_.now());
    } catch (const HttpTransportError& e) {
      if (last) {
        throw AwsError(settings_.service, operation, 0, e.timed_out() ? "RequestTimeout" : "ConnectionError",
                       e.what());
      }
      return RetryVerdict{true, std::nullopt, e.timed_out() ? "timeout" : "connection error"};
    }
    if (resp.status >= 200 && resp.status < 300) {
      result = std::move(resp);
      return std::nullopt;
    }
    ErrorInfo err = parse_error(resp);
    RetryVerdict verdict = classify_aws(resp.status, err.code, resp.header("retry-after"));
    if (!verdict.retry || last) {
      throw AwsError(settings_.service, operation, resp.status,
                     err.code.empty() ? "HTTP" + std::to_string(resp.status) : err.code, err.message);
    }
    return verdict;
  });
  return result;
}

ErrorInfo parse_json_error(const HttpResponse& response) {
  ErrorInfo info;
  auto doc = try_parse_json(response.body);
  if (doc && doc->isObject()) {
    if ((*doc)["__type"].isString()) info.code = (*doc)["__type"].asString();
    if ((*doc)["message"].isString()) info.message = (*doc)["message"].asString();
    else if ((*doc)["Message"].isString()) info.message = (*doc)["Message"].asString();
  }
  if (info.code.empty()) info.code = response.header("x-amzn-errortype");
  // "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException" or "Code:http://…"
  if (auto hash = info.code.rfind('#'); hash != std::string::npos) info.code = info.code.substr(hash + 1);
  if (auto colon = info.code.find(':'); colon != std::string::npos) info.code = info.code.substr(0, colon);
  if (info.message.empty() && !doc) info.message = response.body.substr(0, 200);
  return info;
}

Json::Value json_call(AwsCaller& caller, const std::string& target_prefix, const std::string& operation,
                      const Json::Value& body) {
  HttpRequest req;
  req.method = "POST";
  req.headers = {{"Content-Type", "application/x-amz-json-1.0"}, {"X-Amz-Target", target_prefix + "." + operation}};
  req.body = write_json(body);
  HttpResponse resp = caller.call(operation, std::move(req), parse_json_error);
  if (resp.body.empty()) return Json::Value(Json::objectValue);
  try {
    Json::Value doc = parse_json(resp.body, caller.settings().service + " " + operation + " response");
    if (!doc.isObject()) {
      throw JsonError(caller.settings().service + " " + operation + " response: expected a JSON object");
    }
    return doc;
  } catch (const JsonError& e) {
    throw AwsError(caller.settings().service, operation, resp.status, "MalformedResponse", e.what());
  }
}

}  // namespace runpool::aws
