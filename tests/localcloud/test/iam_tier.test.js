'use strict';
// The IAM tier's evaluator (iam/) on a recording made here: a local cloud started with
// --record-requests, driven through the AWS SDK the way runpoolctl and an agent use it (a table,
// a tagged launch template, two instances launched from it, their records and wake-up queues; one
// agent reading and writing its own record, receiving from its queue and terminating itself).
// With runpool's policies every request is allowed and every forbidden one denied; each of three
// deliberately broken policies makes the evaluator fail, naming the denied request.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { DynamoDBClient, CreateTableCommand, PutItemCommand, GetItemCommand, UpdateItemCommand } = require('@aws-sdk/client-dynamodb');
const { SQSClient, CreateQueueCommand, GetQueueUrlCommand, ReceiveMessageCommand, SendMessageCommand } = require('@aws-sdk/client-sqs');
const { EC2Client, CreateLaunchTemplateCommand, CreateTagsCommand, RunInstancesCommand, TerminateInstancesCommand } = require('@aws-sdk/client-ec2');
const { launchLocalCloud } = require('../lib/launch');
const { readRecording } = require('../iam/world');
const { evaluateRecording } = require('../iam/evaluate');
const { jsonPolicySet, cfnPolicySet, SOURCE_DIR } = require('../iam/policies');

const POOL = 'tier';
const TABLE = 'tier-table';
const TYPES = ['c7i.large', 'm7i.large'];
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iam-tier-test-'));
const recording = path.join(dir, 'requests.jsonl');
const IAM = path.join(SOURCE_DIR, 'packaging', 'iam');
let cloud;

