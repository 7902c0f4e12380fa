#!/usr/bin/python3
"""The action installs runpoolctl: with nothing but `command`, the release it pins, digest-checked.

A release is made here from the built runpoolctl (the layout scripts/release.sh packs:
runpool-<version>-linux-<arch>/bin/runpoolctl, beside the other architecture's tarball and
SHA256SUMS) and served by an HTTP server on 127.0.0.1 at a GitHub release's path,
<server>/<owner>/<repo>/releases/download/v<version>/. The action's files are copied into a
directory of their own, as the runner checks an action out, and packaging/github-action/pin-release.sh
pins the release there, as the release workflow does. Its step script then runs with a PATH that
holds only the programs install.sh says it needs.

Checked: the pinned release is downloaded from the action's repository (github.action_repository,
passed as JOB_ACTION_REPOSITORY), verified against the pinned digest, installed into the tool cache,
put on PATH and $GITHUB_PATH, run (`--version` in the log, then the command), and reused by a later
step; a runner of the other architecture (a uname that says so) gets its own tarball and digest, a
macOS one a clear error; a tarball that is not the pinned one is refused even when the SHA256SUMS beside it agrees;
runpoolctl-sha256 wins over the pin, and a wrong one is refused; a cache entry of other bytes is
replaced; a missing release-pin, a pin that names no release and an unknown repository are clear
errors; runpoolctl-version without a digest falls back to SHA256SUMS with a warning (tampered,
unlisted, missing); plain http off this machine and a version that is a path are refused; an explicit
runpoolctl wins without a download. Nothing is left installed by a refusal.

Usage: action_install_test.py SOURCE_DIR RUNPOOLCTL_BINARY
"""
import functools
import hashlib
import http.server
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading

SRC, CTL = sys.argv[1], sys.argv[2]
ARCH = {"x86_64": "x86_64", "aarch64": "arm64"}[platform.machine()]
OTHER = {"x86_64": "arm64", "arm64": "x86_64"}[ARCH]
REPO = "example-org/runpool"
# What install.sh (and run.sh) may find on PATH: its header lists them.
NEEDED = ["bash", "curl", "sha256sum", "tar", "gzip", "mkdir", "mktemp", "mv", "rm", "uname"]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Handler(http.server.SimpleHTTPRequestHandler):
    requests = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        Handler.requests.append(self.path)
        super().do_GET()


def pack(stage_root, version, arch, extra=None):
    """A tarball of runpool-<version>-linux-<arch>/ (bin/runpoolctl, LICENSE, extra files)."""
    name = f"runpool-{version}-linux-{arch}"
    stage = os.path.join(stage_root, name)
    shutil.rmtree(stage, ignore_errors=True)
    os.makedirs(os.path.join(stage, "bin"))
    if arch == ARCH:
        shutil.copy2(CTL, os.path.join(stage, "bin", "runpoolctl"))
    else:  # the other architecture's: never downloaded here, only hashed
        with open(os.path.join(stage, "bin", "runpoolctl"), "w") as f:
            f.write(f"#!/bin/sh\necho {arch}\n")
        os.chmod(os.path.join(stage, "bin", "runpoolctl"), 0o755)
    with open(os.path.join(stage, "LICENSE"), "w") as f:
        f.write("licence\n")
    for n, text in (extra or {}).items():
        with open(os.path.join(stage, n), "w") as f:
            f.write(text)
    tarball = os.path.join(stage_root, name + ".tar.gz")
    with tarfile.open(tarball, "w:gz", compresslevel=1) as t:
        t.add(stage, arcname=name)
    return tarball


def publish(www, path, files, sums):
    """www/<path>/: files ({name: tarball to copy}) and SHA256SUMS listing sums ({name: digest})."""
    d = os.path.join(www, path)
    os.makedirs(d)
    for name, source in files.items():
        shutil.copyfile(source, os.path.join(d, name))
    with open(os.path.join(d, "SHA256SUMS"), "w") as f:
        f.write("".join(f"{digest}  {name}\n" for name, digest in sums.items()))
    return d


def copy_action(dest, pin=None):
    """The action as the runner checks it out: action.yml and packaging/github-action/."""
    os.makedirs(os.path.join(dest, "packaging", "github-action"))
    shutil.copy(os.path.join(SRC, "action.yml"), dest)
    for n in ("run.sh", "install.sh", "pin-release.sh", "release-pin"):
        shutil.copy2(os.path.join(SRC, "packaging", "github-action", n), os.path.join(dest, "packaging", "github-action", n))
    if pin is not None:
        with open(os.path.join(dest, "packaging", "github-action", "release-pin"), "w") as f:
            f.write(pin)
    return os.path.join(dest, "packaging", "github-action")


