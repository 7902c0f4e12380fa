'use strict';
// Workflow runs and their jobs as the REST API shows them (docs.github.com/rest/actions/workflow-runs
// and /workflow-jobs), and "re-run failed jobs" with GitHub's semantics: a new attempt of the same
// run re-queues every job whose conclusion was failure, cancelled or timed out, with every job
// that needs one of them (transitively), under the same labels; the other jobs are carried over
// with their outputs. So a job that waited on a label computed by an earlier attempt's job waits on
// that same label again. Jobs are the broker's (broker.js), tagged with their run and attempt; a
// `hosted` job is one GitHub's own runners would take: no self-hosted runner is offered it, and
// control completes it.
const { HttpError, access } = require('./rest');
const { lc } = require('./model');

const DOC = 'https://docs.github.com/rest/actions/workflow-runs';
const JOBS_DOC = 'https://docs.github.com/rest/actions/workflow-jobs';
const MAX_ATTEMPTS = 50; // "A workflow run can be re-run a maximum of 50 times"
const RERUN = new Set(['failure', 'cancelled', 'timed_out']);

const iso = (ms) => (ms ? new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z') : null);

// The broker's state and result as the REST API's status and conclusion.
function jobStatus(job) {
  if (job.state === 'queued' || job.state === 'dispatched' || job.state === 'refused') return 'queued';
  if (job.state === 'running') return 'in_progress';
  return 'completed';
}
function jobConclusion(job) {
  if (jobStatus(job) !== 'completed') return null;
  if (job.state === 'lost') return 'failure';
  switch (job.result) {
    case 'Succeeded': case 'SucceededWithIssues': return 'success';
    case 'Canceled': return 'cancelled';
    case 'Skipped': return 'skipped';
    default: return 'failure';
  }
}

class WorkflowRuns {
  constructor(model, broker) {
    this.model = model;
    this.broker = broker;
    this.runs = new Map();
    this.nextRunId = 7000000001;
  }

  create(spec = {}) {
    if (typeof spec.owner !== 'string' || !spec.owner || typeof spec.repo !== 'string' || !spec.repo) throw new Error('a run needs owner and repo');
    this.model.addOwner(spec.owner);
    const id = this.nextRunId++;
    const run = { id, owner: spec.owner, repo: spec.repo, name: spec.name || 'ci', attempt: 1, jobIds: [], createdAt: Date.now(), updatedAt: Date.now() };
    this.runs.set(id, run);
    return run;
  }

  // A job of the run's current attempt: spec as broker.queue's plus runId, needs:[names], hosted.
  queueJob(spec) {
    const run = this.runs.get(Number(spec.runId));
    if (!run) throw new Error(`no run ${spec.runId}`);
    if (spec.needs !== undefined && (!Array.isArray(spec.needs) || spec.needs.some((n) => typeof n !== 'string'))) throw new Error('needs must be an array of job names');
    if (spec.name === undefined) throw new Error('a job of a run needs a name (needs and re-runs refer to it)');
    if (this.latest(run).some((j) => j.runAttempt === run.attempt && j.name === spec.name)) throw new Error(`run ${run.id} already has a job ${spec.name} in attempt ${run.attempt}`);
    const job = this.broker.queue({ ...spec, owner: run.owner, repo: run.repo, runId: run.id, runAttempt: run.attempt, needs: spec.needs || [] });
    run.jobIds.push(job.id);
    run.updatedAt = Date.now();
    return job;
  }

  jobsOf(run) { return run.jobIds.map((id) => this.broker.jobs.get(id)); }
  // Each job name's newest execution: the current attempt's jobs and those carried over.
  latest(run) {
    const byName = new Map();
    for (const j of this.jobsOf(run)) {
      const had = byName.get(j.name);
      if (!had || j.runAttempt > had.runAttempt) byName.set(j.name, j);
    }
    return [...byName.values()].sort((a, b) => a.id - b.id);
  }

  status(run) {
    const jobs = this.latest(run);
    if (jobs.some((j) => jobStatus(j) === 'in_progress')) return 'in_progress';
    if (!jobs.length || jobs.some((j) => jobStatus(j) === 'queued')) return 'queued';
    return 'completed';
  }
  conclusion(run) {
    if (this.status(run) !== 'completed') return null;
    const c = this.latest(run).map(jobConclusion);
    if (c.includes('failure')) return 'failure';
    if (c.includes('cancelled')) return 'cancelled';
    return 'success';
  }

  // POST …/rerun-failed-jobs. Errors: the stand-in's choices where GitHub's are undocumented.
  rerunFailed(run) {
    this.mayRerun(run);
    const again = this.latest(run).filter((j) => RERUN.has(jobConclusion(j))).map((j) => j.name);
    if (!again.length) throw new HttpError(403, 'This workflow run has no failed jobs to re-run.', { doc: DOC });
    this.requeue(run, again);
  }

  // POST …/actions/jobs/{job_id}/rerun ("Re-run a job and its dependent jobs in a workflow run";
  // OpenAPI: 201 empty-object, 403 forbidden): whatever the job's conclusion, once its run is over.
  // A job an attempt has since replaced is not the run's to re-run (the stand-in's choice: 403).
  rerunJob(run, job) {
    this.mayRerun(run);
    if (!this.latest(run).includes(job)) throw new HttpError(403, 'This job has been re-run in a newer attempt of its workflow run.', { doc: JOBS_DOC });
    this.requeue(run, [job.name]);
  }

  mayRerun(run) {
    if (this.status(run) !== 'completed') throw new HttpError(403, 'This workflow run is not completed yet.', { doc: DOC });
    if (run.attempt >= MAX_ATTEMPTS) throw new HttpError(403, `This workflow run has reached the maximum of ${MAX_ATTEMPTS} attempts.`, { doc: DOC });
  }

  // A new attempt: the named jobs and every job that needs one of them (transitively) again, as
  // new jobs under the same labels; the others carried over.
  requeue(run, names) {
    const latest = this.latest(run);
    const again = new Set(names);
    for (let grew = true; grew;) {
      grew = false;
      for (const j of latest) {
        if (!again.has(j.name) && j.needs.some((n) => again.has(n))) { again.add(j.name); grew = true; }
      }
    }
    run.attempt += 1;
    for (const j of latest.filter((x) => again.has(x.name))) {
      const job = this.broker.queue({
        name: j.name, labels: [...j.labels], durationMs: j.durationMs, run: j.run, owner: run.owner, repo: run.repo,
        runId: run.id, runAttempt: run.attempt, needs: [...j.needs], hosted: j.hosted,
      });
      run.jobIds.push(job.id);
    }
    run.updatedAt = Date.now();
  }

  // The run a job belongs to, or undefined (a job queued outside any run).
  runOfJob(job) { return job && job.runId != null ? this.runs.get(Number(job.runId)) : undefined; }

  restJob(run, j, origin) {
    const api = `${origin}/api/v3/repos/${run.owner}/${run.repo}/actions`;
    return {
      id: j.id, run_id: run.id, run_attempt: j.runAttempt, run_url: `${api}/runs/${run.id}`,
      node_id: `CR_${j.id}`, head_sha: '0'.repeat(40), url: `${api}/jobs/${j.id}`,
      html_url: `${origin}/${run.owner}/${run.repo}/actions/runs/${run.id}/job/${j.id}`,
      status: jobStatus(j), conclusion: jobConclusion(j), created_at: iso(j.queuedAt), started_at: iso(j.startedAt || j.queuedAt),
      completed_at: iso(j.completedAt), name: j.name, steps: [], check_run_url: `${api.replace('/actions', '')}/check-runs/${j.id}`,
      labels: [...j.labels], runner_id: j.runnerId, runner_name: j.runnerName, runner_group_id: null, runner_group_name: null,
      workflow_name: run.name, head_branch: 'main',
    };
  }

  restRun(run, origin) {
    const api = `${origin}/api/v3/repos/${run.owner}/${run.repo}`;
    return {
      id: run.id, name: run.name, node_id: `WFR_${run.id}`, head_branch: 'main', head_sha: '0'.repeat(40), run_number: run.id % 100000,
      run_attempt: run.attempt, event: 'push', status: this.status(run), conclusion: this.conclusion(run), workflow_id: 1,
      url: `${api}/actions/runs/${run.id}`, html_url: `${origin}/${run.owner}/${run.repo}/actions/runs/${run.id}`,
      jobs_url: `${api}/actions/runs/${run.id}/jobs`, created_at: iso(run.createdAt), updated_at: iso(run.updatedAt),
      run_started_at: iso(run.createdAt), repository: { name: run.repo, full_name: `${run.owner}/${run.repo}`, owner: { login: run.owner } },
    };
  }

  // Control's view: every job of every attempt, with the broker's fate.
  view(run) {
    return {
      id: run.id, owner: run.owner, repo: run.repo, name: run.name, attempt: run.attempt, status: this.status(run), conclusion: this.conclusion(run),
      jobs: this.jobsOf(run).map((j) => ({ ...this.broker.view(j), status: jobStatus(j), conclusion: jobConclusion(j) })),
    };
  }
}

function page(ctx, items) {
  const perPage = Math.min(100, Math.max(1, parseInt(ctx.query.get('per_page'), 10) || 30));
  const n = Math.max(1, parseInt(ctx.query.get('page'), 10) || 1);
  const last = Math.max(1, Math.ceil(items.length / perPage));
  const link = require('./rest').linkHeader(ctx.base, ctx.query, n, perPage, last);
  return { items: items.slice((n - 1) * perPage, n * perPage), headers: link ? { link } : {} };
}

function routes({ model, runs }) {
  const runOf = (ctx) => {
    access(model, ctx.principal, ctx.params.owner);
    const run = runs.runs.get(Number(ctx.params.run_id));
    if (!run || lc(run.owner) !== lc(ctx.params.owner) || lc(run.repo) !== lc(ctx.params.repo)) throw new HttpError(404, 'Not Found', { doc: DOC });
    return run;
  };
  const jobOf = (ctx) => {
    access(model, ctx.principal, ctx.params.owner);
    const job = runs.broker.jobs.get(Number(ctx.params.job_id));
    const run = runs.runOfJob(job);
    if (!run || lc(run.owner) !== lc(ctx.params.owner) || lc(run.repo) !== lc(ctx.params.repo)) throw new HttpError(404, 'Not Found', { doc: JOBS_DOC });
    return { run, job };
  };
  const base = '/repos/{owner}/{repo}/actions/runs';
  return [
    ['GET', base, (ctx) => {
      access(model, ctx.principal, ctx.params.owner);
      const status = ctx.query.get('status');
      const all = [...runs.runs.values()]
        .filter((r) => lc(r.owner) === lc(ctx.params.owner) && lc(r.repo) === lc(ctx.params.repo))
        .filter((r) => !status || runs.status(r) === status || runs.conclusion(r) === status)
        .sort((a, b) => b.id - a.id); // newest first
      const p = page(ctx, all);
      return { status: 200, headers: p.headers, body: { total_count: all.length, workflow_runs: p.items.map((r) => runs.restRun(r, ctx.origin)) } };
    }],
    ['GET', `${base}/{run_id}`, (ctx) => ({ status: 200, body: runs.restRun(runOf(ctx), ctx.origin) })],
    ['GET', `${base}/{run_id}/jobs`, (ctx) => {
      const run = runOf(ctx);
      const filter = ctx.query.get('filter') || 'latest';
      if (filter !== 'latest' && filter !== 'all') throw new HttpError(422, `Invalid request.\n\n"filter" must be "latest" or "all".`, { doc: JOBS_DOC });
      const all = filter === 'all' ? runs.jobsOf(run) : runs.latest(run);
      const p = page(ctx, all);
      return { status: 200, headers: p.headers, body: { total_count: all.length, jobs: p.items.map((j) => runs.restJob(run, j, ctx.origin)) } };
    }],
    ['GET', '/repos/{owner}/{repo}/actions/jobs/{job_id}', (ctx) => {
      const { run, job } = jobOf(ctx);
      return { status: 200, body: runs.restJob(run, job, ctx.origin) };
    }],
    ['POST', '/repos/{owner}/{repo}/actions/jobs/{job_id}/rerun', (ctx) => {
      const { run, job } = jobOf(ctx);
      runs.rerunJob(run, job);
      return { status: 201, body: {} };
    }],
    ['POST', `${base}/{run_id}/rerun-failed-jobs`, (ctx) => {
      runs.rerunFailed(runOf(ctx));
      return { status: 201, body: {} };
    }],
  ];
}

module.exports = { WorkflowRuns, routes, jobStatus, jobConclusion };