test.after(async () => {
  if (cloud) await cloud.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

// The wake-up queue policy runpoolctl sets (common/pool/wake_queue.cc), and the older one whose
// principal is the account root and which admits no one.
const wakePolicy = (ready, id) => JSON.stringify({ Version: '2012-10-17', Statement: [{
  Sid: 'ItsInstanceOnly', Effect: 'Allow', Principal: { AWS: '*' },
  Action: ['sqs:GetQueueUrl', 'sqs:ReceiveMessage', 'sqs:DeleteMessage'],
  Resource: `arn:aws:sqs:${ready.region}:${ready.accountId}:${POOL}-wake-${id}`,
  Condition: { StringEquals: { 'aws:PrincipalAccount': ready.accountId, 'aws:userid': `${ready.instanceRoleId}:${id}` } } }] });
const oldWakePolicy = (region, account, id) => JSON.stringify({ Version: '2012-10-17', Statement: [{
  Sid: 'ItsInstanceOnly', Effect: 'Allow', Principal: { AWS: `arn:aws:iam::${account}:root` },
  Action: ['sqs:GetQueueUrl', 'sqs:ReceiveMessage', 'sqs:DeleteMessage'],
  Resource: `arn:aws:sqs:${region}:${account}:${POOL}-wake-${id}`,
  Condition: { ArnEquals: { 'ec2:SourceInstanceARN': `arn:aws:ec2:${region}:${account}:instance/${id}` } } }] });

async function record() {
  cloud = await launchLocalCloud({ args: ['--quiet', '--record-requests', recording] });
  const ready = cloud.ready;
  const base = { region: ready.region, credentials: ready.credentials };
  const ddb = new DynamoDBClient({ ...base, endpoint: ready.endpoints.dynamodb });
  const sqs = new SQSClient({ ...base, endpoint: ready.endpoints.sqs });
  const ec2 = new EC2Client({ ...base, endpoint: ready.endpoints.ec2 });
  const tags = [{ Key: 'runpool:pool', Value: POOL }, { Key: 'runpool:table', Value: TABLE }];

  await ddb.send(new CreateTableCommand({ TableName: TABLE, BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [{ AttributeName: 'instance_id', AttributeType: 'S' }, { AttributeName: 'label', AttributeType: 'S' }],
    KeySchema: [{ AttributeName: 'instance_id', KeyType: 'HASH' }],
    GlobalSecondaryIndexes: [{ IndexName: 'by_label', KeySchema: [{ AttributeName: 'label', KeyType: 'HASH' }],
      Projection: { ProjectionType: 'ALL' } }] }));
  const lt = await ec2.send(new CreateLaunchTemplateCommand({ LaunchTemplateName: `runpool-${POOL}`,
    TagSpecifications: [{ ResourceType: 'launch-template', Tags: tags }],
    LaunchTemplateData: { ImageId: 'ami-12345678', InstanceType: TYPES[0], IamInstanceProfile: { Name: 'runpool-agent' },
      TagSpecifications: [{ ResourceType: 'instance', Tags: tags }] } }));
  const run = await ec2.send(new RunInstancesCommand({ MinCount: 2, MaxCount: 2, SubnetId: 'subnet-0a1b2c3d',
    LaunchTemplate: { LaunchTemplateId: lt.LaunchTemplate.LaunchTemplateId },
    TagSpecifications: [{ ResourceType: 'instance', Tags: [{ Key: 'runpool:label', Value: 'tier-run' }] }] }));
  const [a, b] = run.Instances.map((i) => i.InstanceId);
  // The pool queue of class small (runpoolctl init's), and a hint in it.
  const small = (await sqs.send(new CreateQueueCommand({ QueueName: `${POOL}-small`,
    Attributes: { MessageRetentionPeriod: '1209600', VisibilityTimeout: '30' } }))).QueueUrl;
  await sqs.send(new SendMessageCommand({ QueueUrl: small, MessageBody: 'idle' }));
  const queues = {};
  for (const id of [a, b]) {
    await ddb.send(new PutItemCommand({ TableName: TABLE, ConditionExpression: 'attribute_not_exists(#k)',
      ExpressionAttributeNames: { '#k': 'instance_id' },
      Item: { instance_id: { S: `${ready.instanceRoleId}:${id}` }, pool: { S: POOL }, state: { S: 'created' }, generation: { N: '1' } } }));
    queues[id] = (await sqs.send(new CreateQueueCommand({ QueueName: `${POOL}-wake-${id}`,
      Attributes: { Policy: wakePolicy(ready, id), MessageRetentionPeriod: '60' } }))).QueueUrl;
  }
  await sqs.send(new SendMessageCommand({ QueueUrl: queues[a], MessageBody: 'wake' }));

  // Agent A, with the credentials its IMDS hands out.
  const res = await fetch(`${ready.endpoints.control}/_control/credentials/instance`, { method: 'POST',
    headers: { 'content-type': 'application/json' }, body: JSON.stringify({ instanceId: a }) });
  const c = await res.json();
  const creds = { region: ready.region, credentials: { ...c, expiration: new Date(c.expiration) } };
  const key = { instance_id: { S: `${ready.instanceRoleId}:${a}` } };
  const addb = new DynamoDBClient({ ...creds, endpoint: ready.endpoints.dynamodb });
  const asqs = new SQSClient({ ...creds, endpoint: ready.endpoints.sqs });
  const aec2 = new EC2Client({ ...creds, endpoint: ready.endpoints.ec2 });
  await addb.send(new GetItemCommand({ TableName: TABLE, Key: key, ConsistentRead: true }));
  await addb.send(new UpdateItemCommand({ TableName: TABLE, Key: key, ConditionExpression: 'attribute_exists(#k)',
    UpdateExpression: 'SET #h = :h, busy = :b', ExpressionAttributeNames: { '#k': 'instance_id', '#h': 'heartbeat' },
    ExpressionAttributeValues: { ':h': { N: '1' }, ':b': { BOOL: false } } }));
  const { QueueUrl } = await asqs.send(new GetQueueUrlCommand({ QueueName: `${POOL}-wake-${a}` }));
  await asqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 0, MaxNumberOfMessages: 1 }));
  await aec2.send(new TerminateInstancesCommand({ InstanceIds: [a] }));
  // runpoolctl claiming B for another label (its runpool:label tag follows), then retiring it.
  await ec2.send(new CreateTagsCommand({ Resources: [b], Tags: [{ Key: 'runpool:label', Value: 'tier-run-2' }] }));
  await ec2.send(new TerminateInstancesCommand({ InstanceIds: [b] }));
  return { ready, a, b };
}

