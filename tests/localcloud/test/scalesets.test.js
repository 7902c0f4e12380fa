'use strict';
// The runner scale-set API of the GitHub stand-in (github/scaleset_*.js, scalesets.js): discovery,
// scale sets, runner groups, message sessions, the long-poll queue (batches, redelivery,
// acknowledgement), acquirejobs, JIT runners (one run by the runner stand-in end to end),
// statistics, the assign timeout, and every fault knob. GitHub's own Go client checks the same API
// from the outside (tests/scaleset_client).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, execFileSync } = require('node:child_process');
const { createGithub } = require('../github');
const { sleep, until, controlOf } = require('../testing/wait');

const PAT = 'ghp_scaleset_tests_pat';
const POLL_MS = 300;
// The acquire flow (GHES's) unless a test says otherwise: most tests here acquire; the service flow
// and capacity are test/scaleset_assignment.test.js.
const SETTINGS = { pollMs: 300, lockExpiryMs: 2000, sessionIdleMs: 2000, scaleSetPollMs: POLL_MS, scaleSetSessionIdleMs: 1000, scaleSetAssignment: 'acquire' };
const RT = 'GitHub.Actions.Runtime.WebApi';
let gh;
let tmp;
const children = new Set();

const ctl = controlOf(() => gh);
async function http(method, url, { token, body, headers = {} } = {}) {
  const res = await fetch(url, {
    method, body: body === undefined ? undefined : JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
  });
  const text = await res.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { /* a text body */ }
  return { status: res.status, json, text, headers: res.headers };
}
const jwtPayload = (t) => JSON.parse(Buffer.from(t.split('.')[1], 'base64url').toString());

// Discovery as the clients do it: a registration token for the config URL's scope, then
// runner-registration -> { base (the Actions service), token (admin) }.
async function discover(scope = 'acme') {
  const regPath = scope.includes('/') ? `/repos/${scope}` : `/orgs/${scope}`;
  const reg = await http('POST', `${gh.url}/api/v3${regPath}/actions/runners/registration-token`, { token: PAT });
  assert.equal(reg.status, 201, reg.text);
  const d = await http('POST', `${gh.url}/api/v3/actions/runner-registration`, {
    headers: { authorization: `RemoteAuth ${reg.json.token}` }, body: { url: `${gh.url}/${scope}`, runner_event: 'register' },
  });
  assert.equal(d.status, 200, d.text);
  return { base: d.json.url, token: d.json.token };
}
// A client of one scope: as(method, path, body) against the Actions service with the admin token.
async function client(scope) {
  const c = await discover(scope);
  c.as = (method, p, body, token = c.token) => http(method, `${c.base}${p}${p.includes('?') ? '&' : '?'}api-version=6.0-preview`, { token, body });
  c.createSet = async (body) => {
    const r = await c.as('POST', '/_apis/runtime/runnerscalesets', { runnerGroupId: 1, RunnerSetting: {}, createdOn: '0001-01-01T00:00:00Z', ...body });
    assert.equal(r.status, 200, r.text);
    return r.json;
  };
  c.session = async (setId, ownerName = 'listener-1') => {
    const r = await c.as('POST', `/_apis/runtime/runnerscalesets/${setId}/sessions`, { ownerName, sessionId: '00000000-0000-0000-0000-000000000000' });
    assert.equal(r.status, 200, r.text);
    return r.json;
  };
  return c;
}
// A long poll on the session's queue; -> { status, envelope?, jobs? }.
async function poll(session, { last = 0, capacity = 10, token = session.messageQueueAccessToken } = {}) {
  const u = new URL(session.messageQueueUrl);
  if (last) u.searchParams.set('lastMessageId', String(last));
  const r = await http('GET', u.toString(), { token, headers: { accept: 'application/json; api-version=6.0-preview', 'x-scalesetmaxcapacity': String(capacity) } });
  if (r.status === 200 && r.json) r.jobs = JSON.parse(r.json.body);
  return r;
}
const ack = (session, id, token = session.messageQueueAccessToken) => http('DELETE', `${session.messageQueueUrl}/${id}`, { token });
// Polls (acknowledging) until `pred(job message)` has been seen; -> that job message.
async function nextJob(session, pred, state = { last: 0 }) {
  for (let i = 0; i < 40; i++) {
    const r = await poll(session, { last: state.last });
    if (r.status === 202) continue;
    assert.equal(r.status, 200, r.text);
    state.last = r.json.messageId;
    state.statistics = r.json.statistics;
    assert.equal((await ack(session, r.json.messageId)).status, 204);
    const hit = r.jobs.find(pred);
    if (hit) return hit;
  }
  throw new Error('no such job message');
}
const queueJob = (labels, extra = {}) => ctl('POST', '/jobs', { labels, owner: 'acme', repo: 'app', durationMs: 100, ...extra });
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

