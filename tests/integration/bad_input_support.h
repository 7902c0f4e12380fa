// Shared by the bad-input suites (tests/integration/bad_input_*_test.cc): the hostile values every
// input gets, the checks that a run failed cleanly (an exit code, never a signal or a sanitizer
// report; a short error without raw control characters) and left nothing behind (no injected
// file, /etc/passwd and the table unchanged).
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/aws/dynamodb.h"
#include "tests/support/runpoolctl_harness.h"

namespace runpool::bad_input {

using controller::testing::CtlResult;

// RUNPOOL_RELIABILITY_FULL=1: every value through every channel; else a rotating subset.
inline bool full_run() {
  const char* f = std::getenv("RUNPOOL_RELIABILITY_FULL");
  return f && *f && std::string(f) != "0";
}

// The file an injected command would create; no test creates it.
inline std::string marker() { return "/tmp/runpool-badinput-injected-" + std::to_string(getpid()); }
inline bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

struct Hostile {
  std::string name;
  std::string value;
  bool fits_a_line = true;  // false: a config file line cannot carry it
};

// argv and environment strings are limited to 128 KiB each by the kernel (MAX_ARG_STRLEN), so
// the huge value is 1 MiB in files and 120 KiB on the command line and in the environment.
inline std::vector<Hostile> hostile_values(bool for_file) {
  const std::string m = marker();
  return {
      {"empty", ""},
      {"subshell", "$(touch " + m + ")"},
      {"backticks", "`touch " + m + "`"},
      {"quote-break", "\"; touch " + m + " #"},
      {"single-quote-break", "'; touch " + m + "; echo '"},
      {"json-break", "\",\"instance_id\":{\"S\":\"i-0\"},\"x\":\""},
      {"newline", "a\nRUNPOOL_AGENT_CONFIG_EOF\ntouch " + m, false},
      {"crlf-header", "a\r\nX-Injected: 1", false},
      {"control", "\x01\x07\x1b[31mred\x7f"},
      {"traversal", "../../etc/passwd"},
      {"huge", std::string(for_file ? (1u << 20) : 120u * 1024u, '9')},
      {"negative", "-1"},
      {"overflow", "99999999999999999999999999"},
      {"invalid-utf8", "\xff\xfe\xc3"},
      {"bidi", "\xe2\x80\xae" "gpj.exe"},
      {"deep-json", std::string(1100, '[')},  // past jsoncpp's nesting limit
  };
}

inline bool has_raw_control(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\n' && c != '\t') || u == 0x7f;
  });
}

inline std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) nl = s.size();
    out.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

// A run that ended by itself: exit 0 (the value was acceptable), 1 (the operation failed) or 2
// (usage); never a signal, a sanitizer report or an uncaught exception. A failure says so in a
// short message without raw control characters, and nothing was injected.
inline void expect_clean(const CtlResult& r, const std::string& what, const std::string& program = "runpoolctl") {
  SCOPED_TRACE(what);
  EXPECT_NE(r.exit_code, -1) << "killed by a signal\n" << r.err.substr(0, 2000);
  EXPECT_TRUE(r.exit_code >= 0 && r.exit_code <= 3) << r.exit_code;
  for (const char* bad : {"AddressSanitizer", "runtime error:", "LeakSanitizer", "terminate called", "Aborted"}) {
    EXPECT_EQ(r.err.find(bad), std::string::npos) << bad << "\n" << r.err.substr(0, 2000);
  }
  EXPECT_FALSE(has_raw_control(r.err)) << "raw control characters on stderr: " << ::testing::PrintToString(r.err.substr(0, 300));
  EXPECT_FALSE(has_raw_control(r.out)) << "raw control characters on stdout";
  EXPECT_LT(r.err.size(), 16384u) << "the input echoed in full?";
  if (r.exit_code != 0 && r.exit_code != -1) {
    // `program` may list alternatives: "runpool-agent|configuration".
    bool named = false;
    for (size_t start = 0; start <= program.size();) {
      size_t bar = program.find('|', start);
      if (bar == std::string::npos) bar = program.size();
      named = named || r.err.find(program.substr(start, bar - start)) != std::string::npos;
      start = bar + 1;
    }
    // A per-item outcome on stdout ("i-…: no record") also says what happened.
    EXPECT_TRUE(named || !r.out.empty()) << "no message naming " << program << ":\n" << r.err.substr(0, 2000);
  }
  EXPECT_FALSE(exists(marker())) << "an injected command ran";
}

// The whole table, item by item, ordered by instance id: compared before and after to show that a
// run changed nothing.
inline std::vector<aws::Item> snapshot(aws::DynamoDbClient& db, const std::string& table) {
  aws::ScanRequest s;
  s.table = table;
  s.consistent_read = true;
  auto items = db.scan_all(s);
  auto key = [](const aws::Item& i) {
    auto it = i.find("instance_id");
    return it == i.end() ? std::string() : write_json(it->second.to_json());
  };
  std::sort(items.begin(), items.end(), [&](const aws::Item& a, const aws::Item& b) { return key(a) < key(b); });
  return items;
}

inline std::string file_text(const std::string& path) { return controller::testing::slurp(path); }

// Runs `program` with `args` and exactly `env`, from `cwd`; stdout and stderr through files in
// `dir`. Killed (and reported as a signal, -1) past `timeout`.
inline CtlResult run_program(const std::string& program, const std::vector<std::string>& args,
                             const std::map<std::string, std::string>& env, const std::string& dir,
                             const std::string& cwd = "", std::chrono::seconds timeout = std::chrono::seconds(90)) {
  std::string out_path = dir + "/prog.out", err_path = dir + "/prog.err";
  std::vector<std::string> argv_s = {program};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<std::string> env_s;
  for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
  // Built before fork: a child that allocates before exec can hang on a lock another thread held.
  std::vector<char*> argv, envp;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {  // async-signal-safe calls only
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(out, 1);
    dup2(err, 2);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  auto until = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) != pid) {
    if (std::chrono::steady_clock::now() > until) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CtlResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = file_text(out_path);
  r.err = file_text(err_path);
  return r;
}

}  // namespace runpool::bad_input
