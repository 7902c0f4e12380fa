'use strict';
// The job broker: queued jobs go, FIFO, to an open long poll of an online runner whose labels
// include all of the job's labels (runs-on semantics) and whose scope covers the job's repo.
// It keeps the real service's awkward behaviour on purpose: `busy` flips at acquire, not at
// dispatch; a job handed to a poll but never acquired (SIGTERM between acknowledge and acquire,
// runner deleted meanwhile) is only redispatched once its lock expires; a running job whose lock
// is no longer renewed is lost. Every job's fate is recorded for tests and benchmarks.
const crypto = require('node:crypto');
const { lc } = require('./model');

const RESULTS = ['Succeeded', 'SucceededWithIssues', 'Failed', 'Canceled', 'Skipped', 'Abandoned'];
// A job's `fault`: the paths on which the real runner prints "Running job" (or nothing) and never
// "completed with result". acquire404/409/422: acquire answers that status (job gone, acquired
// elsewhere, unprocessable; the runner logs "Skipping message Job" and prints nothing); renewFails:
// the first renew answers job-not-found (no Worker starts); cancelBeforeRenew: the first renew hangs
// and the job is cancelled (a JobCancellation message); workerSendTimeout: the runner's send of
// the job to its Worker times out (the stand-in's hook for a stuck Worker; it is killed).
const FAULTS = ['acquire404', 'acquire409', 'acquire422', 'renewFails', 'cancelBeforeRenew', 'workerSendTimeout'];

class Broker {
  constructor(model, log = () => {}) {
    this.model = model;
    this.log = log;
    this.jobs = new Map();
    this.polls = [];
    this.sessionOf = new Map(); // job id -> session object it is pending on (dispatched, unacquired)
    this.nextJobId = 1;
    this.nextMessageId = 1;
    // Job events for the runner scale-set service (scalesets.js): ('queued' | 'started' |
    // 'completed' | 'lost', job, runner?).
    this.onJob = () => {};
    this.timer = setInterval(() => this.sweep(), 100);
    this.timer.unref();
  }

  close() {
    clearInterval(this.timer);
    for (const p of [...this.polls]) p.finish(204);
  }

  get s() { return this.model.settings; }

  // ---- sessions: a runner is online while its session is live
  sessionLive(r) {
    const s = r.session;
    return !!s && (s.polls > 0 || Date.now() - s.lastSeen < this.s.sessionIdleMs);
  }
  createSession(r) {
    if (this.sessionLive(r)) return null;
    r.session = { id: crypto.randomUUID(), createdAt: Date.now(), lastSeen: Date.now(), polls: 0, pending: null };
    return r.session;
  }
  deleteSession(r, sessionId) {
    if (!r.session || r.session.id !== sessionId) return false;
    const s = r.session;
    r.session = null;
    for (const p of this.polls.filter((q) => q.session === s)) p.finish(404, { typeKey: 'TaskAgentSessionExpiredException', message: 'session deleted' });
    return true;
  }
  touch(r) { if (r.session) r.session.lastSeen = Date.now(); }

  // ---- jobs
  queue(spec = {}) {
    const labels = spec.labels ?? (spec.label !== undefined ? [spec.label] : null);
    if (!Array.isArray(labels) || !labels.length || labels.some((l) => typeof l !== 'string' || !l)) throw new Error('a job needs label or labels: [non-empty strings]');
    if (spec.repo && !spec.owner) throw new Error('repo needs owner');
    const durationMs = spec.durationMs ?? 0;
    if (typeof durationMs !== 'number' || durationMs < 0) throw new Error('durationMs must be a number >= 0');
    if (spec.run !== undefined && spec.run !== null && typeof spec.run !== 'string') throw new Error('run must be a string');
    if (spec.fault !== undefined && spec.fault !== null && !FAULTS.includes(spec.fault)) throw new Error(`fault must be one of ${FAULTS.join(', ')}`);
    if (spec.hosted !== undefined && typeof spec.hosted !== 'boolean') throw new Error('hosted must be a boolean');
    if (spec.owner) this.model.addOwner(spec.owner);
    const id = this.nextJobId++;
    const job = {
      id, name: spec.name || `job-${id}`, labels, owner: spec.owner || null, repo: spec.repo || null,
      durationMs, run: spec.run || null, planId: crypto.randomUUID(), jobGuid: crypto.randomUUID(),
      state: 'queued', queuedAt: Date.now(), dispatches: [], lockedUntil: null, startedAt: null,
      completedAt: null, result: null, runnerId: null, runnerName: null, lateMs: null, startLatencyMs: null,
      fault: spec.fault || null, refusedWith: null,
      // Its workflow run (workflow_runs.js), when it belongs to one; a hosted job is for GitHub's
      // own runners: never offered to a self-hosted one, completed through control.
      runId: spec.runId ?? null, runAttempt: spec.runAttempt ?? null, needs: spec.needs ?? [], hosted: !!spec.hosted,
      workflowRunId: spec.runId ?? undefined,
    };
    this.jobs.set(id, job);
    this.log(`github: job ${id} queued for [${labels.join(', ')}]`);
    this.onJob('queued', job);
    this.pump();
    return job;
  }

