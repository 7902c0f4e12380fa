'use strict';
// Each instance's IMDSv2 endpoint, driven with Node's fetch as an instance would: session tokens,
// metadata, role credentials, spot and rebalance notices, user-data, tags, faults.
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

async function waitFor(what, fn, timeoutMs = 5000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

let ec2; let client; let stateDir; let credentials; let faults;
test.before(async () => {
  stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'imds-test-'));
  credentials = new CredentialStore();
  faults = new Faults();
  ec2 = await createEc2({ credentials, faults, stateDir, region: 'eu-west-1',
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

// Launches one instance and waits until its IMDS is up; returns { id, imds }.
async function launch(input = {}) {
  const r = await client.send(new E.RunInstancesCommand({ MinCount: 1, MaxCount: 1, ImageId: AMI, InstanceType: 't3.small', ...input }));
  const id = r.Instances[0].InstanceId;
  const info = await waitFor('running', async () => {
    const i = await ctl('GET', `/instances/${id}`);
    return i.state === 'running' && i;
  });
  return { id, imds: info.imdsUrl };
}

const put = (imds, ttl, headers = {}) => fetch(`${imds}/latest/api/token`, { method: 'PUT',
  headers: { ...(ttl === undefined ? {} : { 'x-aws-ec2-metadata-token-ttl-seconds': String(ttl) }), ...headers } });
async function token(imds, ttl = 60) {
  const res = await put(imds, ttl);
  assert.equal(res.status, 200);
  return res.text();
}
async function get(imds, p, tok) {
  const res = await fetch(`${imds}${p}`, { headers: tok === undefined ? {} : { 'x-aws-ec2-metadata-token': tok } });
  return { status: res.status, text: await res.text() };
}

test('IMDSv2 tokens: required, TTL validated, expire, renewable', async () => {
  const { id, imds } = await launch();
  assert.equal((await get(imds, '/latest/meta-data/instance-id')).status, 401, 'no token, no metadata');
  assert.equal((await get(imds, '/latest/meta-data/instance-id', 'forged')).status, 401);
  for (const bad of [undefined, 0, 21601, 'abc', -5]) assert.equal((await put(imds, bad)).status, 400, `ttl ${bad}`);
  assert.equal((await put(imds, 60, { 'x-forwarded-for': '10.0.0.1' })).status, 403);
  const ok = await put(imds, 21600);
  assert.equal(ok.headers.get('x-aws-ec2-metadata-token-ttl-seconds'), '21600');
  const tok = await ok.text();
  assert.deepEqual(await get(imds, '/latest/meta-data/instance-id', tok), { status: 200, text: id });
  assert.equal((await fetch(`${imds}/latest/meta-data/instance-id`, { method: 'POST' })).status, 405);

  await ctl('POST', '/settings', { imdsTokenMaxTtlSeconds: 1 });
  try {
    const res = await put(imds, 300);
    assert.equal(res.headers.get('x-aws-ec2-metadata-token-ttl-seconds'), '1');
    const short = await res.text();
    assert.equal((await get(imds, '/latest/meta-data/instance-id', short)).status, 200);
    await sleep(1100);
    assert.equal((await get(imds, '/latest/meta-data/instance-id', short)).status, 401, 'expired');
    const fresh = await token(imds);
    assert.equal((await get(imds, '/latest/meta-data/instance-id', fresh)).status, 200);
  } finally {
    await ctl('POST', '/settings', { imdsTokenMaxTtlSeconds: 21600 });
  }
});

test('metadata, identity document, user-data and tags', async () => {
  const userData = '#cloud-config\nwrite_files: []\n';
  const { id, imds } = await launch({ UserData: Buffer.from(userData).toString('base64'), Placement: { AvailabilityZone: 'eu-west-1b' },
    TagSpecifications: [{ ResourceType: 'instance', Tags: [{ Key: 'pool', Value: 'p1' }, { Key: 'runpool:table', Value: 't' }] }] });
  const tok = await token(imds);
  const md = async (p) => (await get(imds, `/latest/meta-data/${p}`, tok)).text;
  assert.equal(await md('instance-type'), 't3.small');
  assert.equal(await md('ami-id'), AMI);
  assert.equal(await md('placement/region'), 'eu-west-1');
  assert.equal(await md('placement/availability-zone'), 'eu-west-1b');
  assert.equal(await md('local-ipv4'), '127.0.0.1');
  assert.equal(await md('instance-life-cycle'), 'on-demand');
  const doc = JSON.parse((await get(imds, '/latest/dynamic/instance-identity/document', tok)).text);
  assert.deepEqual([doc.instanceId, doc.region, doc.availabilityZone], [id, 'eu-west-1', 'eu-west-1b']);
  assert.deepEqual(await get(imds, '/latest/user-data', tok), { status: 200, text: userData });
  assert.equal((await get(imds, '/latest/meta-data/no-such-thing', tok)).status, 404);

  assert.deepEqual((await md('tags/instance')).split('\n'), ['pool', 'runpool:table']);
  assert.equal(await md('tags/instance/runpool:table'), 't');
  // The key is matched as is, never percent-decoded (as IMDS serves it).
  assert.equal((await get(imds, '/latest/meta-data/tags/instance/runpool%3Atable', tok)).status, 404);
  await client.send(new E.CreateTagsCommand({ Resources: [id], Tags: [{ Key: 'assigned', Value: 'run-42' }] }));
  assert.equal(await md('tags/instance/assigned'), 'run-42', 'tag changes show at once');
  assert.equal((await get(imds, '/latest/meta-data/tags/instance/absent', tok)).status, 404);

  // No user-data; tags in metadata off; IMDSv1 allowed.
  const other = await launch({ MetadataOptions: { InstanceMetadataTags: 'disabled', HttpTokens: 'optional' } });
  const t2 = await token(other.imds);
  assert.equal((await get(other.imds, '/latest/user-data', t2)).status, 404);
  assert.equal((await get(other.imds, '/latest/meta-data/tags/instance', t2)).status, 404);
  assert.deepEqual(await get(other.imds, '/latest/meta-data/instance-id'), { status: 200, text: other.id });
  await client.send(new E.TerminateInstancesCommand({ InstanceIds: [id, other.id] }));
});

test('role credentials: shape, accepted by the credential store, rotated, revoked at termination', async () => {
  await ctl('POST', '/settings', { credentialTtlMs: 1000 });
  let id; let imds;
  try {
    ({ id, imds } = await launch({ IamInstanceProfile: { Name: 'runpool-agent' } }));
    const tok = await token(imds);
    assert.deepEqual(await get(imds, '/latest/meta-data/iam/security-credentials/', tok), { status: 200, text: 'runpool-agent' });
    const fetchCreds = async () => {
      const r = await get(imds, '/latest/meta-data/iam/security-credentials/runpool-agent', tok);
      assert.equal(r.status, 200);
      return JSON.parse(r.text);
    };
    const c1 = await fetchCreds();
    assert.deepEqual(Object.keys(c1).sort(), ['AccessKeyId', 'Code', 'Expiration', 'LastUpdated', 'SecretAccessKey', 'Token', 'Type']);
    assert.equal(c1.Code, 'Success');
    assert.equal(c1.Type, 'AWS-HMAC');
    assert.match(c1.AccessKeyId, /^ASIA[0-9A-F]{16}$/);
    assert.match(c1.Expiration, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const stored = credentials.lookup(c1.AccessKeyId);
    assert.equal(stored.principal, `instance:${id}`);
    assert.equal(stored.secretAccessKey, c1.SecretAccessKey);
    assert.equal(stored.sessionToken, c1.Token);
    assert.equal((await fetchCreds()).AccessKeyId, c1.AccessKeyId, 'fresh credentials are served again');
    await sleep(600);
    const c2 = await fetchCreds();
    assert.notEqual(c2.AccessKeyId, c1.AccessKeyId, 'rotated before expiry');
    assert.ok(credentials.lookup(c2.AccessKeyId).expiration > credentials.lookup(c1.AccessKeyId).expiration);
    assert.ok(Date.parse(c2.Expiration) >= Date.parse(c1.Expiration));
  } finally {
    await ctl('POST', '/settings', { credentialTtlMs: 6 * 3600 * 1000 });
  }
  const bare = await launch();
  assert.equal((await get(bare.imds, '/latest/meta-data/iam/security-credentials/', await token(bare.imds))).status, 404,
    'no instance profile, no role');

  await client.send(new E.TerminateInstancesCommand({ InstanceIds: [id, bare.id] }));
  await waitFor('terminated', async () => (await ctl('GET', `/instances/${id}`)).state === 'terminated');
  assert.equal([...credentials.byKey.values()].filter((c) => c.principal === `instance:${id}`).length, 0, 'revoked');
  await assert.rejects(fetch(`${imds}/latest/api/token`, { method: 'PUT', headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '60' } }),
    'the IMDS endpoint is gone');
});

test('spot interruption and rebalance notices, then the interruption itself', async () => {
  const { id, imds } = await launch({ InstanceMarketOptions: { MarketType: 'spot' } });
  const tok = await token(imds);
  assert.equal(await (await get(imds, '/latest/meta-data/instance-life-cycle', tok)).text, 'spot');
  assert.equal((await get(imds, '/latest/meta-data/spot/instance-action', tok)).status, 404);
  assert.equal((await get(imds, '/latest/meta-data/events/recommendations/rebalance', tok)).status, 404);

  const rb = await ctl('POST', `/instances/${id}/rebalance`);
  const r = await get(imds, '/latest/meta-data/events/recommendations/rebalance', tok);
  assert.equal(r.status, 200);
  assert.deepEqual(JSON.parse(r.text), { noticeTime: rb.noticeTime.replace(/\.\d{3}Z$/, 'Z') });

  const before = Date.now();
  await ctl('POST', `/instances/${id}/spot-interruption`, { action: 'terminate', inSeconds: 1 });
  const n = await get(imds, '/latest/meta-data/spot/instance-action', tok);
  assert.equal(n.status, 200);
  const notice = JSON.parse(n.text);
  assert.equal(notice.action, 'terminate');
  assert.match(notice.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  assert.ok(Math.abs(Date.parse(notice.time) - (before + 1000)) < 1500);
  assert.equal((await get(imds, '/latest/meta-data/spot/termination-time', tok)).text, notice.time);

  await waitFor('the interruption', async () => (await ctl('GET', `/instances/${id}`)).state === 'terminated', 4000);
  assert.ok(Date.now() - before >= 950);
  const [inst] = (await client.send(new E.DescribeInstancesCommand({ InstanceIds: [id] }))).Reservations[0].Instances;
  assert.equal(inst.StateReason.Code, 'Server.SpotInstanceTermination');

  const od = await launch();
  assert.equal((await ec2.control('POST', `/instances/${od.id}/spot-interruption`, {})).status, 409, 'on-demand instances get no notices');
  await client.send(new E.TerminateInstancesCommand({ InstanceIds: [od.id] }));
});

test('imds faults: errors, throttling, added latency; counted', async () => {
  const { id, imds } = await launch();
  const tok = await token(imds);
  try {
    faults.set('imds', { errorRate: 1 });
    assert.equal((await get(imds, '/latest/meta-data/instance-id', tok)).status, 500);
    assert.equal((await put(imds, 60)).status, 500);
    faults.set('imds', { throttleRate: 1 });
    assert.equal((await get(imds, '/latest/meta-data/instance-id', tok)).status, 429);
    faults.set('imds', { latencyMs: 150 });
    const t0 = Date.now();
    assert.equal((await get(imds, '/latest/meta-data/instance-id', tok)).status, 200);
    assert.ok(Date.now() - t0 >= 140);
    const s = faults.stats.imds['GET /latest/meta-data/instance-id'];
    assert.deepEqual([s.requests >= 3, s.errors >= 1, s.throttles >= 1], [true, true, true]);
  } finally {
    faults.set('imds', {});
  }
  await client.send(new E.TerminateInstancesCommand({ InstanceIds: [id] }));
});
