#include "controller/label.h"
#include "common/text.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <random>

namespace runpool::controller {
namespace {

bool label_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
}

// The labels every self-hosted runner gets by default, and the OS/arch ones GitHub also matches.
constexpr const char* kReserved[] = {"self-hosted", "linux", "windows", "macos", "x64", "arm", "arm64", "x86"};

// FNV-1a, for a short stable suffix.
std::string hash8(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", h);
  return buf;
}

}  // namespace

std::string label_problem(const std::string& label) {
  if (label.empty()) return "the label is empty";
  if (label.size() > 100) return "the label is longer than 100 characters";
  if (!std::all_of(label.begin(), label.end(), label_char)) {
    return "the label may hold only letters, digits, '.', '_' and '-'";
  }
  if (label[0] == '-' || label[0] == '.') return "the label may not start with '-' or '.'";
  for (const char* r : kReserved) {
    if (text::lower(label) == r) return "'" + label + "' is a default runner label that every runner carries";
  }
  return "";
}

std::string derive_label(const std::string& pool, const std::function<const char*(const char*)>& getenv,
                         const std::function<std::string()>& random_hex16, const std::string& check_run_id) {
  auto env = [&](const char* name) -> std::string {
    const char* v = getenv(name);
    return v ? v : "";
  };
  std::string raw;
  std::string run_id = env("GITHUB_RUN_ID");
  if (!run_id.empty()) {
    std::string attempt = env("GITHUB_RUN_ATTEMPT");
    raw = pool + "-" + run_id + "-" + (attempt.empty() ? "1" : attempt);
    if (std::string job = env("GITHUB_JOB"); !job.empty()) raw += "-" + job;
    if (!check_run_id.empty()) raw += "-" + check_run_id;
  } else {
    raw = pool + "-" + random_hex16();
  }
  std::string label;
  for (char c : raw) label += label_char(c) ? c : '-';
  if (label.size() > 100) label = label.substr(0, 91) + "-" + hash8(raw);
  return label;
}

std::string check_run_id_problem(const std::string& id) {
  if (id.empty() || id.size() > 20 || !std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return "a check run id is 1 to 20 digits (the job's ${{ job.check_run_id }})";
  }
  return "";
}

std::string random_hex16() {
  std::random_device rd;
  std::uniform_int_distribution<uint64_t> dist;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(dist(rd)));
  return buf;
}

}  // namespace runpool::controller
