'use strict';
// The stand-in runner root against the GitHub stand-in, as real processes: config.sh / run.sh /
// bin/Runner.Listener / bin/Runner.Worker in temp copies of the template. Checks the files
// configuration writes, the stdout/_diag/perf lines, busy flipping at acquire, deletion noticed
// by the Listener, the SIGTERM-between-acknowledge-and-acquire race, session
// conflicts and JIT runners. REST calls go through Octokit.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, execFile } = require('node:child_process');
const { createGithub } = require('../github');
const { sleep, until, controlOf } = require('../testing/wait');

const TEMPLATE = path.join(__dirname, '..', 'runner');
const PAT = 'ghp_runner_tests_pat';
// This file follows the acknowledge path: the broker asks for acknowledgement, as a server with that
// feature flag does (runner_busy.test.js covers the default, where it does not ask).
const SETTINGS = { pollMs: 300, lockExpiryMs: 1500, sessionIdleMs: 2000, sessionConflictMs: 1000, ackLatencyMs: 0,
  shouldAcknowledge: true };
const TS = '\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ';
let gh;
let octo;
let tmp;
const children = new Set();

const ctl = controlOf(() => gh);
const baseEnv = (extra = {}) => {
  const env = { ...process.env, ...extra };
  delete env.NODE_TEST_CONTEXT;
  for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
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
const runnerToken = async (kind = 'registration') => (await octo.request(`POST /repos/acme/app/actions/runners/${kind}-token`)).data.token;
async function configure(root, name, { labels = 'gpu', extra = [], token } = {}) {
  const t = token || await runnerToken();
  return sh(path.join(root, 'config.sh'), ['--url', `${gh.url}/acme/app`, '--name', name, '--labels', labels, '--unattended', ...extra],
    { RUNNER_ALLOW_RUNASROOT: '1', ACTIONS_RUNNER_INPUT_TOKEN: t });
}
function listen(root, { args = [], env = {}, cmd } = {}) {
  const p = spawn(cmd || path.join(root, 'bin', 'Runner.Listener'), cmd ? args : ['run', ...args], { env: baseEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(p);
  const l = { p, out: '', code: undefined };
  p.stdout.on('data', (d) => { l.out += d; });
  p.stderr.on('data', (d) => { l.out += d; });
  l.exited = new Promise((resolve) => p.on('exit', (code, sig) => { children.delete(p); l.code = code ?? sig; resolve(l.code); }));
  l.waitFor = (re, ms = 5000) => until(() => re.test(l.out), ms, `${re} in:\n${l.out}`);
  l.exit = (ms) => Promise.race([l.exited, sleep(ms).then(() => { throw new Error(`still running after ${ms} ms:\n${l.out}`); })]);
  return l;
}
const listening = (l) => l.waitFor(new RegExp(`^${TS}: Listening for Jobs$`, 'm'));
const diag = (root) => fs.readdirSync(path.join(root, '_diag')).filter((f) => /^Runner_\d{8}-\d{6}-utc\.log$/.test(f))
  .map((f) => fs.readFileSync(path.join(root, '_diag', f), 'utf8')).join('');
const runner = async (name) => (await ctl('GET', '/runners')).runners.find((r) => r.name === name);
const jobOf = (id) => ctl('GET', `/jobs/${id}`);
const rest = (id) => octo.rest.actions.getSelfHostedRunnerForRepo({ owner: 'acme', repo: 'app', runner_id: id }).then((r) => r.data);
function alive(pid) {
  try { return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1][0] !== 'Z'; } catch { return false; }
}

test.before(async () => {
  const { Octokit } = await import('@octokit/rest');
  gh = await createGithub({ log: () => {} });
  await ctl('POST', '/settings', SETTINGS);
  await ctl('POST', '/pats', { token: PAT, owners: ['acme'] });
  octo = new Octokit({ auth: PAT, baseUrl: `${gh.url}/api/v3`, log: { debug() {}, info() {}, warn() {}, error() {} } });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'runner-test-'));
});
test.after(async () => {
  for (const p of children) p.kill('SIGKILL');
  await gh.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('--runnergroup: an organization or enterprise runner joins the named group; an unknown one fails', async () => {
  await ctl('POST', '/pats', { token: PAT, owners: ['acme', 'grp-org', 'enterprise:grp-corp'] });
  await ctl('POST', '/enterprises', { enterprise: 'grp-corp', orgs: ['grp-org'] });
  const g = await ctl('POST', '/runner-groups', { owner: 'grp-org', name: 'Linux GPU' });
  const ge = await ctl('POST', '/runner-groups', { enterprise: 'grp-corp', name: 'ent-pool' });
  const token = async (p) => (await octo.request(`POST ${p}/actions/runners/registration-token`)).data.token;
  const cfg = async (root, url, tok, extra) => sh(path.join(root, 'config.sh'), ['--url', url, '--name', path.basename(root), '--labels', 'x', '--unattended', ...extra],
    { RUNNER_ALLOW_RUNASROOT: '1', ACTIONS_RUNNER_INPUT_TOKEN: tok });
  const settingsOf = (root) => JSON.parse(fs.readFileSync(path.join(root, '.runner')).subarray(3).toString('utf8'));
  const view = async (name) => (await ctl('GET', '/runners')).runners.find((r) => r.name === name);

  const a = await newRoot('grp-a');
  let c = await cfg(a, `${gh.url}/grp-org`, await token('/orgs/grp-org'), ['--runnergroup', 'linux gpu']);
  assert.equal(c.code, 0, c.stderr);
  assert.deepEqual([settingsOf(a).poolId, settingsOf(a).poolName], [g.id, 'Linux GPU']);
  assert.deepEqual([(await view('grp-a')).runner_group_id, (await view('grp-a')).runner_group_name], [g.id, 'Linux GPU']);

  const b = await newRoot('grp-b'); // no --runnergroup: the Default group
  c = await cfg(b, `${gh.url}/grp-org`, await token('/orgs/grp-org'), []);
  assert.equal(c.code, 0, c.stderr);
  assert.deepEqual([settingsOf(b).poolId, settingsOf(b).poolName], [1, 'Default']);

  const e = await newRoot('grp-e'); // an enterprise runner, registered at /enterprises/<slug>
  c = await cfg(e, `${gh.url}/enterprises/grp-corp`, await token('/enterprises/grp-corp'), ['--runnergroup', 'ent-pool']);
  assert.equal(c.code, 0, c.stderr);
  assert.equal(settingsOf(e).poolId, ge.id);
  assert.equal(settingsOf(e).gitHubUrl, `${gh.url}/enterprises/grp-corp`);
  assert.equal((await view('grp-e')).owner, 'enterprise:grp-corp');

  for (const [url, p] of [[`${gh.url}/grp-org`, '/orgs/grp-org'], [`${gh.url}/acme/app`, '/repos/acme/app']]) {
    const d = await newRoot(`grp-bad-${p.length}`); // unknown here (a repository has only Default)
    c = await cfg(d, url, p.startsWith('/repos') ? await runnerToken() : await token(p), ['--runnergroup', p.startsWith('/repos') ? 'Linux GPU' : 'nope']);
    assert.equal(c.code, 1);
    assert.match(c.stderr, /Could not find any self-hosted runner group named "(nope|Linux GPU)"\./);
    assert.equal(fs.existsSync(path.join(d, '.runner')), false);
  }
});

test('as root, config.sh and run.sh refuse to start without RUNNER_ALLOW_RUNASROOT', { skip: process.getuid() !== 0 }, async () => {
  const root = await newRoot('refuse');
  const env = { RUNNER_ALLOW_RUNASROOT: undefined, ACTIONS_RUNNER_INPUT_TOKEN: 'X' };
  const c = await sh(path.join(root, 'config.sh'), ['--url', `${gh.url}/acme/app`], env);
  assert.equal(c.code, 1);
  assert.match(c.stdout, /^Must not run with sudo$/m);
  const r = await sh(path.join(root, 'run.sh'), [], env);
  assert.match(r.stdout, /^Must not run interactively with sudo$/m);
  assert.match(r.stdout, /^Exiting runner\.\.\.$/m);
  assert.equal(fs.existsSync(path.join(root, '.runner')), false);
  assert.equal(fs.existsSync(path.join(root, '_diag')), false); // the Listener never ran
});

test('configure writes .runner (BOM), credentials (600); refuses reconfiguration and taken names; remove', async () => {
  const a = await newRoot('cfg-a');
  const ok = await configure(a, 'cfg-a');
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /\u221a Connected to GitHub[\s\S]*\u221a Runner successfully added[\s\S]*\u221a Settings Saved\./);
  const raw = fs.readFileSync(path.join(a, '.runner'));
  assert.deepEqual([...raw.subarray(0, 3)], [0xef, 0xbb, 0xbf]);
  const s = JSON.parse(raw.subarray(3).toString('utf8'));
  assert.deepEqual(Object.keys(s), ['agentId', 'agentName', 'poolId', 'poolName', 'serverUrl', 'gitHubUrl', 'workFolder']);
  assert.equal(s.agentName, 'cfg-a');
  assert.equal(s.poolId, 1);
  assert.equal(s.poolName, 'Default');
  assert.equal(s.serverUrl, `${gh.url}/_services/pipelines`);
  assert.equal(s.gitHubUrl, `${gh.url}/acme/app`);
  assert.equal(s.workFolder, '_work');
  assert.equal(fs.statSync(path.join(a, '.credentials_rsaparams')).mode & 0o777, 0o600);
  const creds = JSON.parse(fs.readFileSync(path.join(a, '.credentials'), 'utf8'));
  assert.equal(creds.scheme, 'OAuth');
  assert.equal(creds.data.authorizationUrl, `${gh.url}/_services/pipelines/oauth2/token`);
  const r = await rest(s.agentId);
  assert.equal(r.name, 'cfg-a');
  assert.equal(r.status, 'offline');
  assert.deepEqual(r.labels.map((l) => `${l.name}:${l.type}`), ['self-hosted:read-only', 'Linux:read-only', 'X64:read-only', 'gpu:custom']);

  const again = await configure(a, 'cfg-a');
  assert.equal(again.code, 1);
  assert.match(again.stderr, /^Cannot configure the runner because it is already configured\. To reconfigure the runner, run 'config\.cmd remove' or '\.\/config\.sh remove' first\.$/m);

  const b = await newRoot('cfg-b');
  const taken = await configure(b, 'cfg-a');
  assert.equal(taken.code, 1);
  assert.match(taken.stderr, /A runner exists with the same name cfg-a\./);
  const replaced = await configure(b, 'cfg-a', { extra: ['--replace'] });
  assert.equal(replaced.code, 0, replaced.stderr);
  assert.match(replaced.stdout, /Successfully replaced the runner/);
  assert.equal(JSON.parse(fs.readFileSync(path.join(b, '.runner'), 'utf8').slice(1)).agentId, s.agentId);

  const bad = await configure(await newRoot('cfg-bad'), 'cfg-bad', { token: 'NOTAREALTOKEN' });
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /Http response code: NotFound from 'POST .*\/api\/v3\/actions\/runner-registration'/);

  const c = await newRoot('cfg-c');
  assert.equal((await configure(c, 'cfg-c', { labels: 'only', extra: ['--no-default-labels', '--ephemeral', '--work', 'w'] })).code, 0);
  const sc = JSON.parse(fs.readFileSync(path.join(c, '.runner'), 'utf8').slice(1));
  assert.equal(sc.ephemeral, true);
  assert.equal(sc.workFolder, 'w');
  assert.deepEqual((await rest(sc.agentId)).labels.map((l) => l.name), ['only']);

  const removed = await sh(path.join(b, 'config.sh'), ['remove', '--token', await runnerToken('remove')], { RUNNER_ALLOW_RUNASROOT: '1' });
  assert.equal(removed.code, 0, removed.stderr);
  assert.match(removed.stdout, /\u221a Runner removed successfully[\s\S]*\u221a Removed \.credentials[\s\S]*\u221a Removed \.runner/);
  assert.equal(fs.existsSync(path.join(b, '.runner')), false);
  assert.equal(fs.existsSync(path.join(b, '.credentials_rsaparams')), false);
  await assert.rejects(rest(s.agentId), (e) => e.status === 404);
  const local = await sh(path.join(c, 'config.sh'), ['remove', '--local'], { RUNNER_ALLOW_RUNASROOT: '1' });
  assert.equal(local.code, 0);
  assert.equal(fs.existsSync(path.join(c, '.runner')), false);
  assert.equal((await rest(sc.agentId)).name, 'cfg-c'); // --local leaves the server alone
});