// The recording's lines once written (each is written when its answer is complete).
async function lines(n) {
  const end = Date.now() + 5000;
  while (Date.now() < end) {
    const got = fs.existsSync(recording) ? readRecording(recording) : [];
    if (got.length >= n) return got;
    await new Promise((r) => setTimeout(r, 50));
  }
  return readRecording(recording);
}

const withPolicy = (file, edit) => {
  const doc = JSON.parse(fs.readFileSync(path.join(IAM, file), 'utf8'));
  edit(doc);
  const out = path.join(dir, `broken-${file}`);
  fs.writeFileSync(out, JSON.stringify(doc));
  return out;
};

const deniedOf = (report, set = 'packaging/iam') => report.sets[set].denied.map((d) => d.request);

function evaluateCli(args) {
  return new Promise((resolve) => {
    execFile(process.execPath, [path.join(__dirname, '..', 'iam', 'evaluate.js'), '--recording', recording,
      '--instance-types', TYPES.join(','), ...args], { timeout: 60_000 }, (err, stdout) => resolve({ code: err ? err.code : 0, stdout }));
  });
}

let recorded;
test('a recording of the controller and an agent is allowed by runpool\'s policies, and the forbidden set denied', async () => {
  recorded = await record();
  const all = await lines(17);
  assert.equal(all.length, 17, `${all.length} lines recorded`);
  const report = await evaluateRecording(all, [jsonPolicySet(), cfnPolicySet(), cfnPolicySet(undefined, { serve: true })],
    { instanceTypes: TYPES });
  assert.deepEqual(Object.keys(report.sets), ['packaging/iam', 'cloudformation', 'cloudformation serve role']);
  for (const [name, s] of Object.entries(report.sets)) {
    assert.deepEqual(s.denied, [], `${name}: ${JSON.stringify(s.denied, null, 1)}`);
    assert.deepEqual(s.byKind, { controller: { allowed: 12, denied: 0 }, instance: { allowed: 5, denied: 0 } });
  }
  assert.deepEqual(report.forbidden.missing, []);
  for (const c of report.forbidden.cases) {
    for (const [set, x] of Object.entries(c.sets)) assert.equal(x.verdict, 'denied', `${c.name} (${set}): ${JSON.stringify(x)}`);
  }
  assert.equal(report.forbidden.cases.length, 25);
  assert.ok(report.forbidden.cases.some((c) => c.name === 'an instance sets its own record\'s spot_rerun'));
  assert.ok(report.forbidden.cases.some((c) => c.name === 'the controller reaches another pool\'s queue whose name starts with this pool\'s name'));
  assert.equal(report.ok, true);
  const cli = await evaluateCli([]);
  assert.equal(cli.code, 0, cli.stdout);
  assert.match(cli.stdout, /IAM tier: OK/);
});

test('an instance policy whose LeadingKeys is ${ec2:InstanceID} denies the agent its own record', async () => {
  const broken = withPolicy('instance-policy.json', (doc) => {
    for (const st of doc.Statement) {
      const fav = st.Condition?.['ForAllValues:StringEquals'];
      if (fav?.['dynamodb:LeadingKeys']) fav['dynamodb:LeadingKeys'] = ['${ec2:InstanceID}'];
    }
  });
  const report = await evaluateRecording(readRecording(recording), [jsonPolicySet({ instance: broken })], { instanceTypes: TYPES });
  const denied = deniedOf(report);
  assert.ok(denied.some((d) => d.includes(`instance:${recorded.a} dynamodb:GetItem`)), denied.join('\n'));
  assert.ok(denied.some((d) => d.includes(`instance:${recorded.a} dynamodb:UpdateItem`)), denied.join('\n'));
  assert.equal(report.ok, false);
  const why = report.sets['packaging/iam'].denied.find((d) => d.request.includes('GetItem')).checks[0].explanation.join('\n');
  assert.match(why, /dynamodb:LeadingKeys/);
  const cli = await evaluateCli(['--policies', 'json', '--instance-policy', broken]);
  assert.equal(cli.code, 1, cli.stdout);
  assert.match(cli.stdout, /IAM tier: FAILED/);
});

