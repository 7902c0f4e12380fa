'use strict';
// `localcloud.js --record-requests FILE`: one JSON line per signed request, with the caller, the
// decoded request and (SQS) the queue URL; unsigned requests are not recorded; two local clouds
// append to one file, each line naming its cloud.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { DynamoDBClient, CreateTableCommand, GetItemCommand } = require('@aws-sdk/client-dynamodb');
const { SQSClient, CreateQueueCommand, SendMessageCommand } = require('@aws-sdk/client-sqs');
const { EC2Client, DescribeInstancesCommand } = require('@aws-sdk/client-ec2');
const { launchLocalCloud } = require('../lib/launch');
const { decodeRequest, namedInstances, answerIds } = require('../lib/recorder');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'recorder-test-'));
const file = path.join(dir, 'requests.jsonl');
let clouds = [];

test.after(async () => {
  await Promise.all(clouds.map((c) => c.stop()));
  fs.rmSync(dir, { recursive: true, force: true });
});

const lines = () => fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));

async function waitFor(pred, ms = 5000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (pred()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return pred();
}

test('every signed request of two local clouds lands in one file, one line each, naming its cloud', async () => {
  clouds = await Promise.all([0, 1].map(() => launchLocalCloud({ args: ['--record-requests', file] })));
  const [a, b] = clouds.map((c) => c.ready);
  assert.equal(a.accountId, '000000000000');
  const creds = a.credentials;
  const ddb = new DynamoDBClient({ region: a.region, endpoint: a.endpoints.dynamodb, credentials: creds });
  await ddb.send(new CreateTableCommand({ TableName: 'rec-table', BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [{ AttributeName: 'instance_id', AttributeType: 'S' }],
    KeySchema: [{ AttributeName: 'instance_id', KeyType: 'HASH' }] }));
  const res = await fetch(`${a.endpoints.control}/_control/credentials/instance`, { method: 'POST',
    body: JSON.stringify({ instanceId: 'i-0123456789abcdef0' }), headers: { 'content-type': 'application/json' } });
  const inst = await res.json();
  const asInstance = new DynamoDBClient({ region: a.region, endpoint: a.endpoints.dynamodb,
    credentials: { ...inst, expiration: new Date(inst.expiration) } });
  await asInstance.send(new GetItemCommand({ TableName: 'rec-table', Key: { instance_id: { S: 'x' } },
    ProjectionExpression: '#h', ExpressionAttributeNames: { '#h': 'heartbeat' } }));
  const sqs = new SQSClient({ region: b.region, endpoint: b.endpoints.sqs, credentials: b.credentials });
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'rec-q' }));
  await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'a secret body' }));
  const ec2 = new EC2Client({ region: b.region, endpoint: b.endpoints.ec2, credentials: b.credentials });
  await ec2.send(new DescribeInstancesCommand({ InstanceIds: ['i-0aaaaaaaaaaaaaaaa'] })).catch(() => {});
  await fetch(a.endpoints.dynamodb, { method: 'POST', body: '{}' }); // unsigned: refused, not recorded

  assert.ok(await waitFor(() => fs.existsSync(file) && lines().length >= 5), `5 lines: ${fs.existsSync(file) && fs.readFileSync(file, 'utf8')}`);
  const all = lines();
  assert.equal(all.length, 5);
  const [create, get, cq, send, describe] = [
    all.find((l) => l.operation === 'CreateTable'), all.find((l) => l.operation === 'GetItem'),
    all.find((l) => l.operation === 'CreateQueue'), all.find((l) => l.operation === 'SendMessage'),
    all.find((l) => l.operation === 'DescribeInstances')];
  assert.equal(create.cloud, a.stateDir);
  assert.equal(create.principal, 'controller');
  assert.equal(create.userId, null);
  assert.equal(create.request.TableName, 'rec-table');
  assert.equal(create.status, 200);
  assert.equal(get.principal, 'instance:i-0123456789abcdef0');
  assert.equal(get.userId, 'AROA4LOCALCLOUDAGENT1:i-0123456789abcdef0');
  assert.equal(get.instanceRoleId, 'AROA4LOCALCLOUDAGENT1');
  assert.deepEqual(get.request.Key, { instance_id: { S: 'x' } });
  assert.equal(cq.cloud, b.stateDir);
  assert.equal(cq.service, 'sqs');
  assert.equal(send.queueUrl, QueueUrl);
  assert.equal(send.request.MessageBody, '<13 bytes>', 'message bodies are not recorded');
  assert.equal(describe.protocol, 'query');
  assert.equal(describe.request['InstanceId.1'], 'i-0aaaaaaaaaaaaaaaa');
  assert.deepEqual(describe.instances, { 'i-0aaaaaaaaaaaaaaaa': null }, 'an unknown instance has no tags');
  assert.equal(describe.region, a.region);
  assert.equal(describe.accountId, '000000000000');
});

test('the decoders: form fields, instance ids named, ids of an EC2 answer', () => {
  assert.deepEqual(decodeRequest('query', '/?Action=X', Buffer.from('A=1&LaunchTemplateData.UserData=abcd')),
    { Action: 'X', A: '1', 'LaunchTemplateData.UserData': '<4 bytes>' });
  assert.deepEqual(namedInstances({ 'InstanceId.1': 'i-1', 'ResourceId.1': 'i-2', 'ResourceId.2': 'lt-3' }), ['i-1', 'i-2']);
  assert.deepEqual(answerIds('<a><instanceId>i-1</instanceId><x><instanceId>i-2</instanceId></x><launchTemplateId>lt-1</launchTemplateId></a>'),
    { instanceIds: ['i-1', 'i-2'], launchTemplateIds: ['lt-1'] });
});
