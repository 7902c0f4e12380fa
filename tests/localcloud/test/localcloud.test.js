'use strict';
// localcloud.js as a child process, driven by independent real clients (AWS SDK for JavaScript
// v3, the curl CLI): DynamoDB and SQS work through the signature-checking proxy, bad credentials
// get the services' real error codes, faults and stats work through the control API, and closing
// stdin stops it.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFile, spawn } = require('node:child_process');
const { DynamoDBClient, CreateTableCommand, PutItemCommand, GetItemCommand, ListTablesCommand } = require('@aws-sdk/client-dynamodb');
const { SQSClient, CreateQueueCommand, SendMessageCommand, ReceiveMessageCommand } = require('@aws-sdk/client-sqs');
const { launchLocalCloud, SCRIPT } = require('../lib/launch');

let cloud;
let ready;

test.before(async () => {
  cloud = await launchLocalCloud();
  ready = cloud.ready;
});
test.after(async () => { if (cloud) await cloud.stop(); });

const ddb = (credentials, extra = {}) => new DynamoDBClient({ region: ready.region,
  endpoint: ready.endpoints.dynamodb, credentials, ...extra });
const sqs = (credentials, extra = {}) => new SQSClient({ region: ready.region,
  endpoint: ready.endpoints.sqs, credentials, ...extra });

async function control(method, route, body) {
  const res = await fetch(ready.endpoints.control + route, { method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : (typeof body === 'string' ? body : JSON.stringify(body)),
    signal: AbortSignal.timeout(5000) });
  return { status: res.status, json: await res.json() };
}

const instanceCreds = async (instanceId, ttlMs) => {
  const { status, json } = await control('POST', '/_control/credentials/instance', { instanceId, ttlMs });
  assert.equal(status, 200);
  assert.match(json.accessKeyId, /^ASIA/);
  return { ...json, expiration: new Date(json.expiration) }; // the SDK's credential shape
};

// The SDK error's code as a client would classify it.
async function errorOf(promise) {
  try { await promise; } catch (err) { return { name: err.name, status: err.$metadata?.httpStatusCode, message: err.message }; }
  throw new Error('expected the call to fail');
}

function curl(args) {
  return new Promise((resolve, reject) => {
    execFile('curl', ['-sS', '--max-time', '10', '-w', '\n%{http_code}', ...args], { timeout: 15_000 }, (err, out, errOut) => {
      if (err) return reject(new Error(errOut || err.message));
      const i = out.lastIndexOf('\n');
      resolve({ status: Number(out.slice(i + 1)), body: out.slice(0, i) });
    });
  });
}

test('the ready line names every endpoint on 127.0.0.1 and the controller credentials', async () => {
  assert.equal(ready.ready, true);
  assert.equal(ready.region, 'us-east-1');
  for (const k of ['dynamodb', 'sqs', 'control']) assert.match(ready.endpoints[k], /^http:\/\/127\.0\.0\.1:\d+$/);
  if (ready.endpoints.github) assert.equal(ready.endpoints.github, `${ready.endpoints.githubWeb}/api/v3`);
  assert.ok(fs.statSync(ready.stateDir).isDirectory());
  const { json } = await control('GET', '/_control/credentials');
  assert.deepEqual(json, ready.credentials);
  const health = await control('GET', '/_control/health');
  assert.deepEqual([health.status, health.json.ok, health.json.services.dynamodb, health.json.services.sqs], [200, true, true, true]);
  assert.equal(health.json.services.ec2, !!ready.endpoints.ec2);
});

test('DynamoDB CreateTable, PutItem, GetItem through the proxy with the AWS SDK', async () => {
  const client = ddb(ready.credentials);
  await client.send(new CreateTableCommand({ TableName: 'lc-items', BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }] }));
  await client.send(new PutItemCommand({ TableName: 'lc-items', Item: { id: { S: 'i-1' }, state: { S: 'idle' } } }));
  const got = await client.send(new GetItemCommand({ TableName: 'lc-items', Key: { id: { S: 'i-1' } }, ConsistentRead: true }));
  assert.deepEqual(got.Item, { id: { S: 'i-1' }, state: { S: 'idle' } });
  // An instance's role credentials (with a session token) work too.
  const c = await instanceCreds('i-0aaa');
  const asInstance = await ddb(c).send(new GetItemCommand({ TableName: 'lc-items', Key: { id: { S: 'i-1' } } }));
  assert.equal(asInstance.Item.state.S, 'idle');
  client.destroy();
});

