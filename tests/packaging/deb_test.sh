#!/usr/bin/env bash
# The Debian package, built with cpack from this build tree and inspected the way an operator's
# dpkg sees it: its files and modes, its control data (dependencies checked against what the
# binaries really link), the systemd unit, the default configuration files (every key of each
# schema, and accepted by the binaries once uncommented), and both binaries run from an extracted
# root.
# Usage: deb_test.sh BUILD_DIR SOURCE_DIR INSTALL_PREFIX UNIT_DIR SANITIZE(ON|OFF)
set -euo pipefail
build=$1 src=$2 prefix=$3 unitdir=$4 sanitize=$5
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 1. Build the package.
(cd "$build" && cpack -G DEB -B "$work/out" --config "$build/CPackConfig.cmake") > "$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log" >&2; exit 1; }
shopt -s nullglob
debs=("$work"/out/runpool_*.deb)
[ ${#debs[@]} -eq 1 ] || { echo "FAIL: expected one runpool_*.deb, got: ${debs[*]:-none}" >&2; exit 1; }
deb=${debs[0]}

# 2. Its files and their modes.
dpkg-deb -c "$deb" > "$work/contents"
expect_file() {  # path mode
  local line
  line=$(awk -v p=".$1" '$6 == p' "$work/contents")
  [ -n "$line" ] || { bad "the package lacks $1"; return; }
  [ "${line%% *}" = "$2" ] || bad "$1 has mode ${line%% *}, expected $2"
}
expect_file "$prefix/bin/runpool-agent" -rwxr-xr-x
expect_file "$prefix/bin/runpoolctl" -rwxr-xr-x
expect_file "$unitdir/runpool-agent.service" -rw-r--r--
expect_file "$unitdir/runpoolctl-serve.service" -rw-r--r--
expect_file "$unitdir/runpoolctl-serve@.service" -rw-r--r--
expect_file "$unitdir/runpoolctl-refresh.service" -rw-r--r--
expect_file "$unitdir/runpoolctl-refresh.timer" -rw-r--r--
expect_file "$prefix/share/runpool/user-data.sh.in" -rw-r--r--
expect_file "$prefix/share/runpool/build-image.sh" -rwxr-xr-x
expect_file /etc/runpool/agent.conf -rw-------
expect_file /etc/runpool/runpoolctl.conf -rw-r-----
expect_file /usr/share/doc/runpool/copyright -rw-r--r--
if grep -q '/usr/local/' "$work/contents" && [ "$prefix" = /usr ]; then bad "a /usr package holds /usr/local files"; fi

# 3. Control data: name, conffiles, dependencies.
dpkg-deb -I "$deb" > "$work/info"
dpkg-deb -f "$deb" Package | grep -qx runpool || bad "package name: $(dpkg-deb -f "$deb" Package)"
dpkg-deb -I "$deb" conffiles > "$work/conffiles" 2>/dev/null || true
for f in /etc/runpool/agent.conf /etc/runpool/runpoolctl.conf; do
  grep -qx "$f" "$work/conffiles" || bad "$f is not a conffile (an upgrade would overwrite an operator's edits)"
done
# A maintainer dpkg and apt show, reachable: "Name <address>", not a placeholder address.
maintainer=$(dpkg-deb -f "$deb" Maintainer)
[[ "$maintainer" =~ ^[^\<\>@]+\ \<[^\<\>@\ ]+@[a-z0-9.-]+\.[a-z]+\>$ ]] || bad "Maintainer '$maintainer' is not 'Name <address>'"
case "$maintainer" in *@localhost* | *@example.* | *invalid*) bad "Maintainer '$maintainer' is a placeholder" ;; esac
depends=$(dpkg-deb -f "$deb" Depends)
declare -A declared=()
IFS=',' read -r -a deps <<<"$depends"
for d in "${deps[@]}"; do
  d=${d// /}; d=${d%%(*}
  apt-cache show "$d" > /dev/null 2>&1 || bad "Depends names $d, which is no Debian package here"
  declared[$d]=1
done
# Every shared library the binaries link directly (ELF NEEDED) must come from a declared package;
# what those libraries need in turn is their packages' business.
for bin in "$build/agent/runpool-agent" "$build/controller/runpoolctl"; do
  ldd "$bin" > "$work/ldd"
  while read -r soname; do
    case "$soname" in libasan.so* | libubsan.so*) [ "$sanitize" = ON ] && continue ;; esac
    lib=$(awk -v s="$soname" '$1 == s && $2 == "=>" { print $3 }' "$work/ldd")
    [ -n "$lib" ] || { bad "$(basename "$bin") needs $soname, which ldd does not resolve"; continue; }
    pkg=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")" 2>/dev/null) || { bad "no package owns $lib"; continue; }
    pkg=${pkg%%:*}
    [ -n "${declared[$pkg]:-}" ] || bad "$(basename "$bin") links $soname from $pkg, which Depends does not name"
  done < <(objdump -p "$bin" | awk '$1 == "NEEDED" { print $2 }')
