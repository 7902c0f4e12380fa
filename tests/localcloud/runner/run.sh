#!/bin/bash
# Stand-in for actions/runner's run.sh: keeps re-running run-helper.sh (a fresh copy of its
# template each time) while it exits 2 (retryable), and exits 0 otherwise. So the real exit code
# of the Listener is lost here; a supervisor that needs it runs bin/Runner.Listener itself.

SOURCE="${BASH_SOURCE[0]}"
while [ -h "$SOURCE" ]; do
    DIR="$(cd -P "$(dirname "$SOURCE")" && pwd)"
    SOURCE="$(readlink "$SOURCE")"
    [[ $SOURCE != /* ]] && SOURCE="$DIR/$SOURCE"
done
DIR="$(cd -P "$(dirname "$SOURCE")" && pwd)"

run() {
    while :; do
        cp -f "$DIR"/run-helper.sh.template "$DIR"/run-helper.sh
        "$DIR"/run-helper.sh "$@"
        returnCode=$?
        if [[ $returnCode -eq 2 ]]; then
            echo "Restarting runner..."
        else
            echo "Exiting runner..."
            exit 0
        fi
    done
}

# With RUNNER_MANUALLY_TRAP_SIG set, SIGINT/SIGTERM to this script are forwarded (as SIGINT) to
# the helper's process group, and the helper's own exit code is returned.
runWithManualTrap() {
    set -m
    signaled=0
    _trap() {
        kill -INT -"$PID"
        signaled=1
    }
    trap '_trap' INT TERM
    while :; do
        cp -f "$DIR"/run-helper.sh.template "$DIR"/run-helper.sh
        "$DIR"/run-helper.sh "$@" &
        PID=$!
        wait $PID
        if [ $signaled -eq 1 ]; then
            wait $PID
        fi
        returnCode=$?
        if [[ $returnCode -eq 2 ]]; then
            echo "Restarting runner..."
        else
            echo "Exiting runner..."
            trap - INT TERM
            wait $PID
            exit $returnCode
        fi
    done
}

if [[ -z "$RUNNER_MANUALLY_TRAP_SIG" ]]; then
    run "$@"
else
    runWithManualTrap "$@"
fi