test('.standin.json rsaKey: registrations reuse the preset key, which then signs the Listener\'s tokens', async () => {
  const crypto = require('node:crypto');
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const rsaKey = privateKey.export({ type: 'pkcs8', format: 'pem' });
  const modulus = Buffer.from(privateKey.export({ format: 'jwk' }).n, 'base64url').toString('base64');
  for (const name of ['preset-a', 'preset-b']) {
    const root = await newRoot(name, { mode: 'stock', rsaKey });
    const c = await configure(root, name);
    assert.equal(c.code, 0, c.stdout + c.stderr);
    const params = JSON.parse(fs.readFileSync(path.join(root, '.credentials_rsaparams'), 'utf8').replace(/^\uFEFF/, ''));
    assert.equal(params.modulus, modulus, 'the preset key, not a new one');
    const l = listen(root, { env: { RUNNER_ALLOW_RUNASROOT: '1' } });
    await listening(l);
    assert.equal((await runner(name)).status, 'online');
    l.p.kill('SIGINT');
    assert.equal(await l.exit(5000), 0);
  }
  const bad = await newRoot('preset-bad', { rsaKey: 'not a key' });
  const c = await configure(bad, 'preset-bad');
  assert.notEqual(c.code, 0);
  assert.ok(!fs.existsSync(path.join(bad, '.runner')), 'nothing configured with a bad preset key');
});

