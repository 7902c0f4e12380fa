#!/bin/bash
# PID 1 of a local-cloud instance (its own PID namespace when `unshare` is available). Like a VM's init
# it runs the boot script, outlives it (the instance stays up when the script ends) and reaps orphans:
# bash's SIGCHLD handler collects them while the loop below blocks on a pipe that never delivers.
# It forwards no signals: the EC2 stand-in signals every process of the instance itself.
if [ $# -gt 0 ]; then
  ( "$@"; echo "[localcloud] user-data exited with status $?" ) &
fi
fifo=$(mktemp -u "${TMPDIR:-/tmp}/localcloud-init.XXXXXX")
mkfifo -m 600 "$fifo"
exec 3<>"$fifo"
rm -f "$fifo"
while :; do read -r _ <&3; done
