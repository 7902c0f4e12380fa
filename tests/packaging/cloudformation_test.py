#!/usr/bin/python3
"""packaging/cloudformation/runpool.yaml creates what runpoolctl expects, as it expects it.

The table's key schema and index, the queues' names and attributes and the launch template's tags
are compared with the constants in the code; the roles' policies with packaging/iam's JSON
documents (placeholders ↔ Fn::Sub); every Ref, GetAtt and ${…} names something that exists.
YAML (not JSON) because CloudFormation templates are read and reviewed by people, and YAML keeps
comments; the short-form intrinsics (!Ref, !Sub…) are read as their long forms.

Usage: cloudformation_test.py SOURCE_DIR [TEMPLATE]
"""
import json
import os
import re
import sys

import yaml

SRC = sys.argv[1]
TEMPLATE = sys.argv[2] if len(sys.argv) > 2 else os.path.join(SRC, "packaging", "cloudformation", "runpool.yaml")
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


class Loader(yaml.SafeLoader):
    pass


def intrinsic(loader, suffix, node):
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    if suffix == "Ref":
        return {"Ref": value}
    if suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {"Fn::" + suffix: value}


Loader.add_multi_constructor("!", intrinsic)
with open(TEMPLATE) as f:
    t = yaml.load(f, Loader=Loader)

params, res = t.get("Parameters", {}), t.get("Resources", {})
transforms = t.get("Transform", [])
check("AWS::LanguageExtensions" in (transforms if isinstance(transforms, list) else [transforms]),
      "Fn::ForEach needs Transform: AWS::LanguageExtensions")


def source(path):
    with open(os.path.join(SRC, path)) as f:
        return f.read()


def const(path, name):
    m = re.search(name + r'\s*=\s*"([^"]+)"', source(path))
    check(m is not None, f"{name} not found in {path}")
    return m.group(1) if m else None


by_type = {}
for name, r in res.items():
    if not name.startswith("Fn::ForEach::"):
        by_type.setdefault(r["Type"], []).append((name, r))


def one(rtype):
    found = by_type.get(rtype, [])
    check(len(found) == 1, f"expected one {rtype}, found {len(found)}")
    return found[0][1]["Properties"] if found else {}


# --- The table ---------------------------------------------------------------------------------
table = one("AWS::DynamoDB::Table")
pk = const("common/pool/record_codec.h", "kInstanceId")
label = const("common/pool/record_codec.h", "kLabel")
index = const("common/pool/record_codec.h", "kLabelIndex")
check(table.get("TableName") == {"Ref": "TableName"}, "the table's name must be the TableName parameter")
check(table.get("BillingMode") == "PAY_PER_REQUEST", "the table must be PAY_PER_REQUEST")
check(table.get("KeySchema") == [{"AttributeName": pk, "KeyType": "HASH"}], f"key schema: {table.get('KeySchema')}")
check(sorted((a["AttributeName"], a["AttributeType"]) for a in table.get("AttributeDefinitions", []))
      == sorted([(pk, "S"), (label, "S")]), "attribute definitions: instance_id S, label S")
gsis = table.get("GlobalSecondaryIndexes", [])
check(len(gsis) == 1 and gsis[0].get("IndexName") == index
      and gsis[0].get("KeySchema") == [{"AttributeName": label, "KeyType": "HASH"}]
      and gsis[0].get("Projection") == {"ProjectionType": "ALL"}, f"the {index} index: {gsis}")

# --- The queues: one per class, the names and attributes runpoolctl uses ------------------------
loops = {k: v for k, v in res.items() if k.startswith("Fn::ForEach::")}
check(len(loops) == 1, "one Fn::ForEach creates the pool queues")
for name, (ident, collection, body) in loops.items():
    check(collection == {"Ref": "ResourceClasses"}, f"{name} iterates {collection}, not ResourceClasses")
    check(params.get("ResourceClasses", {}).get("Type") == "CommaDelimitedList", "ResourceClasses must be a list")
    (logical, queue), = body.items()
    check("&{" + ident + "}" in logical, f"{name}: the logical id must carry &{{{ident}}} (class names hold - and _)")
    check(queue["Type"] == "AWS::SQS::Queue", f"{name} creates {queue['Type']}")
    props = queue["Properties"]
    check(props.get("QueueName") == {"Fn::Sub": "${PoolName}-${" + ident + "}"},
          f"queue name {props.get('QueueName')} is not <pool>-<class> (Settings::queue_name)")
    body = re.search(r"pool_queue_attributes\(\) \{(.*?)\n\}", source("controller/sqs_pool_queue.cc"), re.S)
    code = dict(re.findall(r'\{"(\w+)", "(\d+)"\}', body.group(1) if body else ""))
    check(code, "no queue attributes found in controller/sqs_pool_queue.cc")
    for k, v in code.items():
        check(str(props.get(k)) == v, f"queue {k} = {props.get(k)}, runpoolctl init creates it with {v}")
    check(not set(props) - set(code) - {"QueueName"}, f"queue attributes runpoolctl does not set: {set(props) - set(code)}")

