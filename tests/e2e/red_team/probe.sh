# The red team's second job, on the same instance for another tenant: for every vector the first
# job tried, it looks for what that job left, and writes "survived" or "gone". Placeholders:
# @TOKEN@, @RESULTS@, @ATTACKER_UID@, @ROOT@ (the runner root), @LISTENER_SHA@, @RUN_SHA@,
# @DOCKER_HOST@ and @UBUNTU_ID@ (the engine jobs may use, and its ubuntu:latest; empty: none).
set +e
T='@TOKEN@'
R='@RESULTS@'
U1='@ATTACKER_UID@'
root='@ROOT@'
out="$R/probe"
: > "$out"
id -u > "$R/prober-uid"
# probe NAME COMMAND...: survived when the command succeeds.
probe() {
  local name=$1
  shift
  if ( "$@" ) > /dev/null 2>&1; then printf '%s\tsurvived\n' "$name" >> "$out"; else printf '%s\tgone\n' "$name" >> "$out"; fi
}
# Any entry with the token in its name, on every local filesystem (/tmp and the runner root may be
# file systems of their own).
find / /dev/shm /var/tmp /tmp "$root" -xdev -name "*$T*" 2> /dev/null | grep -v "^$R" | sort -u > "$R/found-by-name"
named() { grep -q -- "$1" "$R/found-by-name"; }
# The attacker's processes: any process of its uid, or with the token in its command line.
procs() {
  for p in /proc/[0-9]*; do
    u=$(stat -c %u "$p" 2> /dev/null) || continue
    c=$(tr '\0' ' ' < "$p/cmdline" 2> /dev/null)
    if [ "$u" = "$U1" ] && [ "$u" != "$(id -u)" ]; then echo "${p#/proc/} $u $c"; continue; fi
    case "$c" in *"$T"*) case "$c" in *probe*|*find*|*grep*) ;; *) echo "${p#/proc/} $u $c" ;; esac ;; esac
  done
}
procs > "$R/found-processes"
proc_matching() { grep -q -- "$1" "$R/found-processes"; }
sysv() { awk -v u="$U1" -v a="$2" -v b="$3" 'NR > 1 && ($a == u || $b == u) { found = 1 } END { exit !found }' "/proc/sysvipc/$1"; }

probe tmp-file test -e "/tmp/$T-file"
probe var-tmp-file test -e "/var/tmp/$T-file"
probe dev-shm-file test -e "/dev/shm/$T-file"
probe hidden-tree test -e "/tmp/.$T-hidden"
probe unreadable-dir test -e "/tmp/$T-locked"
probe deep-tree test -e "/tmp/$T-deep"
probe fifo test -e "/tmp/$T-fifo"
probe symlink-trap test -L "/tmp/$T-link"
probe setuid-copy test -e "/tmp/$T-suid"
probe every-world-writable-dir named ".$T-ww"
probe disk-fill test -e "/tmp/$T-fill"
long=$(printf "%s-%0240d" "$T" 0)
probe odd-names sh -c "test -e '/var/tmp/-$T-dash' || test -e '/var/tmp/$long' || find /var/tmp -maxdepth 1 -name '$T?newline' | grep -q ."
probe many-files test -e "/var/tmp/$T-many"
probe backdated-file test -e "/var/tmp/$T-old"
probe unix-socket-file test -e "/tmp/$T-sock"
probe hardlink-to-root-file test -e "/tmp/$T-hardlink"
probe btrfs-subvolume test -e "/tmp/$T-subvol"
probe btrfs-nested-subvolume test -e "/tmp/$T-subvol/$T-inner"
probe btrfs-snapshot test -e "/tmp/$T-snap"
probe btrfs-subvolume-in-work test -e "$root/_work/$T-subvol"

probe runner-root-file test -e "$root/$T-planted"
probe runner-env-preload sh -c "grep -qs $T '$root/.env' || env | grep -q $T"
probe runner-path sh -c "grep -qs $T '$root/.path' || echo \"\$PATH\" | grep -q $T"
probe job-started-hook sh -c "test -e /tmp/$T-hook-ran || grep -qs $T '$root/.env' || env | grep -q HOOK_JOB_STARTED=/tmp/$T"
probe runner-binary-replaced sh -c "[ \"\$(sha256sum < '$root/bin/Runner.Listener')\" != '@LISTENER_SHA@' ]"
probe runner-binary-added test -e "$root/bin/$T"
probe runner-script-changed sh -c "[ \"\$(sha256sum < '$root/run.sh')\" != '@RUN_SHA@' ]"
probe runner-diag-log sh -c "ls '$root/_diag' 2> /dev/null | grep -q $T"
probe actions-cache grep -rqs "$T" "$root/_work/_actions"
probe tool-cache test -e "$root/_work/_tool/node/20.0.0"
probe workspace-leftover sh -c "ls -a \"\$GITHUB_WORKSPACE\" | grep -q $T"

