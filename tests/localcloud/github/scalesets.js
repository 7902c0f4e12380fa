'use strict';
// Runner scale sets: the sets themselves, which of the broker's jobs each set is offered, and the
// job messages and statistics the set's listener sees. One job's life (all on the set's queue):
//   queued (control POST /jobs) and a set matches -> available; then, by `scaleSetAssignment`:
//     'service' (github.com): the service assigns it while the set has room -> JobAssigned;
//     'acquire' (GHES): JobAvailable; the listener acquires it (acquirejobs) -> JobAssigned;
//   room: the X-ScaleSetMaxCapacity of the set's last poll less its assigned and running jobs;
//   once assigned only the set's runners may take it; a runner of the set acquires it -> JobStarted;
//   the runner completes it (or it is lost)       -> JobCompleted with the result;
//   the run is cancelled before a runner started it (control POST /jobs/<id>/cancel)
//                                                 -> JobCompleted `canceled`, no runner;
//   no runner took it within scaleSetAssignTimeoutMs -> JobCompleted `canceled`, available again
//   after n·scaleSetRequeueDelayMs, at most scaleSetMaxRequeues times.
// A job matches a set when the set's scope (owner, repository or enterprise, as for runners)
// covers it and every label of the job is one of the set's labels; among several sets the
// oldest wins. The HTTP side is scaleset_api.js; the queue and sessions scaleset_queue.js.
const { Model, lc } = require('./model');
const { MessageQueue, Sessions } = require('./scaleset_queue');

const ZERO_TIME = '0001-01-01T00:00:00Z'; // Go's zero time.Time, as the service sends unset times
const rfc3339 = (ms) => (ms ? new Date(ms).toISOString() : ZERO_TIME);
// The broker's results in the service's enum spelling (camelCase, as its JSON serializer writes).
const resultName = (r) => (r ? r[0].toLowerCase() + r.slice(1) : 'failed');

class ScaleSets {
  constructor(model, broker, log = () => {}) {
    this.model = model;
    this.broker = broker;
    this.log = log;
    this.sets = new Map();  // id -> set
    this.nextId = 1;
    this.bound = new Map(); // job id -> job, every job bound to a set and not finished
    this.sessions = new Sessions(model);
    broker.onJob = (event, job, runner) => this.onJob(event, job, runner);
    this.timer = setInterval(() => this.sweep(), 100);
    this.timer.unref();
  }

  close() {
    clearInterval(this.timer);
    for (const set of this.sets.values()) this.sessions.end(set, 202);
  }

  get s() { return this.model.settings; }

  // ---- sets
  scopeKeyOf(scope) { return Model.scopeKey(scope.owner, scope.repo); }
  inScope(set, scope) { return !!set && set.scopeKey === this.scopeKeyOf(scope); }

  find(scope, id) {
    const set = this.sets.get(Number(id));
    return this.inScope(set, scope) ? set : null;
  }

  byName(scope, groupId, name) {
    return [...this.sets.values()].filter((x) => this.inScope(x, scope) && (!groupId || x.group.id === groupId) && (name == null || lc(x.name) === lc(name)));
  }

  nameTaken(scope, groupId, name, except = null) {
    return this.byName(scope, groupId, name).some((x) => x !== except);
  }

  // serviceUrl: the Actions-service base the set was created under (its URLs are built on it).
  create(scope, { name, group, labels, runnerSetting, serviceUrl }) {
    const id = this.nextId++;
    const set = {
      id, name, owner: scope.owner, repo: scope.repo || null, scopeKey: Model.scopeKey(scope.owner, scope.repo),
      group, labels: labels.length ? labels : [{ type: 'System', name }], runnerSetting: { ephemeral: false, isElastic: false, disableUpdate: false, ...runnerSetting }, // echoed; JIT runners are ephemeral regardless
      createdOn: Date.now(), queue: new MessageQueue(), session: null, maxCapacity: null,
      runnerJitConfigUrl: `${serviceUrl}/_apis/runtime/runnerscalesets/${id}/generatejitconfig`,
      acquireJobUrl: `${serviceUrl}/_apis/runtime/runnerscalesets/${id}/acquirejobs`,
    };
    this.sets.set(set.id, set);
    this.log(`github: scale set ${set.id} (${set.name}) created for ${set.scopeKey}`);
    this.bindQueued();
    return set;
  }

  update(set, patch) {
    Object.assign(set, patch);
    this.bindQueued();
    return set;
  }

  runnersOf(set) { return [...this.model.runners.values()].filter((r) => r.scaleSetId === set.id); }