test('run: a job runs in _work/<repo>/<repo>; busy flips at acquire; hooks, perf, orphans; deletion stops the Listener', async (t) => {
  t.after(() => ctl('POST', '/settings', { ackLatencyMs: 0 }));
  const root = await newRoot('run1');
  assert.equal((await configure(root, 'run1')).code, 0);
  const id = JSON.parse(fs.readFileSync(path.join(root, '.runner'), 'utf8').slice(1)).agentId;
  const marks = path.join(tmp, 'hook-marks');
  for (const h of ['started', 'completed']) fs.writeFileSync(path.join(tmp, `${h}.sh`), `echo ${h} "$GITHUB_JOB" >> ${marks}\n`, { mode: 0o755 });
  fs.appendFileSync(path.join(root, '.env'), `ACTIONS_RUNNER_HOOK_JOB_STARTED=${tmp}/started.sh\nACTIONS_RUNNER_HOOK_JOB_COMPLETED=${tmp}/completed.sh\n`);
  const perf = path.join(tmp, 'perf');
  const l = listen(root, { env: { RUNNER_PERFLOG: perf, ACTIONS_RUNNER_INPUT_SECRET: 'must-not-leak' } });
  await listening(l);
  assert.equal((await rest(id)).status, 'online');

  await ctl('POST', '/settings', { ackLatencyMs: 800 });
  const script = 'pwd > where.txt; env > env.txt\nsleep 30 & echo $! > tracked.pid\nRUNNER_TRACKING_ID= sleep 30 & echo $! > escaped.pid\n';
  const j = await ctl('POST', '/jobs', { labels: ['gpu'], owner: 'acme', repo: 'app', name: 'build', durationMs: 600, run: script });
  await until(async () => (await jobOf(j.id)).dispatches[0]?.acknowledgedAt, 3000, 'acknowledge');
  assert.equal((await jobOf(j.id)).state, 'dispatched');
  assert.equal((await rest(id)).busy, false); // dispatched and acknowledged, not yet acquired
  await until(async () => (await jobOf(j.id)).state === 'running', 3000, 'acquire');
  assert.equal((await rest(id)).busy, true);
  await assert.rejects(octo.rest.actions.deleteSelfHostedRunnerFromRepo({ owner: 'acme', repo: 'app', runner_id: id }),
    (e) => e.status === 422 && e.response.data.message === 'Bad request - Runner "run1" is still running a job"');
  await l.waitFor(new RegExp(`^${TS}: Running job: build$`, 'm'));
  await l.waitFor(new RegExp(`^${TS}: Job build completed with result: Succeeded$`, 'm'), 5000);
  const fate = await until(async () => { const f = await jobOf(j.id); return f.state === 'completed' && f; }, 3000, 'completion');
  assert.equal(fate.result, 'Succeeded');
  assert.equal(fate.runnerName, 'run1');
  assert.equal(fate.dispatches.length, 1);
  assert.ok(fate.dispatches[0].acquiredAt - fate.dispatches[0].acknowledgedAt >= 750);
  assert.equal(fate.lateMs, 0);
  assert.equal((await rest(id)).busy, false);

  const ws = path.join(root, '_work', 'app', 'app');
  assert.equal(fs.readFileSync(path.join(ws, 'where.txt'), 'utf8').trim(), ws);
  const env = fs.readFileSync(path.join(ws, 'env.txt'), 'utf8');
  assert.doesNotMatch(env, /ACTIONS_RUNNER_INPUT_|must-not-leak/);
  assert.match(env, /^RUNNER_TRACKING_ID=github_/m);
  const tracked = Number(fs.readFileSync(path.join(ws, 'tracked.pid'), 'utf8'));
  const escaped = Number(fs.readFileSync(path.join(ws, 'escaped.pid'), 'utf8'));
  assert.equal(alive(tracked), false, 'a leftover process with the tracking id is killed');
  assert.equal(alive(escaped), true, 'a process that cleared RUNNER_TRACKING_ID survives the job');
  process.kill(escaped, 'SIGKILL');
  assert.equal(fs.readFileSync(marks, 'utf8'), 'started build\ncompleted build\n');
  const perfLines = fs.readFileSync(path.join(perf, 'Runner.perf'), 'utf8');
  assert.match(perfLines, /^MessageReceived_RunnerJobRequest:\d{4}-\d\d-\d\dT[\d:.]+Z$/m);
  assert.match(perfLines, new RegExp(`^SentJobToWorker_${j.id}:`, 'm'));
  const d = diag(root);
  const ack = d.indexOf(`INFO BrokerMessageListener] Acknowledging runner request '${j.id}'.`);
  const recv = d.search(new RegExp(`INFO JobDispatcher\\] Job request ${j.id} for plan [0-9a-f-]{36} job [0-9a-f-]{36} received\\.`));
  assert.ok(ack > 0 && recv > ack, d);
  assert.match(d, new RegExp(`^\\[${TS} INFO BrokerMessageListener\\] Acknowledging`, 'm'));

  await ctl('POST', '/settings', { ackLatencyMs: 0 });
  const failing = await ctl('POST', '/jobs', { labels: ['gpu'], name: 'broken', run: 'exit 3' });
  await l.waitFor(/Job broken completed with result: Failed$/m, 5000);
  assert.equal((await until(async () => { const f = await jobOf(failing.id); return f.state === 'completed' && f; }, 3000, 'failed job')).result, 'Failed');

  assert.equal((await octo.rest.actions.deleteSelfHostedRunnerFromRepo({ owner: 'acme', repo: 'app', runner_id: id })).status, 204);
  assert.equal(await l.exit(3000), 0);
  assert.match(l.out, /registration has been deleted/);
  for (const f of ['.runner', '.credentials', '.credentials_rsaparams']) assert.equal(fs.existsSync(path.join(root, f)), false, f);
});

