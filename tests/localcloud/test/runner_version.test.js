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
  // Started from the root, as the agent and run.sh do: update.sh touches update.finished there.
  const p = spawn(path.join(root, 'bin', 'Runner.Listener'), ['run', ...args], { cwd: root, env: baseEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
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

// Waits (bounded) for update.sh to finish: update.finished in the root.
async function updated(root) {
  const end = Date.now() + 15000;
  while (!fs.existsSync(path.join(root, 'update.finished'))) {
    assert.ok(Date.now() < end, `no update.finished in ${root}: ${fs.readdirSync(path.join(root, '_diag')).join(' ')}`);
    await sleep(100);
  }
}

test('updates enabled below the minimum: the runner updates itself as actions/runner does, exit 3 (4 when ephemeral)', async () => {
  const root = await configured('updating');
  const eph = await configured('updating-once', ['--ephemeral']);
  await ctl('POST', '/settings', { minRunnerVersion: NEWER });
  const l = listen(root, { ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE: '1' });
  assert.equal(await l.exit(10000), 3, l.out);
  // Terminal.WriteLine: no time stamp on the updater's lines.
  assert.match(l.out, /^Runner update in progress, do not shutdown runner\.$/m);
  assert.match(l.out, new RegExp(`^Downloading ${NEWER.replace(/\./g, '\\.')} runner$`, 'm'));
  assert.match(l.out, /^Runner will exit shortly for update, should be back online within 10 seconds\.$/m);
  assert.match(l.out, /Listening for Jobs/, 'the session was created');
  assert.ok(fs.existsSync(path.join(root, '_work', '_update', 'bin', 'Runner.Listener')), 'unpacked into _work/_update');
  assert.ok(fs.existsSync(path.join(root, '_work', '_update.sh')), 'the update script written');
  await updated(root);
  // update.sh: bin and externals link to the new version; the old ones kept as <name>.<version>.
  assert.equal(fs.readlinkSync(path.join(root, 'bin')), path.join(root, `bin.${NEWER}`));
  assert.equal(fs.readlinkSync(path.join(root, 'externals')), path.join(root, `externals.${NEWER}`));
  assert.ok(fs.statSync(path.join(root, `bin.${VERSION}`)).isDirectory());
  // The log is renamed .succeed just after update.finished is touched (update.sh.template 205–213).
  const succeeded = () => fs.readdirSync(path.join(root, '_diag')).filter((f) => /^SelfUpdate-\d{8}-\d{6}\.log\.succeed$/.test(f));
  for (const end = Date.now() + 5000; succeeded().length === 0 && Date.now() < end;) await sleep(50);
  assert.equal(succeeded().length, 1, fs.readdirSync(path.join(root, '_diag')).join(' '));
  // Started again (run-helper.sh's part): the new version, at the minimum, is not asked again.
  fs.rmSync(path.join(root, 'update.finished'));
  const again = listen(root);
  const end = Date.now() + 5000;
  while (!/Listening for Jobs/.test(again.out)) {
    assert.ok(Date.now() < end, `not listening:\n${again.out}`);
    await sleep(25);
  }
  assert.match(again.out, new RegExp(`Current runner version: '${NEWER.replace(/\./g, '\\.')}'`));
  await sleep(800);
  again.stop();
  assert.equal(await again.exit(3000), 0);
  assert.doesNotMatch(again.out, /update/i);

  const once = listen(eph);
  assert.equal(await once.exit(10000), 4, once.out);
  await updated(eph);
  await ctl('POST', '/settings', { minRunnerVersion: '' });
});

test('a refresh sent through control: RunnerRefresh on the broker flow, AgentRefresh and a package lookup on the legacy one; never to --disableupdate', async () => {
  await ctl('POST', '/settings', { minRunnerVersion: '' });
  const pinned = await configured('refresh-pinned', ['--disableupdate']);
  const runners = (await ctl('GET', '/runners')).runners;
  const idOf = (name) => runners.find((r) => r.name === name).id;
  const refused = await gh.control('POST', `/runners/${idOf('refresh-pinned')}/refresh`, {});
  assert.equal(refused.status, 409, JSON.stringify(refused.json));
  assert.ok(pinned);
  assert.equal((await gh.control('POST', '/runners/999999/refresh', {})).status, 404);

  for (const listener of ['broker', 'legacy']) {
    const name = `refresh-${listener}`;
    const root = await configured(name);
    await ctl('POST', '/settings', { listener });
    const id = (await ctl('GET', '/runners')).runners.find((r) => r.name === name).id;
    const l = listen(root);
    const end = Date.now() + 5000;
    while (!/Listening for Jobs/.test(l.out)) {
      assert.ok(Date.now() < end, `not listening:\n${l.out}`);
      await sleep(25);
    }
    const target = '2.400.1';
    assert.equal((await ctl('POST', `/runners/${id}/refresh`, { version: target })).refreshTo, target);
    assert.equal(await l.exit(10000), 3, l.out);
    await updated(root);
    assert.equal(fs.readlinkSync(path.join(root, 'bin')), path.join(root, `bin.${target}`));
    const diag = fs.readdirSync(path.join(root, '_diag')).filter((f) => f.startsWith('Runner_')).map((f) => fs.readFileSync(path.join(root, '_diag', f), 'utf8')).join('');
    assert.match(diag, new RegExp(`exiting for the update to ${target.replace(/\./g, '\\.')}`));
  }
  await ctl('POST', '/settings', { listener: 'broker' });
});

test('a refresh to a version not newer: the legacy flow finds no package to update to and goes on listening', async () => {
  await ctl('POST', '/settings', { minRunnerVersion: '' });
  const root = await configured('refresh-same');
  await ctl('POST', '/settings', { listener: 'legacy' });
  const id = (await ctl('GET', '/runners')).runners.find((r) => r.name === 'refresh-same').id;
  const l = listen(root);
  const end = Date.now() + 5000;
  while (!/Listening for Jobs/.test(l.out)) {
    assert.ok(Date.now() < end, `not listening:\n${l.out}`);
    await sleep(25);
  }
  await ctl('POST', `/runners/${id}/refresh`, { version: VERSION });
  await sleep(800);
  l.stop();
  assert.equal(await l.exit(3000), 0, 'went on listening until stopped');
  assert.doesNotMatch(l.out, /Runner update in progress/);
  assert.ok(!fs.existsSync(path.join(root, '_work', '_update.sh')));
  await ctl('POST', '/settings', { listener: 'broker' });
});
