#!/usr/bin/python3
"""The IAM policies of packaging/iam: least privilege, checked against the design and the code.

- The instance role reaches only its own record (dynamodb:LeadingKeys = ${aws:userid}, which AWS
  sets to "<role id>:<instance id>" for an instance role's credentials, and which is exactly the key
  the code stores each record under), writes only the agent's attributes (docs/design.md's table,
  writer "agent", plus the tokens it removes), and terminates only itself (ec2:SourceInstanceARN,
  the caller, is the ARN of the instance terminated); nothing of SQS, launching or IAM.
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


def source(path):
    with open(os.path.join(SRC, path)) as f:
        return f.read()


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

# The same list from the code, not a copy: every attribute DynamoStateTable::report (the agent's
# only write) names, through common/pool/record_codec.h's constants; and the agent uses the table
# only through get (GetItem) and report (UpdateItem).
codec = dict(re.findall(r'inline constexpr const char\* (k\w+) = "([a-z_]+)";', source("common/pool/record_codec.h")))
table_cc = source("common/pool/dynamo_state_table.cc")
body = re.search(r"bool DynamoStateTable::report\(.*?\n}\n", table_cc, re.S)
check(body is not None, "DynamoStateTable::report not found in common/pool/dynamo_state_table.cc")
code_write = {codec.get(k, "?" + k) for k in re.findall(r"attr::(k\w+)", body.group(0) if body else "")}
check(code_write == expected_write,
      f"the attributes the agent's report() names {sorted(code_write)} != docs/design.md's {sorted(expected_write)}")
agent_code = "".join(source(os.path.join("agent", f)) for f in sorted(os.listdir(os.path.join(SRC, "agent")))
                     if f.endswith(".cc") and not f.endswith("_test.cc"))
table_methods = set(re.findall(r"virtual [^(]*?\b(\w+)\(", source("common/pool/state_table.h")))
used = {m for m in re.findall(r"\btable\w*(?:\.|->)(\w+)\(", agent_code) if m in table_methods}
check(used and used <= {"get", "report"}, f"the agent calls table methods beyond get and report: {sorted(used)}")
check(not re.search(r"\b(put_item|update_item|delete_item|query|scan|transact\w*|batch\w*)\(", agent_code),
      "the agent calls DynamoDB directly, beside its record's get and report")

# The record key: what `${aws:userid}` is for an instance role's credentials, "<role id>:<instance
# id>". Every read and write of a record goes through DynamoStateTable::key_of, which spells it.
dynamo_cc = source("common/pool/dynamo_state_table.cc")
key_of = re.search(r"aws::Item DynamoStateTable::key_of\(.*?\n}\n", dynamo_cc, re.S)
check(key_of is not None and "record_key(instance_role_id_, instance_id)" in key_of.group(0),
      "DynamoStateTable::key_of must store a record under record_key(instance_role_id_, instance_id)")
check(re.search(r'return std::string\(instance_role_id\) \+ ":" \+ std::string\(instance_id\);',
                source("common/pool/record_key.cc")),
      'record_key must be "<role id>:<instance id>", as ${aws:userid} is for an instance role')
for method in ("get", "report"):
    m = re.search(r"DynamoStateTable::" + method + r"\(.*?\n}\n", dynamo_cc, re.S)
    check(m is not None and "key_of(instance_id)" in m.group(0) and "instance_id}}" not in m.group(0),
          f"DynamoStateTable::{method} (the agent's) must address the record by key_of(instance_id)")

PARTITION = "arn:@PARTITION@:"
table_arn = PARTITION + "dynamodb:@REGION@:@ACCOUNT_ID@:table/@TABLE@"
# TerminateSelf: any instance of the account and region as the resource, but only when the caller's
# instance (ec2:SourceInstanceARN) is the instance terminated: ${ec2:InstanceID} is the EC2
# instance resource's condition key, the id of the instance the request acts on.
any_instance = PARTITION + "ec2:@REGION@:@ACCOUNT_ID@:instance/*"
own_instance = PARTITION + "ec2:@REGION@:@ACCOUNT_ID@:instance/${ec2:InstanceID}"
PLACEHOLDERS = {"@PARTITION@", "@REGION@", "@ACCOUNT_ID@", "@TABLE@", "@POOL@", "@INSTANCE_ROLE@", "@METRICS_LOG_GROUP@"}
# The IAM variable each action's statement may use, and nothing else: AWS resolves ${aws:userid}
# for every request, ${ec2:InstanceID} only where the request acts on an instance.
VARIABLES = {"dynamodb:GetItem": {"${aws:userid}"}, "dynamodb:UpdateItem": {"${aws:userid}"},
             "ec2:TerminateInstances": {"${ec2:InstanceID}"}}


def instance_failures(doc):
    """Every way the instance policy grants more than the agent's own item, fields and self."""
    out = []

    def need(ok, what):
        if not ok:
            out.append(what)

    sts = doc.get("Statement", [])
    need(doc.get("Version") == "2012-10-17", "Version must be 2012-10-17")
    acts = {}
    for st in sts:
        sid = st.get("Sid")
        need(st.get("Effect") == "Allow", f"instance {sid}: only Allow statements are expected")
        need(not {"NotAction", "NotResource", "Principal", "NotPrincipal"} & set(st),
             f"instance {sid}: NotAction/NotResource/Principal widen or misplace the scope")
        a, r = as_list(st.get("Action", [])), as_list(st.get("Resource", []))
        need(len(a) == 1, f"instance {sid}: one action per statement, so each has its own conditions: {a}")
        for x in a:
            acts[x] = acts.get(x, 0) + 1
        # No wildcard but TerminateSelf's resource (which its condition pins to the caller), no
        # variable in a resource, and in a condition only the one the action's statement needs.
        for text in r + [json.dumps(st.get("Condition", {}))] + a:
            if not (a == ["ec2:TerminateInstances"] and text == any_instance):
                need("*" not in text and "?" not in text, f"instance {sid}: a wildcard in {text}")
            left = re.sub(r"@[A-Z_]+@", lambda m: "" if m.group(0) in PLACEHOLDERS else m.group(0), text)
            need(not re.search(r"@[A-Z_]+@", left), f"instance {sid}: unknown placeholder in {text}")
            allowed_vars = set() if text in r else set().union(*(VARIABLES.get(x, set()) for x in a))
            need(set(re.findall(r"\$\{[^}]*\}", text)) <= allowed_vars, f"instance {sid}: a variable in {text}")
        for arn in r:
            need(arn.startswith(PARTITION), f"instance {sid}: {arn} does not start with {PARTITION}")
        cond = st.get("Condition", {})
        if a == ["dynamodb:GetItem"] or a == ["dynamodb:UpdateItem"]:
            need(r == [table_arn], f"instance {sid}: resource must be the table only, not {r}")
            fav = cond.get("ForAllValues:StringEquals", {})
            need(as_list(fav.get("dynamodb:LeadingKeys")) == ["${aws:userid}"],
                 f"instance {sid}: no ForAllValues:StringEquals dynamodb:LeadingKeys = ${{aws:userid}}")
            # ForAllValues is true on an empty set: require the key to be present.
            need(cond.get("Null", {}).get("dynamodb:LeadingKeys") == "false",
                 f"instance {sid}: LeadingKeys must be required (Null = false)")
            allowed_ops = {"ForAllValues:StringEquals", "Null"}
            if a == ["dynamodb:UpdateItem"]:
                allowed_ops.add("StringEqualsIfExists")
                attrs = as_list(fav.get("dynamodb:Attributes", []))
                need(sorted(attrs) == sorted(code_write),
                     f"instance {sid}: dynamodb:Attributes {sorted(attrs)} != what the agent writes {sorted(code_write)}")
                need(as_list(cond.get("StringEqualsIfExists", {}).get("dynamodb:ReturnValues")) == ["NONE"],
                     f"instance {sid}: ReturnValues must be limited to NONE")
                need(set(fav) == {"dynamodb:LeadingKeys", "dynamodb:Attributes"}, f"instance {sid}: keys {sorted(fav)}")
            else:
                need(set(fav) == {"dynamodb:LeadingKeys"}, f"instance {sid}: keys {sorted(fav)}")
            need(set(cond) == allowed_ops, f"instance {sid}: condition operators {sorted(cond)} != {sorted(allowed_ops)}")
        elif a == ["ec2:TerminateInstances"]:
            need(r == [any_instance], f"instance {sid}: TerminateInstances on the account's instances, not {r}")
            need(cond.get("ArnEquals", {}) == {"ec2:SourceInstanceARN": own_instance},
                 f"instance {sid}: the caller's instance (ec2:SourceInstanceARN) must be the instance terminated")
            need(cond.get("StringEquals", {}) == {"ec2:ResourceTag/runpool:pool": "@POOL@"},
                 f"instance {sid}: only an instance tagged for the pool")
            need(set(cond) == {"ArnEquals", "StringEquals"}, f"instance {sid}: condition operators {sorted(cond)}")
    need(acts == {"dynamodb:GetItem": 1, "dynamodb:UpdateItem": 1, "ec2:TerminateInstances": 1},
         f"instance role actions: {acts} (exactly GetItem, UpdateItem, TerminateInstances, once each)")
    need("aws:ARN" not in json.dumps(doc), "aws:ARN is not a documented condition key (it never matches)")
    return out


