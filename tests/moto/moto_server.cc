#include "tests/moto/moto_server.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace runpool::testing {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

MotoServer::MotoServer(const std::string& program) {
  char tmpl[] = "/tmp/runpool-moto-XXXXXX";
  int log_fd = mkstemp(tmpl);
  if (log_fd < 0) throw std::runtime_error("mkstemp failed");
  log_path_ = tmpl;

  // Port 0: the OS picks a free one, and the server's banner says which.
  const char* argv[] = {program.c_str(), "-H", "127.0.0.1", "-p", "0", nullptr};
  // Its environment is built before fork (the child may not allocate before exec: another thread
  // may hold the allocator's lock). moto answers for any account's keys; nothing it does may reach
  // the real AWS.
  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (key == "PYTHONUNBUFFERED" || key == "AWS_ACCESS_KEY_ID" || key == "AWS_SECRET_ACCESS_KEY" ||
        key == "AWS_SESSION_TOKEN" || key == "AWS_PROFILE") {
      continue;
    }
    env_s.push_back(kv);
  }
  env_s.push_back("PYTHONUNBUFFERED=1");
  env_s.push_back("AWS_ACCESS_KEY_ID=AKIAMOTOTESTKEY00001");
  env_s.push_back("AWS_SECRET_ACCESS_KEY=moto-test-secret");
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) {
    close(log_fd);
    throw std::runtime_error("fork failed");
  }
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    execve(argv[0], const_cast<char* const*>(argv), envp.data());
    _exit(127);
  }
  close(log_fd);

  // Werkzeug's banner: " * Running on http://127.0.0.1:PORT". Bounded by a deadline.
  static const std::regex kBanner(R"(Running on (http://127\.0\.0\.1:[0-9]+))");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::smatch m;
  std::string log;
  while (std::chrono::steady_clock::now() < deadline) {
    log = read_all(log_path_);
    if (std::regex_search(log, m, kBanner)) {
      endpoint_ = m[1];
      return;
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  stop();
  throw std::runtime_error("moto_server (" + program + ") did not start; its output:\n" + log);
}

MotoServer::~MotoServer() { stop(); }

void MotoServer::stop() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status = 0;
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {  // up to 5 s
      gone = waitpid(pid_, &status, WNOHANG) == pid_;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (!gone) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
    pid_ = -1;
  }
  if (!log_path_.empty()) unlink(log_path_.c_str());
  log_path_.clear();
}

}  // namespace runpool::testing