with tempfile.TemporaryDirectory() as tmp:
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir)
    for tool in NEEDED:
        found = shutil.which(tool, path="/usr/bin:/bin")
        check(found is not None, f"{tool} is not installed")
        if found:
            os.symlink(found, os.path.join(bindir, tool))

    stage = os.path.join(tmp, "stage")
    os.makedirs(stage)
    genuine = pack(stage, "9.9.9", ARCH)
    other = pack(stage, "9.9.9", OTHER)
    os.makedirs(os.path.join(stage, "evil"))
    evil = pack(os.path.join(stage, "evil"), "9.9.9", ARCH, {"bin/extra": "#!/bin/sh\n"})  # runs, other bytes
    www = os.path.join(tmp, "www")

    def named(version, arch=ARCH):
        return f"runpool-{version}-linux-{arch}.tar.gz"

    deb = {"runpool_9.9.9_amd64.deb": "0" * 64}
    release = publish(www, f"{REPO}/releases/download/v9.9.9", {named("9.9.9"): genuine, named("9.9.9", OTHER): other},
                      {**deb, named("9.9.9"): sha256(genuine), named("9.9.9", OTHER): sha256(other)})
    # A mirror serving other bytes under the pinned release's name, its SHA256SUMS agreeing with them.
    publish(www, "mirror/v9.9.9", {named("9.9.9"): evil}, {named("9.9.9"): sha256(evil)})
    # Releases the pin does not name: SHA256SUMS not matching the tarball; not listing it.
    publish(www, "mirror/v9.9.8", {named("9.9.8"): genuine}, {**deb, named("9.9.8"): sha256(evil)})
    publish(www, "mirror/v9.9.7", {named("9.9.7"): genuine}, {**deb, named("9.9.7", OTHER): sha256(other)})

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=www))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{server.server_address[1]}"
    mirror = origin + "/mirror/v{version}"
    conf = os.path.join(tmp, "no-such-dir", "runpool.conf")
    github_path = os.path.join(tmp, "github_path")

    # The action, pinned to the release by pin-release.sh as the release workflow does.
    action = copy_action(os.path.join(tmp, "action"))
    p = subprocess.run(["bash", os.path.join(action, "pin-release.sh"), "9.9.9", release], capture_output=True, text=True)
    pin_text = open(os.path.join(action, "release-pin")).read()
    check(p.returncode == 0, f"pin-release.sh: exit {p.returncode}: {p.stderr.strip()}")
    for line in ("version=9.9.9", f"sha256_{ARCH}={sha256(genuine)}", f"sha256_{OTHER}={sha256(other)}"):
        check(line in pin_text.splitlines(), f"release-pin lacks {line}: {pin_text}")
    check(pin_text.startswith("#"), "pin-release.sh keeps the file's explanation")
    p = subprocess.run(["bash", os.path.join(action, "pin-release.sh"), "9.9.9", tmp], capture_output=True, text=True)
    check(p.returncode != 0 and "missing" in p.stderr and open(os.path.join(action, "release-pin")).read() == pin_text,
          f"pin-release.sh without the tarballs must fail and keep the pin: {p.stderr.strip()}")

    def fake_uname(system, machine):
        """A PATH like bindir whose uname says another system or machine."""
        d = os.path.join(tmp, f"bin-{system}-{machine}")
        shutil.copytree(bindir, d, symlinks=True)
        os.remove(os.path.join(d, "uname"))
        with open(os.path.join(d, "uname"), "w") as f:
            f.write(f'#!/bin/sh\ncase "$1" in -s) echo {system} ;; -m) echo {machine} ;; esac\n')
        os.chmod(os.path.join(d, "uname"), 0o755)
        return d

    def run(action_dir=action, cache="cache", repository=REPO, path=bindir, **inputs):
        e = {k: v for k, v in os.environ.items()
             if not k.startswith(("INPUT_", "GITHUB_", "RUNPOOL_", "JOB_", "AWS_", "RUNNER_"))}
        e = {k: v for k, v in e.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
        e["PATH"] = path  # nothing else: no runpoolctl, nothing install.sh does not list
        e.update(RUNNER_TOOL_CACHE=os.path.join(tmp, cache), GITHUB_PATH=github_path, GITHUB_SERVER_URL=origin,
                 JOB_ACTION_REPOSITORY=repository, INPUT_COMMAND="status", INPUT_CONFIG=conf)
        e.update({"INPUT_" + k.upper(): v for k, v in inputs.items()})
        before = len(Handler.requests)
        p = subprocess.run([os.path.join(path, "bash"), os.path.join(action_dir, "run.sh")], env=e,
                           capture_output=True, text=True, timeout=60)
        return p.returncode, p.stderr, Handler.requests[before:]

    def installed(version, cache="cache"):
        return os.path.join(tmp, cache, "runpoolctl", version, ARCH)

    def nothing_installed(version, cache="cache"):
        d = os.path.join(tmp, cache, "runpoolctl", version)
        return not os.path.exists(installed(version, cache)) and not os.path.exists(installed(version, cache) + ".complete") \
            and not (os.path.isdir(d) and any(n.startswith(".install") for n in os.listdir(d)))

    def ran(rc, err):  # the real runpoolctl ran: it names the configuration it cannot read
        return rc not in (0, 126, 127) and conf in err

    tarball_path = f"/{REPO}/releases/download/v9.9.9/runpool-9.9.9-linux-{ARCH}.tar.gz"

    # --- Nothing but `command`: the pinned release, from the action's repository ------------------
    rc, err, reqs = run()
    d = installed("9.9.9")
    check(ran(rc, err), f"the pinned runpoolctl did not run: exit {rc}: {err.strip()}")
    check(reqs == [tarball_path], f"downloads: {reqs} (only the tarball: the digest is pinned)")
    check(f"SHA-256 {sha256(genuine)}" in err and "pinned in this action" in err,
          f"the log must say the pinned digest was checked: {err.strip()}")
    said = subprocess.run([CTL, "--version"], capture_output=True, text=True).stdout.strip()
    check(f"runpoolctl --version: {said})" in err, f"the log shows runpoolctl --version ({said}): {err.strip()}")
    check(os.path.isfile(d + ".complete") and open(d + ".complete").read().strip() == sha256(genuine),
          f"{d}.complete holds the tarball's digest")
    check(os.path.isfile(os.path.join(d, "bin", "runpoolctl"))
          and open(os.path.join(d, "bin", "runpoolctl"), "rb").read() == open(CTL, "rb").read(),
          "bin/runpoolctl in the tool cache is the released binary")
    check(os.path.isfile(os.path.join(d, "LICENSE")), "the whole tarball is unpacked")
    check(os.path.exists(github_path) and open(github_path).read().splitlines() == [os.path.join(d, "bin")],
          "the install's bin/ is added to $GITHUB_PATH for the job's later steps")
    check(nothing_installed("9.9.9", "none"), "sanity")

    # A later step: from the cache, no download.
    rc, err, reqs = run()
    check(reqs == [] and "tool cache" in err and ran(rc, err), f"a cached release: downloads {reqs}, exit {rc}: {err.strip()}")

    # The other architecture's runner gets its own tarball, checked against its own pinned digest
    # (that tarball's runpoolctl is a script that prints the architecture); no release for macOS.
    rc, err, reqs = run(cache="c-other", path=fake_uname("Linux", {"x86_64": "x86_64", "arm64": "aarch64"}[OTHER]))
    check(rc == 0 and reqs == [tarball_path.replace(ARCH, OTHER)] and f"SHA-256 {sha256(other)}" in err
          and f"runpoolctl 9.9.9 ({OTHER})" in err, f"an {OTHER} runner: exit {rc}, downloads {reqs}: {err.strip()}")
    rc, err, reqs = run(cache="c-mac", path=fake_uname("Darwin", "arm64"))
    check(rc == 1 and "for Linux" in err and reqs == [], f"a macOS runner: exit {rc}, downloads {reqs}: {err.strip()}")

    # A mirror serving other bytes under the pinned name, its SHA256SUMS agreeing: refused.
    rc, err, reqs = run(cache="c-mirror", runpoolctl_url=mirror)
    check(rc == 1 and "checksum mismatch" in err and "pinned in this action" in err and conf not in err,
          f"a tarball that is not the pinned one: exit {rc}: {err.strip()}")
    check(reqs == ["/mirror/v9.9.9/" + os.path.basename(genuine)], f"downloads: {reqs} (SHA256SUMS is not asked)")
    check(nothing_installed("9.9.9", "c-mirror"), "a refused tarball must leave nothing in the tool cache")

    # runpoolctl-sha256 wins over the pin: the mirror's tarball with its digest installs, replacing
    # the cached install of other bytes; a wrong digest is refused.
    rc, err, reqs = run(runpoolctl_url=mirror, runpoolctl_sha256=f"{OTHER}={'1' * 64} {ARCH}={sha256(evil).upper()}")
    check(ran(rc, err) and "runpoolctl-sha256 input" in err and len(reqs) == 1,
          f"runpoolctl-sha256 for the mirror's tarball: exit {rc}, downloads {reqs}: {err.strip()}")
    check(open(d + ".complete").read().strip() == sha256(evil) and os.path.exists(os.path.join(d, "bin", "extra")),
          "the cached install of other bytes is replaced")
    rc, err, reqs = run(cache="c-wrong", runpoolctl_sha256=sha256(other))
    check(rc == 1 and "checksum mismatch" in err and "runpoolctl-sha256" in err and nothing_installed("9.9.9", "c-wrong"),
          f"a wrong runpoolctl-sha256: exit {rc}: {err.strip()}")
    for given, why in ((f"{OTHER}={sha256(other)}", f"no SHA-256 for {ARCH}"), ("abc", "not a SHA-256"),
                       (f"x86-64={'1' * 64}", "no architecture")):
        rc, err, reqs = run(cache="c-bad", runpoolctl_sha256=given)
        check(rc == 1 and why in err and reqs == [] and nothing_installed("9.9.9", "c-bad"),
              f"runpoolctl-sha256 {given!r}: exit {rc}, downloads {reqs}: {err.strip()}")

    # No release-pin, a pin that names no release, no repository: clear errors, nothing downloaded.
    bare = copy_action(os.path.join(tmp, "bare"))
    os.remove(os.path.join(bare, "release-pin"))
    unreleased = copy_action(os.path.join(tmp, "unreleased"), "version=\nsha256_x86_64=\nsha256_arm64=\n")
    for given, why in ((dict(action_dir=bare), "release-pin is missing"),
                       (dict(action_dir=unreleased), "no release"),
                       (dict(repository=""), "repository is unknown"),
                       (dict(repository="../x"), "not an owner/name"), (dict(repository="o/.."), "not an owner/name")):
        rc, err, reqs = run(cache="c-none", **given)
        check(rc == 1 and why in err and reqs == [] and conf not in err, f"{given}: exit {rc}, downloads {reqs}: {err.strip()}")
        check(not os.path.exists(os.path.join(tmp, "c-none", "runpoolctl")), f"{given}: the cache changed")
    # ...but a pin-less action still installs what runpoolctl-version and runpoolctl-sha256 name.
    rc, err, reqs = run(action_dir=bare, cache="c-bare", runpoolctl_version="9.9.9", runpoolctl_sha256=sha256(genuine))
    check(ran(rc, err) and reqs == [tarball_path], f"a pin-less action with version and digest: exit {rc}, {reqs}: {err.strip()}")

    # --- runpoolctl-version without a digest: the SHA256SUMS beside it, with a warning --------------
    rc, err, reqs = run(cache="c-sums", runpoolctl_version="9.9.9")
    check(ran(rc, err) and "::warning::" not in err and len(reqs) == 1, f"the pinned version named: exit {rc}, {reqs}: {err.strip()}")
    rc, err, reqs = run(cache="c-sums", runpoolctl_version="9.9.8", runpoolctl_url=mirror)
    check(rc == 1 and "checksum mismatch" in err and "SHA256SUMS" in err and "::warning::" in err and len(reqs) == 2,
          f"a tampered tarball: exit {rc}, {reqs}: {err.strip()}")
    check(nothing_installed("9.9.8", "c-sums"), "a tampered tarball must leave nothing in the tool cache")
    rc, err, _ = run(cache="c-sums", runpoolctl_version="9.9.7", runpoolctl_url=mirror)
    check(rc == 1 and "lists no SHA-256" in err and nothing_installed("9.9.7", "c-sums"), f"an unlisted tarball: exit {rc}: {err.strip()}")
    rc, err, _ = run(cache="c-sums", runpoolctl_version="9.9.6", runpoolctl_url=mirror)
    check(rc == 1 and "could not download" in err and nothing_installed("9.9.6", "c-sums"), f"a missing release: exit {rc}: {err.strip()}")

    # Plain http off this machine, and a version that is a path: refused before any download.
    for given, why in ((dict(runpoolctl_url="http://example.com/v{version}"), "https://"),
                       (dict(runpoolctl_version="../9.9.9"), "is not a version")):
        rc, err, reqs = run(cache="c-refused", **given)
        check(rc == 1 and why in err and reqs == [], f"{given}: exit {rc}, downloads {reqs}: {err.strip()}")
        check(not os.path.exists(os.path.join(tmp, "c-refused", "runpoolctl")), f"{given}: the cache changed")

    # An explicit runpoolctl wins: no download.
    rc, err, reqs = run(cache="c-explicit", runpoolctl=CTL, runpoolctl_version="9.9.5")
    check(reqs == [] and conf in err and not os.path.exists(os.path.join(tmp, "c-explicit")),
          f"the runpoolctl input must win: downloads {reqs}: {err.strip()}")

    server.shutdown()

for f in failures:
    print("FAIL:", f)
if not failures:
    print("action_install_test: OK")
sys.exit(1 if failures else 0)
