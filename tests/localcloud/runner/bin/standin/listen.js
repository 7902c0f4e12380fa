'use strict';
// `Runner.Listener run`: the message loop of the real Listener, with its exit codes and races.
// One shutdown signal (SIGINT/SIGTERM) aborts every HTTP call of the dispatch path (poll,
// acknowledge, acquire), so a signal between acknowledge and acquire leaves the broker with a
// delivered, never-acquired job. Drain, per build (files.mode()): stock has none; pr4461 checks
// `<root>/.drain` only at the top of the main loop, which empty polls never reach (so only after a
// real message), deletes one found at start, and when it fires shuts down cancelling the job in
// hand (a job just dispatched: before its first renew answers, so with no Worker and no completion
// line); drain-file (`run --drain-file PATH` / `--drain-on-sigusr1`, ephemeral only) latches the
// request, checks it between long polls without cutting the open one short, finishes a job in
// hand and exits 0 keeping its registration.
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const files = require('./files');
const { call, accessToken, VERSION } = require('./client');
const { selfUpdate } = require('./selfupdate');

const RESULT_OF_EXIT = { 100: 'Succeeded', 101: 'SucceededWithIssues', 102: 'Failed', 103: 'Canceled' };
const DELETED_AT_START = 'Failed to create a session. The runner registration has been deleted from the server, please re-configure.';
const SHUTDOWN_MSG = 'The runner has received a shutdown signal. This can happen when the runner service is stopped, or a manually started runner is canceled.';

function sleep(ms, signal) {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() { clearTimeout(t); signal?.removeEventListener('abort', done); resolve(); }
    signal?.addEventListener('abort', done, { once: true });
  });
}

class Listener {
  constructor(cmd, log) {
    this.cmd = cmd;
    this.log = log;
    this.shutdown = new AbortController();
    this.worker = null;
    this.session = null;
  }
  get aborted() { return this.shutdown.signal.aborted; }

  onSignal(sig) {
    if (this.aborted) return;
    this.log.out('Exiting...');
    this.log.diag('Runner', `Received ${sig}: shutting down (in-flight calls are cancelled).`);
    this.shutdown.abort();
    if (this.worker) this.worker.cancel();
  }

  // Runner calls with the access token; one token refresh on 401.
  async api(method, p, opts = {}) {
    for (let attempt = 0; ; attempt++) {
      const r = await call(method, `${this.settings.serverUrl}${p}`, { ...opts, auth: `Bearer ${this.token}` });
      if (r.status !== 401 || attempt > 0) return r;
      this.token = await accessToken(this.creds, this.key, opts.signal);
    }
  }

