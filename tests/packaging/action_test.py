#!/usr/bin/python3
"""action.yml: every input reaches runpoolctl as its flag, the outputs are the step's outputs.

The action's YAML is checked (composite; each input only through the step's environment, never
in script text; each output = steps.<id>.outputs.<name>, a name runpoolctl writes), then its step
script is run with a stand-in runpoolctl that records its argv and writes $GITHUB_OUTPUT the way
runpoolctl does; every flag it passes must be one the real runpoolctl's --help lists.

Usage: action_test.py SOURCE_DIR RUNPOOLCTL_BINARY
"""
import os
import re
import subprocess
import sys
import tempfile

import yaml

SRC, CTL = sys.argv[1], sys.argv[2]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


with open(os.path.join(SRC, "action.yml")) as f:
    action = yaml.safe_load(f)

inputs, outputs, runs = action["inputs"], action["outputs"], action["runs"]
check(runs.get("using") == "composite", "a composite action")
steps = runs["steps"]
check(len(steps) == 1, "one step")
step = steps[0]
env = step.get("env", {})


def env_name(i):
    return "INPUT_" + i.upper().replace("-", "_")


# The workflow's GitHub, from the github context (GHES, GHE.com): runpoolctl's fallback URLs.
JOB_ENV = {"JOB_GITHUB_API_URL": "${{ github.api_url }}", "JOB_GITHUB_SERVER_URL": "${{ github.server_url }}",
           "JOB_CHECK_RUN_ID": "${{ job.check_run_id }}", "JOB_ACTION_REPOSITORY": "${{ github.action_repository }}",
           "JOB_UNTRUSTED_PULL_REQUEST": "${{ github.event.pull_request != null && (github.event.pull_request.head.repo"
                                         ".full_name != github.repository || github.actor == 'dependabot[bot]') }}"}
for name in inputs:
    check(env.get(env_name(name)) == "${{ inputs.%s }}" % name, f"input {name} is not passed as {env_name(name)}")
for name, value in JOB_ENV.items():
    check(env.get(name) == value, f"{name} must be {value}, got {env.get(name)}")
check("${{" not in step["run"], "an expression in the script text could inject shell: pass it through env")
extra = set(env) - {env_name(i) for i in inputs} - set(JOB_ENV)
check(not extra, f"env names no input: {extra}")
check(inputs["command"].get("required") is True, "command is required")
for name in ("command", "count", "min-count", "resource-class", "usage-class", "allowed-instance-types", "label", "timeout", "config"):
    check(name in inputs, f"input {name} (runpoolctl's CLI) is missing")

ctl_sources = "".join(open(p).read() for p in
                      [os.path.join(SRC, "controller", f) for f in os.listdir(os.path.join(SRC, "controller"))]
                      if p.endswith(".cc") and not p.endswith("_test.cc"))
for name, out in outputs.items():
    check(out.get("value") == "${{ steps.%s.outputs.%s }}" % (step["id"], name),
          f"output {name} is not the step's output {name}: {out.get('value')}")
    check('"%s"' % name in ctl_sources, f"runpoolctl writes no step output named {name}")
check({"label", "instance-ids"} <= set(outputs), "outputs label and instance-ids")

# --- The step script with a stand-in runpoolctl ----------------------------------------------------
script = os.path.join(SRC, step["run"].strip("'\"").replace("$GITHUB_ACTION_PATH/", ""))
check(os.path.isfile(script), f"the step runs {script}, which does not exist")
help_text = {c: subprocess.run([CTL, *([c] if c else []), "--help"], capture_output=True, text=True).stdout
             for c in ("", "provision", "release", "refresh", "scale-down", "scale-up", "status", "init")}