done
# tzdata is no linked library: the idle schedule's time zones are read from it at run time; nor is
# nftables: the agent runs its nft to cut jobs off from IMDS (docs/agent.md).
for d in libcurl4 libjsoncpp25 libspdlog1.10 libsystemd0 libpugixml1v5 libssl3 libsodium23 libdate-tz3 tzdata nftables; do
  [ -n "${declared[$d]:-}" ] || bad "Depends lacks $d"
done

# 4. An extracted root: both binaries start and explain themselves.
root=$work/root
dpkg -x "$deb" "$root"
"$root$prefix/bin/runpool-agent" --help > "$work/agent-help" 2>&1 || bad "runpool-agent --help failed: $(cat "$work/agent-help")"
grep -q -- '--config' "$work/agent-help" || bad "runpool-agent --help does not explain --config"
"$root$prefix/bin/runpoolctl" --help > "$work/ctl-help" 2>&1 || bad "runpoolctl --help failed: $(cat "$work/ctl-help")"
for c in init provision release refresh status config; do
  grep -qw "$c" "$work/ctl-help" || bad "runpoolctl --help does not list $c"
done
# runpoolctl's default user_data_template is the template this package installs.
tmpl=$(env -u RUNPOOL_USER_DATA_TEMPLATE "$root$prefix/bin/runpoolctl" config 2>&1 |
  awk '$1 == "user_data_template" { print $3 }')
[ "$tmpl" = "$prefix/share/runpool/user-data.sh.in" ] || bad "runpoolctl's user_data_template default is '$tmpl'"
[ -f "$root$tmpl" ] || bad "the default user_data_template $tmpl is not in the package"
cmp -s "$root$tmpl" "$src/cloud-init/user-data.sh.in" || bad "the packaged template differs from cloud-init/user-data.sh.in"

# The licence: Debian's machine-readable copyright format, carrying LICENSE word for word.
copyright=$root/usr/share/doc/runpool/copyright
if [ -f "$copyright" ]; then
  head -n 1 "$copyright" | grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' ||
    bad "the copyright file does not start with the copyright-format 1.0 Format line"
  grep -qx 'Files: \*' "$copyright" || bad "the copyright file has no 'Files: *' paragraph"
  grep -qx 'Copyright: 2026 the runpool authors' "$copyright" || bad "the copyright file names no copyright holder"
  grep -qx 'License: Expat' "$copyright" || bad "the copyright file's licence is not Expat (MIT)"
  # The licence text: the continuation lines after "License:", " ." for a blank line.
  sed -n '/^License: /,$ { /^License: /d; s/^ \.$//; s/^ //; p }' "$copyright" > "$work/license"
  cmp -s "$work/license" "$src/LICENSE" || bad "the copyright file's licence text differs from LICENSE"
  grep -q 'the runpool authors' "$src/LICENSE" || bad "LICENSE names no copyright holder"
fi

# 5. The unit: runs the packaged binary, keeps what the agent's lifecycle relies on, and nothing
# in it keeps the agent from switching to the runner user, ending its processes or writing the
# runner root.
unit=$root$unitdir/runpool-agent.service
exec_bin=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit")
[ -x "$root$exec_bin" ] || bad "ExecStart=$exec_bin is not the packaged binary"
if [ "$prefix" = /usr ]; then
  cmp -s "$unit" "$src/agent/runpool-agent.service" || bad "the packaged unit differs from agent/runpool-agent.service"
fi
for want in Type=notify Restart=on-failure RestartPreventExitStatus=2 KillMode=process NotifyAccess=main \
  WantedBy=multi-user.target; do
  grep -qx "$want" "$unit" || bad "the unit lacks $want"
done
grep -q '^WatchdogSec=[1-9]' "$unit" || bad "the unit has no WatchdogSec"
grep -q -- '--config /etc/runpool/agent.conf' "$unit" || bad "the unit does not read /etc/runpool/agent.conf"
if grep -Eq '^(User|DynamicUser|PrivateUsers)=' "$unit"; then bad "the agent must run as root (it setuids to the runner user)"; fi
# (ProtectSystem=true leaves /opt writable: it covers /usr, /boot and /efi, and the agent
# refuses a runner_root there.)
if grep -Eq '^(ProtectProc=invisible|ProtectSystem=strict|ReadOnlyPaths=/opt)' "$unit" &&
  ! grep -q '^ReadWritePaths=.*/opt/runpool' "$unit"; then
  bad "the unit's file-system protection keeps the agent from writing the runner root"