test('SIGTERM during a job cancels it (result Canceled) and exits 0; a Listener killed mid-job loses its job', async () => {
  const root = await newRoot('cancel1');
  assert.equal((await configure(root, 'cancel1', { labels: 'cancel1' })).code, 0);
  const l = listen(root);
  await listening(l);
  // The Worker cancels a step with SIGINT to its process (ProcessInvoker; SIGTERM only 7.5 s later):
  // a step that honours SIGINT ends at once.
  const j = await ctl('POST', '/jobs', { labels: ['cancel1'], name: 'long', run: 'echo $$ > step.pid; trap "exit 130" INT; sleep 30 & wait' });
  await l.waitFor(/Running job: long$/m);
  const step = path.join(root, '_work', 'app', 'app', 'step.pid');
  await until(() => fs.existsSync(step) && fs.readFileSync(step, 'utf8').trim(), 3000, 'step.pid');
  const stepPid = Number(fs.readFileSync(step, 'utf8'));
  assert.equal(alive(stepPid), true);
  // Steps share the Listener's process group, as the real runner's do (.NET sets no group).
  const pgid = (pid) => Number(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[2]);
  assert.equal(pgid(stepPid), pgid(l.p.pid), 'the step is in the Listener\'s process group');
  l.p.kill('SIGTERM');
  assert.equal(await l.exit(5000), 0);
  assert.match(l.out, /Exiting\.\.\.[\s\S]*The runner has received a shutdown signal\.[\s\S]*Job long completed with result: Canceled/);
  const fate = await jobOf(j.id);
  assert.equal(fate.state, 'completed');
  assert.equal(fate.result, 'Canceled');
  assert.equal((await runner('cancel1')).session, null);
  assert.equal(alive(stepPid), false, 'the cancelled step is stopped');

  const k = listen(root);
  await listening(k);
  const lost = await ctl('POST', '/jobs', { labels: ['cancel1'], name: 'doomed', durationMs: 1000 });
  await k.waitFor(/Running job: doomed$/m);
  k.p.kill('SIGKILL'); // its Worker finishes alone; nobody renews or completes the job
  const f = await until(async () => { const x = await jobOf(lost.id); return x.state === 'lost' && x; }, SETTINGS.lockExpiryMs + 3000, 'lost job');
  assert.equal(f.result, null);
  assert.equal((await runner('cancel1')).busy, false);
});