  async start() {
    const jit = this.cmd.get('jitconfig');
    if (jit) {
      try { files.writeJitConfig(jit); } catch (e) { this.log.err(`Invalid jitconfig: ${e.message}`); return 1; }
    }
    if (!files.isConfigured()) { this.log.err('Runner is not configured.'); return 1; }
    files.loadDotEnv();
    try { this.mode = files.mode(); } catch (e) { this.log.err(e.message); return 1; }
    this.settings = files.loadSettings();
    this.creds = files.loadCredentials();
    this.key = files.loadPrivateKey();
    this.ephemeral = !!this.settings.ephemeral || this.cmd.flag('once');
    try { this.timeFactor = files.timeFactor(); } catch (e) { this.log.err(e.message); return 1; }
    const code = this.setUpDrain(!!this.settings.ephemeral || !!jit);
    if (code !== null) return code;
    for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => this.onSignal(sig));
    this.log.diag('Runner', `Runner.Listener ${VERSION} (runpool stand-in) starting in ${this.mode} mode, pid ${process.pid}.`);
    try {
      this.token = await accessToken(this.creds, this.key, this.shutdown.signal);
    } catch (e) {
      if (this.aborted) return 0;
      if (e.deleted) { this.log.out(DELETED_AT_START); return 1; }
      this.log.err(`Failed to connect: ${e.message}`);
      return 2;
    }
    this.log.out('\n\u221a Connected to GitHub\n');
    const sessionCode = await this.createSession();
    if (sessionCode !== null) return sessionCode;
    this.log.perf('SessionCreated');
    this.log.out(`Current runner version: '${VERSION}'`);
    this.log.stamped('Listening for Jobs');
    const exit = await this.loop();
    clearInterval(this.drainWatch);
    if (this.session) {
      await this.api('DELETE', `/sessions/${this.session.sessionId}`, { timeoutMs: 5000 }).catch(() => {});
      this.log.diag('MessageListener', 'Session deleted.');
    }
    return exit;
  }

  // -> null to go on, else the exit code.
  setUpDrain(ephemeral) {
    if (this.mode === 'pr4461') {
      if (files.exists(files.FILES.drain)) {
        try { require('node:fs').unlinkSync(files.FILES.drain); } catch { /* gone already */ }
        this.log.diag('Runner', `Deleted a drain sentinel ${files.FILES.drain} left from before start.`);
      }
      return null;
    }
    if (this.mode !== 'drain-file') return null;
    this.drainFile = this.cmd.get('drain-file');
    const onSignal = this.cmd.flag('drain-on-sigusr1');
    if (!this.drainFile && !onSignal) return null;
    if (!ephemeral) {
      this.log.err('--drain-file and --drain-on-sigusr1 are supported only for ephemeral runners (--ephemeral or --jitconfig).');
      return 1;
    }
    this.drainLatched = false;
    const latch = (why) => {
      if (this.drainLatched) return;
      this.drainLatched = true;
      this.log.diag('Runner', `Drain requested (${why}): no new job will be taken.`);
    };
    if (onSignal) process.on('SIGUSR1', () => latch('SIGUSR1'));
    if (this.drainFile) {
      // A watcher latches the request: it survives the file being removed again.
      this.drainWatch = setInterval(() => { if (files.exists(this.drainFile)) latch(this.drainFile); }, 100);
      this.drainWatch.unref();
    }
    return null;
  }

  // Session retries: the real runner's own timers (creation every 30 s, a conflict for 4 min),
  // scaled by the time factor; without one, the server's hints.
  retryMs(realMs, hintMs) { return this.timeFactor ? Math.max(10, Math.round(realMs * this.timeFactor)) : hintMs; }

  // -> null when a session exists, else the exit code.
  async createSession() {
    const started = Date.now();
    let conflicts = 0;
    let failingSince = null;
    for (;;) {
      if (this.aborted) return 0;
      let r;
      try {
        r = await this.api('POST', '/sessions', { json: { ownerName: os.hostname(), agent: { name: this.settings.agentName, version: VERSION } }, signal: this.shutdown.signal });
      } catch (e) {
        if (this.aborted) return 0;
        if (e.deleted) { this.log.out(DELETED_AT_START); return 1; }
        r = { status: 0, body: { message: e.message } };
      }
      if (r.status === 200) {
        this.session = r.body;
        this.log.diag('MessageListener', `Session ${r.body.sessionId} created.`);
        return null;
      }
      if (r.status === 409) {
        if (conflicts++ === 0) {
          this.log.out('A session for this runner already exists.');
          this.log.stamped(`Runner connect error: The actions runner ${this.settings.agentName} already has an active session for owner ${os.hostname()}.. Retrying until reconnected.`);
        }
        if (Date.now() - started >= this.retryMs(240000, r.body.giveUpAfterMs)) {
          this.log.out('Failed to create a session: another Listener holds the session for this runner.');
          this.log.diag('MessageListener', 'Session conflict: giving up.', 'ERROR');
          return 5;
        }
        await sleep(this.retryMs(30000, r.body.retryAfterMs || 1000), this.shutdown.signal);
        continue;
      }
      if (r.status === 404 && r.body.typeKey === 'RunnerNotFoundException') { this.log.out(DELETED_AT_START); return 1; }
      if (r.body.typeKey === 'RunnerVersionDeprecatedException') {
        // Updates disabled and too old: exit 1 like any refusal, unless asked for the distinct code.
        this.log.err(`An error occurred: ${r.body.message}`);
        return process.env.ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE === '1' ? 7 : 1;
      }
      if (r.status === 0 || r.status >= 500) {
        failingSince ??= Date.now();
        this.log.stamped(`Runner connect error: ${r.body.message || r.status}. Retrying until reconnected.`);
        if (Date.now() - failingSince > 30000) return 2;
        await sleep(this.retryMs(30000, 1000), this.shutdown.signal);
        continue;
      }
      this.log.err(`Failed to create a session: ${r.status} ${r.body.message || ''}`);
      return 1;
    }
  }

  // drain-file: the latch, read between long polls (also after an empty one).
  drainLatchedNow() {
    if (this.mode !== 'drain-file' || !this.drainLatched) return false;
    this.log.stamped('Drain requested: the runner will not take more jobs and is exiting.');
    return true;
  }

  // pr4461: the sentinel check at the top of the main loop, reached only after a real message.
  sentinelAtLoopTop() {
    if (this.mode !== 'pr4461' || !files.exists(files.FILES.drain)) return false;
    this.log.diag('Runner', `Drain sentinel ${files.FILES.drain} found: shutting down (the job dispatcher cancels a running job).`);
    return true;
  }

  async loop() {
    let backoff = 1000;
    while (!this.aborted) {
      if (this.drainLatchedNow()) return 0;
      let r;
      try {
        r = await this.api('GET', `/messages?sessionId=${encodeURIComponent(this.session.sessionId)}`, { signal: this.shutdown.signal, timeoutMs: this.session.clientTimeoutMs });
      } catch (e) {
        if (this.aborted) break;
        if (e.deleted) return this.registrationDeleted();
        r = { status: 0, body: { message: e.message } };
      }
      if (r.status === 204) { backoff = 1000; continue; }
      if (r.status === 200) this.log.perf(`MessageReceived_${r.body.messageType}`); // every message, Runner.cs 607
      if (r.status === 200 && ['AgentRefresh', 'RunnerRefresh'].includes(r.body.messageType)) {
        // Runner.cs 531–564, 608–660: the update runs, then the Listener exits 3 (4 when it runs
        // once) for update.sh; a failed update goes back to listening.
        backoff = 1000;
        if (await selfUpdate(this, r.body.messageType, r.body.body)) return this.ephemeral ? 4 : 3;
        if (this.sentinelAtLoopTop()) return 0; // any message brings the loop round
        continue;
      }
      if (r.status === 200) {
        backoff = 1000;
        await this.handleJob(r.body);
        if (this.sentinelFired) return 0;
        if (this.ephemeralDone) {
          this.session = null; // the service removed the ephemeral registration with its session
          files.deleteConfig();
          this.log.diag('Runner', 'Ephemeral runner finished its job; local configuration removed.');
          return 0;
        }
        continue;
      }
      if (r.status === 404 && r.body.typeKey === 'RunnerNotFoundException') return this.registrationDeleted();
      if (r.status === 404) {
        this.log.diag('MessageListener', 'Session expired; creating a new one.', 'WARN');
        this.session = null;
        const code = await this.createSession();
        if (code !== null) return code;
        continue;
      }
      this.log.stamped(`Runner connect error: ${r.body.message || r.status}. Retrying until reconnected.`);
      this.log.diag('MessageListener', `Get message failed: ${r.status} ${r.body.message || ''}`, 'ERROR');
      await sleep(backoff, this.shutdown.signal);
      backoff = Math.min(backoff * 2, 5000);
    }
    return 0;
  }

  registrationDeleted() {
    this.session = null;
    files.deleteConfig();
    this.log.stamped('The runner registration has been deleted from the server. Local runner configuration removed.');
    this.log.diag('Runner', 'Registration deleted on the server: local configuration removed, exiting.');
    return 0;
  }

  async handleJob(msg) {
    const rid = msg.body.runnerRequestId;
    const signal = this.shutdown.signal;
    // Acknowledge only when the server asks (a feature flag), logged by the session's listener class.
    const tag = this.session.listener === 'legacy' ? 'MessageListener' : 'BrokerMessageListener';
    if (msg.body.shouldAcknowledge) {
      this.log.diag(tag, `Acknowledging runner request '${rid}'.`);
      try {
        await this.api('POST', `/jobrequests/${rid}/acknowledge`, { json: { sessionId: this.session.sessionId }, signal, timeoutMs: 5000 });
      } catch (e) {
        if (this.aborted) return; // cancelled between acknowledge and acquire: the job stays locked to us
        this.log.diag('Runner', `Best-effort acknowledge failed for request '${rid}': ${e.message}`, 'ERROR');
      }
    }
    if (this.aborted) return;
    let acq;
    try {
      acq = await this.api('POST', `/jobrequests/${rid}/acquire`, { json: { sessionId: this.session.sessionId }, signal });
    } catch (e) {
      if (!this.aborted) this.log.diag('Runner', `Acquire of job request ${rid} failed: ${e.message}`, 'ERROR');
      return;
    }
    if ([404, 409, 422].includes(acq.status)) {
      // Runner.cs: nothing on stdout, the job is simply not run.
      this.log.diag('Runner', `Skipping message Job. ${acq.body.message || acq.status}`);
      this.sentinelFired = this.sentinelAtLoopTop();
      return;
    }
    if (acq.status !== 200) {
      this.log.diag('Runner', `Unable to acquire job request ${rid}: ${acq.status} ${acq.body.message || ''}`, 'ERROR');
      this.sentinelFired = this.sentinelAtLoopTop();
      return;
    }
    const job = acq.body;
    this.log.diag('JobDispatcher', `Job request ${rid} for plan ${job.planId} job ${job.jobId} received.`);
    this.log.stamped(`Running job: ${job.jobName}`);
    // JobDispatcher: no Worker before the first renew succeeds; a failed first renew, or a cancel
    // before it, ends the dispatch without a "completed" line. The dispatch runs asynchronously:
    // the main loop comes round while the first renew is out. With pull request #4461 that is
    // where the sentinel is seen; the shutdown cancels the dispatch, which (nothing awaited in
    // between on the broker flow) has no answer to its first renew yet: no Worker starts.
    const dispatchCancel = new AbortController();
    const firstPending = this.firstRenew(rid, job, dispatchCancel.signal);
    if (this.sentinelAtLoopTop()) {
      this.sentinelFired = true;
      dispatchCancel.abort();
    }
    const first = await firstPending;
    if (first === 'failed') {
      this.log.diag('JobDispatcher', `Unable to renew job request for job ${job.jobId} for the first time, stop dispatching job to worker.`);
      return;
    }
    if (first === 'canceled') {
      this.log.diag('JobDispatcher', `Stop renew job request for job ${job.jobId}.`);
      await this.api('POST', `/jobrequests/${rid}/complete`, { json: { result: 'Canceled' }, timeoutMs: 5000 }).catch(() => {});
      return;
    }
    this.log.perf(`JobRequestRenewed_${rid}`);
    const renew = setInterval(() => {
      this.api('POST', `/jobrequests/${rid}/renew`, { json: {}, timeoutMs: job.renewMs }).catch(() => {});
    }, job.renewMs);
    let result;
    try {
      result = await this.runWorker(job);
    } finally { clearInterval(renew); }
    if (result === null) {
      // The send to the Worker timed out: it was killed; no result goes to the server.
      this.log.diag('JobDispatcher', `Job request message sending for job ${job.jobId} been cancelled, kill running worker.`);
      return;
    }
    this.log.stamped(`Job ${job.jobName} completed with result: ${result}`);
    for (let i = 0; i < 3; i++) {
      const r = await this.api('POST', `/jobrequests/${rid}/complete`, { json: { result }, timeoutMs: 5000 }).catch((e) => ({ status: 0, body: { message: e.message } }));
      if (r.status === 200 || (r.status >= 400 && r.status < 500)) break;
      await sleep(500);
    }
    if (this.ephemeral) this.ephemeralDone = true;
  }

  // -> 'renewed', 'failed' (job not found, or 5 retries spent) or 'canceled' (a JobCancellation
  // message for this job came meanwhile: the main loop keeps polling while a job is dispatched;
  // a shutdown; or `cancel`, the dispatcher's own).
  async firstRenew(rid, job, cancel) {
    const stop = new AbortController();
    const onShutdown = () => stop.abort();
    this.shutdown.signal.addEventListener('abort', onShutdown, { once: true });
    let canceled = false;
    const onCancel = () => { canceled = true; stop.abort(); };
    if (cancel.aborted) onCancel();
    else cancel.addEventListener('abort', onCancel, { once: true });
    const watch = (async () => {
      while (!stop.signal.aborted) {
        const r = await this.api('GET', `/messages?sessionId=${encodeURIComponent(this.session.sessionId)}`, { signal: stop.signal, timeoutMs: this.session.clientTimeoutMs }).catch(() => null);
        if (stop.signal.aborted) return;
        if (r?.status === 200) this.log.perf(`MessageReceived_${r.body.messageType}`);
        if (r?.status === 200 && r.body.messageType === 'JobCancellation' && r.body.body?.jobId === job.jobId) {
          canceled = true;
          stop.abort();
          return;
        }
        if (r?.status !== 204 && r?.status !== 200) await sleep(200, stop.signal);
      }
    })();
    let outcome = 'failed';
    for (let attempt = 0; attempt <= 5 && !stop.signal.aborted; attempt++) {
      const r = await this.api('POST', `/jobrequests/${rid}/renew`, { json: {}, signal: stop.signal, timeoutMs: job.renewMs }).catch(() => ({ status: 0 }));
      if (r.status === 200) { outcome = 'renewed'; break; }
      if (r.status === 404 || stop.signal.aborted) break; // job not found: no retry
      await sleep(1000, stop.signal); // real: 1-10 s between the first renew's 5 retries
    }
    stop.abort();
    this.shutdown.signal.removeEventListener('abort', onShutdown);
    cancel.removeEventListener('abort', onCancel);
    await watch;
    return canceled || this.aborted ? 'canceled' : outcome;
  }

  runWorker(job) {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [path.join(files.ROOT, 'bin', 'Runner.Worker'), 'spawnclient'], {
        cwd: files.ROOT, stdio: ['pipe', 'ignore', 'inherit'], env: process.env,
      });
      this.worker = {
        cancel: (signalled = true) => {
          if (signalled) this.log.stamped(SHUTDOWN_MSG);
          child.kill('SIGINT');
        },
      };
      child.stdin.on('error', () => {});
      let sendTimedOut = false;
      if (job.fault === 'workerSendTimeout') {
        // The job message never gets through: after the channel timeout the Worker is killed.
        setTimeout(() => { sendTimedOut = true; child.kill('SIGKILL'); }, job.channelTimeoutMs);
      } else {
        child.stdin.end(JSON.stringify({ ...job, runnerName: this.settings.agentName, workFolder: this.settings.workFolder }));
        this.log.perf(`SentJobToWorker_${job.requestId}`);
      }
      if (this.aborted) this.worker.cancel();
      child.on('exit', (code, sig) => {
        this.worker = null;
        resolve(sendTimedOut ? null : RESULT_OF_EXIT[code] || (sig ? 'Canceled' : 'Failed'));
      });
    });
  }
}

module.exports = { Listener, SHUTDOWN_MSG };
