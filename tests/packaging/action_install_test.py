#!/usr/bin/python3
"""action.yml's runpoolctl-version / runpoolctl-url: the step installs a release of runpoolctl.

A release tarball is made here from the built runpoolctl (the layout scripts/release.sh packs:
runpool-<version>-linux-<arch>/bin/runpoolctl) with its SHA256SUMS, served by an HTTP server on
127.0.0.1. The action's step script must download it, verify the checksum, unpack it into
$RUNNER_TOOL_CACHE/runpoolctl/<version>/<arch>, put it on PATH (and $GITHUB_PATH) and run it; a
second step must reuse the cache without a download; a tampered tarball, a tarball SHA256SUMS does
not list and a plain-http URL off this machine must be refused with nothing installed; an explicit
runpoolctl input wins without a download.

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
SCRIPT = os.path.join(SRC, "packaging", "github-action", "run.sh")
ARCH = {"x86_64": "x86_64", "aarch64": "arm64"}[platform.machine()]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


class Handler(http.server.SimpleHTTPRequestHandler):
    requests = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        Handler.requests.append(self.path)
        super().do_GET()


def make_release(root, version, tamper=False, unlisted=False, like=None):
    """root/v<version>/: the tarball and SHA256SUMS; tamper: the tarball changed after SHA256SUMS;
    like: a tarball made before, copied (the built runpoolctl is large: each packing takes seconds)."""
    d = os.path.join(root, "v" + version)
    os.makedirs(d)
    name = f"runpool-{version}-linux-{ARCH}"
    stage = os.path.join(root, "stage-" + version, name)
    os.makedirs(os.path.join(stage, "bin"))
    shutil.copy2(CTL, os.path.join(stage, "bin", "runpoolctl"))
    with open(os.path.join(stage, "LICENSE"), "w") as f:
        f.write("licence\n")
    tarball = os.path.join(d, name + ".tar.gz")
    if like:
        shutil.copyfile(like, tarball)
    else:
        with tarfile.open(tarball, "w:gz", compresslevel=1) as t:
            t.add(stage, arcname=name)
    digest = hashlib.sha256(open(tarball, "rb").read()).hexdigest()
    with open(os.path.join(d, "SHA256SUMS"), "w") as f:
        f.write(f"{'0' * 64}  runpool_{version}_amd64.deb\n")
        if not unlisted:
            f.write(f"{digest}  {name}.tar.gz\n")
    if tamper:  # one more member: still a valid tarball, a different digest
        os.remove(tarball)
        with open(os.path.join(stage, "bin", "extra"), "w") as f:
            f.write("#!/bin/sh\n")
        with tarfile.open(tarball, "w:gz", compresslevel=1) as t:
            t.add(stage, arcname=name)
    return tarball


with tempfile.TemporaryDirectory() as tmp:
    www = os.path.join(tmp, "www")
    os.makedirs(www)
    genuine = make_release(www, "9.9.9")
    make_release(www, "9.9.8", tamper=True, like=genuine)
    make_release(www, "9.9.7", unlisted=True, like=genuine)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=www))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v{{version}}"
    cache = os.path.join(tmp, "toolcache")
    github_path = os.path.join(tmp, "github_path")
    conf = os.path.join(tmp, "no-such-dir", "runpool.conf")

    def run(**inputs):
        e = {k: v for k, v in os.environ.items()
             if not k.startswith(("INPUT_", "GITHUB_", "RUNPOOL_", "JOB_GITHUB_", "AWS_", "RUNNER_"))}
        e = {k: v for k, v in e.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
        e["PATH"] = "/usr/bin:/bin"  # no runpoolctl on it
        e.update(RUNNER_TOOL_CACHE=cache, GITHUB_PATH=github_path, INPUT_COMMAND="status", INPUT_CONFIG=conf)
        e.update({"INPUT_" + k.upper(): v for k, v in inputs.items()})
        before = len(Handler.requests)
        p = subprocess.run(["bash", SCRIPT], env=e, capture_output=True, text=True, timeout=60)
        return p.returncode, p.stderr, Handler.requests[before:]

    def installed(version):
        return os.path.join(cache, "runpoolctl", version, ARCH)

    def leftovers(version):
        d = os.path.join(cache, "runpoolctl", version)
        return [n for n in os.listdir(d) if n.startswith(".install")] if os.path.isdir(d) else []

    # Installed, verified, on PATH, run: the real runpoolctl names the configuration it cannot read.
    rc, err, reqs = run(runpoolctl_version="9.9.9", runpoolctl_url=url)
    d = installed("9.9.9")
    ran = rc not in (0, 126, 127) and conf in err
    check(ran, f"the installed runpoolctl did not run: exit {rc}: {err.strip()}")
    check(sorted(reqs) == sorted(["/v9.9.9/SHA256SUMS", f"/v9.9.9/runpool-9.9.9-linux-{ARCH}.tar.gz"]),
          f"downloads: {reqs}")
    check(os.path.isfile(d + ".complete"), f"{d}.complete marks the finished install")
    check(os.path.isfile(os.path.join(d, "bin", "runpoolctl"))
          and open(os.path.join(d, "bin", "runpoolctl"), "rb").read() == open(CTL, "rb").read(),
          "bin/runpoolctl in the tool cache is the released binary")
    check(os.path.isfile(os.path.join(d, "LICENSE")), "the whole tarball is unpacked")
    check(os.path.exists(github_path) and open(github_path).read().splitlines() == [os.path.join(d, "bin")],
          "the install's bin/ is added to $GITHUB_PATH for the job's later steps")
    check(not leftovers("9.9.9"), f"temporary files left: {leftovers('9.9.9')}")

    # A later step: from the cache, no download.
    rc, err, reqs = run(runpoolctl_version="9.9.9", runpoolctl_url=url)
    check(reqs == [], f"a cached release was downloaded again: {reqs}")
    check("tool cache" in err and conf in err, f"the cached runpoolctl did not run: exit {rc}: {err.strip()}")

    # Tampered: refused, nothing installed, runpoolctl not run.
    rc, err, reqs = run(runpoolctl_version="9.9.8", runpoolctl_url=url)
    check(rc != 0 and "checksum mismatch" in err and conf not in err, f"a tampered tarball: exit {rc}: {err.strip()}")
    check(len(reqs) == 2, f"the tampered release was not downloaded: {reqs}")
    check(not os.path.exists(installed("9.9.8")) and not os.path.exists(installed("9.9.8") + ".complete"),
          "a tampered tarball must leave nothing in the tool cache")
    check(not leftovers("9.9.8"), f"temporary files left: {leftovers('9.9.8')}")
    # ...and not on a second try either (no half-made cache entry).
    rc, err, _ = run(runpoolctl_version="9.9.8", runpoolctl_url=url)
    check(rc != 0 and "checksum mismatch" in err, f"a tampered tarball, second try: exit {rc}: {err.strip()}")

    # A tarball SHA256SUMS does not list: refused.
    rc, err, _ = run(runpoolctl_version="9.9.7", runpoolctl_url=url)
    check(rc != 0 and "lists no SHA-256" in err and not os.path.exists(installed("9.9.7")),
          f"an unlisted tarball: exit {rc}: {err.strip()}")

    # A release that is not there: the download fails, nothing installed.
    rc, err, _ = run(runpoolctl_version="9.9.6", runpoolctl_url=url)
    check(rc != 0 and "could not download" in err and not os.path.exists(installed("9.9.6")),
          f"a missing release: exit {rc}: {err.strip()}")

    # Plain http off this machine, and a version that is a path: refused before any download.
    for given, why in ((dict(runpoolctl_version="9.9.9", runpoolctl_url="http://example.com/v{version}"), "https://"),
                       (dict(runpoolctl_version="../9.9.9", runpoolctl_url=url), "is not a version")):
        cache_before = sorted(os.listdir(os.path.join(cache, "runpoolctl")))
        rc, err, reqs = run(**given)
        check(rc != 0 and why in err and reqs == [], f"{given}: exit {rc}, downloads {reqs}: {err.strip()}")
        check(sorted(os.listdir(os.path.join(cache, "runpoolctl"))) == cache_before, f"{given}: the cache changed")

    # An explicit runpoolctl wins: no download.
    rc, err, reqs = run(runpoolctl=CTL, runpoolctl_version="9.9.5", runpoolctl_url=url)
    check(reqs == [] and conf in err and not os.path.exists(installed("9.9.5")),
          f"the runpoolctl input must win over runpoolctl-version: downloads {reqs}: {err.strip()}")

    # runpoolctl-url alone is a mistake, not ignored.
    rc, err, reqs = run(runpoolctl_url=url)
    check(rc == 2 and "runpoolctl-version" in err and reqs == [], f"runpoolctl-url alone: exit {rc}: {err.strip()}")

    server.shutdown()

for f in failures:
    print("FAIL:", f)
if not failures:
    print("action_install_test: OK")
sys.exit(1 if failures else 0)