  // Removes the set: its jobs not yet running go back to the queue (and may match another set),
  // its idle runners are removed, its session ends. `force` (the service's own clean-up, behind
  // the client's back) also removes a set whose runners are busy: they finish their jobs.
  remove(set, { force = false } = {}) {
    const runners = this.runnersOf(set);
    if (!force && runners.some((r) => r.busy)) return false;
    this.sets.delete(set.id);
    this.sessions.end(set, 404);
    for (const job of [...this.bound.values()]) {
      if (job.scaleSet.id !== set.id || job.state === 'running') continue;
      this.bound.delete(job.id);
      if (job.state === 'dispatched') this.undispatch(job);
      job.scaleSet = null;
      if (job.state === 'queued') this.bind(job);
    }
    for (const r of runners) if (!r.busy) this.model.deleteRunner(r);
    this.log(`github: scale set ${set.id} (${set.name}) deleted`);
    this.broker.pump();
    return true;
  }

  // ---- jobs
  matches(set, job) {
    if (job.owner && !this.model.covers(set, job.owner, job.repo)) return false;
    const have = new Set(set.labels.map((l) => lc(l.name)));
    return job.labels.every((l) => have.has(lc(l)));
  }

  bind(job) {
    if (job.scaleSet || job.hosted || job.state !== 'queued' || job.dispatches.length) return;
    const set = [...this.sets.values()].find((x) => this.matches(x, job));
    if (!set) return;
    job.scaleSet = { id: set.id, state: 'available', assignedAt: null, requeues: 0, availableAt: null, refused: false };
    job.workflowRunId = job.workflowRunId || 9000000000 + job.id;
    this.bound.set(job.id, job);
    this.offer(set, job);
  }

  get serviceAssigns() { return this.s.scaleSetAssignment === 'service'; }

  // A job becomes available to the set: offered (acquire flow) or assigned if there is room.
  offer(set, job) {
    if (this.serviceAssigns) this.assignFree(set);
    else this.message(set, 'JobAvailable', job);
  }

  // How many more jobs the set may be assigned: the capacity its listener last polled with, less
  // its assigned and running jobs. No capacity stated yet: in the service flow none (the service
  // assigns what the listener said it can take), in the acquire flow no bound (listeners older
  // than the header acquired without one).
  room(set) {
    if (set.maxCapacity === null) return this.serviceAssigns ? 0 : Infinity;
    const st = this.statistics(set);
    return Math.max(0, set.maxCapacity - st.totalAssignedJobs);
  }

  assign(set, job) {
    Object.assign(job.scaleSet, { state: 'assigned', assignedAt: Date.now(), refused: false });
    this.message(set, 'JobAssigned', job);
  }

  // The service's own assignment (service flow): available jobs, oldest first, while there is room.
  assignFree(set) {
    if (!this.serviceAssigns || !this.sets.has(set.id)) return;
    let room = this.room(set);
    let n = 0;
    for (const job of this.available(set)) {
      if (room <= 0) break;
      this.assign(set, job);
      room--;
      n++;
    }
    if (n) this.broker.pump();
  }

  // The set's listener polled with `capacity` (X-ScaleSetMaxCapacity).
  capacity(set, capacity) {
    set.maxCapacity = capacity;
    this.assignFree(set);
  }

  // Jobs queued before a set could take them are offered when one appears (or is relabelled).
  bindQueued() {
    for (const job of this.broker.jobs.values()) if (job.state === 'queued') this.bind(job);
  }

  // acquirejobs: the ids this set may now hand to its runners (newly acquired or already its).
  // In the acquire flow an available job is assigned while the set has room; one refused for
  // want of room stays available and is offered again (JobAvailable) once room frees. In the
  // service flow acquiring assigns nothing: the service does.
  acquire(set, ids) {
    const out = [];
    let room = this.room(set);
    for (const id of ids) {
      const job = this.bound.get(Number(id));
      if (!job || job.scaleSet.id !== set.id) continue;
      if (job.scaleSet.state === 'available' && !this.serviceAssigns) {
        if (room > 0) {
          this.assign(set, job);
          room--;
        } else {
          job.scaleSet.refused = true;
        }
      }
      if (job.scaleSet.state === 'assigned') out.push(job.id);
    }
    if (out.length) this.broker.pump();
    return out;
  }

  onJob(event, job, runner) {
    if (event === 'queued') return this.bind(job);
    const set = job.scaleSet && this.sets.get(job.scaleSet.id);
    if (!job.scaleSet) return;
    if (event === 'started') {
      job.scaleSet.state = 'running';
      if (set) this.message(set, 'JobStarted', job, { runnerId: runner.id, runnerName: runner.name });
      return;
    }
    // completed or lost
    job.scaleSet.state = 'finished';
    this.bound.delete(job.id);
    if (set) {
      this.message(set, 'JobCompleted', job, { result: event === 'lost' ? 'abandoned' : resultName(job.result), runnerId: job.runnerId ?? 0, runnerName: job.runnerName ?? '' });
      this.assignFree(set);
    }
  }