test('SIGTERM between acknowledge and acquire: the job is only redispatched after its lock expires', async (t) => {
  const LOCK = 2000;
  t.after(() => ctl('POST', '/settings', { ackLatencyMs: 0, lockExpiryMs: SETTINGS.lockExpiryMs }));
  await ctl('POST', '/settings', { ackLatencyMs: 1000, lockExpiryMs: LOCK });
  const root = await newRoot('race1');
  assert.equal((await configure(root, 'race1', { labels: 'race1' })).code, 0);
  const l = listen(root);
  await listening(l);
  const j = await ctl('POST', '/jobs', { labels: ['race1'], name: 'raced', durationMs: 100 });
  await until(() => diag(root).includes(`Acknowledging runner request '${j.id}'.`), 3000, 'acknowledge line');
  l.p.kill('SIGTERM');
  assert.equal(await l.exit(3000), 0);
  let fate = await jobOf(j.id);
  assert.equal(fate.state, 'dispatched');
  assert.equal(fate.dispatches[0].acquiredAt, null);
  assert.doesNotMatch(l.out, /Running job/);

  await ctl('POST', '/settings', { ackLatencyMs: 0 });
  const l2 = listen(root); // the same runner, back with a new session
  await listening(l2);
  const dispatchedAt = fate.dispatches[0].at;
  if (Date.now() < dispatchedAt + LOCK - 300) {
    await sleep(dispatchedAt + LOCK - 300 - Date.now());
    fate = await jobOf(j.id);
    assert.equal(fate.state, 'dispatched', 'not redispatched before the lock expires, though a runner is listening');
    assert.equal(fate.dispatches.length, 1);
  }
  await l2.waitFor(/Job raced completed with result: Succeeded/, LOCK + 3000);
  fate = await until(async () => { const f = await jobOf(j.id); return f.state === 'completed' && f; }, 2000, 'completion');
  assert.equal(fate.dispatches.length, 2);
  assert.ok(fate.dispatches[0].expiredAt - fate.dispatches[0].at >= LOCK);
  assert.ok(fate.lateMs >= LOCK, `lateMs ${fate.lateMs}`);
  l2.p.kill('SIGINT');
  assert.equal(await l2.exit(3000), 0);
});

