'use strict';
// The policies the IAM tier evaluates requests against, instantiated for one pool's names:
//   - packaging/iam/{controller,instance}-policy.json with the placeholders @PARTITION@, @REGION@,
//     @ACCOUNT_ID@, @TABLE@, @POOL@, @INSTANCE_ROLE@, @METRICS_LOG_GROUP@ replaced, and
//     @INSTANCE_TYPES@ and @POOL_QUEUE_ARNS@ (list elements standing for the pool's instance types
//     and its classes' queue ARNs) expanded;
//   - the same policies as packaging/cloudformation/runpool.yaml creates them: the instance role's
//     inline policies (and managed policies attached to it) and the ControllerPolicy managed
//     policy, with Fn::Sub / !Sub / Ref / Fn::If / Fn::Select / Fn::Split / Fn::Join resolved from
//     the same names (${!x} is a literal ${x});
//   - the serve role of that template (ServeHost role or asg): its managed policies (the
//     ControllerPolicy) and inline ones, for the controller's requests.
// names: { PARTITION, REGION, ACCOUNT_ID, TABLE, POOL, INSTANCE_ROLE, METRICS_LOG_GROUP: string,
//          INSTANCE_TYPES, RESOURCE_CLASSES: [string] }; POOL_QUEUE_ARNS is made from them.
const fs = require('node:fs');
const path = require('node:path');
const YAML = require('yaml');

const SOURCE_DIR = path.resolve(__dirname, '..', '..', '..');
const PLACEHOLDERS = ['PARTITION', 'REGION', 'ACCOUNT_ID', 'TABLE', 'POOL', 'INSTANCE_ROLE', 'METRICS_LOG_GROUP'];
const LIST_PLACEHOLDERS = ['INSTANCE_TYPES', 'POOL_QUEUE_ARNS', 'RESOURCE_CLASSES'];

// The pool queues' ARNs, <pool>-<class> (controller/settings.cc's queue_name), one per class.
function withQueueArns(names) {
  const classes = names.RESOURCE_CLASSES || [];
  return { ...names, POOL_QUEUE_ARNS: classes.map((c) => `arn:${names.PARTITION}:sqs:${names.REGION}:${names.ACCOUNT_ID}:${names.POOL}-${c}`) };
}

function checkNames(names) {
  for (const k of PLACEHOLDERS) {
    if (typeof names[k] !== 'string' || !names[k]) throw new Error(`policy name ${k} is missing`);
  }
  for (const k of LIST_PLACEHOLDERS.filter((x) => x !== 'POOL_QUEUE_ARNS')) {
    if (!Array.isArray(names[k]) || !names[k].length) throw new Error(`policy names ${k} are missing`);
  }
}

// ---- packaging/iam JSON -------------------------------------------------------------------------

const listOf = (v) => /^@([A-Z_]+)@$/.exec(v)?.[1];

function substitute(value, names) {
  if (typeof value === 'string') {
    if (LIST_PLACEHOLDERS.includes(listOf(value))) return [...names[listOf(value)]];
    return value.replace(/@([A-Z_]+)@/g, (m, k) => {
      if (LIST_PLACEHOLDERS.includes(k)) throw new Error(`${m} must be a list element of its own`);
      if (!PLACEHOLDERS.includes(k)) throw new Error(`unknown placeholder ${m}`);
      return names[k];
    });
  }
  if (Array.isArray(value)) {
    return value.flatMap((v) => (typeof v === 'string' && LIST_PLACEHOLDERS.includes(listOf(v)) ? names[listOf(v)] : [substitute(v, names)]));
  }
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [substitute(k, names), substitute(v, names)]));
  }
  return value;
}

function jsonPolicySet({ iamDir = path.join(SOURCE_DIR, 'packaging', 'iam'), controller, instance } = {}) {
  const read = (file, name) => JSON.parse(fs.readFileSync(file || path.join(iamDir, name), 'utf8'));
  const docs = { controller: read(controller, 'controller-policy.json'), instance: read(instance, 'instance-policy.json') };
  return {
    name: 'packaging/iam',
    source: { controller: controller || path.join(iamDir, 'controller-policy.json'),
      instance: instance || path.join(iamDir, 'instance-policy.json') },
    policiesFor(kind, names) {
      checkNames(names);
      return [{ name: `${kind}-policy.json`, policy: substitute(docs[kind], withQueueArns(names)) }];
    },
  };
}

// ---- packaging/cloudformation/runpool.yaml -----------------------------------------------------

