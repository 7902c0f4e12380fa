#!/usr/bin/python3
"""The IAM policies of packaging/iam: least privilege, checked against the design and the code.

- The instance role reaches only its own record (dynamodb:LeadingKeys = the instance's id), writes
  only the agent's attributes (docs/design.md's table, writer "agent", plus the tokens it removes),
  and terminates only itself; nothing of SQS, launching or IAM.
- The controller may do every AWS operation runpool's clients issue (read from common/aws/*.cc) and
  nothing else; what it changes is scoped to the pool's tags, table and queues.

Usage: iam_test.py SOURCE_DIR [IAM_DIR]   (IAM_DIR defaults to SOURCE_DIR/packaging/iam)
"""
import glob
import json
import os
import re
import sys

SRC = sys.argv[1]
IAM = sys.argv[2] if len(sys.argv) > 2 else os.path.join(SRC, "packaging", "iam")
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def load(name):
    with open(os.path.join(IAM, name)) as f:
        doc = json.load(f)
    check(doc.get("Version") == "2012-10-17", f"{name}: Version must be 2012-10-17")
    for st in doc["Statement"]:
        for key in ("Action", "Resource"):
            if isinstance(st.get(key), str):
                st[key] = [st[key]]
    return doc


def actions(doc):
    return {a for st in doc["Statement"] if st["Effect"] == "Allow" for a in st["Action"]}


def as_list(v):
    return v if isinstance(v, list) else [v]


instance = load("instance-policy.json")
controller = load("controller-policy.json")
trust = load("instance-trust-policy.json")

# No policy grants a wildcard action, and none uses NotAction / NotResource (which invert scope).
for name, doc in (("instance", instance), ("controller", controller)):
    for st in doc["Statement"]:
        check("NotAction" not in st and "NotResource" not in st, f"{name} {st.get('Sid')}: NotAction/NotResource")
        for a in st["Action"]:
            check("*" not in a, f"{name} {st.get('Sid')}: wildcard action {a}")
        check(st["Effect"] == "Allow", f"{name} {st.get('Sid')}: only Allow statements are expected")
    check("aws:ARN" not in json.dumps(doc), f"{name}: aws:ARN is not a documented condition key (it never matches)")

# --- The instance role --------------------------------------------------------------------------
check(actions(instance) == {"dynamodb:GetItem", "dynamodb:UpdateItem", "ec2:TerminateInstances"},
      f"instance role actions: {sorted(actions(instance))}")
for a in actions(instance):
    check(not a.startswith(("sqs:", "iam:", "sts:")), f"instance role has {a}")
check("ec2:RunInstances" not in actions(instance) and "ec2:CreateFleet" not in actions(instance),
      "the instance role can launch")

# The agent's attributes, from docs/design.md's state table: writer "agent", plus the tokens the
# agent removes, the key and the generation its writes are conditional on.
design = open(os.path.join(SRC, "docs", "design.md")).read()
agent_attrs, controller_only = set(), set()
for m in re.finditer(r"^\| (`[^|]+`) \| [A-Z, ]+ \| ([^|]+) \|", design, re.M):
    names = set(re.findall(r"`([a-z_]+)`", m.group(1)))
    writer = m.group(2).strip()
    if writer == "agent" or "agent removes" in writer:
        agent_attrs |= names
    else:
        controller_only |= names
check({"heartbeat", "signal", "signal_generation", "signal_detail", "runner_id", "runner_name", "busy",
       "agent_version", "pre_run", "pre_run_detail", "reg_token", "remove_token"} <= agent_attrs,
      f"docs/design.md's agent attributes were not all found: {sorted(agent_attrs)}")
expected_write = agent_attrs | {"instance_id", "generation"}

table_arn = "arn:aws:dynamodb:@REGION@:@ACCOUNT_ID@:table/@TABLE@"
for st in instance["Statement"]:
    sid = st.get("Sid")
    if any(a.startswith("dynamodb:") for a in st["Action"]):
        check(st["Resource"] == [table_arn], f"instance {sid}: resource must be the table only, not {st['Resource']}")
        cond = st.get("Condition", {})
        fav = cond.get("ForAllValues:StringEquals", {})
        check(as_list(fav.get("dynamodb:LeadingKeys")) == ["${ec2:InstanceID}"],
              f"instance {sid}: no dynamodb:LeadingKeys = ${{ec2:InstanceID}} condition")
        # ForAllValues is true on an empty set: require the key to be present.
        check(cond.get("Null", {}).get("dynamodb:LeadingKeys") == "false",
              f"instance {sid}: LeadingKeys must be required (Null = false)")
        if "dynamodb:UpdateItem" in st["Action"]:
            attrs = set(as_list(fav.get("dynamodb:Attributes", [])))
            check(attrs == expected_write,
                  f"instance {sid}: dynamodb:Attributes {sorted(attrs)} != {sorted(expected_write)}")
            leaked = attrs & (controller_only - {"instance_id", "generation"})
            check(not leaked, f"instance {sid}: the agent may write controller attributes {sorted(leaked)}")
            check(as_list(cond.get("StringEqualsIfExists", {}).get("dynamodb:ReturnValues")) == ["NONE"],
                  f"instance {sid}: ReturnValues must be limited to NONE")
    if "ec2:TerminateInstances" in st["Action"]:
        check(st["Resource"] == ["arn:aws:ec2:@REGION@:@ACCOUNT_ID@:instance/${ec2:InstanceID}"],
              f"instance {sid}: TerminateInstances must name only the instance itself, not {st['Resource']}")
        src = st.get("Condition", {}).get("ArnLike", {}).get("ec2:SourceInstanceARN", "")
        check(src.endswith(":instance/${ec2:InstanceID}"),
              f"instance {sid}: the request must come from the instance itself (ec2:SourceInstanceARN)")

