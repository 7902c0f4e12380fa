'use strict';
// StopInstances on the EC2 stand-in, driven by the real AWS SDK for JavaScript: running -> stopping ->
// stopped with every process ended, the repeat accepted, and the states EC2 refuses.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const E = require('@aws-sdk/client-ec2');
const { createEc2 } = require('../ec2');
const { CredentialStore } = require('../lib/credentials');
const { Faults } = require('../lib/faults');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const AMI = 'ami-0123456789abcdef0';

async function waitFor(what, fn, timeoutMs = 10000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

let ec2; let client; let stateDir;
test.before(async () => {
  stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ec2-stop-test-'));
  ec2 = await createEc2({ credentials: new CredentialStore(), faults: new Faults(), stateDir, region: 'us-east-1',
    log: (level, msg) => { if (level === 'error') console.error(msg); } });
  client = new E.EC2Client({ region: 'us-east-1', endpoint: ec2.url, maxAttempts: 1,
    credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret' } });
});
test.after(async () => {
  await ec2.close();
  fs.rmSync(stateDir, { recursive: true, force: true });
});

const send = (cmd) => client.send(cmd);
const run = (input) => send(new E.RunInstancesCommand({ MinCount: 1, MaxCount: 1, ImageId: AMI, InstanceType: 't3.micro', ...input }));
const stateOf = async (id) => (await send(new E.DescribeInstancesCommand({ InstanceIds: [id] })))
  .Reservations[0].Instances[0].State.Name;
const stop = (id) => send(new E.StopInstancesCommand({ InstanceIds: [id] }));
async function rejects(promise, code) {
  const err = await promise.then(() => null, (e) => e);
  assert.ok(err, `expected ${code}`);
  assert.equal(err.name, code, err.message);
  return err;
}

test('a running instance stops: stopping, then stopped with its processes ended; a repeat is accepted', async () => {
  const userData = Buffer.from('#!/bin/sh\nexec sleep 987661\n').toString('base64');
  const id = (await run({ UserData: userData })).Instances[0].InstanceId;
  await waitFor('running', async () => (await stateOf(id)) === 'running');
  const s = await stop(id);
  assert.deepEqual(s.StoppingInstances, [{ InstanceId: id, CurrentState: { Code: 64, Name: 'stopping' },
    PreviousState: { Code: 16, Name: 'running' } }]);
  await waitFor('stopped', async () => (await stateOf(id)) === 'stopped');
  const info = (await ec2.control('GET', `/instances/${id}`)).json;
  assert.deepEqual(info.pids, []);
  assert.equal(info.imdsUrl, null);
  assert.equal(info.stateReason.code, 'Client.UserInitiatedShutdown');
  const again = await stop(id);
  assert.deepEqual(again.StoppingInstances[0].CurrentState, { Code: 80, Name: 'stopped' });
  assert.deepEqual(again.StoppingInstances[0].PreviousState, { Code: 80, Name: 'stopped' });
  await send(new E.TerminateInstancesCommand({ InstanceIds: [id] }));
});

test('stopping is refused for a pending or terminated instance, and for a one-time spot instance', async () => {
  await ec2.control('POST', '/settings', { pendingMs: 60000 });
  const pending = (await run({})).Instances[0].InstanceId;
  await ec2.control('POST', '/settings', { pendingMs: 50 });
  assert.equal(await stateOf(pending), 'pending');
  await rejects(stop(pending), 'IncorrectInstanceState');
  assert.equal(await stateOf(pending), 'pending', 'a refused call changes nothing');
  await send(new E.TerminateInstancesCommand({ InstanceIds: [pending] }));
  await waitFor('terminated', async () => (await stateOf(pending)) === 'terminated');
  await rejects(stop(pending), 'IncorrectInstanceState');

  const spot = (await run({ InstanceMarketOptions: { MarketType: 'spot' } })).Instances[0].InstanceId;
  await rejects(stop(spot), 'UnsupportedOperation');
  await send(new E.TerminateInstancesCommand({ InstanceIds: [spot] }));
});