// CloudFormation's short forms (!Sub, !Ref, …) as their long forms.
const CFN_TAGS = ['Ref', 'Sub', 'GetAtt', 'Join', 'Select', 'Split', 'If', 'Equals', 'Not', 'And', 'Or', 'FindInMap',
  'Base64', 'Cidr', 'GetAZs', 'ImportValue', 'Condition', 'Transform', 'Length', 'ToJsonString', 'ForEach']
  .flatMap((t) => ['scalar', 'seq', 'map'].map((collection) => ({
    tag: `!${t}`, collection: collection === 'scalar' ? undefined : collection,
    resolve: (value) => {
      const v = value && typeof value.toJSON === 'function' ? value.toJSON() : value;
      if (t === 'Ref' || t === 'Condition') return { [t]: v };
      if (t === 'GetAtt' && typeof v === 'string') return { 'Fn::GetAtt': v.split('.') };
      return { [`Fn::${t}`]: v };
    },
  })));

function loadTemplate(file) {
  return YAML.parse(fs.readFileSync(file, 'utf8'), { customTags: CFN_TAGS, maxAliasCount: -1 });
}

// The value of a Ref or ${Name} inside the template, for the names of one pool.
function refValue(template, name, names) {
  const pseudo = { 'AWS::Partition': names.PARTITION, 'AWS::Region': names.REGION, 'AWS::AccountId': names.ACCOUNT_ID };
  if (name in pseudo) return pseudo[name];
  const res = (template.Resources || {})[name];
  if (res) {
    // Ref of a role is its name; of a log group its name; of a table its name.
    if (res.Type === 'AWS::IAM::Role') return names.INSTANCE_ROLE;
    if (res.Type === 'AWS::Logs::LogGroup') return names.METRICS_LOG_GROUP;
    if (res.Type === 'AWS::DynamoDB::Table') return names.TABLE;
    throw new Error(`runpool.yaml: no value for Ref ${name} (${res.Type}) in a policy`);
  }
  const params = { PoolName: names.POOL, TableName: names.TABLE, InstanceTypes: names.INSTANCE_TYPES,
    AllowedInstanceTypes: names.INSTANCE_TYPES, ResourceClasses: names.RESOURCE_CLASSES,
    GitHubTokenSecretArn: names.TOKEN_SECRET_ARN, 'AWS::NoValue': NO_VALUE };
  if (name in params) return params[name];
  throw new Error(`runpool.yaml: unknown reference ${name} in a policy`);
}

const NO_VALUE = Symbol('AWS::NoValue');

// A condition of the template: the functions CloudFormation allows in conditions, over the names.
function conditionValue(template, c, names) {
  if (typeof c === 'string') return c;
  const [[fn, arg]] = Object.entries(c);
  switch (fn) {
    case 'Condition': return conditionValue(template, (template.Conditions || {})[arg], names);
    case 'Fn::Not': return !conditionValue(template, arg[0], names);
    case 'Fn::And': return arg.every((x) => conditionValue(template, x, names));
    case 'Fn::Or': return arg.some((x) => conditionValue(template, x, names));
    case 'Fn::Equals': {
      const [a, b] = arg.map((x) => resolveCfn(template, x, names));
      return JSON.stringify(a) === JSON.stringify(b);
    }
    default: return resolveCfn(template, c, names);
  }
}

function resolveCfn(template, value, names) {
  if (Array.isArray(value)) return value.map((v) => resolveCfn(template, v, names)).filter((v) => v !== NO_VALUE);
  if (!value || typeof value !== 'object') return value;
  const keys = Object.keys(value);
  if (keys.length === 1 && keys[0] === 'Ref') return refValue(template, value.Ref, names);
  if (keys.length === 1 && keys[0] === 'Fn::If') {
    const [cond, yes, no] = value['Fn::If'];
    if (!(template.Conditions || {})[cond]) throw new Error(`runpool.yaml: Fn::If of unknown condition ${cond}`);
    return resolveCfn(template, conditionValue(template, { Condition: cond }, names) ? yes : no, names);
  }
  if (keys.length === 1 && keys[0] === 'Fn::Join') {
    const [sep, list] = value['Fn::Join'];
    const items = resolveCfn(template, list, names);
    if (!Array.isArray(items)) throw new Error('runpool.yaml: Fn::Join of a non-list');
    return items.join(sep);
  }
  if (keys.length === 1 && keys[0] === 'Fn::Split') {
    const [sep, text] = value['Fn::Split'];
    return String(resolveCfn(template, text, names)).split(sep);
  }
  if (keys.length === 1 && keys[0] === 'Fn::Select') {
    const [i, list] = value['Fn::Select'];
    const items = resolveCfn(template, list, names);
    if (!Array.isArray(items) || Number(i) >= items.length) throw new Error(`runpool.yaml: Fn::Select ${i} out of range`);
    return items[Number(i)];
  }
  if (keys.length === 1 && keys[0] === 'Fn::Sub') {
    let [text, vars] = Array.isArray(value['Fn::Sub']) ? value['Fn::Sub'] : [value['Fn::Sub'], {}];
    vars = resolveCfn(template, vars || {}, names);
    if (typeof text !== 'string') throw new Error('runpool.yaml: Fn::Sub of a non-string');
    return text.replace(/\$\{(!?)([^}]*)\}/g, (m, bang, name) => {
      if (bang) return `\${${name}}`; // ${!x}: the literal ${x}
      if (name in vars) return String(vars[name]);
      if (name.includes('.')) throw new Error(`runpool.yaml: Fn::Sub with GetAtt ${name} in a policy`);
      return refValue(template, name, names);
    });
  }
  if (keys.length === 1 && keys[0].startsWith('Fn::')) throw new Error(`runpool.yaml: ${keys[0]} in a policy is not resolved by the IAM tier`);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveCfn(template, v, names)]));
}

