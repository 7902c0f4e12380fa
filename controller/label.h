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
//   inside GitHub Actions: "<pool>-<GITHUB_RUN_ID>-<GITHUB_RUN_ATTEMPT>-<GITHUB_JOB>-<check run id>"
//   — unique per job execution: the job's check run id (`job.check_run_id`, which the action
//   passes) tells apart the calls of one reusable workflow and the legs of a matrix, which share
//   GITHUB_JOB, and every re-run of the job; a provision step retried within the same job keeps it,
//   so it adopts what its first try left. Without a check run id the label ends at GITHUB_JOB
//   (two provisions with the same GITHUB_JOB in one attempt then need --label);
//   elsewhere: "<pool>-<16 random hex digits>".
// Characters outside the label alphabet become '-'; a label that would pass 100 characters keeps
// its first 91 and ends in '-' plus 8 hex digits of a hash of the whole.
std::string derive_label(const std::string& pool, const std::function<const char*(const char*)>& getenv,
                         const std::function<std::string()>& random_hex16, const std::string& check_run_id = "");

// Empty when `id` can be a check run id (1 to 20 digits), else why not.
std::string check_run_id_problem(const std::string& id);

// 16 hex digits from the OS's random source.
std::string random_hex16();

}  // namespace runpool::controller
