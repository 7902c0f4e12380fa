'use strict';
// The GitHub stand-in's REST API driven by an independent real client, @octokit/rest, so the
// stand-in cannot drift into a private dialect: tokens, JIT configs, Link pagination, runner
// CRUD and labels, App JWT auth, rate limits (primary and secondary) and injected faults.
const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { execFile } = require('node:child_process');
const { createGithub } = require('../github');
const { controlOf } = require('../testing/wait');
const { rejects } = require('../testing/rejects');
const { Faults } = require('../lib/faults');

const quiet = { debug() {}, info() {}, warn() {}, error() {} };
let gh;
let faults;
let Octokit;
const kit = (auth) => new Octokit({ auth, baseUrl: `${gh.url}/api/v3`, log: quiet });
const ctl = controlOf(() => gh);
const jwt = (payload, key) => {
  const b = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const input = `${b({ alg: 'RS256', typ: 'JWT' })}.${b(payload)}`;
  return `${input}.${crypto.sign('sha256', Buffer.from(input), key).toString('base64url')}`;
};
const now = () => Math.floor(Date.now() / 1000);

test.before(async () => {
  ({ Octokit } = await import('@octokit/rest'));
  faults = new Faults();
  gh = await createGithub({ faults, log: () => {} });
  await ctl('POST', '/pats', { token: 'ghp_admin_pat_0001', owners: ['acme', 'other'] });
});
test.after(() => gh.close());

test('registration and remove tokens, repository and organization', async () => {
  const o = kit('ghp_admin_pat_0001');
  for (const r of [
    await o.rest.actions.createRegistrationTokenForRepo({ owner: 'acme', repo: 'app' }),
    await o.rest.actions.createRemoveTokenForRepo({ owner: 'acme', repo: 'app' }),
    await o.rest.actions.createRegistrationTokenForOrg({ org: 'acme' }),
    await o.rest.actions.createRemoveTokenForOrg({ org: 'acme' }),
  ]) {
    assert.equal(r.status, 201);
    assert.match(r.data.token, /^[A-Z2-7]{29,}$/);
    const left = Date.parse(r.data.expires_at) - Date.now();
    assert.ok(left > 3590e3 && left <= 3600e3, `expires in ${left} ms`);
    assert.equal(r.headers['x-ratelimit-resource'], 'core');
  }
  await rejects(o.rest.actions.createRegistrationTokenForOrg({ org: 'nobody' }), 404);
});

test('JIT config: runner, decodable files, 409 on a taken name, 422 on bad input', async () => {
  const o = kit('ghp_admin_pat_0001');
  const r = await o.rest.actions.generateRunnerJitconfigForRepo({ owner: 'acme', repo: 'app', name: 'jit-1', runner_group_id: 1, labels: ['run-42'], work_folder: '_w' });
  assert.equal(r.status, 201);
  assert.equal(r.data.runner.name, 'jit-1');
  assert.equal(r.data.runner.status, 'offline');
  assert.equal(r.data.runner.ephemeral, true);
  assert.deepEqual(r.data.runner.labels.map((l) => [l.name, l.type]), [['self-hosted', 'read-only'], ['Linux', 'read-only'], ['X64', 'read-only'], ['run-42', 'custom']]);
  const files = JSON.parse(Buffer.from(r.data.encoded_jit_config, 'base64').toString());
  const runner = JSON.parse(Buffer.from(files['.runner'], 'base64').toString());
  assert.equal(runner.agentId, r.data.runner.id);
  assert.equal(runner.workFolder, '_w');
  assert.equal(runner.ephemeral, true);
  assert.equal(runner.gitHubUrl, undefined, 'a JIT .runner names no gitHubUrl');
  const rsa = JSON.parse(Buffer.from(files['.credentials_rsaparams'], 'base64').toString());
  assert.ok(rsa.modulus && rsa.d && rsa.inverseQ);

  await rejects(o.rest.actions.generateRunnerJitconfigForRepo({ owner: 'acme', repo: 'app', name: 'jit-1', runner_group_id: 1, labels: ['x'] }), 409, /^Already exists - A runner with the name jit-1 already exists\.$/);
  await rejects(o.rest.actions.generateRunnerJitconfigForRepo({ owner: 'acme', repo: 'app', name: 'jit-2', runner_group_id: 1, labels: [] }), 422);
  await rejects(o.rest.actions.generateRunnerJitconfigForRepo({ owner: 'acme', repo: 'app', name: 'jit-2', runner_group_id: 1, labels: Array.from({ length: 101 }, (_, i) => `l${i}`) }), 422);
  await rejects(o.rest.actions.generateRunnerJitconfigForRepo({ owner: 'acme', repo: 'app', runner_group_id: 1, labels: ['x'] }), 422);
  // Organization form; the same name is free in another scope.
  const org = await o.rest.actions.generateRunnerJitconfigForOrg({ org: 'acme', name: 'jit-1', runner_group_id: 1, labels: ['x'] });
  assert.equal(org.status, 201);
});