test('the old wake-up queue policy (the account root as principal) admits no agent', async () => {
  const { ready, a } = recorded;
  const edited = readRecording(recording).map((l) => {
    if (l.operation !== 'CreateQueue' || !l.request.Attributes?.Policy) return l;
    const id = l.request.QueueName.slice(`${POOL}-wake-`.length);
    return { ...l, request: { ...l.request, Attributes: { ...l.request.Attributes, Policy: oldWakePolicy(ready.region, ready.accountId, id) } } };
  });
  const report = await evaluateRecording(edited, [jsonPolicySet()], { instanceTypes: TYPES });
  const denied = deniedOf(report);
  assert.ok(denied.some((d) => d.includes(`instance:${a} sqs:ReceiveMessage`)), denied.join('\n'));
  assert.ok(denied.some((d) => d.includes(`instance:${a} sqs:GetQueueUrl`)), denied.join('\n'));
  const why = report.sets['packaging/iam'].denied.find((d) => d.request.includes('ReceiveMessage')).checks[0].explanation.join('\n');
  assert.match(why, /names the account as principal/);
  assert.equal(report.ok, false);
});

test('a controller policy without sqs:SendMessage denies runpoolctl\'s wake-ups', async () => {
  const broken = withPolicy('controller-policy.json', (doc) => {
    for (const st of doc.Statement) if (Array.isArray(st.Action)) st.Action = st.Action.filter((x) => x !== 'sqs:SendMessage');
  });
  const report = await evaluateRecording(readRecording(recording), [jsonPolicySet({ controller: broken })], { instanceTypes: TYPES });
  const denied = deniedOf(report);
  assert.ok(denied.some((d) => d.includes('controller sqs:SendMessage')), denied.join('\n'));
  // The wake-up and the pool queue's hint.
  assert.equal(report.sets['packaging/iam'].byKind.controller.denied, 2);
  assert.equal(report.ok, false);
});

test('a controller policy without the instance type condition lets a launch of any type through', async () => {
  const broken = withPolicy('controller-policy.json', (doc) => {
    for (const st of doc.Statement) if (st.Condition?.StringLike?.['ec2:InstanceType']) delete st.Condition.StringLike;
  });
  const report = await evaluateRecording(readRecording(recording), [jsonPolicySet({ controller: broken })], { instanceTypes: TYPES });
  const c = report.forbidden.cases.find((x) => x.name.includes('instance type outside'));
  assert.equal(c.sets['packaging/iam'].verdict, 'ALLOWED');
  assert.equal(report.ok, false);
});

test('a controller policy whose queues are <pool>-* reaches pool <pool>-x\'s queues', async () => {
  const broken = withPolicy('controller-policy.json', (doc) => {
    for (const st of doc.Statement) if (st.Sid === 'PoolQueues') st.Resource = 'arn:@PARTITION@:sqs:@REGION@:@ACCOUNT_ID@:@POOL@-*';
  });
  const report = await evaluateRecording(readRecording(recording), [jsonPolicySet({ controller: broken })], { instanceTypes: TYPES });
  assert.deepEqual(deniedOf(report), []);
  const allowed = report.forbidden.cases.filter((c) => c.sets['packaging/iam'].verdict !== 'denied').map((c) => c.name);
  assert.deepEqual(allowed.sort(), ['the controller reaches another pool\'s queue whose name starts with this pool\'s name',
    'the controller reaches another pool\'s wake-up queue whose name starts with this pool\'s name']);
  assert.equal(report.ok, false);
});
