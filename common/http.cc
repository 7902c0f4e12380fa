#include "common/http.h"

#include <curl/curl.h>

#include "common/ca_bundle.h"
#include "common/text.h"

#include <algorithm>
#include <stdexcept>
#include <cctype>

namespace runpool {
namespace {

size_t on_body(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* response = static_cast<HttpResponse*>(user);
  std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    response->headers.clear();  // a new response (after a 100-continue or redirect) starts over
    return size * n;
  }
  auto colon = line.find(':');
  if (colon == std::string::npos) return size * n;
  std::string name = text::lower(text::trim(std::string_view(line).substr(0, colon)));
  std::string value(text::trim(std::string_view(line).substr(colon + 1)));
  auto [it, inserted] = response->headers.emplace(name, value);
  if (!inserted) it->second += ", " + value;
  return size * n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(user)->load() ? 1 : 0;  // non-zero aborts the transfer
}

struct CurlGlobal {
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

}  // namespace

std::string HttpResponse::header(const std::string& name) const {
  auto it = headers.find(text::lower(name));
  return it == headers.end() ? "" : it->second;
}

CurlHttpClient::CurlHttpClient() {
  static CurlGlobal global;
  curl_ = curl_easy_init();
  if (!curl_) throw std::runtime_error("curl_easy_init failed");
}

CurlHttpClient::~CurlHttpClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

HttpResponse CurlHttpClient::send(const HttpRequest& request) {
  // libcurl sends a header line as given: a CR, LF or NUL in a value (a token from the
  // environment, a value from an answer) would smuggle in headers of its own. Refused before
  // anything is sent; the message names the header, never its value (it may be a secret).
  auto check = [&](const std::string& name, const std::string& value) {
    if ((name + value).find_first_of(std::string("\r\n\0", 3)) != std::string::npos) {
      throw std::invalid_argument(request.method + " " + request.url + ": header " + name +
                                  " holds a line break or NUL; not sent");
    }
  };
  for (const auto& [name, value] : request.headers) check(name, value);
  for (const auto& [name, value] : request.secret_headers) check(name, value.reveal());
  if (request.sigv4) {
    check("X-Amz-Security-Token", request.sigv4->session_token.reveal());
    check("Authorization (access key id)", request.sigv4->access_key_id);
  }
  std::lock_guard<std::mutex> lock(mu_);
  CURL* curl = static_cast<CURL*>(curl_);
  curl_easy_reset(curl);  // keeps live connections; clears the previous request's options

  HttpResponse response;
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  if (!request.unix_socket.empty()) curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, request.unix_socket.c_str());
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(request.connect_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &response);
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  // The system's CA bundle where it differs from libcurl's compiled-in one (common/ca_bundle.h).
  if (const std::string& ca = system_ca_bundle(); !ca.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, ca.c_str());
  if (cancel_) {
    if (cancel_->load()) throw HttpTransportError(request.method + " " + request.url + ": cancelled", false);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(cancel_));
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  }

  if (request.method == "GET") {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  } else if (request.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else {
    if (request.method != "POST") curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  }

  curl_slist* headers = nullptr;
  // An empty Expect stops curl from waiting for 100-continue on larger bodies. Not when signing:
  // curl 7.88's SigV4 would list the (never sent) header as signed, and the signature fails.
  if (!request.sigv4) headers = curl_slist_append(headers, "Expect:");
  for (const auto& [name, value] : request.headers) {
    headers = curl_slist_append(headers, (name + ": " + value).c_str());
  }
  for (const auto& [name, value] : request.secret_headers) {
    headers = curl_slist_append(headers, (name + ": " + value.reveal()).c_str());
  }
  std::string userpwd;
  std::string provider;
  if (request.sigv4) {
    const SigV4Signing& s = *request.sigv4;
    provider = "aws:amz:" + s.region + ":" + s.service;
    curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, provider.c_str());
    userpwd = s.access_key_id + ":" + s.secret_access_key.reveal();
    curl_easy_setopt(curl, CURLOPT_USERPWD, userpwd.c_str());
    if (!s.session_token.empty()) {
      headers = curl_slist_append(headers, ("X-Amz-Security-Token: " + s.session_token.reveal()).c_str());
    }
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);

  CURLcode rc = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  std::fill(userpwd.begin(), userpwd.end(), '\0');
  if (rc != CURLE_OK) {
    throw HttpTransportError(request.method + " " + request.url + ": " + curl_easy_strerror(rc),
                             rc == CURLE_OPERATION_TIMEDOUT);
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

std::string url_encode(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size() * 3);
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace runpool