# --- The launch template --------------------------------------------------------------------------
lt = one("AWS::EC2::LaunchTemplate")
tag_pool = const("controller/compute.h", "kTagPool")
tag_table = const("controller/compute.h", "kTagTable")
check(lt.get("LaunchTemplateName") == {"Fn::Sub": "runpool-${PoolName}"}, "the template must be runpool-<pool>")
data = lt.get("LaunchTemplateData", {})
meta = data.get("MetadataOptions", {})
check(meta.get("HttpTokens") == "required", "IMDSv2 must be required")
check(meta.get("HttpEndpoint") == "enabled", "IMDS must be enabled (the agent's identity)")
check(meta.get("InstanceMetadataTags") == "enabled", "the agent reads its tags from IMDS")
check(meta.get("HttpPutResponseHopLimit") == 1, "IMDS must not be reachable from a job's containers")
check(data.get("InstanceInitiatedShutdownBehavior") == "terminate", "an OS shutdown must terminate the instance")
check(data.get("IamInstanceProfile") == {"Arn": {"Fn::GetAtt": ["InstanceProfile", "Arn"]}}, "the instance profile")
check("UserData" not in data, "user-data is runpoolctl init's (rendered from the template)")


def tags(specs, rtype):
    return {t["Key"]: t["Value"] for s in specs if s["ResourceType"] == rtype for t in s["Tags"]}


inst_tags = tags(data.get("TagSpecifications", []), "instance")
check(inst_tags.get(tag_pool) == {"Ref": "PoolName"} and inst_tags.get(tag_table) == {"Ref": "TableName"},
      f"instances must carry {tag_pool} and {tag_table}: {inst_tags}")
check(tags(lt.get("TagSpecifications", []), "launch-template").get(tag_pool) == {"Ref": "PoolName"},
      "the template must carry the pool's tag (the controller may change only such templates)")

# --- The metrics log group (docs/observability.md): kept for a while, named in the outputs ------------
logs = one("AWS::Logs::LogGroup")
check(isinstance(logs.get("RetentionInDays"), dict) or isinstance(logs.get("RetentionInDays"), int),
      "the metrics log group needs a retention (else its events are kept forever)")
check(t.get("Outputs", {}).get("MetricsLogGroup", {}).get("Value") == {"Ref": "MetricsLogGroup"},
      "the stack must output the metrics log group (runpoolctl's metrics_log_group)")

# --- Roles and policies: packaging/iam's documents --------------------------------------------------
SUBS = {"${AWS::Partition}": "aws", "${AWS::Region}": "@REGION@", "${AWS::AccountId}": "@ACCOUNT_ID@",
        "${TableName}": "@TABLE@", "${PoolName}": "@POOL@", "${InstanceRole}": "@INSTANCE_ROLE@",
        "${MetricsLogGroup}": "@METRICS_LOG_GROUP@"}


def normal(v):
    if isinstance(v, dict):
        if set(v) == {"Fn::Sub"} and isinstance(v["Fn::Sub"], str):
            s = v["Fn::Sub"]
            for k, r in SUBS.items():
                s = s.replace(k, r)
            return s.replace("${!", "${")
        return {k: normal(x) for k, x in v.items()}
    if isinstance(v, list):
        return [normal(x) for x in v]
    return v


def iam(name):
    with open(os.path.join(SRC, "packaging", "iam", name)) as f:
        return json.load(f)


role = one("AWS::IAM::Role")
check(normal(role.get("AssumeRolePolicyDocument")) == iam("instance-trust-policy.json"), "the instance role's trust")
pols = role.get("Policies", [])
check(len(pols) == 1 and normal(pols[0]["PolicyDocument"]) == iam("instance-policy.json"),
      "the instance role's policy differs from packaging/iam/instance-policy.json")
check(not role.get("ManagedPolicyArns"), "the instance role must have no other policy")
check(one("AWS::IAM::InstanceProfile").get("Roles") == [{"Ref": "InstanceRole"}], "the profile holds the instance role")
check(normal(one("AWS::IAM::ManagedPolicy").get("PolicyDocument")) == iam("controller-policy.json"),
      "the controller policy differs from packaging/iam/controller-policy.json")

# --- Every reference resolves --------------------------------------------------------------------
known = set(params) | set(res) | {"AWS::Partition", "AWS::Region", "AWS::AccountId", "AWS::StackName",
                                  "AWS::NoValue", "ClassName"}


def walk(v):
    if isinstance(v, dict):
        for k, x in v.items():
            if k == "Ref":
                check(x in known, f"Ref to unknown {x}")
            elif k == "Fn::GetAtt":
                check(x[0] in res, f"GetAtt of unknown {x[0]}")
            elif k == "Fn::Sub" and isinstance(x, str):
                for var in re.findall(r"\$\{([^!}][^}]*)\}", x):
                    check(var.split(".")[0] in known, f"${{{var}}} names nothing")
            walk(x)
    elif isinstance(v, list):
        for x in v:
            walk(x)


walk(res)
walk(t.get("Outputs", {}))
for cond in (r.get("Condition") for r in res.values() if isinstance(r, dict) and "Condition" in r):
    check(cond in t.get("Conditions", {}), f"unknown condition {cond}")

for f in failures:
    print("FAIL:", f)
if not failures:
    print("cloudformation_test: OK")
sys.exit(1 if failures else 0)
