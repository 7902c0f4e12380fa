'use strict';
// The runner's version against the service's minimum (GitHub stand-in setting minRunnerVersion):
// a runner configured with --disableupdate and older than the minimum is refused its session and
// exits 1, or 7 with ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE=1; one with updates enabled
// gets a session whose first message asks it to update, and exits 3 (4 when it runs once).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, execFile } = require('node:child_process');
const { createGithub } = require('../github');
const { VERSION } = require('../runner/bin/standin/client');
const { compareVersions } = require('../github/pipelines');
const { sleep, controlOf } = require('../testing/wait');

const TEMPLATE = path.join(__dirname, '..', 'runner');
const PAT = 'ghp_runner_version_pat';
const TS = '\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ';
const NEWER = VERSION.split('.').map((n, i) => (i === 1 ? Number(n) + 1 : n)).join('.');
let gh;
let tmp;
const children = new Set();

const ctl = controlOf(() => gh);
const baseEnv = (extra = {}) => {
  const env = { ...process.env, RUNNER_ALLOW_RUNASROOT: '1' };
  delete env.NODE_TEST_CONTEXT;
  delete env.ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE;
  Object.assign(env, extra);
  return env;
};
const sh = (file, args, env) => new Promise((resolve) => {
  execFile(file, args, { env: baseEnv(env), timeout: 20000 }, (err, stdout, stderr) => resolve({ code: err ? err.code : 0, stdout, stderr }));
});
async function configured(name, extra = []) {
  const root = path.join(tmp, name);
  assert.equal((await sh('cp', ['-a', TEMPLATE, root])).code, 0);
  const token = await restToken();
  const r = await sh(path.join(root, 'config.sh'), ['--url', `${gh.url}/acme/app`, '--name', name, '--labels', name, '--unattended', ...extra],
    { ACTIONS_RUNNER_INPUT_TOKEN: token });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  return root;
}
async function restToken() {
  const r = await fetch(`${gh.url}/api/v3/repos/acme/app/actions/runners/registration-token`, { method: 'POST', headers: { authorization: `Bearer ${PAT}`, accept: 'application/vnd.github+json' } });
  assert.equal(r.status, 201);
  return (await r.json()).token;
}
function listen(root, env = {}, args = []) {
  const p = spawn(path.join(root, 'bin', 'Runner.Listener'), ['run', ...args], { env: baseEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(p);
  const l = { out: '' };
  p.stdout.on('data', (d) => { l.out += d; });
  p.stderr.on('data', (d) => { l.out += d; });
  const exited = new Promise((resolve) => p.on('exit', (code, sig) => { children.delete(p); resolve(code ?? sig); }));
  l.exit = (ms) => Promise.race([exited, sleep(ms).then(() => { throw new Error(`still running after ${ms} ms:\n${l.out}`); })]);
  l.stop = () => p.kill('SIGINT');
  return l;
}

test.before(async () => {
  gh = await createGithub({ log: () => {} });
  await ctl('POST', '/settings', { pollMs: 300, sessionIdleMs: 2000 });
  await ctl('POST', '/pats', { token: PAT, owners: ['acme'] });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'runner-version-test-'));
});
test.after(async () => {
  for (const p of children) p.kill('SIGKILL');
  await gh.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('versions compare numerically, and the minimum must be x.y.z or empty', async () => {
  assert.equal(compareVersions('2.336.0', '2.337.0'), -1);
  assert.equal(compareVersions('2.336.10', '2.336.9'), 1);
  assert.equal(compareVersions('2.336.0', '2.336.0'), 0);
  for (const bad of ['2.336', 'latest', 2]) {
    const r = await gh.control('POST', '/settings', { minRunnerVersion: bad });
    assert.ok(r.status >= 400, `${JSON.stringify(bad)} accepted`);
  }
  assert.equal((await ctl('POST', '/settings', { minRunnerVersion: '' })).minRunnerVersion, '');
});

test('--disableupdate below the minimum: refused a session, exit 1, or 7 with the variable; at the minimum it listens', async () => {
  const root = await configured('pinned', ['--disableupdate']);
  await ctl('POST', '/settings', { minRunnerVersion: NEWER });
  const plain = listen(root);
  assert.equal(await plain.exit(5000), 1);
  assert.match(plain.out, new RegExp(`Runner version v${VERSION.replace(/\./g, '\\.')} is deprecated and cannot receive messages\\.`));
  assert.doesNotMatch(plain.out, /Listening for Jobs/);
  const seven = listen(root, { ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE: '1' });
  assert.equal(await seven.exit(5000), 7);
  const other = listen(root, { ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE: 'true' });
  assert.equal(await other.exit(5000), 1, 'only "1" asks for the distinct code');

  await ctl('POST', '/settings', { minRunnerVersion: VERSION });
  const ok = listen(root, { ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE: '1' });
  const end = Date.now() + 5000;
  while (!new RegExp(`^${TS}: Listening for Jobs$`, 'm').test(ok.out)) {
    assert.ok(Date.now() < end, `not listening:\n${ok.out}`);
    await sleep(25);
  }
  await sleep(800); // a few empty polls: no update request at the minimum
  ok.stop();
  assert.equal(await ok.exit(3000), 0);
  assert.doesNotMatch(ok.out, /update/i);
  await ctl('POST', '/settings', { minRunnerVersion: '' });
});

test('updates enabled below the minimum: the first message asks for an update, exit 3 (4 when ephemeral)', async () => {
  const root = await configured('updating');
  const eph = await configured('updating-once', ['--ephemeral']);
  await ctl('POST', '/settings', { minRunnerVersion: NEWER });
  const l = listen(root, { ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE: '1' });
  assert.equal(await l.exit(5000), 3);
  assert.match(l.out, new RegExp(`^${TS}: Runner update in progress, do not shutdown runner\\.$`, 'm'));
  assert.match(l.out, new RegExp(`Downloading ${NEWER.replace(/\./g, '\\.')} runner`));
  assert.match(l.out, /Listening for Jobs/, 'the session was created');
  const once = listen(eph);
  assert.equal(await once.exit(5000), 4);
  await ctl('POST', '/settings', { minRunnerVersion: '' });
});