fi
if grep -q '^CapabilityBoundingSet=' "$unit"; then
  for cap in CAP_SETUID CAP_SETGID CAP_KILL CAP_CHOWN CAP_FOWNER CAP_DAC_OVERRIDE CAP_NET_ADMIN; do
    grep -q "^CapabilityBoundingSet=.*$cap" "$unit" || bad "CapabilityBoundingSet drops $cap, which the agent needs"
  done
fi
if grep -Eq '^SystemCallFilter=.*~.*@privileged' "$unit"; then bad "SystemCallFilter forbids setuid"; fi
# The hardening stays: systemd's own exposure score (offline, from the unit file) must not creep
# back up; it was 9.6 ("UNSAFE") without it.
if systemd-analyze security --help 2>/dev/null | grep -- --offline >/dev/null; then
  sed "s#^ExecStart=#ExecStart=$root#" "$unit" > "$work/security.service"
  exposure=$(systemd-analyze security --offline=yes "$work/security.service" 2>/dev/null |
    sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
  [ -n "$exposure" ] || bad "systemd-analyze security printed no exposure level"
  [ -z "$exposure" ] || awk -v e="$exposure" 'BEGIN { exit !(e <= 6.0) }' ||
    bad "the unit's exposure level is $exposure (> 6.0): its hardening was weakened"
fi
# systemd's own parser: silent for a valid unit (it reports bad values and unknown keys, even
# though it exits 0 for them). ExecStart is pointed at the extracted binary, which it checks.
if command -v systemd-analyze > /dev/null; then
  sed "s#^ExecStart=#ExecStart=$root#" "$unit" > "$work/runpool-agent.service"
  systemd-analyze verify "$work/runpool-agent.service" > "$work/verify" 2>&1 || true
  [ ! -s "$work/verify" ] || bad "systemd-analyze verify: $(cat "$work/verify")"
fi

# 5b. runpoolctl serve's unit and its template (one per scale set): the packaged binary, restarted
# when it stops, and no privilege at all (it needs only the network and its configuration):
# systemd's exposure score stays low.
check_serve_unit() {  # unit-file name-to-verify-as exec-arguments
  local unit=$1 as=$2 args=$3 exec_bin exposure
  [ -f "$unit" ] || { bad "$as is not packaged"; return; }
  exec_bin=$(sed -n "s/^ExecStart=\([^ ]*\) $args\$/\1/p" "$unit")
  [ -n "$exec_bin" ] && [ -x "$root$exec_bin" ] || bad "$as's ExecStart is not the packaged runpoolctl $args"
  for want in Restart=always RestartPreventExitStatus=2 CapabilityBoundingSet= NoNewPrivileges=yes \
    WantedBy=multi-user.target; do
    grep -qx "$want" "$unit" || bad "$as lacks $want"
  done
  if grep -Eq '^(User|DynamicUser)=' "$unit"; then
    bad "$as must be able to read /etc/runpool/runpoolctl.conf (root's, mode 640)"
  fi
  check_runpoolctl_hardening "$unit" "$as"
}
# runpoolctl's units: no privilege at all (systemd's exposure score at most 2.5) and valid to
# systemd's own parser; `more` are further unit files verified beside it (a timer).
check_runpoolctl_hardening() {  # unit-file name-to-verify-as [more…]
  local unit=$1 as=$2 exposure
  shift 2
  sed "s#^ExecStart=#ExecStart=$root#" "$unit" > "$work/$as"
  if systemd-analyze security --help 2>/dev/null | grep -- --offline >/dev/null; then
    exposure=$(systemd-analyze security --offline=yes "$work/$as" 2>/dev/null |
      sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
    [ -n "$exposure" ] && awk -v e="$exposure" 'BEGIN { exit !(e <= 2.5) }' ||
      bad "$as's exposure level is '$exposure' (> 2.5): its hardening was weakened"
  fi
  if command -v systemd-analyze > /dev/null; then
    systemd-analyze verify "$work/$as" "$@" > "$work/verify-$as" 2>&1 || true
    [ ! -s "$work/verify-$as" ] || bad "systemd-analyze verify: $(cat "$work/verify-$as")"
  fi
}
serve_unit=$root$unitdir/runpoolctl-serve.service
check_serve_unit "$serve_unit" runpoolctl-serve.service serve
if [ "$prefix" = /usr ] && [ -f "$serve_unit" ]; then
  cmp -s "$serve_unit" "$src/controller/runpoolctl-serve.service" ||
    bad "the packaged serve unit differs from controller/runpoolctl-serve.service"
fi
# The template, verified as one of its instances; beside the shared environment file it reads the
# scale set's own, and differs from the unit in nothing else.
template=$root$unitdir/runpoolctl-serve@.service
check_serve_unit "$template" runpoolctl-serve@linux-big.service "--set scale_set_name=%i serve"
if [ -f "$template" ] && [ -f "$serve_unit" ]; then
  grep -qx 'EnvironmentFile=-/etc/runpool/serve-%i.env' "$template" || bad "the serve template does not read serve-%i.env"
  extra=$(diff "$serve_unit" "$template" | grep -c '^>' || true)
  [ "$extra" -le 5 ] || bad "the serve template differs from the unit in more than its name, environment and ExecStart"
fi

# 5c. The refresh timer's service: one pass of the packaged runpoolctl, as unprivileged as serve;
# the timer starts it and is enabled with timers.target.
refresh_unit=$root$unitdir/runpoolctl-refresh.service refresh_timer=$root$unitdir/runpoolctl-refresh.timer
if [ -f "$refresh_unit" ] && [ -f "$refresh_timer" ]; then
  exec_bin=$(sed -n 's/^ExecStart=\([^ ]*\) refresh$/\1/p' "$refresh_unit")
  [ -n "$exec_bin" ] && [ -x "$root$exec_bin" ] || bad "runpoolctl-refresh.service's ExecStart is not the packaged runpoolctl refresh"
  for want in Type=oneshot CapabilityBoundingSet= NoNewPrivileges=yes; do
    grep -qx "$want" "$refresh_unit" || bad "runpoolctl-refresh.service lacks $want"
  done
  grep -qx 'WantedBy=timers.target' "$refresh_timer" || bad "runpoolctl-refresh.timer is not wanted by timers.target"
  grep -q '^OnUnitInactiveSec=' "$refresh_timer" || bad "runpoolctl-refresh.timer does not repeat"
  cp "$refresh_timer" "$work/runpoolctl-refresh.timer"
  check_runpoolctl_hardening "$refresh_unit" runpoolctl-refresh.service "$work/runpoolctl-refresh.timer"
fi

# 6. The default configurations: every key of each schema, commented out; uncommenting every
# default gives a file the binary accepts with the same values.
check_conf() {  # name conf reference-file
  local name=$1 conf=$2 ref=$3 key
  # shellcheck disable=SC2016 # the backquotes are literal Markdown
  while read -r key; do
    grep -Eq "^# $key =( |$)" "$conf" || bad "$name: the key $key is missing"
  done < <(sed -n 's/^| `\([a-z0-9_]*\)` |.*/\1/p' "$ref")
  if grep -v '^#' "$conf" | grep -q '[^[:space:]]'; then bad "$name: a setting is not commented out"; fi
  sed -n 's/^# \([a-z0-9_]* = ..*\)$/\1/p' "$conf" > "$work/$name.uncommented"
  [ -s "$work/$name.uncommented" ] || bad "$name: no defaults to uncomment"
}
"$root$prefix/bin/runpool-agent" --config-reference > "$work/agent.ref"
"$root$prefix/bin/runpoolctl" config --reference > "$work/ctl.ref"
check_conf agent "$root/etc/runpool/agent.conf" "$work/agent.ref"
check_conf runpoolctl "$root/etc/runpool/runpoolctl.conf" "$work/ctl.ref"
printf 'table = runpool\npool = default\n' >> "$work/agent.uncommented"
"$root$prefix/bin/runpool-agent" --check-config --config "$work/agent.uncommented" > "$work/agent-check" 2>&1 ||
  bad "runpool-agent refuses its uncommented defaults: $(cat "$work/agent-check")"
env | grep -q '^RUNPOOL_' && bad "RUNPOOL_ variables in the test's environment would hide the file's values"
"$root$prefix/bin/runpoolctl" --config "$work/runpoolctl.uncommented" config > "$work/ctl-config" 2>&1 ||
  bad "runpoolctl refuses its uncommented defaults: $(cat "$work/ctl-config")"
n_file=$(grep -c 'runpoolctl.uncommented:' "$work/ctl-config" || true)
n_keys=$(wc -l < "$work/runpoolctl.uncommented")
[ "$n_file" -eq "$n_keys" ] || bad "runpoolctl took $n_file of the file's $n_keys values from it: $(cat "$work/ctl-config")"

[ $fail -eq 0 ] && echo "deb_test: $(basename "$deb") OK"
exit $fail