test('SQS CreateQueue, SendMessage, ReceiveMessage with the AWS SDK; QueueUrls lead to the proxy', async () => {
  const client = sqs(ready.credentials);
  const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: 'lc-pool' }));
  assert.ok(QueueUrl.startsWith(`${ready.endpoints.sqs}/`), QueueUrl);
  await client.send(new SendMessageCommand({ QueueUrl, MessageBody: '{"instanceId":"i-1"}' }));
  const r = await client.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 1, MaxNumberOfMessages: 1 }));
  assert.equal(r.Messages?.length, 1);
  assert.equal(r.Messages[0].Body, '{"instanceId":"i-1"}');
  client.destroy();
});

test('libcurl-signed requests (curl --aws-sigv4) reach dynalite, with controller and instance credentials', async () => {
  const { accessKeyId, secretAccessKey } = ready.credentials;
  const target = (op) => ['-H', 'Content-Type: application/x-amz-json-1.0', '-H', `X-Amz-Target: DynamoDB_20120810.${op}`];
  const put = await curl(['--aws-sigv4', 'aws:amz:us-east-1:dynamodb', '--user', `${accessKeyId}:${secretAccessKey}`,
    ...target('PutItem'), '--data-binary', JSON.stringify({ TableName: 'lc-items', Item: { id: { S: 'i-curl' } } }),
    ready.endpoints.dynamodb]);
  assert.equal(put.status, 200, put.body);
  const c = await instanceCreds('i-0bbb');
  const get = await curl(['--aws-sigv4', 'aws:amz:us-east-1:dynamodb', '--user', `${c.accessKeyId}:${c.secretAccessKey}`,
    '-H', `X-Amz-Security-Token: ${c.sessionToken}`, ...target('GetItem'),
    '--data-binary', JSON.stringify({ TableName: 'lc-items', Key: { id: { S: 'i-curl' } } }), ready.endpoints.dynamodb]);
  assert.equal(get.status, 200, get.body);
  assert.deepEqual(JSON.parse(get.body).Item, { id: { S: 'i-curl' } });
  const bad = await curl(['--aws-sigv4', 'aws:amz:us-east-1:dynamodb', '--user', `${accessKeyId}:wrong`,
    ...target('ListTables'), '--data-binary', '{}', ready.endpoints.dynamodb]);
  assert.equal(bad.status, 400);
  assert.equal(JSON.parse(bad.body).__type, 'com.amazon.coral.service#InvalidSignatureException');
});

test('a wrong secret fails with each service\'s signature error', async () => {
  const wrong = { ...ready.credentials, secretAccessKey: 'wrong' };
  const d = await errorOf(ddb(wrong, { maxAttempts: 1 }).send(new ListTablesCommand({})));
  assert.deepEqual([d.name, d.status], ['InvalidSignatureException', 400]);
  const s = await errorOf(sqs(wrong, { maxAttempts: 1 }).send(new CreateQueueCommand({ QueueName: 'lc-x' })));
  assert.deepEqual([s.name, s.status], ['SignatureDoesNotMatch', 403]);
  const { json } = await control('GET', '/_control/auth-failures');
  assert.ok(json.dynamodb.InvalidSignatureException >= 1);
});

test('expired instance credentials fail with the expired-token error', async () => {
  const c = await instanceCreds('i-0ccc', 1);
  await new Promise((r) => setTimeout(r, 20));
  const creds = { accessKeyId: c.accessKeyId, secretAccessKey: c.secretAccessKey, sessionToken: c.sessionToken };
  const d = await errorOf(ddb(creds, { maxAttempts: 1 }).send(new ListTablesCommand({})));
  assert.deepEqual([d.name, d.status], ['ExpiredTokenException', 400]);
  const s = await errorOf(sqs(creds, { maxAttempts: 1 }).send(new CreateQueueCommand({ QueueName: 'lc-x' })));
  assert.deepEqual([s.name, s.status], ['ExpiredToken', 403]);
});

test('an unsigned request is refused', async () => {
  const res = await fetch(ready.endpoints.dynamodb, { method: 'POST', body: '{}', signal: AbortSignal.timeout(5000),
    headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'DynamoDB_20120810.ListTables' } });
  assert.equal(res.status, 400);
  assert.equal((await res.json()).__type, 'com.amazon.coral.service#MissingAuthenticationTokenException');
});

