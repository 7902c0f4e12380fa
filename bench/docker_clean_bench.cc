// What cleaning the Docker engine adds to a release (job_privileges = docker), on a private
// dockerd of this machine (tests/support/docker_daemon.h): the state kept at an assignment's start,
// the cleaning after a job that did not touch the engine, and after one that left running
// containers, images (one retagged over ubuntu:latest), volumes and networks. Needs root and
// Debian's docker.io.
//   docker_clean_bench [--containers N] [--images N] [--rounds N]
#include <unistd.h>

#include <chrono>

#include "agent/docker_engine.h"
#include "bench/bench_support.h"
#include "tests/support/docker_daemon.h"

namespace runpool::bench {
namespace {

int run(const Options& o) {
  if (geteuid() != 0) throw std::runtime_error("needs root (dockerd)");
  const int containers = o.get_int("containers", 5);
  const int images = o.get_int("images", 5);
  const int rounds = o.get_int("rounds", 5);
  print_header("docker_clean", "the Docker engine's cleaning between assignments");

  runpool::testing::DockerDaemon d;
  d.import_image("ubuntu:latest", "ubuntu");
  d.must({"tag", "ubuntu:latest", "ubuntu:22.04"});
  d.import_image("node:20", "node");
  agent::DockerEngineApi api(d.socket(), std::chrono::minutes(2));

  std::vector<double> baseline, untouched, used;
  int removed = 0;
  for (int r = 0; r < rounds; ++r) {
    auto t = std::chrono::steady_clock::now();
    const agent::EngineState start = api.state();
    baseline.push_back(seconds_since(t));

    t = std::chrono::steady_clock::now();
    auto rep = agent::clean_docker_engine(api, start, nullptr);
    untouched.push_back(seconds_since(t));
    if (!rep.problems.empty()) throw std::runtime_error(rep.problems.front());

    // A job that used the engine.
    for (int i = 0; i < images; ++i) d.import_image("job/img:" + std::to_string(i), "job " + std::to_string(r * 100 + i));
    d.must({"tag", "job/img:0", "ubuntu:latest"});
    for (int i = 0; i < containers; ++i) {
      d.must({"run", "-d", "--network", "none", "--restart", "always", "job/img:1", "/bin/busybox", "sleep", "100000"});
    }
    d.must({"volume", "create", "job-vol"});
    d.must({"network", "create", "--internal", "job-net"});
    t = std::chrono::steady_clock::now();
    rep = agent::clean_docker_engine(api, start, nullptr);
    used.push_back(seconds_since(t));
    if (!rep.problems.empty()) throw std::runtime_error(rep.problems.front());
    removed = rep.removed;
  }
  print_series("engine state kept at an assignment's start", baseline, "s");
  print_series("cleaning after a job that did not use the engine", untouched, "s");
  print_series(fmt::format("cleaning after a job that left {} running containers, {} images (one tagged over "
                           "ubuntu:latest), a volume and a network: {} removed",
                           containers, images, removed),
               used, "s");
  print_summary("docker_clean", fmt::format("start {:.3f} s; clean untouched {:.3f} s, used {:.2f} s p50",
                                            percentile(baseline, 50), percentile(untouched, 50), percentile(used, 50)));
  return 0;
}

}  // namespace
}  // namespace runpool::bench

int main(int argc, char** argv) { return runpool::bench::bench_main(argc, argv, "docker_clean_bench", runpool::bench::run); }