check([s["Principal"] for s in trust["Statement"]] == [{"Service": "ec2.amazonaws.com"}],
      "the instance role must be assumable by EC2 only")

# --- The controller ---------------------------------------------------------------------------
# Every operation runpool's AWS clients issue, from the code.
ops = set()
for path in glob.glob(os.path.join(SRC, "common", "aws", "*.cc")):
    if path.endswith("_test.cc"):
        continue
    text = open(path).read()
    base = os.path.basename(path)
    if base.startswith("dynamodb"):
        ops |= {"dynamodb:" + o for o in re.findall(r'\b(?:call|write)\("([A-Z][A-Za-z]+)"', text)}
    elif base.startswith("sqs"):
        ops |= {"sqs:" + o for o in re.findall(r'\bcall\("([A-Z][A-Za-z]+)"', text)}
    elif base.startswith("ec2"):
        ops |= {"ec2:" + o for o in re.findall(r'\bEc2Form \w+\("([A-Z][A-Za-z]+)"', text)}
    elif base.startswith("cloudwatch_logs"):
        ops |= {"logs:" + o for o in re.findall(r'\bcall\("([A-Z][A-Za-z]+)"', text)}
check(len(ops) >= 15, f"too few operations found in common/aws: {sorted(ops)}")
# Operations the clients offer that runpoolctl never calls (tests and tooling only).
# The metrics log group is the operator's (CloudFormation creates it, with its retention).
not_for_runpoolctl = {"sqs:DeleteQueue", "dynamodb:DeleteTable", "ec2:DeleteTags", "logs:CreateLogGroup"}
missing = ops - not_for_runpoolctl - actions(controller)
check(not missing, f"the controller policy lacks operations the code issues: {sorted(missing)}")
# CreateFleet launches through RunInstances (checked on the caller), and needs the role passed.
extra = actions(controller) - ops - {"ec2:RunInstances", "iam:PassRole", "iam:CreateServiceLinkedRole"}
check(not extra, f"the controller policy grants operations the code never issues: {sorted(extra)}")

star_ok = {"ec2:DescribeInstances", "ec2:DescribeLaunchTemplates", "ec2:DescribeLaunchTemplateVersions",
           "ec2:CreateFleet", "iam:CreateServiceLinkedRole"}
for st in controller["Statement"]:
    sid = st.get("Sid")
    if "*" in st["Resource"]:
        check(set(st["Action"]) <= star_ok, f"controller {sid}: Resource * for {st['Action']}")
    cond = st.get("Condition", {})
    if "ec2:TerminateInstances" in st["Action"]:
        check(cond.get("StringEquals", {}).get("ec2:ResourceTag/runpool:pool") == "@POOL@",
              f"controller {sid}: TerminateInstances must be limited to the pool's tagged instances")
    if "ec2:RunInstances" in st["Action"] and any(":instance/" in r for r in st["Resource"]):
        check(cond.get("StringEquals", {}).get("aws:RequestTag/runpool:pool") == "@POOL@",
              f"controller {sid}: instances must be launched with the pool's tag")
    if "ec2:CreateTags" in st["Action"]:
        check("ec2:CreateAction" in cond.get("StringEquals", {}), f"controller {sid}: CreateTags only at creation")
    if "iam:PassRole" in st["Action"]:
        check(all(r.endswith(":role/@INSTANCE_ROLE@") for r in st["Resource"]),
              f"controller {sid}: PassRole must name the instance role only")
        check(cond.get("StringEquals", {}).get("iam:PassedToService") == "ec2.amazonaws.com",
              f"controller {sid}: PassRole only to EC2")
    if "iam:CreateServiceLinkedRole" in st["Action"]:
        check("iam:AWSServiceName" in cond.get("StringEquals", {}), f"controller {sid}: any service-linked role")
    for r in st["Resource"]:
        if r.startswith("arn:aws:sqs:"):
            check(r.endswith(":@POOL@-*"), f"controller {sid}: queues beyond the pool's: {r}")
        if r.startswith("arn:aws:logs:"):
            check(r.split(":log-group:", 1)[-1] in ("@METRICS_LOG_GROUP@", "@METRICS_LOG_GROUP@:log-stream:*"),
                  f"controller {sid}: log groups beyond the metrics group: {r}")
        if r.startswith("arn:aws:dynamodb:"):
            check(r in (table_arn, table_arn + "/index/by_label"), f"controller {sid}: tables beyond the pool's: {r}")

for f in failures:
    print("FAIL:", f)
if not failures:
    print(f"iam_test: OK ({len(ops)} operations in the code, agent attributes {sorted(expected_write)})")
sys.exit(1 if failures else 0)