test('faults: errorRate 1 on dynamodb gives 500s that stats count; resetting the knobs restores service', async () => {
  assert.equal((await control('POST', '/_control/stats/reset')).status, 200);
  const set = await control('POST', '/_control/faults', { service: 'dynamodb', errorRate: 1 });
  assert.deepEqual(set, { status: 200, json: { service: 'dynamodb', errorRate: 1, throttleRate: 0, latencyMs: 0,
    retryAfterRate: 0, retryAfterSeconds: 0 } });
  assert.equal((await control('GET', '/_control/faults')).json.dynamodb.errorRate, 1);
  const client = ddb(ready.credentials, { maxAttempts: 1 });
  for (let i = 0; i < 3; i++) {
    const e = await errorOf(client.send(new ListTablesCommand({})));
    assert.deepEqual([e.name, e.status], ['InternalServerError', 500]);
  }
  const stats = (await control('GET', '/_control/stats')).json;
  assert.deepEqual(stats.dynamodb.ListTables, { requests: 3, errors: 3, throttles: 0, retryAfters: 0 });
  assert.equal((await control('POST', '/_control/faults', { service: 'dynamodb' })).status, 200);
  assert.ok(Array.isArray((await client.send(new ListTablesCommand({}))).TableNames));
  assert.equal((await control('POST', '/_control/stats/reset')).status, 200);
  assert.deepEqual((await control('GET', '/_control/stats')).json, {});
  client.destroy();
});

test('the control API validates its input and 404s unknown routes', async () => {
  const cases = [
    [{ service: 'nosuch', errorRate: 1 }, /unknown service/],
    [{ service: 'sqs', errorRate: 2 }, /within \[0, 1\]/],
    [{ service: 'sqs', flakiness: 1 }, /unknown fault knob/],
    [{ service: 'sqs', latencyMs: -1 }, />= 0/],
    ['{not json', /not valid JSON/],
    [[1, 2], /JSON object/],
  ];
  for (const [body, re] of cases) {
    const r = await control('POST', '/_control/faults', body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.match(r.json.error, re);
  }
  const bad = await control('POST', '/_control/credentials/instance', { ttlMs: 5 });
  assert.equal(bad.status, 400);
  const missing = await control('GET', '/_control/nothing-here');
  assert.equal(missing.status, 404);
  assert.match(missing.json.error, /no control route/);
  if (!ready.endpoints.ec2) assert.equal((await control('GET', '/_control/ec2/instances')).status, 503);
  if (!ready.endpoints.github) assert.equal((await control('GET', '/_control/github/runners')).status, 503);
});

test('closing stdin stops the local cloud with exit 0 and removes its own state dir', async () => {
  const other = await launchLocalCloud();
  assert.ok(fs.existsSync(other.ready.stateDir));
  const t0 = Date.now();
  const { code, signal } = await other.stop(5000);
  assert.deepEqual([code, signal], [0, null], other.stderr());
  assert.ok(Date.now() - t0 < 3000, `took ${Date.now() - t0} ms`);
  assert.equal(fs.existsSync(other.ready.stateDir), false);
  // Its ports are closed.
  await assert.rejects(fetch(other.ready.endpoints.control + '/_control/health', { signal: AbortSignal.timeout(2000) }));
});

test('SIGTERM stops it with exit 0; a --state-dir given by the caller is kept', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lc-test-'));
  try {
    const other = await launchLocalCloud({ args: ['--quiet', '--state-dir', dir] });
    assert.equal(other.ready.stateDir, dir);
    other.child.kill('SIGTERM');
    const { code } = await Promise.race([other.exited, new Promise((r) => setTimeout(() => r({ code: 'timeout' }), 5000))]);
    assert.equal(code, 0, other.stderr());
    assert.ok(fs.existsSync(dir));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a startup failure exits 1 with a message on stderr', async () => {
  const file = path.join(os.tmpdir(), `lc-not-a-dir-${process.pid}`);
  fs.writeFileSync(file, 'x');
  try {
    for (const args of [['--state-dir', file], ['--bogus']]) {
      const child = spawn(process.execPath, [SCRIPT, '--quiet', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
      let out = ''; let err = '';
      child.stdout.on('data', (d) => { out += d; });
      child.stderr.on('data', (d) => { err += d; });
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      const code = await new Promise((r) => child.on('exit', r));
      clearTimeout(timer);
      assert.equal(code, 1, err);
      assert.equal(out, '');
      assert.match(err, /localcloud: /);
    }
  } finally {
    fs.rmSync(file, { force: true });
  }
});