test('list with Link pagination over several pages, name filter, get and delete', async () => {
  const o = kit('ghp_admin_pat_0001');
  const ids = [];
  for (let i = 0; i < 7; i++) {
    ids.push((await o.rest.actions.generateRunnerJitconfigForRepo({ owner: 'acme', repo: 'pages', name: `p-${i}`, runner_group_id: 1, labels: ['p'] })).data.runner.id);
  }
  await gh.control('DELETE', '/calls');
  const all = await o.paginate(o.rest.actions.listSelfHostedRunnersForRepo, { owner: 'acme', repo: 'pages', per_page: 2 });
  assert.deepEqual(all.map((r) => r.id), ids);
  const calls = (await gh.control('GET', '/calls')).json;
  assert.equal(calls.byRoute['GET /repos/{owner}/{repo}/actions/runners'], 4);
  assert.equal(calls.byPrincipal['pat:ghp_admin_pat_0001'], 4);

  const p2 = await o.rest.actions.listSelfHostedRunnersForRepo({ owner: 'acme', repo: 'pages', per_page: 2, page: 2 });
  assert.equal(p2.data.total_count, 7);
  const rels = Object.fromEntries([...p2.headers.link.matchAll(/<([^>]+)>; rel="(\w+)"/g)].map((m) => [m[2], new URL(m[1]).searchParams.get('page')]));
  assert.deepEqual(rels, { prev: '1', next: '3', last: '4', first: '1' });
  const last = await o.rest.actions.listSelfHostedRunnersForRepo({ owner: 'acme', repo: 'pages', per_page: 2, page: 4 });
  assert.equal(last.data.runners.length, 1);
  assert.doesNotMatch(last.headers.link, /rel="next"/);

  const named = await o.rest.actions.listSelfHostedRunnersForRepo({ owner: 'acme', repo: 'pages', name: 'p-3' });
  assert.deepEqual(named.data.runners.map((r) => r.id), [ids[3]]);
  assert.equal(named.headers.link, undefined);

  const got = await o.rest.actions.getSelfHostedRunnerForRepo({ owner: 'acme', repo: 'pages', runner_id: ids[0] });
  assert.equal(got.data.name, 'p-0');
  await rejects(o.rest.actions.getSelfHostedRunnerForOrg({ org: 'acme', runner_id: ids[0] }), 404); // other scope
  assert.equal((await o.rest.actions.deleteSelfHostedRunnerFromRepo({ owner: 'acme', repo: 'pages', runner_id: ids[0] })).status, 204);
  await rejects(o.rest.actions.getSelfHostedRunnerForRepo({ owner: 'acme', repo: 'pages', runner_id: ids[0] }), 404);
  await rejects(o.rest.actions.deleteSelfHostedRunnerFromRepo({ owner: 'acme', repo: 'pages', runner_id: ids[0] }), 404);

  await ctl('POST', `/runners/${ids[1]}/busy`, { busy: true });
  const e = await rejects(o.rest.actions.deleteSelfHostedRunnerFromRepo({ owner: 'acme', repo: 'pages', runner_id: ids[1] }), 422);
  assert.equal(e.response.data.message, 'Bad request - Runner "p-1" is still running a job"');

  // removal-errors: the next removals answer GitHub's 5xx body, then the runner goes as usual.
  await ctl('POST', `/runners/${ids[1]}/busy`, { busy: false });
  assert.equal((await ctl('POST', `/runners/${ids[1]}/removal-errors`, { count: 2, status: 502, via: 'rest' })).removalErrors.count, 2);
  for (let i = 0; i < 2; i++) {
    const se = await rejects(o.rest.actions.deleteSelfHostedRunnerFromRepo({ owner: 'acme', repo: 'pages', runner_id: ids[1] }), 502);
    assert.deepEqual(se.response.data, { message: 'Server Error' });
  }
  assert.equal((await o.rest.actions.deleteSelfHostedRunnerFromRepo({ owner: 'acme', repo: 'pages', runner_id: ids[1] })).status, 204);
  // `via: runner` leaves the REST removal alone.
  await ctl('POST', `/runners/${ids[2]}/removal-errors`, { count: 1, via: 'runner' });
  assert.equal((await o.rest.actions.deleteSelfHostedRunnerFromRepo({ owner: 'acme', repo: 'pages', runner_id: ids[2] })).status, 204);
  await assert.rejects(ctl('POST', `/runners/${ids[3]}/removal-errors`, { status: 404 }));
});