with tempfile.TemporaryDirectory() as tmp:
    fake = os.path.join(tmp, "runpoolctl")
    with open(fake, "w") as f:
        f.write('#!/bin/sh\nprintf "%s\\n" "$@" > "$ARGV_FILE"\nenv > "$ARGV_FILE.env"\n'
                'printf "label<<EOF_1\\nthe-label\\nEOF_1\\ninstance-ids<<EOF_2\\ni-1 i-2\\nEOF_2\\n" >> "$GITHUB_OUTPUT"\n')
    os.chmod(fake, 0o755)

    def run(job_env=None, ctl=None, **given):
        argv_file, out_file = os.path.join(tmp, "argv"), os.path.join(tmp, "out")
        for p in (argv_file, out_file, argv_file + ".env"):
            if os.path.exists(p):
                os.remove(p)
        e = {k: v for k, v in os.environ.items()
             if not k.startswith(("INPUT_", "GITHUB_", "RUNPOOL_", "JOB_", "AWS_"))}
        e.update({env_name(k.replace("_", "-")): v for k, v in given.items()})
        e.update(INPUT_RUNPOOLCTL=ctl or fake, ARGV_FILE=argv_file, GITHUB_OUTPUT=out_file)
        e.update(job_env or {})
        p = subprocess.run(["bash", script], env=e, capture_output=True, text=True)
        argv = open(argv_file).read().splitlines() if os.path.exists(argv_file) else None
        outs = open(out_file).read() if os.path.exists(out_file) else ""
        return p.returncode, argv, outs, p.stderr

    def flags_known(argv):
        command = next(a for a in argv if a in help_text and a)
        for i, a in enumerate(argv):
            if a.startswith("--"):
                where = "" if i < argv.index(command) else command
                check(re.search(r"(^|[ ,])%s\b" % re.escape(a), help_text[where], re.M) is not None,
                      f"runpoolctl {where} --help does not list {a}")

    rc, argv, outs, err = run(command="provision", count="3", min_count="2", resource_class="large", usage_class="on-demand",
                              allowed_instance_types="c* m7i.*", label="$(touch /tmp/x)", timeout="12m",
                              config="runpool.conf")
    expected = ["--config", "runpool.conf", "provision", "--count", "3", "--min-count", "2", "--resource-class", "large", "--usage-class",
                "on-demand", "--allowed-instance-types", "c* m7i.*", "--label", "$(touch /tmp/x)", "--timeout", "12m"]
    check(rc == 0 and argv == expected, f"provision: rc {rc}, argv {argv} != {expected} ({err})")
    check("the-label" in outs and "i-1 i-2" in outs, "runpoolctl's step outputs must reach $GITHUB_OUTPUT")
    if argv:
        flags_known(argv)

    rc, argv, _, err = run(command="provision")
    check(rc == 0 and argv == ["provision"], f"provision with defaults: {argv} ({err})")

    # The job's check run id makes the default label unique per job execution; a given label wins.
    rc, argv, _, err = run(command="provision", job_env={"JOB_CHECK_RUN_ID": "51725241954"})
    check(rc == 0 and argv == ["provision", "--check-run-id", "51725241954"], f"provision with a check run id: {argv} ({err})")
    if argv:
        flags_known(argv)
    rc, argv, _, err = run(command="provision", label="mine", job_env={"JOB_CHECK_RUN_ID": "51725241954"})
    check(rc == 0 and argv == ["provision", "--label", "mine"], f"provision with a label: {argv} ({err})")

    rc, argv, _, err = run(command="release", label="ci-1-1-provision", timeout="5m")
    check(rc == 0 and argv == ["release", "--label", "ci-1-1-provision", "--timeout", "5m"], f"release: {argv} ({err})")
    if argv:
        flags_known(argv)

    rc, argv, _, err = run(command="scale-up", resource_class="small", timeout="8m")
    check(rc == 0 and argv == ["scale-up", "--resource-class", "small", "--timeout", "8m"], f"scale-up: {argv} ({err})")
    if argv:
        flags_known(argv)

    for command in ("refresh", "scale-down", "status", "init"):
        rc, argv, _, err = run(command=command, config="c.conf")
        check(rc == 0 and argv == ["--config", "c.conf", command], f"{command}: {argv} ({err})")

    # The workflow's GitHub reaches runpoolctl as its fallback GITHUB_* URLs, never as settings.
    job = {"JOB_GITHUB_API_URL": "https://ghes.example.com/api/v3", "JOB_GITHUB_SERVER_URL": "https://ghes.example.com"}
    rc, argv, _, err = run(job_env=job, command="status")
    seen = dict(line.split("=", 1) for line in open(os.path.join(tmp, "argv.env")).read().splitlines() if "=" in line)
    check(rc == 0 and seen.get("GITHUB_API_URL") == job["JOB_GITHUB_API_URL"]
          and seen.get("GITHUB_SERVER_URL") == job["JOB_GITHUB_SERVER_URL"],
          f"runpoolctl must see the job's GITHUB_API_URL / GITHUB_SERVER_URL: {seen.get('GITHUB_API_URL')} ({err})")
    check(not any(k.startswith(("RUNPOOL_GITHUB_", "JOB_GITHUB_")) for k in seen),
          f"the job's URLs must not become settings: {[k for k in seen if 'GITHUB' in k]}")

    # With the real runpoolctl: a configured URL beats the job's, which serve only when none is
    # configured. A malformed job URL shows which one runpoolctl took (its settings are read first).
    bad = {"JOB_GITHUB_API_URL": "not-a-url", "JOB_GITHUB_SERVER_URL": ""}
    conf = os.path.join(tmp, "runpool.conf")
    for configured, expect_job in (("", True), ("github_api_url = https://ghes.example.com/api/v3\n", False),
                                   ("github_server_url = https://octo.ghe.com\n", False)):
        with open(conf, "w") as f:
            f.write(configured)
        rc, _, _, err = run(job_env=bad, ctl=CTL, command="provision", config=conf)
        check(rc != 0, f"provision without AWS must fail ({configured!r})")
        check(("GITHUB_API_URL" in err) == expect_job,
              f"configured {configured!r}: the job's URL was {'not ' if expect_job else ''}used: {err.strip()}")

    # A fork's or Dependabot's pull request: a clear refusal, runpoolctl never run; any other run goes on.
    for command in ("provision", "release", "status"):
        rc, argv, _, err = run(job_env={"JOB_UNTRUSTED_PULL_REQUEST": "true"}, command=command, label="l")
        check(rc == 2 and argv is None and "pull request from a fork or from Dependabot" in err,
              f"{command} for a fork's pull request: exit {rc}, runpoolctl ran with {argv} ({err.strip()})")
    rc, argv, _, err = run(job_env={"JOB_UNTRUSTED_PULL_REQUEST": "false"}, command="status")
    check(rc == 0 and argv == ["status"], f"a pull request from this repository runs: {argv} ({err})")
    seen = open(os.path.join(tmp, "argv.env")).read()
    check("JOB_UNTRUSTED_PULL_REQUEST" not in seen, "the guard's variable does not reach runpoolctl")

    for given, why in ((dict(command="release"), "release without a label"),
                       (dict(command="refresh", count="2"), "an input the command does not take"),
                       (dict(command="release", label="l", resource_class="x"), "release with a resource class"),
                       (dict(command="scale-down", resource_class="x"), "scale-down with a resource class"),
                       (dict(command="scale-up", count="3"), "scale-up with a count"),
                       (dict(command="release", label="l", min_count="1"), "release with a minimum count"),
                       (dict(command="terminate-everything"), "an unknown command"),
                       (dict(command=""), "no command")):
        rc, argv, _, _ = run(**given)
        check(rc == 2 and argv is None, f"{why}: exit {rc}, runpoolctl ran with {argv}")

for f in failures:
    print("FAIL:", f)
if not failures:
    print("action_test: OK")
sys.exit(1 if failures else 0)
