#!/usr/bin/python3
"""actionlint over the project's workflows and every workflow example in the docs.

.github/workflows/*.yml and each ```yaml block of README.md and docs/*.md are copied into a
throw-away project (a .git directory, .github/workflows/, this repository's action.yml at its
root) and checked by actionlint, with shellcheck over their run: scripts. A docs block is a whole
workflow, a workflow without its trigger (`jobs:` only; `on: push` is added) or a list of steps (put
into one job); any other yaml block fails the test. Every use of this action in the docs must pin
it by commit, `uses: <owner>/runpool@<40 hex digits> # v<version>`, and is checked as `uses: ./`,
so actionlint holds its inputs against action.yml. Findings are reported at the docs' own lines.

actionlint is the version tests/actionlint/go.mod pins, which scripts/setup.sh builds into
build-cache/bin.

Usage: actionlint_test.py SOURCE_DIR ACTIONLINT SHELLCHECK
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap

import yaml

SRC, ACTIONLINT, SHELLCHECK = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
failures = []
# Runner labels the examples use that are no GitHub-hosted runner's: a scale set's name.
EXAMPLE_LABELS = ["linux-big"]
PINNED = re.compile(r"^\s*(- )?uses: [A-Za-z0-9_.-]+/runpool@[0-9a-f]{40} # v\d+\.\d+\.\d+\s*$")
RUNPOOL_USES = re.compile(r"^(\s*(?:- )?uses: )[A-Za-z0-9_.<>-]+/runpool@\S+.*$")


def fail(what):
    failures.append(what)


def pinned_version():
    with open(os.path.join(SRC, "tests", "actionlint", "go.mod")) as f:
        m = re.search(r"^\s*github\.com/rhysd/actionlint (v\S+)", f.read(), re.M)
    return m.group(1) if m else None


def doc_blocks(path):
    """(first line number of the block's body, body) of each ```yaml / ```yml block."""
    blocks, body, start = [], None, 0
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if body is None and re.match(r"^\s*```ya?ml\s*$", line):
                body, start = [], n + 1
            elif body is not None and re.match(r"^\s*```\s*$", line):
                blocks.append((start, textwrap.dedent("".join(body))))  # a block in a list item is indented
                body = None
            elif body is not None:
                body.append(line)
    return blocks


def as_workflow(text):
    """(workflow text, lines added before the example's first line) or None: not a workflow."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        return None, f"not YAML: {e}"
    if isinstance(doc, dict) and "jobs" in doc:
        if True in doc or "on" in doc:  # PyYAML reads the key `on` as true
            return (text, 0), None
        return ("on: push\n" + text, 1), None
    if isinstance(doc, list) and doc and all(isinstance(s, dict) for s in doc):
        head = "on: push\njobs:\n  example:\n    runs-on: ubuntu-latest\n    steps:\n"
        return (head + textwrap.indent(textwrap.dedent(text), "      "), head.count("\n")), None
    return None, "neither a workflow, a workflow's jobs nor a list of steps"


version = pinned_version()
have = subprocess.run([ACTIONLINT, "-version"], capture_output=True, text=True) if os.access(ACTIONLINT, os.X_OK) else None
if have is None or have.returncode != 0 or have.stdout.split("\n")[0] != version:
    got = "missing" if have is None else have.stdout.split("\n")[0] or have.stderr.strip()
    print(f"FAIL: {ACTIONLINT} is {got}, tests/actionlint/go.mod pins {version}: "
          "scripts/setup.sh builds it (with Go 1.25 or newer)")
    sys.exit(1)

with tempfile.TemporaryDirectory() as tmp:
    os.makedirs(os.path.join(tmp, ".git"))
    wf_dir = os.path.join(tmp, ".github", "workflows")
    os.makedirs(wf_dir)
    shutil.copy(os.path.join(SRC, "action.yml"), os.path.join(tmp, "action.yml"))
    with open(os.path.join(tmp, "actionlint.yaml"), "w") as f:
        yaml.safe_dump({"self-hosted-runner": {"labels": EXAMPLE_LABELS}}, f)

    origin = {}  # file name -> (source path, line of the file's first line, lines added)
    workflows = sorted(glob.glob(os.path.join(SRC, ".github", "workflows", "*.yml"))
                       + glob.glob(os.path.join(SRC, ".github", "workflows", "*.yaml")))
    for name in ("ci.yml", "release.yml"):
        if not os.path.isfile(os.path.join(SRC, ".github", "workflows", name)):
            fail(f".github/workflows/{name} is missing")
    for path in workflows:
        name = "repo--" + os.path.basename(path)
        shutil.copy(path, os.path.join(wf_dir, name))
        origin[name] = (os.path.relpath(path, SRC), 1, 0)

    docs = [os.path.join(SRC, "README.md")] + sorted(glob.glob(os.path.join(SRC, "docs", "*.md")))
    examples = 0
    for doc in docs:
        rel = os.path.relpath(doc, SRC)
        for start, text in doc_blocks(doc):
            made, why = as_workflow(text)
            if made is None:
                fail(f"{rel}:{start}: a yaml block {why}")
                continue
            body, added = made
            lines = []
            for i, line in enumerate(body.split("\n")):
                m = RUNPOOL_USES.match(line)
                if m:
                    if not PINNED.match(line):
                        fail(f"{rel}:{start + i - added}: pin the action by commit, "
                             f"`uses: <owner>/runpool@<40 hex digits> # v<version>`: {line.strip()}")
                    line = m.group(1) + "./"
                lines.append(line)
            name = f"{rel.replace('/', '--')}--L{start}.yml"
            with open(os.path.join(wf_dir, name), "w") as f:
                f.write("\n".join(lines))
            origin[name] = (rel, start, added)
            examples += 1
    if examples < 8:
        fail(f"only {examples} workflow examples found in the docs: the extraction is broken")

    p = subprocess.run([ACTIONLINT, "-no-color", "-config-file", os.path.join(tmp, "actionlint.yaml"),
                        "-shellcheck", SHELLCHECK, "-pyflakes=", *sorted(origin)],
                       cwd=wf_dir, capture_output=True, text=True, timeout=120)
    for line in (p.stdout + p.stderr).splitlines():
        m = re.match(r"^(\S+?):(\d+):(\d+): (.*)$", line)
        if m and m.group(1) in origin:
            rel, start, added = origin[m.group(1)]
            fail(f"{rel}:{start + int(m.group(2)) - 1 - added}:{m.group(3)}: {m.group(4)}")
        elif line.strip() and not re.match(r"^\s*\d*\s*\|", line):  # not a quoted line or its caret
            fail(f"actionlint: {line}")
    if p.returncode not in (0, 1) or (p.returncode == 1 and not failures):
        fail(f"actionlint exited {p.returncode}: {p.stderr.strip()}")
    print(f"actionlint {version}: {len(workflows)} workflows, {examples} examples from the docs")

for f in failures:
    print("FAIL:", f)
if not failures:
    print("actionlint_test: OK")
sys.exit(1 if failures else 0)