test('labels: list, add, set, remove one, remove all', async () => {
  const o = kit('ghp_admin_pat_0001');
  const id = (await o.rest.actions.generateRunnerJitconfigForOrg({ org: 'acme', name: 'lab', runner_group_id: 1, labels: ['a'] })).data.runner.id;
  const names = (r) => r.data.labels.map((l) => l.name);
  assert.deepEqual(names(await o.rest.actions.listLabelsForSelfHostedRunnerForOrg({ org: 'acme', runner_id: id })), ['self-hosted', 'Linux', 'X64', 'a']);
  assert.deepEqual(names(await o.rest.actions.addCustomLabelsToSelfHostedRunnerForOrg({ org: 'acme', runner_id: id, labels: ['b', 'A'] })), ['self-hosted', 'Linux', 'X64', 'a', 'b']);
  const set = await o.rest.actions.setCustomLabelsForSelfHostedRunnerForOrg({ org: 'acme', runner_id: id, labels: ['c', 'd'] });
  assert.equal(set.data.total_count, 5);
  assert.deepEqual(names(set), ['self-hosted', 'Linux', 'X64', 'c', 'd']);
  assert.deepEqual(names(await o.rest.actions.removeCustomLabelFromSelfHostedRunnerForOrg({ org: 'acme', runner_id: id, name: 'c' })), ['self-hosted', 'Linux', 'X64', 'd']);
  await rejects(o.rest.actions.removeCustomLabelFromSelfHostedRunnerForOrg({ org: 'acme', runner_id: id, name: 'zzz' }), 404);
  await rejects(o.rest.actions.removeCustomLabelFromSelfHostedRunnerForOrg({ org: 'acme', runner_id: id, name: 'Linux' }), 422);
  await rejects(o.rest.actions.addCustomLabelsToSelfHostedRunnerForOrg({ org: 'acme', runner_id: id, labels: [] }), 422);
  assert.deepEqual(names(await o.rest.actions.removeAllCustomLabelsFromSelfHostedRunnerForOrg({ org: 'acme', runner_id: id })), ['self-hosted', 'Linux', 'X64']);
});

