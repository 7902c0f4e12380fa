#!/usr/bin/env bash
# runpoolctl's and runpool-agent's command lines as an operator meets them, with the real binaries
# (no cloud needed): --version; global options after the command; the default configuration file
# /etc/runpool/runpoolctl.conf (read when present and no --config is given; an explicit --config
# wins; a missing one is no error) — checked in a private mount namespace whose /etc is an overlay,
# so the machine's /etc is never touched; `runpoolctl user-data`, which carries no secret.
# Usage: cli_test.sh SOURCE_DIR RUNPOOLCTL RUNPOOL_AGENT VERSION
# Exit 77 (skipped) only when everything else passed and no mount namespace could be had.
set -euo pipefail
src=$1 ctl=$2 agent=$3 version=$4
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The test's own environment must not configure runpoolctl.
while IFS='=' read -r name _; do unset "$name"; done < <(env | grep '^RUNPOOL_' || true)

# --version: the project's version, exit 0, with or without a command.
for b in "$ctl" "$agent"; do
  rc=0
  out=$("$b" --version 2>&1) || rc=$?
  [ $rc -eq 0 ] || bad "$(basename "$b") --version exited $rc"
  [ "$out" = "$version" ] || bad "$(basename "$b") --version printed '$out', expected $version"
done

# Global options after the command.
out=$("$ctl" config --pool after-cmd --set table=t-after --log-level warn 2>&1) || bad "config --pool … after the command failed: $out"
grep -q '^pool = after-cmd    # --pool$' <<<"$out" || bad "--pool after the command was not taken: $out"
grep -q '^table = t-after    # --set table$' <<<"$out" || bad "--set after the command was not taken: $out"
printf 'pool = from-file\n' > "$work/mine.conf"
out=$("$ctl" config --config "$work/mine.conf" 2>&1) || bad "config --config FILE failed: $out"
grep -q "^pool = from-file    # $work/mine.conf" <<<"$out" || bad "--config after the command was not read: $out"
# scale-down --dry-run --json: parsed (it then stops at the missing GitHub owner: exit 2, which
# names the setting, not an argument).
set +e
out=$("$ctl" scale-down --dry-run --json 2>&1)
rc=$?
set -e
[ $rc -eq 2 ] || bad "scale-down --dry-run --json exited $rc: $out"
grep -q 'github_owner' <<<"$out" || bad "scale-down --dry-run --json did not get past parsing: $out"
if grep -qiE 'not expected|unknown|--json' <<<"$out"; then bad "scale-down refused --json after it: $out"; fi
out=$("$ctl" --json status --no-such-flag 2>&1) && bad "an unknown option was accepted: $out"
grep -q -- '--no-such-flag' <<<"$out" || bad "an unknown option is not named: $out"

# user-data: the rendered document for this configuration, and no secret in it.
out=$(RUNPOOL_GITHUB_TOKEN=ghp_cli_test_secret_0123456789 RUNPOOL_GITHUB_APP_PRIVATE_KEY=app-key-cli-test \
  "$ctl" user-data --pool ud-pool --set user_data_template="$src/cloud-init/user-data.sh.in" \
  --set agent_runner_user=ci 2>&1) || bad "user-data failed: $out"
[ "$(head -n 1 <<<"$out")" = "#cloud-config" ] || bad "user-data is no #cloud-config document: $(head -n 3 <<<"$out")"
grep -q 'pool = ud-pool' <<<"$out" || bad "user-data lacks the pool's agent configuration"
grep -q 'runner_user = ci' <<<"$out" || bad "user-data lacks an agent_* key"
if grep -qE 'ghp_cli_test_secret|app-key-cli-test' <<<"$out"; then bad "user-data carries a secret"; fi
set +e
out=$("$ctl" user-data --set user_data_template="$work/missing.sh.in" 2>&1)
rc=$?
set -e
[ $rc -eq 1 ] && grep -q 'missing.sh.in' <<<"$out" || bad "a missing template: exit $rc, '$out'"

# The default configuration file, in a private mount namespace with an overlay on /etc.
skipped=""
if [ "$(id -u)" -eq 0 ] && command -v unshare > /dev/null; then
  mkdir "$work/up" "$work/wk"
  printf 'pool = from-default\ntable = default-table\n' > "$work/default.conf"
  cat > "$work/in-ns.sh" <<'NS'
set -u
ctl=$1 work=$2
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$work/up,workdir=$work/wk" /etc || exit 77
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
rm -rf /etc/runpool
out=$("$ctl" config 2>&1) || bad "no default file: config failed: $out"
grep -q '^pool = default    # default$' <<<"$out" || bad "no default file: unexpected pool: $out"
mkdir -p /etc/runpool && cp "$work/default.conf" /etc/runpool/runpoolctl.conf
out=$("$ctl" config 2>&1) || bad "default file: config failed: $out"
grep -q '^pool = from-default    # /etc/runpool/runpoolctl.conf' <<<"$out" || bad "the default file was not read: $out"
out=$("$ctl" config --config "$work/mine.conf" 2>&1) || bad "--config with a default file failed: $out"
grep -q '^pool = from-file    #' <<<"$out" || bad "--config did not win: $out"
grep -q '^table = runpool    # default$' <<<"$out" || bad "the default file was read beside --config: $out"
out=$(RUNPOOL_POOL=from-env "$ctl" config 2>&1)
grep -q '^pool = from-env    # RUNPOOL_POOL' <<<"$out" || bad "the environment does not override the default file: $out"
printf 'no_such_key = 1\n' > /etc/runpool/runpoolctl.conf
out=$("$ctl" config 2>&1)
rc=$?
[ $rc -eq 2 ] && grep -q 'no_such_key' <<<"$out" || bad "a bad default file: exit $rc, '$out'"
exit $fail
NS
  set +e
  unshare --mount --propagation private bash "$work/in-ns.sh" "$ctl" "$work"
  rc=$?
  set -e
  case $rc in 0) ;; 77) skipped="no overlay mount on /etc here" ;; *) fail=1 ;; esac
else
  skipped="needs root and unshare for a private /etc"
fi

[ $fail -eq 0 ] || exit 1
if [ -n "$skipped" ]; then echo "cli_test: the default configuration file was not checked: $skipped"; exit 77; fi
echo "cli_test: OK"
