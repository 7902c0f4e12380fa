'use strict';
// A recorded request -> the authorisations AWS makes for it: [{ action, resource, context,
// resourcePolicy? }], the action as IAM names it, the resource's ARN, and the request-specific
// condition keys (dynamodb:LeadingKeys, dynamodb:Attributes, aws:RequestTag/…, ec2:ResourceTag/…,
// ec2:InstanceType, ec2:CreateAction, iam:PassedToService…). The caller's keys (aws:userid…) are
// added by context.js. `pool` is the pool whose names the request is evaluated with (names.js).
const { form, tagsOfType, queueName, roleOfProfile, launchTypes, POOL_TAG } = require('./world');

// SQS batch actions are authorised by their single-message permissions.
const SQS_BATCH = { SendMessageBatch: 'SendMessage', DeleteMessageBatch: 'DeleteMessage',
  ChangeMessageVisibilityBatch: 'ChangeMessageVisibility' };
// Actions of no resource (Resource "*").
const WILDCARD = new Set(['ec2:DescribeInstances', 'ec2:DescribeLaunchTemplates', 'ec2:DescribeLaunchTemplateVersions',
  'ec2:DescribeInstanceStatus', 'ec2:DescribeSubnets', 'ec2:DescribeImages', 'ec2:DescribeInstanceTypes',
  'ec2:DescribeSpotPriceHistory', 'ec2:DescribeAvailabilityZones', 'ec2:DescribeTags', 'sqs:ListQueues',
  'dynamodb:ListTables', 'logs:DescribeLogGroups']);

const arn = (w, service, rest, { region = w.region, account = w.accountId } = {}) =>
  `arn:aws:${service}:${region}:${account}:${rest}`;

// ---- DynamoDB ------------------------------------------------------------------------------------

const EXPRESSION_WORDS = new Set(['SET', 'REMOVE', 'ADD', 'DELETE', 'AND', 'OR', 'NOT', 'BETWEEN', 'IN',
  'attribute_exists', 'attribute_not_exists', 'attribute_type', 'begins_with', 'contains', 'size', 'if_not_exists',
  'list_append']);