test('runner downloads: a real tarball whose sha256 matches', async () => {
  const o = kit('ghp_admin_pat_0001');
  const [d] = (await o.rest.actions.listRunnerApplicationsForRepo({ owner: 'acme', repo: 'app' })).data;
  assert.equal(d.os, 'linux');
  assert.equal(d.architecture, 'x64');
  const res = await fetch(d.download_url);
  assert.equal(res.status, 200);
  const body = Buffer.from(await res.arrayBuffer());
  assert.equal(crypto.createHash('sha256').update(body).digest('hex'), d.sha256_checksum);
  const listing = await new Promise((resolve, reject) => {
    const p = execFile('tar', ['-tvzf', '-'], (err, out) => (err ? reject(err) : resolve(out)));
    p.stdin.end(body);
  });
  assert.match(listing, /^-rwxr-xr-x .* \.\/bin\/Runner\.Listener$/m);
  assert.match(listing, /^-rwxr-xr-x .* \.\/config\.sh$/m);
});

test('credentials: 401 on bad or missing ones, 404 for owners a PAT cannot see', async () => {
  const e = await rejects(kit('ghp_not_a_real_token').rest.actions.createRegistrationTokenForOrg({ org: 'acme' }), 401, /^Bad credentials$/);
  assert.ok(e.response.headers['x-ratelimit-limit']);
  await rejects(kit(undefined).rest.actions.createRegistrationTokenForOrg({ org: 'acme' }), 401);
  await ctl('POST', '/owners', { owner: 'hidden' });
  await rejects(kit('ghp_admin_pat_0001').rest.actions.createRegistrationTokenForOrg({ org: 'hidden' }), 404);
});

test('GitHub App: RS256 JWT verified for real, installation lookup, expiring installation tokens', async () => {
  const app = await ctl('POST', '/apps', {});
  const key = crypto.createPrivateKey(app.privateKeyPem);
  const inst = await ctl(`POST`, `/apps/${app.appId}/installations`, { owner: 'acme' });
  const good = jwt({ iat: now() - 60, exp: now() + 540, iss: String(app.appId) }, key);

  const found = await kit(good).rest.apps.getRepoInstallation({ owner: 'acme', repo: 'app' });
  assert.equal(found.data.id, inst.id);
  assert.equal(found.data.app_id, app.appId);
  const byClientId = jwt({ iat: now() - 60, exp: now() + 600, iss: app.clientId }, key);
  assert.equal((await kit(byClientId).rest.apps.getOrgInstallation({ org: 'acme' })).data.id, inst.id);
  await rejects(kit(good).rest.apps.getOrgInstallation({ org: 'other' }), 404);

  const tok = await kit(good).rest.apps.createInstallationAccessToken({ installation_id: inst.id });
  assert.equal(tok.status, 201);
  assert.ok(Date.parse(tok.data.expires_at) > Date.now() + 3500e3);
  const t = kit(tok.data.token);
  assert.equal((await t.rest.actions.createRegistrationTokenForOrg({ org: 'acme' })).status, 201);
  await rejects(t.rest.actions.createRegistrationTokenForOrg({ org: 'other' }), 403, /Resource not accessible by integration/);
  await rejects(kit(good).rest.actions.createRegistrationTokenForOrg({ org: 'acme' }), 403); // a JWT is not an installation

  await rejects(kit(jwt({ iat: now() - 120, exp: now() - 10, iss: app.appId }, key)).rest.apps.getOrgInstallation({ org: 'acme' }), 401, /'Expiration time' claim \('exp'\) must be a numeric value/);
  await rejects(kit(jwt({ iat: now() - 60, exp: now() + 3600, iss: app.appId }, key)).rest.apps.getOrgInstallation({ org: 'acme' }), 401, /too far in the future/);
  await rejects(kit(jwt({ iat: now() + 300, exp: now() + 500, iss: app.appId }, key)).rest.apps.getOrgInstallation({ org: 'acme' }), 401, /'Issued at' claim/);
  await rejects(kit(jwt({ iat: now() - 60, iss: app.appId }, key)).rest.apps.getOrgInstallation({ org: 'acme' }), 401);
  const stranger = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  await rejects(kit(jwt({ iat: now() - 60, exp: now() + 300, iss: app.appId }, stranger)).rest.apps.getOrgInstallation({ org: 'acme' }), 401, /could not be decoded/);

  await ctl('POST', '/settings', { installationTokenTtlMs: 1000 });
  const short = (await kit(good).rest.apps.createInstallationAccessToken({ installation_id: inst.id })).data;
  assert.equal((await kit(short.token).rest.actions.createRemoveTokenForOrg({ org: 'acme' })).status, 201);
  await new Promise((r) => setTimeout(r, 1100));
  await rejects(kit(short.token).rest.actions.createRemoveTokenForOrg({ org: 'acme' }), 401, /Bad credentials/);
  await ctl('POST', '/settings', { installationTokenTtlMs: 3600000 });
});