  view(job) {
    const { planId, jobGuid, ...rest } = job;
    return { ...rest, dispatches: job.dispatches.map((d) => ({ ...d })) };
  }

  // ---- long polls
  // reply(status, body) answers the HTTP request; the returned poll's finish() ends it early.
  openPoll(r, reply) {
    const session = r.session;
    session.polls++;
    const poll = { runner: r, session, done: false };
    poll.finish = (status, body) => {
      if (poll.done) return;
      poll.done = true;
      clearTimeout(poll.timer);
      this.polls.splice(this.polls.indexOf(poll), 1);
      session.polls--;
      session.lastSeen = Date.now();
      if (status) reply(status, body);
    };
    poll.timer = setTimeout(() => {
      if (r.deleted) poll.finish(404, { typeKey: 'RunnerNotFoundException', message: `Runner ${r.name} not found: the registration has been deleted` });
      else poll.finish(204);
    }, this.s.pollMs);
    this.polls.push(poll);
    if (session.cancel) { // a job of this session was cancelled: the message goes out on the next poll
      const jobId = session.cancel;
      session.cancel = null;
      poll.finish(200, { messageId: this.nextMessageId++, messageType: 'JobCancellation', body: { jobId } });
      return poll;
    }
    this.pump();
    return poll;
  }

  eligible(p, job) {
    const r = p.runner;
    if (job.hosted || p.done || r.deleted || r.session !== p.session || r.busy || p.session.pending) return false;
    if (r.ephemeral && r.ephemeralUsed) return false;
    if (job.owner && !this.model.covers(r, job.owner, job.repo)) return false;
    // A job bound to a runner scale set goes only to that set's runners, and only once the set
    // has acquired it; a set's runners take nothing else (the set's binding replaces labels).
    if (job.scaleSet || r.scaleSetId) return !!job.scaleSet && job.scaleSet.id === r.scaleSetId && job.scaleSet.state === 'assigned';
    const have = new Set(r.labels.map((l) => lc(l.name)));
    return job.labels.every((l) => have.has(lc(l)));
  }

  pump() {
    const queued = [...this.jobs.values()].filter((j) => j.state === 'queued').sort((a, b) => a.id - b.id);
    for (const job of queued) {
      const poll = this.polls.find((p) => this.eligible(p, job));
      if (!poll) continue;
      const r = poll.runner;
      const now = Date.now();
      job.state = 'dispatched';
      job.lockedUntil = now + this.s.lockExpiryMs;
      job.dispatches.push({ runnerId: r.id, runnerName: r.name, sessionId: poll.session.id, at: now, acknowledgedAt: null, acquiredAt: null, expiredAt: null });
      poll.session.pending = job.id;
      this.sessionOf.set(job.id, poll.session);
      if (r.ephemeral) r.ephemeralUsed = true;
      this.log(`github: job ${job.id} dispatched to runner ${r.id} (${r.name})`);
      poll.finish(200, {
        messageId: this.nextMessageId++, messageType: 'RunnerJobRequest',
        body: { runnerRequestId: job.id, planId: job.planId, jobId: job.jobGuid, jobName: job.name, shouldAcknowledge: !!this.s.shouldAcknowledge },
      });
    }
  }

  current(r, requestId, state) {
    const job = this.jobs.get(Number(requestId));
    if (!job || job.state !== state) return null;
    const d = job.dispatches[job.dispatches.length - 1];
    return d && d.runnerId === r.id ? { job, d } : null;
  }

  acknowledge(r, requestId) {
    const c = this.current(r, requestId, 'dispatched');
    if (!c) return false;
    c.d.acknowledgedAt = c.d.acknowledgedAt ?? Date.now();
    return true;
  }

  // A job whose fault refuses acquire: -> that status (the job leaves this runner), else 0.
  refuseAcquire(r, requestId) {
    const c = this.current(r, requestId, 'dispatched');
    const status = c && /^acquire(\d{3})$/.exec(c.job.fault || '');
    if (!status) return 0;
    this.release(c.job);
    Object.assign(c.job, { state: 'refused', refusedWith: Number(status[1]), lockedUntil: null });
    this.log(`github: job ${c.job.id}: acquire by runner ${r.id} refused with ${status[1]}`);
    return Number(status[1]);
  }

