#!/usr/bin/env bash
# The composite action's one step (action.yml): turns the action's inputs, passed in the
# environment (never interpolated into a script, so no input can inject shell), into runpoolctl's
# argv, and runs it. runpoolctl itself writes the step outputs (label, instance-ids, warm,
# launched) to $GITHUB_OUTPUT and the summary to $GITHUB_STEP_SUMMARY.
set -euo pipefail

# The workflow's GitHub (github.api_url, github.server_url) reaches runpoolctl as GITHUB_API_URL and
# GITHUB_SERVER_URL, which it uses only when its configuration names neither URL. Never as
# RUNPOOL_GITHUB_* settings: those would beat the configuration file.
if [ -n "${JOB_GITHUB_API_URL:-}" ]; then export GITHUB_API_URL=$JOB_GITHUB_API_URL; fi
if [ -n "${JOB_GITHUB_SERVER_URL:-}" ]; then export GITHUB_SERVER_URL=$JOB_GITHUB_SERVER_URL; fi
unset JOB_GITHUB_API_URL JOB_GITHUB_SERVER_URL

# GitHub runs a pull request from a fork, or one Dependabot opened, with a read-only token, no
# secrets and no OIDC token: runpoolctl could reach neither AWS nor GitHub as the controller.
if [ "${JOB_UNTRUSTED_PULL_REQUEST:-}" = true ]; then
  echo "::error::runpool: this run is for a pull request from a fork or from Dependabot, which GitHub runs" \
    "without secrets or an OIDC token, so runpoolctl cannot act for it. Give such runs GitHub-hosted" \
    "runners (docs/workflows.md, \"Pull requests from forks and Dependabot\"); never hand the pool to" \
    "their code through pull_request_target." >&2
  exit 2
fi
unset JOB_UNTRUSTED_PULL_REQUEST

# runpoolctl: the runpoolctl input when given (an explicit binary wins, e.g. `runpoolctl` for the one
# on PATH), else a release installed by install.sh into the runner's tool cache, its SHA-256 checked
# (by default the release this action belongs to, pinned in release-pin) and put on PATH for this
# step and the job's later steps.
if [ -n "${INPUT_RUNPOOLCTL:-}" ]; then
  bin=$INPUT_RUNPOOLCTL
else
  dir=$("${BASH_SOURCE[0]%/*}/install.sh")
  export PATH=$dir:$PATH
  [ -z "${GITHUB_PATH:-}" ] || echo "$dir" >>"$GITHUB_PATH"
  bin=$dir/runpoolctl
fi
unset INPUT_RUNPOOLCTL_VERSION INPUT_RUNPOOLCTL_URL INPUT_RUNPOOLCTL_SHA256 JOB_ACTION_REPOSITORY
args=()
[ -z "${INPUT_CONFIG:-}" ] || args+=(--config "$INPUT_CONFIG")

flag() {  # flag NAME VALUE: pass --NAME VALUE when the input was given
  [ -z "$2" ] || args+=("--$1" "$2")
}
only() {  # only COMMAND INPUT VALUE: an input that COMMAND does not take is an error, not ignored
  [ -z "$3" ] || { echo "::error::input '$2' is not used by '$1'" >&2; exit 2; }
}

command=${INPUT_COMMAND:-}
case "$command" in
  provision)
    args+=(provision)
    flag count "${INPUT_COUNT:-}"
    flag min-count "${INPUT_MIN_COUNT:-}"
    flag resource-class "${INPUT_RESOURCE_CLASS:-}"
    flag usage-class "${INPUT_USAGE_CLASS:-}"
    flag allowed-instance-types "${INPUT_ALLOWED_INSTANCE_TYPES:-}"
    flag label "${INPUT_LABEL:-}"
    [ -n "${INPUT_LABEL:-}" ] || flag check-run-id "${JOB_CHECK_RUN_ID:-}"
    flag timeout "${INPUT_TIMEOUT:-}"
    ;;
  release)
    [ -n "${INPUT_LABEL:-}" ] || { echo "::error::release needs the label input" >&2; exit 2; }
    args+=(release)
    flag label "$INPUT_LABEL"
    flag timeout "${INPUT_TIMEOUT:-}"
    for input in count min-count resource-class usage-class allowed-instance-types; do
      var=INPUT_${input//-/_}; var=${var^^}
      only release "$input" "${!var:-}"
    done
    ;;
  scale-up)
    args+=(scale-up)
    flag resource-class "${INPUT_RESOURCE_CLASS:-}"
    flag timeout "${INPUT_TIMEOUT:-}"
    for input in count min-count usage-class allowed-instance-types label; do
      var=INPUT_${input//-/_}; var=${var^^}
      only scale-up "$input" "${!var:-}"
    done
    ;;
  refresh | scale-down | status | init)
    args+=("$command")
    for input in count min-count resource-class usage-class allowed-instance-types label timeout; do
      var=INPUT_${input//-/_}; var=${var^^}
      only "$command" "$input" "${!var:-}"
    done
    ;;
  *)
    echo "::error::command must be provision, release, refresh, scale-down, scale-up, status or init (got '$command')" >&2
    exit 2
    ;;
esac

exec "$bin" "${args[@]}"