probe bashrc-preload sh -c "grep -qs $T \"\$HOME/.bashrc\" || env | grep -q LD_PRELOAD=/tmp/$T"
probe profile grep -qs "$T" "$HOME/.profile" "$HOME/.bash_profile"
probe gitconfig sh -c "grep -qs $T \"\$HOME/.gitconfig\""
probe npmrc grep -qs "$T" "$HOME/.npmrc"
probe pip-conf grep -qs "$T" "$HOME/.config/pip/pip.conf"
probe python-sitecustomize grep -rqs "$T" "$HOME/.local"
probe ssh-authorized-keys grep -qs "$T" "$HOME/.ssh/authorized_keys"
probe system-profile grep -qs "$T" /etc/profile
probe system-preload grep -qs "$T" /etc/ld.so.preload

probe process-setsid proc_matching "$T-setsid"
probe process-double-fork-renamed sh -c "grep -q -- '$T-renamed' '$R/found-processes' || awk -v u=$U1 '\$2 == u' '$R/found-processes' | grep -q kworker"
probe process-ignores-sigterm proc_matching "$T-noterm"
probe process-respawner proc_matching "$T-respawn"
probe process-stopped proc_matching "$T-stopped"
probe process-in-namespaces proc_matching "$T-userns"
probe fake-runner-worker proc_matching "$T-fakeworker"
probe fake-runner-listener proc_matching "$T-fakelistener"
probe busy-forger sh -c "grep -q -- '$T-forge' '$R/found-processes' || test -e '$root/_diag/Runner_$T-forged.log'"
probe inotify-watcher proc_matching "$T-inotify"
probe abstract-socket grep -q "@$T-abs" /proc/net/unix

probe sysv-shm sysv shm 8 10
probe sysv-sem sysv sem 5 7
probe sysv-msg sysv msg 8 10
probe posix-shm test -e "/dev/shm/$T-posix"
probe posix-mqueue python3 -c "
import ctypes, os, sys
rt = ctypes.CDLL('librt.so.1', use_errno=True)
fd = rt.mq_open(b'/$T-mq', os.O_RDONLY)
sys.exit(0 if fd >= 0 or ctypes.get_errno() == 13 else 1)"
# keyctl(KEYCTL_SEARCH = 10, keyring, "user", description): the user's keyring (-4), the session's (-3).
key_in() { python3 -c "
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
sys.exit(0 if libc.syscall(250, 10, $1, b'user', b'$2', 0) > 0 else 1)"; }
probe user-keyring key_in -4 "$T-key"
probe session-keyring key_in -3 "$T-session"

probe crontab sh -c "crontab -l 2> /dev/null | grep -q $T || test -e /tmp/$T-cron"
probe at-job sh -c "atq 2> /dev/null | grep -q . || test -e /tmp/$T-at"
probe systemd-user-timer test -e "/tmp/$T-timer"
probe linger sh -c "ls /var/lib/systemd/linger 2> /dev/null | grep -q runpool-j$U1"
probe clock sh -c "[ \$(date +%Y) = 2001 ]"
probe hostname sh -c "[ \"\$(hostname)\" = '$T' ]"
export DOCKER_HOST='@DOCKER_HOST@'
[ -n "$DOCKER_HOST" ] || unset DOCKER_HOST
probe docker-image sh -c "[ \"\$(docker image inspect --format '{{.Id}}' ubuntu:latest 2> /dev/null)\" != '@UBUNTU_ID@' ]"
probe docker-build sh -c "docker images -a --format '{{.Repository}}' | grep -q -- '$T'"
probe docker-container sh -c "docker ps -a --format '{{.Names}}' | grep -q -- '$T'"
probe docker-found-volume sh -c "docker run --rm --network none -v image-cache:/v '@UBUNTU_ID@' /bin/busybox test -e '/v/$T'"
probe docker-volume sh -c "docker volume ls --format '{{.Name}}' | grep -q -- '$T'"
probe docker-network sh -c "docker network ls --format '{{.Name}}' | grep -q -- '$T'"
probe docker-root-file test -e "/tmp/$T-root"
# Anything else with the token in its name, wherever it is.
probe anything-named-with-the-token test -s "$R/found-by-name"
probe any-process-of-the-attacker test -s "$R/found-processes"
exit 0
