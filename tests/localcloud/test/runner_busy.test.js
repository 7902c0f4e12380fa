'use strict';
// The runner's paths that print "Running job" (or nothing) and never "completed with result",
// each a broker fault on the job, and the signals an agent has of a job request: the perf log
// (every job message, before acknowledge), the _diag acknowledge line (only when the server asks,
// tagged by the listener class) and the Worker process.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, execFile } = require('node:child_process');
const { createGithub } = require('../github');
const { sleep, until, controlOf } = require('../testing/wait');

const TEMPLATE = path.join(__dirname, '..', 'runner');
const PAT = 'ghp_runner_busy_pat';
const SETTINGS = { pollMs: 300, lockExpiryMs: 1500, sessionIdleMs: 2000, sessionConflictMs: 1000, channelTimeoutMs: 500 };
// Bounds on waits, generous: CI runs this file beside the sanitizer suites on two cores.
const BOUND_MS = 20000;
let gh;
let octo;
let tmp;
const children = new Set();

const ctl = controlOf(() => gh);
const env = (extra) => { const e = { ...process.env, ...extra }; delete e.NODE_TEST_CONTEXT; return e; };
const sh = (file, args, extra) => new Promise((resolve) => {
  execFile(file, args, { env: env(extra), timeout: 20000 }, (err, stdout, stderr) => resolve({ code: err ? err.code : 0, stdout, stderr }));
});

