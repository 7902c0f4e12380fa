#include "common/aws/sqs.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "common/json.h"

namespace runpool::aws {
namespace {

// The slack a long poll's HTTP timeout gets beyond its wait.
constexpr Duration kLongPollSlack = std::chrono::seconds(10);
constexpr int kMaxWaitSeconds = 20;

std::optional<int64_t> parse_int64(const std::string& s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string sqs_response(const std::string& operation) { return "SQS " + operation + " response"; }

std::map<std::string, std::string> string_map(const Json::Value& obj, const std::string& what) {
  if (!obj.isObject()) throw JsonError(what + ": expected a JSON object");
  std::map<std::string, std::string> out;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (!it->isString()) throw JsonError(what + ": value of '" + it.name() + "' is not a string");
    out[it.name()] = it->asString();
  }
  return out;
}

Json::Value attributes_json(const std::map<std::string, MessageAttribute>& attrs) {
  Json::Value out(Json::objectValue);
  for (const auto& [name, a] : attrs) {
    Json::Value v;
    v["DataType"] = a.data_type;
    if (a.data_type.rfind("Binary", 0) == 0)
      v["BinaryValue"] = a.binary_value;
    else
      v["StringValue"] = a.string_value;
    out[name] = v;
  }
  return out;
}

Message parse_message(const Json::Value& m, const std::string& what) {
  Message msg;
  msg.message_id = require_string(m, "MessageId", what);
  msg.receipt_handle = require_string(m, "ReceiptHandle", what);
  msg.body = require_string(m, "Body", what);
  if (m.isMember("Attributes")) msg.attributes = string_map(m["Attributes"], what + " Attributes");
  if (m.isMember("MessageAttributes")) {
    const Json::Value& attrs = m["MessageAttributes"];
    if (!attrs.isObject()) throw JsonError(what + ": MessageAttributes is not an object");
    for (auto it = attrs.begin(); it != attrs.end(); ++it) {
      std::string awhat = what + " MessageAttributes '" + it.name() + "'";
      MessageAttribute a;
      a.data_type = require_string(*it, "DataType", awhat);
      a.string_value = optional_string(*it, "StringValue", awhat).value_or("");
      a.binary_value = optional_string(*it, "BinaryValue", awhat).value_or("");
      msg.message_attributes[it.name()] = std::move(a);
    }
  }
  return msg;
}

std::optional<int64_t> attribute_int(const std::map<std::string, std::string>& attrs, const std::string& name) {
  auto it = attrs.find(name);
  if (it == attrs.end()) return std::nullopt;
  return parse_int64(it->second);
}

}  // namespace

bool is_queue_does_not_exist(const std::string& code) {
  return code == "QueueDoesNotExist" || code == "AWS.SimpleQueueService.NonExistentQueue" || code == "NonExistentQueue";
}

ErrorInfo parse_sqs_error(const HttpResponse& response) {
  ErrorInfo info = parse_json_error(response);
  std::string query = response.header("x-amzn-query-error");  // "Code;Sender"
  if (info.code.empty() && !query.empty()) info.code = query.substr(0, query.find(';'));
  return info;
}

std::optional<int64_t> Message::receive_count() const { return attribute_int(attributes, "ApproximateReceiveCount"); }

std::optional<WallTime> Message::sent_time() const {
  auto ms = attribute_int(attributes, "SentTimestamp");
  if (!ms) return std::nullopt;
  return from_epoch_ms(*ms);
}

std::optional<int64_t> QueueAttributes::get_int(const std::string& name) const {
  auto it = all.find(name);
  if (it == all.end()) return std::nullopt;
  auto v = parse_int64(it->second);
  if (!v) throw JsonError("SQS queue attribute '" + name + "' is not an integer");
  return v;
}

SqsClient::SqsClient(AwsCaller& caller) : caller_(caller) {}

Json::Value SqsClient::call(const std::string& operation, const Json::Value& body, std::optional<Duration> timeout) {
  HttpRequest req;
  req.method = "POST";
  req.headers = {{"Content-Type", "application/x-amz-json-1.0"},
                 {"X-Amz-Target", std::string(kSqsTargetPrefix) + "." + operation}};
  req.body = write_json(body);
  HttpResponse resp;
  try {
    resp = caller_.call(operation, std::move(req), parse_sqs_error, timeout);
  } catch (const AwsError& e) {
    if (is_queue_does_not_exist(e.code())) throw QueueDoesNotExistError(e);
    throw;
  }
  // local-aws-sqs answers an empty ReceiveMessage with an empty 200 body.
  if (resp.body.empty()) return Json::Value(Json::objectValue);
  try {
    Json::Value doc = parse_json(resp.body, sqs_response(operation));
    if (!doc.isObject()) throw JsonError(sqs_response(operation) + ": expected a JSON object");
    return doc;
  } catch (const JsonError& e) {
    throw AwsError(caller_.settings().service, operation, resp.status, "MalformedResponse", e.what());
  }
}

std::string SqsClient::create_queue(const std::string& name, const std::map<std::string, std::string>& attributes) {
  Json::Value body;
  body["QueueName"] = name;
  for (const auto& [k, v] : attributes) body["Attributes"][k] = v;
  Json::Value doc = call("CreateQueue", body);
  return parse_answer(caller_, "CreateQueue", [&] { return require_string(doc, "QueueUrl", sqs_response("CreateQueue")); });
}

std::string SqsClient::get_queue_url(const std::string& name) {
  Json::Value body;
  body["QueueName"] = name;
  Json::Value doc = call("GetQueueUrl", body);
  return parse_answer(caller_, "GetQueueUrl", [&] { return require_string(doc, "QueueUrl", sqs_response("GetQueueUrl")); });
}

void SqsClient::delete_queue(const std::string& queue_url) {
  Json::Value body;
  body["QueueUrl"] = queue_url;
  call("DeleteQueue", body);
}

std::vector<std::string> SqsClient::list_queues(const std::string& prefix, int max_pages) {
  std::vector<std::string> urls;
  std::string token;
  for (int page = 0; page < max_pages; ++page) {
    Json::Value body;
    body["QueueNamePrefix"] = prefix;
    body["MaxResults"] = 1000;  // also what makes SQS paginate at all
    if (!token.empty()) body["NextToken"] = token;
    Json::Value doc = call("ListQueues", body);
    token = parse_answer(caller_, "ListQueues", [&] {
      const std::string what = sqs_response("ListQueues");
      const Json::Value& list = doc["QueueUrls"];
      if (!list.isNull() && !list.isArray()) throw JsonError(what + ": QueueUrls is not a list");
      for (const auto& u : list) {
        if (!u.isString()) throw JsonError(what + ": a queue URL is not a string");
        urls.push_back(u.asString());
      }
      const Json::Value& next = doc["NextToken"];
      if (!next.isNull() && !next.isString()) throw JsonError(what + ": NextToken is not a string");
      return next.isString() ? next.asString() : std::string();
    });
    if (token.empty()) return urls;
  }
  throw AwsError(caller_.settings().service, "ListQueues", 200, "TooManyPages",
                 "more than " + std::to_string(max_pages) + " pages of queues named " + prefix + "*");
}

std::string SqsClient::send_message(const SendMessageRequest& request) {
  if (request.delay_seconds && (*request.delay_seconds < 0 || *request.delay_seconds > 900)) {
    throw std::invalid_argument("SQS SendMessage: DelaySeconds must be within 0..900");
  }
  Json::Value body;
  body["QueueUrl"] = request.queue_url;
  body["MessageBody"] = request.body;
  if (request.delay_seconds) body["DelaySeconds"] = *request.delay_seconds;
  if (!request.attributes.empty()) body["MessageAttributes"] = attributes_json(request.attributes);
  Json::Value doc = call("SendMessage", body);
  return parse_answer(caller_, "SendMessage",
                 [&] { return require_string(doc, "MessageId", sqs_response("SendMessage")); });
}

std::string SqsClient::send_message(const std::string& queue_url, const std::string& body) {
  SendMessageRequest r;
  r.queue_url = queue_url;
  r.body = body;
  return send_message(r);
}

std::vector<Message> SqsClient::receive_messages(const ReceiveRequest& request) {
  if (request.max_messages < 1 || request.max_messages > 10) {
    throw std::invalid_argument("SQS ReceiveMessage: MaxNumberOfMessages must be within 1..10");
  }
  if (request.wait_seconds && (*request.wait_seconds < 0 || *request.wait_seconds > kMaxWaitSeconds)) {
    throw std::invalid_argument("SQS ReceiveMessage: WaitTimeSeconds must be within 0..20");
  }
  Json::Value body;
  body["QueueUrl"] = request.queue_url;
  body["MaxNumberOfMessages"] = request.max_messages;
  if (request.wait_seconds) body["WaitTimeSeconds"] = *request.wait_seconds;
  if (request.visibility_timeout) body["VisibilityTimeout"] = *request.visibility_timeout;
  for (const auto& name : request.system_attributes) {
    body["MessageSystemAttributeNames"].append(name);
    body["AttributeNames"].append(name);  // the older name, which local-aws-sqs reads
  }
  for (const auto& name : request.message_attributes) body["MessageAttributeNames"].append(name);

  // Without an explicit wait the queue's own (at most 20 s) applies: assume the longest.
  Duration wait = std::chrono::seconds(request.wait_seconds.value_or(kMaxWaitSeconds));
  Duration timeout = std::max(caller_.settings().timeout, wait + kLongPollSlack);
  Json::Value doc = call("ReceiveMessage", body, timeout);

  return parse_answer(caller_, "ReceiveMessage", [&] {
    std::vector<Message> out;
    if (!doc.isMember("Messages") || doc["Messages"].isNull()) return out;  // none
    const Json::Value& msgs = doc["Messages"];
    if (!msgs.isArray()) throw JsonError(sqs_response("ReceiveMessage") + ": field 'Messages' is not an array");
    for (Json::ArrayIndex i = 0; i < msgs.size(); ++i) {
      out.push_back(parse_message(msgs[i], sqs_response("ReceiveMessage") + " Messages[" + std::to_string(i) + "]"));
    }
    return out;
  });
}

void SqsClient::delete_message(const std::string& queue_url, const std::string& receipt_handle) {
  Json::Value body;
  body["QueueUrl"] = queue_url;
  body["ReceiptHandle"] = receipt_handle;
  call("DeleteMessage", body);
}

std::vector<std::pair<std::string, std::string>> SqsClient::delete_message_batch(
    const std::string& queue_url, const std::vector<std::string>& receipt_handles) {
  if (receipt_handles.empty()) return {};
  if (receipt_handles.size() > 10) throw std::invalid_argument("SQS DeleteMessageBatch: at most 10 entries");
  Json::Value body;
  body["QueueUrl"] = queue_url;
  Json::Value& entries = body["Entries"];
  entries = Json::Value(Json::arrayValue);
  for (size_t i = 0; i < receipt_handles.size(); ++i) {
    Json::Value e;
    e["Id"] = std::to_string(i);  // entry ids only need to be unique within the request
    e["ReceiptHandle"] = receipt_handles[i];
    entries.append(e);
  }
  Json::Value answer = call("DeleteMessageBatch", body);
  std::vector<std::pair<std::string, std::string>> failed;
  const Json::Value& f = answer["Failed"];
  if (!f.isArray()) return failed;
  for (const Json::Value& e : f) {
    const std::string id = e["Id"].isString() ? e["Id"].asString() : "";
    size_t index = receipt_handles.size();
    if (!id.empty() && id.size() <= 2 && std::all_of(id.begin(), id.end(), ::isdigit)) index = std::stoul(id);
    if (index >= receipt_handles.size()) throw JsonError("SQS DeleteMessageBatch: a failed entry names no entry sent");
    failed.emplace_back(receipt_handles[index], e["Code"].isString() ? e["Code"].asString() : "unknown");
  }
  return failed;
}

void SqsClient::change_message_visibility(const std::string& queue_url, const std::string& receipt_handle,
                                          int visibility_timeout_seconds) {
  if (visibility_timeout_seconds < 0 || visibility_timeout_seconds > 43200) {
    throw std::invalid_argument("SQS ChangeMessageVisibility: VisibilityTimeout must be within 0..43200");
  }
  Json::Value body;
  body["QueueUrl"] = queue_url;
  body["ReceiptHandle"] = receipt_handle;
  body["VisibilityTimeout"] = visibility_timeout_seconds;
  call("ChangeMessageVisibility", body);
}

QueueAttributes SqsClient::get_queue_attributes(const std::string& queue_url, const std::vector<std::string>& names) {
  Json::Value body;
  body["QueueUrl"] = queue_url;
  for (const auto& n : names) body["AttributeNames"].append(n);
  Json::Value doc = call("GetQueueAttributes", body);
  return parse_answer(caller_, "GetQueueAttributes", [&] {
    QueueAttributes qa;
    std::string what = sqs_response("GetQueueAttributes");
    if (doc.isMember("Attributes")) qa.all = string_map(doc["Attributes"], what + " Attributes");
    // Read every numeric attribute now, so a non-number is a MalformedResponse here.
    for (const char* numeric :
         {"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed",
          "VisibilityTimeout", "MessageRetentionPeriod", "ReceiveMessageWaitTimeSeconds", "DelaySeconds",
          "MaximumMessageSize", "CreatedTimestamp", "LastModifiedTimestamp"}) {
      qa.get_int(numeric);
    }
    qa.approximate_number_of_messages = qa.get_int("ApproximateNumberOfMessages");
    qa.approximate_number_of_messages_not_visible = qa.get_int("ApproximateNumberOfMessagesNotVisible");
    qa.approximate_number_of_messages_delayed = qa.get_int("ApproximateNumberOfMessagesDelayed");
    qa.visibility_timeout = qa.get_int("VisibilityTimeout");
    qa.message_retention_period = qa.get_int("MessageRetentionPeriod");
    qa.receive_message_wait_time_seconds = qa.get_int("ReceiveMessageWaitTimeSeconds");
    qa.delay_seconds = qa.get_int("DelaySeconds");
    if (auto it = qa.all.find("QueueArn"); it != qa.all.end()) qa.queue_arn = it->second;
    return qa;
  });
}

}  // namespace runpool::aws