// The template's IAM documents: the instance role (the role whose trust policy names EC2) with its
// inline policies and the managed policies that name it, and ControllerPolicy.
function cfnPolicySet(file = path.join(SOURCE_DIR, 'packaging', 'cloudformation', 'runpool.yaml'), { serve = false } = {}) {
  const template = loadTemplate(file);
  const resources = template.Resources || {};
  const holdsController = (r) => (r.Properties?.ManagedPolicyArns || []).some?.((x) => x && x.Ref === 'ControllerPolicy');
  const ec2Roles = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::IAM::Role' &&
    JSON.stringify(r.Properties?.AssumeRolePolicyDocument || {}).includes('ec2.amazonaws.com'));
  const roles = ec2Roles.filter(([, r]) => !holdsController(r));
  if (roles.length !== 1) throw new Error(`runpool.yaml: expected one instance role, found ${roles.map(([k]) => k)}`);
  const [roleId, role] = roles[0];
  const refsRole = (list) => (list || []).some((x) => x && x.Ref === roleId);
  const instanceDocs = (role.Properties.Policies || []).map((p) => ({ name: `${roleId}/${p.PolicyName}`, doc: p.PolicyDocument }));
  for (const [id, r] of Object.entries(resources)) {
    if (r.Type === 'AWS::IAM::ManagedPolicy' && refsRole(r.Properties?.Roles)) instanceDocs.push({ name: id, doc: r.Properties.PolicyDocument });
  }
  const controller = resources.ControllerPolicy;
  if (!controller || controller.Type !== 'AWS::IAM::ManagedPolicy') throw new Error('runpool.yaml: no ControllerPolicy managed policy');
  if (!instanceDocs.length) throw new Error(`runpool.yaml: the instance role ${roleId} has no policy`);
  const docs = { instance: instanceDocs, controller: [{ name: 'ControllerPolicy', doc: controller.Properties.PolicyDocument }] };
  // The serve role: the EC2-trusted role holding the ControllerPolicy, with its inline policies
  // (an Fn::If on the token secret: evaluated as a stack that names one).
  let serveRole = null;
  if (serve) {
    const found = ec2Roles.find(([, r]) => holdsController(r));
    if (!found) throw new Error('runpool.yaml: no serve role (an EC2-trusted role holding the ControllerPolicy)');
    serveRole = found;
  }
  const policies = (kind, names) => {
    if (kind !== 'controller' || !serveRole) {
      return docs[kind].map(({ name, doc }) => ({ name, policy: resolveCfn(template, doc, names) }));
    }
    const [id, role] = serveRole;
    const managed = (role.Properties.ManagedPolicyArns || []).map((x) => {
      const r = x && resources[x.Ref];
      if (!r || r.Type !== 'AWS::IAM::ManagedPolicy') throw new Error(`runpool.yaml: ${id}'s managed policy ${JSON.stringify(x)}`);
      return { name: `${id}/${x.Ref}`, policy: resolveCfn(template, r.Properties.PolicyDocument, names) };
    });
    const inline = resolveCfn(template, [role.Properties.Policies || []], names)[0] || [];
    return [...managed, ...inline.map((x) => ({ name: `${id}/${x.PolicyName}`, policy: x.PolicyDocument }))];
  };
  return {
    name: serve ? 'cloudformation serve role' : 'cloudformation',
    source: { template: file },
    policiesFor(kind, names) {
      checkNames(names);
      return policies(kind, { TOKEN_SECRET_ARN: SERVE_TOKEN_SECRET(names), ...withQueueArns(names) });
    },
  };
}

// The secret the serve role may read, as a stack given GitHubTokenSecretArn names it.
const SERVE_TOKEN_SECRET = (names) => `arn:${names.PARTITION}:secretsmanager:${names.REGION}:${names.ACCOUNT_ID}:secret:runpool/github-token-AbCdEf`;

module.exports = { jsonPolicySet, cfnPolicySet, substitute, resolveCfn, loadTemplate, PLACEHOLDERS, LIST_PLACEHOLDERS, SOURCE_DIR };