test('injected faults: secondary rate limit (403 + retry-after), 429 retry-after, 5xx', async (t) => {
  t.after(() => faults.set('github', {}));
  const o = kit('ghp_admin_pat_0001');
  faults.set('github', { throttleRate: 1, retryAfterSeconds: 7 });
  let e = await rejects(o.rest.actions.createRegistrationTokenForOrg({ org: 'acme' }), 403, /^You have exceeded a secondary rate limit/);
  assert.equal(e.response.headers['retry-after'], '7');
  for (const h of ['limit', 'remaining', 'used', 'reset', 'resource']) assert.ok(e.response.headers[`x-ratelimit-${h}`], h);
  assert.notEqual(e.response.headers['x-ratelimit-remaining'], '0'); // not the primary limit
  faults.set('github', { retryAfterRate: 1, retryAfterSeconds: 3 });
  e = await rejects(o.rest.actions.listSelfHostedRunnersForOrg({ org: 'acme' }), 429);
  assert.equal(e.response.headers['retry-after'], '3');
  faults.set('github', { errorRate: 1 });
  e = await o.rest.actions.listSelfHostedRunnersForOrg({ org: 'acme' }).catch((x) => x);
  assert.ok([500, 502].includes(e.status), String(e.status));
  const s = faults.stats.github;
  assert.equal(s['POST /orgs/{org}/actions/runners/registration-token'].throttles, 1);
  assert.equal(s['GET /orgs/{org}/actions/runners'].retryAfters, 1);
  assert.equal(s['GET /orgs/{org}/actions/runners'].errors, 1);
});

test('primary rate limit: real budget per token, 403 with remaining 0 when spent', async (t) => {
  t.after(async () => { await ctl('POST', '/settings', { primaryLimit: 5000 }); await ctl('DELETE', '/ratelimits'); });
  await ctl('POST', '/pats', { token: 'ghp_budget_pat_0002' });
  await ctl('POST', '/pats', { token: 'ghp_bystander_0003' });
  await ctl('POST', '/settings', { primaryLimit: 3 });
  const o = kit('ghp_budget_pat_0002');
  const remaining = [];
  for (let i = 0; i < 3; i++) remaining.push((await o.rest.actions.listSelfHostedRunnersForOrg({ org: 'acme' })).headers['x-ratelimit-remaining']);
  assert.deepEqual(remaining, ['2', '1', '0']);
  const e = await rejects(o.rest.actions.listSelfHostedRunnersForOrg({ org: 'acme' }), 403, /^API rate limit exceeded/);
  const h = e.response.headers;
  assert.equal(h['x-ratelimit-remaining'], '0');
  assert.equal(h['x-ratelimit-used'], '3');
  const reset = Number(h['x-ratelimit-reset']);
  assert.ok(reset > now() + 3500 && reset <= now() + 3600, String(reset));
  // Another token's budget is untouched.
  assert.equal((await kit('ghp_bystander_0003').rest.actions.listSelfHostedRunnersForOrg({ org: 'acme' })).status, 200);
});