test('stock race: DELETE succeeds while a job sits between dispatch and acquire; the job waits for its lock', async (t) => {
  t.after(() => ctl('POST', '/settings', { ackLatencyMs: 0 }));
  await ctl('POST', '/settings', { ackLatencyMs: 800 });
  const root = await newRoot('race2');
  assert.equal((await configure(root, 'race2', { labels: 'race2' })).code, 0);
  const id = JSON.parse(fs.readFileSync(path.join(root, '.runner'), 'utf8').slice(1)).agentId;
  const l = listen(root);
  await listening(l);
  const j = await ctl('POST', '/jobs', { labels: ['race2'], name: 'orphaned', durationMs: 100 });
  await until(() => diag(root).includes(`Acknowledging runner request '${j.id}'.`), 3000, 'acknowledge line');
  assert.equal((await rest(id)).busy, false);
  assert.equal((await octo.rest.actions.deleteSelfHostedRunnerFromRepo({ owner: 'acme', repo: 'app', runner_id: id })).status, 204);
  assert.equal(await l.exit(4000), 0); // acquire fails, the next poll says the registration is gone
  assert.match(diag(root), /Skipping message Job\. Runner not found/); // Runner.cs on an acquire 404
  assert.doesNotMatch(l.out, /Running job/);
  let fate = await jobOf(j.id);
  assert.equal(fate.state, 'dispatched');
  assert.equal(fate.dispatches[0].acquiredAt, null);
  fate = await until(async () => { const f = await jobOf(j.id); return f.state === 'queued' && f; }, SETTINGS.lockExpiryMs + 2000, 'requeue at lock expiry');
  assert.ok(fate.dispatches[0].expiredAt - fate.dispatches[0].at >= SETTINGS.lockExpiryMs);
});

