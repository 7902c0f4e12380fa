#pragma once
// The CA bundle libcurl verifies TLS peers with. The release tarball carries Debian's libcurl,
// whose compiled-in bundle is Debian's /etc/ssl/certs/ca-certificates.crt; Amazon Linux, Fedora and
// RHEL keep theirs at /etc/pki/tls/certs/ca-bundle.crt, SUSE and Alpine elsewhere again. Without
// this, every HTTPS request of a tarball's runpoolctl on Amazon Linux 2023 would fail.

#include <functional>
#include <string>

namespace runpool {

// The file to verify TLS peers with: SSL_CERT_FILE when set (OpenSSL's own variable; a set one
// is used as given, so a wrong one fails loudly), else libcurl's compiled-in bundle when it is
// readable, else the first readable one of the distributions' well-known bundles, else empty
// (libcurl's default stays, and its error names the missing file).
std::string ca_bundle_path(const std::string& ssl_cert_file, const std::string& compiled_default,
                           const std::function<bool(const std::string&)>& readable);

// ca_bundle_path for this process: SSL_CERT_FILE, libcurl's default, the real file system;
// computed once.
const std::string& system_ca_bundle();

}  // namespace runpool
