// A private Docker engine for a test: Debian's dockerd (scripts/setup.sh installs docker.io) with
// its own data root, exec root and socket under a temporary directory, no bridge and no iptables
// rules, so nothing it runs has a network and nothing of the machine's own engine is touched.
// Images come from `docker import` of a directory (nothing can be pulled).
#pragma once

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "agent/process.h"

namespace runpool::testing {

class DockerDaemon {
 public:
  // `socket_group`: who besides root may use the engine (the socket's group, as Debian's docker
  // group for a system engine).
  explicit DockerDaemon(const std::string& socket_group = "root") {
    namespace fs = std::filesystem;
    char tmpl[] = "/tmp/rpdocker-XXXXXX";  // short: a Unix socket's path has 107 bytes at most
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    chmod(dir_.c_str(), 0755);  // the socket's group must reach it; dockerd keeps its roots to itself
    const std::string cmd = "exec dockerd --data-root " + dir_ + "/data --exec-root " + dir_ + "/exec --pidfile " +
                            dir_ + "/dockerd.pid -H unix://" + socket() +
                            " --bridge=none --iptables=false --ip-masq=false --group " + socket_group + " > " + dir_ + "/dockerd.log 2>&1";
    agent::SpawnOptions o;
    o.argv = {"/bin/sh", "-c", cmd};
    o.env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
    o.capture_output = false;
    pid_ = agent::spawn(o).pid;
    // Up when the API answers; bounded (a first start on a fresh machine takes a few seconds).
    for (int i = 0; i < 300; ++i) {
      if (cli({"version", "--format", "{{.Server.Version}}"}, 5).exit_code == 0) return;
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    const std::string log = read(dir_ + "/dockerd.log");
    stop();
    throw std::runtime_error("dockerd did not start: " + log.substr(log.size() > 2000 ? log.size() - 2000 : 0));
  }
  ~DockerDaemon() { stop(); }
  DockerDaemon(const DockerDaemon&) = delete;
  DockerDaemon& operator=(const DockerDaemon&) = delete;

  std::string socket() const { return dir_ + "/docker.sock"; }
  const std::string& dir() const { return dir_; }

  // The docker CLI against this engine (an independent client of the Engine API).
  agent::CommandOutcome cli(const std::vector<std::string>& args, int timeout_s = 60) const {
    agent::SpawnOptions o;
    o.argv = {"/usr/bin/docker"};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "DOCKER_HOST=unix://" + socket(), "DOCKER_BUILDKIT=0",
             "HOME=" + dir_, "DOCKER_CONFIG=" + dir_ + "/cli"};
    return agent::run_command(o, std::chrono::seconds(timeout_s), nullptr, 65536);
  }
  // Its output, trimmed; throws when the command fails.
  std::string must(const std::vector<std::string>& args) const {
    auto r = cli(args);
    std::string all;
    for (const auto& a : args) all += " " + a;
    if (r.exit_code != 0) throw std::runtime_error("docker" + all + " failed: " + r.output);
    while (!r.output.empty() && (r.output.back() == '\n' || r.output.back() == ' ')) r.output.pop_back();
    return r.output;
  }
  // Imports an image whose whole file system is a static busybox and a file `marker` with `text`
  // (so each call's image has its own id); returns the image's id.
  std::string import_image(const std::string& ref, const std::string& text) const {
    namespace fs = std::filesystem;
    const fs::path root = fs::path(dir_) / ("rootfs-" + std::to_string(++imports_));
    fs::create_directories(root / "bin");
    fs::copy_file("/bin/busybox", root / "bin" / "busybox", fs::copy_options::overwrite_existing);
    std::ofstream(root / "marker") << text << "\n";
    agent::SpawnOptions o;
    o.argv = {"/bin/sh", "-c", "tar -C " + root.string() + " -c . | /usr/bin/docker import - " + ref};
    o.env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "DOCKER_HOST=unix://" + socket(), "HOME=" + dir_,
             "DOCKER_CONFIG=" + dir_ + "/cli"};
    auto r = agent::run_command(o, std::chrono::seconds(60), nullptr);
    if (r.exit_code != 0) throw std::runtime_error("docker import " + ref + " failed: " + r.output);
    return must({"image", "inspect", "--format", "{{.Id}}", ref});
  }

 private:
  static std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  void stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      bool gone = false;
      for (int i = 0; i < 300 && !gone; ++i) {  // dockerd stops its containers first: up to 30 s
        gone = waitpid(pid_, &status, WNOHANG) == pid_;
        if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (!gone) {
        kill(-pid_, SIGKILL);
        waitpid(pid_, &status, 0);
      }
      pid_ = -1;
    }
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      dir_.clear();
    }
  }

  std::string dir_;
  pid_t pid_ = -1;
  mutable int imports_ = 0;
};

}  // namespace runpool::testing