test('a second Listener for the same runner gets a session conflict and exits 5', async () => {
  const root = await newRoot('conflict1');
  assert.equal((await configure(root, 'conflict1', { labels: 'conflict1' })).code, 0);
  const l1 = listen(root);
  await listening(l1);
  const l2 = listen(root);
  assert.equal(await l2.exit(SETTINGS.sessionConflictMs + 3000), 5);
  assert.match(l2.out, /A session for this runner already exists\./);
  assert.equal(l1.code, undefined);
  l1.p.kill('SIGINT');
  assert.equal(await l1.exit(3000), 0);
});

test('JIT: ACTIONS_RUNNER_INPUT_JITCONFIG runs one job then the runner is gone; a deleted registration fails to start', async () => {
  const jit = (await octo.rest.actions.generateRunnerJitconfigForRepo({ owner: 'acme', repo: 'app', name: 'jit-run', runner_group_id: 1, labels: ['jit-run'] })).data;
  const root = await newRoot('jit1');
  const l = listen(root, { env: { ACTIONS_RUNNER_INPUT_JITCONFIG: jit.encoded_jit_config } });
  await listening(l);
  assert.equal((await rest(jit.runner.id)).status, 'online');
  const j = await ctl('POST', '/jobs', { labels: ['jit-run'], owner: 'acme', repo: 'app', name: 'once', durationMs: 100 });
  assert.equal(await l.exit(5000), 0);
  assert.match(l.out, /Job once completed with result: Succeeded/);
  assert.equal((await jobOf(j.id)).result, 'Succeeded');
  await assert.rejects(rest(jit.runner.id), (e) => e.status === 404);
  assert.equal(fs.existsSync(path.join(root, '.runner')), false);

  const gone = await newRoot('gone1');
  assert.equal((await configure(gone, 'gone1')).code, 0);
  const id = JSON.parse(fs.readFileSync(path.join(gone, '.runner'), 'utf8').slice(1)).agentId;
  await octo.rest.actions.deleteSelfHostedRunnerFromRepo({ owner: 'acme', repo: 'app', runner_id: id });
  const g = listen(gone);
  assert.equal(await g.exit(3000), 1);
  assert.match(g.out, /Failed to create a session\. The runner registration has been deleted from the server, please re-configure\./);
  const none = listen(await newRoot('none1'));
  assert.equal(await none.exit(3000), 1);
  assert.match(none.out, /Runner is not configured\./);
});

