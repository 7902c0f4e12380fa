'use strict';
// Workflow runs, their jobs and "re-run failed jobs" on the GitHub stand-in, driven through
// @octokit/rest (whose endpoint methods are generated from GitHub's OpenAPI description): a new
// attempt re-queues the failed and cancelled jobs and their dependents under the same labels,
// carries the others over, and the run's status and job listings say so.
const test = require('node:test');
const assert = require('node:assert/strict');
const { createGithub } = require('../github');
const { controlOf } = require('../testing/wait');
const { rejects } = require('../testing/rejects');

const quiet = { debug() {}, info() {}, warn() {}, error() {} };
let gh;
let Octokit;
const kit = (auth) => new Octokit({ auth, baseUrl: `${gh.url}/api/v3`, log: quiet });
const ctl = controlOf(() => gh);

test.before(async () => {
  ({ Octokit } = await import('@octokit/rest'));
  gh = await createGithub({ log: () => {} });
  await ctl('POST', '/pats', { token: 'ghp_runs_pat_0001', owners: ['acme'] });
  await ctl('POST', '/pats', { token: 'ghp_other_pat_001', owners: ['other'] });
});
test.after(() => gh.close());

test('re-run failed jobs: the failed job and its dependents again, same labels, the rest carried over', async () => {
  const o = kit('ghp_runs_pat_0001');
  const run = await ctl('POST', '/runs', { owner: 'acme', repo: 'app', name: 'ci' });
  const hosted = async (name, needs, result) => {
    const j = await ctl('POST', '/jobs', { runId: run.id, name, labels: ['ubuntu-latest'], hosted: true, needs });
    if (result) await ctl('POST', `/jobs/${j.id}/complete`, { result });
    return j;
  };
  await hosted('provision', [], 'Succeeded');
  await hosted('lint', [], 'Succeeded');
  const build = await ctl('POST', '/jobs', { runId: run.id, name: 'build', labels: ['ci-7-1-provision'], needs: ['provision'] });
  const release = await hosted('release', ['provision', 'build']);

  // Nothing serves the label: the build waits, and so does the run.
  let got = (await o.rest.actions.getWorkflowRun({ owner: 'acme', repo: 'app', run_id: run.id })).data;
  assert.equal(got.status, 'queued');
  assert.equal(got.run_attempt, 1);
  await rejects(o.rest.actions.reRunWorkflowFailedJobs({ owner: 'acme', repo: 'app', run_id: run.id }), 403, /not completed/);

  // Cancelled after its wait; the release job still runs (if: always()).
  await ctl('POST', `/jobs/${build.id}/cancel`);
  await ctl('POST', `/jobs/${release.id}/complete`, { result: 'Succeeded' });
  got = (await o.rest.actions.getWorkflowRun({ owner: 'acme', repo: 'app', run_id: run.id })).data;
  assert.equal(got.status, 'completed');
  assert.equal(got.conclusion, 'cancelled');
  assert.equal((await o.rest.actions.listWorkflowRunsForRepo({ owner: 'acme', repo: 'app', status: 'queued' })).data.total_count, 0);

  const r = await o.rest.actions.reRunWorkflowFailedJobs({ owner: 'acme', repo: 'app', run_id: run.id });
  assert.equal(r.status, 201);
  got = (await o.rest.actions.getWorkflowRun({ owner: 'acme', repo: 'app', run_id: run.id })).data;
  assert.equal(got.run_attempt, 2);
  assert.equal(got.status, 'queued');
  const queued = (await o.rest.actions.listWorkflowRunsForRepo({ owner: 'acme', repo: 'app', status: 'queued' })).data;
  assert.deepEqual(queued.workflow_runs.map((w) => w.id), [run.id]);

  const latest = (await o.rest.actions.listJobsForWorkflowRun({ owner: 'acme', repo: 'app', run_id: run.id, filter: 'latest' })).data;
  const byName = Object.fromEntries(latest.jobs.map((j) => [j.name, j]));
  assert.deepEqual(Object.keys(byName).sort(), ['build', 'lint', 'provision', 'release']);
  assert.deepEqual([byName.provision.run_attempt, byName.provision.status, byName.provision.conclusion], [1, 'completed', 'success']);
  assert.deepEqual([byName.lint.run_attempt, byName.lint.conclusion], [1, 'success']);
  assert.deepEqual([byName.build.run_attempt, byName.build.status, byName.build.conclusion], [2, 'queued', null]);
  assert.deepEqual(byName.build.labels, ['ci-7-1-provision']); // the first attempt's label, again
  assert.notEqual(byName.build.id, build.id);
  assert.deepEqual([byName.release.run_attempt, byName.release.status], [2, 'queued']); // it needs build
  assert.equal(byName.build.run_id, run.id);

  const all = (await o.rest.actions.listJobsForWorkflowRun({ owner: 'acme', repo: 'app', run_id: run.id, filter: 'all' })).data;
  assert.equal(all.total_count, 6);
  // Pages follow GitHub's Link header.
  const pages = await o.paginate(o.rest.actions.listJobsForWorkflowRun, { owner: 'acme', repo: 'app', run_id: run.id, filter: 'all', per_page: 4 });
  assert.equal(pages.length, 6);

  // Control's button is the same call: the run is going again, so refused alike.
  const button = await gh.control('POST', `/runs/${run.id}/rerun-failed-jobs`);
  assert.equal(button.status, 403);
  assert.match(button.json.message, /not completed/);
  // Still going: no second re-run yet.
  await rejects(o.rest.actions.reRunWorkflowFailedJobs({ owner: 'acme', repo: 'app', run_id: run.id }), 403, /not completed/);
});