  // -> the job (now running) or null (no longer locked to this runner).
  acquire(r, requestId) {
    const c = this.current(r, requestId, 'dispatched');
    if (!c) return null;
    const { job, d } = c;
    const now = Date.now();
    this.release(job);
    d.acquiredAt = now;
    Object.assign(job, { state: 'running', startedAt: now, runnerId: r.id, runnerName: r.name, lockedUntil: now + this.s.lockExpiryMs });
    job.lateMs = d.at - job.dispatches[0].at;
    job.startLatencyMs = now - job.queuedAt;
    r.busy = true;
    r.currentJob = job.id;
    if (job.fault === 'cancelBeforeRenew' && r.session) r.session.cancel = job.jobGuid;
    this.log(`github: job ${job.id} acquired by runner ${r.id}`);
    this.onJob('started', job, r);
    return job;
  }

  renew(r, requestId) {
    const job = this.jobs.get(Number(requestId));
    if (!job || job.state !== 'running' || job.runnerId !== r.id) return null;
    job.lockedUntil = Date.now() + this.s.lockExpiryMs;
    return job;
  }

  complete(r, requestId, result) {
    const job = this.jobs.get(Number(requestId));
    if (!job || job.state !== 'running' || job.runnerId !== r.id) return null;
    Object.assign(job, { state: 'completed', completedAt: Date.now(), result: RESULTS.includes(result) ? result : 'Failed', lockedUntil: null });
    this.free(r, job);
    this.log(`github: job ${job.id} completed on runner ${r.id}: ${job.result}`);
    this.onJob('completed', job, r);
    if (r.ephemeral) this.model.deleteRunner(r); // the service removes an ephemeral runner after its job
    this.pump();
    return job;
  }

  // The workflow run cancelled (by a user, or a newer run with cancel-in-progress) before a runner
  // started the job: it completes `Canceled` at once; a dispatch not yet acquired is withdrawn (the
  // runner's acquire then finds nothing). -> the job; null when no such job; false when a runner
  // already runs it or it is over (a running job's cancellation goes to its runner, not modelled).
  cancel(id) {
    const job = this.jobs.get(Number(id));
    if (!job) return null;
    if (job.state !== 'queued' && job.state !== 'dispatched') return false;
    this.release(job);
    Object.assign(job, { state: 'completed', result: 'Canceled', completedAt: Date.now(), lockedUntil: null });
    this.log(`github: job ${job.id} canceled before a runner started it`);
    this.onJob('completed', job);
    return job;
  }

  // A hosted job (queued with hosted: true) ran on GitHub's own runners: it completes with `result`.
  // -> the job; null when no such job; false when it is not a queued hosted job.
  completeHosted(id, result) {
    const job = this.jobs.get(Number(id));
    if (!job) return null;
    if (!job.hosted || job.state !== 'queued') return false;
    const now = Date.now();
    Object.assign(job, { state: 'completed', startedAt: now, completedAt: now, result: RESULTS.includes(result) ? result : 'Failed' });
    this.onJob('completed', job);
    return job;
  }

  free(r, job) {
    if (r && r.currentJob === job.id) { r.busy = false; r.currentJob = null; }
  }

  release(job) {
    const s = this.sessionOf.get(job.id);
    if (s && s.pending === job.id) s.pending = null;
    this.sessionOf.delete(job.id);
  }

  // Lock expiry: an unacquired dispatch goes back to the queue (keeping its FIFO place); a
  // running job nobody renews is lost.
  sweep() {
    const now = Date.now();
    let requeued = false;
    for (const job of this.jobs.values()) {
      if (job.lockedUntil === null || now < job.lockedUntil) continue;
      if (job.state === 'dispatched') {
        job.dispatches[job.dispatches.length - 1].expiredAt = now;
        this.release(job);
        Object.assign(job, { state: 'queued', lockedUntil: null });
        this.log(`github: job ${job.id} lock expired before acquire; requeued`);
        requeued = true;
      } else if (job.state === 'running') {
        Object.assign(job, { state: 'lost', lockedUntil: null, lostAt: now });
        this.free(this.model.runners.get(job.runnerId), job);
        this.log(`github: job ${job.id} lost (runner ${job.runnerId} stopped renewing)`);
        this.onJob('lost', job);
      }
    }
    if (requeued) this.pump();
  }
}

module.exports = { Broker, RESULTS, FAULTS };
