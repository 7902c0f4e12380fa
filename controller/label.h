// The assignment label: what provision's runners register with (their only label) and what the
// workflow's jobs ask for (`runs-on: ${{ needs.provision.outputs.label }}`). It reaches argv of
// config.sh, a shell, JSON and $GITHUB_OUTPUT, so it is checked strictly.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace runpool::controller {

// Empty when valid, else why not: 1–100 characters of [A-Za-z0-9._-], not starting with '-' or
// '.', and none of the runner's default labels (self-hosted, linux, x64, …), which every runner
// carries and so would match any job.
std::string label_problem(const std::string& label);

// The label a provision uses when none is given:
//   inside GitHub Actions: "<pool>-<GITHUB_RUN_ID>-<GITHUB_RUN_ATTEMPT>-<GITHUB_JOB>" — unique per
//   run, attempt (a re-run never meets its first attempt's runners) and job (two provisioning jobs
//   of one run do not collide; two provisions within one job, or a matrix, need --label);
//   elsewhere: "<pool>-<16 random hex digits>".
// Characters outside the label alphabet become '-'; a label that would pass 100 characters keeps
// its first 91 and ends in '-' plus 8 hex digits of a hash of the whole.
std::string derive_label(const std::string& pool, const std::function<const char*(const char*)>& getenv,
                         const std::function<std::string()>& random_hex16);

// 16 hex digits from the OS's random source.
std::string random_hex16();

}  // namespace runpool::controller