failures += instance_failures(instance)
leaked = set(code_write) & (controller_only - {"instance_id", "generation"})
check(not leaked, f"the agent writes controller attributes {sorted(leaked)}")

# The checker itself: each weakening of the policy must be caught.
with open(os.path.join(IAM, "instance-policy.json")) as f:
    pristine = json.load(f)


def by_action(doc, action):
    return next(st for st in doc["Statement"] if action in as_list(st["Action"]))


def cond_of(doc, action):
    return by_action(doc, action)["Condition"]


MUTATIONS = {
    "GetItem without LeadingKeys": lambda d: cond_of(d, "dynamodb:GetItem").pop("ForAllValues:StringEquals"),
    "GetItem without the Null guard": lambda d: cond_of(d, "dynamodb:GetItem").pop("Null"),
    "UpdateItem without the Null guard": lambda d: cond_of(d, "dynamodb:UpdateItem").pop("Null"),
    "a Null guard that allows no key": lambda d: cond_of(d, "dynamodb:UpdateItem")["Null"].update(
        {"dynamodb:LeadingKeys": "true"}),
    "ForAnyValue instead of ForAllValues": lambda d: cond_of(d, "dynamodb:UpdateItem").update(
        {"ForAnyValue:StringEquals": cond_of(d, "dynamodb:UpdateItem").pop("ForAllValues:StringEquals")}),
    "another item's key": lambda d: cond_of(d, "dynamodb:GetItem")["ForAllValues:StringEquals"].update(
        {"dynamodb:LeadingKeys": ["i-0123456789abcdef0"]}),
    "any key": lambda d: cond_of(d, "dynamodb:GetItem")["ForAllValues:StringEquals"].update(
        {"dynamodb:LeadingKeys": ["*"]}),
    "any instance of the role": lambda d: cond_of(d, "dynamodb:UpdateItem")["ForAllValues:StringEquals"].update(
        {"dynamodb:LeadingKeys": ["${aws:userid}", "AROAEXAMPLEROLEID0001:*"]}),
    "the instance id as the key (no variable of the caller)": lambda d: cond_of(d, "dynamodb:GetItem")[
        "ForAllValues:StringEquals"].update({"dynamodb:LeadingKeys": ["${ec2:InstanceID}"]}),
    "the role's name as the key": lambda d: cond_of(d, "dynamodb:UpdateItem")["ForAllValues:StringEquals"].update(
        {"dynamodb:LeadingKeys": ["${aws:username}"]}),
    "the state attribute writable": lambda d: cond_of(d, "dynamodb:UpdateItem")["ForAllValues:StringEquals"][
        "dynamodb:Attributes"].append("state"),
    "any attribute writable": lambda d: cond_of(d, "dynamodb:UpdateItem")["ForAllValues:StringEquals"].pop(
        "dynamodb:Attributes"),
    "heartbeat not writable": lambda d: cond_of(d, "dynamodb:UpdateItem")["ForAllValues:StringEquals"][
        "dynamodb:Attributes"].remove("heartbeat"),
    "ReturnValues unlimited": lambda d: cond_of(d, "dynamodb:UpdateItem").pop("StringEqualsIfExists"),
    "ReturnValues ALL_OLD": lambda d: cond_of(d, "dynamodb:UpdateItem")["StringEqualsIfExists"].update(
        {"dynamodb:ReturnValues": ["NONE", "ALL_OLD"]}),
    "every table": lambda d: by_action(d, "dynamodb:GetItem").update(
        {"Resource": "arn:@PARTITION@:dynamodb:@REGION@:@ACCOUNT_ID@:table/*"}),
    "a fixed partition": lambda d: by_action(d, "dynamodb:UpdateItem").update(
        {"Resource": "arn:aws:dynamodb:@REGION@:@ACCOUNT_ID@:table/@TABLE@"}),
    "the index too": lambda d: by_action(d, "dynamodb:GetItem").update(
        {"Resource": [table_arn, table_arn + "/index/by_label"]}),
    "Query beside GetItem": lambda d: by_action(d, "dynamodb:GetItem").update(
        {"Action": ["dynamodb:GetItem", "dynamodb:Query"]}),
    "dynamodb:*": lambda d: by_action(d, "dynamodb:UpdateItem").update({"Action": ["dynamodb:*"]}),
    "a statement for SQS": lambda d: d["Statement"].append(
        {"Sid": "X", "Effect": "Allow", "Action": ["sqs:SendMessage"],
         "Resource": "arn:@PARTITION@:sqs:@REGION@:@ACCOUNT_ID@:@POOL@-x"}),
    "NotAction": lambda d: d["Statement"].append(
        {"Sid": "X", "Effect": "Allow", "NotAction": ["iam:*"], "Resource": "*"}),
    "terminate anything": lambda d: by_action(d, "ec2:TerminateInstances").update({"Resource": "*"}),
    "terminate in any region": lambda d: by_action(d, "ec2:TerminateInstances").update(
        {"Resource": "arn:@PARTITION@:ec2:*:@ACCOUNT_ID@:instance/*"}),
    "terminate without the source-instance condition": lambda d: cond_of(d, "ec2:TerminateInstances").pop("ArnEquals"),
    "the source-instance condition only if present": lambda d: cond_of(d, "ec2:TerminateInstances").update(
        {"ArnEqualsIfExists": cond_of(d, "ec2:TerminateInstances").pop("ArnEquals")}),
    "a source instance other than itself": lambda d: cond_of(d, "ec2:TerminateInstances")["ArnEquals"].update(
        {"ec2:SourceInstanceARN": "arn:@PARTITION@:ec2:@REGION@:@ACCOUNT_ID@:instance/i-*"}),
    "any source instance of the account": lambda d: cond_of(d, "ec2:TerminateInstances").update(
        {"ArnEquals": {"ec2:SourceInstanceARN": "arn:@PARTITION@:ec2:@REGION@:@ACCOUNT_ID@:instance/*"}}),
    "the caller's user id compared with the instance": lambda d: cond_of(d, "ec2:TerminateInstances")[
        "ArnEquals"].update({"ec2:SourceInstanceARN": "arn:@PARTITION@:ec2:@REGION@:@ACCOUNT_ID@:instance/${aws:userid}"}),
    "terminate without the pool's tag": lambda d: cond_of(d, "ec2:TerminateInstances").pop("StringEquals"),
    "another pool's tag": lambda d: cond_of(d, "ec2:TerminateInstances")["StringEquals"].update(
        {"ec2:ResourceTag/runpool:pool": "other"}),
    "the undocumented aws:ARN": lambda d: cond_of(d, "ec2:TerminateInstances")["ArnEquals"].update(
        {"aws:ARN": "${ec2:SourceInstanceARN}"}),
    "GetItem and UpdateItem in one statement": lambda d: d.update({"Statement": [
        dict(by_action(d, "dynamodb:UpdateItem"), Action=["dynamodb:GetItem", "dynamodb:UpdateItem"]),
        by_action(d, "ec2:TerminateInstances")]}),
}
for what, mutate in MUTATIONS.items():
    doc = json.loads(json.dumps(pristine))
    try:
        mutate(doc)
    except (KeyError, StopIteration, ValueError) as e:
        check(False, f"the weakening '{what}' does not apply to instance-policy.json ({type(e).__name__}: {e})")
        continue
    check(instance_failures(doc), f"the checker passes an instance policy with {what}")

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
# SQS's batch actions have no IAM action of their own: SendMessage, DeleteMessage and
# ChangeMessageVisibility grant their batch versions (AWS's SQS developer guide, "batch actions").
SQS_BATCH = {"sqs:SendMessageBatch", "sqs:DeleteMessageBatch", "sqs:ChangeMessageVisibilityBatch"}
ops = {o.removesuffix("Batch") if o in SQS_BATCH else o for o in ops}
# Operations the clients offer that runpoolctl never calls (tests and tooling only).
# The metrics log group is the operator's (CloudFormation creates it, with its retention).
not_for_runpoolctl = {"dynamodb:DeleteTable", "ec2:DeleteTags", "logs:CreateLogGroup"}
missing = ops - not_for_runpoolctl - actions(controller)
check(not missing, f"the controller policy lacks operations the code issues: {sorted(missing)}")
# CreateFleet launches through RunInstances (checked on the caller), and needs the role passed.
extra = actions(controller) - ops - {"ec2:RunInstances", "iam:PassRole", "iam:CreateServiceLinkedRole"}
check(not extra, f"the controller policy grants operations the code never issues: {sorted(extra)}")

