'use strict';
// IMDSv2 session tokens running out: the TTL cap (imdsTokenMaxTtlSeconds) shortening a grant and
// the token then expiring, every token expired at once (DELETE /_localcloud/tokens), and the
// counts (GET /_localcloud/tokens) that tell the refusals apart — what the faults e2e suite reads.
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

let ec2; let client; let stateDir;
test.before(async () => {
  stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'imds-tokens-test-'));
  ec2 = await createEc2({ credentials: new CredentialStore(), faults: new Faults(), stateDir, region: 'eu-west-1',
    log: (level, msg) => { if (level === 'error') console.error(msg); } });
  client = new E.EC2Client({ region: 'eu-west-1', endpoint: ec2.url, maxAttempts: 1,
    credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret' } });
});
test.after(async () => {
  await ec2.close();
  fs.rmSync(stateDir, { recursive: true, force: true });
});

const ctl = async (method, p, body) => {
  const r = await ec2.control(method, p, body);
  assert.ok(r.status < 300, `${method} ${p}: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json;
};

async function launch() {
  const r = await client.send(new E.RunInstancesCommand({ MinCount: 1, MaxCount: 1, ImageId: 'ami-0123456789abcdef0',
    InstanceType: 't3.small' }));
  const id = r.Instances[0].InstanceId;
  for (let i = 0; i < 250; i++) {
    const s = await ctl('GET', `/instances/${id}`);
    if (s.state === 'running' && s.imdsUrl) return { id, imds: s.imdsUrl };
    await sleep(20);
  }
  throw new Error(`${id} never ran`);
}

async function token(imds, ttl) {
  const res = await fetch(`${imds}/latest/api/token`, { method: 'PUT',
    headers: { 'x-aws-ec2-metadata-token-ttl-seconds': String(ttl) } });
  assert.equal(res.status, 200);
  return { token: await res.text(), ttl: res.headers.get('x-aws-ec2-metadata-token-ttl-seconds') };
}
async function status(imds, tok) {
  const res = await fetch(`${imds}/latest/meta-data/instance-id`, { headers: tok === undefined ? {} : { 'x-aws-ec2-metadata-token': tok } });
  await res.text();
  return res.status;
}
async function counts(imds, method = 'GET') {
  const res = await fetch(`${imds}/_localcloud/tokens`, { method });
  assert.equal(res.status, 200);
  return res.json();
}

test('expiring every token now: refused as revoked, counted, a new token works at once', async () => {
  const { id, imds } = await launch();
  assert.deepEqual(await counts(imds), { instanceId: id, live: 0, issued: 0, revoked: 0,
    refused: { expired: 0, revoked: 0, unknown: 0, missing: 0 }, maxTtlSeconds: 21600 });
  const a = (await token(imds, 600)).token;
  const b = (await token(imds, 600)).token;
  assert.equal(await status(imds, a), 200);
  assert.equal((await counts(imds)).live, 2);
  assert.deepEqual(await counts(imds, 'DELETE'), { instanceId: id, revoked: 2 });
  assert.equal(await status(imds, a), 401);
  assert.equal(await status(imds, b), 401);
  assert.equal(await status(imds, 'forged'), 401);
  assert.equal(await status(imds), 401, 'IMDSv2 required: no token, no metadata');
  const c = (await token(imds, 600)).token;
  assert.equal(await status(imds, c), 200, 'a token fetched after the expiry works');
  assert.deepEqual(await counts(imds), { instanceId: id, live: 1, issued: 3, revoked: 2,
    refused: { expired: 0, revoked: 2, unknown: 1, missing: 1 }, maxTtlSeconds: 21600 });
  assert.deepEqual(await counts(imds, 'DELETE'), { instanceId: id, revoked: 1 });
  assert.deepEqual(await counts(imds, 'DELETE'), { instanceId: id, revoked: 0 }, 'nothing live is left to expire');
  assert.equal((await fetch(`${imds}/_localcloud/tokens`, { method: 'POST' })).status, 405);
  await client.send(new E.TerminateInstancesCommand({ InstanceIds: [id] }));
});

test('the TTL cap shortens the grant and the token expires on time; refused as expired', async () => {
  const { id, imds } = await launch();
  await ctl('POST', '/settings', { imdsTokenMaxTtlSeconds: 1 });
  try {
    const capped = await token(imds, 21600);
    assert.equal(capped.ttl, '1', 'the granted TTL is echoed, capped');
    assert.equal(await status(imds, capped.token), 200);
    // Bounded: the token must be refused within a few seconds of its one-second life.
    let refused = false;
    for (let i = 0; i < 40 && !refused; i++) {
      await sleep(100);
      refused = (await status(imds, capped.token)) === 401;
    }
    assert.ok(refused, 'a one-second token expires');
    const c = await counts(imds);
    assert.equal(c.refused.expired, 1);
    assert.equal(c.refused.revoked, 0);
    assert.equal(c.live, 0);
    assert.equal(c.maxTtlSeconds, 1);
    const fresh = await token(imds, 1);
    assert.equal(await status(imds, fresh.token), 200);
  } finally {
    await ctl('POST', '/settings', { imdsTokenMaxTtlSeconds: 21600 });
  }
  assert.equal((await token(imds, 60)).ttl, '60', 'the cap lifted, grants are as asked');
  await client.send(new E.TerminateInstancesCommand({ InstanceIds: [id] }));
});