test('bulk runners: registered at once, listed in pages like any runner, all or nothing', async () => {
  await ctl('POST', '/pats', { token: 'ghp_bulk_pat_0004', owners: ['bulkco'] });
  const runners = Array.from({ length: 250 }, (_, i) => ({ name: `bulk-${i}`, labels: ['small'], busy: i % 3 === 0 }));
  const made = await ctl('POST', '/runners/bulk', { owner: 'bulkco', repo: 'svc', runners });
  assert.equal(made.ids.length, 250);
  assert.equal(new Set(made.ids).size, 250);
  const o = kit('ghp_bulk_pat_0004');
  await gh.control('DELETE', '/calls');
  const all = await o.paginate(o.rest.actions.listSelfHostedRunnersForRepo, { owner: 'bulkco', repo: 'svc', per_page: 100 });
  assert.equal((await gh.control('GET', '/calls')).json.byRoute['GET /repos/{owner}/{repo}/actions/runners'], 3);
  assert.deepEqual(all.map((r) => r.id), made.ids);
  assert.deepEqual(all.map((r) => r.name), runners.map((r) => r.name));
  assert.deepEqual(all.map((r) => r.busy), runners.map((r) => r.busy));
  assert.ok(all.every((r) => r.status === 'offline' && !r.ephemeral));
  assert.deepEqual(all[0].labels.map((l) => [l.name, l.type]), [['self-hosted', 'read-only'], ['Linux', 'read-only'], ['X64', 'read-only'], ['small', 'custom']]);
  // Another scope of the owner does not see them; deletion works as for any runner.
  assert.equal((await o.rest.actions.listSelfHostedRunnersForOrg({ org: 'bulkco' })).data.total_count, 0);
  assert.equal((await o.rest.actions.deleteSelfHostedRunnerFromRepo({ owner: 'bulkco', repo: 'svc', runner_id: made.ids[1] })).status, 204);

  // A taken name (case-insensitive) or a repeated one fails the whole batch.
  const before = (await o.rest.actions.listSelfHostedRunnersForRepo({ owner: 'bulkco', repo: 'svc' })).data.total_count;
  for (const [batch, status] of [
    [[{ name: 'fresh-1' }, { name: 'BULK-2' }], 409],
    [[{ name: 'twice' }, { name: 'twice' }], 409],
    [[{ name: '' }], 400],
    [[{ name: 'x', busy: 'yes' }], 400],
    [[{ name: 'x', labels: [''] }], 400],
    [[], 400],
  ]) {
    const r = await gh.control('POST', '/runners/bulk', { owner: 'bulkco', repo: 'svc', runners: batch });
    assert.equal(r.status, status, JSON.stringify(batch));
  }
  assert.equal((await o.rest.actions.listSelfHostedRunnersForRepo({ owner: 'bulkco', repo: 'svc' })).data.total_count, before);
});

