#!/usr/bin/env bash
# Installs runpool from the release tarball this script came in (run it from the unpacked
# directory) on any systemd Linux with glibc 2.34 or later — Amazon Linux 2023, Ubuntu 22.04 and
# 24.04, Debian 12, RHEL 9 and its rebuilds. On Debian 12 the .deb does the same through apt.
#
#   /opt/runpool/runpool-<version>-linux-<arch>/   this directory, root-owned, read-only to others
#   /opt/runpool/current                           → the version installed last
#   /usr/bin/runpoolctl, /usr/bin/runpool-agent    → current/bin/… (the paths the units name)
#   /etc/systemd/system/                           the units (--units), installed, not enabled
#   /etc/runpool/runpoolctl.conf, agent.conf       the default configurations, if none is there yet
#
# Usage: install.sh [--units all|agent|serve|none] [--root DIR]
#   --units  which systemd units to install: all (default); agent (runpool-agent.service: an
#            instance image); serve (runpoolctl-serve.service, its template runpoolctl-serve@ for
#            several scale sets, and runpoolctl-refresh's service and timer: a controller host);
#            none (a container: nothing to start it but the container's command)
#   --root   install into DIR as into a root file system being built (an image): nothing is
#            started and systemctl is not called
# Safe to run again: a second run replaces the same version, never a configuration file.
set -euo pipefail
say() { echo "install: $*"; }
die() { echo "install: $*" >&2; exit 1; }

units=all root=""
while (($#)); do
  case "$1" in
    --units) units=${2:?--units needs all, agent, serve or none}; shift ;;
    --root) root=${2:?--root needs a directory}; shift ;;
    -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (--help)" ;;
  esac
  shift
done
case "$units" in all | agent | serve | none) ;; *) die "--units must be all, agent, serve or none, not '$units'" ;; esac

src=$(cd "$(dirname "$0")" && pwd)
name=${src##*/}
[[ $name =~ ^runpool-[0-9A-Za-z.+~-]+-linux-(x86_64|arm64)$ ]] ||
  die "run the install.sh of an unpacked release tarball (its directory is runpool-<version>-linux-<arch>, not $name)"
for f in bin/runpoolctl bin/runpool-agent share/runpool/systemd/runpool-agent.service etc/runpool/runpoolctl.conf; do
  [ -f "$src/$f" ] || die "$src has no $f: unpack the whole tarball again"
done
if [ -z "$root" ]; then
  [ "$(id -u)" = 0 ] || die "run as root (or --root DIR to fill a root file system)"
  # Before anything is copied: the binaries must run on this system (glibc, architecture).
  version=$(env -i "$src/bin/runpoolctl" --version 2>&1) ||
    die "runpoolctl does not run here ($version): it needs glibc 2.34 or later on ${BASH_REMATCH[1]}"
  say "runpool $version for ${BASH_REMATCH[1]}"
else
  [ -d "$root" ] || die "--root $root is not a directory"
  root=$(cd "$root" && pwd)
fi
for bin in runpoolctl runpool-agent; do
  if [ -e "$root/usr/bin/$bin" ] && ! [ -L "$root/usr/bin/$bin" ]; then
    die "/usr/bin/$bin is a file of its own (runpool's Debian package?): remove that installation first"
  fi
done

# The copy is made beside its place and renamed into it: a failure leaves the last version whole.
dest=$root/opt/runpool/$name
mkdir -p "$root/opt/runpool"
rm -rf "$dest.new"
cp -a "$src" "$dest.new"
chown -R 0:0 "$dest.new"
chmod -R go-w "$dest.new"
rm -rf "$dest"
mv "$dest.new" "$dest"
ln -sfn "$name" "$root/opt/runpool/current"
mkdir -p "$root/usr/bin"
for bin in runpoolctl runpool-agent; do ln -sfn "/opt/runpool/current/bin/$bin" "$root/usr/bin/$bin"; done
say "installed $name in /opt/runpool (current), runpoolctl and runpool-agent in /usr/bin"

systemd=$src/share/runpool/systemd
case "$units" in
  all) picked=("$systemd"/*) ;;
  agent) picked=("$systemd/runpool-agent.service") ;;
  serve) picked=("$systemd/runpoolctl-serve.service" "$systemd/runpoolctl-serve@.service"
                 "$systemd/runpoolctl-refresh.service" "$systemd/runpoolctl-refresh.timer") ;;
  none) picked=() ;;
esac
if ((${#picked[@]})); then
  mkdir -p "$root/etc/systemd/system"
  for unit in "${picked[@]}"; do install -m 0644 "$unit" "$root/etc/systemd/system/"; done
  say "units in /etc/systemd/system, not enabled: ${picked[*]##*/}"
fi

mkdir -p "$root/etc/runpool"
for conf in "$src"/etc/runpool/*; do
  if [ -e "$root/etc/runpool/${conf##*/}" ]; then
    say "/etc/runpool/${conf##*/} is kept (the new default is $dest/etc/runpool/${conf##*/})"
  else
    install -m 0644 "$conf" "$root/etc/runpool/"
  fi
done

if [ -z "$root" ] && ((${#picked[@]})) && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi
case "$units" in
  all | serve)
    say "next, for serve: the settings in /etc/runpool/runpoolctl.conf, the GitHub token in /etc/runpool/serve.env"
    say "  (RUNPOOL_GITHUB_TOKEN=…, mode 0600), then: systemctl enable --now runpoolctl-serve"
    ;;
esac
