#!/usr/bin/env bash
# Turns a stock Debian 12, Ubuntu 22.04/24.04 or Amazon Linux 2023 instance into a runpool image.
# Run it as root on a builder instance started from the stock AMI, then stop the instance and make
# the AMI from it (docs/install.md, "The image"). It installs:
#   - runpool: the release tarball under /opt/runpool (runpool-agent and runpoolctl linked into
#     /usr/bin, the agent's unit into /etc/systemd/system, not enabled: user-data starts it), or
#     on Debian 12 the .deb;
#   - the GitHub Actions runner of the version given, its tarball checked against the SHA-256
#     given before anything is unpacked, root-owned in --runner-dir, with the runner's own
#     bin/installdependencies.sh run for its libraries;
#   - what the agent needs from the system (nftables, useradd, cloud-init), and on request
#     Docker's engine, sudo and the CloudWatch agent;
# then resets what must differ per instance (cloud-init's state, machine-id, SSH host keys).
# Safe to run again: a second run replaces the runner and runpool with what it is given.
#
# Usage: build-image.sh --runpool FILE --runner-version V --runner-sha256 HEX [options]
#   --runpool FILE           runpool-<version>-linux-<arch>.tar.gz, or runpool_<version>_<arch>.deb (Debian 12)
#   --runner-version V       the actions/runner release, e.g. 2.330.0 (pinned: no "latest")
#   --runner-sha256 HEX      the SHA-256 of its actions-runner-linux-<arch>-V.tar.gz, as the release lists it
#   --runner-url URL         where that tarball is (default: the release asset on github.com)
#   --runner-dir DIR         where the runner goes (default /opt/actions-runner: agent_runner_template)
#   --no-runner-dependencies do not run the runner's bin/installdependencies.sh
#   --docker                 install and enable Docker's engine (job_privileges = docker)
#   --sudo                   install sudo (job_privileges = sudo)
#   --cloudwatch-agent       install the CloudWatch agent (Amazon Linux's package; elsewhere give
#                            --cloudwatch-agent-package with AWS's .deb)
#   --cloudwatch-agent-package FILE
#   --no-reset               leave cloud-init's state, machine-id and SSH host keys (a builder kept for debugging)
set -euo pipefail

say() { echo "build-image: $*" >&2; }
die() { echo "build-image: $*" >&2; exit 1; }

runpool="" runner_version="" runner_sha256="" runner_url="" runner_dir=/opt/actions-runner
runner_deps=1 docker=0 sudo_=0 cloudwatch=0 cloudwatch_package="" reset=1
while (($#)); do
  case "$1" in
    --runpool) runpool=${2:?--runpool needs a file}; shift 2 ;;
    --runner-version) runner_version=${2:?--runner-version needs a version}; shift 2 ;;
    --runner-sha256) runner_sha256=${2:?--runner-sha256 needs a checksum}; shift 2 ;;
    --runner-url) runner_url=${2:?--runner-url needs a URL}; shift 2 ;;
    --runner-dir) runner_dir=${2:?--runner-dir needs a directory}; shift 2 ;;
    --no-runner-dependencies) runner_deps=0; shift ;;
    --docker) docker=1; shift ;;
    --sudo) sudo_=1; shift ;;
    --cloudwatch-agent) cloudwatch=1; shift ;;
    --cloudwatch-agent-package) cloudwatch=1; cloudwatch_package=${2:?--cloudwatch-agent-package needs a file}; shift 2 ;;
    --no-reset) reset=0; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (--help lists them)" ;;
  esac
