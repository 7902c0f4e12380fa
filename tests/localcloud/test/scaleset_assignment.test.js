'use strict';
// Who assigns a scale set's jobs (setting scaleSetAssignment): the service itself, as github.com
// does, or the listener's acquirejobs, as GitHub Enterprise Server does; and the capacity the
// listener polls with (X-ScaleSetMaxCapacity), which bounds the set's assigned and running jobs in
// both. github/README.md, "Assignment", has the authority.
const test = require('node:test');
const assert = require('node:assert/strict');
const { createGithub } = require('../github');
const { until, controlOf } = require('../testing/wait');

const PAT = 'ghp_scaleset_assignment_pat';
let gh;
const ctl = controlOf(() => gh);

async function http(method, url, { token, body, headers = {} } = {}) {
  const res = await fetch(url, {
    method, body: body === undefined ? undefined : JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null, text };
}

// Discovery, a set named `name` and a session on it; poll/ack/acquire on its queue.
async function listenerOn(name) {
  const reg = await http('POST', `${gh.url}/api/v3/orgs/acme/actions/runners/registration-token`, { token: PAT });
  const d = await http('POST', `${gh.url}/api/v3/actions/runner-registration`, {
    headers: { authorization: `RemoteAuth ${reg.json.token}` }, body: { url: `${gh.url}/acme`, runner_event: 'register' },
  });
  const as = (method, p, body) => http(method, `${d.json.url}${p}`, { token: d.json.token, body });
  const set = (await as('POST', '/_apis/runtime/runnerscalesets', { name, runnerGroupId: 1 })).json;
  const s = (await as('POST', `/_apis/runtime/runnerscalesets/${set.id}/sessions`, { ownerName: 'listener' })).json;
  const l = { set, last: 0, jobs: [], statistics: null };
  // One poll at `capacity`, acknowledged; its job messages kept. -> the status.
  l.poll = async (capacity) => {
    const u = new URL(s.messageQueueUrl);
    if (l.last) u.searchParams.set('lastMessageId', String(l.last));
    const r = await http('GET', u.toString(), { token: s.messageQueueAccessToken, headers: { 'x-scalesetmaxcapacity': String(capacity) } });
    if (r.status !== 200) return r.status;
    l.last = r.json.messageId;
    l.statistics = r.json.statistics;
    l.jobs.push(...JSON.parse(r.json.body));
    assert.equal((await http('DELETE', `${s.messageQueueUrl}/${r.json.messageId}`, { token: s.messageQueueAccessToken })).status, 204);
    return 200;
  };
  // Polls at `capacity` until `n` messages of `type` have come; bounded.
  l.until = async (capacity, type, n) => {
    for (let i = 0; i < 30 && l.seen(type).length < n; i++) await l.poll(capacity);
    assert.equal(l.seen(type).length, n, `${type}: ${JSON.stringify(l.jobs.map((j) => [j.messageType, j.runnerRequestId]))}`);
  };
  l.seen = (type) => l.jobs.filter((j) => j.messageType === type).map((j) => j.runnerRequestId);
  l.acquire = async (ids) => (await http('POST', `${d.json.url}/_apis/runtime/runnerscalesets/${set.id}/acquirejobs`, { token: s.messageQueueAccessToken, body: ids })).json.value;
  l.stats = () => ctl('GET', `/scalesets/${set.id}/statistics`);
  return l;
}
const queueJobs = async (label, n) => {
  const out = [];
  for (let i = 0; i < n; i++) out.push((await ctl('POST', '/jobs', { labels: [label], owner: 'acme', repo: 'app', name: `${label}-${i}` })).id);
  return out;
};

test.before(async () => {
  gh = await createGithub({ log: () => {} });
  await ctl('POST', '/settings', { scaleSetPollMs: 200 });
  await ctl('POST', '/pats', { token: PAT, owners: ['acme'] });
});
test.after(() => gh.close());

test('the setting: service by default, acquire on request, nothing else', async () => {
  assert.equal((await ctl('GET', '/settings')).scaleSetAssignment, 'service');
  assert.ok((await gh.control('POST', '/settings', { scaleSetAssignment: 'listener' })).status >= 400);
});

test('service flow: no JobAvailable; the service assigns up to the polled capacity, more as room frees', async () => {
  const l = await listenerOn('svc-set');
  const [a, b, c] = await queueJobs('svc-set', 3);
  await l.until(2, 'JobAssigned', 2);
  assert.deepEqual(l.seen('JobAssigned'), [a, b], 'the oldest first');
  assert.deepEqual(l.seen('JobAvailable'), []);
  assert.deepEqual([l.statistics.totalAssignedJobs, l.statistics.totalAvailableJobs], [2, 1]);
  assert.equal((await ctl('GET', `/jobs/${c}`)).scaleSet.state, 'available');
  // Acquiring assigns nothing here: the ids the set has already, no more.
  assert.deepEqual(await l.acquire([a, c]), [a]);
  assert.equal((await l.stats()).totalAssignedJobs, 2);
  // A lower capacity takes nothing back; a job that ends frees room only down to it.
  await l.poll(1);
  await ctl('POST', `/jobs/${a}/cancel`);
  await l.until(1, 'JobCompleted', 1);
  assert.deepEqual(l.seen('JobAssigned'), [a, b]);
  assert.equal((await l.stats()).totalAssignedJobs, 1);
  // A higher capacity: the last one is assigned on that very poll.
  assert.equal(await l.poll(2), 200);
  assert.deepEqual(l.seen('JobAssigned'), [a, b, c]);
  assert.deepEqual([l.statistics.totalAssignedJobs, l.statistics.totalAvailableJobs], [2, 0]);
});

test('service flow: capacity 0 assigns nothing; an assignment no runner takes is canceled, then assigned again', async (t) => {
  t.after(() => ctl('POST', '/settings', { scaleSetAssignTimeoutMs: 20000, scaleSetRequeueDelayMs: 1000 }));
  await ctl('POST', '/settings', { scaleSetAssignTimeoutMs: 300, scaleSetRequeueDelayMs: 100 });
  const l = await listenerOn('zero-set');
  const [a] = await queueJobs('zero-set', 1);
  assert.equal(await l.poll(0), 202);
  assert.deepEqual([(await l.stats()).totalAvailableJobs, (await l.stats()).totalAssignedJobs], [1, 0]);
  await l.until(1, 'JobAssigned', 1);
  await l.until(1, 'JobCompleted', 1);
  assert.equal(l.jobs.find((j) => j.messageType === 'JobCompleted').result, 'canceled');
  await l.until(1, 'JobAssigned', 2);
  assert.deepEqual(l.seen('JobAssigned'), [a, a]);
  await ctl('POST', `/jobs/${a}/cancel`);
});

test('acquire flow: JobAvailable for every job; acquiring assigns only up to the capacity; the rest offered again once room frees', async (t) => {
  t.after(() => ctl('POST', '/settings', { scaleSetAssignment: 'service' }));
  await ctl('POST', '/settings', { scaleSetAssignment: 'acquire' });
  const l = await listenerOn('acq-cap-set');
  const [a, b, c] = await queueJobs('acq-cap-set', 3);
  await l.until(1, 'JobAvailable', 3);
  assert.deepEqual(l.seen('JobAssigned'), [], 'nothing assigned before acquire');
  assert.deepEqual(await l.acquire([a, b, c]), [a]);
  await l.until(1, 'JobAssigned', 1);
  assert.deepEqual([l.statistics.totalAssignedJobs, l.statistics.totalAvailableJobs], [1, 2]);
  await ctl('POST', `/jobs/${a}/cancel`);
  // Room for one again: one refused job offered again, acquired.
  await l.until(1, 'JobAvailable', 4);
  assert.deepEqual(l.seen('JobAvailable').slice(3), [b]);
  assert.deepEqual(await l.acquire([b, c]), [b]);
  await l.until(1, 'JobAssigned', 2);
  await until(async () => (await l.stats()).totalAssignedJobs === 1, 2000, 'one assigned');
  for (const id of [b, c]) await ctl('POST', `/jobs/${id}/cancel`);
});
