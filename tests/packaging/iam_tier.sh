#!/bin/bash
# The IAM tier (tests/localcloud/iam/README.md): e2e lifecycle tests run with every AWS request
# the real runpoolctl and runpool-agents send recorded by the local cloud, then each request
# evaluated against runpool's IAM policies (packaging/iam and the CloudFormation template's) by
# @cloud-copilot/iam-simulate, and the forbidden set checked denied.
#
# usage: iam_tier.sh SOURCE_DIR BUILD_DIR NODE [OUT_DIR]
#   OUT_DIR (default: a temporary directory) receives requests.jsonl, report.json and the tests' logs.
set -uo pipefail

src=${1:?usage: iam_tier.sh SOURCE_DIR BUILD_DIR NODE [OUT_DIR]}
bin=${2:?BUILD_DIR}
node=${3:?NODE}
out=${4:-}
if [[ -z $out ]]; then
  out=$(mktemp -d /tmp/runpool-iam-tier-XXXXXX)
fi
mkdir -p "$out"
recording=$out/requests.jsonl
rm -f "$recording"

# The lifecycle the policies must allow: provision cold and warm, release, a failed provision's
# claim returned (lifecycle); refresh retiring and draining expired instances and terminating
# them (deadlines); scale-up, scale-down's drain of idle shared runners and their termination
# (shared pool); an agent terminating its own instance once its deadline passed (the agent's
# integration test: no e2e test makes an agent self-terminate within the tier's time); serve
# holding and taking over a scale set's lease, launching and claiming JIT runners, and the agents
# taking their JIT configuration out of their records (serve); an agent writing the job it had in
# hand at a spot notice, and refresh marking and re-running it (spot re-run).
runs=(
  "tests/e2e/e2e_lifecycle_test:Lifecycle.*"
  "tests/e2e/e2e_deadlines_test:Deadlines.*"
  "tests/e2e/e2e_shared_pool_test:SharedPool.ShrinksToTheQuotaWithoutKillingAJob"
  "tests/e2e/e2e_serve_test:Serve.AStandbyTakesOverFromAKilledControllerAndLosesNothing"
  "tests/agent_resilience_test:AgentResilience.ADeadlinePassedTerminatesTheInstance"
  "tests/e2e/e2e_spot_rerun_test:SpotRerun*"
)

status=0
for run in "${runs[@]}"; do
  exe=$bin/${run%%:*}
  filter=${run#*:}
  if [[ ! -x $exe ]]; then
    echo "iam_tier: $exe is not built" >&2
    exit 1
  fi
  name=$(basename "${run%%:*}")
  log=$out/$name.log
  start=$(date +%s)
  RUNPOOL_LOCALCLOUD_RECORD_REQUESTS=$recording timeout 600 "$exe" --gtest_filter="$filter" >"$log" 2>&1
  rc=$?
  echo "iam_tier: $name --gtest_filter=$filter: exit $rc in $(($(date +%s) - start)) s"
  if [[ $rc -ne 0 ]]; then
    status=1
    tail -n 40 "$log"
  fi
done

# The instance types a pool may launch: those of the e2e pools' resource_classes
# (tests/support/runpoolctl_harness.h), e.g. "small=c7i.large,m7i.large;large=m7i.2xlarge".
classes=$(sed -n 's/.*"resource_classes = \([^"\\]*\)\\n".*/\1/p' "$src/tests/support/runpoolctl_harness.h" | head -n 1)
types=$(tr ';' '\n' <<<"$classes" | sed 's/^[^=]*=//' | paste -sd, -)
if [[ -z $types ]]; then
  echo "iam_tier: no resource_classes found in tests/support/runpoolctl_harness.h" >&2
  exit 1
fi

"$node" "$src/tests/localcloud/iam/evaluate.js" --recording "$recording" --instance-types "$types" \
  --report "$out/report.json"
rc=$?
echo "iam_tier: recording $recording ($(wc -l <"$recording") requests), report $out/report.json"
[[ $rc -ne 0 ]] && status=1
exit $status
