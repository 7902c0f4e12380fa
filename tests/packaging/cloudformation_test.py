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
    if suffix in ("Ref", "Condition"):
        return {suffix: value}
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
# The pool's template (the other, ServeLaunchTemplate, is the serve hosts').
check(sorted(n for n, _ in by_type.get("AWS::EC2::LaunchTemplate", [])) == ["LaunchTemplate", "ServeLaunchTemplate"],
      "launch templates: the pool's LaunchTemplate and the serve hosts' ServeLaunchTemplate")
lt = res.get("LaunchTemplate", {}).get("Properties", {})
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

# --- Roles and policies: packaging/iam's documents, statement by statement ----------------------------
# The JSON documents' placeholders are the template's Fn::Sub variables; IAM's own variables
# (${aws:userid}, ${ec2:InstanceID}) are escaped in an Fn::Sub string as ${!…} and plain elsewhere.
# A list placeholder: the InstanceTypes parameter is the list @INSTANCE_TYPES@ expands to.
LISTS = {"InstanceTypes": ["@INSTANCE_TYPES@"]}
# @POOL_QUEUE_ARNS@ (one queue ARN per resource class): CloudFormation cannot map a list, so the
# template fills SLOTS slots with the classes (the list padded with empty names), each slot under a
# condition that it holds a class.
SLOTS = 8
PADDED = {"Fn::Split": [",", {"Fn::Join": ["", [{"Fn::Join": [",", {"Ref": "ResourceClasses"}]}, "," * (SLOTS - 1)]]}]}
QUEUE_ARN = "arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:${PoolName}-${Class}"


def slot_arn(i):
    return {"Fn::Sub": [QUEUE_ARN, {"Class": {"Fn::Select": [i, PADDED]}}]}


QUEUE_SLOTS = [slot_arn(0)] + [{"Fn::If": [f"Class{i + 1}", slot_arn(i), {"Ref": "AWS::NoValue"}]}
                               for i in range(1, SLOTS)]
SUBS = {"${AWS::Partition}": "@PARTITION@", "${AWS::Region}": "@REGION@", "${AWS::AccountId}": "@ACCOUNT_ID@",
        "${TableName}": "@TABLE@", "${PoolName}": "@POOL@", "${InstanceRole}": "@INSTANCE_ROLE@",
        "${MetricsLogGroup}": "@METRICS_LOG_GROUP@"}


def normal(v):
    if isinstance(v, dict):
        if set(v) == {"Ref"} and v["Ref"] in LISTS:
            return LISTS[v["Ref"]]
        if set(v) == {"Fn::Sub"} and isinstance(v["Fn::Sub"], str):
            s = v["Fn::Sub"]
            for k, r in SUBS.items():
                s = s.replace(k, r)
            return s.replace("${!", "${")
        return {k: normal(x) for k, x in v.items()}
    if isinstance(v, list):
        if v[:SLOTS] == QUEUE_SLOTS:
            return ["@POOL_QUEUE_ARNS@"] + [normal(x) for x in v[SLOTS:]]
        return [normal(x) for x in v]
    return v


def iam(name):
    with open(os.path.join(SRC, "packaging", "iam", name)) as f:
        return json.load(f)


def same_policy(what, doc, name):
    """The template's policy document `doc` is packaging/iam/`name` once substituted: the same
    statements in the same order, each equal to its counterpart (a difference names the statement)."""
    want, have = iam(name), normal(doc or {})
    check(have.get("Version") == want.get("Version"), f"{what}: Version {have.get('Version')} != {want.get('Version')}")
    check(set(have) == set(want), f"{what}: document keys {sorted(have)} != {name}'s {sorted(want)}")
    w, h = want.get("Statement", []), have.get("Statement", [])
    check([s.get("Sid") for s in h] == [s.get("Sid") for s in w],
          f"{what}: statements {[s.get('Sid') for s in h]} != {name}'s {[s.get('Sid') for s in w]}")
    for ws, hs in zip(w, h):
        for key in sorted(set(ws) | set(hs)):
            check(hs.get(key) == ws.get(key),
                  f"{what}: statement {ws.get('Sid')}: {key} is {json.dumps(hs.get(key))}, "
                  f"{name} has {json.dumps(ws.get(key))}")
    # What the template substitutes must be all a placeholder: none is left over, and nothing beside
    # the placeholders and IAM's variables is a ${…}.
    text = json.dumps(have)
    check(not re.search(r"\$\{(AWS::|[A-Z])", text), f"{what}: an unsubstituted template variable in {text}")


