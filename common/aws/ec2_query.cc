#include "common/aws/ec2_query.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace runpool::aws {

Ec2Form::Ec2Form(std::string action) : action_(std::move(action)) {}

Ec2Form& Ec2Form::add(std::string name, std::string value) {
  params_.emplace_back(std::move(name), std::move(value));
  return *this;
}

Ec2Form& Ec2Form::add_nonempty(std::string name, const std::string& value) {
  if (!value.empty()) add(std::move(name), value);
  return *this;
}

Ec2Form& Ec2Form::add_optional(std::string name, const std::optional<int64_t>& value) {
  if (value) add(std::move(name), *value);
  return *this;
}

Ec2Form& Ec2Form::add_list(const std::string& name, const std::vector<std::string>& values) {
  for (size_t i = 0; i < values.size(); ++i) add(form_key(name, i + 1), values[i]);
  return *this;
}

std::string Ec2Form::encode() const {
  std::string out = "Action=" + url_encode(action_) + "&Version=" + url_encode(kEc2ApiVersion);
  for (const auto& [name, value] : params_) out += "&" + url_encode(name) + "=" + url_encode(value);
  return out;
}

ErrorInfo parse_ec2_error(const HttpResponse& response) {
  ErrorInfo info;
  pugi::xml_document doc;
  if (doc.load_buffer(response.body.data(), response.body.size())) {
    pugi::xml_node error = doc.child("Response").child("Errors").child("Error");
    if (!error) error = doc.child("ErrorResponse").child("Error");
    if (!error) {
      error = doc.find_node([](pugi::xml_node n) {
        return std::strcmp(n.name(), "Error") == 0 && n.child("Code");
      });
    }
    info.code = error.child("Code").text().get();
    info.message = error.child("Message").text().get();
  }
  if (info.code.empty() && info.message.empty()) info.message = response.body.substr(0, 200);
  return info;
}

Ec2Response ec2_call(AwsCaller& caller, const Ec2Form& form) {
  const std::string& action = form.action();
  const std::string& service = caller.settings().service;
  HttpRequest req;
  req.method = "POST";
  req.headers = {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
  req.body = form.encode();
  HttpResponse resp = caller.call(action, std::move(req), parse_ec2_error);

  Ec2Response out;
  out.doc = std::make_shared<pugi::xml_document>();
  pugi::xml_parse_result parsed = out.doc->load_buffer(resp.body.data(), resp.body.size());
  if (!parsed) {
    throw AwsError(service, action, resp.status, "MalformedResponse",
                   std::string("response is not XML: ") + parsed.description() + " at offset " +
                       std::to_string(parsed.offset));
  }
  const std::string expected = action + "Response";
  out.root = out.doc->document_element();
  if (expected != out.root.name()) {
    throw AwsError(service, action, resp.status, "MalformedResponse",
                   "expected <" + expected + ">, got <" + std::string(out.root.name()) + ">");
  }
  return out;
}

std::string base64_encode(std::string_view data) {
  std::string out(4 * ((data.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(data.data()), static_cast<int>(data.size()));
  out.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  std::string clean;
  clean.reserve(text.size());
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) clean += c;
  }
  if (clean.size() % 4 != 0) return std::nullopt;
  if (clean.empty()) return std::string();
  size_t padding = 0;
  if (clean.back() == '=') ++padding;
  if (clean.size() >= 2 && clean[clean.size() - 2] == '=') ++padding;
  // '=' is only valid as the final padding.
  if (clean.find('=') < clean.size() - padding) return std::nullopt;
  std::string out(clean.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(clean.data()), static_cast<int>(clean.size()));
  if (n < 0) return std::nullopt;
  out.resize(static_cast<size_t>(n) - padding);  // EVP_DecodeBlock counts the padding as zero bytes
  return out;
}

}  // namespace runpool::aws