test('JIT: config.sh remove --token fails on a JIT runner (no gitHubUrl: the legacy path); deleting it by id works', async () => {
  const jit = (await octo.rest.actions.generateRunnerJitconfigForRepo({ owner: 'acme', repo: 'app', name: 'jit-rm', runner_group_id: 1, labels: ['jit-rm'] })).data;
  const root = await newRoot('jitrm');
  const l = listen(root, { env: { ACTIONS_RUNNER_INPUT_JITCONFIG: jit.encoded_jit_config } });
  await listening(l);
  l.p.kill('SIGINT');
  assert.equal(await l.exit(3000), 0);
  const settings = JSON.parse(fs.readFileSync(path.join(root, '.runner'), 'utf8').slice(1));
  assert.equal(settings.gitHubUrl, undefined);
  const rm = await sh(path.join(root, 'config.sh'), ['remove', '--token', await runnerToken('remove')], { ACTIONS_RUNNER_INPUT_UNATTENDED: 'true', RUNNER_ALLOW_RUNASROOT: '1' });
  assert.equal(rm.code, 1, rm.stdout);
  assert.match(rm.stdout + rm.stderr, /Failed: Removing runner from the server/);
  assert.equal((await rest(jit.runner.id)).name, 'jit-rm', 'still registered');
  await octo.rest.actions.deleteSelfHostedRunnerFromRepo({ owner: 'acme', repo: 'app', runner_id: jit.runner.id });
  await assert.rejects(rest(jit.runner.id), (e) => e.status === 404);
});

test('run.sh runs the Listener and stops when it exits 0', async () => {
  const root = await newRoot('wrap1');
  assert.equal((await configure(root, 'wrap1', { labels: 'wrap1' })).code, 0);
  const id = JSON.parse(fs.readFileSync(path.join(root, '.runner'), 'utf8').slice(1)).agentId;
  const l = listen(root, { cmd: path.join(root, 'run.sh'), env: { RUNNER_ALLOW_RUNASROOT: '1' } });
  await listening(l);
  await octo.rest.actions.deleteSelfHostedRunnerFromRepo({ owner: 'acme', repo: 'app', runner_id: id });
  assert.equal(await l.exit(3000), 0);
  assert.match(l.out, /Runner listener exit with 0 return code, stop the service, no retry needed\.\nExiting runner\.\.\./);
});