role = res.get("InstanceRole", {}).get("Properties", {})
check(res.get("InstanceRole", {}).get("Type") == "AWS::IAM::Role", "InstanceRole must be the instance role")
same_policy("the instance role's trust", role.get("AssumeRolePolicyDocument"), "instance-trust-policy.json")
pols = role.get("Policies", [])
check(len(pols) == 1, f"the instance role must have one policy, has {len(pols)}")
for pol in pols[:1]:
    same_policy("the instance role's policy", pol.get("PolicyDocument"), "instance-policy.json")
# One managed policy, and only when the operator asks for it: Session Manager's, for debugging.
managed = role.get("ManagedPolicyArns")
check(managed is None or (isinstance(managed, dict) and "Fn::If" in managed
                          and managed["Fn::If"][0] == "WithSsm"
                          and managed["Fn::If"][2] == {"Ref": "AWS::NoValue"}
                          and managed["Fn::If"][1] == [{"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/AmazonSSMManagedInstanceCore"}]),
      "the instance role may have no other policy than Session Manager's, under EnableSsm")
check(params.get("EnableSsm", {}).get("Default") == "false", "Session Manager access must be off by default")
check(res.get("InstanceProfile", {}).get("Properties", {}).get("Roles") == [{"Ref": "InstanceRole"}],
      "the profile holds the instance role")
same_policy("the controller policy", one("AWS::IAM::ManagedPolicy").get("PolicyDocument"), "controller-policy.json")
# The slots: each class's condition is that its slot holds a name, and the parameter says how many.
for i in range(1, SLOTS):
    check(t.get("Conditions", {}).get(f"Class{i + 1}") == {"Fn::Not": [{"Fn::Equals": [{"Fn::Select": [i, PADDED]}, ""]}]},
          f"condition Class{i + 1}: slot {i} of the padded ResourceClasses holds a class")
check(f"at most {SLOTS}" in params.get("ResourceClasses", {}).get("Description", ""),
      f"ResourceClasses must say it takes at most {SLOTS} classes (the policy's slots)")

# Partitions: no ARN names one (aws-cn and aws-us-gov ARNs differ), and the only service principals are
# the <service>.amazonaws.com names AWS uses in every partition.
def strings(v):
    if isinstance(v, dict):
        for x in v.values():
            yield from strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from strings(x)
    elif isinstance(v, str):
        yield v


for text in strings(res):
    check(not re.search(r"arn:aws(-[a-z-]+)?:", text), f"an ARN with a fixed partition: {text}")
    check(".amazonaws.com.cn" not in text or text == "sts.amazonaws.com.cn",
          f"a China-only name outside the OIDC audience: {text}")

# --- GitHub's OIDC provider and the controller role ------------------------------------------------
GITHUB = "token.actions.githubusercontent.com"
AUDIENCE = {"Fn::If": ["InChina", "sts.amazonaws.com.cn", "sts.amazonaws.com"]}
conds = t.get("Conditions", {})
check(conds.get("InChina") == {"Fn::Equals": [{"Ref": "AWS::Partition"}, "aws-cn"]},
      "InChina: the China partition's STS audience is sts.amazonaws.com.cn")