sqs_statements = [st for st in controller["Statement"] if any(a.startswith("sqs:") for a in st["Action"])
                  and st["Resource"] != ["*"]]
check([st["Resource"] for st in sqs_statements] ==
      [["@POOL_QUEUE_ARNS@", PARTITION + "sqs:@REGION@:@ACCOUNT_ID@:@POOL@-wake-i-*"]],
      f"the controller's queues: each class's by name and the wake-up queues: {[st['Resource'] for st in sqs_statements]}")
check(re.search(r'wake_queue_prefix\(std::string_view pool\) \{ return std::string\(pool\) \+ "-wake-"; \}',
                source("common/pool/wake_queue.cc")), "wake-up queues are no longer named <pool>-wake-<instance id>")
check(re.search(r'queue_name\(const std::string& resource_class\) const \{ return pool \+ "-" \+ resource_class; \}',
                source("controller/settings.cc")), "pool queues are no longer named <pool>-<class>")

star_ok = {"ec2:DescribeInstances", "ec2:DescribeLaunchTemplates", "ec2:DescribeLaunchTemplateVersions",
           "ec2:CreateFleet", "iam:CreateServiceLinkedRole", "sqs:ListQueues"}
for st in controller["Statement"]:
    sid = st.get("Sid")
    if "*" in st["Resource"]:
        check(set(st["Action"]) <= star_ok, f"controller {sid}: Resource * for {st['Action']}")
    cond = st.get("Condition", {})
    if {"ec2:TerminateInstances", "ec2:StopInstances", "ec2:StartInstances"} & set(st["Action"]):
        check(cond.get("StringEquals", {}).get("ec2:ResourceTag/runpool:pool") == "@POOL@",
              f"controller {sid}: Terminate/Stop/StartInstances must be limited to the pool's tagged instances")
    if "ec2:RunInstances" in st["Action"] and any(":instance/" in r for r in st["Resource"]):
        check(cond.get("StringEquals", {}).get("aws:RequestTag/runpool:pool") == "@POOL@",
              f"controller {sid}: instances must be launched with the pool's tag")
    if "ec2:CreateTags" in st["Action"]:
        # At creation, or afterwards only the runpool:label tag of the pool's own instances.
        relabel = (cond.get("StringEquals", {}).get("ec2:ResourceTag/runpool:pool") == "@POOL@" and
                   cond.get("ForAllValues:StringEquals", {}).get("aws:TagKeys") == ["runpool:label"] and
                   st["Resource"] in ("arn:@PARTITION@:ec2:@REGION@:@ACCOUNT_ID@:instance/*",
                                      ["arn:@PARTITION@:ec2:@REGION@:@ACCOUNT_ID@:instance/*"]))
        check("ec2:CreateAction" in cond.get("StringEquals", {}) or relabel,
              f"controller {sid}: CreateTags only at creation, or of the runpool:label tag of the pool's instances")
    if "iam:PassRole" in st["Action"]:
        check(all(r.endswith(":role/@INSTANCE_ROLE@") for r in st["Resource"]),
              f"controller {sid}: PassRole must name the instance role only")
        check(cond.get("StringEquals", {}).get("iam:PassedToService") == "ec2.amazonaws.com",
              f"controller {sid}: PassRole only to EC2")
    if "iam:CreateServiceLinkedRole" in st["Action"]:
        check("iam:AWSServiceName" in cond.get("StringEquals", {}), f"controller {sid}: any service-linked role")
    for r in st["Resource"]:
        check(r in ("*", "@POOL_QUEUE_ARNS@") or r.startswith(PARTITION), f"controller {sid}: {r} does not start with {PARTITION}")
        # The pool's queues by name (@POOL_QUEUE_ARNS@, one ARN per class) and its wake-up queues
        # (<pool>-wake-<instance id>); a <pool>-* pattern would reach pool <pool>-x's queues too.
        if r.startswith(PARTITION + "sqs:"):
            check(r == PARTITION + "sqs:@REGION@:@ACCOUNT_ID@:@POOL@-wake-i-*",
                  f"controller {sid}: queues beyond the pool's: {r}")
        if r.startswith(PARTITION + "logs:"):
            check(r.split(":log-group:", 1)[-1] in ("@METRICS_LOG_GROUP@", "@METRICS_LOG_GROUP@:log-stream:*"),
                  f"controller {sid}: log groups beyond the metrics group: {r}")
        if r.startswith(PARTITION + "dynamodb:"):
            check(r in (table_arn, table_arn + "/index/by_label"), f"controller {sid}: tables beyond the pool's: {r}")

for f in failures:
    print("FAIL:", f)
if not failures:
    print(f"iam_test: OK ({len(ops)} operations in the code, agent attributes {sorted(code_write)}, "
          f"{len(MUTATIONS)} weakened instance policies caught)")
sys.exit(1 if failures else 0)