done
[ "$(id -u)" = 0 ] || die "run it as root (sudo)"
[ -n "$runpool" ] || die "--runpool FILE is required: the release tarball (or the .deb on Debian 12)"
[ -f "$runpool" ] || die "$runpool: no such file"
[ -n "$runner_version" ] || die "--runner-version is required (a pinned actions/runner release, e.g. 2.330.0)"
[[ $runner_version =~ ^[0-9]+\.[0-9]+\.[0-9]+([.-][0-9A-Za-z.-]+)?$ ]] || die "--runner-version $runner_version is not a version"
[[ ${runner_sha256,,} =~ ^[0-9a-f]{64}$ ]] || die "--runner-sha256 must be the tarball's SHA-256 (64 hex digits)"
runner_sha256=${runner_sha256,,}
case "$runner_dir" in /*) ;; *) die "--runner-dir must be an absolute path" ;; esac

# --- The system ------------------------------------------------------------------------------------
[ -r /etc/os-release ] || die "no /etc/os-release: unknown system"
# shellcheck disable=SC1091
os_id=$(. /etc/os-release && echo "${ID:-}") os_version=$(. /etc/os-release && echo "${VERSION_ID:-}")
case "$os_id" in
  debian | ubuntu) pm=apt ;;
  amzn | fedora | rhel | centos | rocky | almalinux) pm=dnf ;;
  *) die "$os_id is not a system this script knows (Debian, Ubuntu, Amazon Linux)" ;;
esac
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64) arch=arm64 ;;
  *) die "unsupported machine $(uname -m)" ;;
esac
say "$os_id $os_version, $(uname -m), packages through $pm"

apt_updated=0
install_packages() {  # install_packages PACKAGE...
  (($#)) || return 0
  say "installing $*"
  if [ "$pm" = apt ]; then
    if [ "$apt_updated" = 0 ]; then apt-get update -qq; apt_updated=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  else
    dnf install -y -q "$@" >/dev/null
  fi
}
# The packages giving the commands runpool and this script use, where a command is missing.
needed=()
need() {  # need COMMAND APT-PACKAGE DNF-PACKAGE
  command -v "$1" >/dev/null 2>&1 && return 0
  if [ "$pm" = apt ]; then needed+=("$2"); else needed+=("$3"); fi
}
need curl curl curl-minimal
need sha256sum coreutils coreutils
need tar tar tar
need gzip gzip gzip
need useradd passwd shadow-utils  # the agent's job users (job_users = per-assignment)
need nft nftables nftables        # the agent cuts jobs off from IMDS
need cloud-init cloud-init cloud-init  # user-data is a #cloud-config document
[ "$sudo_" = 1 ] && need sudo sudo sudo
[ "$pm" = apt ] && ! [ -e /etc/ssl/certs/ca-certificates.crt ] && needed+=(ca-certificates)
install_packages "${needed[@]}"

# --- runpool ---------------------------------------------------------------------------------------
case "$runpool" in
  *.deb)
    { [ "$os_id" = debian ] && [ "${os_version%%.*}" = 12 ]; } ||
      die "the .deb is built for Debian 12; on $os_id $os_version give the release tarball"
    say "installing $runpool"
    if [ "$apt_updated" = 0 ]; then apt-get update -qq; apt_updated=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$(realpath "$runpool")" >/dev/null
    ;;
  *.tar.gz)
    top=$(tar -tzf "$runpool" | sed -n 1p | cut -d/ -f1)  # sed reads it all: no SIGPIPE for tar
    [[ $top =~ ^runpool-[0-9A-Za-z.+~-]+-linux-(x86_64|arm64)$ ]] || die "$runpool is not a runpool release tarball"
    case "$top" in
      *-x86_64) [ "$arch" = x64 ] || die "$runpool is for x86_64, this machine is $(uname -m)" ;;
      *-arm64) [ "$arch" = arm64 ] || die "$runpool is for arm64, this machine is $(uname -m)" ;;
    esac
    # The tarball's own install script: /opt/runpool/<version> (current), the /usr/bin links, the
    # agent's unit (user-data starts it) and the default configurations.
    unpacked=$(mktemp -d)
    tar -C "$unpacked" --no-same-owner -xzf "$runpool"
    "$unpacked/$top/install.sh" --units agent
    rm -rf "$unpacked"
    ;;
  *) die "$runpool is neither a release tarball (.tar.gz) nor a .deb" ;;
esac
runpool_version=$(runpool-agent --version) || die "the installed runpool-agent does not run"
say "runpool $runpool_version: $(command -v runpool-agent)"

# --- The runner ------------------------------------------------------------------------------------
runner_tarball=actions-runner-linux-$arch-$runner_version.tar.gz
runner_url=${runner_url:-https://github.com/actions/runner/releases/download/v$runner_version/$runner_tarball}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say "downloading $runner_url"
curl -fsSL --retry 3 --proto '=https,http' -o "$work/runner.tar.gz" "$runner_url" || die "could not download $runner_url"
got=$(sha256sum "$work/runner.tar.gz" | cut -d' ' -f1)
[ "$got" = "$runner_sha256" ] || die "$runner_tarball has SHA-256 $got, not the $runner_sha256 given: not installed"
rm -rf "$runner_dir.new"
mkdir -p "$runner_dir.new"
tar -C "$runner_dir.new" --no-same-owner -xzf "$work/runner.tar.gz"
{ [ -x "$runner_dir.new/config.sh" ] && [ -x "$runner_dir.new/run.sh" ]; } || die "$runner_tarball holds no config.sh and run.sh: not a runner"
# Root-owned and read-only to everyone else: the agent copies it into each assignment's runner root.
chown -R root:root "$runner_dir.new"
chmod -R go-w "$runner_dir.new"
rm -rf "$runner_dir"
mv "$runner_dir.new" "$runner_dir"
say "actions/runner $runner_version in $runner_dir"
if [ "$runner_deps" = 1 ]; then
  [ -x "$runner_dir/bin/installdependencies.sh" ] ||
    die "$runner_dir/bin/installdependencies.sh is missing (every runner release has it; --no-runner-dependencies skips it)"
  say "the runner's dependencies (bin/installdependencies.sh)"
  "$runner_dir/bin/installdependencies.sh" >/dev/null
fi

# --- On request ------------------------------------------------------------------------------------
if [ "$docker" = 1 ]; then
  if [ "$pm" = apt ]; then install_packages docker.io; else install_packages docker; fi
  systemctl enable docker.service >/dev/null 2>&1 || die "could not enable docker.service"
  say "Docker's engine, enabled; pull or import the images jobs start from now, before the AMI is made"
fi
if [ "$cloudwatch" = 1 ]; then
  if [ -n "$cloudwatch_package" ]; then
    [ -f "$cloudwatch_package" ] || die "$cloudwatch_package: no such file"
    if [ "$pm" = apt ]; then dpkg -i "$cloudwatch_package" >/dev/null; else rpm -U --replacepkgs "$cloudwatch_package"; fi
  elif [ "$os_id" = amzn ]; then
    install_packages amazon-cloudwatch-agent
  else
    die "$os_id has no CloudWatch agent package: give AWS's with --cloudwatch-agent-package FILE"
  fi
  say "the CloudWatch agent (configure it to ship the agent's metrics file: docs/observability.md)"
fi

# --- For the AMI -----------------------------------------------------------------------------------
if [ "$pm" = apt ]; then apt-get clean; else dnf clean all -q >/dev/null; fi
if [ "$reset" = 1 ]; then
  # Each instance of the image boots as a new one: cloud-init runs user-data again, a new
  # machine-id and new SSH host keys are made on first boot.
  cloud-init clean --logs >/dev/null
  [ -e /etc/machine-id ] && : >/etc/machine-id
  [ -f /var/lib/dbus/machine-id ] && [ ! -L /var/lib/dbus/machine-id ] && rm -f /var/lib/dbus/machine-id
  rm -f /etc/ssh/ssh_host_*_key /etc/ssh/ssh_host_*_key.pub /root/.bash_history
  say "reset for imaging: cloud-init's state, machine-id, SSH host keys"
fi
say "done: runpool $runpool_version, actions/runner $runner_version in $runner_dir (agent_runner_template = $runner_dir)"
say "next: stop this instance and make the AMI (aws ec2 create-image --instance-id <id> --name runpool-...)"