check(conds.get("MakeOidcProvider") == {"Fn::And": [{"Condition": "MakeControllerRole"},
                                                   {"Fn::Equals": [{"Ref": "GitHubOidcProviderArn"}, ""]}]},
      "the stack creates the OIDC provider only for the controller role and when no GitHubOidcProviderArn is given")
# Workflow jobs are optional (a serve-only stack): the controller role exists when subjects are named.
check(conds.get("MakeControllerRole") == {"Fn::Or": [{"Condition": "SubjectsGiven"},
                                                    {"Fn::Not": [{"Fn::Equals": [{"Ref": "GitHubRepository"}, ""]}]}]},
      "MakeControllerRole: GitHubRepository or ControllerSubjects given")
check(res.get("ControllerRole", {}).get("Condition") == "MakeControllerRole", "the controller role only when jobs are named")
check(params.get("GitHubOidcProviderArn", {}).get("Default") == "", "GitHubOidcProviderArn must be optional")

providers = by_type.get("AWS::IAM::OIDCProvider", [])
check([n for n, _ in providers] == ["GitHubOidcProvider"], f"one OIDC provider, GitHubOidcProvider: {providers}")
for name, r in providers:
    check(r.get("Condition") == "MakeOidcProvider", f"{name} must be optional (Condition: MakeOidcProvider)")
    check(r["Properties"].get("Url") == "https://" + GITHUB, f"{name}: the URL must be GitHub's issuer")
    check(r["Properties"].get("ClientIdList") == [AUDIENCE], f"{name}: the audience must be STS's, per partition")

controller = res.get("ControllerRole", {})
check(controller.get("Type") == "AWS::IAM::Role", "ControllerRole must be a role")
cprops = controller.get("Properties", {})
check(cprops.get("ManagedPolicyArns") == [{"Ref": "ControllerPolicy"}], "the controller role holds the controller policy only")
check(not cprops.get("Policies"), "the controller role has no inline policy")
trust = cprops.get("AssumeRolePolicyDocument", {})
sts = trust.get("Statement", [])
check(trust.get("Version") == "2012-10-17" and len(sts) == 1, "the controller role's trust: one statement")
for st in sts[:1]:
    check(st.get("Effect") == "Allow" and st.get("Action") == "sts:AssumeRoleWithWebIdentity",
          f"the controller role is assumed through OIDC only: {st.get('Action')}")
    check(st.get("Principal") == {"Federated": {"Fn::If": ["MakeOidcProvider", {"Ref": "GitHubOidcProvider"},
                                                           {"Ref": "GitHubOidcProviderArn"}]}},
          f"the controller role trusts GitHub's provider only: {st.get('Principal')}")
    cond = st.get("Condition", {})
    check(set(cond) == {"StringEquals", "StringLike"}, f"the trust's condition operators: {sorted(cond)}")
    check(cond.get("StringEquals") == {GITHUB + ":aud": AUDIENCE}, "the trust must require STS's audience")
    check(cond.get("StringLike") == {GITHUB + ":sub": {"Fn::If": [
        "SubjectsGiven", {"Ref": "ControllerSubjects"},
        [{"Fn::Sub": "repo:${GitHubRepository}:environment:${GitHubEnvironment}"}]]}},
        f"the trust must require a named subject (default: the repository's environment): {cond.get('StringLike')}")
check(conds.get("SubjectsGiven") == {"Fn::Not": [{"Fn::Equals": [{"Fn::Join": ["", {"Ref": "ControllerSubjects"}]}, ""]}]},
      "SubjectsGiven: ControllerSubjects is not empty")

# The parameters admit no subject any GitHub user could match: the owner is never a wildcard.
def allowed(param, value):
    p = params.get(param, {})
    pattern = p.get("AllowedPattern")
    check(pattern is not None, f"{param} needs an AllowedPattern")
    values = value.split(",") if p.get("Type") == "CommaDelimitedList" else [value]
    return pattern is not None and all(re.fullmatch(pattern, v) for v in values)