  undispatch(job) {
    const d = job.dispatches[job.dispatches.length - 1];
    if (d) d.expiredAt = Date.now();
    this.broker.release(job);
    Object.assign(job, { state: 'queued', lockedUntil: null });
  }

  // Assigned jobs nobody took in time are canceled and made available again; requeued ones come
  // back; jobs wait for room (service flow: assigned; acquire flow: those refused offered again).
  sweep() {
    const now = Date.now();
    for (const job of [...this.bound.values()]) {
      const b = job.scaleSet;
      const set = this.sets.get(b.id);
      if (!set) continue;
      if (b.state === 'waiting' && now >= b.availableAt) {
        Object.assign(b, { state: 'available', assignedAt: null });
        this.offer(set, job);
      } else if (b.state === 'assigned' && now - b.assignedAt >= this.s.scaleSetAssignTimeoutMs && job.state !== 'running') {
        if (job.state === 'dispatched') this.undispatch(job);
        this.message(set, 'JobCompleted', job, { result: 'canceled', runnerId: 0, runnerName: '' });
        b.requeues++;
        if (b.requeues > this.s.scaleSetMaxRequeues) {
          b.state = 'finished';
          this.bound.delete(job.id);
          Object.assign(job, { state: 'completed', result: 'Canceled', completedAt: now, lockedUntil: null });
          this.log(`github: job ${job.id} canceled: no runner of scale set ${set.id} took it`);
        } else {
          Object.assign(b, { state: 'waiting', availableAt: now + b.requeues * this.s.scaleSetRequeueDelayMs });
          this.log(`github: job ${job.id}: no runner of scale set ${set.id} took it; requeued`);
        }
      }
    }
    for (const set of this.sets.values()) {
      if (this.serviceAssigns) {
        this.assignFree(set);
        continue;
      }
      let room = this.room(set);
      for (const job of this.available(set)) {
        if (room <= 0) break;
        if (!job.scaleSet.refused) continue;
        job.scaleSet.refused = false;
        this.message(set, 'JobAvailable', job);
        room--;
      }
    }
  }

  // ---- messages and statistics
  message(set, messageType, job, extra = {}) {
    set.queue.push(this.jobMessage(set, messageType, job, extra));
  }

  jobMessage(set, messageType, job, extra = {}) {
    const b = job.scaleSet;
    const owner = job.owner || String(set.owner).replace(/^enterprise:/i, '');
    const repo = job.repo || set.repo || '';
    return {
      messageType, runnerRequestId: job.id, repositoryName: repo, ownerName: owner, jobId: job.jobGuid,
      jobWorkflowRef: `${owner}/${repo}/.github/workflows/ci.yml@refs/heads/main`, jobDisplayName: job.name,
      workflowRunId: job.workflowRunId, eventName: 'push', requestLabels: [...job.labels],
      queueTime: rfc3339(job.queuedAt), scaleSetAssignTime: rfc3339(messageType === 'JobAvailable' ? 0 : b.assignedAt),
      runnerAssignTime: rfc3339(messageType === 'JobStarted' || messageType === 'JobCompleted' ? job.startedAt : 0),
      finishTime: rfc3339(messageType === 'JobCompleted' ? (job.completedAt || job.lostAt || Date.now()) : 0),
      ...(messageType === 'JobAvailable' ? { acquireJobUrl: set.acquireJobUrl } : {}),
      ...extra,
    };
  }

  available(set) {
    return [...this.bound.values()].filter((j) => j.scaleSet.id === set.id && j.scaleSet.state === 'available');
  }

  // Computed from the real state. acquired: acquired by the set, no runner has started it yet;
  // assigned: acquired + running (the jobs the set must have runners for).
  statistics(set) {
    const count = (state) => [...this.bound.values()].filter((j) => j.scaleSet.id === set.id && j.scaleSet.state === state).length;
    const runners = this.runnersOf(set);
    const busy = runners.filter((r) => r.busy).length;
    const acquired = count('assigned');
    const running = count('running');
    return {
      totalAvailableJobs: count('available'), totalAcquiredJobs: acquired, totalAssignedJobs: acquired + running,
      totalRunningJobs: running, totalRegisteredRunners: runners.length, totalBusyRunners: busy, totalIdleRunners: runners.length - busy,
    };
  }
}

module.exports = { ScaleSets, rfc3339, ZERO_TIME };
