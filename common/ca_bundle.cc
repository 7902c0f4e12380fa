#include "common/ca_bundle.h"

#include <curl/curl.h>
#include <unistd.h>

#include <cstdlib>

namespace runpool {

std::string ca_bundle_path(const std::string& ssl_cert_file, const std::string& compiled_default,
                           const std::function<bool(const std::string&)>& readable) {
  if (!ssl_cert_file.empty()) return ssl_cert_file;
  if (!compiled_default.empty() && readable(compiled_default)) return compiled_default;
  for (const char* path : {
           "/etc/ssl/certs/ca-certificates.crt",                 // Debian, Ubuntu
           "/etc/pki/tls/certs/ca-bundle.crt",                   // Amazon Linux, Fedora, RHEL
           "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  // the same, where it is made
           "/etc/ssl/ca-bundle.pem",                             // SUSE
           "/etc/ssl/cert.pem",                                  // Alpine
       }) {
    if (readable(path)) return path;
  }
  return "";
}

const std::string& system_ca_bundle() {
  static const std::string path = [] {
    const char* env = std::getenv("SSL_CERT_FILE");
    const curl_version_info_data* info = curl_version_info(CURLVERSION_NOW);
    return ca_bundle_path(env ? env : "", info && info->cainfo ? info->cainfo : "",
                          [](const std::string& p) { return ::access(p.c_str(), R_OK) == 0; });
  }();
  return path;
}

}  // namespace runpool
