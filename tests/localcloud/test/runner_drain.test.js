'use strict';
// The stand-in runner's drain, per runner build it models (RUNNER_STANDIN_MODE / .standin.json
// "mode"): stock (actions/runner as released: no drain), pr4461 (the `.drain` sentinel of
// actions/runner pull request #4461, checked only at the top of the main loop; it cancels the job
// in hand) and drain-file (pull request #4708: `run --drain-file PATH` / `--drain-on-sigusr1`,
// ephemeral runners only). Also the time factor that scales the real timings on both sides.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, execFile } = require('node:child_process');
const { createGithub } = require('../github');
const { sleep, until, controlOf } = require('../testing/wait');

const TEMPLATE = path.join(__dirname, '..', 'runner');
const PAT = 'ghp_runner_drain_tests_pat';
const SETTINGS = { pollMs: 300, lockExpiryMs: 1500, sessionIdleMs: 2000, sessionConflictMs: 1000, ackLatencyMs: 0 };
let gh;
let octo;
let tmp;
const children = new Set();

const ctl = controlOf(() => gh);
const baseEnv = (extra = {}) => {
  const env = { ...process.env, ...extra };
  delete env.NODE_TEST_CONTEXT;
  delete env.RUNNER_STANDIN_MODE;
  delete env.RUNNER_STANDIN_TIME_FACTOR;
  Object.assign(env, extra);
  return env;
};
const sh = (file, args, env) => new Promise((resolve) => {
  execFile(file, args, { env: baseEnv(env), timeout: 20000 }, (err, stdout, stderr) => resolve({ code: err ? err.code : 0, stdout, stderr }));
});
async function newRoot(name, standin) {
  const root = path.join(tmp, name);
  assert.equal((await sh('cp', ['-a', TEMPLATE, root])).code, 0);
  if (standin) fs.writeFileSync(path.join(root, '.standin.json'), JSON.stringify(standin));
  return root;
}
const runnerToken = async () => (await octo.request('POST /repos/acme/app/actions/runners/registration-token')).data.token;
async function configure(root, name, { labels = name, extra = [] } = {}) {
  const c = await sh(path.join(root, 'config.sh'), ['--url', `${gh.url}/acme/app`, '--name', name, '--labels', labels, '--unattended', ...extra],
    { RUNNER_ALLOW_RUNASROOT: '1', ACTIONS_RUNNER_INPUT_TOKEN: await runnerToken() });
  assert.equal(c.code, 0, c.stdout + c.stderr);
}
function listen(root, { args = [], env = {} } = {}) {
  const p = spawn(path.join(root, 'bin', 'Runner.Listener'), ['run', ...args], { env: baseEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(p);
  const l = { p, out: '', code: undefined };
  p.stdout.on('data', (d) => { l.out += d; });
  p.stderr.on('data', (d) => { l.out += d; });
  l.exited = new Promise((resolve) => p.on('exit', (code, sig) => { children.delete(p); l.code = code ?? sig; resolve(l.code); }));
  l.waitFor = (re, ms = 5000) => until(() => re.test(l.out), ms, `${re} in:\n${l.out}`);
  l.exit = (ms) => Promise.race([l.exited, sleep(ms).then(() => { throw new Error(`still running after ${ms} ms:\n${l.out}`); })]);
  return l;
}
const listening = (l) => l.waitFor(/Listening for Jobs/);
const runner = async (name) => (await ctl('GET', '/runners')).runners.find((r) => r.name === name);
const jobOf = (id) => ctl('GET', `/jobs/${id}`);
const openPoll = (name) => until(async () => (await runner(name))?.session?.openPolls > 0, 3000, `an open poll of ${name}`);
const help = (root) => sh(path.join(root, 'bin', 'Runner.Listener'), ['run', '--help']);

test.before(async () => {
  const { Octokit } = await import('@octokit/rest');
  gh = await createGithub({ log: () => {} });
  await ctl('POST', '/settings', SETTINGS);
  await ctl('POST', '/pats', { token: PAT, owners: ['acme'] });
  octo = new Octokit({ auth: PAT, baseUrl: `${gh.url}/api/v3`, log: { debug() {}, info() {}, warn() {}, error() {} } });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'runner-drain-test-'));
});
test.after(async () => {
  for (const p of children) p.kill('SIGKILL');
  await gh.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('an unknown mode (the old idealised "drain" among them) fails the Listener', async () => {
  const root = await newRoot('mode-old', { mode: 'drain' });
  await configure(root, 'mode-old');
  const l = listen(root);
  assert.equal(await l.exit(5000), 1);
  assert.match(l.out, /unknown runner stand-in mode "drain"/);
});

test('stock (the default): .drain means nothing, the drain inputs are reported as unknown and ignored, run --help lists none', async () => {
  const root = await newRoot('stock1');
  await configure(root, 'stock1', { extra: ['--ephemeral'] });
  const h = await help(root);
  assert.equal(h.code, 0);
  assert.doesNotMatch(h.stdout, /drain/);

  fs.writeFileSync(path.join(root, '.drain'), '');
  fs.writeFileSync(path.join(root, 'stop'), '');
  // Program.cs: unknown input is reported and the runner goes on.
  const l = listen(root, { args: ['--drain-file', path.join(root, 'stop'), '--drain-on-sigusr1'] });
  await listening(l);
  assert.match(l.out, /Unrecognized command-line input arguments for command run: 'drain-file, drain-on-sigusr1'\. For usage refer to: \.\\config\.cmd --help or \.\/config\.sh --help/);
  await sleep(SETTINGS.pollMs * 3);
  assert.equal(l.code, undefined, l.out);
  assert.ok(fs.existsSync(path.join(root, '.drain')));
  const j = await ctl('POST', '/jobs', { labels: ['stock1'], name: 'stock-job', durationMs: 100 });
  await l.waitFor(/Job stock-job completed with result: Succeeded/);
  assert.equal(await l.exit(3000), 0); // ephemeral: done after its job
  assert.equal((await jobOf(j.id)).result, 'Succeeded');
});

test('pr4461: a sentinel present at start is deleted; an idle runner never sees a new one', async () => {
  const root = await newRoot('pr1', { mode: 'pr4461' });
  await configure(root, 'pr1');
  assert.doesNotMatch((await help(root)).stdout, /drain/);
  fs.writeFileSync(path.join(root, '.drain'), '');
  const l = listen(root);
  await listening(l);
  assert.equal(fs.existsSync(path.join(root, '.drain')), false, 'deleted at start');
  fs.writeFileSync(path.join(root, '.drain'), '');
  await sleep(SETTINGS.pollMs * 4); // empty polls loop inside the listener: the check is never reached
  assert.equal(l.code, undefined, l.out);
  l.p.kill('SIGINT');
  assert.equal(await l.exit(3000), 0);
});

test('pr4461: the next job is acknowledged and acquired, then cancelled before its first renew answers: no Worker, no completion line; exit 0', async () => {
  const root = await newRoot('pr2', { mode: 'pr4461' });
  await configure(root, 'pr2');
  const l = listen(root);
  await listening(l);
  fs.writeFileSync(path.join(root, '.drain'), '');
  await openPoll('pr2');
  const j = await ctl('POST', '/jobs', { labels: ['pr2'], name: 'victim', durationMs: 3000 });
  assert.equal(await l.exit(8000), 0);
  assert.match(l.out, /Running job: victim/);
  assert.doesNotMatch(l.out, /completed with result/);
  assert.equal(fs.existsSync(path.join(root, '_diag', 'pages', `${j.id}.log`)), false, 'no Worker ran it');
  const fate = await jobOf(j.id);
  assert.equal(fate.state, 'completed');
  assert.equal(fate.result, 'Canceled');
  assert.ok(fate.dispatches[0].acquiredAt, 'acquired, then cancelled');
  assert.equal((await runner('pr2')).session, null);
});

test('drain-file: run --help lists both inputs; a non-ephemeral runner refuses them', async () => {
  const root = await newRoot('df0', { mode: 'drain-file' });
  await configure(root, 'df0');
  const h = await help(root);
  assert.match(h.stdout, /--drain-file/);
  assert.match(h.stdout, /--drain-on-sigusr1/);
  for (const args of [['--drain-file', path.join(root, 'stop')], ['--drain-on-sigusr1']]) {
    const l = listen(root, { args });
    assert.equal(await l.exit(5000), 1, args.join(' '));
    assert.match(l.out, /only for ephemeral runners/);
  }
  // Without the inputs it runs as any runner and ignores .drain.
  fs.writeFileSync(path.join(root, '.drain'), '');
  const l = listen(root);
  await listening(l);
  await sleep(SETTINGS.pollMs * 3);
  assert.equal(l.code, undefined, l.out);
  l.p.kill('SIGINT');
  assert.equal(await l.exit(3000), 0);
});

test('drain-file: an idle ephemeral runner exits 0 within a poll of the file appearing, keeping its registration', async () => {
  const root = await newRoot('df1', { mode: 'drain-file' });
  await configure(root, 'df1', { extra: ['--ephemeral'] });
  const file = path.join(tmp, 'df1.drain');
  const l = listen(root, { args: ['--drain-file', file] });
  await listening(l);
  await sleep(SETTINGS.pollMs * 2);
  assert.equal(l.code, undefined, l.out);
  const t0 = Date.now();
  fs.writeFileSync(file, '');
  assert.equal(await l.exit(SETTINGS.pollMs + 3000), 0);
  assert.ok(Date.now() - t0 < SETTINGS.pollMs + 1500, `took ${Date.now() - t0} ms`);
  assert.match(l.out, /Drain requested/);
  const r = await runner('df1');
  assert.ok(r, 'still registered');
  assert.equal(r.session, null);
  assert.ok(fs.existsSync(path.join(root, '.runner')), 'local configuration kept');
});

test('drain-file: SIGUSR1 with a job already handed to the open poll: the job runs to completion, then exit 0', async (t) => {
  t.after(() => ctl('POST', '/settings', { pollMs: SETTINGS.pollMs }));
  await ctl('POST', '/settings', { pollMs: 3000 }); // the job surely lands in an open poll
  const root = await newRoot('df2', { mode: 'drain-file' });
  await configure(root, 'df2', { extra: ['--ephemeral'] });
  const l = listen(root, { args: ['--drain-on-sigusr1'] });
  await listening(l);
  await openPoll('df2');
  const j = await ctl('POST', '/jobs', { labels: ['df2'], name: 'in-hand', durationMs: 800 });
  assert.equal(j.state, 'dispatched');
  l.p.kill('SIGUSR1');
  assert.equal(await l.exit(8000), 0);
  assert.match(l.out, /Job in-hand completed with result: Succeeded/);
  const fate = await jobOf(j.id);
  assert.deepEqual([fate.state, fate.result, fate.dispatches.length], ['completed', 'Succeeded', 1]);
});

test('drain-file: a request latched while idle stops the runner before any later job (it stays queued)', async () => {
  const root = await newRoot('df3', { mode: 'drain-file' });
  await configure(root, 'df3', { extra: ['--ephemeral'] });
  const l = listen(root, { args: ['--drain-on-sigusr1'] });
  await listening(l);
  l.p.kill('SIGUSR1');
  assert.equal(await l.exit(SETTINGS.pollMs + 3000), 0);
  const j = await ctl('POST', '/jobs', { labels: ['df3'], name: 'after', durationMs: 0 });
  await sleep(300);
  assert.equal((await jobOf(j.id)).state, 'queued');
});

test('time factor: the GitHub side scales long poll, lock and conflict; the runner its own session retries', async (t) => {
  const before = await ctl('GET', '/settings');
  t.after(() => ctl('POST', '/settings', { pollMs: before.pollMs, lockExpiryMs: before.lockExpiryMs, sessionConflictMs: before.sessionConflictMs }));
  const s = await ctl('POST', '/settings', { timeFactor: 0.01 });
  assert.deepEqual([s.pollMs, s.lockExpiryMs, s.sessionConflictMs], [500, 6000, 2400]);
  assert.equal((await gh.control('POST', '/settings', { timeFactor: 0 })).status >= 400, true);

  // The server hints a one-minute conflict; the runner's own 4 min at factor 0.002 is 480 ms.
  await ctl('POST', '/settings', { sessionConflictMs: 60000 });
  const root = await newRoot('tf1', { mode: 'stock' });
  await configure(root, 'tf1');
  const l1 = listen(root);
  await listening(l1);
  const t0 = Date.now();
  const l2 = listen(root, { env: { RUNNER_STANDIN_TIME_FACTOR: '0.002' } });
  assert.equal(await l2.exit(5000), 5);
  assert.ok(Date.now() - t0 < 4000, `gave up after ${Date.now() - t0} ms`);
  const bad = listen(root, { env: { RUNNER_STANDIN_TIME_FACTOR: 'fast' } });
  assert.equal(await bad.exit(5000), 1);
  assert.match(bad.out, /time factor must be a number > 0/);
  l1.p.kill('SIGINT');
  assert.equal(await l1.exit(3000), 0);
});

test('labels removed (REST DELETE …/labels) make a listening runner unmatchable: the broker stops dispatching to it', async () => {
  const root = await newRoot('unlabel1');
  await configure(root, 'unlabel1', { extra: ['--no-default-labels'] });
  const l = listen(root);
  await listening(l);
  await openPoll('unlabel1');
  const id = (await runner('unlabel1')).id;
  const r = await octo.request('DELETE /repos/{owner}/{repo}/actions/runners/{runner_id}/labels', { owner: 'acme', repo: 'app', runner_id: id });
  assert.equal(r.status, 200);
  // GitHub's shape: the labels left (the read-only ones), each {id, name, type}.
  assert.equal(r.data.total_count, r.data.labels.length);
  assert.ok(r.data.labels.every((x) => Number.isInteger(x.id) && typeof x.name === 'string' && x.type === 'read-only'));
  assert.ok(!r.data.labels.some((x) => x.name === 'unlabel1'));
  const j = await ctl('POST', '/jobs', { labels: ['unlabel1'], name: 'nobody', durationMs: 0 });
  await sleep(SETTINGS.pollMs * 3); // several polls of the runner
  assert.equal((await jobOf(j.id)).state, 'queued');
  assert.doesNotMatch(l.out, /Running job/);
  // Labelled again (PUT), it takes the job.
  await octo.request('PUT /repos/{owner}/{repo}/actions/runners/{runner_id}/labels', { owner: 'acme', repo: 'app', runner_id: id, labels: ['unlabel1'] });
  await l.waitFor(/Job nobody completed with result: Succeeded/, 5000);
  l.p.kill('SIGINT');
  assert.equal(await l.exit(3000), 0);
});