test.before(async () => {
  gh = await createGithub({ log: () => {} });
  await ctl('POST', '/settings', SETTINGS);
  await ctl('POST', '/pats', { token: PAT, owners: ['acme', 'solo'] });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'scalesets-test-'));
});
test.after(async () => {
  for (const p of children) p.kill('SIGKILL');
  await gh.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('discovery: the admin token is a JWT whose exp is its lifetime; it alone authorizes the service', async () => {
  const c = await client('acme');
  assert.equal(c.base, `${gh.url}/_services/pipelines`);
  const p = jwtPayload(c.token);
  const ttl = (await ctl('GET', '/settings')).adminTokenTtlMs;
  assert.ok(Math.abs(p.exp * 1000 - (Date.now() + ttl)) < 5000, JSON.stringify(p));
  let r = await c.as('GET', '/_apis/runtime/runnergroups/?groupName=default', undefined, 'not-a-token');
  assert.equal(r.status, 401);
  assert.match(r.json.typeName, /, /);
  r = await http('GET', `${c.base}/_apis/runtime/runnerscalesets?runnerGroupId=1&name=x`);
  assert.equal(r.status, 401);
  r = await c.as('GET', '/_apis/runtime/runnerscalesets?runnerGroupId=1&name=x');
  assert.equal(r.status, 200);
  assert.ok(r.headers.get('activityid'));
  assert.deepEqual(r.json, { count: 0, value: [] });
});

test('runner groups by name (case-insensitive), the owner\'s own groups', async () => {
  const c = await client('acme');
  const g = await ctl('POST', '/runner-groups', { owner: 'acme', name: 'Scale Pool' });
  let r = await c.as('GET', '/_apis/runtime/runnergroups/?groupName=default');
  assert.deepEqual(r.json, { count: 1, value: [{ id: 1, name: 'Default', size: 0, isDefaultGroup: true }] });
  r = await c.as('GET', '/_apis/runtime/runnergroups/?groupName=scale%20pool');
  assert.deepEqual(r.json.value.map((x) => [x.id, x.isDefaultGroup]), [[g.id, false]]);
  r = await c.as('GET', '/_apis/runtime/runnergroups/?groupName=nope');
  assert.deepEqual(r.json, { count: 0, value: [] });
  const repo = await client('acme/app'); // a repository has only the Default group
  r = await repo.as('GET', '/_apis/runtime/runnergroups/?groupName=scale%20pool');
  assert.equal(r.json.count, 0);
});

test('scale sets: create, get by name and id, partial update, unique names per group, delete', async () => {
  const c = await client('acme');
  const g = await ctl('POST', '/runner-groups', { owner: 'acme', name: 'crud-group' });
  const a = await c.createSet({ name: 'crud-a' });
  assert.deepEqual(a.labels, [{ type: 'System', name: 'crud-a' }]); // no labels: the name is the label
  assert.deepEqual([a.runnerGroupId, a.runnerGroupName], [1, 'Default']);
  assert.match(a.createdOn, RFC3339);
  assert.equal(a.runnerJitConfigUrl, `${c.base}/_apis/runtime/runnerscalesets/${a.id}/generatejitconfig`);
  assert.deepEqual(Object.keys(a.statistics).sort(), ['totalAcquiredJobs', 'totalAssignedJobs', 'totalAvailableJobs', 'totalBusyRunners', 'totalIdleRunners', 'totalRegisteredRunners', 'totalRunningJobs']);
  const b = await c.createSet({ name: 'crud-b', labels: [{ name: 'gpu' }, { type: 'User', name: 'big' }], RunnerSetting: { disableUpdate: true } });
  assert.deepEqual(b.labels, [{ type: 'System', name: 'gpu' }, { type: 'User', name: 'big' }]);
  assert.equal(b.RunnerSetting.disableUpdate, true);

  let r = await c.as('POST', '/_apis/runtime/runnerscalesets', { name: 'CRUD-A', runnerGroupId: 1 });
  assert.equal(r.status, 409);
  assert.match(r.json.typeName, /RunnerScaleSetExistsException/);
  assert.equal((await c.as('POST', '/_apis/runtime/runnerscalesets', { name: 'crud-a', runnerGroupId: g.id })).status, 200); // another group
  assert.equal((await c.as('POST', '/_apis/runtime/runnerscalesets', { runnerGroupId: 1 })).status, 400);
  assert.equal((await c.as('POST', '/_apis/runtime/runnerscalesets', { name: 'x', runnerGroupId: 999 })).status, 404);

  r = await c.as('GET', '/_apis/runtime/runnerscalesets?runnerGroupId=1&name=crud-a');
  assert.deepEqual([r.json.count, r.json.value[0].id], [1, a.id]);
  r = await c.as('GET', `/_apis/runtime/runnerscalesets/${a.id}`);
  assert.equal(r.json.name, 'crud-a');

  // Partial: only the name; only the group; only labels; an empty RunnerSetting changes nothing.
  r = await c.as('PATCH', `/_apis/runtime/runnerscalesets/${b.id}`, { name: 'crud-b2', RunnerSetting: {}, createdOn: '0001-01-01T00:00:00Z' });
  assert.deepEqual([r.status, r.json.name, r.json.labels.length, r.json.RunnerSetting.disableUpdate], [200, 'crud-b2', 2, true]);
  r = await c.as('PATCH', `/_apis/runtime/runnerscalesets/${b.id}`, { runnerGroupId: g.id });
  assert.deepEqual([r.json.runnerGroupId, r.json.runnerGroupName, r.json.name], [g.id, 'crud-group', 'crud-b2']);
  r = await c.as('PATCH', `/_apis/runtime/runnerscalesets/${b.id}`, { labels: [{ name: 'tpu' }] });
  assert.deepEqual(r.json.labels, [{ type: 'System', name: 'tpu' }]);
  r = await c.as('PATCH', `/_apis/runtime/runnerscalesets/${b.id}`, { name: 'crud-a' }); // taken in crud-group
  assert.equal(r.status, 409);

  // Another scope does not see these sets.
  const other = await client('solo');
  r = await other.as('GET', `/_apis/runtime/runnerscalesets/${a.id}`);
  assert.equal(r.status, 404);
  assert.equal(r.json.typeName, `${RT}.RunnerScaleSetNotFoundException, ${RT}`);

  assert.equal((await c.as('DELETE', `/_apis/runtime/runnerscalesets/${a.id}`)).status, 204);
  assert.equal((await c.as('GET', `/_apis/runtime/runnerscalesets/${a.id}`)).status, 404);
  assert.equal((await c.as('GET', '/_apis/runtime/runnerscalesets?runnerGroupId=1&name=crud-a')).json.count, 0);
});

test('sessions: one per set (409), refresh gives a new queue token, delete, stale ids, lapse', async () => {
  const c = await client('acme');
  const set = await c.createSet({ name: 'sess-set' });
  const s1 = await c.session(set.id);
  assert.match(s1.sessionId, /^[0-9a-f-]{36}$/);
  assert.equal(s1.ownerName, 'listener-1');
  assert.equal(s1.runnerScaleSet.id, set.id);
  assert.match(s1.messageQueueUrl, /^http:\/\/127\.0\.0\.1:\d+\//);
  assert.equal(jwtPayload(s1.messageQueueAccessToken).sid, s1.sessionId);
  assert.ok(s1.statistics);

  const p = poll(s1); // an open poll keeps the session live past the idle time
  let r = await c.as('POST', `/_apis/runtime/runnerscalesets/${set.id}/sessions`, { ownerName: 'listener-2' });
  assert.equal(r.status, 409);
  assert.equal(r.json.typeName, `${RT}.RunnerScaleSetSessionConflictException, ${RT}`);
  assert.equal((await p).status, 202);

  r = await c.as('PATCH', `/_apis/runtime/runnerscalesets/${set.id}/sessions/${s1.sessionId}`);
  assert.equal(r.status, 200);
  assert.equal(r.json.sessionId, s1.sessionId);
  assert.notEqual(r.json.messageQueueAccessToken, s1.messageQueueAccessToken);
  assert.equal((await poll(s1)).status, 401); // the old token
  const s1b = r.json;
  assert.equal((await poll(s1b)).status, 202);

  assert.equal((await c.as('DELETE', `/_apis/runtime/runnerscalesets/${set.id}/sessions/${s1.sessionId}`)).status, 204);
  r = await c.as('DELETE', `/_apis/runtime/runnerscalesets/${set.id}/sessions/${s1.sessionId}`);
  assert.equal(r.status, 400);
  assert.equal(r.json.typeName, `${RT}.RunnerScaleSetSessionExpiredException, ${RT}`);
  assert.equal((await c.as('PATCH', `/_apis/runtime/runnerscalesets/${set.id}/sessions/${s1.sessionId}`)).status, 404);
  assert.equal((await poll(s1b)).status, 401);

  // A session left behind (its listener died) blocks a new one until it lapses.
  const s2 = await c.session(set.id, 'listener-2');
  r = await c.as('POST', `/_apis/runtime/runnerscalesets/${set.id}/sessions`, { ownerName: 'listener-3' });
  assert.equal(r.status, 409);
  await sleep(SETTINGS.scaleSetSessionIdleMs + 100);
  assert.equal((await ctl('GET', `/scalesets/${set.id}`)).session.live, false);
  const s3 = await c.session(set.id, 'listener-3');
  assert.equal((await poll(s2)).status, 401); // replaced
  assert.equal((await c.as('DELETE', `/_apis/runtime/runnerscalesets/${set.id}/sessions/${s2.sessionId}`)).status, 400);

  assert.equal((await c.as('DELETE', `/_apis/runtime/runnerscalesets/${set.id}`)).status, 204);
  r = await c.as('POST', `/_apis/runtime/runnerscalesets/${set.id}/sessions`, { ownerName: 'x' });
  assert.equal(r.status, 404);
  assert.match(r.json.typeName, /RunnerScaleSetNotFoundException/);
  assert.equal((await poll(s3)).status, 404);
});

test('a session the service forgets: its queue 401, its refresh 404 in either shape, its delete 400, a new one at once', async (t) => {
  const c = await client('acme');
  const set = await c.createSet({ name: 'lost-set' });
  const sessions = `/_apis/runtime/runnerscalesets/${set.id}/sessions`;
  t.after(() => ctl('POST', '/settings', { scaleSetLostSession: 'RunnerAdminException' }));

  // By default as GitHub was reported to answer a session its broker evicted.
  assert.equal((await ctl('GET', '/settings')).scaleSetLostSession, 'RunnerAdminException');
  const s1 = await c.session(set.id);
  const held = poll(s1);
  await sleep(50);
  assert.deepEqual(await ctl('POST', `/scalesets/${set.id}/drop-session`), { id: set.id, sessionId: s1.sessionId });
  assert.equal((await held).status, 401, 'the open poll ends');
  assert.equal((await poll(s1)).status, 401);
  let r = await c.as('PATCH', `${sessions}/${s1.sessionId}`);
  assert.equal(r.status, 404);
  assert.deepEqual(r.json, { typeName: 'RunnerAdminException', message: "runner referenced a session ID that doesn't exist in redis" });
  assert.equal((await c.as('DELETE', `${sessions}/${s1.sessionId}`)).status, 400);
  assert.equal((await ctl('GET', `/scalesets/${set.id}`)).session, null);

  // The other shape, by setting; a new session is created at once (no conflict).
  await ctl('POST', '/settings', { scaleSetLostSession: 'RunnerScaleSetSessionNotFoundException' });
  const s2 = await c.session(set.id, 'listener-2');
  await ctl('POST', `/scalesets/${set.id}/drop-session`);
  r = await c.as('PATCH', `${sessions}/${s2.sessionId}`);
  assert.equal(r.status, 404);
  assert.equal(r.json.typeName, `${RT}.RunnerScaleSetSessionNotFoundException, ${RT}`);
  // A replaced session's refresh answers the same.
  const s3 = await c.session(set.id, 'listener-3');
  await sleep(SETTINGS.scaleSetSessionIdleMs + 100);
  const s4 = await c.session(set.id, 'listener-4');
  r = await c.as('PATCH', `${sessions}/${s3.sessionId}`);
  assert.deepEqual([r.status, r.json.typeName], [404, `${RT}.RunnerScaleSetSessionNotFoundException, ${RT}`]);
  assert.equal((await poll(s4)).status, 202);

  // Nothing to drop without a session; an unknown shape is refused.
  await ctl('POST', `/scalesets/${set.id}/drop-session`);
  assert.equal((await gh.control('POST', `/scalesets/${set.id}/drop-session`)).status, 409);
  assert.ok((await gh.control('POST', '/settings', { scaleSetLostSession: 'NotFoundException' })).status >= 400);
});

test('time factor: a scale set\'s long poll and session lapse scale with the rest', async (t) => {
  const before = await ctl('GET', '/settings');
  t.after(() => ctl('POST', '/settings', before));
  const s = await ctl('POST', '/settings', { timeFactor: 0.01 });
  assert.deepEqual([s.scaleSetPollMs, s.scaleSetSessionIdleMs, s.sessionConflictMs], [500, 2400, 2400]);
  const given = await ctl('POST', '/settings', { timeFactor: 0.01, scaleSetSessionIdleMs: 700 });
  assert.equal(given.scaleSetSessionIdleMs, 700, 'a key given with it wins');
});

test('the queue: 202 after the hold, JobAvailable at once, redelivery until acknowledged, 50 per batch', async () => {
  const c = await client('acme');
  const set = await c.createSet({ name: 'q-set', labels: [{ name: 'q-set' }, { name: 'linux' }] });
  const s = await c.session(set.id);
  let t0 = Date.now();
  let r = await poll(s);
  assert.equal(r.status, 202);
  assert.ok(Date.now() - t0 >= POLL_MS - 20, `held ${Date.now() - t0} ms`);
  assert.equal((await poll(s, { token: 'nope' })).status, 401);
  r = await http('GET', s.messageQueueUrl, { token: s.messageQueueAccessToken, headers: { 'x-scalesetmaxcapacity': 'lots' } });
  assert.equal(r.status, 400);

  // A held poll is answered as soon as a matching job is queued.
  const held = poll(s, { capacity: 7 });
  await sleep(50);
  t0 = Date.now();
  const job = await queueJob(['q-set', 'linux'], { name: 'q-job' });
  await queueJob(['linux', 'gpu']); // not all of its labels are the set's: not offered
  r = await held;
  assert.equal(r.status, 200);
  assert.ok(Date.now() - t0 < POLL_MS, 'answered at once');
  assert.equal((await ctl('GET', `/scalesets/${set.id}`)).maxCapacity, 7);
  assert.equal(r.json.messageType, 'RunnerScaleSetJobMessages');
  assert.equal(typeof r.json.body, 'string');
  assert.ok(r.json.messageId > 100000000);
  assert.equal(r.jobs.length, 1);
  const m = r.jobs[0];
  assert.deepEqual([m.messageType, m.runnerRequestId, m.repositoryName, m.ownerName, m.jobDisplayName, m.eventName], ['JobAvailable', job.id, 'app', 'acme', 'q-job', 'push']);
  assert.deepEqual(m.requestLabels, ['q-set', 'linux']);
  assert.match(m.jobWorkflowRef, /^acme\/app\/\.github\/workflows\/[^@]+@refs\/heads\/main$/);
  assert.equal(typeof m.jobId, 'string');
  assert.ok(Number.isSafeInteger(m.workflowRunId) && m.workflowRunId > 0);
  assert.equal(m.acquireJobUrl, `${c.base}/_apis/runtime/runnerscalesets/${set.id}/acquirejobs`);
  for (const k of ['queueTime', 'scaleSetAssignTime', 'runnerAssignTime', 'finishTime']) assert.match(m[k], RFC3339);
  assert.equal(m.scaleSetAssignTime, '0001-01-01T00:00:00Z');
  assert.equal(r.json.statistics.totalAvailableJobs, 1);

  // Not acknowledged: the same message again from 0 (a restarted listener), none after its id.
  const again = await poll(s);
  assert.deepEqual([again.json.messageId, again.json.body], [r.json.messageId, r.json.body]);
  assert.equal((await poll(s, { last: r.json.messageId })).status, 202);
  let msgs = await ctl('GET', `/scalesets/${set.id}/messages`);
  assert.deepEqual(msgs.unacknowledged.map((e) => [e.messageId, e.deliveries]), [[r.json.messageId, 2]]);
  assert.equal((await ack(s, r.json.messageId)).status, 204);
  assert.equal((await poll(s)).status, 202);
  msgs = await ctl('GET', `/scalesets/${set.id}/messages`);
  assert.deepEqual([msgs.unacknowledged.length, msgs.acknowledged.at(-1)], [0, r.json.messageId]);

  // 60 jobs: a batch of 50, then 10.
  for (let i = 0; i < 60; i++) await queueJob(['q-set'], { name: `bulk-${i}` });
  const first = await poll(s);
  assert.equal(first.jobs.length, 50);
  const second = await poll(s, { last: first.json.messageId });
  assert.equal(second.jobs.length, 10);
  assert.ok(second.json.messageId > first.json.messageId);
  assert.equal(second.json.statistics.totalAvailableJobs, 61);
  for (const e of [first, second]) assert.equal((await ack(s, e.json.messageId)).status, 204);

  // The legacy listener's acquirable jobs (admin token).
  r = await c.as('GET', `/_apis/runtime/runnerscalesets/${set.id}/acquirablejobs`);
  assert.deepEqual([r.status, r.json.count, r.json.value[0].messageType], [200, 61, 'JobAvailable']);
  assert.equal((await c.as('DELETE', `/_apis/runtime/runnerscalesets/${set.id}`)).status, 204);
  // Its jobs went back to the queue, offered to no set now.
  assert.equal((await ctl('GET', `/jobs/${job.id}`)).scaleSet, null);
});

test('acquirejobs (queue token) -> JobAssigned; statistics; nobody takes it -> canceled and offered again', async (t) => {
  const before = { ...(await ctl('GET', '/settings')) }; // a copy: control hands out the live settings
  t.after(() => ctl('POST', '/settings', { scaleSetAssignTimeoutMs: before.scaleSetAssignTimeoutMs, scaleSetRequeueDelayMs: before.scaleSetRequeueDelayMs, scaleSetMaxRequeues: before.scaleSetMaxRequeues }));
  await ctl('POST', '/settings', { scaleSetAssignTimeoutMs: 400, scaleSetRequeueDelayMs: 100, scaleSetMaxRequeues: 1 });
  const c = await client('acme');
  const set = await c.createSet({ name: 'acq-set' });
  const s = await c.session(set.id);
  const job = await queueJob(['acq-set']);
  const state = { last: 0 };
  await nextJob(s, (m) => m.messageType === 'JobAvailable' && m.runnerRequestId === job.id, state);
  const acquire = (body, token = s.messageQueueAccessToken) => http('POST', `${c.base}/_apis/runtime/runnerscalesets/${set.id}/acquirejobs?api-version=6.0-preview`, { token, body });
  assert.equal((await acquire([job.id], c.token)).status, 401); // the admin token is not the queue's
  assert.equal((await acquire({ ids: [job.id] })).status, 400);
  let r = await acquire([job.id, 999999]);
  assert.deepEqual(r.json, { count: 1, value: [job.id] });
  const assigned = await nextJob(s, (m) => m.messageType === 'JobAssigned', state);
  assert.equal(assigned.runnerRequestId, job.id);
  assert.notEqual(assigned.scaleSetAssignTime, '0001-01-01T00:00:00Z');
  assert.deepEqual(await ctl('GET', `/scalesets/${set.id}/statistics`), {
    totalAvailableJobs: 0, totalAcquiredJobs: 1, totalAssignedJobs: 1, totalRunningJobs: 0, totalRegisteredRunners: 0, totalBusyRunners: 0, totalIdleRunners: 0,
  });
  assert.equal((await c.as('GET', `/_apis/runtime/runnerscalesets/${set.id}/acquirablejobs`)).status, 204);

  // No runner: canceled, then available again; the second time it is canceled for good.
  const canceled = await nextJob(s, (m) => m.messageType === 'JobCompleted', state);
  assert.deepEqual([canceled.runnerRequestId, canceled.result], [job.id, 'canceled']);
  await nextJob(s, (m) => m.messageType === 'JobAvailable' && m.runnerRequestId === job.id, state);
  r = await acquire([job.id]);
  assert.deepEqual(r.json.value, [job.id]);
  await nextJob(s, (m) => m.messageType === 'JobCompleted' && m.result === 'canceled', state);
  await until(async () => (await ctl('GET', `/jobs/${job.id}`)).state === 'completed', 3000, 'the job canceled');
  assert.equal((await ctl('GET', `/jobs/${job.id}`)).result, 'Canceled');
  assert.equal((await ctl('GET', `/scalesets/${set.id}/statistics`)).totalAssignedJobs, 0);
});

test('a run cancelled before a runner started its job: JobCompleted canceled, nothing assigned, not offered again', async () => {
  const c = await client('acme');
  const set = await c.createSet({ name: 'cancel-set' });
  const s = await c.session(set.id);
  const job = await queueJob(['cancel-set']);
  const state = { last: 0 };
  await nextJob(s, (m) => m.messageType === 'JobAvailable' && m.runnerRequestId === job.id, state);
  const r = await http('POST', `${c.base}/_apis/runtime/runnerscalesets/${set.id}/acquirejobs?api-version=6.0-preview`, { token: s.messageQueueAccessToken, body: [job.id] });
  assert.deepEqual(r.json.value, [job.id]);
  await nextJob(s, (m) => m.messageType === 'JobAssigned' && m.runnerRequestId === job.id, state);
  assert.equal((await ctl('GET', `/scalesets/${set.id}/statistics`)).totalAssignedJobs, 1);

  const fate = await ctl('POST', `/jobs/${job.id}/cancel`);
  assert.deepEqual([fate.state, fate.result, fate.dispatches.length], ['completed', 'Canceled', 0]);
  const done = await nextJob(s, (m) => m.messageType === 'JobCompleted' && m.runnerRequestId === job.id, state);
  assert.deepEqual([done.result, done.runnerId, done.runnerName], ['canceled', 0, '']);
  assert.equal((await ctl('GET', `/scalesets/${set.id}/statistics`)).totalAssignedJobs, 0);
  await assert.rejects(ctl('POST', `/jobs/${job.id}/cancel`), /409/, 'over: not cancelled twice');
  await assert.rejects(ctl('POST', '/jobs/999999/cancel'), /404/);
});

test('a job end to end: JIT runner of the set (runner stand-in) -> JobStarted, JobCompleted, runner gone', async () => {
  const c = await client('acme/app'); // a repository's scale set
  const set = await c.createSet({ name: 'e2e-set' });
  const s = await c.session(set.id);
  const stray = await queueJob(['other-label'], { name: 'stray' }); // not the set's: its runner never takes it
  const job = await queueJob(['e2e-set'], { name: 'e2e-job', durationMs: 200 });
  const state = { last: 0 };
  await nextJob(s, (m) => m.messageType === 'JobAvailable' && m.runnerRequestId === job.id, state);
  const acq = await http('POST', `${c.base}/_apis/runtime/runnerscalesets/${set.id}/acquirejobs`, { token: s.messageQueueAccessToken, body: [job.id] });
  assert.deepEqual(acq.json.value, [job.id]);
  await nextJob(s, (m) => m.messageType === 'JobAssigned', state);

  let r = await c.as('POST', `/_apis/runtime/runnerscalesets/${set.id}/generatejitconfig`, { name: 'e2e-runner', workFolder: '_work' });
  assert.equal(r.status, 200, r.text);
  const { runner, encodedJITConfig } = r.json;
  assert.deepEqual([runner.name, runner.runnerScaleSetId], ['e2e-runner', set.id]);
  const files = JSON.parse(Buffer.from(encodedJITConfig, 'base64').toString());
  assert.deepEqual(Object.keys(files).sort(), ['.credentials', '.credentials_rsaparams', '.runner']);
  assert.equal(JSON.parse(Buffer.from(files['.runner'], 'base64')).ephemeral, true);
  r = await c.as('POST', `/_apis/runtime/runnerscalesets/${set.id}/generatejitconfig`, { name: 'e2e-runner' });
  assert.equal(r.status, 409);
  assert.match(r.json.typeName, /AgentExistsException/);
  r = await c.as('GET', '/_apis/distributedtask/pools/0/agents?agentName=e2e-runner');
  assert.deepEqual(r.json, { count: 1, value: [{ id: runner.id, name: 'e2e-runner', runnerScaleSetId: set.id }] });
  assert.equal((await ctl('GET', `/scalesets/${set.id}/statistics`)).totalIdleRunners, 1);

  const root = path.join(tmp, 'e2e-runner');
  execFileSync('cp', ['-a', path.join(__dirname, '..', 'runner'), root]);
  const env = { ...process.env, RUNNER_ALLOW_RUNASROOT: '1', ACTIONS_RUNNER_INPUT_JITCONFIG: encodedJITConfig };
  delete env.NODE_TEST_CONTEXT;
  const p = spawn(path.join(root, 'bin', 'Runner.Listener'), ['run'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(p);
  let out = '';
  p.stdout.on('data', (d) => { out += d; });
  p.stderr.on('data', (d) => { out += d; });
  const exited = new Promise((resolve) => p.on('exit', (code) => { children.delete(p); resolve(code); }));

  const started = await nextJob(s, (m) => m.messageType === 'JobStarted', state);
  assert.deepEqual([started.runnerRequestId, started.runnerId, started.runnerName], [job.id, runner.id, 'e2e-runner']);
  assert.notEqual(started.runnerAssignTime, '0001-01-01T00:00:00Z');
  const done = await nextJob(s, (m) => m.messageType === 'JobCompleted', state);
  assert.deepEqual([done.result, done.runnerId, done.runnerName], ['succeeded', runner.id, 'e2e-runner']);
  assert.ok(Date.parse(done.finishTime) >= Date.parse(started.runnerAssignTime));
  assert.equal(await Promise.race([exited, sleep(10000).then(() => `still running:\n${out}`)]), 0);
  assert.match(out, /Job e2e-job completed with result: Succeeded/);

  r = await c.as('GET', `/_apis/distributedtask/pools/0/agents/${runner.id}`);
  assert.equal(r.status, 404);
  assert.match(r.json.typeName, /AgentNotFoundException/);
  assert.deepEqual(await ctl('GET', `/scalesets/${set.id}/statistics`), {
    totalAvailableJobs: 0, totalAcquiredJobs: 0, totalAssignedJobs: 0, totalRunningJobs: 0, totalRegisteredRunners: 0, totalBusyRunners: 0, totalIdleRunners: 0,
  });
  assert.equal((await ctl('GET', `/jobs/${stray.id}`)).state, 'queued');
});

test('runners: lookup, removal (idempotent; refused while busy), and a set with a busy runner is not deleted', async () => {
  const c = await client('acme');
  const set = await c.createSet({ name: 'rm-set' });
  const jit = (await c.as('POST', `/_apis/runtime/runnerscalesets/${set.id}/generatejitconfig`, { name: 'rm-runner' })).json;
  const id = jit.runner.id;
  assert.deepEqual((await c.as('GET', `/_apis/distributedtask/pools/0/agents/${id}`)).json, { id, name: 'rm-runner', runnerScaleSetId: set.id });
  assert.deepEqual((await c.as('GET', '/_apis/distributedtask/pools/0/agents?agentName=nobody')).json, { count: 0, value: [] });
  await ctl('POST', `/runners/${id}/busy`, { busy: true });
  let r = await c.as('DELETE', `/_apis/distributedtask/pools/0/agents/${id}`);
  assert.equal(r.status, 400);
  assert.match(r.json.typeName, /JobStillRunningException/);
  r = await c.as('DELETE', `/_apis/runtime/runnerscalesets/${set.id}`);
  assert.equal(r.status, 400);
  assert.match(r.json.typeName, /JobStillRunningException/);
  await ctl('POST', `/runners/${id}/busy`, { busy: false });
  assert.equal((await c.as('DELETE', `/_apis/distributedtask/pools/0/agents/${id}`)).status, 204);
  assert.equal((await c.as('DELETE', `/_apis/distributedtask/pools/0/agents/${id}`)).status, 204);

  const idle = (await c.as('POST', `/_apis/runtime/runnerscalesets/${set.id}/generatejitconfig`, { name: 'rm-idle' })).json.runner;
  assert.equal((await c.as('DELETE', `/_apis/runtime/runnerscalesets/${set.id}`)).status, 204);
  assert.equal((await c.as('GET', `/_apis/distributedtask/pools/0/agents/${idle.id}`)).status, 404); // removed with its set
});

test('JIT keys: a new RSA key per configuration, or one preset key (jitKeyPem) for benchmarks', async () => {
  const c = await client('acme');
  const set = await c.createSet({ name: 'key-set' });
  const modulusOf = async (name) => {
    const r = await c.as('POST', `/_apis/runtime/runnerscalesets/${set.id}/generatejitconfig`, { name });
    assert.equal(r.status, 200, r.text);
    const files = JSON.parse(Buffer.from(r.json.encodedJITConfig, 'base64').toString());
    return JSON.parse(Buffer.from(files['.credentials_rsaparams'], 'base64')).modulus;
  };
  assert.notEqual(await modulusOf('key-a'), await modulusOf('key-b'));
  const { privateKey } = require('node:crypto').generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' });
  await ctl('POST', '/settings', { jitKeyPem: pem });
  try {
    const want = Buffer.from(privateKey.export({ format: 'jwk' }).n, 'base64url').toString('base64');
    assert.equal(await modulusOf('key-c'), want);
    assert.equal(await modulusOf('key-d'), want);
    await assert.rejects(ctl('POST', '/settings', { jitKeyPem: 'not a key' }), /not a private key/);
    const { privateKey: ec } = require('node:crypto').generateKeyPairSync('ec', { namedCurve: 'P-256' });
    await assert.rejects(ctl('POST', '/settings', { jitKeyPem: ec.export({ type: 'pkcs8', format: 'pem' }) }), /must be an RSA key/);
  } finally {
    await ctl('POST', '/settings', { jitKeyPem: '' });
  }
  assert.notEqual(await modulusOf('key-e'), await modulusOf('key-f'));
});

test('fault knobs: 5xx and 429 for the next N calls, an empty 200, expired tokens, a forced conflict, a set deleted behind the client', async () => {
  const c = await client('acme');
  const set = await c.createSet({ name: 'fault-set' });
  const byId = () => c.as('GET', `/_apis/runtime/runnerscalesets/${set.id}`);

  await ctl('POST', '/scalesets/faults', { operation: 'getScaleSetById', status: 503, count: 2, retryAfterSeconds: 3 });
  await ctl('POST', '/scalesets/faults', { operation: 'getScaleSetById', status: 500 });
  let r = await byId();
  assert.deepEqual([r.status, r.headers.get('retry-after')], [503, '3']);
  assert.equal((await byId()).status, 503);
  r = await byId();
  assert.deepEqual([r.status, r.headers.get('retry-after')], [500, null]);
  assert.equal((await byId()).status, 200);
  await ctl('POST', '/scalesets/faults', { operation: 'createSession', status: 429, retryAfterSeconds: 2 });
  await ctl('POST', '/scalesets/faults', { operation: 'acquireJobs', status: 502 });
  r = await c.as('POST', `/_apis/runtime/runnerscalesets/${set.id}/sessions`, { ownerName: 'x' });
  assert.deepEqual([r.status, r.headers.get('retry-after')], [429, '2']);
  await ctl('POST', '/scalesets/faults', { operation: 'getRunnerGroup', status: 502 });
  r = await c.as('GET', '/_apis/runtime/runnergroups/?groupName=default');
  assert.deepEqual([r.status, r.text, r.headers.get('retry-after')], [502, 'Bad Gateway', null]);
  assert.deepEqual((await ctl('GET', '/scalesets/faults')).pending, { acquireJobs: [{ status: 502, retryAfterSeconds: 1 }] });
  await ctl('DELETE', '/scalesets/faults');
  for (const bad of [{ operation: 'nope', status: 500 }, { operation: 'getRunner', status: 404 }, { operation: 'getRunner', status: 'empty' }, { operation: 'getRunner', status: 500, count: 0 }]) {
    assert.equal((await gh.control('POST', '/scalesets/faults', bad)).status, 400, JSON.stringify(bad));
  }

  // A forced conflict: an orphaned session live for a while, then lapsed.
  await ctl('POST', `/scalesets/${set.id}/session-conflict`, { ms: 400 });
  r = await c.as('POST', `/_apis/runtime/runnerscalesets/${set.id}/sessions`, { ownerName: 'x' });
  assert.equal(r.status, 409);
  assert.match(r.json.typeName, /RunnerScaleSetSessionConflictException/);
  await sleep(450);
  const s = await c.session(set.id);

  // An empty 200 on the poll.
  await ctl('POST', '/scalesets/faults', { operation: 'getMessage', status: 'empty' });
  r = await poll(s);
  assert.deepEqual([r.status, r.text], [200, '']);

  // The queue token expires: 401, then the session's refresh gives a working one.
  await ctl('POST', `/scalesets/${set.id}/expire-queue-token`);
  assert.equal((await poll(s)).status, 401);
  const fresh = (await c.as('PATCH', `/_apis/runtime/runnerscalesets/${set.id}/sessions/${s.sessionId}`)).json;
  assert.equal((await poll(fresh)).status, 202);

  // Admin tokens expire: 401 until discovery is done again.
  await ctl('POST', '/scalesets/expire-admin-tokens');
  assert.equal((await byId()).status, 401);
  const c2 = await client('acme');
  assert.equal((await c2.as('GET', `/_apis/runtime/runnerscalesets/${set.id}`)).status, 200);

  // The set deleted behind the client's back: its poll and calls answer 404.
  const held = poll(fresh);
  await sleep(50);
  await ctl('DELETE', `/scalesets/${set.id}`);
  r = await held;
  assert.equal(r.status, 404);
  assert.match(r.json.typeName, /RunnerScaleSetNotFoundException/);
  assert.equal((await c2.as('GET', `/_apis/runtime/runnerscalesets/${set.id}`)).status, 404);
  assert.equal((await c2.as('POST', `/_apis/runtime/runnerscalesets/${set.id}/generatejitconfig`, { name: 'late' })).status, 404);
  assert.equal((await gh.control('GET', `/scalesets/${set.id}`)).status, 404);
  assert.ok((await ctl('GET', '/scalesets')).scaleSets.every((x) => x.id !== set.id));
});