test('a renamed or transferred repository: 301 for GET, 307 otherwise, to /repositories/<id>; Octokit follows', async () => {
  await ctl('POST', '/pats', { token: 'ghp_move_pat_0005', owners: ['moveco', 'newco'] });
  const o = kit('ghp_move_pat_0005');
  const jit = await o.rest.actions.generateRunnerJitconfigForRepo({ owner: 'moveco', repo: 'old-name', name: 'm-1', runner_group_id: 1, labels: ['x'] });
  const moved = await ctl('POST', '/repos/move', { from: 'moveco/old-name', to: 'newco/new-name' });
  const api = `${gh.url}/api/v3`;
  const raw = (method, p) => fetch(`${api}${p}`, { method, redirect: 'manual', headers: { authorization: 'Bearer ghp_move_pat_0005', accept: 'application/vnd.github+json' } });

  let r = await raw('GET', '/repos/moveco/old-name/actions/runners?per_page=5');
  assert.equal(r.status, 301);
  assert.equal(r.headers.get('location'), `${api}/repositories/${moved.id}/actions/runners?per_page=5`);
  assert.equal((await r.json()).message, 'Moved Permanently');
  r = await raw('POST', '/repos/moveco/old-name/actions/runners/registration-token');
  assert.equal(r.status, 307);
  assert.equal(r.headers.get('location'), `${api}/repositories/${moved.id}/actions/runners/registration-token`);
  r = await raw('DELETE', `/repos/MoveCo/Old-Name/actions/runners/${jit.data.runner.id}`);
  assert.equal(r.status, 307);
  // No redirect without credentials: the old name's owner may be private.
  assert.equal((await fetch(`${api}/repos/moveco/old-name/actions/runners`, { redirect: 'manual' })).status, 401);

  // The runner moved with the repository; Octokit (fetch) follows the redirects with the method.
  const listed = await o.rest.actions.listSelfHostedRunnersForRepo({ owner: 'moveco', repo: 'old-name' });
  assert.equal(listed.status, 200);
  assert.deepEqual(listed.data.runners.map((x) => x.name), ['m-1']);
  assert.equal((await o.rest.actions.listSelfHostedRunnersForRepo({ owner: 'newco', repo: 'new-name' })).data.total_count, 1);
  assert.equal((await o.rest.actions.createRegistrationTokenForRepo({ owner: 'moveco', repo: 'old-name' })).status, 201);
  assert.equal((await o.rest.actions.deleteSelfHostedRunnerFromRepo({ owner: 'moveco', repo: 'old-name', runner_id: jit.data.runner.id })).status, 204);
  assert.equal((await o.rest.actions.listSelfHostedRunnersForRepo({ owner: 'newco', repo: 'new-name' })).data.total_count, 0);
  await rejects(o.request('GET /repositories/{id}/actions/runners', { id: 999999 }), 404);

  // An organization renamed: its repositories' old paths redirect, its own do not (GitHub's rule).
  await ctl('POST', '/pats', { token: 'ghp_move_pat_0006', owners: ['orgold', 'orgnew'] });
  const p = kit('ghp_move_pat_0006');
  await p.rest.actions.generateRunnerJitconfigForOrg({ org: 'orgold', name: 'org-r', runner_group_id: 1, labels: ['x'] });
  await ctl('POST', '/owners/rename', { from: 'orgold', to: 'orgnew' });
  assert.equal((await raw('GET', '/repos/orgold/svc/actions/runners')).status, 301);
  assert.equal((await p.rest.actions.listSelfHostedRunnersForRepo({ owner: 'orgold', repo: 'svc' })).status, 200);
  await rejects(p.rest.actions.listSelfHostedRunnersForOrg({ org: 'orgold' }), 404);
  assert.deepEqual((await p.rest.actions.listSelfHostedRunnersForOrg({ org: 'orgnew' })).data.runners.map((x) => x.name), ['org-r']);
});