test('a run with no failed job cannot re-run its failed jobs; runs are the repository\'s and the token\'s', async () => {
  const o = kit('ghp_runs_pat_0001');
  const run = await ctl('POST', '/runs', { owner: 'acme', repo: 'svc' });
  const j = await ctl('POST', '/jobs', { runId: run.id, name: 'only', labels: ['ubuntu-latest'], hosted: true });
  await ctl('POST', `/jobs/${j.id}/complete`, { result: 'Succeeded' });
  await rejects(o.rest.actions.reRunWorkflowFailedJobs({ owner: 'acme', repo: 'svc', run_id: run.id }), 403, /no failed jobs/);
  await rejects(o.rest.actions.getWorkflowRun({ owner: 'acme', repo: 'app', run_id: run.id }), 404);
  await rejects(kit('ghp_other_pat_001').rest.actions.getWorkflowRun({ owner: 'acme', repo: 'svc', run_id: run.id }), 404);
  await rejects(o.rest.actions.listJobsForWorkflowRun({ owner: 'acme', repo: 'svc', run_id: run.id, filter: 'some' }), 422);
  const done = (await o.rest.actions.listWorkflowRunsForRepo({ owner: 'acme', repo: 'svc', status: 'success' })).data;
  assert.deepEqual(done.workflow_runs.map((w) => [w.id, w.status, w.conclusion]), [[run.id, 'completed', 'success']]);
});

test('control refuses what a run cannot hold', async () => {
  const run = await ctl('POST', '/runs', { owner: 'acme', repo: 'app' });
  assert.equal((await gh.control('POST', '/jobs', { runId: 1, name: 'x', label: 'a' })).status, 400);
  assert.equal((await gh.control('POST', '/jobs', { runId: run.id, label: 'a' })).status, 400); // no name
  await ctl('POST', '/jobs', { runId: run.id, name: 'x', label: 'a' });
  assert.equal((await gh.control('POST', '/jobs', { runId: run.id, name: 'x', label: 'a' })).status, 400); // taken
  const self = await ctl('POST', '/jobs', { runId: run.id, name: 'y', label: 'a' });
  assert.equal((await gh.control('POST', `/jobs/${self.id}/complete`, { result: 'Succeeded' })).status, 409); // not hosted
  assert.equal((await gh.control('POST', '/runs', { owner: 'acme' })).status, 400);
});

test('re-run a job: that job and its dependents again once the run is over, same labels; the replaced one is not re-run', async () => {
  const o = kit('ghp_runs_pat_0001');
  const run = await ctl('POST', '/runs', { owner: 'acme', repo: 'spot', name: 'ci' });
  const provision = await ctl('POST', '/jobs', { runId: run.id, name: 'provision', labels: ['ubuntu-latest'], hosted: true });
  await ctl('POST', `/jobs/${provision.id}/complete`, { result: 'Succeeded' });
  const build = await ctl('POST', '/jobs', { runId: run.id, name: 'build', labels: ['ci-9-1-p'], needs: ['provision'] });
  const test2 = await ctl('POST', '/jobs', { runId: run.id, name: 'test', labels: ['ci-9-1-p'], needs: ['build'] });
  const release = await ctl('POST', '/jobs', { runId: run.id, name: 'release', labels: ['ubuntu-latest'], hosted: true, needs: ['provision', 'build'] });

  const got = (await o.rest.actions.getJobForWorkflowRun({ owner: 'acme', repo: 'spot', job_id: build.id })).data;
  assert.deepEqual([got.id, got.run_id, got.run_attempt, got.status, got.name], [build.id, run.id, 1, 'queued', 'build']);
  await rejects(o.rest.actions.reRunJobForWorkflowRun({ owner: 'acme', repo: 'spot', job_id: build.id }), 403, /not completed/);
  await rejects(o.rest.actions.reRunJobForWorkflowRun({ owner: 'acme', repo: 'app', job_id: build.id }), 404);
  await rejects(kit('ghp_other_pat_001').rest.actions.reRunJobForWorkflowRun({ owner: 'acme', repo: 'spot', job_id: build.id }), 404);

  await ctl('POST', `/jobs/${build.id}/cancel`);
  await ctl('POST', `/jobs/${test2.id}/cancel`);
  await ctl('POST', `/jobs/${release.id}/complete`, { result: 'Succeeded' });
  const r = await o.rest.actions.reRunJobForWorkflowRun({ owner: 'acme', repo: 'spot', job_id: build.id });
  assert.equal(r.status, 201);
  const latest = (await o.rest.actions.listJobsForWorkflowRun({ owner: 'acme', repo: 'spot', run_id: run.id })).data.jobs;
  const byName = Object.fromEntries(latest.map((j) => [j.name, j]));
  assert.deepEqual([byName.build.run_attempt, byName.build.status, byName.build.labels], [2, 'queued', ['ci-9-1-p']]);
  assert.deepEqual([byName.test.run_attempt, byName.release.run_attempt, byName.provision.run_attempt], [2, 2, 1]);
  assert.notEqual(byName.build.id, build.id);
  // Going again: refused; and once over, the first attempt's job is no longer the one to re-run.
  await rejects(o.rest.actions.reRunJobForWorkflowRun({ owner: 'acme', repo: 'spot', job_id: build.id }), 403, /not completed/);
  for (const name of ['build', 'test']) await ctl('POST', `/jobs/${byName[name].id}/cancel`);
  await ctl('POST', `/jobs/${byName.release.id}/complete`, { result: 'Succeeded' });
  await rejects(o.rest.actions.reRunJobForWorkflowRun({ owner: 'acme', repo: 'spot', job_id: build.id }), 403, /newer attempt/);
  // The newest attempt's job may be re-run, whatever its conclusion.
  assert.equal((await o.rest.actions.reRunJobForWorkflowRun({ owner: 'acme', repo: 'spot', job_id: byName.build.id })).status, 201);
});
