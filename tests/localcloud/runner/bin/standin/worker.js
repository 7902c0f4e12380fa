'use strict';
// `Runner.Worker`: runs one job handed over by the Listener on stdin, in the job's work folder
// `<work>/<repo>/<repo>`, as whatever user the Listener runs as. Steps: the job-started hook,
// the job's `run` script (bash --noprofile --norc -eo pipefail), a sleep of `durationMs`, the
// job-completed hook; then, as the real runner does, it kills leftover processes that still
// carry this job's RUNNER_TRACKING_ID (a process that clears it survives the job). Job output
// goes to `_diag/pages/<request id>.log`. Exit code 100 + result (0 Succeeded, 2 Failed,
// 3 Canceled), as the real Worker's. Steps stay in the Listener's process group, as the real
// runner's do (.NET starts children without setpgid/setsid); a cancel signals the step's own
// process: SIGINT, 7.5 s, SIGTERM, 2.5 s, SIGKILL (ProcessInvoker), times the time factor.
const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');
const { spawn } = require('node:child_process');
const files = require('./files');

const EXIT = { Succeeded: 100, Failed: 102, Canceled: 103 };
const SHUTDOWN_MSG = '##[error]The runner has received a shutdown signal. This can happen when the runner service is stopped, or a manually started runner is canceled.';

const readStdin = () => new Promise((resolve, reject) => {
  const chunks = [];
  process.stdin.on('data', (c) => chunks.push(c)).on('end', () => resolve(Buffer.concat(chunks).toString('utf8'))).on('error', reject);
});

function repoOf(job, settings) {
  if (job.repo) return job.repo;
  if (!settings.gitHubUrl) return 'workspace';  // a JIT runner's settings name no repository
  const segs = new URL(settings.gitHubUrl).pathname.split('/').filter(Boolean);
  return segs[1] || segs[0] || 'workspace';
}

// Kills every process (but this one) whose environment carries the job's tracking id.
function cleanupOrphans(trackingId, write) {
  const needle = `RUNNER_TRACKING_ID=${trackingId}`;
  let announced = false;
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number)) {
    if (pid === process.pid) continue;
    let env;
    try { env = fs.readFileSync(`/proc/${pid}/environ`, 'latin1'); } catch { continue; }
    if (!env.split('\0').includes(needle)) continue;
    if (!announced) { write('Cleaning up orphan processes'); announced = true; }
    let comm = '?';
    try { comm = fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim(); } catch { /* gone */ }
    write(`Terminate orphan process: pid (${pid}) (${comm})`);
    try { process.kill(pid, 'SIGKILL'); } catch { /* already gone */ }
  }
}

async function main() {
  process.title = 'Runner.Worker';
  const job = JSON.parse(await readStdin());
  const settings = files.loadSettings();
  const workRoot = path.resolve(files.ROOT, job.workFolder || settings.workFolder || '_work');
  const repo = repoOf(job, settings);
  const workspace = path.join(workRoot, repo, repo);
  const temp = path.join(workRoot, '_temp');
  const pages = path.join(files.ROOT, '_diag', 'pages');
  for (const d of [workspace, temp, pages]) fs.mkdirSync(d, { recursive: true });
  const logFd = fs.openSync(path.join(pages, `${job.requestId}.log`), 'a');
  const write = (line) => fs.writeSync(logFd, `${new Date().toISOString()} ${line}\n`);
  const trackingId = `github_${crypto.randomUUID()}`;
  const env = {
    ...process.env, CI: 'true', GITHUB_ACTIONS: 'true', GITHUB_JOB: job.jobName, GITHUB_RUN_ID: String(job.requestId),
    GITHUB_REPOSITORY: `${job.owner || ''}/${repo}`, GITHUB_WORKSPACE: workspace, RUNNER_NAME: job.runnerName,
    RUNNER_WORKSPACE: path.join(workRoot, repo), RUNNER_TEMP: temp, RUNNER_TRACKING_ID: trackingId,
  };

  let factor = 1;
  try { factor = files.timeFactor() ?? 1; } catch { /* the Listener reported it */ }
  let canceled = false;
  let child = null;
  const stop = new AbortController();
  const onSignal = () => {
    if (canceled) return;
    canceled = true;
    write(SHUTDOWN_MSG);
    stop.abort();
    const step = child;
    if (step) {
      const send = (sig) => { if (step.exitCode === null && step.signalCode === null) step.kill(sig); };
      send('SIGINT');
      setTimeout(() => send('SIGTERM'), 7500 * factor).unref();
      setTimeout(() => send('SIGKILL'), 10000 * factor).unref();
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const bash = (file) => new Promise((resolve) => {
    child = spawn('bash', ['--noprofile', '--norc', '-eo', 'pipefail', file], { cwd: workspace, env, stdio: ['ignore', logFd, logFd] });
    child.on('error', (e) => { write(`##[error]${e.message}`); resolve(1); });
    child.on('exit', (code, sig) => { child = null; resolve(code ?? (sig ? 128 : 1)); });
  });
  const step = async (label, file) => {
    write(`##[group]${label}`);
    const code = await bash(file);
    write(`##[endgroup] exit code ${code}`);
    return code === 0;
  };

  write(`Job ${job.jobName} (request ${job.requestId}) starting in ${workspace}`);
  let ok = true;
  const started = process.env.ACTIONS_RUNNER_HOOK_JOB_STARTED;
  if (started && !canceled) ok = await step(`Run job-started hook ${started}`, started);
  if (ok && !canceled && job.run) {
    const script = path.join(temp, `${crypto.randomUUID()}.sh`);
    fs.writeFileSync(script, job.run);
    ok = await step('Run script', script);
    fs.rmSync(script, { force: true });
  }
  if (ok && !canceled && job.durationMs > 0) {
    await new Promise((resolve) => {
      const t = setTimeout(resolve, job.durationMs);
      stop.signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
    });
  }
  const completed = process.env.ACTIONS_RUNNER_HOOK_JOB_COMPLETED;
  if (completed && !canceled) ok = (await step(`Run job-completed hook ${completed}`, completed)) && ok;
  cleanupOrphans(trackingId, write);
  const result = canceled ? 'Canceled' : ok ? 'Succeeded' : 'Failed';
  write(`Job ${job.jobName} completed with result: ${result}`);
  fs.closeSync(logFd);
  process.exit(EXIT[result]);
}

module.exports = { main };