test('enterprise runners: /enterprises/{enterprise}/actions/runners with a PAT; Apps refused', async () => {
  await ctl('POST', '/enterprises', { enterprise: 'octo-corp', orgs: ['entorg'] });
  await ctl('POST', '/pats', { token: 'ghp_ent_pat_0007', owners: ['enterprise:octo-corp'] });
  const o = kit('ghp_ent_pat_0007');
  const E = '/enterprises/{enterprise}/actions/runners';
  const enterprise = 'octo-corp';
  assert.equal((await o.request(`POST ${E}/registration-token`, { enterprise })).status, 201);
  assert.equal((await o.request(`POST ${E}/remove-token`, { enterprise })).status, 201);
  const j = await o.request(`POST ${E}/generate-jitconfig`, { enterprise, name: 'ent-1', runner_group_id: 1, labels: ['e'] });
  assert.equal(j.status, 201);
  const files = JSON.parse(Buffer.from(j.data.encoded_jit_config, 'base64').toString());
  assert.equal(JSON.parse(Buffer.from(files['.runner'], 'base64').toString()).serverUrl, `${gh.url}/_services/pipelines`);
  const list = await o.request(`GET ${E}`, { enterprise });
  assert.deepEqual(list.data.runners.map((r) => r.name), ['ent-1']);
  const id = j.data.runner.id;
  assert.equal((await o.request(`GET ${E}/{runner_id}`, { enterprise, runner_id: id })).data.name, 'ent-1');
  assert.equal((await o.request(`POST ${E}/{runner_id}/labels`, { enterprise, runner_id: id, labels: ['more'] })).data.total_count, 5);
  assert.equal((await o.request(`DELETE ${E}/{runner_id}/labels`, { enterprise, runner_id: id })).data.total_count, 3);
  // An organization of the same name is another scope; the PAT cannot see an unknown enterprise.
  await rejects(o.rest.actions.listSelfHostedRunnersForOrg({ org: 'octo-corp' }), 404);
  await rejects(o.request(`GET ${E}`, { enterprise: 'other-corp' }), 404);
  assert.equal((await o.request(`DELETE ${E}/{runner_id}`, { enterprise, runner_id: id })).status, 204);

  // GitHub Apps cannot manage an enterprise's runners.
  const app = await ctl('POST', '/apps', {});
  const inst = await ctl('POST', `/apps/${app.appId}/installations`, { owner: 'entorg' });
  const token = (await kit(jwt({ iss: app.appId, iat: now() - 60, exp: now() + 500 }, app.privateKeyPem))
    .rest.apps.createInstallationAccessToken({ installation_id: inst.id })).data.token;
  await rejects(kit(token).request(`POST ${E}/registration-token`, { enterprise }), 403, /Resource not accessible by integration/);
});

test('runner groups: organizations and enterprises have them; JIT configs join one; a repository has only Default', async () => {
  await ctl('POST', '/pats', { token: 'ghp_group_pat_0008', owners: ['grouporg', 'enterprise:group-corp'] });
  const g = await ctl('POST', '/runner-groups', { owner: 'grouporg', name: 'gpu runners' });
  const ge = await ctl('POST', '/runner-groups', { enterprise: 'group-corp', name: 'Enterprise Linux' });
  assert.notEqual(g.id, 1);
  assert.equal((await gh.control('POST', '/runner-groups', { owner: 'grouporg', name: 'GPU Runners' })).status, 409);
  const o = kit('ghp_group_pat_0008');
  const r = await o.rest.actions.generateRunnerJitconfigForOrg({ org: 'grouporg', name: 'grp-1', runner_group_id: g.id, labels: ['x'] });
  assert.equal(r.data.runner.runner_group_id, g.id);
  const files = JSON.parse(Buffer.from(r.data.encoded_jit_config, 'base64').toString());
  const settings = JSON.parse(Buffer.from(files['.runner'], 'base64').toString());
  assert.deepEqual([settings.poolId, settings.poolName], [g.id, 'gpu runners']);
  const view = (await ctl('GET', '/runners')).runners.find((x) => x.name === 'grp-1');
  assert.deepEqual([view.runner_group_id, view.runner_group_name], [g.id, 'gpu runners']);
  // Another owner's group, or any but Default for a repository: 404.
  await rejects(o.rest.actions.generateRunnerJitconfigForOrg({ org: 'grouporg', name: 'grp-2', runner_group_id: ge.id, labels: ['x'] }), 404);
  await rejects(o.rest.actions.generateRunnerJitconfigForRepo({ owner: 'grouporg', repo: 'app', name: 'grp-3', runner_group_id: g.id, labels: ['x'] }), 404);
  const e = await o.request('POST /enterprises/{enterprise}/actions/runners/generate-jitconfig', { enterprise: 'group-corp', name: 'grp-4', runner_group_id: ge.id, labels: ['x'] });
  assert.equal(e.data.runner.runner_group_id, ge.id);
});