// A configured runner root with a running Listener; its perf log goes to <root>/perf.
async function startRunner(name) {
  const root = path.join(tmp, name);
  assert.equal((await sh('cp', ['-a', TEMPLATE, root])).code, 0);
  const token = (await octo.request('POST /repos/acme/app/actions/runners/registration-token')).data.token;
  const c = await sh(path.join(root, 'config.sh'), ['--url', `${gh.url}/acme/app`, '--name', name, '--labels', name, '--unattended'],
    { RUNNER_ALLOW_RUNASROOT: '1', ACTIONS_RUNNER_INPUT_TOKEN: token });
  assert.equal(c.code, 0, c.stderr);
  const p = spawn(path.join(root, 'bin', 'Runner.Listener'), ['run'], { env: env({ RUNNER_PERFLOG: path.join(root, 'perf') }), stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(p);
  const l = { p, root, out: '' };
  p.stdout.on('data', (d) => { l.out += d; });
  p.stderr.on('data', (d) => { l.out += d; });
  p.on('exit', () => children.delete(p));
  l.waitFor = (re, ms = BOUND_MS) => until(() => re.test(l.out), ms, `${re} in:\n${l.out}`);
  l.perf = () => { try { return fs.readFileSync(path.join(root, 'perf', 'Runner.perf'), 'utf8'); } catch { return ''; } };
  l.diag = () => fs.readdirSync(path.join(root, '_diag')).filter((f) => /^Runner_.*\.log$/.test(f))
    .map((f) => fs.readFileSync(path.join(root, '_diag', f), 'utf8')).join('');
  await l.waitFor(/Listening for Jobs/);
  return l;
}
const jobOf = (id) => ctl('GET', `/jobs/${id}`);
const workers = (root) => fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).filter((pid) => {
  try {
    const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmd.includes('Runner.Worker') && cmd.includes(root);
  } catch { return false; }
});
const counters = (perf) => perf.split('\n').filter(Boolean).map((l) => {
  assert.match(l, /^[A-Za-z_0-9]+:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'Counter:ISO8601');
  return l.slice(0, l.indexOf(':'));
});

test.before(async () => {
  const { Octokit } = await import('@octokit/rest');
  gh = await createGithub({ log: () => {} });
  await ctl('POST', '/settings', SETTINGS);
  await ctl('POST', '/pats', { token: PAT, owners: ['acme'] });
  octo = new Octokit({ auth: PAT, baseUrl: `${gh.url}/api/v3`, log: { debug() {}, info() {}, warn() {}, error() {} } });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'runner-busy-test-'));
});
test.after(async () => {
  for (const p of children) p.kill('SIGKILL');
  await gh.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('settings: shouldAcknowledge is off by default, listener is broker; bad values are refused', async () => {
  const s = await ctl('GET', '/settings');
  assert.equal(s.shouldAcknowledge, false);
  assert.equal(s.listener, 'broker');
  assert.equal((await gh.control('POST', '/settings', { shouldAcknowledge: 'yes' })).status, 400);
  assert.equal((await gh.control('POST', '/settings', { listener: 'v3' })).status, 400);
  assert.equal((await gh.control('POST', '/jobs', { label: 'x', fault: 'explode' })).status, 400);
});

test('no acknowledge unless the server asks; the perf counter comes for every job message; both listener tags', async (t) => {
  t.after(() => ctl('POST', '/settings', { shouldAcknowledge: false, listener: 'broker' }));
  const l = await startRunner('ack-off');
  const j1 = await ctl('POST', '/jobs', { label: 'ack-off', durationMs: 50 });
  await l.waitFor(/Job job-\d+ completed with result: Succeeded/);
  assert.equal((await jobOf(j1.id)).dispatches[0].acknowledgedAt, null, 'not acknowledged');
  assert.doesNotMatch(l.diag(), /Acknowledging runner request/);
  assert.deepEqual(counters(l.perf()).filter((c) => c !== 'SessionCreated'),
    ['MessageReceived_RunnerJobRequest', `JobRequestRenewed_${j1.id}`, `SentJobToWorker_${j1.id}`]);
  l.p.kill('SIGINT');

  await ctl('POST', '/settings', { shouldAcknowledge: true, listener: 'legacy' });
  const m = await startRunner('ack-legacy');
  const j2 = await ctl('POST', '/jobs', { label: 'ack-legacy', durationMs: 50 });
  await m.waitFor(/completed with result: Succeeded/);
  assert.ok((await jobOf(j2.id)).dispatches[0].acknowledgedAt, 'acknowledged');
  assert.match(m.diag(), new RegExp(`INFO MessageListener\\] Acknowledging runner request '${j2.id}'\\.`));
  assert.doesNotMatch(m.diag(), /BrokerMessageListener\] Acknowledging/);
  m.p.kill('SIGINT');

  await ctl('POST', '/settings', { listener: 'broker' });
  const b = await startRunner('ack-broker');
  const j3 = await ctl('POST', '/jobs', { label: 'ack-broker', durationMs: 50 });
  await b.waitFor(/completed with result: Succeeded/);
  assert.match(b.diag(), new RegExp(`INFO BrokerMessageListener\\] Acknowledging runner request '${j3.id}'\\.`));
  b.p.kill('SIGINT');
});

for (const status of [404, 409, 422]) {
  test(`acquire answering ${status}: "Skipping message Job", no "Running job", no Worker; the runner takes the next job`, async () => {
    const name = `acq-${status}`;
    const l = await startRunner(name);
    const j = await ctl('POST', '/jobs', { label: name, fault: `acquire${status}` });
    await until(async () => (await jobOf(j.id)).state === 'refused', BOUND_MS, 'refused');
    assert.equal((await jobOf(j.id)).refusedWith, status);
    await until(() => /Skipping message Job/.test(l.diag()), BOUND_MS, 'Skipping message Job');
    assert.deepEqual(counters(l.perf()), ['SessionCreated', 'MessageReceived_RunnerJobRequest']);
    assert.doesNotMatch(l.out, /Running job|completed with result/);
    const next = await ctl('POST', '/jobs', { label: name, durationMs: 50 });
    await l.waitFor(/Job job-\d+ completed with result: Succeeded/);
    // The Listener prints the result before it completes the job request, as the runner does.
    await until(async () => (await jobOf(next.id)).state === 'completed', BOUND_MS, 'next job completed');
    l.p.kill('SIGINT');
  });
}

test('the first renew failing: "Running job", no Worker, no "completed"; the job is lost', async () => {
  const r = await startRunner('renew-fails');
  const f = await ctl('POST', '/jobs', { label: 'renew-fails', fault: 'renewFails' });
  await r.waitFor(/Running job: /);
  await until(() => /Unable to renew job request .* for the first time/.test(r.diag()), BOUND_MS, 'first renew failure');
  await sleep(300);
  assert.doesNotMatch(r.out, /completed with result/);
  assert.deepEqual(workers(r.root), []);
  assert.ok(!r.perf().includes('SentJobToWorker_'), 'no Worker was sent the job');
  await until(async () => (await jobOf(f.id)).state === 'lost', BOUND_MS, 'lost after its lock');
  r.p.kill('SIGINT');
});

test('a cancel before the first renew: "Running job", no Worker, no "completed"; the job completes Canceled', async () => {
  const l = await startRunner('cancel-early');
  const j = await ctl('POST', '/jobs', { label: 'cancel-early', fault: 'cancelBeforeRenew', durationMs: 5000 });
  await l.waitFor(/Running job: /);
  await until(async () => (await jobOf(j.id)).state === 'completed', BOUND_MS, 'completed');
  assert.equal((await jobOf(j.id)).result, 'Canceled');
  await sleep(300);
  assert.doesNotMatch(l.out, /completed with result/);
  assert.ok(!l.perf().includes('JobRequestRenewed_'), 'never renewed');
  // MessageReceived_<type> for every message, the cancellation too (Runner.cs 607).
  assert.deepEqual(counters(l.perf()), ['SessionCreated', 'MessageReceived_RunnerJobRequest', 'MessageReceived_JobCancellation']);
  assert.deepEqual(workers(l.root), []);
  l.p.kill('SIGINT');
});

test('a send-to-worker timeout: the Worker runs, is killed after the channel timeout, no "completed"', async () => {
  const l = await startRunner('send-timeout');
  const j = await ctl('POST', '/jobs', { label: 'send-timeout', fault: 'workerSendTimeout', durationMs: 5000 });
  await l.waitFor(/Running job: /);
  await until(() => workers(l.root).length === 1, BOUND_MS, 'the Worker');
  await until(() => workers(l.root).length === 0, BOUND_MS, 'the Worker killed');
  await until(() => /been cancelled, kill running worker/.test(l.diag()), BOUND_MS, 'the send timeout');
  assert.doesNotMatch(l.out, /completed with result/);
  assert.ok(!l.perf().includes(`SentJobToWorker_${j.id}`));
  assert.equal((await jobOf(j.id)).state, 'running', 'no result goes to the server');
  l.p.kill('SIGINT');
});