for param, value, ok in [
        ("GitHubRepository", "", True), ("GitHubRepository", "acme/app", True), ("GitHubRepository", "acme/*", False),
        ("GitHubRepository", "*", False), ("GitHubRepository", "acme/app:ref:refs/heads/main", False),
        ("GitHubEnvironment", "runpool", True), ("GitHubEnvironment", "*", False),
        ("GitHubEnvironment", "x:ref:*", False),
        ("ControllerSubjects", "", True), ("ControllerSubjects", "repo:acme/app:environment:runpool", True),
        ("ControllerSubjects", "repo:acme/app:ref:refs/heads/main,repo:acme/infra:environment:prod", True),
        ("ControllerSubjects", "repo:acme/*:environment:runpool", True),
        ("ControllerSubjects", "repo:*:environment:runpool", False), ("ControllerSubjects", "*", False),
        ("ControllerSubjects", "repo:acme*/app:environment:runpool", False),
        ("ControllerSubjects", "repo:acme/app:environment:runpool,repo:*", False),
        ("InstanceTypes", "c7i.large,m7i.*,c7i.?xlarge", True), ("InstanceTypes", "", False),
        ("InstanceTypes", "c7i.large,", False), ("InstanceTypes", "c7i.large m7i.large", False),
        ("GitHubOidcProviderArn", "", True),
        ("GitHubOidcProviderArn", "arn:aws-cn:iam::123456789012:oidc-provider/" + GITHUB, True),
        ("GitHubOidcProviderArn", "arn:aws:iam::123456789012:oidc-provider/example.com", False),
        # A pool <p>-wake… could own queues named like pool <p>'s wake-up queues (<p>-wake-i-*).
        ("PoolName", "ci", True), ("PoolName", "ci-x", True), ("PoolName", "wake", True),
        ("PoolName", "ci-wakeful", True), ("PoolName", "ci-wake", False), ("PoolName", "ci-wake-i", False),
        ("PoolName", "a-wake-b", False), ("PoolName", "ci/x", False),
        ("ResourceClasses", "small,large", True), ("ResourceClasses", "a b", False),
        ("ServeSubnetIds", "", True), ("ServeSubnetIds", "subnet-0123456789abcdef0,subnet-01234567", True),
        ("ServeSubnetIds", "vpc-01234567", False),
        ("GitHubTokenSecretArn", "", True),
        ("GitHubTokenSecretArn", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:runpool/github-AbCdEf", True),
        ("GitHubTokenSecretArn", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:*", False),
        ("GitHubTokenSecretArn", "arn:aws:ssm:eu-west-1:123456789012:parameter/x", False)]:
    check(allowed(param, value) == ok, f"{param}={value!r} must be {'accepted' if ok else 'rejected'}")
check(params.get("GitHubEnvironment", {}).get("Default") == "runpool", "the default subject is the runpool environment")
# Exactly one of GitHubRepository and ControllerSubjects (CloudFormation Rules, checked at deploy).
assertions = [a.get("Assert") for rule in t.get("Rules", {}).values() for a in rule.get("Assertions", [])]
repo_empty = {"Fn::Equals": [{"Ref": "GitHubRepository"}, ""]}
subjects_empty = {"Fn::EachMemberEquals": [{"Ref": "ControllerSubjects"}, ""]}
check({"Fn::Not": [{"Fn::And": [repo_empty, subjects_empty, {"Fn::Equals": [{"Ref": "ServeHost"}, "none"]}]}]}
      in assertions, "a rule must require GitHubRepository, ControllerSubjects or a serve host")
check({"Fn::Or": [repo_empty, subjects_empty]} in assertions,
      "a rule must forbid GitHubRepository with ControllerSubjects")

# --- The serve host: the controller policy through an instance profile, and its token's secret ------
settings_keys = set(re.findall(r'^\| `([a-z_]+)` \| `RUNPOOL_', source("docs/runpoolctl.md"), re.M))
check(params.get("ServeHost", {}).get("AllowedValues") == ["none", "role", "asg"]
      and params["ServeHost"].get("Default") == "none", "ServeHost: none (default), role or asg")
check(conds.get("MakeServeRole") == {"Fn::Not": [{"Fn::Equals": [{"Ref": "ServeHost"}, "none"]}]}
      and conds.get("MakeServeHosts") == {"Fn::Equals": [{"Ref": "ServeHost"}, "asg"]},
      "MakeServeRole: ServeHost role or asg; MakeServeHosts: asg")
serve = res.get("ServeRole", {})
sprops = serve.get("Properties", {})
check(serve.get("Type") == "AWS::IAM::Role" and serve.get("Condition") == "MakeServeRole", "ServeRole under MakeServeRole")
check(sprops.get("ManagedPolicyArns") == [{"Ref": "ControllerPolicy"}],
      "the serve role holds the controller policy itself (the one managed policy), nothing else managed")
sts = sprops.get("AssumeRolePolicyDocument", {}).get("Statement", [])
check([(x.get("Effect"), x.get("Principal"), x.get("Action"), x.get("Condition")) for x in sts]
      == [("Allow", {"Service": "ec2.amazonaws.com"}, "sts:AssumeRole", None)], "the serve role is assumed by EC2 only")
check(sprops.get("Policies") == {"Fn::If": ["TokenSecretGiven", [{
    "PolicyName": "runpool-serve-github-token", "PolicyDocument": {"Version": "2012-10-17", "Statement": [{
        "Sid": "ReadServesGitHubToken", "Effect": "Allow", "Action": ["secretsmanager:GetSecretValue"],
        "Resource": {"Ref": "GitHubTokenSecretArn"}}]}}], {"Ref": "AWS::NoValue"}]},
      "the serve role's own policy: reading the one secret named, nothing else")
check(res.get("ServeInstanceProfile", {}).get("Properties", {}).get("Roles") == [{"Ref": "ServeRole"}]
      and res.get("ServeInstanceProfile", {}).get("Condition") == "MakeServeRole", "the serve profile holds the serve role")
slt = res.get("ServeLaunchTemplate", {})
sdata = slt.get("Properties", {}).get("LaunchTemplateData", {})
check(slt.get("Condition") == "MakeServeHosts", "the serve hosts' template under MakeServeHosts")
check(sdata.get("IamInstanceProfile") == {"Arn": {"Fn::GetAtt": ["ServeInstanceProfile", "Arn"]}}, "the serve hosts' profile")
check(sdata.get("MetadataOptions", {}).get("HttpTokens") == "required", "the serve hosts require IMDSv2")
user_data = sdata.get("UserData", {}).get("Fn::Base64", {}).get("Fn::Sub", "")
check(isinstance(user_data, str) and "${GitHubTokenSecretArn}" in user_data
      and "secretsmanager get-secret-value" in user_data, "the serve hosts read the token from its secret")
check("systemctl enable --now runpoolctl-serve.service runpoolctl-refresh.timer" in user_data,
      "the serve hosts enable serve and the refresh timer")
# The token is read at each start into a root-only runtime file, never passed in user-data.
check("UMask=0077" in user_data and "RuntimeDirectoryMode=0700" in user_data
      and "EnvironmentFile=/run/runpool-secrets/serve.env" in user_data, "the token file is root's only")
# The stack's settings reach serve as runpoolctl's RUNPOOL_<KEY> variables, one per setting it knows.
stack_env = dict(re.findall(r"'RUNPOOL_([A-Z_]+)=([^']*)'", user_data))
check(stack_env == {"TABLE": "${TableName}", "POOL": "${PoolName}", "REGION": "${AWS::Region}",
                    "INSTANCE_PROFILE": "${InstanceProfile}", "INSTANCE_ROLE_ID": "${InstanceRole.RoleId}",
                    "LAUNCH_TEMPLATE": "runpool-${PoolName}", "METRICS_LOG_GROUP": "${MetricsLogGroup}"},
      f"the serve hosts' stack settings: {stack_env}")
for key in stack_env:
    check(key.lower() in settings_keys, f"user-data sets RUNPOOL_{key}, which is no runpoolctl setting")
check("EnvironmentFile=/etc/runpool/stack.env" in user_data, "serve and refresh read the stack's settings")
check(not re.search(r"RUNPOOL_GITHUB_TOKEN=\$\{(?!!)", user_data), "no token in user-data")
for unit in ("runpoolctl-serve.service", "runpoolctl-refresh.service"):
    check(os.path.exists(os.path.join(SRC, "controller", unit)), f"user-data names {unit}, which the package installs")
asg = res.get("ServeHosts", {})
aprops = asg.get("Properties", {})
check(asg.get("Type") == "AWS::AutoScaling::AutoScalingGroup" and asg.get("Condition") == "MakeServeHosts",
      "ServeHosts: an Auto Scaling group under MakeServeHosts")
check(aprops.get("MinSize") == aprops.get("MaxSize") == {"Ref": "ServeInstances"}
      and params.get("ServeInstances", {}).get("AllowedValues") == ["1", "2"], "one serve host, or two (a standby)")
check(aprops.get("LaunchTemplate", {}).get("LaunchTemplateId") == {"Ref": "ServeLaunchTemplate"},
      "the serve hosts start from the serve template")

# --- Outputs: what runpoolctl's settings take ------------------------------------------------------
outputs = t.get("Outputs", {})
for name, value in {"ControllerRoleArn": {"Fn::GetAtt": ["ControllerRole", "Arn"]},
                    "InstanceProfile": {"Ref": "InstanceProfile"},
                    "InstanceRoleId": {"Fn::GetAtt": ["InstanceRole", "RoleId"]},
                    "Table": {"Ref": "TableName"},
                    "MetricsLogGroup": {"Ref": "MetricsLogGroup"},
                    "LaunchTemplateName": {"Fn::Sub": "runpool-${PoolName}"},
                    "ServeInstanceProfile": {"Ref": "ServeInstanceProfile"},
                    "Region": {"Ref": "AWS::Region"}}.items():
    check(outputs.get(name, {}).get("Value") == value, f"output {name} must be {value}: {outputs.get(name)}")
# An output described as "runpoolctl <key>" names one of runpoolctl's settings.
# runpoolctl's keys, from its generated reference (docs/runpoolctl.md, kept equal to `config --reference`).
settings = set(re.findall(r'^\| `([a-z_]+)` \| `RUNPOOL_', source("docs/runpoolctl.md"), re.M))
named = {name: m.group(1) for name, o in outputs.items()
         if (m := re.match(r"runpoolctl ([a-z_]+)\b", o.get("Description", "")))}
check({"table", "instance_profile", "instance_role_id", "metrics_log_group", "launch_template", "region"}
      <= set(named.values()), f"the outputs must name runpoolctl's table, instance_profile, instance_role_id, "
      f"metrics_log_group, launch_template, region: {named}")
# launch_template is a name (runpoolctl refuses an id): the LaunchTemplateName output, never the id.
check(named.get("LaunchTemplateName") == "launch_template" and "LaunchTemplate" not in named,
      "launch_template takes LaunchTemplateName's value, not the template's id (Ref LaunchTemplate)")
# Outputs of optional resources carry their resources' conditions.
for name, o in outputs.items():
    for ref in re.findall(r'"(?:Ref|Fn::GetAtt)": \[?"(\w+)"', json.dumps(o.get("Value"))):
        want = res.get(ref, {}).get("Condition")
        check(want is None or o.get("Condition") in (want, "MakeControllerRole"),
              f"output {name} names {ref} (Condition {want}) without a condition: {o.get('Condition')}")
for name, key in named.items():
    check(key in settings, f"output {name}: runpoolctl has no setting {key}")

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