// The top-level attribute names an expression names: #placeholders through ExpressionAttributeNames,
// and bare names (a path's first element).
function expressionAttributes(expr, names = {}) {
  const out = new Set();
  if (typeof expr !== 'string') return out;
  const re = /(:[A-Za-z0-9_]+)|(#[A-Za-z0-9_]+)|([A-Za-z_][A-Za-z0-9_]*)|(\.[A-Za-z_#][A-Za-z0-9_]*)|(\[\d+\])/g;
  let m;
  while ((m = re.exec(expr))) {
    if (m[1] || m[4] || m[5]) continue; // a value, a nested path element, an index
    if (m[2]) {
      if (!(m[2] in names)) throw new Error(`expression names ${m[2]}, which ExpressionAttributeNames lacks`);
      out.add(names[m[2]]);
    } else if (!EXPRESSION_WORDS.has(m[3]) && !EXPRESSION_WORDS.has(m[3].toUpperCase())) {
      // a function call's name is followed by '('
      if (expr[re.lastIndex] === '(' || /^\s*\(/.test(expr.slice(re.lastIndex))) continue;
      out.add(m[3]);
    }
  }
  return out;
}

function scalar(av) {
  if (!av || typeof av !== 'object') return undefined;
  if ('S' in av) return av.S;
  if ('N' in av) return av.N;
  if ('B' in av) return av.B;
  return JSON.stringify(av);
}

function dynamodbChecks(line, w) {
  const r = line.request;
  const op = line.operation;
  const action = `dynamodb:${op}`;
  const tableArn = (t, index) => arn(w, 'dynamodb', `table/${t}${index ? `/index/${index}` : ''}`);
  const hashKeyOf = (t, key) => {
    const known = w.tables.get(t)?.hashKey;
    if (known) return known;
    const names = Object.keys(key || {});
    if (names.length === 1) return names[0];
    throw new Error(`the partition key of table ${t} is unknown (no CreateTable recorded)`);
  };
  const itemContext = (t, keys, { attributes = new Set(), returnValues, select } = {}) => {
    const ctx = {};
    const leading = [];
    for (const k of keys) {
      const hk = hashKeyOf(t, k);
      if (k[hk] !== undefined) leading.push(scalar(k[hk]));
      for (const a of Object.keys(k)) attributes.add(a);
    }
    if (leading.length) ctx['dynamodb:LeadingKeys'] = [...new Set(leading)];
    const names = r.ExpressionAttributeNames || {};
    for (const e of ['UpdateExpression', 'ConditionExpression', 'ProjectionExpression', 'FilterExpression',
      'KeyConditionExpression']) for (const a of expressionAttributes(r[e], names)) attributes.add(a);
    for (const v of Object.values(names)) attributes.add(v);
    for (const legacy of ['AttributeUpdates', 'Expected']) for (const a of Object.keys(r[legacy] || {})) attributes.add(a);
    for (const a of r.AttributesToGet || []) attributes.add(a);
    if (attributes.size) ctx['dynamodb:Attributes'] = [...attributes];
    if (returnValues) ctx['dynamodb:ReturnValues'] = returnValues;
    if (select) ctx['dynamodb:Select'] = select;
    return ctx;
  };
  switch (op) {
    case 'GetItem': case 'DeleteItem': case 'UpdateItem':
      return [{ action, resource: tableArn(r.TableName), context: itemContext(r.TableName, [r.Key || {}], { returnValues: r.ReturnValues }) }];
    case 'PutItem': {
      const t = r.TableName;
      const hk = hashKeyOf(t, r.Item);
      return [{ action, resource: tableArn(t), context: itemContext(t, [{ [hk]: (r.Item || {})[hk] }],
        { attributes: new Set(Object.keys(r.Item || {})), returnValues: r.ReturnValues }) }];
    }
    case 'BatchGetItem':
      return Object.entries(r.RequestItems || {}).map(([t, spec]) => {
        const attributes = new Set([...expressionAttributes(spec.ProjectionExpression, spec.ExpressionAttributeNames || {}),
          ...Object.values(spec.ExpressionAttributeNames || {}), ...(spec.AttributesToGet || [])]);
        const ctx = itemContext(t, spec.Keys || [], { attributes });
        return { action, resource: tableArn(t), context: ctx };
      });
    case 'BatchWriteItem':
      return Object.entries(r.RequestItems || {}).map(([t, writes]) => {
        const keys = writes.map((x) => x.DeleteRequest?.Key || x.PutRequest?.Item || {});
        return { action, resource: tableArn(t), context: itemContext(t, keys.map((k) => ({ [hashKeyOf(t, k)]: k[hashKeyOf(t, k)] }))) };
      });
    case 'Query': case 'Scan': {
      const ctx = itemContext(r.TableName, [], { select: r.Select });
      if (op === 'Query') {
        // The partition key's value named by KeyConditionExpression (`#k = :v` or `k = :v`).
        const hk = w.tables.get(r.TableName)?.hashKey;
        const names = r.ExpressionAttributeNames || {};
        const m = /([#A-Za-z_][A-Za-z0-9_]*)\s*=\s*(:[A-Za-z0-9_]+)/.exec(r.KeyConditionExpression || '');
        if (m && !r.IndexName && (names[m[1]] || m[1]) === hk) ctx['dynamodb:LeadingKeys'] = [scalar(r.ExpressionAttributeValues?.[m[2]])];
      }
      return [{ action, resource: tableArn(r.TableName, r.IndexName), context: ctx }];
    }
    case 'ListTables':
      return [{ action, resource: '*', context: {} }];
    default:
      if (!r.TableName) throw new Error(`DynamoDB ${op}: no TableName`);
      return [{ action, resource: tableArn(r.TableName), context: {} }];
  }
}

// ---- SQS -----------------------------------------------------------------------------------------

function sqsChecks(line, w) {
  const r = line.request;
  const action = `sqs:${SQS_BATCH[line.operation] || line.operation}`;
  if (WILDCARD.has(action)) return [{ action, resource: '*', context: {} }];
  const name = ['CreateQueue', 'GetQueueUrl'].includes(line.operation) ? r.QueueName : queueName(line.queueUrl);
  if (!name) throw new Error(`SQS ${line.operation}: no queue named`);
  const q = w.queues.get(name);
  const check = { action, resource: arn(w, 'sqs', name), context: {} };
  if (q?.policy) check.resourcePolicy = JSON.parse(q.policy);
  if (!q && line.operation !== 'CreateQueue') {
    // No queue, so no queue policy: AWS decides by the identity policies alone (AccessDenied where
    // they grant nothing, before QueueDoesNotExist could be answered).
    check.note = 'this queue was never created in the recording: there is no queue policy to admit the caller';
  }
  return [check];
}

// ---- EC2 -----------------------------------------------------------------------------------------

function requestTagContext(tags) {
  const ctx = {};
  for (const [k, v] of Object.entries(tags)) ctx[`aws:RequestTag/${k}`] = v;
  if (Object.keys(tags).length) ctx['aws:TagKeys'] = Object.keys(tags);
  return ctx;
}

function resourceTagContext(tags) {
  const ctx = {};
  for (const [k, v] of Object.entries(tags || {})) ctx[`ec2:ResourceTag/${k}`] = v;
  return ctx;
}

// What AWS authorises for one launch (RunInstances, or one CreateFleet config): ec2:RunInstances
// on the instance and on each resource the launch names or implies, ec2:CreateTags for each
// resource type tagged at launch (ec2:CreateAction), and iam:PassRole of the profile's role.
function launchChecks(w, { createAction, template, request: f, types, subnets, tagSpecs }) {
  const data = template?.data || {};
  const instanceTags = { ...tagsOfType(data.TagSpecification, 'instance'), ...tagsOfType(tagSpecs, 'instance') };
  const checks = [];
  for (const type of types.length ? types : [null]) {
    const ctx = { ...requestTagContext(instanceTags) };
    if (type) ctx['ec2:InstanceType'] = type;
    checks.push({ action: 'ec2:RunInstances', resource: arn(w, 'ec2', 'instance/*'), context: ctx, part: 'instance' });
  }
  const image = f.ImageId || data.ImageId;
  if (image) checks.push({ action: 'ec2:RunInstances', resource: arn(w, 'ec2', `image/${image}`, { account: '' }), context: {}, part: 'image' });
  for (const s of subnets) checks.push({ action: 'ec2:RunInstances', resource: arn(w, 'ec2', `subnet/${s}`), context: {}, part: 'subnet' });
  for (const sg of [...(f.SecurityGroupId || []), ...(data.SecurityGroupId || [])]) {
    checks.push({ action: 'ec2:RunInstances', resource: arn(w, 'ec2', `security-group/${sg}`), context: {}, part: 'security-group' });
  }
  checks.push({ action: 'ec2:RunInstances', resource: arn(w, 'ec2', 'network-interface/*'), context: {}, part: 'network-interface' });
  checks.push({ action: 'ec2:RunInstances', resource: arn(w, 'ec2', 'volume/*'), context: {}, part: 'volume' });
  if (template) {
    checks.push({ action: 'ec2:RunInstances', resource: arn(w, 'ec2', `launch-template/${template.id || '*'}`),
      context: resourceTagContext(template.tags), part: 'launch-template' });
  }
  const spot = f.InstanceMarketOptions?.MarketType === 'spot' || data.InstanceMarketOptions?.MarketType === 'spot';
  if (spot) checks.push({ action: 'ec2:RunInstances', resource: arn(w, 'ec2', 'spot-instances-request/*'), context: {}, part: 'spot-instances-request' });
  // Tags applied at launch: request tags and the template's, per resource type.
  const specs = [...(data.TagSpecification || []), ...(tagSpecs || [])];
  for (const type of new Set(specs.map((s) => s.ResourceType))) {
    const tags = { ...tagsOfType(data.TagSpecification, type), ...tagsOfType(tagSpecs, type) };
    checks.push({ action: 'ec2:CreateTags', resource: arn(w, 'ec2', `${type}/*`),
      context: { ...requestTagContext(tags), 'ec2:CreateAction': createAction }, part: `tags of ${type}` });
  }
  const role = roleOfProfile(f.IamInstanceProfile) || roleOfProfile(data.IamInstanceProfile);
  if (role) {
    checks.push({ action: 'iam:PassRole', resource: `arn:aws:iam::${w.accountId}:role/${role}`,
      context: { 'iam:PassedToService': 'ec2.amazonaws.com' }, part: 'instance profile role' });
  }
  return checks;
}

function ec2Checks(line, w) {
  const op = line.operation;
  const action = `ec2:${op}`;
  if (WILDCARD.has(action) || op.startsWith('Describe')) return [{ action, resource: '*', context: {} }];
  const f = form(line);
  switch (op) {
    case 'RunInstances': {
      const template = f.LaunchTemplate ? w.templateOf(f.LaunchTemplate) : null;
      return launchChecks(w, { createAction: 'RunInstances', template, request: f, types: launchTypes(op, f, template),
        subnets: f.SubnetId ? [f.SubnetId] : [], tagSpecs: f.TagSpecification });
    }
    case 'CreateFleet': {
      const fleetTags = tagsOfType(f.TagSpecification, 'fleet');
      const checks = [{ action, resource: arn(w, 'ec2', 'fleet/*'), context: requestTagContext(fleetTags), part: 'fleet' }];
      for (const c of f.LaunchTemplateConfigs || []) {
        const template = w.templateOf(c.LaunchTemplateSpecification);
        const types = launchTypes(op, { LaunchTemplateConfigs: [c] }, template);
        const subnets = [...new Set((c.Overrides || []).map((o) => o.SubnetId).filter(Boolean))];
        checks.push(...launchChecks(w, { createAction: 'CreateFleet', template, request: {}, types, subnets, tagSpecs: f.TagSpecification }));
      }
      return checks;
    }
    case 'CreateLaunchTemplate': {
      const tags = tagsOfType(f.TagSpecification, 'launch-template');
      const checks = [{ action, resource: arn(w, 'ec2', 'launch-template/*'), context: requestTagContext(tags) }];
      if (Object.keys(tags).length) {
        checks.push({ action: 'ec2:CreateTags', resource: arn(w, 'ec2', 'launch-template/*'),
          context: { ...requestTagContext(tags), 'ec2:CreateAction': op }, part: 'tags of launch-template' });
      }
      return checks;
    }
    case 'CreateLaunchTemplateVersion': case 'ModifyLaunchTemplate': case 'DeleteLaunchTemplate':
    case 'DeleteLaunchTemplateVersions': {
      const t = w.templateOf({ LaunchTemplateId: f.LaunchTemplateId, LaunchTemplateName: f.LaunchTemplateName });
      if (t.unknown) throw new Error(`${op}: launch template ${f.LaunchTemplateId || f.LaunchTemplateName} was not created in this recording`);
      return [{ action, resource: arn(w, 'ec2', `launch-template/${t.id}`), context: resourceTagContext(t.tags) }];
    }
    case 'TerminateInstances': case 'StopInstances': case 'StartInstances': case 'RebootInstances':
    case 'ModifyInstanceAttribute': case 'ModifyInstanceMetadataOptions':
      return (f.InstanceId ? [].concat(f.InstanceId) : []).map((id) => {
        const info = line.instances?.[id] || w.instances.get(id) || null;
        const ctx = { ...resourceTagContext(info?.tags), 'ec2:InstanceID': id };
        if (info?.type) ctx['ec2:InstanceType'] = info.type;
        return { action, resource: arn(w, 'ec2', `instance/${id}`), context: ctx, unknownResource: !info };
      });
    case 'CreateTags': case 'DeleteTags': {
      const tags = {};
      for (const t of f.Tag || []) tags[t.Key] = t.Value ?? '';
      return [].concat(f.ResourceId || []).map((id) => {
        const type = resourceTypeOfId(id);
        const info = line.instances?.[id] || (type === 'instance' ? w.instances.get(id) : null) || null;
        const ctx = { ...requestTagContext(tags), ...resourceTagContext(info?.tags) };
        return { action, resource: arn(w, 'ec2', `${type}/${id}`), context: ctx };
      });
    }
    default:
      throw new Error(`EC2 ${op}: no IAM mapping (add it to iam/requests.js)`);
  }
}

function resourceTypeOfId(id) {
  const prefixes = { i: 'instance', vol: 'volume', eni: 'network-interface', lt: 'launch-template', fleet: 'fleet',
    sir: 'spot-instances-request', sg: 'security-group', subnet: 'subnet', ami: 'image' };
  const p = String(id).split('-')[0];
  if (!prefixes[p]) throw new Error(`unknown EC2 resource id ${id}`);
  return prefixes[p];
}

// ---- CloudWatch Logs -----------------------------------------------------------------------------

function logsChecks(line, w) {
  const r = line.request;
  const action = `logs:${line.operation}`;
  if (WILDCARD.has(action)) return [{ action, resource: '*', context: {} }];
  if (!r.logGroupName) throw new Error(`Logs ${line.operation}: no logGroupName`);
  const stream = ['PutLogEvents', 'GetLogEvents'].includes(line.operation) && r.logStreamName ? `:log-stream:${r.logStreamName}` : '';
  return [{ action, resource: arn(w, 'logs', `log-group:${r.logGroupName}${stream}`), context: {} }];
}

function checksFor(line, w) {
  switch (line.service) {
    case 'dynamodb': return dynamodbChecks(line, w);
    case 'sqs': return sqsChecks(line, w);
    case 'ec2': return ec2Checks(line, w);
    case 'logs': return logsChecks(line, w);
    default: throw new Error(`no IAM mapping for service ${line.service}`);
  }
}

module.exports = { checksFor, expressionAttributes, SQS_BATCH, POOL_TAG };
