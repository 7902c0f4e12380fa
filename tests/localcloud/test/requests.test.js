'use strict';
// GET /_control/requests: the AWS proxies count signed requests per caller and operation, so a
// benchmark can tell runpoolctl's requests (`controller`) from each instance's (`instance:<id>`).
const test = require('node:test');
const assert = require('node:assert/strict');
const { DynamoDBClient, ListTablesCommand } = require('@aws-sdk/client-dynamodb');
const { SQSClient, ListQueuesCommand } = require('@aws-sdk/client-sqs');
const { RequestCounts } = require('../lib/requests');
const { launchLocalCloud } = require('../lib/launch');

test('RequestCounts counts per principal and operation; snapshot is a copy; reset empties it', () => {
  const c = new RequestCounts();
  c.record('controller', 'GetItem');
  c.record('controller', 'GetItem');
  c.record('instance:i-1', 'UpdateItem');
  c.record(undefined, 'Scan');
  const snap = c.snapshot();
  assert.deepEqual(snap, { controller: { GetItem: 2 }, 'instance:i-1': { UpdateItem: 1 }, unknown: { Scan: 1 } });
  snap.controller.GetItem = 99;
  assert.equal(c.snapshot().controller.GetItem, 2);
  c.reset();
  assert.deepEqual(c.snapshot(), {});
});

test('the control API reports each proxy\'s requests by caller; forged ones are not counted', async (t) => {
  const cloud = await launchLocalCloud();
  t.after(() => cloud.stop());
  const { ready } = cloud;
  const control = async (method, route, body) => {
    const res = await fetch(ready.endpoints.control + route, { method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(5000) });
    return { status: res.status, json: await res.json() };
  };
  const issued = (await control('POST', '/_control/credentials/instance', { instanceId: 'i-0123456789abcdef0' })).json;
  const instance = { accessKeyId: issued.accessKeyId, secretAccessKey: issued.secretAccessKey,
    sessionToken: issued.sessionToken };
  const ddb = (credentials) => new DynamoDBClient({ region: ready.region, endpoint: ready.endpoints.dynamodb,
    credentials, maxAttempts: 1 });

  assert.equal((await control('POST', '/_control/requests/reset')).status, 200);
  await ddb(ready.credentials).send(new ListTablesCommand({}));
  await ddb(ready.credentials).send(new ListTablesCommand({}));
  await ddb(instance).send(new ListTablesCommand({}));
  await new SQSClient({ region: ready.region, endpoint: ready.endpoints.sqs, credentials: ready.credentials })
    .send(new ListQueuesCommand({}));
  // A wrong secret: refused for its signature, so not the caller's request.
  await assert.rejects(ddb({ ...ready.credentials, secretAccessKey: 'not-the-secret' }).send(new ListTablesCommand({})));

  const got = await control('GET', '/_control/requests');
  assert.equal(got.status, 200);
  assert.deepEqual(got.json.dynamodb, { controller: { ListTables: 2 }, 'instance:i-0123456789abcdef0': { ListTables: 1 } });
  assert.deepEqual(got.json.sqs, { controller: { ListQueues: 1 } });
  if (ready.endpoints.ec2) assert.deepEqual(got.json.ec2, {});

  // Faulted requests were still the caller's.
  await control('POST', '/_control/faults', { service: 'dynamodb', errorRate: 1 });
  await assert.rejects(ddb(ready.credentials).send(new ListTablesCommand({})));
  await control('POST', '/_control/faults', { service: 'dynamodb' });
  assert.equal((await control('GET', '/_control/requests')).json.dynamodb.controller.ListTables, 3);

  assert.deepEqual((await control('POST', '/_control/requests/reset')).json, { ok: true });
  const after = (await control('GET', '/_control/requests')).json;
  assert.deepEqual(after.dynamodb, {});
  assert.deepEqual(after.sqs, {});
});
